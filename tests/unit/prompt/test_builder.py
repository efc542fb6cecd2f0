"""Context builder parts: operator override file, duplicate suppression, cache-friendly order."""

import os

import pytest
from django.test import override_settings

from evennia_ai.prompt.assembly import assemble_messages, select_components, validate_chat_messages
from evennia_ai.prompt.builder import (
    OperatorSourceError,
    cache_friendly_order,
    common_prefix_length,
    read_operator_override,
    suppress_duplicates,
)
from evennia_ai.prompt.components import get_static_components
from evennia_ai.prompt.contexts import get_context_config


def test_operator_override_file_is_reread_when_it_changes(tmp_path):
    path = tmp_path / "prime.md"
    path.write_text("Always answer in English.")
    with override_settings(EVENNIA_AI_OPERATOR_OVERRIDE=str(path)):
        assert read_operator_override() == "Always answer in English."
        stamp = path.stat().st_mtime
        path.write_text("Speak like a pirate.")
        os.utime(path, (stamp, stamp))  # same modification time: an edit within a clock tick
        assert read_operator_override() == "Speak like a pirate."
        path.unlink()
        with pytest.raises(OperatorSourceError, match="cannot be read"):
            read_operator_override()  # configured but gone: fail closed
    assert read_operator_override() == ""


def test_duplicate_source_is_suppressed():
    long = "Alice is a regular who always orders the mutton stew and pays in silver."
    values = {
        "entity_context": long,
        "memory_blocks": "## Notes\n" + long + "\nMore notes.",
        "goals": "short",
    }
    out = suppress_duplicates(values)
    assert out["entity_context"] == "" and out["memory_blocks"] and out["goals"] == "short"


def test_cache_friendly_order_puts_volatile_parts_last_and_stays_valid():
    config = get_context_config("tick_event")
    ordered = cache_friendly_order(select_components(get_static_components(), config))
    keys = [c.key for c in ordered]
    assert (
        keys.index("conversation_history")
        < keys.index("semantic_memories")
        < keys.index("pending_event")
    )
    values = {k: f"{k} text" for k in keys}
    values["conversation_history"] = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
    ]
    messages = assemble_messages(ordered, None, values).messages
    assert not validate_chat_messages(messages)
    assert messages[0]["role"] == "system" and "system_prompt text" in messages[0]["content"]


def test_common_prefix_length():
    assert common_prefix_length("abcdef", "abcxyz") == 3
    assert common_prefix_length("", "abc") == 0
    assert common_prefix_length("same", "same") == 4

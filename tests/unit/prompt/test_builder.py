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


def test_request_keys_of_plain_messages_are_cheap_and_tell_messages_apart():
    """A plain text message is keyed by its role and text (no JSON), others as JSON; two
    different messages never share a key, so the prefix share stays exact."""
    from evennia_ai.prompt.builder import prefix_cache_share, request_key_of

    plain = [{"role": "system", "content": "You keep the inn."}, {"role": "user", "content": "hi"}]
    called = [{"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}]}]
    tools_key, serial = request_key_of(plain + called, [])
    assert serial[:2] == ["system\nYou keep the inn.", "user\nhi"]
    assert serial[2].startswith("{")
    again = request_key_of([dict(m) for m in plain] + called, [])
    assert prefix_cache_share((tools_key, serial), again, [10, 2, 5], 0) == 1.0
    changed = request_key_of([plain[0], {"role": "user", "content": "ho"}] + called, [])
    assert prefix_cache_share((tools_key, serial), changed, [10, 2, 5], 0) < 1.0


def test_sources_that_work_in_another_thread_are_started_first(monkeypatch):
    """The long-term memory search goes to a thread: it starts before the reactor gathers the
    other sources, so both run at once."""
    from twisted.internet import defer

    from evennia_ai.prompt import builder as builder_module
    from evennia_ai.prompt import longterm_sources  # noqa: F401  (registers its source)

    started = []
    monkeypatch.setattr(builder_module, "_SOURCES", dict(builder_module._SOURCES))
    monkeypatch.setattr(builder_module, "_THREADED", set(builder_module._THREADED))
    builder_module.register_source("plain_one")(lambda b: started.append("plain_one") or "a")
    builder_module.register_source("slow_one", threaded=True)(
        lambda b: started.append("slow_one") or defer.succeed("b")
    )
    assert "semantic_memories" in builder_module._THREADED
    builder = builder_module.ContextBuilder.__new__(builder_module.ContextBuilder)
    builder.extra = {}
    builder.blocked = []
    builder.npc = None
    results = []
    builder.gather(["plain_one", "slow_one"]).addCallback(results.append)
    assert started == ["slow_one", "plain_one"]
    assert results == [{"plain_one": "a", "slow_one": "b"}]

"""Shared pieces of the prompt commands (:mod:`evennia_ai.commands.prompts`): escaping and
previews of stored text, the game's registry, and the parsing of context types, component ids
and keys the commands have in common.

Importing it registers the prompt sources (built-in, memory blocks, long-term memory), so a
request built by ``aiprompt/show`` has every source a tick has.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from typing import Any

from evennia_ai.commands.base import (
    AICommand,
    CommandError,
)
from evennia_ai.prompt import block_sources  # noqa: F401  (registers the memory-block sources)
from evennia_ai.prompt import longterm_sources  # noqa: F401
from evennia_ai.prompt import sources  # noqa: F401  (registers the built-in sources)
from evennia_ai.prompt.components import STATIC_COMPONENT_IDS, get_static_component, is_static_id
from evennia_ai.prompt.contexts import CONTEXT_TYPES
from evennia_ai.prompt.registry import get_prompt_registry

MAX_IMPORT_BYTES = 5_000_000
PREVIEW_CHARS = 70


# -- shared helpers ------------------------------------------------------------------------------
def esc(text: Any) -> str:
    """``text`` with Evennia's ``|`` markup escaped, so it is shown exactly as written."""
    return str(text if text is not None else "").replace("|", "||")


def preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    """The first line-folded ``limit`` characters of ``text`` (escaped)."""
    flat = " ".join(str(text or "").split())
    if len(flat) > limit:
        flat = flat[: limit - 3] + "..."
    return esc(flat)


def indent(text: str, prefix: str = "    ") -> str:
    """``text`` (escaped) with every line indented."""
    return "\n".join(prefix + line for line in esc(text).splitlines() or [""])


def registry():
    """The game's PromptRegistry."""

    return get_prompt_registry()


@contextmanager
def registry_errors():
    """Turn a :class:`PromptRegistryError` (or ValueError) into a :class:`CommandError`."""
    try:
        yield
    except ValueError as err:  # PromptRegistryError is a ValueError
        raise CommandError(str(err)) from None


def json_object(text: str, what: str) -> dict | None:
    """``text`` as a JSON object when it starts with ``{`` (None otherwise).

    Raises:
        CommandError: It starts with ``{`` but is not a valid JSON object.
    """
    text = (text or "").strip()
    if not text.startswith("{"):
        return None
    data = AICommand.parse_json(text, what)
    if not isinstance(data, dict):
        raise CommandError(f"{what} must be a JSON object.")
    return data


def context_type_of(name: str) -> str:
    """The context type called ``name`` (exact, or a unique prefix).

    Raises:
        CommandError: Unknown or ambiguous name; the message lists the context types.
    """

    name = (name or "").strip().lower()
    if name in CONTEXT_TYPES:
        return name
    matches = [c for c in CONTEXT_TYPES if name and c.startswith(name)]
    if len(matches) == 1:
        return matches[0]
    known = ", ".join(CONTEXT_TYPES)
    if matches:
        raise CommandError(f"'{esc(name)}' matches several context types: {', '.join(matches)}.")
    raise CommandError(f"Unknown context type '{esc(name[:64])}'. Known: {known}.")


def is_context_type(name: str) -> bool:
    return (name or "").strip().lower() in CONTEXT_TYPES


def component_id_of(text: str) -> int:
    """The ID of the component named by ``text`` (its ID, or its key).

    Raises:
        CommandError: No such component.
    """
    text = (text or "").strip().lstrip("#")
    if not text:
        raise CommandError("Which component? Give its ID or key (|waiprompt/list|n shows them).")
    reg = registry()
    number = text.isascii() and text.isdigit()
    component = reg.get_component(int(text)) if number and len(text) < 8 else None
    if component is None and not number:
        component = reg.get_component_by_key(text)
    if component is None:
        raise CommandError(f"No component '{esc(text[:64])}'. |waiprompt/list|n shows them.")
    return component.id


def static_id_of(text: str) -> int:
    """The static component ID named by ``text`` (its ID or key)."""

    text = (text or "").strip().lstrip("#")
    static = get_static_component(text)
    if static is not None:
        return static.id
    if text.isascii() and text.isdigit() and len(text) < 8 and is_static_id(int(text)):
        return int(text)
    raise CommandError(
        f"'{esc(text[:64])}' is not a static component: use one of "
        f"{', '.join(map(str, STATIC_COMPONENT_IDS))} (or its key, e.g. character_context)."
    )


def key_from_name(name: str) -> str:
    """A component or template key made from a display name ("House rules" -> house_rules)."""
    key = re.sub(r"[^a-z0-9_]+", "_", (name or "").strip().lower()).strip("_")[:64]
    if key and key[0].isdigit():
        key = "_" + key[:63]
    return key


def pluralise(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def yes_no(value: bool) -> str:
    return "|gyes|n" if value else "|rno|n"

"""Prompt components: the ordered building blocks of an assistant's context window.

Pure module (no Django, Evennia or Twisted). Static components sit at 1000-point IDs
(plus 1500 for entity context); pluggable components created by operators take the free IDs
after a static one and before the next, so the order of the context window is the order of IDs::

    0     system_prompt          1000  character_context    1500  entity_context
    2000  semantic_memories      3000  context_buffer       4000  goals
    5000  conversation_history   6000  pending_event        7000  tool_result

Each static component's content is a single placeholder named after its source (e.g.
``"{pending_event}"``), filled at run time by the context builder.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

COMPONENT_SYSTEM_PROMPT = 0
COMPONENT_CHARACTER_CONTEXT = 1000
COMPONENT_ENTITY_CONTEXT = 1500
COMPONENT_SEMANTIC_MEMORIES = 2000
COMPONENT_CONTEXT_BUFFER = 3000
COMPONENT_GOALS = 4000
COMPONENT_CONVERSATION_HISTORY = 5000
COMPONENT_PENDING_EVENT = 6000
COMPONENT_TOOL_RESULT = 7000

VALID_ROLES = ("system", "user", "assistant", "tool", "mixed")
MAX_SLOTS = 999
MAX_COMPONENT_ID = COMPONENT_TOOL_RESULT + MAX_SLOTS


@dataclass
class PromptComponent:
    """One segment of the context window.

    Attributes:
        id: Position in the window (static: 0, 1000, 1500, ...; pluggable: the slots between).
        key: Unique identifier ("system_prompt", "house_rules").
        name: Display name.
        description: What the component provides.
        content: Template text with ``{placeholders}``.
        is_static: True for the nine built-in components.
        enabled: Whether assembly includes it.
        role: Message role: system, user, assistant, tool or mixed (history).
        after_static: For pluggable components, the static ID they follow.
    """

    id: int
    key: str
    name: str
    description: str
    content: str
    is_static: bool = False
    enabled: bool = True
    role: str = "system"
    after_static: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_STATIC = (
    (
        COMPONENT_SYSTEM_PROMPT,
        "system_prompt",
        "System Prompt",
        "Core instructions, identity, guidelines and the operator's prompt.",
        "system",
    ),
    (
        COMPONENT_CHARACTER_CONTEXT,
        "character_context",
        "Character Context",
        "Persona, active project and session memory.",
        "system",
    ),
    (
        COMPONENT_ENTITY_CONTEXT,
        "entity_context",
        "Entity Context",
        "What the assistant knows about the people and things around it.",
        "system",
    ),
    (
        COMPONENT_SEMANTIC_MEMORIES,
        "semantic_memories",
        "Semantic Memories",
        "Long-term memories recalled for this situation.",
        "system",
    ),
    (
        COMPONENT_CONTEXT_BUFFER,
        "context_buffer",
        "Context Buffer",
        "Recent ambient messages in the assistant's room.",
        "system",
    ),
    (
        COMPONENT_GOALS,
        "goals",
        "Goals",
        "Active goals with their hierarchy and progress.",
        "system",
    ),
    (
        COMPONENT_CONVERSATION_HISTORY,
        "conversation_history",
        "Conversation History",
        "Recent exchanges, token-budgeted.",
        "mixed",
    ),
    (
        COMPONENT_PENDING_EVENT,
        "pending_event",
        "Pending Event",
        "The event this tick answers.",
        "user",
    ),
    (
        COMPONENT_TOOL_RESULT,
        "tool_result",
        "Tool Result",
        "Result of the previous tool call.",
        "tool",
    ),
)

STATIC_COMPONENT_IDS: tuple[int, ...] = tuple(row[0] for row in _STATIC)
STATIC_COMPONENT_KEYS: tuple[str, ...] = tuple(row[1] for row in _STATIC)
STATIC_KEY_BY_ID: dict[int, str] = {row[0]: row[1] for row in _STATIC}


def _make_static(row: tuple[int, str, str, str, str]) -> PromptComponent:
    cid, key, name, description, role = row
    return PromptComponent(
        id=cid,
        key=key,
        name=name,
        description=description,
        content="{" + key + "}",
        is_static=True,
        enabled=True,
        role=role,
        after_static=None,
    )


def get_static_components() -> list[PromptComponent]:
    """Fresh copies of the nine static components, in ID order."""
    return [_make_static(row) for row in _STATIC]


def get_static_component(key: str) -> PromptComponent | None:
    """A fresh copy of the static component ``key``, or None."""
    for row in _STATIC:
        if row[1] == key:
            return _make_static(row)
    return None


def get_static_component_by_id(component_id: int) -> PromptComponent | None:
    """A fresh copy of the static component at ``component_id``, or None."""
    for row in _STATIC:
        if row[0] == component_id:
            return _make_static(row)
    return None


def get_ordered_component_ids() -> list[int]:
    """The static IDs in assembly order: [0, 1000, 1500, 2000, ...]."""
    return list(STATIC_COMPONENT_IDS)


def is_static_id(component_id: object) -> bool:
    """Whether ``component_id`` is one of the static IDs."""
    return (
        isinstance(component_id, int)
        and not isinstance(component_id, bool)
        and component_id in STATIC_COMPONENT_IDS
    )


def next_static_id(after_static: int) -> int | None:
    """The static ID following ``after_static`` (None after the last one)."""
    for cid in STATIC_COMPONENT_IDS:
        if cid > after_static:
            return cid
    return None


def pluggable_range(after_static: int) -> range:
    """IDs a pluggable component after ``after_static`` may take (at most 999 slots).

    Raises:
        ValueError: If ``after_static`` is not a static ID.
    """
    if not is_static_id(after_static):
        raise ValueError(
            f"after_static must be a static component ID ({', '.join(map(str, STATIC_COMPONENT_IDS))}), "
            f"not {after_static!r}"
        )
    upper = next_static_id(after_static)
    limit = after_static + MAX_SLOTS + 1
    end = min(upper, limit) if upper is not None else limit
    return range(after_static + 1, end)


def anchor_of(component_id: int) -> int:
    """The static ID a component ID belongs to (the largest static ID at or below it)."""
    anchor = STATIC_COMPONENT_IDS[0]
    for cid in STATIC_COMPONENT_IDS:
        if cid <= component_id:
            anchor = cid
    return anchor


def allocate_pluggable_id(existing_ids: Iterable[int] | None, after_static: int) -> int:
    """The next free ID after ``after_static``, below the next static ID.

    Args:
        existing_ids: IDs already taken (pluggable; static ones are ignored).
        after_static: The static component to follow.

    Returns:
        The lowest free ID in the range.

    Raises:
        ValueError: If ``after_static`` is not static, or its range is full.

    Example:
        >>> allocate_pluggable_id([1001, 1002], 1000)
        1003
    """
    taken = set(existing_ids or ())
    for cid in pluggable_range(after_static):
        if cid not in taken:
            return cid
    raise ValueError(
        f"No free component slot after {after_static} ({STATIC_KEY_BY_ID[after_static]}): "
        "the range is full; delete or move a component first."
    )


def with_overrides(
    component: PromptComponent, overrides: Mapping[str, Any] | None
) -> PromptComponent:
    """A copy of ``component`` with ``enabled``/``content`` overrides applied."""
    if not overrides:
        return replace(component)
    changes = {k: overrides[k] for k in ("enabled", "content") if k in overrides}
    return replace(component, **changes)

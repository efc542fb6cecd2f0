"""Every piece of an assistant's stored state, declared once: name, default, shape, meaning.

An NPC's state lives in Attributes of category ``ai``: on the character (:data:`CHARACTER_STATE`)
and on its AssistantScript (:data:`SCRIPT_STATE`). Each key is declared here with a factory of
its empty value and a JSON Schema of the shape the code relies on; :class:`~evennia_ai.npc.state.
AttributeState` checks a stored value against it when it is read from the database, so a value of
the wrong shape (an old layout, a hand edit with ``set``, a bug) is kept aside and replaced by
the default instead of failing every later tick.

The schemas check what the code dereferences (a dict where ``.get`` is called, a list of dicts
where items are read), not every field: a stored value that the code can read passes. They use
a small subset of JSON Schema (:data:`SHAPE_KEYWORDS`), checked by :func:`shape_problem` in
microseconds, so every write is checked too (a 200-message history in well under a
millisecond).

A key that restricts the NPC (what it is told, may use, may spend, whether it runs) declares its
**strictest safe value** (``strict``): used instead of the default while a stored value of it is
set aside, so an unreadable restriction never becomes no restriction. docs/security.md ("When
stored state cannot be read") lists them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Callable

from evennia_ai.memory.events import empty_queue
from evennia_ai.npc_state import (
    ARCHIVAL,
    ASSISTANT_SYSTEM_PROMPT,
    BEHAVIOUR_RULES,
    BLOCKS,
    BLOCKS_SHARED_IN,
    BUDGET,
    COMPACTION,
    CONTEXT_BUFFER,
    CURRENT_GOALS,
    ENABLED,
    ENTITIES,
    EVENT_QUEUE,
    EXECUTION_CONFIG,
    GOODS,
    HISTORY,
    HOST,
    JOURNAL,
    LEDGER,
    LINES,
    METRICS,
    MODEL,
    OFFERS,
    PAUSED,
    PERSONA,
    PRIVATE_WHISPERS,
    PROCEDURES,
    PROJECTS,
    PROMPT_REVISIONS,
    REFLECTION,
    ROUTINE,
    SESSION_MEMORY,
    SLEEP,
    TICK_COUNT,
    TOOL_ALLOW,
    TOOL_DENY,
    TOOL_RULES,
    USER_SYSTEM_PROMPT,
)
from evennia_ai.prompt.execution_pattern import ALL_TOOL_CATEGORIES, DANGEROUS
from evennia_ai.tools import TOOL_REGISTRY, load_builtin_tools
from evennia_ai.tools.groups import group_of
from evennia_ai.workspace.projects import empty_projects
from evennia_ai.workspace.session_memory import empty_session_memory


@dataclass(frozen=True)
class StateKey:
    """One declared piece of state.

    Attributes:
        name: The Attribute key (category ``ai``).
        default: Factory of the value used when nothing is stored.
        schema: JSON Schema of the shape the code relies on (:data:`SHAPE_KEYWORDS` only).
        doc: One line for the reference.
        strict: For a key that restricts: the strictest safe value, made from the value set
            aside (tool names are read out of it where it has any), used while a stored value
            is set aside. None: the default restricts nothing more, and is used.
        holds: While a stored value is set aside, the NPC calls no model (as past a budget,
            ``EVENNIA_AI_BUDGET_EXCEEDED_ACTION`` says how) until staff restore or discard it
            or store a new value.
        denies: For a key whose restriction only a denial can stand for (tool rules): the
            tools denied while a stored value is set aside, from the value set aside.
        developer_only: Only Developers may set it or see it (docs/security.md, "Who may do
            what"): a value of it set aside is shown to Developers only.
    """

    name: str
    default: Callable[[], Any]
    schema: dict
    doc: str
    strict: Callable[[Any], Any] | None = None
    holds: bool = False
    denies: Callable[[Any], list[str]] | None = None
    developer_only: bool = False

    def fallback(self, kept: Any) -> Any:
        """The value used while ``kept`` (a stored value of this key) is set aside."""
        return self.strict(kept) if self.strict is not None else self.default()


# -- shapes ----------------------------------------------------------------------------------------
#: The JSON Schema keywords the declared shapes may use (:func:`shape_problem` checks them all).
SHAPE_KEYWORDS = frozenset(
    {"type", "properties", "required", "items", "additionalProperties", "minimum", "enum"}
)
_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "object": lambda v: isinstance(v, Mapping),
    "array": lambda v: isinstance(v, Sequence) and not isinstance(v, (str, bytes)),
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool))
    or (isinstance(v, float) and v.is_integer()),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
}
# The JSON type of the plain Python types, for the common case (one dict lookup).
_JSON_TYPES = {
    str: "string",
    bool: "boolean",
    type(None): "null",
    int: "integer",
    float: "number",
    dict: "object",
    list: "array",
    tuple: "array",
}
MAX_SHAPE_DEPTH = 50


def _json_name(value: Any) -> str:
    name = _JSON_TYPES.get(type(value))
    if name is not None:
        return name
    return "object" if isinstance(value, Mapping) else type(value).__name__


def _fits_type(value: Any, names: tuple[str, ...] | list[str]) -> bool:
    name = _JSON_TYPES.get(type(value))
    if name is not None and name in names:
        return True
    if name == "integer" and "number" in names:
        return True
    if name == "number" and "integer" in names:
        return value.is_integer()
    return name is None and any(_TYPES[n](value) for n in names)


def _at(path: str, part: Any) -> str:
    return f"{path}[{part}]" if isinstance(part, int) else f"{path}.{part}"


def shape_problem(value: Any, schema: Mapping, path: str, depth: int = 0) -> str | None:
    """The first way ``value`` fails the declared ``schema``, in words, or None if it fits.

    The message names the place and the types, never the value itself (a value set aside may
    be a Developer-only text). Numbers must be finite. Only the keywords of
    :data:`SHAPE_KEYWORDS` are checked (the declarations use no others).
    """
    if depth > MAX_SHAPE_DEPTH:
        return f"{path} is nested too deeply (at most {MAX_SHAPE_DEPTH} levels)"
    kind = type(value)
    if kind is float and not math.isfinite(value):
        return f"{path} must be a finite number"
    wanted = schema.get("type")
    if wanted is not None:
        names = (wanted,) if isinstance(wanted, str) else wanted
        if not _fits_type(value, names):
            return f"{path} must be {' or '.join(names)}, not {_json_name(value)}"
    if "enum" in schema and value not in schema["enum"]:
        return f"{path} must be one of " + ", ".join(str(v) for v in schema["enum"])
    if "minimum" in schema and kind in (int, float) and not value >= schema["minimum"]:
        return f"{path} must be at least {schema['minimum']}"
    if kind is dict or (kind not in _JSON_TYPES and isinstance(value, Mapping)):
        for name in schema.get("required", ()):
            if name not in value:
                return f"{path} lacks '{name}'"
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping):
            pairs = ((k, v, properties.get(k, extra)) for k, v in value.items())
        else:  # only the declared properties are checked: look them up
            pairs = ((k, value[k], sub) for k, sub in properties.items() if k in value)
        for key, item, sub in pairs:
            problem = shape_problem(item, sub, _at(path, key), depth + 1)
            if problem:
                return problem
    elif kind is list or kind is tuple or (kind not in _JSON_TYPES and _TYPES["array"](value)):
        items = schema.get("items")
        if items:
            for index, item in enumerate(value):
                problem = shape_problem(item, items, _at(path, index), depth + 1)
                if problem:
                    return problem
    return None


def _shape_keywords(schema: Any) -> set[str]:
    """Every keyword ``schema`` uses, nested schemas included."""
    if not isinstance(schema, Mapping):
        return set()
    found = set(schema)
    for sub in (schema.get("items"), schema.get("additionalProperties")):
        found |= _shape_keywords(sub)
    for sub in (schema.get("properties") or {}).values():
        found |= _shape_keywords(sub)
    return found


# -- strictest safe values -------------------------------------------------------------------------
#: The tool group an NPC keeps while a tool list or tool rules of it are set aside.
FALLBACK_GROUP = "conversation"
_TOOL_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")


def _tools() -> list:
    load_builtin_tools()
    return TOOL_REGISTRY.all()


def fallback_group_tools() -> list[str]:
    """The names of the tools of :data:`FALLBACK_GROUP`."""
    return sorted(t.name for t in _tools() if group_of(t) == FALLBACK_GROUP)


def outside_fallback_group() -> list[str]:
    """The names of every tool outside :data:`FALLBACK_GROUP` (those without a group too)."""
    return sorted(t.name for t in _tools() if group_of(t) != FALLBACK_GROUP)


def tools_named_in(value: Any) -> list[str]:
    """The names of known tools a stored value names anywhere (a text, a list, rule dicts)."""
    words: set[str] = set()
    stack, seen = [value], 0
    while stack and seen < 10_000:
        item, seen = stack.pop(), seen + 1
        if isinstance(item, str):
            words.update(_TOOL_NAME.findall(item))
        elif isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple, set, frozenset)):
            stack.extend(item)
    known = {t.name for t in _tools()}
    return sorted(words & known)


def _strict_allow(kept: Any) -> list[str]:
    """The fallback group's tools, narrowed to those the set-aside list names, if it names any."""
    group = fallback_group_tools()
    named = [name for name in tools_named_in(kept) if name in group]
    return named or group


def _strict_deny(kept: Any) -> list[str]:
    """Every tool outside the fallback group, and the tools the set-aside list names."""
    return sorted(set(outside_fallback_group()) | set(tools_named_in(kept)))


def _rules_deny(kept: Any) -> list[str]:
    """The tools set-aside rules covered; every tool outside the fallback group if none is read."""
    return tools_named_in(kept) or outside_fallback_group()


def _salvaged_dicts(kept: Any, needed: str) -> list[dict]:
    """The dicts with a text under ``needed`` found anywhere in a set-aside value (bounded walk)."""
    found: list[dict] = []
    stack, seen = [kept], 0
    while stack and seen < 10_000:
        item, seen = stack.pop(), seen + 1
        if isinstance(item, Mapping):
            if isinstance(item.get(needed), str):
                found.append(dict(item))
            else:
                stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(reversed(item))
    return found


def _strict_whispers(kept: Any) -> list[dict]:
    """The whispers still readable in a set-aside list: they stay private to their senders."""
    return _salvaged_dicts(kept, "text")


def _strict_blocks(kept: Any) -> dict:
    """The memory blocks still readable in a set-aside value, by label: their ReadOnly
    permissions and secret marks keep holding."""
    if isinstance(kept, Mapping):
        return {str(k): dict(v) for k, v in kept.items() if isinstance(v, Mapping)}
    return {
        block.get("label") or str(n): block
        for n, block in enumerate(_salvaged_dicts(kept, "label"))
    }


def _strict_budget(kept: Any) -> dict:
    return {"tokens": 0, "cost": 0.0}


def _strict_execution(kept: Any) -> dict:
    return {
        "allowed_tool_categories": [c for c in ALL_TOOL_CATEGORIES if c != DANGEROUS],
        "sub_agents_enabled": False,
    }


def default_metrics() -> dict:
    """Counters of a new NPC (``npc.ai.metrics``)."""
    return {
        "ticks": 0,
        "errors": 0,
        "consecutive_errors": 0,
        "total_tool_calls": 0,
        "successful_calls": 0,
        "failed_calls": 0,
        "tool_stats": {},
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "cost": 0.0,
        "last_error": None,
        "last_error_time": None,
        "last_error_tick": None,
        "session_start": None,
        "daily": {},
    }


def default_sleep() -> dict:
    """The sleep state of an NPC that is awake."""
    return {"asleep": False, "since": None, "reason": None, "phase": None, "until": None}


def _none() -> None:
    return None


def _true() -> bool:
    return True


def _empty_text() -> str:
    return ""


def _zero() -> int:
    return 0


def _false() -> bool:
    return False


_COUNT = {"type": "integer", "minimum": 0}
_NUMBER = {"type": "number"}
_TEXT = {"type": "string"}
_TEXT_OR_NULL = {"type": ["string", "null"]}
_DICTS = {"type": "array", "items": {"type": "object"}}
_TEXTS = {"type": "array", "items": {"type": "string"}}
_COUNT_OR_NULL = {"type": ["integer", "null"], "minimum": 0}
_COUNTS = {"type": "object", "additionalProperties": _COUNT}
_RULES = {"type": "object", "additionalProperties": {"type": "object"}}


def empty_routine() -> dict:
    """The routine of an NPC that has none: it stays where it is."""
    return {"slots": []}


def empty_ledger() -> dict:
    """The ledger of an NPC that has not traded."""
    return {"entries": [], "today": {}, "restocked": {}}


def _object(properties: dict | None = None, **extra: Any) -> dict:
    schema: dict = {"type": "object"}
    if properties:
        schema["properties"] = properties
    schema.update(extra)
    return schema


_DECLARED: tuple[StateKey, ...] = (
    StateKey(
        ENABLED,
        _true,
        {"type": "boolean"},
        "Whether the NPC perceives and ticks.",
        strict=lambda kept: False,
    ),
    StateKey(PERSONA, _empty_text, _TEXT, "Who the NPC is (one paragraph)."),
    StateKey(MODEL, _empty_text, _TEXT, "The NPC's own model (empty: the server's)."),
    StateKey(
        USER_SYSTEM_PROMPT,
        _empty_text,
        _TEXT,
        "The operator's prompt (never the model's).",
        strict=lambda kept: "",
        holds=True,
        developer_only=True,
    ),
    StateKey(ASSISTANT_SYSTEM_PROMPT, _empty_text, _TEXT, "The NPC's own guidelines."),
    StateKey(
        PROJECTS,
        empty_projects,
        _object(
            {
                "active": _TEXT_OR_NULL,
                "slots": {"type": "object", "additionalProperties": _object()},
            }
        ),
        "Project slots and the active one.",
    ),
    StateKey(
        SESSION_MEMORY,
        empty_session_memory,
        _object(
            {
                "key_facts": {"type": "array"},
                "learned_patterns": {"type": "array"},
                "completed_tasks": {"type": "array"},
            }
        ),
        "Facts, patterns and completed tasks of this session.",
    ),
    StateKey(JOURNAL, list, _DICTS, "Journal entries, oldest first."),
    StateKey(BEHAVIOUR_RULES, list, _TEXTS, "Rules learned in reflection (RULE: lines)."),
    StateKey(
        EVENT_QUEUE,
        empty_queue,
        _object(
            {"events": _DICTS, "in_flight": _TEXTS, "dropped": _COUNT, "failed": _COUNT},
            required=["events"],
        ),
        "Perceived events waiting for a tick, and those a tick is answering.",
    ),
    StateKey(
        HISTORY,
        list,
        {"type": "array", "items": _object({"role": _TEXT}, required=["role"])},
        "The conversation sent to the model, oldest first.",
    ),
    StateKey(CONTEXT_BUFFER, list, _DICTS, "Recent ambient lines seen in the room."),
    StateKey(
        PRIVATE_WHISPERS,
        list,
        _DICTS,
        "Latest whispers, private to their senders (at most 10 per whisperer, 60 in all).",
        strict=_strict_whispers,
    ),
    StateKey(
        METRICS,
        default_metrics,
        _object(
            {
                "ticks": _COUNT,
                "errors": _COUNT,
                "consecutive_errors": _COUNT,
                "total_tool_calls": _COUNT,
                "successful_calls": _COUNT,
                "failed_calls": _COUNT,
                "tool_stats": {"type": "object", "additionalProperties": _object()},
                "prompt_tokens": _COUNT,
                "completion_tokens": _COUNT,
                "cost": _NUMBER,
                "last_error_time": _TEXT_OR_NULL,
                "last_error_tick": {"type": ["integer", "null"]},
                "daily": {"type": "object", "additionalProperties": _object()},
                "memory_gate": {"type": "object", "additionalProperties": _COUNT},
            }
        ),
        "Counters: ticks, errors, tool calls, tokens and cost (also per day), and the long-term "
        "memory gate's decisions (``memory_gate``).",
    ),
    StateKey(
        TOOL_RULES,
        list,
        _DICTS,
        "Per-NPC tool rules (cooldowns, limits, order).",
        strict=lambda kept: [],
        denies=_rules_deny,
        developer_only=True,
    ),
    StateKey(
        TOOL_ALLOW,
        _none,
        {"type": ["array", "null"], "items": _TEXT},
        "Only these tools (null: every tool the filter allows).",
        strict=_strict_allow,
        developer_only=True,
    ),
    StateKey(
        TOOL_DENY,
        list,
        _TEXTS,
        "Tools this NPC may never use.",
        strict=_strict_deny,
        developer_only=True,
    ),
    StateKey(
        SLEEP,
        default_sleep,
        _object({"asleep": {"type": "boolean"}, "until": _TEXT_OR_NULL, "since": _TEXT_OR_NULL}),
        "Whether the NPC sleeps, since when, why and until when.",
    ),
    StateKey(PROMPT_REVISIONS, list, _DICTS, "Earlier versions of the NPC's own guidelines."),
    StateKey(
        ENTITIES,
        dict,
        {"type": "object", "additionalProperties": _object()},
        "People and things the NPC knows, by key.",
    ),
    StateKey(
        BLOCKS,
        dict,
        {"type": "object", "additionalProperties": _object()},
        "Memory blocks by label.",
        strict=_strict_blocks,
    ),
    StateKey(ARCHIVAL, list, _DICTS, "Archival memory entries kept on the character."),
    StateKey(PROCEDURES, list, _DICTS, "Tool sequences that worked, by kind of event."),
    StateKey(BLOCKS_SHARED_IN, list, _DICTS, "Blocks other NPCs share with this one."),
    StateKey(
        COMPACTION,
        lambda: {"pending": False, "last_tick": None},
        _object({"pending": {"type": "boolean"}}),
        "Whether history compaction is due, and when it last ran.",
    ),
    StateKey(
        REFLECTION,
        lambda: {"last_tick": 0, "last_time": None, "count": 0},
        _object({"last_tick": _COUNT, "last_time": _TEXT_OR_NULL, "count": _COUNT}),
        "When the NPC last reflected.",
    ),
    StateKey(
        BUDGET,
        dict,
        _object({"tokens": _COUNT, "cost": {"type": "number", "minimum": 0}}),
        "Per-NPC daily limits, tightening the server's: tokens, cost.",
        strict=_strict_budget,
        developer_only=True,
    ),
    StateKey(
        LINES,
        dict,
        {"type": "object", "additionalProperties": _TEXT},
        "Staff's lines for when no model answers, by kind (unavailable, thinking, approval); "
        "a kind not set uses its setting.",
    ),
    StateKey(
        HOST,
        _false,
        {"type": "boolean"},
        "Whether it answers first the lines in its room that name no AI NPC (the room's host).",
    ),
    StateKey(
        ROUTINE,
        empty_routine,
        _object(
            {
                "slots": {
                    "type": "array",
                    "items": _object(
                        {"start": _TEXT, "end": _TEXT, "room": _TEXT},
                        required=["start", "end", "room"],
                    ),
                },
                "unreadable": {"type": "boolean"},
            }
        ),
        "The NPC's day in game time: where it is, what it does, open for trade or asleep "
        "(an unreadable routine closes its shop and it walks nowhere).",
        strict=lambda kept: {"slots": [], "unreadable": True},
    ),
    StateKey(
        GOODS,
        dict,
        _object(
            {
                "prices": _RULES,
                "buys": _RULES,
                "never": _TEXTS,
                "free": _TEXTS,
                "gifts": {"type": "boolean"},
                "containers": _TEXTS,
                "restock": _RULES,
                "sold_per_day": _COUNT_OR_NULL,
                "paid_per_day": _COUNT_OR_NULL,
                "approval_above": _COUNT_OR_NULL,
                "closed": {"type": "boolean"},
                "lines": _TEXTS,
            }
        ),
        "What the NPC sells and buys, at what prices, and its trade rules (staff set these; "
        "unreadable rules close the shop).",
        strict=lambda kept: {"closed": True},
    ),
    StateKey(
        LEDGER,
        empty_ledger,
        _object(
            {
                "entries": _DICTS,
                "day": _TEXT,
                "today": _object(
                    {
                        "sold": _COUNTS,
                        "bought": _COUNTS,
                        "sold_units": _COUNT,
                        "taken": _COUNT,
                        "paid": _COUNT,
                        "partners": _COUNTS,
                    }
                ),
                "restocked": {"type": "object", "additionalProperties": _NUMBER},
                "approvals": {"type": "array", "items": _TEXT},
                "blocked": {"type": "boolean"},
            }
        ),
        "The NPC's latest trades (at most EVENNIA_AI_LEDGER_SIZE), today's counts for its daily "
        "limits, apart, when each restock rule last ran, and the ids of the approvals it ran "
        "(unreadable records stop its trading).",
        strict=lambda kept: {"entries": [], "blocked": True},
    ),
    StateKey(
        OFFERS,
        dict,
        {
            "type": "object",
            "additionalProperties": _object(
                {
                    "partner": _TEXT,
                    "direction": {"type": "string", "enum": ["sell", "buy"]},
                    "item": _TEXT,
                    "quantity": _COUNT,
                    "unit_price": _COUNT,
                    "expires": _NUMBER,
                },
                required=["partner", "direction", "item", "quantity", "unit_price", "expires"],
            ),
        },
        "The NPC's open trade offers (its trade tool's), one per player at most, by the "
        "player's dbref; each expires after EVENNIA_AI_TRADE_OFFER_SECONDS (unreadable offers "
        "are dropped: none can be accepted).",
    ),
)

CHARACTER_STATE: dict[str, StateKey] = {key.name: key for key in _DECLARED}

SCRIPT_STATE: dict[str, StateKey] = {
    key.name: key
    for key in (
        StateKey(
            CURRENT_GOALS,
            list,
            {"type": "array", "items": _object({"description": _TEXT})},
            'Goals, held on the AssistantScript (docs/architecture.md, "Where state lives").',
        ),
        StateKey(
            EXECUTION_CONFIG,
            dict,
            _object(
                {
                    "max_iterations_per_tick": {"type": "integer"},
                    "sub_agent_budget": {"type": "integer"},
                    "allowed_tool_categories": {
                        "type": "array",
                        "items": {"type": "string", "enum": list(ALL_TOOL_CATEGORIES)},
                    },
                    "multi_action_enabled": {"type": "boolean"},
                    "task_assessment_enabled": {"type": "boolean"},
                    "sub_agents_enabled": {"type": "boolean"},
                }
            ),
            "The execution pattern's static limits (only the values set; defaults fill the rest).",
            strict=_strict_execution,
            developer_only=True,
        ),
        StateKey(TICK_COUNT, _zero, _COUNT, "Ticks run by this Script."),
        StateKey(
            PAUSED,
            _false,
            {"type": "boolean"},
            "Whether ticking is paused.",
            strict=lambda kept: True,
        ),
    )
}

for _key in (*CHARACTER_STATE.values(), *SCRIPT_STATE.values()):
    _unknown = _shape_keywords(_key.schema) - SHAPE_KEYWORDS
    if _unknown:  # shape_problem would not check them
        raise TypeError(f"state key '{_key.name}' uses unchecked keywords {sorted(_unknown)}")

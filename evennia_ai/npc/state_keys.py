"""Every piece of an assistant's stored state, declared once: name, default, shape, meaning.

An NPC's state lives in Attributes of category ``ai``: on the character (:data:`CHARACTER_STATE`)
and on its AssistantScript (:data:`SCRIPT_STATE`). Each key is declared here with a factory of
its empty value and a JSON Schema of the shape the code relies on; :class:`~evennia_ai.npc.state.
AttributeState` checks a stored value against it when it is read from the database, so a value of
the wrong shape (an old layout, a hand edit with ``set``, a bug) is kept aside and replaced by
the default instead of failing every later tick.

The schemas check what the code dereferences (a dict where ``.get`` is called, a list of dicts
where items are read), not every field: a stored value that the code can read passes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from evennia_ai.memory.events import empty_queue
from evennia_ai.workspace.projects import empty_projects
from evennia_ai.workspace.session_memory import empty_session_memory


@dataclass(frozen=True)
class StateKey:
    """One declared piece of state.

    Attributes:
        name: The Attribute key (category ``ai``).
        default: Factory of the value used when nothing (or something invalid) is stored.
        schema: JSON Schema of the shape the code relies on.
        doc: One line for the reference.
    """

    name: str
    default: Callable[[], Any]
    schema: dict
    doc: str


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


def _object(properties: dict | None = None, **extra: Any) -> dict:
    schema: dict = {"type": "object"}
    if properties:
        schema["properties"] = properties
    schema.update(extra)
    return schema


_DECLARED: tuple[StateKey, ...] = (
    StateKey("enabled", _true, {"type": "boolean"}, "Whether the NPC perceives and ticks."),
    StateKey("persona", _empty_text, _TEXT, "Who the NPC is (one paragraph)."),
    StateKey("model", _empty_text, _TEXT, "The NPC's own model (empty: the server's)."),
    StateKey(
        "user_system_prompt", _empty_text, _TEXT, "The operator's prompt (never the model's)."
    ),
    StateKey("assistant_system_prompt", _empty_text, _TEXT, "The NPC's own guidelines."),
    StateKey(
        "projects",
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
        "session_memory",
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
    StateKey("journal", list, _DICTS, "Journal entries, oldest first."),
    StateKey("behaviour_rules", list, _TEXTS, "Rules learned in reflection (RULE: lines)."),
    StateKey(
        "event_queue",
        empty_queue,
        _object(
            {"events": _DICTS, "in_flight": _TEXTS, "dropped": _COUNT, "failed": _COUNT},
            required=["events"],
        ),
        "Perceived events waiting for a tick, and those a tick is answering.",
    ),
    StateKey(
        "history",
        list,
        {"type": "array", "items": _object({"role": _TEXT}, required=["role"])},
        "The conversation sent to the model, oldest first.",
    ),
    StateKey("context_buffer", list, _DICTS, "Recent ambient lines seen in the room."),
    StateKey("private_whispers", list, _DICTS, "Latest whispers, private to their senders."),
    StateKey(
        "metrics",
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
    StateKey("tool_rules", list, _DICTS, "Per-NPC tool rules (cooldowns, limits, order)."),
    StateKey(
        "tool_allow",
        _none,
        {"type": ["array", "null"], "items": _TEXT},
        "Only these tools (null: every tool the filter allows).",
    ),
    StateKey("tool_deny", list, _TEXTS, "Tools this NPC may never use."),
    StateKey(
        "sleep",
        default_sleep,
        _object({"asleep": {"type": "boolean"}, "until": _TEXT_OR_NULL, "since": _TEXT_OR_NULL}),
        "Whether the NPC sleeps, since when, why and until when.",
    ),
    StateKey("prompt_revisions", list, _DICTS, "Earlier versions of the NPC's own guidelines."),
    StateKey(
        "entities",
        dict,
        {"type": "object", "additionalProperties": _object()},
        "People and things the NPC knows, by key.",
    ),
    StateKey(
        "blocks",
        dict,
        {"type": "object", "additionalProperties": _object()},
        "Memory blocks by label.",
    ),
    StateKey("archival", list, _DICTS, "Archival memory entries kept on the character."),
    StateKey("procedures", list, _DICTS, "Tool sequences that worked, by kind of event."),
    StateKey("blocks_shared_in", list, _DICTS, "Blocks other NPCs share with this one."),
    StateKey(
        "compaction",
        lambda: {"pending": False, "last_tick": None},
        _object({"pending": {"type": "boolean"}}),
        "Whether history compaction is due, and when it last ran.",
    ),
    StateKey(
        "reflection",
        lambda: {"last_tick": 0, "last_time": None, "count": 0},
        _object({"last_tick": _COUNT, "last_time": _TEXT_OR_NULL, "count": _COUNT}),
        "When the NPC last reflected.",
    ),
    StateKey(
        "budget",
        dict,
        _object({"tokens": _COUNT, "cost": {"type": "number", "minimum": 0}}),
        "Per-NPC daily limits, tightening the server's: tokens, cost.",
    ),
)

CHARACTER_STATE: dict[str, StateKey] = {key.name: key for key in _DECLARED}

SCRIPT_STATE: dict[str, StateKey] = {
    key.name: key
    for key in (
        StateKey(
            "current_goals",
            list,
            {"type": "array", "items": _object({"description": _TEXT})},
            "Goals, held on the AssistantScript as the spec says.",
        ),
        StateKey(
            "execution_config",
            dict,
            _object(
                {
                    "max_iterations_per_tick": {"type": "integer"},
                    "sub_agent_budget": {"type": "integer"},
                    "allowed_tool_categories": _TEXTS,
                }
            ),
            "Layer 1 of the execution pattern (only the values set; defaults fill the rest).",
        ),
        StateKey("tick_count", _zero, _COUNT, "Ticks run by this Script."),
        StateKey("paused", _false, {"type": "boolean"}, "Whether ticking is paused."),
    )
}

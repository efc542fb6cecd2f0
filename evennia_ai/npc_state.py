"""The declared boundary of an assistant's state: its key names and the API the lower layers use.

An assistant's state is kept by its ``npc.ai`` handler (:class:`evennia_ai.npc.handler.AIHandler`,
layer "npc"). The layers below it (llm, memory, workspace, tools, prompt, engine) never reach
``npc.ai`` themselves: they call :func:`npc_state` (or :func:`find_npc_state` for an object that
may not be an assistant) and type against :class:`NPCState`, the part of the handler they may
use. ``tests/system/test_layers.py`` checks that no module below ``npc`` touches an attribute named
``ai`` any other way.

The names of the stored keys are constants here (:data:`METRICS`, :data:`SLEEP`, ...), so code
that writes state names a key by its constant, never by a string. Each is declared once, with
its default and shape, in :mod:`evennia_ai.npc.state_keys`, and the handler reads every
character-held key as an attribute (``npc_state(npc).metrics``).

Example:
    state = npc_state(npc)
    state.update(METRICS, lambda metrics: count_decisions(metrics, decisions))
    rules = state.behaviour_rules

Pure module: no Django, Evennia or Twisted import, so anything may import it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, Protocol, TypeAlias, TypeVar, Union, overload, runtime_checkable

#: A stored value: what an Attribute of category ``ai`` holds (plain JSON-shaped data).
JSONValue: TypeAlias = Union[str, int, float, bool, None, list["JSONValue"], dict[str, "JSONValue"]]
#: A stored dict (metrics, sleep, a goal, a memory block, ...).
JSONObject: TypeAlias = dict[str, JSONValue]

#: The Attribute category of an assistant's state, on the character and on its Script.
STATE_CATEGORY: Final = "ai"
#: The Attribute category of stored values set aside because they failed their declared shape.
QUARANTINE_CATEGORY: Final = "ai_quarantine"
#: How a Script-held key is named where it is listed with the character's (``script.paused``).
SCRIPT_PREFIX: Final = "script."

# -- the keys held on the character (Attributes of category ``ai``) ------------------------------
ENABLED: Final = "enabled"
PERSONA: Final = "persona"
MODEL: Final = "model"
USER_SYSTEM_PROMPT: Final = "user_system_prompt"
ASSISTANT_SYSTEM_PROMPT: Final = "assistant_system_prompt"
PROJECTS: Final = "projects"
SESSION_MEMORY: Final = "session_memory"
JOURNAL: Final = "journal"
BEHAVIOUR_RULES: Final = "behaviour_rules"
EVENT_QUEUE: Final = "event_queue"
HISTORY: Final = "history"
CONTEXT_BUFFER: Final = "context_buffer"
PRIVATE_WHISPERS: Final = "private_whispers"
METRICS: Final = "metrics"
TOOL_RULES: Final = "tool_rules"
TOOL_ALLOW: Final = "tool_allow"
TOOL_DENY: Final = "tool_deny"
SLEEP: Final = "sleep"
PROMPT_REVISIONS: Final = "prompt_revisions"
ENTITIES: Final = "entities"
BLOCKS: Final = "blocks"
ARCHIVAL: Final = "archival"
PROCEDURES: Final = "procedures"
BLOCKS_SHARED_IN: Final = "blocks_shared_in"
COMPACTION: Final = "compaction"
REFLECTION: Final = "reflection"
BUDGET: Final = "budget"
LINES: Final = "lines"
HOST: Final = "host"
ROUTINE: Final = "routine"
GOODS: Final = "goods"
LEDGER: Final = "ledger"
OFFERS: Final = "offers"

#: Every character-held key, in the order :mod:`evennia_ai.npc.state_keys` declares them.
CHARACTER_KEYS: Final = (
    ENABLED,
    PERSONA,
    MODEL,
    USER_SYSTEM_PROMPT,
    ASSISTANT_SYSTEM_PROMPT,
    PROJECTS,
    SESSION_MEMORY,
    JOURNAL,
    BEHAVIOUR_RULES,
    EVENT_QUEUE,
    HISTORY,
    CONTEXT_BUFFER,
    PRIVATE_WHISPERS,
    METRICS,
    TOOL_RULES,
    TOOL_ALLOW,
    TOOL_DENY,
    SLEEP,
    PROMPT_REVISIONS,
    ENTITIES,
    BLOCKS,
    ARCHIVAL,
    PROCEDURES,
    BLOCKS_SHARED_IN,
    COMPACTION,
    REFLECTION,
    BUDGET,
    LINES,
    HOST,
    ROUTINE,
    GOODS,
    LEDGER,
    OFFERS,
)

# -- the keys held on the NPC's AssistantScript ------------------------------------------------
CURRENT_GOALS: Final = "current_goals"
EXECUTION_CONFIG: Final = "execution_config"
TICK_COUNT: Final = "tick_count"
PAUSED: Final = "paused"

#: Every Script-held key, in the order :mod:`evennia_ai.npc.state_keys` declares them.
SCRIPT_KEYS: Final = (CURRENT_GOALS, EXECUTION_CONFIG, TICK_COUNT, PAUSED)

_Value = TypeVar("_Value")
_Result = TypeVar("_Result")


class AssistantScriptView(Protocol):
    """What the lower layers read of an NPC's AssistantScript (its heartbeat)."""

    @property
    def is_active(self) -> bool:
        """Whether the Script's timer runs."""


class SpentView(Protocol):
    """Tokens and cost of some model calls (``engine.accounting.Spent``)."""

    @property
    def tokens(self) -> int:
        """Prompt plus completion tokens."""

    @property
    def cost(self) -> float:
        """USD, 0.0 when unknown."""


class SpendingView(Protocol):
    """Where an assistant stands against its daily budgets (``npc.spending.SpendingStatus``)."""

    @property
    def day(self) -> str:
        """The UTC date the figures are for."""

    @property
    def exceeded(self) -> bool:
        """Whether any limit is reached (or the operator's word cannot be read)."""

    @property
    def scope(self) -> str | None:
        """Which limit was reached first (``"npc"``, ``"server"``, ``"held"``), if any."""

    @property
    def action(self) -> str:
        """What the assistant does while exceeded (``EVENNIA_AI_BUDGET_EXCEEDED_ACTION``)."""

    @property
    def held(self) -> tuple[str, ...]:
        """Why the operator's word cannot be read, if it cannot."""

    def reached_with(self, spent: SpentView) -> bool:
        """Whether a daily limit is reached counting ``spent`` on top of today's figures."""

    def describe(self) -> str:
        """One line for people."""

    def to_dict(self) -> dict[str, object]:
        """The figures as a dict (status displays)."""


@runtime_checkable
class NPCState(Protocol):
    """The state and services of one assistant that the layers below ``npc`` may use.

    Reading a declared key returns a plain copy (changing it writes nothing); a change is
    written once with :meth:`set` or :meth:`update`. Keys are the constants of this module.
    """

    # -- any declared character-held key ---------------------------------------------------------
    def get(self, key: str) -> JSONValue:
        """A plain copy of the declared character-held ``key``."""

    def set(self, key: str, value: JSONValue, *, lazy: bool = False) -> None:
        """Write the character-held ``key`` once (ValueError if it does not fit its shape);
        ``lazy``: the row may wait for the next batch of writes (a value the server's start
        puts right after a crash)."""

    @overload
    def update(self, key: str, change: Callable[[_Value], tuple[_Value, _Result]]) -> _Result: ...

    @overload
    def update(self, key: str, change: Callable[[_Value], _Value]) -> _Value: ...

    def update(self, key: str, change: Callable[[_Value], object]) -> object:
        """Change ``key`` with ``change`` and write it once.

        ``change`` gets a plain copy and returns the new value, or ``(new value, result)``;
        the result (or the new value) is returned.
        """

    # -- the character-held keys, read as attributes (plain copies) ------------------------------
    @property
    def enabled(self) -> bool:
        """Whether the NPC perceives and ticks."""

    @property
    def persona(self) -> str:
        """Who the NPC is."""

    @property
    def model(self) -> str:
        """The NPC's own model ("" means the server default)."""

    @property
    def user_system_prompt(self) -> str:
        """The operator's prompt (never the model's)."""

    @property
    def assistant_system_prompt(self) -> str:
        """The NPC's own guidelines."""

    @property
    def projects(self) -> JSONObject:
        """Project slots and the active one."""

    @property
    def session_memory(self) -> JSONObject:
        """Facts, patterns and completed tasks of this session."""

    @property
    def journal(self) -> list[JSONObject]:
        """Journal entries, oldest first."""

    @property
    def behaviour_rules(self) -> list[str]:
        """Rules learned in reflection."""

    @property
    def event_queue(self) -> JSONObject:
        """Perceived events waiting for a tick, and those a tick is answering."""

    @property
    def history(self) -> list[JSONObject]:
        """The conversation sent to the model, oldest first."""

    @property
    def context_buffer(self) -> list[JSONObject]:
        """Recent ambient lines seen in the room."""

    @property
    def private_whispers(self) -> list[JSONObject]:
        """Latest whispers, private to their senders."""

    @property
    def metrics(self) -> JSONObject:
        """Counters: ticks, errors, tool calls, tokens and cost."""

    @property
    def tool_rules(self) -> list[JSONObject]:
        """Per-NPC tool rules."""

    @property
    def tool_allow(self) -> list[str] | None:
        """Only these tools (None: every tool the filter allows)."""

    @property
    def tool_deny(self) -> list[str]:
        """Tools this NPC may never use (widened while rules of it are set aside)."""

    @property
    def sleep(self) -> JSONObject:
        """Whether the NPC sleeps, since when, why and until when."""

    @property
    def prompt_revisions(self) -> list[JSONObject]:
        """Earlier versions of the NPC's own guidelines."""

    @property
    def entities(self) -> dict[str, JSONObject]:
        """People and things the NPC knows, by key."""

    @property
    def blocks(self) -> dict[str, JSONObject]:
        """Memory blocks by label."""

    @property
    def archival(self) -> list[JSONObject]:
        """Archival memory entries kept on the character."""

    @property
    def procedures(self) -> list[JSONObject]:
        """Tool sequences that worked, by kind of event."""

    @property
    def blocks_shared_in(self) -> list[JSONObject]:
        """Blocks other NPCs share with this one."""

    @property
    def compaction(self) -> JSONObject:
        """Whether history compaction is due, and when it last ran."""

    @property
    def reflection(self) -> JSONObject:
        """When the NPC last reflected."""

    @property
    def budget(self) -> JSONObject:
        """Per-NPC daily limits."""

    @property
    def lines(self) -> dict[str, str]:
        """Staff's own lines of this NPC for when no model answers, by kind (unset: the
        settings')."""

    @property
    def host(self) -> bool:
        """Whether it answers first the lines in its room that name no AI NPC (a room's host)."""

    @property
    def routine(self) -> JSONObject:
        """The NPC's day in game time: its slots (where it is, what it does, open for trade or
        asleep), who set it and when."""

    @property
    def goods(self) -> JSONObject:
        """What the NPC sells and buys, at what prices, and its trade rules (``closed`` while
        a stored value of them is set aside)."""

    @property
    def ledger(self) -> JSONObject:
        """The NPC's latest trades, today's counts for its daily limits and when it last
        restocked (``blocked`` while a stored value of it is set aside)."""

    @property
    def offers(self) -> dict[str, JSONObject]:
        """The NPC's open trade offers, one per player at most, by the player's dbref."""

    # -- held on the AssistantScript ---------------------------------------------------------
    @property
    def script(self) -> AssistantScriptView | None:
        """The NPC's AssistantScript, or None if it has none."""

    @property
    def goals(self) -> list[JSONObject]:
        """Plain copy of the goals."""

    @overload
    def update_goals(self, change: Callable[[_Value], tuple[_Value, _Result]]) -> _Result: ...

    @overload
    def update_goals(self, change: Callable[[_Value], _Value]) -> _Value: ...

    def update_goals(self, change: Callable[[_Value], object]) -> object:
        """Change the goals (plain list in, new list or ``(list, result)`` out), one write."""

    @property
    def execution_config(self) -> JSONObject:
        """The execution pattern's static limits, defaults filled in."""

    @property
    def paused(self) -> bool:
        """Whether ticking is paused."""

    # -- services --------------------------------------------------------------------------------
    def set_assistant_system_prompt(
        self, text: str, reasoning: str = "", by: str = "assistant"
    ) -> None:
        """Replace the NPC's own guidelines, keeping a bounded revision log."""

    def notify_system(self, text: str) -> None:
        """Queue a system event for the NPC's next tick."""

    def hear(self, text: str, source: str | None = None, line: object = None) -> None:
        """Keep a line the NPC saw in its room without waking it (no event, no tick): its
        context buffer has it at its next tick. ``source``: the speaker's dbref, if known;
        ``line``: what the listeners of one line share, so the room keeps one entry for all."""

    def spending_status(self, metrics: JSONObject | None = None) -> SpendingView:
        """Today's tokens and cost against the daily budgets."""

    def record_spending(self, tokens: int, cost: float, day: str | None = None) -> None:
        """Add a tick's tokens and cost to the server's total of the day."""

    def record_trace(self, trace: JSONObject, ring: int | None = None) -> None:
        """Keep a tick's trace in the ring."""

    def trace(self, tick_id: int) -> JSONObject | None:
        """The trace of one tick, or None if it is not kept."""

    def status(self) -> JSONObject:
        """A summary for admin commands and the dashboard."""

    def log_error(self, message: str) -> None:
        """Log an error of this NPC (with its log prefix)."""


def find_npc_state(obj: object) -> NPCState | None:
    """The state of ``obj`` if it is an assistant, else None.

    The one place below the ``npc`` layer that reaches an object's ``ai`` handler.
    """
    handler: NPCState | None = getattr(obj, "ai", None)
    return handler


def npc_state(obj: object) -> NPCState:
    """The state of the assistant ``obj`` (its ``npc.ai`` handler, typed as :class:`NPCState`).

    Raises:
        TypeError: ``obj`` is not an assistant (its typeclass has no ``ai`` handler).
    """
    state = find_npc_state(obj)
    if state is None:
        raise TypeError(f"{getattr(obj, 'key', obj)} is not an AI assistant (it has no .ai state)")
    return state

"""The ``.ai`` handler of an assistant: its state, its Script, its perception queue.

Reached as ``npc.ai`` on any object whose typeclass uses
:class:`~evennia_ai.typeclasses.AIAssistantMixin`. Everything persistent is a plain dict or list
in an Attribute of category ``ai``: on the character for what belongs to the character
(projects, session memory, journal, prompts, history, queue, traces), on its
:class:`~evennia_ai.scripts.AssistantScript` for what belongs to its heartbeat (goals, execution
config, tick counters; docs/architecture.md, "Where state lives"). Each change is one write
(see :mod:`evennia_ai.npc.state`).

Example:
    npc.ai.set_persona("A gruff but kind innkeeper who knows every local rumour.")
    npc.ai.goals                      # plain list of goal dicts
    npc.ai.update(SESSION_MEMORY, lambda mem: add_fact(mem, ...))  # keys: evennia_ai.npc_state
    npc.ai.pause(); npc.ai.resume()
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any, Callable

from evennia.utils import logger

from evennia_ai import attribute_writes, conf
from evennia_ai.formatting import timestamp
from evennia_ai.llm import tokens
from evennia_ai.llm.models import resolve_model
from evennia_ai.memory import context_buffer
from evennia_ai.memory import events as ev
from evennia_ai.memory.events import Event, pending_events
from evennia_ai.npc import answering, heard, spending
from evennia_ai.npc.answering import NotAnswering
from evennia_ai.npc.state import CATEGORY, AttributeState, write_attribute
from evennia_ai.npc.state_keys import CHARACTER_STATE, SCRIPT_STATE
from evennia_ai.npc_state import (
    ASSISTANT_SYSTEM_PROMPT,
    CONTEXT_BUFFER,
    CURRENT_GOALS,
    ENABLED,
    EVENT_QUEUE,
    EXECUTION_CONFIG,
    METRICS,
    MODEL,
    PAUSED,
    PERSONA,
    PROMPT_REVISIONS,
    SCRIPT_PREFIX,
    SLEEP,
    TOOL_DENY,
    USER_SYSTEM_PROMPT,
)
from evennia_ai.prompt.builder import OperatorSourceError, read_operator_override
from evennia_ai.prompt.execution_pattern import ALL_TOOL_CATEGORIES, DEFAULT_EXECUTION_CONFIG
from evennia_ai.utils import is_live_instance, iso_utc, log_prefix, plain

PROMPT_REVISIONS_KEPT = 20
# The NPC's AssistantScript: found by key, created by its typeclass path (the Script's class
# lives in a higher layer, evennia_ai.scripts, and imports this module).
SCRIPT_KEY = "evennia_ai_assistant"
SCRIPT_TYPECLASS = "evennia_ai.scripts.AssistantScript"
TRACE_CATEGORY = "ai_trace"


def trace_text(trace: dict) -> str:
    """A tick trace as the JSON text its ring slot holds (compact; a value JSON has no form
    for is written as its text, as :func:`evennia_ai.engine.trace.bounded_trace` measures)."""
    return json.dumps(trace, separators=(",", ":"), ensure_ascii=False, default=str)


def stored_trace(value: Any) -> dict | None:
    """The trace a ring slot holds: its JSON text read back, or (written by an older
    version) a plain copy of its dict; None for an empty slot or anything else."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    elif value is not None:
        value = plain(value)
    return value if isinstance(value, dict) else None


class _Declared:
    """A declared piece of character state read as an attribute: ``npc.ai.metrics``.

    Reading returns a plain copy (changing it writes nothing); write with ``npc.ai.set`` or
    ``npc.ai.update``, once per change.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.__doc__ = CHARACTER_STATE[name].doc

    def __get__(self, handler, owner=None):
        if handler is None:
            return self
        return handler.state.get(self.name)

    def __set__(self, handler, value) -> None:
        raise AttributeError(
            f"npc.ai.{self.name} is read-only: write it with npc.ai.set or npc.ai.update"
        )


def _declare_character_state(cls: type) -> type:
    """Give ``cls`` a read-only attribute for each declared character-held key (``.metrics``)
    it does not define itself (those with a setter of their own: ``persona``, ``model``...)."""
    for name in CHARACTER_STATE:
        if name not in vars(cls):
            setattr(cls, name, _Declared(name))
    return cls


@_declare_character_state
class AIHandler:
    """State and control of one assistant (``npc.ai``).

    Satisfies :class:`evennia_ai.npc_state.NPCState`, the part of it the layers below ``npc``
    use (through :func:`evennia_ai.npc_state.npc_state`). Every character-held key declared in
    :mod:`evennia_ai.npc.state_keys` reads as an attribute (a plain copy): ``npc.ai.metrics``.

    Args:
        obj: The assistant character.
    """

    def __init__(self, obj):
        self.obj = obj
        self.state = AttributeState(obj, CHARACTER_STATE)
        self._script = None  # the AssistantScript found last (kept while it exists)

    # -- generic state access ------------------------------------------------------------------
    def get(self, key: str) -> Any:
        """A plain copy of the declared character-held ``key`` (tick traces: :meth:`traces`)."""
        return self.state.get(key)

    def set(self, key: str, value: Any, *, lazy: bool = False) -> None:
        """Write the character-held ``key`` once (``lazy``: see :meth:`AttributeState.set`)."""
        self.state.set(key, value, lazy=lazy)

    def update(self, key: str, change: Callable[[Any], Any]) -> Any:
        """Change the character-held ``key`` with ``change`` and write it once."""
        return self.state.update(key, change)

    @property
    def tool_deny(self) -> list[str]:
        """Tools this NPC may never use: the stored list (or its strictest value while one is
        set aside), and while its tool rules are set aside, the tools they covered."""
        denied = self.state.get(TOOL_DENY)
        for key, declared in CHARACTER_STATE.items():
            if declared.denies is None:
                continue
            self.state.get(key)  # a stored value not read yet is checked (and set aside) now
            if self.state.in_fallback(key):
                denied = sorted(set(denied) | set(declared.denies(self.state.kept(key)["value"])))
        return denied

    # -- tick traces -----------------------------------------------------------------------------
    # A ring of EVENNIA_AI_TRACE_RING_SIZE slots, one Attribute each (category ``ai_trace``):
    # recording a tick rewrites the one slot it lands in (``tick_id % size``), so a tick writes
    # one trace, not the ring. The ring's slots are created together (empty) by its first
    # write, so ticks after it create or delete no rows. A slot holds its trace as JSON text
    # (:func:`trace_text`): the ring stays in memory with the NPC's other Attributes, and one
    # string takes about a third of the memory of the dicts and lists it is made of (100 NPCs'
    # full rings: 53 MB as dicts, ``python -m bench memory_rss``). Slots written as dicts by
    # older versions are read as they are.
    def record_trace(self, trace: dict, ring: int | None = None) -> None:
        """Keep ``trace`` (a TickTrace dict), replacing the one ``ring`` ticks older."""
        size = max(1, int(ring)) if ring is not None else conf.get_int("EVENNIA_AI_TRACE_RING_SIZE")
        tick_id = int(trace.get("tick_id") or 0)
        key = f"trace_{tick_id % size}"
        # the slot is looked up alone (reading the whole ring would unpickle 50 traces)
        if self.obj.attributes.get(key, category=TRACE_CATEGORY, return_obj=True) is None:
            ring_keys = [f"trace_{n}" for n in range(size)]
            attribute_writes.create_empty(self.obj, ring_keys, TRACE_CATEGORY)  # first lap
        write_attribute(self.obj, key, trace_text(trace), TRACE_CATEGORY)

    def traces(self, last: int | None = None) -> list[dict]:
        """The kept tick traces, oldest first (the newest ``last`` only, if given)."""

        size = conf.get_int("EVENNIA_AI_TRACE_RING_SIZE")
        stored = self.obj.attributes.get(category=TRACE_CATEGORY, return_list=True, return_obj=True)
        read = (stored_trace(attr.value) for attr in stored or [] if attr is not None)
        found = sorted((t for t in read if t is not None), key=lambda t: int(t.get("tick_id") or 0))
        found = found[-size:]  # slots left over from a larger ring size are not shown
        if last is not None:
            found = found[-max(0, int(last)) :] if last else []
        return found

    def trace(self, tick_id: int) -> dict | None:
        """The trace of one tick, or None if it is not kept."""

        size = conf.get_int("EVENNIA_AI_TRACE_RING_SIZE")
        value = self.obj.attributes.get(f"trace_{int(tick_id) % size}", category=TRACE_CATEGORY)
        value = stored_trace(value)
        if isinstance(value, dict) and int(value.get("tick_id") or 0) == int(tick_id):
            return value
        return None

    def migrate_trace_ring(self) -> int:
        """Move traces stored by 0.1 (one ``traces`` list) to the slot ring; how many moved.

        Run once per NPC by the layout upgrade at server start (:mod:`evennia_ai.startstop`).
        """
        old = self.obj.attributes.get("traces", category=CATEGORY)
        if old is None:
            return 0
        self.obj.attributes.remove("traces", category=CATEGORY)
        moved = [trace for trace in plain(old) if isinstance(trace, dict)]
        for trace in moved:
            self.record_trace(trace)
        return len(moved)

    # -- simple fields ---------------------------------------------------------------------------
    @property
    def enabled(self) -> bool:
        return self.state.get(ENABLED)

    def set_enabled(self, value: bool) -> None:
        self.state.set(ENABLED, bool(value))

    @property
    def persona(self) -> str:
        return self.state.get(PERSONA)

    def set_persona(self, text: str) -> None:
        self.state.set(PERSONA, str(text or "").strip())

    @property
    def model(self) -> str:
        """The NPC's own model override ("" means the server default)."""
        return self.state.get(MODEL)

    def set_model(self, model: str) -> None:
        self.state.set(MODEL, str(model or "").strip())

    @property
    def user_system_prompt(self) -> str:
        """The operator's prompt. No tool can write it; see :meth:`set_user_system_prompt`."""
        return self.state.get(USER_SYSTEM_PROMPT)

    def set_user_system_prompt(self, text: str) -> None:
        """Operator-only: set the operator's prompt (admin commands and the web page)."""
        self.state.set(USER_SYSTEM_PROMPT, str(text or "").strip())

    @property
    def assistant_system_prompt(self) -> str:
        """The assistant's own, self-managed guidelines."""
        return self.state.get(ASSISTANT_SYSTEM_PROMPT)

    def set_assistant_system_prompt(
        self, text: str, reasoning: str = "", by: str = "assistant"
    ) -> None:
        """Replace the assistant's own guidelines, keeping a bounded revision log (2 writes)."""

        old = self.assistant_system_prompt
        self.state.set(ASSISTANT_SYSTEM_PROMPT, str(text or "").strip())

        def log(revisions):
            revisions.append({"time": iso_utc(), "by": by, "reasoning": reasoning, "old": old})
            return revisions[-PROMPT_REVISIONS_KEPT:]

        self.state.update(PROMPT_REVISIONS, log)

    # -- the script ----------------------------------------------------------------------------
    @property
    def script(self):
        """The NPC's AssistantScript, or None if it has none (see :meth:`ensure_script`)."""
        cached = self._script
        if is_live_instance(cached) and cached.db_obj_id == self.obj.id:
            return cached  # a tick reads it several times: no query each time
        self._script = None
        for script in self.obj.scripts.get(SCRIPT_KEY):
            self._script = script
            return script
        return None

    def ensure_script(self):
        """Return the NPC's AssistantScript, creating and starting it if missing."""
        script = self.script
        if script is None:
            script = self.obj.scripts.add(SCRIPT_TYPECLASS, key=SCRIPT_KEY, autostart=True)
            if isinstance(script, list):
                script = script[0] if script else self.script
        return script

    def restore_script(self, why: str = "") -> Any:
        """Recreate a missing AssistantScript (logged); the Script, or None if it exists."""
        if self.script is not None:
            return None
        script = self.ensure_script()
        logger.log_warn(
            f"{log_prefix(self.obj)}: its AssistantScript was missing and "
            f"has been recreated{' (' + why + ')' if why else ''}; goals and execution settings "
            "held on the old Script start empty"
        )
        return script

    @staticmethod
    def script_state(script) -> AttributeState:
        """The declared state held on ``script`` (goals, execution config, counters, pause)."""
        return AttributeState(script, SCRIPT_STATE, npc=script.obj, prefix=SCRIPT_PREFIX)

    @property
    def goals(self) -> list[dict]:
        """Plain copy of the goals (held on the script)."""
        script = self.script
        return self.script_state(script).get(CURRENT_GOALS) if script is not None else []

    def update_goals(self, change: Callable[[list], Any]) -> Any:
        """Change the goals with ``change`` (plain list in, new list or (list, result) out)."""
        return self.script_state(self.ensure_script()).update(CURRENT_GOALS, change)

    @property
    def execution_config(self) -> dict:
        """The execution pattern's static limits (held on the script), defaults filled in."""
        config = dict(DEFAULT_EXECUTION_CONFIG)
        script = self.script
        if script is not None:
            config.update(self.script_state(script).get(EXECUTION_CONFIG))
        return config

    def set_execution_config(self, **values) -> dict:
        """Validate and store static-limit values; raises ValueError naming a bad value."""
        config = self.execution_config
        for key, value in values.items():
            if key not in DEFAULT_EXECUTION_CONFIG:
                raise ValueError(
                    f"Unknown execution setting '{key}'. Known: "
                    + ", ".join(DEFAULT_EXECUTION_CONFIG)
                )
            if key in ("max_iterations_per_tick", "sub_agent_budget"):
                try:
                    value = int(value)
                except (TypeError, ValueError):
                    raise ValueError(f"{key} must be a whole number, not {value!r}.") from None
                low, high = (1, 10) if key == "max_iterations_per_tick" else (0, 10)
                if not low <= value <= high:
                    raise ValueError(f"{key} must be between {low} and {high}.")
            else:
                if isinstance(value, str):
                    lowered = value.strip().lower()
                    if lowered not in ("true", "false", "on", "off", "yes", "no", "1", "0"):
                        raise ValueError(f"{key} must be on or off, not {value!r}.")
                    value = lowered in ("true", "on", "yes", "1")
                value = bool(value)
            config[key] = value
        self.script_state(self.ensure_script()).set(EXECUTION_CONFIG, config)
        return config

    def set_allowed_tool_categories(self, categories: list[str] | None) -> dict:
        """Set the static ``allowed_tool_categories`` (None: every category); one write.

        It can only narrow what the contexts allow (see :mod:`evennia_ai.prompt.execution_pattern`).

        Raises:
            ValueError: naming an unknown category.
        """

        config = self.execution_config
        if categories is None:
            config.pop("allowed_tool_categories", None)
        else:
            unknown = [c for c in categories if c not in ALL_TOOL_CATEGORIES]
            if unknown:
                raise ValueError(
                    f"Unknown tool categories {unknown}. Known: " + ", ".join(ALL_TOOL_CATEGORIES)
                )
            config["allowed_tool_categories"] = [c for c in ALL_TOOL_CATEGORIES if c in categories]
        self.script_state(self.ensure_script()).set(EXECUTION_CONFIG, config)
        return config

    # -- control -------------------------------------------------------------------------------
    @property
    def paused(self) -> bool:
        script = self.script
        return bool(script is not None and self.script_state(script).get(PAUSED))

    def pause(self) -> None:
        """Stop ticking (queued events stay queued)."""
        self.script_state(self.ensure_script()).set(PAUSED, True)

    def resume(self) -> None:
        """Resume ticking, and answer anything queued meanwhile."""
        script = self.ensure_script()
        self.script_state(script).set(PAUSED, False)
        script.trigger_tick()

    def start(self) -> None:
        """Enable the assistant and make sure its script runs."""
        self.set_enabled(True)
        script = self.ensure_script()
        if not script.is_active:
            script.start()

    def stop(self) -> None:
        """Disable the assistant and stop its script (state is kept)."""
        self.set_enabled(False)
        script = self.script
        if script is not None and script.is_active:
            script.stop()

    # -- perception ----------------------------------------------------------------------------
    def perceive(self, event, immediate: bool | None = None) -> bool:
        """Queue an event (one write); speech starts a tick at once.

        Args:
            event: An :class:`~evennia_ai.memory.events.Event`.
            immediate: Start a tick now rather than at the next interval. None: for
                communication events.

        Returns:
            Whether the event was queued: False when it was dropped as its speaker's flood
            (what perception remembers of a whisper depends on it). The tick it starts runs
            in a later reactor turn, after the caller returns.
        """

        if answering.flooded(self.obj, event):
            return False
        max_size = conf.get_int("EVENNIA_AI_EVENT_QUEUE_SIZE")
        dropped = self.update(EVENT_QUEUE, lambda queue: ev.push(queue, event, max_size))
        if dropped is not None:  # the queue was full: no addressed line goes silently
            answering.tell_dropped(self.obj, dropped)
        if immediate is None:
            immediate = getattr(event, "event_class", "") == "communication"
        if not self.enabled:
            return True
        script = self.script or self.restore_script("on perception")
        if immediate:
            script.trigger_tick()
        return True

    def notify_system(self, text: str) -> None:
        """Queue a system event (operator decisions, tool outcomes that arrive later)."""

        self.perceive(Event.create(kind="system", text=text, source=None, source_name="system"))

    def remember_ambient(self, text: str, source=None) -> None:
        """Add a line the NPC saw in its room to the ambient context buffer (one write, after
        the lines it heard there before: :meth:`take_heard`)."""
        entry = context_buffer.entry(text, source=source)
        if entry is None:
            return
        if attribute_writes.on_reactor_thread():
            self.take_heard()  # the lines heard before it come first
        heard.add_to_buffer(self.state, [entry])

    def hear(self, text: str, source=None, line=None) -> None:
        """Keep a line spoken in the NPC's room that did not wake it (the room's floor gave it
        to another NPC: :mod:`evennia_ai.engine.floor`).

        No event, no queue write, no tick and no embedding: the line goes to the room's log of
        heard lines, once for all the NPCs that hear it (:mod:`evennia_ai.npc.heard`), and
        into this NPC's context buffer when the buffer is next read (:attr:`context_buffer`:
        its next tick). Its next conversation tick writes it to its history; should it be
        pushed out of the buffer first, every heard line not in the history yet is written
        there then (:func:`evennia_ai.npc.heard.add_to_buffer`).

        Args:
            text: The line as the room showed it.
            source: Dbref of the speaker, if known.
            line: What the listeners of this one line share (the floor's decision), so the
                room keeps one entry for them all; None: an entry of its own.
        """

        room = self.obj.location
        if room is not None:
            heard.keep(room, self.obj.id, text, source, line)
        elif (entry := context_buffer.entry(text, source=source, heard=True)) is not None:
            heard.add_to_buffer(self.state, [entry])

    @property
    def context_buffer(self) -> list[dict]:
        """Recent ambient lines seen in the room (a plain copy), with the lines heard in the
        room taken into it first (:meth:`take_heard`)."""
        self.take_heard()
        return self.state.get(CONTEXT_BUFFER)

    def take_heard(self, room=None) -> int:
        """Take the lines this NPC heard in ``room`` (its location when None) and has not
        taken yet into its context buffer (:mod:`evennia_ai.npc.heard`): one write of each.
        Only on the reactor thread (the database's); elsewhere nothing is taken.

        Returns:
            How many lines were taken.
        """
        if not attribute_writes.on_reactor_thread():
            return 0

        def add(lines: list[dict]) -> None:  # new dicts, made for this: not copied again
            heard.add_to_buffer(self.state, lines, owned=True)

        if room is not None:
            return heard.take(self.obj, room, add)
        taken = 0
        for left in heard.heard_in(self.obj):  # moved without the hooks: those lines first
            taken += heard.take(self.obj, left, add)
        return taken + heard.take(self.obj, self.obj.location, add)

    # -- daily spending ------------------------------------------------------------------------
    def spending_status(self, metrics: dict | None = None) -> spending.SpendingStatus:
        """Today's tokens and cost against the daily budgets (this NPC's and the server's)."""
        return spending.check(self.obj, metrics)

    def record_spending(self, tokens: int, cost: float, day: str | None = None) -> None:
        """Add a tick's tokens and cost to the server's total of the day."""
        spending.record(tokens, cost, day)

    # -- status --------------------------------------------------------------------------------
    def status(self) -> dict:
        """A summary for admin commands and the dashboard, safe to show a Builder.

        Besides the figures: ``held`` (why the NPC calls no model, if it does not: see
        :meth:`held`), ``quarantined`` (values set aside, those of Developer-only keys
        redacted: :meth:`quarantined` with ``reveal=True`` for Developers) and
        ``unreadable_settings`` (budget and security settings counted as their strictest value,
        by name, with why).
        """

        metrics = self.state.get(METRICS)
        over = self.spending_status(metrics)
        queue = self.state.get(EVENT_QUEUE)
        script = self.script
        sleep = self.state.get(SLEEP)
        enabled, paused, running = self.enabled, self.paused, bool(script and script.is_active)
        if not enabled or not running:
            state = "stopped"
        else:
            state = "paused" if paused else ("asleep" if sleep.get("asleep") else "running")
        model = resolve_model(self.model)
        window, window_source = tokens.window_and_source(model)
        warnings = []
        if window_source == "guess":
            warnings.append(
                f"context window of {model} is a guess ({tokens.DEFAULT_CONTEXT_WINDOW:,} "
                f"tokens): set EVENNIA_AI_CONTEXT_WINDOWS = {{{model!r}: <tokens>}}"
            )
        unbounded = spending.unbounded_spend_warning(model, over)
        if unbounded:
            warnings.append(unbounded)
        silent = self.not_answering(over)
        return {
            "key": self.obj.key,
            "dbref": self.obj.dbref,
            "state": state,  # one word: stopped, paused, asleep or running
            # why it does not answer with its model now, if it does not (outage, held, budget)
            "not_answering": [asdict(reason) for reason in silent],
            # what a badge or a table shows: the state, or while running, the first reason
            "state_label": silent[0].label if silent and state == "running" else state,
            "state_class": "not-answering" if silent and state == "running" else state,
            "enabled": enabled,
            "paused": paused,
            "running": running,
            "model": model,
            "window": window,
            "window_source": window_source,
            "warnings": warnings,
            "queued_events": len(pending_events(queue)),
            "in_flight_events": len(queue.get("in_flight", [])),
            "dropped_events": queue.get("dropped", 0),
            "failed_events": queue.get("failed", 0),
            "ticks": metrics.get("ticks", 0),
            "errors": metrics.get("errors", 0),
            "last_error": metrics.get("last_error"),
            "last_error_time": metrics.get("last_error_time"),
            "last_error_tick": metrics.get("last_error_tick"),
            # past once a later tick ended without an error
            "last_error_current": bool(metrics.get("last_error"))
            and metrics.get("consecutive_errors", 0) > 0,
            "context_overflows": (metrics.get("stop_reasons") or {}).get("context_overflow", 0),
            "prompt_tokens": metrics.get("prompt_tokens", 0),
            "completion_tokens": metrics.get("completion_tokens", 0),
            "cost": metrics.get("cost", 0.0),
            "asleep": bool(sleep.get("asleep")),
            "sleep": sleep,
            "goals_active": sum(1 for g in self.goals if g.get("status") == "active"),
            "budget_state": over.describe(),
            "budget": over.to_dict(),
            "held": list(over.held),
            # values of Developer-only keys redacted: quarantined(reveal=True) for Developers
            "quarantined": self.quarantined(check=False),
            "unreadable_settings": conf.unreadable_settings(),
        }

    def not_answering(self, over: spending.SpendingStatus | None = None) -> list[NotAnswering]:
        """Why this NPC does not answer with its model now, in words; empty when it does
        (:func:`evennia_ai.npc.answering.not_answering`: an outage of its model's endpoint,
        its operator's word set aside, past a budget in ``silence`` or ``message`` mode).

        Args:
            over: Its spending status, when the caller has it (read otherwise).
        """
        return answering.not_answering(self, over if over is not None else self.spending_status())

    # -- values kept aside -----------------------------------------------------------------------
    def quarantined(self, check: bool = True, reveal: bool = False) -> dict[str, dict]:
        """Stored values that failed their declared shape, set aside, by key (NPC and Script).

        Args:
            check: Read every stored key first (see ``AttributeState.quarantined``).
            reveal: Include the values of Developer-only keys (the operator prompt, tool lists
                and rules, the budget, the execution config). Without it they read
                ``"[redacted: Developers only]"`` with ``redacted: True``; pass it only for a
                caller who passes :data:`evennia_ai.access.EDIT`.

        Returns:
            ``{key: {"value", "problem", "time", "in_force", ["developer_only", "redacted"]}}``;
            the Script's keys are named ``script.<key>``.
        """
        found = self.state.quarantined(check, reveal)
        script = self.script
        if script is not None:
            kept = self.script_state(script).quarantined(check, reveal)
            found.update({SCRIPT_PREFIX + k: v for k, v in kept.items()})
        return found

    @staticmethod
    def developer_only(key: str) -> bool:
        """Whether ``key`` (``script.<key>`` for the Script's) is Developer-only state: only
        Developers may see a value of it set aside, restore it or discard it."""
        if key.startswith(SCRIPT_PREFIX):
            declared = SCRIPT_STATE.get(key[len(SCRIPT_PREFIX) :])
        else:
            declared = CHARACTER_STATE.get(key)
        return bool(declared and declared.developer_only)

    def held(self) -> list[str]:
        """Why this NPC may call no model now: the operator's word cannot be read.

        A set-aside value of a key that holds (the operator prompt) with nothing stored
        since, an ``EVENNIA_AI_OPERATOR_OVERRIDE`` file that cannot be read, or an unreadable
        setting that holds (``EVENNIA_AI_SECRETS``). Empty when nothing holds it. The daily
        budget check counts a held NPC as over budget (:func:`evennia_ai.npc.spending.check`).
        """
        reasons = []
        for key, declared in CHARACTER_STATE.items():
            if not declared.holds:
                continue
            self.state.get(key)  # a stored value not read yet is checked (and set aside) now
            if self.state.in_fallback(key):
                reasons.append(f"its stored {key} cannot be read and is set aside")
        try:
            read_operator_override()
        except OperatorSourceError:
            reasons.append("the file of EVENNIA_AI_OPERATOR_OVERRIDE cannot be read")
        reasons.extend(conf.holding_problems())
        return reasons

    def _state_for(self, key: str) -> tuple[AttributeState, str]:
        if key.startswith(SCRIPT_PREFIX):
            return self.script_state(self.ensure_script()), key[len(SCRIPT_PREFIX) :]
        return self.state, key

    def restore(self, key: str, value: Any = None) -> Any:
        """Put a kept-aside value back (``script.<key>`` for the Script's); see AttributeState."""
        state, name = self._state_for(key)
        return state.restore(name, value)

    def discard(self, key: str) -> bool:
        """Forget a kept-aside value (``script.<key>`` for the Script's)."""
        state, name = self._state_for(key)
        return state.discard(name)

    def log_error(self, message: str) -> None:
        logger.log_err(f"{log_prefix(self.obj)}: {message}")


def describe_last_error(status: dict) -> str:
    """The last error of an NPC's :meth:`AIHandler.status`, for people ("" when it never failed).

    Says at which tick and when it happened, and that it is past once later ticks succeeded:
    ``tick 12, 2026-01-01 10:00:00 UTC: model call failed: ... (past: later ticks succeeded)``.
    """
    error = status.get("last_error")
    if not error:
        return ""
    tick, when = status.get("last_error_tick"), status.get("last_error_time")
    when = timestamp(when) if when else ""
    head = ", ".join(
        part for part in (f"tick {tick}" if tick is not None else "", when or "") if part
    )
    text = f"{head}: {error}" if head else str(error)
    return text if status.get("last_error_current") else f"{text} (past: later ticks succeeded)"

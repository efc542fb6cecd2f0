"""Writing down what a tick did: the queue, the history, what worked, the trace, the metrics.

After its model calls a tick writes its results in one piece of reactor work, one write per
piece of state (:meth:`Bookkeeper.write`), in this order:

1. **The queue**: the answered events leave it; after a failed model call they go back (each
   counts an attempt; the log and the speakers left waiting are told), after a call that got no
   answer at all (an outage kind, :mod:`evennia_ai.engine.outages`) they are held back for the
   model's return without counting one, after a cancelled tick they go back without counting
   one.
2. **The history**: the tick's messages, for the conversation contexts only
   (``CONVERSATION_CONTEXTS``).
3. **What worked and the trace**: a tool sequence that answered an event (procedures), when
   the speakers were last seen (entities), and the trace, bounded and with refused secrets
   withheld.
4. **The metrics**: the tick's counters and usage (:mod:`evennia_ai.engine.accounting`).
5. **Follow-ups**: the next sleep phase, the reflection's state, a compaction scheduled when
   the history passed its thresholds.

Each step first checks that the NPC still exists: a result for a deleted NPC is dropped.
Not to be confused with :mod:`evennia_ai.engine.recording`, which records ticks for replay.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable, Hashable

from evennia.utils import logger

from evennia_ai import conf
from evennia_ai.engine import audience, outages
from evennia_ai.engine.accounting import TickAccounts
from evennia_ai.engine.react import LoopOutcome
from evennia_ai.engine.redaction import npc_secrets, withhold_refused_secrets
from evennia_ai.engine.trace import StopReason, TickTrace, bounded_trace
from evennia_ai.engine.upkeep import Upkeep, advance_sleep
from evennia_ai.llm.models import resolve_model
from evennia_ai.memory import context_buffer, entities
from evennia_ai.memory import events as ev
from evennia_ai.memory import history as hist
from evennia_ai.memory import procedures
from evennia_ai.memory.events import main_event
from evennia_ai.memory.history import render_text
from evennia_ai.npc_state import (
    CONTEXT_BUFFER,
    ENTITIES,
    EVENT_QUEUE,
    HISTORY,
    PROCEDURES,
    REFLECTION,
    NPCState,
    npc_state,
)
from evennia_ai.prompt.contexts import CONVERSATION_CONTEXTS
from evennia_ai.prompt.tasks import reflection_done
from evennia_ai.utils import iso_utc, log_prefix, truncate
from evennia_ai.wording import CUT_MARKER, HEARD_IN_ROOM_HEADING
from evennia_ai.workspace.sleep import SLEEP_PHASES


def add_to_history(state: NPCState, batch: Hashable, messages: list[dict]) -> None:
    """Add ``messages`` to the NPC's history as one batch, trimmed to the history's limits
    (``EVENNIA_AI_HISTORY_MAX_MESSAGES``, ``_MAX_CHARS``, ``_MESSAGE_CHARS``): one write.

    Args:
        state: The NPC's state (``npc_state(npc)``).
        batch: The batch's id (the tick's number).
        messages: Chat messages, the first a user message.
    """
    max_messages = conf.get_int("EVENNIA_AI_HISTORY_MAX_MESSAGES")
    max_chars = conf.get_int("EVENNIA_AI_HISTORY_MAX_CHARS")
    message_chars = conf.get_int("EVENNIA_AI_HISTORY_MESSAGE_CHARS")
    state.update(
        HISTORY,
        lambda h: hist.append_tick(
            h, batch, messages, max_messages, max_chars=max_chars, message_chars=message_chars
        ),
    )


def heard_texts(lines: list[dict], limit: int) -> list[str]:
    """Heard lines (context buffer entries) as history message texts of at most ``limit``
    characters each (0: no limit), whole lines in each, in order: the history cuts every
    message to ``EVENNIA_AI_HISTORY_MESSAGE_CHARS``, which must never cut heard lines out
    (only a single line longer than the limit is cut, after a whole word).

    Remembered by text: every NPC that heard the same lines (a room's listeners taking them
    together) gets the same texts, worked out once."""
    texts = tuple(line.get("text") if isinstance(line, dict) else None for line in lines)
    try:
        return list(_heard_texts(texts, limit))
    except TypeError:  # a text that is not hashable: not remembered
        return list(_heard_texts.__wrapped__(texts, limit))


@lru_cache(maxsize=64)
def _heard_texts(texts: tuple, limit: int) -> tuple[str, ...]:
    """:func:`heard_texts` of the lines' texts."""
    found: list[str] = []
    chunk: list[dict] = []
    size = len(HEARD_IN_ROOM_HEADING)
    for text in texts:
        line = {"text": text}
        cleaned = context_buffer.clean_line(text)
        extra = len(context_buffer.LINE_JOINER) + len(cleaned) if cleaned else 0
        if chunk and limit and size + extra > limit:
            found.append(context_buffer.heard_text(chunk))
            chunk, size = [], len(HEARD_IN_ROOM_HEADING)
        chunk.append(line)
        size += extra
    if chunk:
        found.append(context_buffer.heard_text(chunk))
    return tuple(_within(text, limit) for text in found if text)


def _within(text: str, limit: int) -> str:
    """``text`` cut so that, with the cut's marker, it keeps to ``limit`` (0: no limit)."""
    if not limit or len(text) <= limit:
        return text
    return truncate(text, max(1, limit - len(CUT_MARKER.format(count=f"{len(text):,}"))))


def heard_messages(lines: list[dict]) -> list[dict]:
    """Heard lines (context buffer entries, at least one) as history user messages of a batch
    of their own, ``heard-<time of the first>``, each within ``EVENNIA_AI_HISTORY_MESSAGE_CHARS``:
    for lines about to leave the buffer before a tick wrote them
    (:meth:`evennia_ai.npc.handler.AIHandler.hear`)."""
    batch, now = f"heard-{lines[0].get('ts')}", iso_utc(precise=True)
    limit = conf.get_int("EVENNIA_AI_HISTORY_MESSAGE_CHARS")
    return [
        {"role": "user", "content": text, "batch": batch, "ts": now}
        for text in heard_texts(lines, limit)
    ]


def history_overflow(history: list[dict]) -> int:
    """How many of the oldest messages of ``history`` (its newest batch just added) to drop so
    it keeps to ``EVENNIA_AI_HISTORY_MAX_MESSAGES`` and ``_MAX_CHARS``: whole batches, oldest
    first, never the newest, as :func:`evennia_ai.memory.history.append_tick` trims. For an
    append that checks only the new message (``AttributeState.append(..., overflow=...)``)."""
    max_messages = conf.get_int("EVENNIA_AI_HISTORY_MAX_MESSAGES")
    max_chars = conf.get_int("EVENNIA_AI_HISTORY_MAX_CHARS")
    total = len(history)
    size = _history_chars(history) if max_chars else 0
    if total <= max_messages and size <= max_chars:  # within both: nothing to split in batches
        return 0
    drop = 0
    for _, run in hist.batches(history)[:-1]:
        if total <= max_messages and (not max_chars or size <= max_chars):
            break
        drop += len(run)
        total -= len(run)
        size -= sum(hist.stored_chars(m) for m in run) if max_chars else 0
    return drop


def _history_chars(history: list[dict]) -> int:
    """:func:`evennia_ai.memory.history.stored_chars` summed over ``history``, with a message
    of text content and no tool calls (nearly all of them) counted in place."""
    size = 0
    for message in history:
        content = message.get("content")
        if type(content) is str and not message.get("tool_calls"):
            size += len(content)
        else:
            size += hist.stored_chars(message)
    return size


def _opening(heard: list[dict], event_text: str) -> list[dict]:
    """The user message(s) opening a tick's history batch: the heard lines before the event,
    in one message when they fit ``EVENNIA_AI_HISTORY_MESSAGE_CHARS`` together, else in their
    own messages first, so the cut every message gets never takes the event's text."""
    if not heard:
        return [{"role": "user", "content": event_text}]
    limit = conf.get_int("EVENNIA_AI_HISTORY_MESSAGE_CHARS")
    joined = f"{context_buffer.heard_text(heard)}\n\n{event_text}"
    if not limit or len(joined) <= limit:
        return [{"role": "user", "content": joined}]
    texts = heard_texts(heard, limit)
    return [{"role": "user", "content": text} for text in texts] + [
        {"role": "user", "content": event_text}
    ]


class Bookkeeper:
    """Writes the results of one tick of ``npc`` (``state``: the tick's TickState).

    Args:
        npc: The assistant.
        accounts: The tick's accounts (the metrics step writes through them).
        upkeep: The tick's upkeep (the follow-up step checks the history's pressure).
    """

    def __init__(self, npc, accounts: TickAccounts, upkeep: Upkeep) -> None:
        self.npc = npc
        self.npc_state: NPCState = npc_state(npc)
        self.accounts = accounts
        self.upkeep = upkeep

    def write(self, state, outcome: LoopOutcome, trace: TickTrace) -> None:
        """Write what the tick did: queue, history, procedures, trace, metrics, follow-ups."""
        for step in self.steps(state, outcome, trace):
            if not getattr(self.npc, "pk", None):
                logger.log_info(f"{log_prefix(self.npc)}: tick result dropped: the NPC was deleted")
                return
            step()

    def steps(self, state, outcome: LoopOutcome, trace: TickTrace) -> list[Callable[[], None]]:
        """The writes of :meth:`write`, in order, as steps."""
        return [
            lambda: self.write_queue(state, outcome, trace),
            lambda: self.write_history(state, outcome, trace),
            lambda: self.write_trace(state, outcome, trace),
            lambda: self.accounts.record_tick(trace),
            lambda: self.follow_up(state, outcome, trace),
        ]

    def write_queue(self, state, outcome: LoopOutcome, trace: TickTrace) -> None:
        """Take the answered events off the queue, or put them back after a failure."""
        ids = [e.id for e in state.batch]
        provider_failed = (
            outcome.stop_reason == StopReason.ERROR
            and (any(it.error for it in trace.iterations) or not trace.iterations)
        ) or outcome.stop_reason in (
            StopReason.CONTEXT_OVERFLOW,  # answered by a later tick
            StopReason.CONTRACT_VIOLATION,  # answered once staff restore what it lacked
        )
        if provider_failed and outcome.stop_reason == StopReason.ERROR:
            self._model_failed(state, trace)
        if ids:
            if outcome.stop_reason == StopReason.CANCELLED:
                self.npc_state.update(
                    EVENT_QUEUE, lambda q: ev.release(q, ids, count_attempt=False)
                )
            elif provider_failed and outages.outage_failure(self.accounts.usage.records):
                self.npc_state.update(EVENT_QUEUE, lambda q: ev.hold_back(q, ids))
            elif provider_failed:
                self.npc_state.update(EVENT_QUEUE, lambda q: ev.release(q, ids))
            else:
                self.npc_state.update(EVENT_QUEUE, lambda q: ev.ack(q, ids))

    def write_history(self, state, outcome: LoopOutcome, trace: TickTrace) -> None:
        """Add the tick's messages to the history (one write); the NPC's upkeep (reflection,
        sleep, compaction, decomposition) stays out of it (see ``CONVERSATION_CONTEXTS``).

        The lines the NPC heard in its room without being woken, seen by this tick (in its
        snapshot) and not in the history yet, open the tick's event message
        (:func:`~evennia_ai.memory.context_buffer.heard_text`), and are marked written in the
        context buffer, so later requests show them once, in the history. Lines heard while
        the tick ran go with the next tick.
        """
        if trace.context_type not in CONVERSATION_CONTEXTS:
            return
        if outcome.new_messages and outcome.stop_reason != StopReason.CANCELLED:
            event_text = state.batch_text or f"[{trace.context_type}]"
            heard = context_buffer.unfolded(
                self.npc_state.context_buffer, within=state.snapshot.context_buffer
            )
            tick_messages = _opening(heard, event_text) + outcome.new_messages
            add_to_history(self.npc_state, trace.tick_id, tick_messages)
            if heard:
                self.npc_state.update(
                    CONTEXT_BUFFER, lambda buffer: context_buffer.folded(buffer, heard)
                )

    def write_trace(self, state, outcome: LoopOutcome, trace: TickTrace) -> None:
        """What worked (procedures, people seen) and the trace."""
        self._learn(state, outcome, trace)
        stored = withhold_refused_secrets(trace.to_dict(), npc_secrets(self.npc))
        self.npc_state.record_trace(
            bounded_trace(stored, conf.get_int("EVENNIA_AI_TRACE_MAX_CHARS"))
        )

    def follow_up(self, state, outcome: LoopOutcome, trace: TickTrace) -> None:
        """What the next ticks do: sleep phases, reflection follow-ups, compaction."""
        self._after_context(state, trace.context_type, outcome)
        self.upkeep.check_history_pressure(state)

    def _learn(self, state, outcome: LoopOutcome, trace: TickTrace) -> None:
        """Remember a tool sequence that worked, and when the speakers were last seen."""

        if not state.batch:
            return
        event = main_event(state.batch)
        if event is None:  # a batch always has a main event
            return
        if trace.context_type == "tick_event" and outcome.tool_names and not outcome.failures:
            text = state.batch_text
            self.npc_state.update(
                PROCEDURES,
                lambda p: procedures.record(
                    p, event.event_class, text, outcome.tool_names, trace.started
                ),
            )
        speakers = {(e.source, e.source_name) for e in state.batch if e.source}
        if speakers:

            def seen(profiles):
                for dbref, name in speakers:
                    profiles = entities.touch(profiles, dbref, name or dbref)
                return profiles

            self.npc_state.update(ENTITIES, seen)

    def _after_context(self, state, context_type: str, outcome: LoopOutcome) -> None:
        """The state a context type leaves for the next ticks (sleep phase, reflection)."""
        if context_type in SLEEP_PHASES:
            advance_sleep(self.npc_state, context_type)
        elif context_type == "reflection":
            used_journal = any(
                n in ("add_journal_entry", "review_journal") for n in outcome.tool_names
            )
            tick = state.tick_id  # the Script's tick counter, advanced for this tick
            metrics, goals = self.npc_state.metrics, self.npc_state.goals
            # what reflection_cont continues from: the journal tools' results, as a transcript
            results = render_text(
                [m for m in outcome.new_messages if m.get("role") == "tool"],
                assistant_name=self.npc.key,
                max_chars=1500,
            )

            def done(reflection):
                reflection = reflection_done(reflection, metrics, goals, tick)
                reflection["continue"] = bool(used_journal)
                reflection["requested"] = False
                reflection["last_result"] = truncate(results, 4000)
                return reflection

            self.npc_state.update(REFLECTION, done)
        elif context_type == "reflection_cont":
            self.npc_state.update(REFLECTION, lambda s: {**s, "continue": False})

    def _model_failed(self, state, trace: TickTrace) -> None:
        """The model could not answer: say so in the log, and to the players left waiting.

        Each speaker is told once per line (on its first failed attempt or wait; the line is
        tried again on the next ticks).
        """
        model = resolve_model(state.model)
        reason = trace.error or "no reply"
        reason = reason.replace(f"failed: {model}: ", "failed: ", 1)  # the model is named once
        logger.log_err(
            f"{log_prefix(self.npc)}: {state.context_type} tick "
            f"{state.tick_id} got no answer from model {model}: {reason}"
        )
        first_try = [e for e in state.batch if e.first_try]
        audience.tell_speakers(
            self.npc,
            audience.waiting_speakers(self.npc, first_try),
            "EVENNIA_AI_UNAVAILABLE_MESSAGE",
        )

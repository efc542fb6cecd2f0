"""Choosing the work of a tick: which context type runs, with which events, and what follows.

:class:`Agenda` looks at the NPC's state once per tick and returns a :class:`TickDecision`.
What it chooses, in order of precedence:

1. **Sleep.** While asleep the assistant runs its sleep phases once each (``sleep_consolidate``,
   then ``pre_compaction``), skipping a phase with nothing to do, and then rests until its
   window ends, or until it is addressed when ``EVENNIA_AI_WAKE_WHEN_ADDRESSED``. A scheduled
   window (``EVENNIA_AI_SLEEP_SCHEDULE``), the ``go_to_sleep`` tool, or a sleep slot of its
   routine (:mod:`evennia_ai.engine.routines`: in the slot's room, not woken in that slot)
   puts it to sleep; a routine sleep ends with its slot. Consolidation runs at most
   ``EVENNIA_AI_CONSOLIDATIONS_PER_DAY`` times a real (UTC) day, however often it sleeps.
2. **Compaction** that is pending goes first when no events wait; an *emergency* compaction
   goes before the events, which stay queued for a tick that follows at once
   (``TickDecision.run_again``).
3. **Events.** The highest-priority queued event, together with the speech that arrived with it
   (``tick_event``); the batch is marked in flight in the queue (one write). Players go first
   across the NPCs of a room: a batch of other AI NPCs' lines only waits, unwritten, while an
   AI NPC of the room was woken for a player's line and has not answered it yet
   (:func:`~evennia_ai.engine.floor.player_waiting`; the tick runner tells the floor when a
   tick ends); it is taken at a later interval tick.
4. **Routine.** The NPC's routine (:func:`~evennia_ai.engine.routines.work`) may walk it one
   exit towards its slot's room: an idle decision carrying the work (``TickDecision.world``),
   which the tick does without a model call. A routine that stays, or waits for a
   conversation to end, lets the choice go on.
5. **Reflection** when asked for, every ``EVENNIA_AI_REFLECTION_INTERVAL`` ticks, or earlier
   when the journal's summed importance since the last reflection reaches
   ``EVENNIA_AI_REFLECTION_IMPORTANCE_THRESHOLD``; a ``reflection_cont`` when the reflection
   asked to continue.
6. **Autonomy.** With active goals and autonomy on, a ``tick_autonomous`` at most every
   ``EVENNIA_AI_AUTONOMOUS_MIN_INTERVAL`` seconds (``TickDecision.autonomous_at`` is when
   it was chosen, which the Script keeps for the next choice).

Lines held back while the NPC's model could not be reached (an outage,
:mod:`evennia_ai.engine.outages`) are answered by the event ticks that follow, unless they grew
older than ``EVENNIA_AI_OUTAGE_REPLAY_SECONDS`` or their speaker left or disconnected: those
are given up first, each logged and noted in the tick's trace (``TickDecision.notes``); their
speakers were told the failure line when their first answer failed.

Idle work (reflection by count or importance, autonomy) waits while nobody is within earshot
(``EVENNIA_AI_IDLE_NEEDS_AUDIENCE``, :mod:`evennia_ai.engine.audience`) unless an active goal
needs no audience.

The agenda writes only the NPC's own state (the queue, its sleep; its routine's status, in
process memory, through :mod:`~evennia_ai.engine.routines`); it never writes the Script:
the Script acts on the decision (:class:`~evennia_ai.scripts.AssistantScript`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Callable

from evennia.utils import logger

from evennia_ai import conf
from evennia_ai.engine import audience, floor, routines
from evennia_ai.engine.routines import RoutineWork
from evennia_ai.engine.upkeep import (
    advance_sleep,
    compaction_wanted,
    consolidation_allowed,
    consolidation_material,
)
from evennia_ai.memory import events as ev
from evennia_ai.memory.events import Event
from evennia_ai.npc_state import EVENT_QUEUE, SLEEP, NPCState, npc_state
from evennia_ai.utils import is_assistant, log_prefix, parse_iso, truncate, utcnow
from evennia_ai.workspace.goals import works_unwatched
from evennia_ai.workspace.journal import importance_since
from evennia_ai.workspace.sleep import SLEEP_PHASES, go_to_sleep, in_sleep_window, wake_up


@dataclass(frozen=True)
class TickDecision:
    """What a tick is to do, as the agenda chose it.

    Attributes:
        context_type: The context type to run (``tick_event``, ``reflection``, a sleep phase,
            ...); None when there is nothing to do.
        batch: The events the tick answers (empty for other context types).
        run_again: Run another tick at once when this one ends, not at the next interval
            (an emergency compaction went before events that are still queued).
        autonomous_at: When an autonomous tick was chosen (``time.time()``), else None: the
            next one waits ``EVENNIA_AI_AUTONOMOUS_MIN_INTERVAL`` from then.
        notes: What the agenda did that the tick's trace should say (lines held back during
            an outage and given up).
        world: Work of the NPC's routine the tick does with no model call (an idle decision:
            one exit of a walk), else None.
    """

    context_type: str | None
    batch: tuple[Event, ...] = ()
    run_again: bool = False
    autonomous_at: float | None = None
    notes: tuple[str, ...] = ()
    world: RoutineWork | None = None

    @property
    def idle(self) -> bool:
        """Whether there is nothing to do (no tick runs)."""
        return self.context_type is None


class Agenda:
    """Chooses the next tick of ``npc``.

    Args:
        npc: The assistant (its state is read through :func:`~evennia_ai.npc_state.npc_state`).
        tick_count: The Script's tick counter before this tick.
        last_autonomous: When the Script last ran an autonomous tick (``time.time()``), if ever.
    """

    def __init__(self, npc, tick_count: int, last_autonomous: float | None = None) -> None:
        self.npc = npc
        self.npc_state: NPCState = npc_state(npc)
        self.tick_count = tick_count
        self.last_autonomous = last_autonomous

    def choose(self) -> TickDecision:
        """Pick the context type of this tick and the events it answers (lines held back
        during an outage that can no longer be answered are given up first)."""
        stored = self.npc_state.event_queue
        notes: tuple[str, ...] = ()
        if ev.has_deferred(stored):
            stored, notes = self.give_up_stale(stored)
        decision = self.choose_from(stored)
        return replace(decision, notes=notes) if notes else decision

    def give_up_stale(self, stored: dict) -> tuple[dict, tuple[str, ...]]:
        """Give up the lines held back during an outage that are too old, or whose speaker
        is gone (:func:`~evennia_ai.memory.events.give_up_stale`): one write, a log line and
        a trace note each. Returns the queue left and the notes."""
        queue, given_up = ev.give_up_stale(
            stored, utcnow(), conf.get_float("EVENNIA_AI_OUTAGE_REPLAY_SECONDS"), self.presence()
        )
        if not given_up:
            return stored, ()
        self.npc_state.set(EVENT_QUEUE, queue)
        notes = []
        for event, why in given_up:
            who = event.source_name or "the system"
            note = f"gave up a line from {who} held back while the model was unreachable: {why}"
            logger.log_warn(f"{log_prefix(self.npc)}: {note} ({truncate(event.text, 80)!r})")
            notes.append(note)
        return queue, tuple(notes)

    def presence(self) -> Callable[[Event], bool]:
        """Whether an event's speaker is still there to hear the answer: in the NPC's room and
        connected (a page's sender: connected anywhere); an event without a speaker is."""
        here = audience.objects_here(self.npc)

        def present(event: Event) -> bool:
            if not event.source:
                return True
            speaker = audience.find_by_dbref(
                here, event.source, anywhere=event.kind in ev.DIRECT_KINDS
            )
            return speaker is not None and (audience.is_player(speaker) or is_assistant(speaker))

        return present

    def choose_from(self, stored: dict) -> TickDecision:
        """Pick the context type of this tick and the events it answers from the queue
        ``stored``."""
        queue, batch = ev.take_batch(stored)  # written back only if this tick answers it
        day = routines.current(self.npc)  # the routine and the game time; None: it keeps none
        asleep = self.sleep_decision(stored, batch, day)
        if asleep is not None:
            return asleep

        compaction = self.npc_state.compaction
        if compaction.get("pending") and (not batch or compaction.get("reason") == "emergency"):
            # an emergency compaction does not wait for a quiet moment: the events stay queued,
            # answered by the tick that follows at once (not at the next interval)
            return TickDecision("pre_compaction", run_again=bool(batch))

        if batch:
            if self.waits_for_players(batch):
                return TickDecision(None)  # the queue is not written: the batch stays pending
            # Only in-flight marks changed, which the server's start clears anyway: the row
            # goes with the tick's own writes rather than in a transaction of its own.
            self.npc_state.set(EVENT_QUEUE, queue, lazy=True)
            return TickDecision("tick_event", tuple(batch))

        if day is not None:
            work = routines.work(self.npc, *day)
            if work.action == "walk":
                return TickDecision(None, world=work)

        reflection = self.npc_state.reflection
        if reflection.get("continue"):
            return TickDecision("reflection_cont")
        if self.reflection_due(reflection):
            return TickDecision("reflection")

        autonomous_at = self.autonomy_due()
        if autonomous_at is not None:
            return TickDecision("tick_autonomous", autonomous_at=autonomous_at)
        return TickDecision(None)

    def sleep_decision(self, stored: dict, batch: list, day) -> TickDecision | None:
        """The sleep of this tick: a sleep phase (or rest) while asleep, after falling asleep
        in the scheduled window or in a sleep slot of the routine (``day``:
        :func:`~evennia_ai.engine.routines.current`); None when the NPC is awake (woken
        now, if its sleep ended)."""
        sleep = self.npc_state.sleep
        if sleep.get("asleep"):
            pending = ev.pending_events(stored) if batch else []
            if not self.should_wake(sleep, pending, day):
                return TickDecision(self.sleep_phase())
            wake_up(self.npc, "addressed" if pending else "window ended")
            return None
        if in_sleep_window(conf.get("EVENNIA_AI_SLEEP_SCHEDULE")):
            if not sleep.get("woken_in_window"):
                go_to_sleep(self.npc, "scheduled")
                return TickDecision(self.sleep_phase())
        elif sleep.get("woken_in_window"):
            # the window a wake-up cut short has ended: the next night is slept again
            self.npc_state.set(SLEEP, {**sleep, "woken_in_window": False})
        if day is not None and not batch:
            routine, now = day
            slot = routines.sleep_due(self.npc, routine, now, sleep)
            if slot is not None:
                go_to_sleep(self.npc, "routine", slot=routines.sleep_mark(slot, now))
                return TickDecision(self.sleep_phase())
        return None

    def waits_for_players(self, batch: list[Event]) -> bool:
        """Whether this batch waits for players to be answered first: every event of it is
        another AI NPC's line, and an AI NPC of the room was woken for a player's line it has
        not answered yet (:func:`~evennia_ai.engine.floor.player_waiting`). It is taken at a
        later tick, with whatever arrived meanwhile."""
        if not all((event.data or {}).get("from_assistant") for event in batch):
            return False
        return floor.player_waiting(self.npc)

    def sleep_phase(self) -> str | None:
        """The sleep phase to run now, skipping those with nothing to do; None when resting.

        Consolidation runs only when something happened since the last one and today's
        consolidations (``EVENNIA_AI_CONSOLIDATIONS_PER_DAY``) are not used up, and the
        pre-compaction extraction only when a compaction is pending or due: an NPC that slept
        through a quiet day makes no model call at night.
        """
        sleep = self.npc_state.sleep
        phase = sleep.get("phase")
        if phase == "sleep_consolidate" and not (
            consolidation_allowed(sleep) and consolidation_material(self.npc_state, sleep)
        ):
            advance_sleep(self.npc_state, phase)
            phase = self.npc_state.sleep.get("phase")
        if phase == "pre_compaction" and not compaction_wanted(self.npc_state, self.tick_count):
            advance_sleep(self.npc_state, phase)
            phase = self.npc_state.sleep.get("phase")
        return phase if phase in SLEEP_PHASES else None

    def should_wake(self, sleep: dict, pending: list, day=None) -> bool:
        """Whether a sleeping NPC wakes now: its sleep's time is up, its scheduled window
        ended, the routine's sleep slot it sleeps in ended (``day``:
        :func:`~evennia_ai.engine.routines.current`), or
        (``EVENNIA_AI_WAKE_WHEN_ADDRESSED``) one of the ``pending`` events addresses it."""
        until = sleep.get("until")
        if until and (parse_iso(until) or utcnow()) <= utcnow():
            return True
        if sleep.get("reason") == "scheduled" and not in_sleep_window(
            conf.get("EVENNIA_AI_SLEEP_SCHEDULE")
        ):
            return True
        if sleep.get("reason") == "routine" and (
            day is None or routines.sleep_slot_mark(*day) != sleep.get("slot")
        ):
            return True
        if conf.get("EVENNIA_AI_WAKE_WHEN_ADDRESSED"):
            return any(e.addressed for e in pending)
        return False

    def watched(self) -> bool:
        """Whether work nobody asked for may run now: a player is (or lately was) within
        earshot, an active goal needs no audience, or the setting is off."""
        if not conf.get("EVENNIA_AI_IDLE_NEEDS_AUDIENCE"):
            return True
        return audience.has_audience(self.npc) or works_unwatched(self.npc_state.goals)

    def reflection_due(self, reflection: dict) -> bool:
        """Whether a reflection runs now: asked for (``aisleep/reflect``), or due by tick
        count or journal importance with someone watching (:meth:`watched`)."""
        if reflection.get("requested"):  # an operator asked (aisleep/reflect)
            return True
        interval = conf.get_int("EVENNIA_AI_REFLECTION_INTERVAL")
        ticks = self.tick_count
        due = bool(interval and ticks - int(reflection.get("last_tick") or 0) >= interval)
        threshold = conf.get_int("EVENNIA_AI_REFLECTION_IMPORTANCE_THRESHOLD")
        if not due and threshold:
            since = reflection.get("last_time") or ""
            due = importance_since(self.npc_state.journal, since) >= threshold
        return due and self.watched()  # the room is looked at only when it is due

    def autonomy_due(self) -> float | None:
        """When an autonomous tick is due now, the time it is chosen (``time.time()``);
        else None."""
        if not conf.get("EVENNIA_AI_AUTONOMY"):
            return None
        if not any(g.get("status") == "active" for g in self.npc_state.goals):
            return None
        last = self.last_autonomous or 0
        if time.time() - last < conf.get_float("EVENNIA_AI_AUTONOMOUS_MIN_INTERVAL"):
            return None
        if not self.watched():  # after the interval: the room is looked at once a minute
            return None
        return time.time()

"""AssistantScript: the heartbeat of one assistant.

One per assistant (``obj=npc``), ticking every ``EVENNIA_AI_TICK_INTERVAL`` seconds (default 5),
and at once when speech arrives (:meth:`AssistantScript.trigger_tick`). Holds the state that
lives on the Script rather than the character (docs/architecture.md, "Where state lives") as
Attributes of category ``ai``: ``execution_config`` (the static limits of the execution
pattern), ``current_goals``, ``tick_count``, ``paused``.

Ticks never overlap: ``ndb.busy`` guards the running tick, and a trigger that arrives while a
tick runs sets ``ndb.again`` so the lines that arrived meanwhile are taken together by the next
tick, started as soon as this one ends. The tick writes nothing on the Script: what its agenda
chose (:class:`~evennia_ai.engine.agenda.TickDecision`) comes back with it, and the Script
keeps its own flags from it (``ndb.again`` when the work asks for another tick at once,
``ndb.last_autonomous`` when an autonomous tick was chosen). An error in a tick is logged with
its trace and counted on the NPC; it never stops the Script. After a reload (``at_start``) events that were in flight
are put back in the queue, so nothing queued is lost.

After a crash (``kill -9``, power loss) Evennia never paused the Script, so it neither unpauses
it nor calls ``at_start`` on the next start: :meth:`AssistantScript.at_server_start` restarts
the timer then, which recovers the events the killed process had in flight.
"""

from __future__ import annotations

from evennia.scripts.scripts import DefaultScript
from evennia.utils import logger
from twisted.internet import defer

from evennia_ai import conf
from evennia_ai.engine import scheduler
from evennia_ai.engine.accounting import count_error
from evennia_ai.engine.agenda import TickDecision
from evennia_ai.engine.tick import TickRunner
from evennia_ai.memory import events as ev
from evennia_ai.npc.handler import SCRIPT_KEY
from evennia_ai.npc.state import AttributeState
from evennia_ai.npc.state_keys import SCRIPT_STATE
from evennia_ai.utils import log_prefix


class AssistantScript(DefaultScript):
    """Runs an assistant's ticks: events, autonomy, reflection and sleep."""

    SCRIPT_KEY = SCRIPT_KEY

    def at_script_creation(self):
        self.key = self.SCRIPT_KEY
        self.desc = "evennia-ai: the assistant's ticks"
        self.interval = conf.get_int("EVENNIA_AI_TICK_INTERVAL")
        self.persistent = True
        self.start_delay = True
        self.state.set("tick_count", 0)

    # -- life cycle ----------------------------------------------------------------------------
    def at_start(self, **kwargs):
        self.ndb.busy = False
        self.ndb.again = False
        self.ndb.tick_queued = False
        npc = self.obj
        if npc is None or not hasattr(npc, "ai"):
            return

        try:
            npc.ai.update("event_queue", ev.recover)
        except Exception:
            logger.log_trace("evennia_ai: could not recover the event queue")
        # Anything queued before the reload is answered now rather than after an interval.
        self.trigger_tick()

    def at_server_start(self):
        """After every server start: restart the timer if a crash left it stopped.

        A reload or shutdown pauses the Script and Evennia unpauses it on start (which calls
        :meth:`at_start`). A killed server paused nothing, so the Script is still marked active
        with no timer running; starting it calls :meth:`at_start`, which puts the events that were
        in flight back in the queue and answers them. A Script paused by hand stays paused.
        """
        task = self.ndb._task
        if not self.is_active or (task and task.running) or self.db._manually_paused:
            return
        try:
            self.start()
        except Exception:
            logger.log_trace(f"{log_prefix(self.obj)}: could not restart its ticks after a crash")

    def at_repeat(self, **kwargs):
        self.trigger_tick()

    # -- ticking -------------------------------------------------------------------------------
    @property
    def state(self) -> AttributeState:
        """The Script's declared state (goals, execution config, tick counter, pause)."""
        return AttributeState(self, SCRIPT_STATE)

    @property
    def tick_count(self) -> int:
        return self.state.get("tick_count")

    def next_tick_id(self) -> int:
        """Advance and return the tick counter (one write, lazy: any write that names the
        tick takes the counter to the database with it, so a crash can only lose the number of
        a tick that left nothing behind, which the next tick then reuses)."""
        value = self.tick_count + 1
        self.state.set("tick_count", value, lazy=True)
        return value

    def trigger_tick(self) -> None:
        """Start a tick as soon as possible (now, or right after the running one).

        Triggers that arrive before the tick has its turn on the reactor (ten listeners of one
        line, a timer beat) start it once.
        """
        if self.ndb.busy:
            self.ndb.again = True
            return
        if self.ndb.tick_queued:
            return
        self.ndb.tick_queued = True
        scheduler.call_soon(self._run_queued_tick)

    def _run_queued_tick(self):
        self.ndb.tick_queued = False
        return self.run_tick()

    def run_tick(self):
        """Run one tick unless one is running; returns its Deferred (or None when skipped)."""
        if self.ndb.busy:
            self.ndb.again = True
            return None
        npc = self.obj
        if npc is None or not getattr(npc, "pk", None) or not hasattr(npc, "ai"):
            return None
        if not npc.ai.enabled or npc.ai.paused:
            return None

        self.ndb.busy = True
        self.ndb.again = False
        runner = None
        try:
            runner = TickRunner(self)
            d = defer.maybeDeferred(runner.run)
        except Exception:  # a runner that cannot be made fails the tick, not the Script
            d = defer.fail()
        d.addErrback(self._tick_failed)
        d.addBoth(self._tick_done, runner)
        return d

    def _act_on(self, decision: TickDecision | None) -> None:
        """Keep what the tick's agenda chose for the next choices (nothing if it chose
        nothing, or failed before choosing)."""
        if decision is None:
            return
        if decision.autonomous_at is not None:
            self.ndb.last_autonomous = decision.autonomous_at
        if decision.run_again:
            self.ndb.again = True

    def _tick_failed(self, failure):
        logger.log_err(f"{log_prefix(self.obj)}: tick failed:\n{failure.getTraceback()}")
        try:
            npc = self.obj
            if npc is not None and npc.pk:

                def count(metrics):
                    count_error(metrics, failure.getErrorMessage(), self.tick_count)
                    return metrics

                npc.ai.update("metrics", count)
        except Exception:
            logger.log_trace("evennia_ai: could not count a tick error")
        return None

    def _tick_done(self, result, runner: TickRunner | None = None):
        self._act_on(runner.decision if runner is not None else None)
        self.ndb.busy = False
        if self.ndb.again and self.pk:
            self.ndb.again = False
            self.trigger_tick()
        return result

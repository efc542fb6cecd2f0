"""One tick of one assistant: choose the work, build the context, run the loop, write state.

:class:`TickRunner` is created by :class:`~evennia_ai.scripts.AssistantScript` for every tick.
What a tick does, in order of precedence:

1. **Sleep.** While asleep the assistant runs its sleep phases once each (``sleep_consolidate``,
   then ``pre_compaction``) and then rests until its window ends, or until it is addressed when
   ``EVENNIA_AI_WAKE_WHEN_ADDRESSED``. A scheduled window (``EVENNIA_AI_SLEEP_SCHEDULE``) or the
   ``go_to_sleep`` tool puts it to sleep.
2. **Events.** The highest-priority queued event, together with the speech that arrived with it,
   is answered in a ``tick_event`` tick. Events leave the queue only when the tick has finished;
   a failed model call puts them back (at most three attempts each).
3. **Reflection** every ``EVENNIA_AI_REFLECTION_INTERVAL`` ticks, or earlier when the journal's
   summed importance since the last reflection reaches
   ``EVENNIA_AI_REFLECTION_IMPORTANCE_THRESHOLD``; a ``reflection_cont`` tick follows when the
   reflection used its journal tools.
4. **Autonomy.** With no events, active goals and autonomy on, a ``tick_autonomous`` at most
   every ``EVENNIA_AI_AUTONOMOUS_MIN_INTERVAL`` seconds.

Idle costs nothing: reflection and autonomy wait (``EVENNIA_AI_IDLE_NEEDS_AUDIENCE``) until a
player is within earshot or was lately (:mod:`evennia_ai.engine.audience`), unless an active
goal is marked as needing no audience; the sleep's consolidation runs only when something
happened since the last one (new journal entries or conversation).

All model and memory calls happen off the reactor; every state write happens here on the
reactor thread, once per piece of state, after checking the NPC still exists and is where it
was (a late result for a deleted or moved NPC is dropped safely).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, is_dataclass
from typing import Any

from evennia.utils import logger
from twisted.internet import defer, reactor

from evennia_ai import conf
from evennia_ai.engine import audience, scheduler
from evennia_ai.engine.assessment import assess_task
from evennia_ai.engine.delegate import run_helper
from evennia_ai.engine.react import LoopOutcome, ReactLoop
from evennia_ai.engine.recording import TickRecorder
from evennia_ai.engine.redaction import npc_secrets, withhold_refused_secrets
from evennia_ai.engine.trace import StopReason, TickTrace, bounded_trace
from evennia_ai.llm import contracts, tokens
from evennia_ai.llm.client import defer_to_thread, get_client
from evennia_ai.llm.contracts import SLEEP_INSTRUCTION, SUMMARY_INSTRUCTION, render_task
from evennia_ai.llm.models import resolve_model
from evennia_ai.llm.usage import UsageAccountant
from evennia_ai.memory import compression, entities
from evennia_ai.memory import events as ev
from evennia_ai.memory import gate
from evennia_ai.memory import history as hist
from evennia_ai.memory import longterm, procedures
from evennia_ai.memory.compression import compaction_reason
from evennia_ai.memory.events import Event, event_signal, main_event, render_events
from evennia_ai.memory.history import render_text
from evennia_ai.prompt import block_sources  # noqa: F401  (registers the memory-block sources)
from evennia_ai.prompt import longterm_sources  # noqa: F401  (sources)
from evennia_ai.prompt import sources  # noqa: F401  (registers the built-in sources)
from evennia_ai.prompt.builder import ContextBuilder, schema_name
from evennia_ai.prompt.contexts import CONVERSATION_CONTEXTS
from evennia_ai.prompt.execution_pattern import select_execution_pattern
from evennia_ai.prompt.registry import effective_context_config
from evennia_ai.prompt.tasks import compaction_batch, reflection_done
from evennia_ai.tools import select_tools
from evennia_ai.tools.approvals import get_confirmation_queue
from evennia_ai.tools.base import LoopState, TickServices, ToolContext
from evennia_ai.tools.groups import RequestTools, choose_tools
from evennia_ai.tools.rules import parse_rules
from evennia_ai.utils import iso_utc, log_prefix, one_line, parse_iso, today, truncate, utcnow
from evennia_ai.workspace.goals import goal_urgency, works_unwatched
from evennia_ai.workspace.journal import entries_since, importance_since
from evennia_ai.workspace.sleep import SLEEP_PHASES, go_to_sleep, in_sleep_window, wake_up

SUMMARY_SYSTEM = "You write short, factual summaries of a text-game character's conversation logs."


@dataclass
class TickState:
    """What one tick reads of its NPC, read once when the tick starts.

    Every step of the tick (the sources, the window check, the loop, the recording) takes its
    state from here instead of reading the NPC again.

    Attributes:
        tick_id: The tick's number (the Script's counter).
        context_type: ``tick_event``, ``reflection``, a sleep phase, ...
        batch: The events the tick answers (empty for other context types).
        batch_text: The batch rendered once (``Alice says to you: "..."``).
        config: The context type's effective ContextConfig.
        model: The model of this tick: the NPC's own, None for the server default, or the
            offline model past a daily budget in ``offline`` mode.
        spending: Where the NPC stands against its daily budgets.
        metrics: The NPC's counters.
        goals: The NPC's goals.
        execution_config: The static limits of the execution pattern.
        tools: The tools the context allows this NPC (before the pattern narrows them).
        offered: The tools whose schemas the request sends: the context's tool groups and
            those the events call for, with ``request_tools`` when some are left out
            (:func:`~evennia_ai.tools.groups.choose_tools`).
        tool_groups: The groups sent (empty: every allowed tool).
        tool_result: The tool result a ``reflection_cont`` tick shows, else None.
    """

    tick_id: int
    context_type: str
    batch: list[Event]
    batch_text: str
    config: Any
    model: str | None
    spending: Any  # evennia_ai.npc.spending.SpendingStatus (a higher layer)
    metrics: dict
    goals: list[dict]
    execution_config: dict
    tools: list
    offered: list
    tool_groups: list[str]
    tool_result: str | None = None

    @property
    def silenced(self) -> bool:
        """Past a daily budget in ``silence`` or ``message`` mode: no model call at all."""
        return self.spending.exceeded and self.spending.action in ("silence", "message")

    @classmethod
    def read(cls, npc, context_type: str, batch: list[Event], tick_id: int) -> "TickState":
        """Read the state of ``npc``'s tick (reads only: nothing is written)."""
        ai = npc.ai
        metrics = ai.metrics
        spending = ai.spending_status(metrics)
        model = ai.model or None
        if spending.exceeded and spending.action == "offline":
            model = conf.OFFLINE_MODEL
        config = effective_context_config(context_type)
        execution_config = ai.execution_config
        tools = select_tools(npc, config)
        if not execution_config.get("sub_agents_enabled"):  # no later layer can widen it
            tools = [t for t in tools if not t.needs_sub_agents]
        batch_text = render_events(batch) if batch else ""
        chosen = choose_tools(
            tools, config.tool_groups, situation=batch_text, kinds=[e.kind for e in batch]
        )
        return cls(
            tick_id=tick_id,
            context_type=context_type,
            batch=list(batch),
            batch_text=batch_text,
            config=config,
            model=model,
            spending=spending,
            metrics=metrics,
            goals=ai.goals,
            execution_config=execution_config,
            tools=tools,
            offered=chosen.offered,
            tool_groups=chosen.groups,
            tool_result=(
                ai.reflection.get("last_result", "") if context_type == "reflection_cont" else None
            ),
        )


def prepare(npc, state: TickState) -> defer.Deferred:
    """Build the request of ``npc``'s tick from ``state``; fires with a BuiltContext.

    No side effect: ``aiprompt/show <context> = <npc>`` calls it to show the request the next
    tick would send.
    """
    return ContextBuilder(
        npc,
        state.config,
        batch=state.batch,
        batch_text=state.batch_text,
        tools=state.offered,
        model=state.model,
        tool_result=state.tool_result,
        metrics=state.metrics,
    ).build()


class TickRunner:
    """Run one tick for the NPC of ``script``: prepare, think, record.

    Every model call of the tick (its loop, the assessment, helpers, summaries, memory
    extraction) is recorded in :attr:`usage`; the trace, the metrics and the daily budgets take
    their figures from there.
    """

    def __init__(self, script):
        self.script = script
        self.npc = script.obj
        self.ai = self.npc.ai
        self.location = self.npc.location
        self.batch: list = []
        self.started = time.monotonic()
        # The trace's start is the tick's, so started..ended spans its duration (preparation,
        # memory searches included), not only the model calls.
        self.started_at = iso_utc(precise=True)
        self.usage = UsageAccountant()
        self.state: TickState | None = None
        self.recorder = TickRecorder.for_tick(self.npc)  # None unless EVENNIA_AI_RECORD_TICKS
        self._thinking = None  # the delayed "thinking" line to the speakers, while pending

    #: What schedules the "thinking" line (a ``task.Clock`` in tests).
    clock = reactor

    def budget_reached(self) -> bool:
        """Whether today's budgets are reached counting this tick's calls so far.

        Every kind of paid call checks it before it is made (the loop's, helpers', goal
        decomposition, assessment, summaries, memory extraction). In ``offline`` mode the tick
        already answers with the offline model, which costs nothing: nothing more to stop.
        """
        state = self.state
        if state is None or state.model == conf.OFFLINE_MODEL:
            return False
        spent, tokens_used, cost = state.spending, self.usage.tokens, self.usage.cost

        def over(used, limit) -> bool:
            return limit is not None and used >= limit

        return (
            over(spent.npc_tokens + tokens_used, spent.npc_token_limit)
            or over(spent.npc_cost + cost, spent.npc_cost_limit)
            or over(spent.server_tokens + tokens_used, spent.server_token_limit)
            or over(spent.server_cost + cost, spent.server_cost_limit)
        )

    def build_request(self, context_type: str, task: str) -> defer.Deferred:
        """The messages of a ``context_type`` request with ``task`` as its pending event.

        For calls a tool makes inside the tick (``decompose_goal``): the request follows the
        operator's customisation of that context type, as a tick's own would.
        """
        state = self.state
        builder = ContextBuilder(
            self.npc,
            effective_context_config(context_type),
            model=state.model if state else None,
            metrics=state.metrics if state else None,
            extra={"pending_event": task},
        )
        return builder.build().addCallback(_sendable_messages, context_type)

    def client(self):
        """The LLM client of this tick's calls (recording them when the tick is recorded)."""
        client = get_client()
        return self.recorder.client(client) if self.recorder else client

    # -- decisions -----------------------------------------------------------------------------
    def _choose(self) -> tuple[str | None, list]:
        """Pick the context type of this tick and the events it answers."""

        sleep = self.ai.sleep
        stored = self.ai.event_queue
        queue, batch = ev.take_batch(stored)  # written back only if this tick answers it

        if sleep.get("asleep"):
            pending = ev.pending_events(stored) if batch else []
            if self._should_wake(sleep, pending):
                self.wake("addressed" if pending else "window ended")
            else:
                return self._sleep_phase(), []
        elif in_sleep_window(conf.get("EVENNIA_AI_SLEEP_SCHEDULE")):
            if not sleep.get("woken_in_window"):
                self.go_to_sleep("scheduled")
                return self._sleep_phase(), []
        elif sleep.get("woken_in_window"):
            # the window a wake-up cut short has ended: the next night is slept again
            self.ai.set("sleep", {**sleep, "woken_in_window": False})

        compaction = self.ai.compaction
        if compaction.get("pending") and (not batch or compaction.get("reason") == "emergency"):
            # an emergency compaction does not wait for a quiet moment: the events stay queued,
            # answered by the tick that follows at once (not at the next interval)
            if batch:
                self.script.ndb.again = True
            return "pre_compaction", []

        if batch:
            self.ai.set("event_queue", queue)
            return "tick_event", batch

        reflection = self.ai.reflection
        if reflection.get("continue"):
            return "reflection_cont", []
        if self._reflection_due(reflection):
            return "reflection", []

        if self._autonomy_due():
            return "tick_autonomous", []
        return None, []

    def _sleep_phase(self) -> str | None:
        """The sleep phase to run now, skipping those with nothing to do; None when resting.

        Consolidation runs only when something happened since the last one, and the
        pre-compaction extraction only when a compaction is pending or due: an NPC that slept
        through a quiet day makes no model call at night.
        """
        phase = self.ai.sleep.get("phase")
        if phase == "sleep_consolidate" and not self._consolidation_material(self.ai.sleep):
            self._advance_sleep(phase)
            phase = self.ai.sleep.get("phase")
        if phase == "pre_compaction" and not self._compaction_wanted():
            self._advance_sleep(phase)
            phase = self.ai.sleep.get("phase")
        return phase if phase in SLEEP_PHASES else None

    def _should_wake(self, sleep: dict, pending: list) -> bool:
        until = sleep.get("until")
        if until and (parse_iso(until) or utcnow()) <= utcnow():
            return True
        if sleep.get("reason") == "scheduled" and not in_sleep_window(
            conf.get("EVENNIA_AI_SLEEP_SCHEDULE")
        ):
            return True
        if conf.get("EVENNIA_AI_WAKE_WHEN_ADDRESSED"):
            return any(e.addressed for e in pending)
        return False

    def _watched(self) -> bool:
        """Whether work nobody asked for may run now: a player is (or lately was) within
        earshot, an active goal needs no audience, or the setting is off."""
        if not conf.get("EVENNIA_AI_IDLE_NEEDS_AUDIENCE"):
            return True
        return audience.has_audience(self.npc) or works_unwatched(self.ai.goals)

    def _consolidation_material(self, sleep: dict) -> bool:
        """Whether anything happened since the last consolidation (journal or conversation)."""
        since = parse_iso(sleep.get("last_consolidated") or "")
        if since is None:
            return bool(self.ai.journal or self.ai.history)
        if entries_since(self.ai.journal, sleep.get("last_consolidated")):
            return True
        return any((parse_iso(m.get("ts") or "") or since) > since for m in self.ai.history)

    def _compaction_wanted(self) -> bool:
        """Whether a compaction is pending or due now (the pre-compaction phase's reason)."""
        if self.ai.compaction.get("pending"):
            return True
        return self._compaction_due(self.ai.model or None, self.script.tick_count) is not None

    def _reflection_due(self, reflection: dict) -> bool:
        if reflection.get("requested"):  # an operator asked (aisleep/reflect)
            return True
        interval = int(conf.get("EVENNIA_AI_REFLECTION_INTERVAL") or 0)
        ticks = self.script.tick_count
        due = bool(interval and ticks - int(reflection.get("last_tick") or 0) >= interval)
        threshold = int(conf.get("EVENNIA_AI_REFLECTION_IMPORTANCE_THRESHOLD") or 0)
        if not due and threshold:
            since = reflection.get("last_time") or ""
            due = importance_since(self.ai.journal, since) >= threshold
        return due and self._watched()  # the room is looked at only when it is due

    def _autonomy_due(self) -> bool:
        if not conf.get("EVENNIA_AI_AUTONOMY"):
            return False
        if not any(g.get("status") == "active" for g in self.ai.goals):
            return False
        last = self.script.ndb.last_autonomous or 0
        if time.time() - last < float(conf.get("EVENNIA_AI_AUTONOMOUS_MIN_INTERVAL")):
            return False
        if not self._watched():  # after the interval: the room is looked at once a minute
            return False
        self.script.ndb.last_autonomous = time.time()
        return True

    # -- sleep ---------------------------------------------------------------------------------
    def go_to_sleep(self, reason: str, until: str | None = None) -> None:
        """Fall asleep (one write); the sleep phases run on the next ticks."""
        go_to_sleep(self.npc, reason, until)

    def wake(self, reason: str) -> None:
        wake_up(self.npc, reason)

    def _advance_sleep(self, context_type: str) -> None:
        if context_type not in SLEEP_PHASES:
            return

        def advance(sleep):
            index = SLEEP_PHASES.index(context_type)
            sleep["phase"] = SLEEP_PHASES[index + 1] if index + 1 < len(SLEEP_PHASES) else "rest"
            return sleep

        self.ai.update("sleep", advance)

    # -- the tick ------------------------------------------------------------------------------
    def cancelled(self) -> str | None:
        """Why the tick must stop now, if it must (checked around every model call)."""
        npc = self.npc
        if not getattr(npc, "pk", None):
            return "the NPC was deleted"
        if not self.script.pk:
            return "the NPC's script was deleted"
        if self.ai.paused or not self.ai.enabled:
            return "the NPC was paused"
        if npc.location != self.location:
            return "the NPC moved away"
        return None

    @defer.inlineCallbacks
    def run(self):
        """Run the tick. Fires with the TickTrace, or None when there was nothing to do."""
        context_type, batch = self._choose()
        if context_type is None:
            return None
        self.batch = batch
        try:
            trace = yield self._run(context_type)
        except Exception:
            self.release_batch()
            raise
        finally:
            self.usage.close(late=self._late_usage)
        return trace

    def release_batch(self) -> None:
        """Put the batch back in the queue after a failed tick (counts one attempt)."""

        ids = [e.id for e in self.batch]
        if ids and getattr(self.npc, "pk", None):
            self.ai.update("event_queue", lambda q: ev.release(q, ids))

    @defer.inlineCallbacks
    def _run(self, context_type: str):
        state = TickState.read(self.npc, context_type, self.batch, self.script.next_tick_id())
        self.state = state
        if state.silenced:
            return self._silent_tick(state)
        self._start_thinking(state)
        try:
            trace = yield self._prepare_and_think(state)
        finally:
            self._stop_thinking()
        return trace

    def _start_thinking(self, state: TickState) -> None:
        """Show the speakers a sign the NPC is thinking if no answer came within the delay."""
        delay = float(conf.get("EVENNIA_AI_THINKING_DELAY") or 0)
        if delay <= 0 or state.context_type != "tick_event":
            return
        speakers = audience.waiting_speakers(self.npc, state.batch)
        if speakers:
            self._thinking = self.clock.callLater(
                delay, audience.tell_speakers, self.npc, speakers, "EVENNIA_AI_THINKING_MESSAGE"
            )

    def _stop_thinking(self) -> None:
        call, self._thinking = self._thinking, None
        if call is not None and call.active():
            call.cancel()

    @defer.inlineCallbacks
    def _prepare_and_think(self, state: TickState):
        built = yield prepare(self.npc, state)
        if built.blocked:
            return self._blocked_tick(state, built.blocked)
        if built.contract_problems:
            return self._contract_tick(state, built.contract_problems)
        # Choosing and building was one piece of reactor work; the loop's start is the next
        # (the loop checks first that the NPC is still there and may act).
        yield scheduler.turn()
        trace = TickTrace(
            tick_id=state.tick_id,
            context_type=state.context_type,
            started=self.started_at,
            event_ids=[e.id for e in state.batch],
            event_text=truncate(state.batch_text, 2000),
            budget=state.spending.describe() if state.spending.exceeded else None,
            prefix_cache_share=built.prefix_share,
            shrunk=dict(built.shrunk),
            notes=self._flood_notes(),
            tool_groups=list(state.tool_groups),
        )
        if built.history_cut:
            self._fold_history_soon()
        if self.recorder:
            self.recorder.keep_build(state, built)
        outcome = yield self._think(state, built, trace)
        self._stop_thinking()
        yield self._maintain(state, trace)
        trace.add_records(self.usage.take_new())
        trace.ended = iso_utc(precise=True)
        trace.duration = round(time.monotonic() - self.started, 4)
        if self.recorder:
            self.recorder.save(trace)
        # What the tools said is queued for the players' sessions; let the reactor send it
        # before this tick's bookkeeping (history, traces, metrics) takes its turn.
        yield scheduler.turn()
        if not getattr(self.npc, "pk", None):
            return trace
        self.npc.ndb.ai_last_request = built.request_key  # the next request's prefix-cache base
        # One piece: the writes only change Attributes in memory and queue their rows, which
        # go to the database together when the turn ends (npc.attribute_writes).
        self._record(state, outcome, trace)
        return trace

    @defer.inlineCallbacks
    def _think(self, state: TickState, built, trace: TickTrace):
        """Assess (when enabled), compose the execution pattern and run the ReAct loop."""
        client = self.client()
        assessment = {
            "context_signals": {
                "token_pressure": built.token_pressure,
                "recent_errors": int(state.metrics.get("consecutive_errors", 0)),
                "event_class": event_signal(state.batch) if state.batch else None,
                "goal_urgency": goal_urgency(state.goals),
            }
        }
        static = state.execution_config
        if (
            static.get("task_assessment_enabled")
            and state.context_type in ("tick_event", "tick_autonomous")
            and not self.budget_reached()
        ):
            advice, _result = yield assess_task(
                client,
                built.public_messages,  # it only transforms text: no Secret: lines
                model=state.model,
                usage=self.usage,
                caller=log_prefix(self.npc),
            )
            assessment.update(advice)
            trace.add_records(self.usage.take_new())
        if self.recorder:
            self.recorder.keep_assessment(assessment)
        pattern = select_execution_pattern(static, state.config, assessment)
        trace.pattern = _pattern_dict(pattern)
        # Every allowed tool may be called; the request sends the schemas of those offered
        # (the groups, less any the fitting left out), and request_tools adds more.
        extra = [t for t in state.offered if isinstance(t, RequestTools)]
        tools = [t for t in state.tools + extra if pattern.allows(t)]
        callable_names = {t.name for t in tools}
        schemas = [s for s in built.tool_schemas if schema_name(s) in callable_names]

        main = main_event(state.batch)
        rules = _tool_rules(self.ai)
        ctx = ToolContext(
            npc=self.npc,
            script=self.script,
            tick_id=state.tick_id,
            context_type=state.context_type,
            event=main.to_dict() if main else None,
            state=LoopState(
                window=built.window, request_tokens=built.total_tokens, metrics=state.metrics
            ),
            services=TickServices(
                client=client,
                model=state.model,
                usage=self.usage,
                pattern=pattern,
                tools=tools,
                context_config=effective_context_config,
                run_helper=run_helper,
                rules=rules,
                budget_reached=self.budget_reached,
                build_request=self.build_request,
            ),
        )
        # model, client, tools, rules, budgets: ctx.services; limit, sections, count: built
        loop = ReactLoop(
            ctx,
            built,
            trace=trace,
            schemas=schemas,
            is_cancelled=self.cancelled,
            on_dangerous=self._queue_confirmation,
        )
        outcome = yield loop.run()
        trace.add_records(self.usage.take_new())  # helpers' and tools' own model calls
        return outcome

    @defer.inlineCallbacks
    def _maintain(self, state: TickState, trace: TickTrace):
        """The sleep phases' own work: memory consolidation, history compaction."""
        if self.cancelled():
            return
        if state.context_type == "sleep_consolidate":
            yield self._consolidate(state.model)
        elif state.context_type == "pre_compaction":
            if self.ai.compaction.get("pending") or self._history_reason(state):
                yield self._compact(self.client(), state.model, state.tick_id, trace)

    def _late_usage(self, record) -> None:
        """A model call of this tick that finished after it (a helper that timed out, say).

        Called from any thread; counted on the reactor in the NPC's metrics and the budgets.
        """
        reactor.callFromThread(self._count_late, record)

    def _count_late(self, record) -> None:
        if not getattr(self.npc, "pk", None):
            return
        day = today()

        def change(m):
            _add_usage(m, day, record.prompt_tokens, record.completion_tokens, record.cost)
            return m

        self.ai.update("metrics", change)
        self.ai.record_spending(record.tokens, record.cost, day)

    def _silent_tick(self, state: TickState) -> TickTrace:
        """Past the daily budget in ``silence`` or ``message`` mode: consume the batch, call no
        model; in ``message`` mode whoever spoke to the NPC is told it cannot answer."""
        if state.spending.action == "message":
            audience.tell_speakers(
                self.npc,
                audience.waiting_speakers(self.npc, state.batch),
                "EVENNIA_AI_UNAVAILABLE_MESSAGE",
            )
        return self._unsent_tick(state, StopReason.BUDGET, budget=state.spending.describe())

    def _unsent_tick(self, state: TickState, reason: StopReason, **fields) -> TickTrace:
        """Record a tick that called no model (its trace gets ``fields``)."""
        trace = TickTrace(
            tick_id=state.tick_id,
            context_type=state.context_type,
            started=self.started_at,
            event_ids=[e.id for e in state.batch],
            event_text=truncate(state.batch_text, 2000),
            stop_reason=reason.value,
            **fields,
        )
        trace.ended = iso_utc(precise=True)
        trace.duration = round(time.monotonic() - self.started, 4)
        self._record(state, LoopOutcome(stop_reason=reason, trace=trace), trace)
        return trace

    def _flood_notes(self) -> list[str]:
        """Events dropped since the last tick for passing their speaker's rate (then forgotten)."""
        floods = self.npc.ndb.ai_floods or {}
        self.npc.ndb.ai_floods = {}
        return [
            f"dropped {n} event(s) from {who}: too many in a minute" for who, n in floods.items()
        ]

    def _blocked_tick(self, state: TickState, why: str) -> TickTrace:
        """The request cannot be built with the operator's instructions: fail closed.

        No model call; the error is in the trace, the metrics (``aistatus``) and the log; the
        events go back to the queue (each counts an attempt).
        """
        logger.log_err(f"{log_prefix(self.npc)}: {why}")
        return self._unsent_tick(state, StopReason.ERROR, error=why)

    def _contract_tick(self, state: TickState, problems: list[str]) -> TickTrace:
        """The request lacks what its kind of call must carry (a component the contract needs
        was removed, say): it is not sent. The tick stops with ``contract_violation``; the
        reason is in the trace, the metrics (``aistatus``) and the log, the violation is
        counted, and the events go back to the queue (each counts an attempt)."""
        contracts.record_violation(state.context_type, problems)
        why = (
            f"the {state.context_type} request breaks its contract: {'; '.join(problems)}; "
            "it was not sent"
        )
        logger.log_err(f"{log_prefix(self.npc)}: {why}")
        return self._unsent_tick(state, StopReason.CONTRACT_VIOLATION, error=why)

    def _queue_confirmation(self, tool, arguments: dict, ctx) -> str:
        reason = ""
        if self.batch:
            first = self.batch[0]
            reason = f"asked during: {truncate(first.text, 200)} (from {first.source_name})"
        return get_confirmation_queue().add_entry(
            self.npc,
            tool.name,
            {"arguments": arguments},
            kind="tool",
            reason=reason,
            ctx=ctx,  # its tick, context and tool-rule count: the approval checks them again
        )

    # -- writing the results -------------------------------------------------------------------
    def _record(self, state: TickState, outcome, trace: TickTrace) -> None:
        """Write what the tick did: queue, history, procedures, trace, metrics, follow-ups."""
        for step in self._record_steps(state, outcome, trace):
            if not getattr(self.npc, "pk", None):
                logger.log_info(f"{log_prefix(self.npc)}: tick result dropped: the NPC was deleted")
                return
            step()

    def _record_steps(self, state: TickState, outcome, trace: TickTrace) -> list:
        """The writes of :meth:`_record`, in order, as steps."""
        return [
            lambda: self._record_queue(state, outcome, trace),
            lambda: self._record_history(state, outcome, trace),
            lambda: self._record_trace(state, outcome, trace),
            lambda: self._update_metrics(outcome, trace),
            lambda: self._follow_up(state, outcome, trace),
        ]

    def _record_queue(self, state: TickState, outcome, trace: TickTrace) -> None:
        """Take the answered events off the queue, or put them back after a failure."""
        ids = [e.id for e in self.batch]
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
                self.ai.update("event_queue", lambda q: ev.release(q, ids, count_attempt=False))
            elif provider_failed:
                self.ai.update("event_queue", lambda q: ev.release(q, ids))
            else:
                self.ai.update("event_queue", lambda q: ev.ack(q, ids))

    def _record_history(self, state: TickState, outcome, trace: TickTrace) -> None:
        """Add the tick's messages to the history (one write); the NPC's upkeep (reflection,
        sleep, compaction, decomposition) stays out of it (see ``CONVERSATION_CONTEXTS``)."""
        if trace.context_type not in CONVERSATION_CONTEXTS:
            return
        if outcome.new_messages and outcome.stop_reason != StopReason.CANCELLED:
            event_text = state.batch_text or f"[{trace.context_type}]"
            tick_messages = [{"role": "user", "content": event_text}] + outcome.new_messages
            max_messages = int(conf.get("EVENNIA_AI_HISTORY_MAX_MESSAGES"))
            max_chars = int(conf.get("EVENNIA_AI_HISTORY_MAX_CHARS"))
            message_chars = int(conf.get("EVENNIA_AI_HISTORY_MESSAGE_CHARS"))
            self.ai.update(
                "history",
                lambda h: hist.append_tick(
                    h,
                    trace.tick_id,
                    tick_messages,
                    max_messages,
                    max_chars=max_chars,
                    message_chars=message_chars,
                ),
            )

    def _record_trace(self, state: TickState, outcome, trace: TickTrace) -> None:
        """What worked (procedures, people seen) and the trace."""
        self._learn(state, outcome, trace)
        stored = withhold_refused_secrets(trace.to_dict(), npc_secrets(self.npc))
        self.ai.record_trace(bounded_trace(stored, int(conf.get("EVENNIA_AI_TRACE_MAX_CHARS"))))

    def _follow_up(self, state: TickState, outcome, trace: TickTrace) -> None:
        """What the next ticks do: sleep phases, reflection follow-ups, compaction."""
        self._after_context(trace.context_type, outcome)
        self._check_history_pressure(state)

    def _model_failed(self, state: TickState, trace: TickTrace) -> None:
        """The model could not answer: say so in the log, and to the players left waiting.

        Each speaker is told once per line (on its first failed attempt; the line is tried
        again on the next ticks).
        """
        model = resolve_model(state.model)
        reason = trace.error or "no reply"
        reason = reason.replace(f"failed: {model}: ", "failed: ", 1)  # the model is named once
        logger.log_err(
            f"{log_prefix(self.npc)}: {state.context_type} tick "
            f"{state.tick_id} got no answer from model {model}: {reason}"
        )
        first_try = [e for e in state.batch if not e.attempts]
        audience.tell_speakers(
            self.npc,
            audience.waiting_speakers(self.npc, first_try),
            "EVENNIA_AI_UNAVAILABLE_MESSAGE",
        )

    @defer.inlineCallbacks
    def _consolidate(self, model):
        """Sleep: journal entries and recent history since the last sleep go to long-term memory."""

        since = self.ai.sleep.get("last_consolidated") or ""
        journal = self.ai.journal
        texts: list = list(entries_since(journal, since) if since else journal)
        recent = render_text(self.ai.history[-40:], assistant_name=self.npc.key)
        if recent:
            texts.append(
                {
                    "content": f"Recent conversation:\n{recent[:4000]}",
                    "source": "observed",
                    "kind": longterm.TRANSCRIPT,
                }
            )
        if not texts:
            return
        try:
            result = yield longterm.consolidate(
                self.npc.dbref,
                texts,
                model=model,
                usage=self.usage,
                infer=False if self.budget_reached() else None,  # stored as given: no model call
                context=gate.context_for(self.npc, instruction=SLEEP_INSTRUCTION),
            )
        except Exception as err:
            logger.log_err(f"{log_prefix(self.npc)}: consolidating memory failed: {err}")
            return
        gate.record_decisions(self.npc, result.decisions)
        for error in result.errors:
            logger.log_warn(f"{log_prefix(self.npc)}: consolidating memory: {error}")
        if result.unstored:
            # The time marks what is in memory: left unset, the next sleep takes these again.
            logger.log_err(
                f"{log_prefix(self.npc)}: consolidating memory failed: {result.unstored} of "
                f"{len(texts)} text(s) could not be stored"
            )
            return
        if getattr(self.npc, "pk", None):
            self.ai.update("sleep", lambda s: {**s, "last_consolidated": iso_utc()})

    @defer.inlineCallbacks
    def _compact(self, client, model, tick_id: int, trace: TickTrace):
        """Compress old history batches (truncate or summarise in a thread); one write."""

        keep = int(conf.get("EVENNIA_AI_COMPACTION_KEEP_RECENT"))
        history = self.ai.history
        summary_model = conf.get("EVENNIA_AI_SUMMARY_MODEL") or model
        resolved = client.resolve_model(summary_model)
        if (
            conf.get("EVENNIA_AI_COMPACTION_STRATEGY") == "summarize"
            and resolved != conf.OFFLINE_MODEL
            and model != conf.OFFLINE_MODEL  # past a daily budget: no paid summary model either
            and not self.budget_reached()
        ):
            chunk_chars = max(2000, (tokens.get_context_window(resolved) - 1500) * 3)

            def summarize(text: str) -> str:
                result = client.complete_sync(
                    [
                        {"role": "system", "content": SUMMARY_SYSTEM},
                        {
                            "role": "user",
                            "content": render_task("summarise", SUMMARY_INSTRUCTION, {"log": text}),
                        },
                    ],
                    model=summary_model,
                    kind="summarise",
                )
                self.usage.record_result(result, "summarise")
                if result.error:
                    raise RuntimeError(result.error)
                summary = (result.text or "").strip()
                problem = compression.summary_problem(summary, text)
                if problem:
                    raise RuntimeError(problem)
                return summary

            strategy = "summarize"
            try:
                new_history, removed = yield defer_to_thread(
                    compression.summarized_history,
                    history,
                    summarize,
                    keep_recent=keep,
                    chunk_chars=chunk_chars,
                )
            except Exception as err:
                # Nothing is erased on a failed summary: the history stays as it was, the
                # error is in the trace, and compaction is tried again when it is next due.
                error = f"summarising history failed ({one_line(err, 300)}); history left as it was"
                logger.log_err(f"{log_prefix(self.npc)}: {error}")
                trace.error = error
                if getattr(self.npc, "pk", None):
                    self.ai.set(
                        "compaction",
                        {"pending": False, "last_tick": tick_id, "error": error, "time": iso_utc()},
                    )
                return
        else:
            new_history, removed = compression.truncate(history, keep)
            strategy = "truncate"
        if not getattr(self.npc, "pk", None):
            return
        # Messages added while the summary was made (none: ticks never overlap) are kept.
        self.ai.set("history", new_history)
        self.ai.set(
            "compaction",
            {
                "pending": False,
                "last_tick": tick_id,
                "removed": removed,
                "strategy": strategy,
                "time": iso_utc(),
            },
        )

    def _fold_history_soon(self) -> None:
        """History no longer fits the request: compact it at the next tick, events or not.

        Only when a compaction would fold a batch worth a model call (at least half as many
        messages as it keeps), so a window too small even for the kept ones does not compact
        on every tick.
        """
        compaction = self.ai.compaction
        worth = max(4, int(conf.get("EVENNIA_AI_COMPACTION_KEEP_RECENT")) // 2)
        if not compaction.get("pending") and len(compaction_batch(self.ai.history)) >= worth:
            self.ai.set("compaction", {**compaction, "pending": True, "reason": "emergency"})

    def _check_history_pressure(self, state: TickState) -> None:
        """Schedule a compaction when history passes its thresholds (never two ticks running)."""
        reason = self._history_reason(state)
        compaction = self.ai.compaction
        if reason and not compaction.get("pending"):
            self.ai.set("compaction", {**compaction, "pending": True, "reason": reason})

    def _history_reason(self, state: TickState) -> str | None:
        """ "sleep"/"emergency" when the history passes its threshold, else None."""
        return self._compaction_due(state.model, state.tick_id)

    def _compaction_due(self, model: str | None, tick_id: int) -> str | None:
        """As :meth:`_history_reason`, for the NPC's ``model`` at tick ``tick_id``."""
        return history_pressure(self.ai, model, tick_id).reason

    def _learn(self, state: TickState, outcome, trace: TickTrace) -> None:
        """Remember a tool sequence that worked, and when the speakers were last seen."""

        if not state.batch:
            return
        event = main_event(state.batch)
        if trace.context_type == "tick_event" and outcome.tool_names and not outcome.failures:
            text = state.batch_text
            self.ai.update(
                "procedures",
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

            self.ai.update("entities", seen)

    def _update_metrics(self, outcome, trace: TickTrace) -> None:
        day = today()
        failed_before = []

        def change(m):
            m["ticks"] = m.get("ticks", 0) + 1
            m.setdefault("session_start", iso_utc())
            calls = trace.tool_calls
            ran = [c for c in calls if c.status in ("ran", "error", "refused")]
            m["total_tool_calls"] = m.get("total_tool_calls", 0) + len(ran)
            ok = sum(1 for c in ran if c.success)
            m["successful_calls"] = m.get("successful_calls", 0) + ok
            m["failed_calls"] = m.get("failed_calls", 0) + len(ran) - ok
            stats = m.setdefault("tool_stats", {})
            for c in ran:
                s = stats.setdefault(c.name, {"calls": 0, "ok": 0})
                s["calls"] += 1
                s["ok"] += 1 if c.success else 0
            _add_usage(m, day, trace.prompt_tokens, trace.completion_tokens, trace.cost)
            stop_counts = m.setdefault("stop_reasons", {})
            stop_counts[trace.stop_reason] = stop_counts.get(trace.stop_reason, 0) + 1
            if trace.stop_reason in (StopReason.ERROR.value, StopReason.CONTRACT_VIOLATION.value):
                count_error(m, trace.error, trace.tick_id)
            else:
                failed_before.append(m.get("consecutive_errors", 0))
                m["consecutive_errors"] = 0
            return m

        self.ai.update("metrics", change)
        self.ai.record_spending(trace.prompt_tokens + trace.completion_tokens, trace.cost, day)
        if failed_before and failed_before[-1] and trace.iterations:
            self._model_recovered(failed_before[-1], trace)

    def _model_recovered(self, failures: int, trace: TickTrace) -> None:
        """Log that the NPC's model answers again after ``failures`` failed ticks in a row."""
        logger.log_info(
            f"{log_prefix(self.npc)}: model {trace.iterations[-1].model or resolve_model()} "
            f"answers again after {failures} failed tick(s)"
        )

    def _after_context(self, context_type: str, outcome) -> None:
        if context_type in SLEEP_PHASES:
            self._advance_sleep(context_type)
        elif context_type == "reflection":
            used_journal = any(
                n in ("add_journal_entry", "review_journal") for n in outcome.tool_names
            )
            tick = self.script.tick_count
            metrics, goals = self.ai.metrics, self.ai.goals
            # what reflection_cont continues from: the journal tools' results, as a transcript
            results = render_text(
                [m for m in outcome.new_messages if m.get("role") == "tool"],
                assistant_name=self.npc.key,
                max_chars=1500,
            )

            def done(state):
                state = reflection_done(state, metrics, goals, tick)
                state["continue"] = bool(used_journal)
                state["requested"] = False
                state["last_result"] = truncate(results, 4000)
                return state

            self.ai.update("reflection", done)
        elif context_type == "reflection_cont":
            self.ai.update("reflection", lambda s: {**s, "continue": False})


# -- helpers shared with commands and tools ------------------------------------------------------
def _sendable_messages(built, kind: str) -> list[dict]:
    """The messages of a ``kind`` request built for a call inside the tick, if it may be sent.

    Raises:
        RuntimeError: The operator's instructions could not be read, or the request breaks its
            contract (the violation is counted); the calling tool fails with the reason.
    """
    if built.blocked:
        raise RuntimeError(built.blocked)
    if built.contract_problems:
        contracts.record_violation(kind, built.contract_problems)
        raise RuntimeError("the request breaks its contract: " + "; ".join(built.contract_problems))
    return built.messages


def _tool_rules(ai) -> list:
    rules, errors = parse_rules(ai.tool_rules or [])
    for error in errors:
        ai.log_error(f"ignoring a stored tool rule: {error}")
    return rules


@dataclass(frozen=True)
class HistoryPressure:
    """How full an NPC's history is against the caps that call for a compaction.

    Attributes:
        model: The model the tokens were counted for.
        window: That model's context window, in tokens.
        measures: ``(what, used, cap)`` for ``tokens`` (cap: the history's share of the
            window), stored ``characters`` (``EVENNIA_AI_HISTORY_MAX_CHARS``) and
            ``messages`` (``EVENNIA_AI_HISTORY_MAX_MESSAGES``).
        reason: ``"sleep"`` or ``"emergency"`` when a compaction is due by one of them (see
            :func:`~evennia_ai.memory.compression.compaction_reason`), else None.
    """

    model: str
    window: int
    measures: tuple[tuple[str, int, int], ...]
    reason: str | None


def history_pressure(ai, model: str | None, tick_id: int) -> HistoryPressure:
    """Where the history of ``ai`` (an NPC's handler) stands at tick ``tick_id`` for ``model``
    (None: the server default): what the tick runner schedules compactions by, and what
    ``aihistory`` shows."""
    history = ai.history
    model = resolve_model(model)
    # The stored history is also capped in messages and characters, caps that drop old
    # ticks unfolded: compaction must come before them, for windows of any size.
    measures = (
        (
            "tokens",
            tokens.TokenCounter(model).count_messages(history),
            tokens.get_model_limits(model).history_tokens,
        ),
        (
            "characters",
            sum(hist.stored_chars(m) for m in history),
            int(conf.get("EVENNIA_AI_HISTORY_MAX_CHARS")),
        ),
        ("messages", len(history), int(conf.get("EVENNIA_AI_HISTORY_MAX_MESSAGES"))),
    )
    options = {
        "asleep": bool(ai.sleep.get("asleep")),
        "tick": tick_id,
        "last_compaction_tick": ai.compaction.get("last_tick"),
        "sleep_ratio": float(conf.get("EVENNIA_AI_COMPACTION_SLEEP_RATIO")),
        "emergency_ratio": float(conf.get("EVENNIA_AI_COMPACTION_EMERGENCY_RATIO")),
    }
    reasons = (compaction_reason(used, cap, **options) for _, used, cap in measures)
    reason = next((r for r in reasons if r), None) if history else None
    return HistoryPressure(model, tokens.get_context_window(model), measures, reason)


def count_error(metrics: dict, error: str | None, tick: int | None) -> None:
    """Count a failed tick in ``metrics``: its error, when and at which tick it happened.

    A later tick that succeeds resets ``consecutive_errors``, which marks the error as past.
    """
    metrics["errors"] = metrics.get("errors", 0) + 1
    metrics["consecutive_errors"] = metrics.get("consecutive_errors", 0) + 1
    metrics["last_error"] = str(error or "")[:500] or "unknown error"
    metrics["last_error_time"] = iso_utc()
    metrics["last_error_tick"] = tick


def _add_usage(metrics: dict, day: str, prompt: int, completion: int, cost: float) -> None:
    """Add one call's (or one tick's) tokens and cost to ``metrics``, in total and for ``day``."""
    metrics["prompt_tokens"] = metrics.get("prompt_tokens", 0) + prompt
    metrics["completion_tokens"] = metrics.get("completion_tokens", 0) + completion
    metrics["cost"] = round(metrics.get("cost", 0.0) + cost, 6)
    daily = metrics.setdefault("daily", {})
    spent = daily.setdefault(day, {"tokens": 0, "cost": 0.0})
    spent["tokens"] += prompt + completion
    spent["cost"] = round(spent["cost"] + cost, 6)
    for old in sorted(daily)[:-31]:
        daily.pop(old, None)


def _pattern_dict(pattern) -> dict:
    return asdict(pattern) if is_dataclass(pattern) else dict(vars(pattern))

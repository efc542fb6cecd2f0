"""One tick of one assistant: the snapshot it reads, and the tick, top to bottom.

:class:`TickRunner` is created by :class:`~evennia_ai.scripts.AssistantScript` for every tick.
:meth:`TickRunner.run` reads top to bottom: the agenda chooses the work
(:mod:`evennia_ai.engine.agenda`), the NPC's state is read once into a :class:`TickState`,
:func:`prepare` builds the request, the tick thinks (assessment, execution pattern, ReAct loop),
the sleep phases do their upkeep (:mod:`evennia_ai.engine.upkeep`), and the bookkeeping writes
what the tick did (:mod:`evennia_ai.engine.bookkeeping`). Every model call of the tick is
counted in its accounts (:mod:`evennia_ai.engine.accounting`), which the budgets check before
each paid call.

An idle decision may carry work of the NPC's routine (:mod:`evennia_ai.engine.routines`: one
exit of a walk to its slot's room), done at once, with no model call, trace or tick counted.

The tick writes nothing on its Script: the agenda's decision (a
:class:`~evennia_ai.engine.agenda.TickDecision`, in :attr:`TickRunner.decision`) says whether
to run again at once and when an autonomous tick was chosen, and the Script keeps those itself.

In a room with several AI NPCs (:mod:`evennia_ai.engine.floor`) the trace notes why each event
woke the NPC and what it heard without being woken since its last trace, and every tick, however
it ends, tells the room's floor it ended, so the other NPCs' talk waits no longer for it.

While the endpoint of the tick's model is unreachable (:mod:`evennia_ai.engine.outages`) a
tick calls it only when it is that endpoint's probe; otherwise it waits: its lines go back to
the queue without counting a failed attempt (their speakers told once), it writes no trace,
and its Script is woken when the endpoint answers again. Every tick's model calls tell the
endpoints' health how they went when it ends.

All model and memory calls happen off the reactor; every state write happens here on the
reactor thread, once per piece of state, after checking the NPC still exists and is where it
was (a late result for a deleted or moved NPC is dropped safely).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, is_dataclass, replace
from typing import Any

from evennia.utils import logger
from twisted.internet import defer, reactor

from evennia_ai import conf
from evennia_ai.engine import audience, floor, outages, routines, scheduler
from evennia_ai.engine.accounting import count_error  # noqa: F401  (re-exported: its old home)
from evennia_ai.engine.accounting import TickAccounts
from evennia_ai.engine.agenda import Agenda, TickDecision
from evennia_ai.engine.assessment import assess_task
from evennia_ai.engine.bookkeeping import Bookkeeper
from evennia_ai.engine.delegate import run_helper
from evennia_ai.engine.react import LoopOutcome, ReactLoop
from evennia_ai.engine.recording import TickRecorder
from evennia_ai.engine.trace import StopReason, TickTrace
from evennia_ai.engine.upkeep import (  # noqa: F401  (re-exported: their old home)
    HistoryPressure,
    Upkeep,
    history_pressure,
)
from evennia_ai.llm import contracts
from evennia_ai.llm.client import get_client
from evennia_ai.memory import events as ev
from evennia_ai.memory.events import Event, event_signal, main_event, render_events
from evennia_ai.npc_state import EVENT_QUEUE, NPCState, SpendingView, npc_state
from evennia_ai.prompt import block_sources  # noqa: F401  (registers the memory-block sources)
from evennia_ai.prompt import longterm_sources  # noqa: F401  (sources)
from evennia_ai.prompt import sources  # noqa: F401  (registers the built-in sources)
from evennia_ai.prompt.builder import ContextBuilder, schema_name
from evennia_ai.prompt.execution_pattern import select_execution_pattern
from evennia_ai.prompt.registry import effective_context_config
from evennia_ai.prompt.snapshot import PromptSnapshot
from evennia_ai.tools import select_tools
from evennia_ai.tools.approvals import get_confirmation_queue
from evennia_ai.tools.base import LoopState, TickServices, ToolContext
from evennia_ai.tools.groups import RequestTools, choose_tools
from evennia_ai.tools.rules import parse_rules
from evennia_ai.utils import iso_utc, log_prefix, truncate
from evennia_ai.workspace.goals import goal_urgency


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
        snapshot: What the request reads of the NPC's state (the sources read it, not
            ``npc.ai``); ``goals``, ``metrics`` and ``execution_config`` are its values.
    """

    tick_id: int
    context_type: str
    batch: list[Event]
    batch_text: str
    config: Any
    model: str | None
    spending: SpendingView
    metrics: dict
    goals: list[dict]
    execution_config: dict
    tools: list
    offered: list
    tool_groups: list[str]
    snapshot: PromptSnapshot
    tool_result: str | None = None

    @property
    def silenced(self) -> bool:
        """Past a daily budget in ``silence`` or ``message`` mode: no model call at all."""
        return self.spending.exceeded and self.spending.action in ("silence", "message")

    @classmethod
    def read(cls, npc, context_type: str, batch: list[Event], tick_id: int) -> "TickState":
        """Read the state of ``npc``'s tick (reads only: nothing is written)."""
        ai_state = npc_state(npc)
        metrics = ai_state.metrics
        spending = ai_state.spending_status(metrics)
        snapshot = PromptSnapshot.read(npc, metrics=metrics)
        model = snapshot.model or None
        if spending.exceeded and spending.action == "offline":
            model = conf.OFFLINE_MODEL
        config = effective_context_config(context_type)
        execution_config = snapshot.execution_config
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
            goals=snapshot.goals,
            execution_config=execution_config,
            tools=tools,
            offered=chosen.offered,
            tool_groups=chosen.groups,
            snapshot=snapshot,
            tool_result=(
                snapshot.reflection.get("last_result", "")
                if context_type == "reflection_cont"
                else None
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
        snapshot=state.snapshot,
    ).build()


class TickRunner:
    """Run one tick for the NPC of ``script``: choose, read, prepare, think, upkeep, write.

    Attributes:
        decision: What the agenda chose (None until :meth:`run` has chosen); the Script acts
            on it when the tick ends.
        state: The tick's snapshot (None until read).
        accounts: The tick's accounts; :attr:`usage` holds every model call of the tick (its
            loop, the assessment, helpers, summaries, memory extraction), from which the
            trace, the metrics and the daily budgets take their figures.
    """

    def __init__(self, script):
        self.script = script
        self.npc = script.obj
        self.npc_state: NPCState = npc_state(self.npc)
        self.location = self.npc.location
        self.decision: TickDecision | None = None
        self.started = time.monotonic()
        # The trace's start is the tick's, so started..ended spans its duration (preparation,
        # memory searches included), not only the model calls.
        self.started_at = iso_utc(precise=True)
        self.accounts = TickAccounts(self.npc)
        self.usage = self.accounts.usage
        self.state: TickState | None = None
        self.recorder = TickRecorder.for_tick(self.npc)  # None unless EVENNIA_AI_RECORD_TICKS
        self.upkeep = Upkeep(self.npc, self.usage, self.budget_reached, self.cancelled, self.client)
        self.books = Bookkeeper(self.npc, self.accounts, self.upkeep)
        self._thinking = None  # the delayed "thinking" line to the speakers, while pending
        self._spent_at_end: tuple | None = None  # (spending, model) once the state is let go

    #: What schedules the "thinking" line (a ``task.Clock`` in tests).
    clock = reactor

    @property
    def batch(self) -> list[Event]:
        """The events this tick answers (empty before the agenda chose, or for other work)."""
        return list(self.decision.batch) if self.decision else []

    @defer.inlineCallbacks
    def run(self):
        """Run the tick. Fires with the TickTrace, or None when there was nothing to do."""
        decision = self.decision = self.choose()
        if decision.idle:
            return self._idle(decision)
        try:
            state = self._read(decision)
            if state.silenced or not outages.BOARD.admits(state.model):  # no model call
                return self._silent_tick(state) if state.silenced else self._waiting_tick(state)
            self._start_thinking(state)
            built = yield prepare(self.npc, state)
            if built.blocked or built.contract_problems:
                return self._unsent_tick_of(state, built)
            yield scheduler.turn()  # the loop starts in the next piece of reactor work
            trace = self._open_trace(state, built)
            outcome = yield self._think(state, built, trace)  # the thinking sign ends with it
            yield self.upkeep.run(state, trace)
            self._close_trace(trace)
            yield scheduler.turn()  # the players get what the tools said before the bookkeeping
            self._write(state, built, outcome, trace)
            return trace
        except Exception:
            self.release_batch()
            raise
        finally:
            self._stop_thinking()
            self._tell_it_ended()
            self.accounts.close()
            self._release_state()

    def _idle(self, decision: TickDecision) -> None:
        """Nothing for the model to do: only the routine's work the agenda chose, if any (one
        exit of a walk), with no model call, no trace and no tick counted."""
        if decision.world is not None:
            routines.act(self.npc, decision.world)

    def _tell_it_ended(self) -> None:
        """Tell the endpoints' health how the tick's model calls went, and the room's floor
        that the tick ended, however it ended (answered, silent, held back, failed): a
        player's line it was woken for no longer holds back the other NPCs' talk
        (:func:`~evennia_ai.engine.floor.tick_ended`). Neither may fail the tick."""
        try:
            outages.BOARD.observe(self.usage.records, self.npc, self.script)
        except Exception:
            logger.log_trace(f"{log_prefix(self.npc)}: could not record the model's health")
        try:
            floor.tick_ended(self.npc, self.batch)
        except Exception:
            logger.log_trace(f"{log_prefix(self.npc)}: could not tell the room the tick ended")

    def _release_state(self) -> None:
        """Let go of the tick's snapshot (copies of the NPC's history, journal, goals...).

        The runner lives in reference cycles (its upkeep and bookkeeper hold its methods) that
        only the garbage collector frees, and a runner alive during a full collection is
        frozen with the survivors (``EVENNIA_AI_GC_FREEZE``): without this, each such tick
        kept its whole snapshot until the next thaw. Late calls still see the tick's spending.
        """
        if self.state is not None:
            self._spent_at_end = (self.state.spending, self.state.model)
            self.state = None
        self.upkeep.release()  # it holds this runner's methods: no cycle left with it

    def _read(self, decision: TickDecision) -> TickState:
        """Read the tick's snapshot (the Script's tick counter advances for this tick)."""
        assert decision.context_type is not None, "an idle decision runs no tick"
        tick_id = self.script.next_tick_id()
        self.state = TickState.read(self.npc, decision.context_type, self.batch, tick_id)
        return self.state

    def choose(self) -> TickDecision:
        """What this tick is to do: the agenda's decision (it writes nothing on the Script)."""
        return Agenda(self.npc, self.script.tick_count, self.script.ndb.last_autonomous).choose()

    def budget_reached(self) -> bool:
        """Whether today's budgets are reached counting this tick's calls so far.

        Every kind of paid call checks it before it is made (the loop's, helpers', goal
        decomposition, assessment, summaries, memory extraction). In ``offline`` mode the tick
        already answers with the offline model, which costs nothing: nothing more to stop.
        """
        state = self.state
        if state is not None:
            return self.accounts.budget_reached(state.spending, state.model)
        if self._spent_at_end is not None:  # a call made after the tick ended
            return self.accounts.budget_reached(*self._spent_at_end)
        return False

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

    def cancelled(self) -> str | None:
        """Why the tick must stop now, if it must (checked around every model call)."""
        npc = self.npc
        if not getattr(npc, "pk", None):
            return "the NPC was deleted"
        if not self.script.pk:
            return "the NPC's script was deleted"
        if self.npc_state.paused or not self.npc_state.enabled:
            return "the NPC was paused"
        if npc.location != self.location:
            return "the NPC moved away"
        return None

    def release_batch(self) -> None:
        """Put the batch back in the queue after a failed tick (counts one attempt)."""

        ids = [e.id for e in self.batch]
        if ids and getattr(self.npc, "pk", None):
            self.npc_state.update(EVENT_QUEUE, lambda q: ev.release(q, ids))

    # -- the steps of run ----------------------------------------------------------------------
    def _start_thinking(self, state: TickState) -> None:
        """Show the speakers a sign the NPC is thinking if no answer came within the delay."""
        delay = conf.get_float("EVENNIA_AI_THINKING_DELAY")
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

    def _open_trace(self, state: TickState, built) -> TickTrace:
        """The trace of the tick about to think (a history the request cut is folded soon)."""
        trace = TickTrace(
            tick_id=state.tick_id,
            context_type=state.context_type,
            started=self.started_at,
            event_ids=[e.id for e in state.batch],
            event_text=truncate(state.batch_text, 2000),
            budget=state.spending.describe() if state.spending.exceeded else None,
            prefix_cache_share=built.prefix_share,
            shrunk=dict(built.shrunk),
            notes=self._trace_notes(state),
            tool_groups=list(state.tool_groups),
        )
        if built.history_cut:
            self.upkeep.fold_history_soon()
        if self.recorder:
            self.recorder.keep_build(state, built)
        return trace

    def _close_trace(self, trace: TickTrace) -> None:
        """Add the calls made since the loop (upkeep's) and the times; save the recording."""
        trace.add_records(self.usage.take_new())
        trace.ended = iso_utc(precise=True)
        trace.duration = round(time.monotonic() - self.started, 4)
        if self.recorder:
            self.recorder.save(trace)

    def _write(self, state: TickState, built, outcome, trace: TickTrace) -> None:
        """Write what the tick did, unless the NPC was deleted meanwhile."""
        if not getattr(self.npc, "pk", None):
            return
        self.npc.ndb.ai_last_request = built.request_key  # the next request's prefix-cache base
        # One piece: the writes only change Attributes in memory and queue their rows, which
        # go to the database together when the turn ends (attribute_writes).
        self.books.write(state, outcome, trace)

    @defer.inlineCallbacks
    def _think(self, state: TickState, built, trace: TickTrace):
        """Assess (when enabled), compose the execution pattern and run the ReAct loop."""
        client = self.client()
        assessment = yield self._assess(client, state, built, trace)
        if self.recorder:
            self.recorder.keep_assessment(assessment)
        pattern = select_execution_pattern(state.execution_config, state.config, assessment)
        trace.pattern = _pattern_dict(pattern)
        # Every allowed tool may be called; the request sends the schemas of those offered
        # (the groups, less any the fitting left out), and request_tools adds more.
        extra = [t for t in state.offered if isinstance(t, RequestTools)]
        tools = [t for t in state.tools + extra if pattern.allows(t)]
        callable_names = {t.name for t in tools}
        schemas = [s for s in built.tool_schemas if schema_name(s) in callable_names]
        outcome = yield self._run_loop(client, state, built, trace, pattern, tools, schemas)
        self._stop_thinking()  # answered (or not): no thinking sign after this
        return outcome

    @defer.inlineCallbacks
    def _assess(self, client, state: TickState, built, trace: TickTrace):
        """The assessment of the execution pattern: the context's signals, and the advice of
        an assessment call when the static limits enable it (within budget)."""
        assessment = {
            "context_signals": {
                "token_pressure": built.token_pressure,
                "recent_errors": int(state.metrics.get("consecutive_errors", 0)),
                "event_class": event_signal(state.batch) if state.batch else None,
                "goal_urgency": goal_urgency(state.goals),
            }
        }
        if (
            state.execution_config.get("task_assessment_enabled")
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
        return assessment

    @defer.inlineCallbacks
    def _run_loop(self, client, state: TickState, built, trace: TickTrace, pattern, tools, schemas):
        """The tool context and the ReAct loop of the tick; fires with its LoopOutcome."""
        main = main_event(state.batch)
        rules = _tool_rules(self.npc_state)
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
            on_first_words=self._stop_thinking,  # a streamed reply began: no thinking sign
            stream_replies=state.execution_config.get("stream_replies") is not False,
            askers=lambda: audience.waiting_speakers(self.npc, state.batch),  # approval line
        )
        try:
            outcome = yield loop.run()
        finally:
            ctx.services.offer_tools = None  # the loop's method: no cycle left with the loop
        trace.add_records(self.usage.take_new())  # helpers' and tools' own model calls
        return outcome

    # -- ticks that call no model --------------------------------------------------------------
    def _waiting_tick(self, state: TickState) -> None:
        """The endpoint of the tick's model is unreachable and this tick is not its probe:
        call nothing. The batch goes back without counting a failed attempt
        (:func:`~evennia_ai.memory.events.hold_back`); whoever spoke a new line to the NPC is
        told once that it cannot answer; the Script is woken when the endpoint answers. No
        trace: a waiting tick did nothing (the NPC's status says why)."""
        if self.decision is not None and self.decision.run_again:
            self.decision = replace(self.decision, run_again=False)  # no tick at once: it waits
        ids = [e.id for e in state.batch]
        if ids:
            self.npc_state.update(EVENT_QUEUE, lambda q: ev.hold_back(q, ids))
            audience.tell_speakers(
                self.npc,
                audience.waiting_speakers(self.npc, [e for e in state.batch if e.first_try]),
                "EVENNIA_AI_UNAVAILABLE_MESSAGE",
            )
        outages.BOARD.waits(state.model, self.npc, self.script)
        return None

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

    def _unsent_tick_of(self, state: TickState, built) -> TickTrace:
        """The request may not be sent: the operator's instructions cannot be read, or it
        breaks its contract."""
        if built.blocked:
            return self._blocked_tick(state, built.blocked)
        return self._contract_tick(state, built.contract_problems)

    def _unsent_tick(self, state: TickState, reason: StopReason, **fields) -> TickTrace:
        """Record a tick that called no model (its trace gets ``fields``)."""
        trace = TickTrace(
            tick_id=state.tick_id,
            context_type=state.context_type,
            started=self.started_at,
            event_ids=[e.id for e in state.batch],
            event_text=truncate(state.batch_text, 2000),
            stop_reason=reason.value,
            notes=self._trace_notes(state),
            **fields,
        )
        trace.ended = iso_utc(precise=True)
        trace.duration = round(time.monotonic() - self.started, 4)
        self.books.write(state, LoopOutcome(stop_reason=reason, trace=trace), trace)
        return trace

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

    # -- what the tick hands its loop ----------------------------------------------------------
    def _trace_notes(self, state: TickState) -> list[str]:
        """What the trace says happened around the tick: why its events woke the NPC, what it
        heard without being woken since its last trace (:mod:`evennia_ai.engine.floor`), the
        floods dropped and what the agenda gave up. Reading them clears the heard lines and
        the floods: each is noted once."""
        return (
            floor.woken_notes(state.batch)
            + floor.heard_notes(self.npc)
            + self._flood_notes()
            + list(self.decision.notes if self.decision else ())
        )

    def _flood_notes(self) -> list[str]:
        """Events dropped since the last tick for passing their speaker's rate (then forgotten)."""
        floods = self.npc.ndb.ai_floods or {}
        self.npc.ndb.ai_floods = {}
        return [
            f"dropped {n} event(s) from {who}: too many in a minute" for who, n in floods.items()
        ]

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


def _tool_rules(state: NPCState) -> list:
    rules, errors = parse_rules(state.tool_rules or [])
    for error in errors:
        state.log_error(f"ignoring a stored tool rule: {error}")
    return rules


def _pattern_dict(pattern) -> dict:
    return asdict(pattern) if is_dataclass(pattern) else dict(vars(pattern))

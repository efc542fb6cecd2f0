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

All model and memory calls happen off the reactor; every state write happens here on the
reactor thread, once per piece of state, after checking the NPC still exists and is where it
was (a late result for a deleted or moved NPC is dropped safely).
"""

from __future__ import annotations

import time
from dataclasses import asdict, is_dataclass

from evennia.utils import logger
from twisted.internet import defer

from evennia_ai import conf
from evennia_ai.engine import scheduler
from evennia_ai.engine.assessment import assess_task
from evennia_ai.engine.delegate import run_helper
from evennia_ai.engine.react import LoopOutcome, ReactLoop, TickLimits
from evennia_ai.engine.trace import IterationTrace, StopReason, TickTrace
from evennia_ai.llm import tokens
from evennia_ai.llm.client import defer_to_thread, get_client
from evennia_ai.memory import compression, entities
from evennia_ai.memory import events as ev
from evennia_ai.memory import history as hist
from evennia_ai.memory import longterm, procedures
from evennia_ai.memory.compression import compaction_reason
from evennia_ai.memory.events import Event, event_signal, main_event, render_events
from evennia_ai.memory.history import render_text
from evennia_ai.prompt import block_sources  # noqa: F401  (registers the memory-block sources)
from evennia_ai.prompt import longterm_sources  # noqa: F401  (sources)
from evennia_ai.prompt import sources  # noqa: F401  (registers the built-in sources)
from evennia_ai.prompt.builder import ContextBuilder
from evennia_ai.prompt.execution_pattern import select_execution_pattern
from evennia_ai.prompt_registry import effective_context_config
from evennia_ai.tools import select_tools
from evennia_ai.tools.approvals import get_confirmation_queue
from evennia_ai.tools.base import ToolContext
from evennia_ai.tools.rules import parse_rules
from evennia_ai.utils import iso_utc, parse_iso, today, truncate, utcnow
from evennia_ai.workspace.goals import goal_urgency
from evennia_ai.workspace.journal import entries_since, importance_since
from evennia_ai.workspace.sleep import SLEEP_PHASES, go_to_sleep, in_sleep_window, wake_up


class TickRunner:
    """Run one tick for the NPC of ``script``."""

    def __init__(self, script):
        self.script = script
        self.npc = script.obj
        self.ai = self.npc.ai
        self.location = self.npc.location
        self.batch: list = []
        self.started = time.monotonic()

    # -- decisions -----------------------------------------------------------------------------
    def _choose(self) -> tuple[str | None, list]:
        """Pick the context type of this tick and the events it answers."""

        sleep = self.ai.get("sleep")
        queue = self.ai.get("event_queue")
        pending = ev.pending_events(queue)

        if sleep.get("asleep"):
            if self._should_wake(sleep, pending):
                self.wake("addressed" if pending else "window ended")
            else:
                phase = sleep.get("phase")
                if phase in SLEEP_PHASES:
                    return phase, []
                return None, []
        elif in_sleep_window(conf.get("EVENNIA_AI_SLEEP_SCHEDULE")) and not sleep.get(
            "woken_in_window"
        ):
            self.go_to_sleep("scheduled")
            return SLEEP_PHASES[0], []

        compaction = self.ai.get("compaction") or {}
        if compaction.get("pending") and not pending:
            return "pre_compaction", []

        if pending:
            queue, batch = ev.take_batch(queue)
            if batch:
                self.ai.set("event_queue", queue)
                return "tick_event", batch

        reflection = self.ai.get("reflection")
        if reflection.get("continue"):
            return "reflection_cont", []
        if self._reflection_due(reflection):
            return "reflection", []

        if self._autonomy_due():
            return "tick_autonomous", []
        return None, []

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

    def _reflection_due(self, reflection: dict) -> bool:
        if reflection.get("requested"):  # an operator asked (aisleep/reflect)
            return True
        interval = int(conf.get("EVENNIA_AI_REFLECTION_INTERVAL") or 0)
        ticks = self.script.tick_count
        if interval and ticks - int(reflection.get("last_tick") or 0) >= interval:
            return True
        threshold = int(conf.get("EVENNIA_AI_REFLECTION_IMPORTANCE_THRESHOLD") or 0)
        if threshold:
            since = reflection.get("last_time") or ""
            return importance_since(self.ai.get("journal"), since) >= threshold
        return False

    def _autonomy_due(self) -> bool:
        if not conf.get("EVENNIA_AI_AUTONOMY"):
            return False
        if not any(g.get("status") == "active" for g in self.ai.goals):
            return False
        last = self.script.ndb.last_autonomous or 0
        if time.time() - last < float(conf.get("EVENNIA_AI_AUTONOMOUS_MIN_INTERVAL")):
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
        context_type, batch_dicts = self._choose()
        if context_type is None:
            return None

        self.batch = [Event.from_dict(e) if isinstance(e, dict) else e for e in batch_dicts]
        try:
            trace = yield self._run(context_type, batch_dicts)
        except Exception:
            self.release_batch()
            raise
        return trace

    def release_batch(self) -> None:
        """Put the batch back in the queue after a failed tick (counts one attempt)."""

        ids = [e.id for e in self.batch]
        if ids and getattr(self.npc, "pk", None):
            self.ai.update("event_queue", lambda q: ev.release(q, ids))

    @defer.inlineCallbacks
    def _run(self, context_type, batch_dicts):
        tick_id = self.script.next_tick_id()
        config = effective_context_config(context_type)
        model = self.ai.model or None
        client = get_client()
        over_budget = self.ai.spending_status()
        if over_budget.exceeded:
            if over_budget.action == "silence":
                return self._silent_tick(tick_id, context_type, over_budget)
            model = conf.OFFLINE_MODEL

        tools = select_tools(self.npc, config)
        builder = ContextBuilder(
            self.npc,
            config,
            batch=self.batch,
            tools=tools,
            model=model,
            tool_result=self._tool_result_for(context_type),
        )
        built = yield builder.build()

        metrics = self.ai.get("metrics")
        signals = {
            "token_pressure": built.token_pressure,
            "recent_errors": int(metrics.get("consecutive_errors", 0)),
            "event_class": event_signal(self.batch) if self.batch else None,
            "goal_urgency": goal_urgency(self.ai.goals),
        }
        assessment = {"context_signals": signals}
        trace = TickTrace(
            tick_id=tick_id,
            context_type=context_type,
            event_ids=[e.id for e in self.batch],
            event_text=truncate(built.values.get("pending_event", ""), 2000),
        )
        if over_budget.exceeded:
            trace.budget = over_budget.describe()
        static = self.ai.execution_config
        if static.get("task_assessment_enabled") and context_type in (
            "tick_event",
            "tick_autonomous",
        ):
            advice, result = yield assess_task(client, built.messages, model=model)
            assessment.update(advice)
            _trace_call(trace, result, kind="assessment")
        pattern = select_execution_pattern(static, config, assessment)
        trace.pattern = _pattern_dict(pattern)
        trace.prefix_cache_share = built.prefix_share
        trace.shrunk = dict(built.shrunk)
        tools = [t for t in tools if pattern.allows_category(t.category)]

        ev_main = main_event(self.batch)
        ctx = ToolContext(
            npc=self.npc,
            script=self.script,
            tick_id=tick_id,
            context_type=context_type,
            event=ev_main.to_dict() if ev_main else None,
        )
        ctx.services["client"] = client
        ctx.services["model"] = model
        ctx.services["context_config"] = effective_context_config
        ctx.services["run_helper"] = run_helper
        ctx.services["tools"] = tools
        ctx.services["pattern"] = pattern
        ctx.state["depth"] = 0
        ctx.state["metrics"] = metrics
        ctx.state["window"] = built.window
        ctx.state["request_tokens"] = built.total_tokens

        counter = _request_counter(built, model)
        loop = ReactLoop(
            client=client,
            tools=tools,
            pattern=pattern,
            ctx=ctx,
            trace=trace,
            rules=_tool_rules(self.ai),
            model=model,
            limits=TickLimits(max_tokens=config.token_budget),
            is_cancelled=self.cancelled,
            on_dangerous=self._queue_confirmation,
            count_tokens=counter,
            sections=built.sections,
        )
        outcome = yield loop.run(built.messages)
        if context_type == "sleep_consolidate" and not self.cancelled():
            yield self._consolidate(model, trace)
        if context_type == "pre_compaction" and not self.cancelled():
            if (self.ai.get("compaction") or {}).get("pending") or self._history_reason(tick_id):
                yield self._compact(client, model, tick_id)
        trace.ended = iso_utc(precise=True)
        trace.duration = round(time.monotonic() - self.started, 4)
        # What the tools said is queued for the players' sessions; let the reactor send it
        # before this tick's bookkeeping (history, traces, metrics) takes its turn.
        yield scheduler.turn()
        if not getattr(self.npc, "pk", None):
            return trace
        self._finish(outcome, trace, built)
        return trace

    def _silent_tick(self, tick_id: int, context_type: str, over_budget) -> TickTrace:
        """Past the daily budget in ``silence`` mode: consume the batch unanswered, call no model."""

        trace = TickTrace(
            tick_id=tick_id,
            context_type=context_type,
            event_ids=[e.id for e in self.batch],
            event_text=truncate(render_events(self.batch), 2000) if self.batch else "",
            stop_reason=StopReason.BUDGET.value,
            budget=over_budget.describe(),
        )
        trace.ended = iso_utc(precise=True)
        trace.duration = round(time.monotonic() - self.started, 4)
        self._finish(LoopOutcome(stop_reason=StopReason.BUDGET, trace=trace), trace, None)
        return trace

    def _tool_result_for(self, context_type: str):
        if context_type == "reflection_cont":
            return self.ai.get("reflection").get("last_result", "")
        return None

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
            tick_id=ctx.tick_id,
        )

    # -- writing the results -------------------------------------------------------------------
    def _finish(self, outcome, trace: TickTrace, built) -> None:
        npc = self.npc
        if not getattr(npc, "pk", None):
            logger.log_info("evennia_ai: tick result dropped: the NPC was deleted")
            return
        ids = [e.id for e in self.batch]
        provider_failed = outcome.stop_reason == StopReason.ERROR and any(
            it.error for it in trace.iterations
        )
        if ids:
            if outcome.stop_reason == StopReason.CANCELLED:
                self.ai.update("event_queue", lambda q: ev.release(q, ids, count_attempt=False))
            elif provider_failed:
                self.ai.update("event_queue", lambda q: ev.release(q, ids))
            else:
                self.ai.update("event_queue", lambda q: ev.ack(q, ids))

        if outcome.new_messages and outcome.stop_reason != StopReason.CANCELLED:
            event_text = render_events(self.batch) if self.batch else f"[{trace.context_type}]"
            tick_messages = [{"role": "user", "content": event_text}] + outcome.new_messages
            max_messages = int(conf.get("EVENNIA_AI_HISTORY_MAX_MESSAGES"))
            self.ai.update(
                "history", lambda h: hist.append_tick(h, trace.tick_id, tick_messages, max_messages)
            )

        self._learn(outcome, trace)
        self.ai.record_trace(trace.to_dict())
        self._update_metrics(outcome, trace)
        self._after_context(trace.context_type, outcome)
        self._check_history_pressure(trace.tick_id)

    @defer.inlineCallbacks
    def _consolidate(self, model, trace: TickTrace):
        """Sleep: journal entries and recent history since the last sleep go to long-term memory."""

        sleep = self.ai.get("sleep")
        since = sleep.get("last_consolidated") or ""
        texts: list = list(
            entries_since(self.ai.get("journal"), since) if since else self.ai.get("journal")
        )
        recent = render_text(self.ai.get("history")[-40:], assistant_name=self.npc.key)
        if recent:
            texts.append(
                {"content": f"Recent conversation:\n{recent[:4000]}", "source": "observed"}
            )
        if not texts:
            return
        try:
            result = yield longterm.consolidate(self.npc.dbref, texts, model=model)
        except Exception as err:
            logger.log_err(f"evennia_ai: consolidating memory failed: {err}")
            return
        usage = getattr(result, "usage", None) or {}
        trace.prompt_tokens += int(usage.get("prompt_tokens", 0) or 0)
        trace.completion_tokens += int(usage.get("completion_tokens", 0) or 0)
        trace.cost += float(usage.get("cost", 0.0) or 0.0)
        if getattr(self.npc, "pk", None):
            self.ai.update("sleep", lambda s: {**s, "last_consolidated": iso_utc()})

    @defer.inlineCallbacks
    def _compact(self, client, model, tick_id: int):
        """Compress old history batches (truncate or summarise in a thread); one write."""

        keep = int(conf.get("EVENNIA_AI_COMPACTION_KEEP_RECENT"))
        history = self.ai.get("history")
        summary_model = conf.get("EVENNIA_AI_SUMMARY_MODEL") or model
        resolved = client.resolve_model(summary_model)
        if (
            conf.get("EVENNIA_AI_COMPACTION_STRATEGY") == "summarize"
            and resolved != conf.OFFLINE_MODEL
        ):
            chunk_chars = max(2000, (tokens.get_context_window(resolved) - 1500) * 3)

            def summarize(text: str) -> str:
                result = client.complete_sync(
                    [
                        {
                            "role": "system",
                            "content": "Summarise this part of a character's conversation "
                            "log in a few short factual lines: who said or did what, and anything promised.",
                        },
                        {"role": "user", "content": text},
                    ],
                    model=summary_model,
                )
                if result.error:
                    raise RuntimeError(result.error)
                return (result.text or "").strip()

            try:
                new_history, removed = yield defer_to_thread(
                    compression.summarized_history,
                    history,
                    summarize,
                    keep_recent=keep,
                    chunk_chars=chunk_chars,
                )
            except Exception as err:
                logger.log_err(f"evennia_ai: summarising history failed ({err}); truncating")
                new_history, removed = compression.truncate(history, keep)
        else:
            new_history, removed = compression.truncate(history, keep)
        if not getattr(self.npc, "pk", None):
            return
        # Messages added while the summary was made (none: ticks never overlap) are kept.
        self.ai.set("history", new_history)
        self.ai.set(
            "compaction",
            {"pending": False, "last_tick": tick_id, "removed": removed, "time": iso_utc()},
        )

    def _check_history_pressure(self, tick_id: int) -> None:
        """Schedule a compaction when history passes its thresholds (never two ticks running)."""
        reason = self._history_reason(tick_id)
        state = self.ai.get("compaction") or {}
        if reason and not state.get("pending"):
            self.ai.set("compaction", {**state, "pending": True, "reason": reason})

    def _history_reason(self, tick_id: int) -> str | None:
        """ "sleep"/"emergency" when the history passes its threshold, else None."""

        history = self.ai.get("history")
        if not history:
            return None
        counter = tokens.TokenCounter(self.ai.model or conf.get("EVENNIA_AI_MODEL"))
        used = counter.count_messages(history)
        budget = tokens.get_model_limits(
            self.ai.model or conf.get("EVENNIA_AI_MODEL")
        ).history_tokens
        state = self.ai.get("compaction") or {}
        return compaction_reason(
            used,
            budget,
            asleep=bool(self.ai.get("sleep").get("asleep")),
            tick=tick_id,
            last_compaction_tick=state.get("last_tick"),
            sleep_ratio=float(conf.get("EVENNIA_AI_COMPACTION_SLEEP_RATIO")),
            emergency_ratio=float(conf.get("EVENNIA_AI_COMPACTION_EMERGENCY_RATIO")),
        )

    def _learn(self, outcome, trace: TickTrace) -> None:
        """Remember a tool sequence that worked, and when the speakers were last seen."""

        if not self.batch:
            return
        event = main_event(self.batch)
        if trace.context_type == "tick_event" and outcome.tool_names and not outcome.failures:
            text = render_events(self.batch)
            self.ai.update(
                "procedures",
                lambda p: procedures.record(
                    p, event.event_class, text, outcome.tool_names, trace.started
                ),
            )
        speakers = {(e.source, e.source_name) for e in self.batch if e.source}
        if speakers:

            def seen(profiles):
                for dbref, name in speakers:
                    profiles = entities.touch(profiles, dbref, name or dbref)
                return profiles

            self.ai.update("entities", seen)

    def _update_metrics(self, outcome, trace: TickTrace) -> None:
        day = today()

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
            m["prompt_tokens"] = m.get("prompt_tokens", 0) + trace.prompt_tokens
            m["completion_tokens"] = m.get("completion_tokens", 0) + trace.completion_tokens
            m["cost"] = round(m.get("cost", 0.0) + trace.cost, 6)
            daily = m.setdefault("daily", {})
            spent = daily.setdefault(day, {"tokens": 0, "cost": 0.0})
            spent["tokens"] += trace.prompt_tokens + trace.completion_tokens
            spent["cost"] = round(spent["cost"] + trace.cost, 6)
            for old in sorted(daily)[:-31]:
                daily.pop(old, None)
            stop_counts = m.setdefault("stop_reasons", {})
            stop_counts[trace.stop_reason] = stop_counts.get(trace.stop_reason, 0) + 1
            if trace.stop_reason == StopReason.ERROR.value:
                m["errors"] = m.get("errors", 0) + 1
                m["consecutive_errors"] = m.get("consecutive_errors", 0) + 1
                m["last_error"] = trace.error
            else:
                m["consecutive_errors"] = 0
            return m

        self.ai.update("metrics", change)
        self.ai.record_spending(trace.prompt_tokens + trace.completion_tokens, trace.cost, day)

    def _after_context(self, context_type: str, outcome) -> None:
        if context_type in SLEEP_PHASES:
            self._advance_sleep(context_type)
        elif context_type == "reflection":
            used_journal = any(
                n in ("add_journal_entry", "review_journal") for n in outcome.tool_names
            )
            tick = self.script.tick_count

            def done(state):
                state.update(last_tick=tick, last_time=iso_utc(), count=state.get("count", 0) + 1)
                state["continue"] = bool(used_journal)
                state["requested"] = False
                state["last_result"] = truncate(outcome.final_text or "", 2000)
                return state

            self.ai.update("reflection", done)
        elif context_type == "reflection_cont":
            self.ai.update("reflection", lambda s: {**s, "continue": False})


# -- helpers shared with commands and tools ------------------------------------------------------
def _tool_rules(ai) -> list:
    rules, errors = parse_rules(ai.get("tool_rules") or [])
    for error in errors:
        ai.log_error(f"ignoring a stored tool rule: {error}")
    return rules


def _request_counter(built, model):
    counter = tokens.TokenCounter(
        model or built.values.get("model") or conf.get("EVENNIA_AI_MODEL") or conf.OFFLINE_MODEL
    )

    def count(messages, schemas):
        return counter.count_messages(messages) + (counter.count_tools(schemas) if schemas else 0)

    return count


def _pattern_dict(pattern) -> dict:
    return asdict(pattern) if is_dataclass(pattern) else dict(vars(pattern))


def _trace_call(trace: TickTrace, result, kind: str) -> None:
    if result is None:
        return
    usage = getattr(result, "usage", None)
    trace.add_iteration(
        IterationTrace(
            index=-1,
            kind=kind,
            usage={
                "prompt_tokens": int(getattr(usage, "prompt_tokens", 0) or 0),
                "completion_tokens": int(getattr(usage, "completion_tokens", 0) or 0),
            },
            cost=getattr(result, "cost", None),
            latency=getattr(result, "latency", 0.0),
            model=getattr(result, "model", ""),
            text=truncate(result.text or "", 1000),
            error=result.error,
        )
    )

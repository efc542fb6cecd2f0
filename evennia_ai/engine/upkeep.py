"""The NPC's upkeep: sleep phases, memory consolidation, history compaction, history pressure.

Upkeep is the work of a tick that is not an answer:

- **Sleep phases** (``sleep_consolidate``, then ``pre_compaction``) run once each per sleep;
  :func:`advance_sleep` moves to the next one, and a phase with nothing to do is skipped
  (:func:`consolidation_material`, :func:`compaction_wanted`).
- **Consolidation**: the journal entries and conversation since the last sleep go to long-term
  memory (:meth:`Upkeep.consolidate`), at most ``EVENNIA_AI_CONSOLIDATIONS_PER_DAY`` times a
  real (UTC) day (:func:`consolidation_allowed`): a routine in fast game time sleeps many times
  a real day, and its later sleeps only rest; the next allowed one takes everything since.
- **Compaction**: old history batches are truncated or summarised in a thread
  (``EVENNIA_AI_COMPACTION_STRATEGY``), one write (:meth:`Upkeep.compact`).
- **History pressure**: how full the history is against its caps (:func:`history_pressure`,
  shared with ``aihistory``); past a threshold a compaction is scheduled for a following tick
  (:meth:`Upkeep.check_history_pressure`), and at once when the history no longer fits the
  request (:meth:`Upkeep.fold_history_soon`).

Model and memory calls run off the reactor; the writes happen on it, once per piece of state,
after checking the NPC still exists.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from evennia.utils import logger
from twisted.internet import defer

from evennia_ai import conf
from evennia_ai.engine.trace import TickTrace
from evennia_ai.llm import tokens
from evennia_ai.llm.client import defer_to_thread
from evennia_ai.llm.contracts import render_task
from evennia_ai.llm.models import resolve_model
from evennia_ai.llm.usage import UsageAccountant
from evennia_ai.memory import compression, gate
from evennia_ai.memory import history as hist
from evennia_ai.memory import longterm
from evennia_ai.memory.compression import compaction_reason
from evennia_ai.memory.history import render_text
from evennia_ai.npc_state import COMPACTION, HISTORY, SLEEP, NPCState, npc_state
from evennia_ai.prompt.tasks import compaction_batch
from evennia_ai.utils import iso_utc, log_prefix, one_line, parse_iso, today
from evennia_ai.wording import SLEEP_INSTRUCTION, SUMMARY_INSTRUCTION, SUMMARY_SYSTEM
from evennia_ai.workspace.journal import entries_since
from evennia_ai.workspace.sleep import SLEEP_PHASES


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


def history_pressure(state: NPCState, model: str | None, tick_id: int) -> HistoryPressure:
    """Where the history of an NPC (its ``state``) stands at tick ``tick_id`` for ``model``
    (None: the server default): what the tick schedules compactions by, and what
    ``aihistory`` shows."""
    history = state.history
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
            conf.get_int("EVENNIA_AI_HISTORY_MAX_CHARS"),
        ),
        ("messages", len(history), conf.get_int("EVENNIA_AI_HISTORY_MAX_MESSAGES")),
    )
    asleep = bool(state.sleep.get("asleep"))
    last_tick = state.compaction.get("last_tick")  # None before the first compaction
    sleep_ratio = conf.get_float("EVENNIA_AI_COMPACTION_SLEEP_RATIO")
    emergency_ratio = conf.get_float("EVENNIA_AI_COMPACTION_EMERGENCY_RATIO")
    reasons = (
        compaction_reason(
            used,
            cap,
            asleep=asleep,
            tick=tick_id,
            last_compaction_tick=last_tick if isinstance(last_tick, int) else None,
            sleep_ratio=sleep_ratio,
            emergency_ratio=emergency_ratio,
        )
        for _, used, cap in measures
    )
    reason = next((r for r in reasons if r), None) if history else None
    return HistoryPressure(model, tokens.get_context_window(model), measures, reason)


# -- sleep phases (what the agenda asks before it runs one) --------------------------------------
def advance_sleep(state: NPCState, context_type: str) -> None:
    """Move the sleep of an NPC (its ``state``) past the phase ``context_type`` (one write;
    nothing for a context type that is not a sleep phase)."""
    if context_type not in SLEEP_PHASES:
        return

    def advance(sleep):
        index = SLEEP_PHASES.index(context_type)
        sleep["phase"] = SLEEP_PHASES[index + 1] if index + 1 < len(SLEEP_PHASES) else "rest"
        return sleep

    state.update(SLEEP, advance)


def consolidation_material(state: NPCState, sleep: dict) -> bool:
    """Whether anything happened since the last consolidation (journal or conversation)."""
    since = parse_iso(sleep.get("last_consolidated") or "")
    if since is None:
        return bool(state.journal or state.history)
    if entries_since(state.journal, sleep.get("last_consolidated")):
        return True
    return any((parse_iso(m.get("ts") or "") or since) > since for m in state.history)


#: The reason of a sleep staff asked for (``aisleep/now``).
OPERATOR_SLEEP = "operator"


def consolidations_today(sleep: dict) -> int:
    """How many consolidations ran on today's real (UTC) day, by the ``sleep`` state."""
    done = sleep.get("consolidated")
    if not isinstance(done, dict) or done.get("day") != today():
        return 0
    count = done.get("count")
    return count if isinstance(count, int) and count > 0 else 0


def consolidation_allowed(sleep: dict) -> bool:
    """Whether another consolidation may run today (``EVENNIA_AI_CONSOLIDATIONS_PER_DAY``;
    None: always). A sleep staff asked for (``aisleep/now``, reason ``operator``) always
    consolidates: the cap is for the sleeps of routines, schedules and the model's own tool."""
    if sleep.get("reason") == OPERATOR_SLEEP:
        return True
    limit = conf.get_optional_int("EVENNIA_AI_CONSOLIDATIONS_PER_DAY")
    return limit is None or consolidations_today(sleep) < limit


def counted_consolidation(sleep: dict) -> dict:
    """``sleep`` after a consolidation that succeeded now: its time stamped and today's count
    one higher."""
    return {
        **sleep,
        "last_consolidated": iso_utc(),
        "consolidated": {"day": today(), "count": consolidations_today(sleep) + 1},
    }


def compaction_wanted(state: NPCState, tick_id: int) -> bool:
    """Whether a compaction is pending or due now (the pre-compaction phase's reason)."""
    if state.compaction.get("pending"):
        return True
    return history_pressure(state, state.model or None, tick_id).reason is not None


def _ended_budget() -> bool:
    return True


def _ended() -> str:
    return "the tick has ended"


def _no_client():
    raise RuntimeError("the tick has ended: its model client is no longer lent")


class Upkeep:
    """The upkeep of one tick of ``npc``: its sleep phases' work and its history's pressure.

    Args:
        npc: The assistant.
        usage: The tick's accountant (summaries and memory extraction are recorded in it).
        budget_reached: ``() -> bool``: whether today's budgets are reached, counting the
            tick's calls so far (no paid summary or extraction then).
        cancelled: ``() -> str | None``: why the tick must stop now, if it must.
        client: ``() -> client``: the LLM client of the tick's calls.
    """

    def __init__(
        self,
        npc,
        usage: UsageAccountant,
        budget_reached: Callable[[], bool],
        cancelled: Callable[[], str | None],
        client: Callable,
    ) -> None:
        self.npc = npc
        self.npc_state: NPCState = npc_state(npc)
        self.usage = usage
        self.budget_reached = budget_reached
        self.cancelled = cancelled
        self.client = client

    def release(self) -> None:
        """Let go of the tick's callables: call it when the tick has ended.

        They are the tick runner's own methods, and the runner holds this upkeep: a reference
        cycle, which only the garbage collector frees, and which a full collection during the
        tick froze for good with ``EVENNIA_AI_GC_FREEZE`` (each such runner and all it held
        stayed in the server's memory, ``python -m bench memory_rss``). Anything that asks
        afterwards is told the tick has ended: the budget counts as reached (no new paid call),
        the tick as cancelled, and there is no client.
        """
        self.budget_reached = _ended_budget
        self.cancelled = _ended
        self.client = _no_client

    @defer.inlineCallbacks
    def run(self, state, trace: TickTrace):
        """The sleep phases' own work after the tick's loop: memory consolidation, history
        compaction (``state``: the tick's TickState)."""
        if self.cancelled():
            return
        if state.context_type == "sleep_consolidate":
            yield self.consolidate(state.model)
        elif state.context_type == "pre_compaction":
            if self.npc_state.compaction.get("pending") or self.compaction_due(
                state.model, state.tick_id
            ):
                yield self.compact(self.client(), state.model, state.tick_id, trace)

    def compaction_due(self, model: str | None, tick_id: int) -> str | None:
        """``"sleep"``/``"emergency"`` when the history passes its threshold for ``model`` at
        tick ``tick_id``, else None."""
        return history_pressure(self.npc_state, model, tick_id).reason

    def check_history_pressure(self, state) -> None:
        """Schedule a compaction when history passes its thresholds (never two ticks running)."""
        reason = self.compaction_due(state.model, state.tick_id)
        compaction = self.npc_state.compaction
        if reason and not compaction.get("pending"):
            self.npc_state.set(COMPACTION, {**compaction, "pending": True, "reason": reason})

    def fold_history_soon(self) -> None:
        """History no longer fits the request: compact it at the next tick, events or not.

        Only when a compaction would fold a batch worth a model call (at least half as many
        messages as it keeps), so a window too small even for the kept ones does not compact
        on every tick.
        """
        compaction = self.npc_state.compaction
        worth = max(4, conf.get_int("EVENNIA_AI_COMPACTION_KEEP_RECENT") // 2)
        if not compaction.get("pending") and len(compaction_batch(self.npc_state.history)) >= worth:
            self.npc_state.set(COMPACTION, {**compaction, "pending": True, "reason": "emergency"})

    @defer.inlineCallbacks
    def consolidate(self, model):
        """Sleep: journal entries and recent history since the last sleep go to long-term memory."""

        since = self.npc_state.sleep.get("last_consolidated") or ""
        journal = self.npc_state.journal
        texts: list = list(entries_since(journal, since) if since else journal)
        recent = render_text(self.npc_state.history[-40:], assistant_name=self.npc.key)
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
            self.npc_state.update(SLEEP, counted_consolidation)

    @defer.inlineCallbacks
    def compact(self, client, model, tick_id: int, trace: TickTrace):
        """Compress old history batches (truncate or summarise in a thread); one write."""

        keep = conf.get_int("EVENNIA_AI_COMPACTION_KEEP_RECENT")
        history = self.npc_state.history
        summary_model = conf.get("EVENNIA_AI_SUMMARY_MODEL") or model
        resolved = client.resolve_model(summary_model)
        if (
            conf.get("EVENNIA_AI_COMPACTION_STRATEGY") == "summarize"
            and resolved != conf.OFFLINE_MODEL
            and model != conf.OFFLINE_MODEL  # past a daily budget: no paid summary model either
            and not self.budget_reached()
        ):
            chunk_chars = max(2000, (tokens.get_context_window(resolved) - 1500) * 3)
            strategy = "summarize"
            try:
                new_history, removed = yield self._summarized(
                    client, summary_model, history, keep, chunk_chars
                )
            except Exception as err:
                self._summary_failed(err, tick_id, trace)
                return
        else:
            new_history, removed = compression.truncate(history, keep)
            strategy = "truncate"
        if not getattr(self.npc, "pk", None):
            return
        # Batches written while the summary was made are kept: ticks never overlap, but the
        # lines an NPC hears are written to its history whenever they would otherwise leave its
        # context buffer (:meth:`evennia_ai.npc.handler.AIHandler.hear`).
        read = {batch for batch, _run in hist.batches(history)}
        added = [
            message
            for batch, run in hist.batches(self.npc_state.history)
            if batch not in read
            for message in run
        ]
        self.npc_state.set(HISTORY, new_history + added)
        self.npc_state.set(
            COMPACTION,
            {
                "pending": False,
                "last_tick": tick_id,
                "removed": removed,
                "strategy": strategy,
                "time": iso_utc(),
            },
        )

    def _summarized(self, client, summary_model, history: list, keep: int, chunk_chars: int):
        """A Deferred of ``(history, removed)``: the old batches summarised in a thread by
        ``summary_model``, in chunks of ``chunk_chars``, the newest ``keep`` left as they are."""

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

        return defer_to_thread(
            compression.summarized_history,
            history,
            summarize,
            keep_recent=keep,
            chunk_chars=chunk_chars,
        )

    def _summary_failed(self, err: Exception, tick_id: int, trace: TickTrace) -> None:
        """Nothing is erased on a failed summary: the history stays as it was, the error is in
        the trace, and compaction is tried again when it is next due."""
        error = f"summarising history failed ({one_line(err, 300)}); history left as it was"
        logger.log_err(f"{log_prefix(self.npc)}: {error}")
        trace.error = error
        if getattr(self.npc, "pk", None):
            self.npc_state.set(
                COMPACTION,
                {"pending": False, "last_tick": tick_id, "error": error, "time": iso_utc()},
            )

"""What a tick spends and counts, in one place: the daily standing, the budget check, the metrics.

Every model call of a tick is one :class:`~evennia_ai.llm.usage.UsageRecord` in the tick's
:class:`~evennia_ai.llm.usage.UsageAccountant`. This module turns those figures into what the
NPC keeps and what stops it:

- :class:`SpendingStatus`: where an assistant stands against its daily budgets (computed by
  :func:`evennia_ai.npc.spending.check`, which sums every assistant's usage, and read once
  per tick into the tick's snapshot).
- :class:`Spent`: tokens and cost of one call or one tick, typed (no loose numbers).
- :class:`SpendLimits`: a cap in tokens and cost, and whether spending so far stays within it.
- :class:`TickAccounts`: a tick's accountant, its budget check (made before every paid call of
  the tick), the tick's counters written to the NPC's metrics once, and the calls that finish
  after their tick (counted when they arrive, by :class:`LateUsage`).
- :func:`add_usage`, :func:`count_error`, :func:`count_tick`, :func:`usage_on`: the pure
  edits and reads of the NPC's ``metrics`` (the ``daily`` map the budgets read is written
  only here).

Example:
    accounts = TickAccounts(npc)
    accounts.usage.record_result(result, "act")
    if accounts.budget_reached(state.spending, state.model):
        ...  # make no more paid calls this tick
    accounts.record_tick(trace)  # metrics, daily usage, the server's running figure
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from evennia.utils import logger
from twisted.internet import reactor

from evennia_ai import conf
from evennia_ai.engine import outages
from evennia_ai.engine.trace import StopReason, TickTrace
from evennia_ai.llm.models import resolve_model
from evennia_ai.llm.usage import UsageAccountant, UsageRecord
from evennia_ai.npc_state import METRICS, SpendingView, SpentView, npc_state
from evennia_ai.utils import iso_utc, log_prefix, today

#: What an assistant may do past a daily budget (``EVENNIA_AI_BUDGET_EXCEEDED_ACTION``).
ACTIONS = ("offline", "silence", "message")
#: What each action does, for status lines.
ACTION_MODES = {
    "offline": "answering with the offline model",
    "silence": "silent",
    "message": "telling speakers it cannot answer",
}
#: The scope of a :class:`SpendingStatus` whose NPC is held (see ``SpendingStatus.held``).
HELD = "held"
#: How many days of daily usage the metrics keep.
DAYS_KEPT = 31


def over(used: float, limit: float | None) -> bool:
    """Whether ``used`` reaches ``limit`` (None: no limit)."""
    return limit is not None and used >= limit


@dataclass(frozen=True)
class Spent:
    """Tokens and cost (USD) of one model call or of one tick.

    Attributes:
        prompt_tokens / completion_tokens: As the provider reported them (estimated offline).
        cost: USD, 0.0 when unknown.
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0

    @property
    def tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    @classmethod
    def of_record(cls, record: UsageRecord) -> "Spent":
        """What one recorded model call spent."""
        return cls(record.prompt_tokens, record.completion_tokens, record.cost)

    @classmethod
    def of_trace(cls, trace: TickTrace) -> "Spent":
        """What a tick spent, as its trace adds it up (every call of the tick)."""
        return cls(trace.prompt_tokens, trace.completion_tokens, trace.cost)


@dataclass(frozen=True)
class SpendLimits:
    """A cap on what one piece of work (a tick, a helper) may spend; None means no limit.

    Attributes:
        max_tokens: Prompt plus completion tokens it may use in total.
        max_cost: USD it may spend (only enforced where litellm knows the cost).
    """

    max_tokens: int | None = None
    max_cost: float | None = None

    def allows(self, tokens: int, cost: float, request_tokens: int = 0) -> bool:
        """Whether, having used ``tokens`` and ``cost``, a request of ``request_tokens`` more
        prompt tokens stays within the limits."""
        if self.max_tokens is not None and tokens + request_tokens > self.max_tokens:
            return False
        return not over(cost, self.max_cost)


@dataclass(frozen=True)
class SpendingStatus:
    """Where one assistant stands against its daily budgets.

    Attributes:
        day: The UTC date the figures are for.
        exceeded: Whether any limit is reached.
        scope: ``"npc"`` or ``"server"``: which limit was reached first (None when not exceeded).
        action: What the assistant does while exceeded (one of :data:`ACTIONS`).
        npc_tokens / npc_cost: The assistant's usage today.
        npc_token_limit / npc_cost_limit: Its effective limits (None: no limit).
        server_tokens / server_cost: All assistants' usage today.
        server_token_limit / server_cost_limit: The server's limits (None: no limit).
        held: Why the operator's word cannot be read, if it cannot (a set-aside operator
            prompt, an unreadable override file or secrets setting): the assistant calls no
            model, as past a budget, until staff restore or discard the value or fix the
            setting. Empty when nothing holds it.
    """

    day: str
    exceeded: bool
    scope: str | None
    action: str
    npc_tokens: int
    npc_cost: float
    npc_token_limit: int | None
    npc_cost_limit: float | None
    server_tokens: int
    server_cost: float
    server_token_limit: int | None
    server_cost_limit: float | None
    held: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        data = asdict(self)
        data["held"] = list(self.held)
        return data

    @property
    def unbounded(self) -> bool:
        """Whether no daily limit applies to this assistant at all (per NPC or server)."""
        return all(
            limit is None
            for limit in (
                self.npc_token_limit,
                self.npc_cost_limit,
                self.server_token_limit,
                self.server_cost_limit,
            )
        )

    def reached_with(self, spent: SpentView) -> bool:
        """Whether a daily limit is reached counting ``spent`` on top of today's figures (a
        running tick's calls so far, which the figures do not hold yet)."""
        return (
            over(self.npc_tokens + spent.tokens, self.npc_token_limit)
            or over(self.npc_cost + spent.cost, self.npc_cost_limit)
            or over(self.server_tokens + spent.tokens, self.server_token_limit)
            or over(self.server_cost + spent.cost, self.server_cost_limit)
        )

    def describe(self) -> str:
        """One line for status displays."""
        if not self.exceeded:
            return "within budget"
        mode = ACTION_MODES.get(self.action, "silent")
        if self.scope == HELD:
            return (
                f"held: {'; '.join(self.held)}: {mode} until staff restore or discard it "
                "(aistatus) or fix the setting"
            )
        what = "this NPC's" if self.scope == "npc" else "the server's"
        return f"over {what} daily budget: {mode} until 00:00 UTC"


# -- the NPC's metrics (pure edits of the ``metrics`` Attribute's value) ---------------------------
def usage_on(metrics: dict, day: str) -> tuple[int, float]:
    """Tokens and cost recorded in ``metrics`` for ``day``."""
    entry = (metrics or {}).get("daily", {}).get(day) or {}
    return int(entry.get("tokens", 0)), float(entry.get("cost", 0.0))


def add_usage(metrics: dict, day: str, spent: Spent) -> None:
    """Add one call's (or one tick's) tokens and cost to ``metrics``, in total and for ``day``.

    The daily map keeps the last :data:`DAYS_KEPT` days.
    """
    metrics["prompt_tokens"] = metrics.get("prompt_tokens", 0) + spent.prompt_tokens
    metrics["completion_tokens"] = metrics.get("completion_tokens", 0) + spent.completion_tokens
    metrics["cost"] = round(metrics.get("cost", 0.0) + spent.cost, 6)
    daily = metrics.setdefault("daily", {})
    entry = daily.setdefault(day, {"tokens": 0, "cost": 0.0})
    entry["tokens"] += spent.tokens
    entry["cost"] = round(entry["cost"] + spent.cost, 6)
    for old in sorted(daily)[:-DAYS_KEPT]:
        daily.pop(old, None)


def count_error(metrics: dict, error: str | None, tick: int | None) -> None:
    """Count a failed tick in ``metrics``: its error, when and at which tick it happened.

    A later tick that succeeds resets ``consecutive_errors``, which marks the error as past.
    """
    metrics["errors"] = metrics.get("errors", 0) + 1
    metrics["consecutive_errors"] = metrics.get("consecutive_errors", 0) + 1
    metrics["last_error"] = str(error or "")[:500] or "unknown error"
    metrics["last_error_time"] = iso_utc()
    metrics["last_error_tick"] = tick


def count_tick(metrics: dict, trace: TickTrace, day: str) -> int:
    """Count a finished tick in ``metrics``: the tick, its tool calls, its usage, its stop.

    Returns:
        How many failed ticks in a row this tick ended (0 when it failed too, or when the
        ticks before it did not fail).
    """
    metrics["ticks"] = metrics.get("ticks", 0) + 1
    metrics.setdefault("session_start", iso_utc())
    ran = [c for c in trace.tool_calls if c.status in ("ran", "error", "refused")]
    metrics["total_tool_calls"] = metrics.get("total_tool_calls", 0) + len(ran)
    ok = sum(1 for c in ran if c.success)
    metrics["successful_calls"] = metrics.get("successful_calls", 0) + ok
    metrics["failed_calls"] = metrics.get("failed_calls", 0) + len(ran) - ok
    stats = metrics.setdefault("tool_stats", {})
    for c in ran:
        s = stats.setdefault(c.name, {"calls": 0, "ok": 0})
        s["calls"] += 1
        s["ok"] += 1 if c.success else 0
    add_usage(metrics, day, Spent.of_trace(trace))
    stop_counts = metrics.setdefault("stop_reasons", {})
    stop_counts[trace.stop_reason] = stop_counts.get(trace.stop_reason, 0) + 1
    if trace.stop_reason in (StopReason.ERROR.value, StopReason.CONTRACT_VIOLATION.value):
        count_error(metrics, trace.error, trace.tick_id)
        return 0
    failed_before = int(metrics.get("consecutive_errors", 0))
    metrics["consecutive_errors"] = 0
    return failed_before


# -- one tick's accounts ---------------------------------------------------------------------
class TickAccounts:
    """The accounts of one tick of ``npc``: what it spent, whether it may spend more, and the
    counters it leaves in the NPC's metrics.

    Attributes:
        usage: Every model call of the tick (its loop, the assessment, helpers, summaries,
            memory extraction); the trace, the metrics and the budgets take their figures
            from here.
    """

    def __init__(self, npc) -> None:
        self.npc = npc
        self.usage = UsageAccountant()

    def spent(self) -> Spent:
        """What the tick's calls spent so far."""
        return Spent(self.usage.prompt_tokens, self.usage.completion_tokens, self.usage.cost)

    def budget_reached(self, spending: SpendingView, model: str | None) -> bool:
        """Whether today's budgets are reached counting this tick's calls so far.

        Every kind of paid call checks it before it is made (the loop's, helpers', goal
        decomposition, assessment, summaries, memory extraction). In ``offline`` mode the tick
        already answers with the offline model (``model``), which costs nothing: nothing more
        to stop.
        """
        if model == conf.OFFLINE_MODEL:
            return False
        return spending.reached_with(self.spent())

    def record_tick(self, trace: TickTrace) -> None:
        """Count the finished tick in the NPC's metrics (one write) and the server's figure
        of the day; log when the model answers again after failed ticks."""
        state = npc_state(self.npc)
        day = today()
        failed_before = []

        def change(metrics):
            failed_before.append(count_tick(metrics, trace, day))
            return metrics

        state.update(METRICS, change)
        spent = Spent.of_trace(trace)
        state.record_spending(spent.tokens, spent.cost, day)
        if failed_before and failed_before[-1] and trace.iterations:
            self._model_recovered(failed_before[-1], trace)

    def _model_recovered(self, failures: int, trace: TickTrace) -> None:
        """Log that the NPC's model answers again after ``failures`` failed ticks in a row."""
        logger.log_info(
            f"{log_prefix(self.npc)}: model {trace.iterations[-1].model or resolve_model()} "
            f"answers again after {failures} failed tick(s)"
        )

    def close(self) -> None:
        """End the tick's accounts: calls that finish later are counted as they arrive
        (:class:`LateUsage`)."""
        self.usage.close(late=LateUsage(self.npc))


class LateUsage:
    """Counts the model calls of a finished tick that end after it (a helper that timed out,
    say): in the NPC's metrics and the budgets, on the reactor.

    It holds the NPC only, not the tick's :class:`TickAccounts`: the accountant it is handed
    to belongs to those accounts, so a handler bound to them made each tick's accounts a
    reference cycle, which only the garbage collector frees, and which a full collection
    during the tick froze for good with ``EVENNIA_AI_GC_FREEZE`` (server memory grew with
    every such tick, ``python -m bench memory_rss``).

    Args:
        npc: The tick's NPC.
    """

    def __init__(self, npc) -> None:
        self.npc = npc

    def __call__(self, record: UsageRecord) -> None:
        """Called from any thread; the count is made on the reactor."""
        reactor.callFromThread(self.count, record)  # type: ignore[attr-defined]

    def count(self, record: UsageRecord) -> None:
        """Count a late call's tokens and cost (on the reactor), unless the NPC is gone; tell
        the endpoints' health how it went (:mod:`evennia_ai.engine.outages`) in any case."""
        alive = bool(getattr(self.npc, "pk", None))
        try:
            outages.BOARD.observe([record], self.npc if alive else None)
        except Exception:  # the health board must never lose the count
            logger.log_trace(f"{log_prefix(self.npc)}: could not record the model's health")
        if not alive:
            return
        state = npc_state(self.npc)
        day = today()
        spent = Spent.of_record(record)

        def change(metrics):
            add_usage(metrics, day, spent)
            return metrics

        state.update(METRICS, change)
        state.record_spending(spent.tokens, spent.cost, day)

"""engine/accounting: what a tick spends and counts, typed, in one place (no database)."""

from __future__ import annotations

import ast
import gc
import inspect
import weakref
from types import SimpleNamespace
from unittest import mock

from evennia_ai import conf
from evennia_ai.engine import accounting
from evennia_ai.engine.accounting import (
    LateUsage,
    SpendingStatus,
    SpendLimits,
    Spent,
    TickAccounts,
    add_usage,
    count_error,
    count_tick,
    usage_on,
)
from evennia_ai.engine.trace import IterationTrace, StopReason, TickTrace, ToolCallTrace
from evennia_ai.llm.usage import UsageRecord
from evennia_ai.npc import spending


def status(**changes) -> SpendingStatus:
    values = dict(
        day="2026-11-26",
        exceeded=False,
        scope=None,
        action="offline",
        npc_tokens=900,
        npc_cost=0.5,
        npc_token_limit=None,
        npc_cost_limit=None,
        server_tokens=9000,
        server_cost=5.0,
        server_token_limit=None,
        server_cost_limit=None,
    )
    values.update(changes)
    return SpendingStatus(**values)


class FakeAI:
    """The two things the accounts write through: metrics and the server's daily figure."""

    def __init__(self, metrics: dict | None = None):
        self.metrics = metrics if metrics is not None else {}
        self.metric_writes = 0
        self.spending: list[tuple] = []

    def update(self, key, change):
        assert key == "metrics"
        self.metric_writes += 1
        self.metrics = change(self.metrics)

    def record_spending(self, tokens, cost, day=None):
        self.spending.append((tokens, cost, day))


def npc_with(ai, pk=7):
    return SimpleNamespace(ai=ai, pk=pk, key="Innkeeper", dbref="#7")


def trace_of(stop=StopReason.TEXT_REPLY, calls=(), prompt=100, completion=20, cost=0.25):
    trace = TickTrace(tick_id=4, context_type="tick_event", stop_reason=stop.value)
    trace.prompt_tokens, trace.completion_tokens, trace.cost = prompt, completion, cost
    trace.iterations.append(IterationTrace(index=0, model="openai/m", tool_calls=list(calls)))
    return trace


# -- the typed figures ---------------------------------------------------------------------------
def test_spent_adds_prompt_and_completion_and_reads_records_and_traces():
    record = UsageRecord(kind="act", prompt_tokens=30, completion_tokens=5, cost=0.01)
    assert Spent.of_record(record) == Spent(30, 5, 0.01)
    assert Spent.of_record(record).tokens == 35
    assert Spent.of_trace(trace_of()) == Spent(100, 20, 0.25)


def test_spend_limits_allow_until_a_limit_and_none_means_no_limit():
    assert SpendLimits().allows(10**9, 10**6, request_tokens=10**9)
    limits = SpendLimits(max_tokens=1000, max_cost=1.0)
    assert limits.allows(900, 0.5, request_tokens=100)
    assert not limits.allows(900, 0.5, request_tokens=101)  # the request would pass the cap
    assert not limits.allows(0, 1.0)  # the cost is reached


def test_a_status_is_reached_counting_what_the_running_tick_spent():
    assert not status().reached_with(Spent(10**6, 0, 10.0))  # no limit at all
    by_npc = status(npc_token_limit=1000)
    assert not by_npc.reached_with(Spent(50, 49, 0.0))
    assert by_npc.reached_with(Spent(50, 50, 0.0))  # 900 + 100 reaches 1000
    assert status(server_cost_limit=5.5).reached_with(Spent(cost=0.5))
    assert not status(npc_cost_limit=0.75).reached_with(Spent(cost=0.2))


def test_the_npc_spending_module_hands_out_the_same_status():
    assert spending.SpendingStatus is SpendingStatus
    assert spending.usage_on is usage_on
    assert spending.ACTION_MODES is accounting.ACTION_MODES and spending.HELD == "held"
    assert status(exceeded=True, scope="npc").describe() == (
        "over this NPC's daily budget: answering with the offline model until 00:00 UTC"
    )


def test_money_is_typed_without_any():
    tree = ast.parse(inspect.getsource(accounting))
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    assert "Any" not in names


# -- the metrics ---------------------------------------------------------------------------------
def test_usage_is_added_in_total_and_by_day_keeping_31_days():
    metrics = {"daily": {f"2026-01-{d:02d}": {"tokens": 1, "cost": 0.0} for d in range(1, 32)}}
    add_usage(metrics, "2026-02-01", Spent(10, 5, 0.1234567))
    assert metrics["prompt_tokens"] == 10 and metrics["completion_tokens"] == 5
    assert metrics["cost"] == 0.123457
    assert metrics["daily"]["2026-02-01"] == {"tokens": 15, "cost": 0.123457}
    assert len(metrics["daily"]) == 31 and "2026-01-01" not in metrics["daily"]
    assert usage_on(metrics, "2026-02-01") == (15, 0.123457)
    assert usage_on({}, "2026-02-01") == (0, 0.0)


def test_a_tick_is_counted_with_its_calls_usage_and_stop_and_ends_an_error_run():
    ok = ToolCallTrace(id="1", name="say", success=True)
    refused = ToolCallTrace(id="2", name="say", status="refused")
    skipped = ToolCallTrace(id="3", name="look", status="skipped")
    metrics = {"consecutive_errors": 2}
    failed_before = count_tick(metrics, trace_of(calls=[ok, refused, skipped]), "2026-11-26")
    assert failed_before == 2 and metrics["consecutive_errors"] == 0
    assert metrics["ticks"] == 1 and metrics["total_tool_calls"] == 2
    assert metrics["successful_calls"] == 1 and metrics["failed_calls"] == 1
    assert metrics["tool_stats"] == {"say": {"calls": 2, "ok": 1}}
    assert metrics["stop_reasons"] == {"text_reply": 1}
    assert metrics["daily"]["2026-11-26"] == {"tokens": 120, "cost": 0.25}


def test_a_failed_tick_is_counted_as_an_error():
    metrics: dict = {}
    trace = trace_of(stop=StopReason.ERROR)
    trace.error = "model call failed"
    assert count_tick(metrics, trace, "2026-11-26") == 0
    assert metrics["errors"] == 1 and metrics["consecutive_errors"] == 1
    assert metrics["last_error"] == "model call failed" and metrics["last_error_tick"] == 4
    count_error(metrics, None, None)
    assert metrics["consecutive_errors"] == 2 and metrics["last_error"] == "unknown error"


# -- one tick's accounts -------------------------------------------------------------------------
def test_the_budget_check_counts_the_tick_so_far_and_never_stops_the_offline_model():
    accounts = TickAccounts(npc_with(FakeAI()))
    over_soon = status(npc_token_limit=1000)
    assert not accounts.budget_reached(over_soon, None)
    accounts.usage.record(UsageRecord(kind="act", prompt_tokens=90, completion_tokens=10))
    assert accounts.spent() == Spent(90, 10, 0.0)
    assert accounts.budget_reached(over_soon, None)
    assert not accounts.budget_reached(over_soon, conf.OFFLINE_MODEL)


def test_a_tick_is_recorded_in_one_metrics_write_and_the_servers_figure():
    ai = FakeAI({"consecutive_errors": 3})
    accounts = TickAccounts(npc_with(ai))
    with mock.patch.object(accounting.logger, "log_info") as log_info:
        accounts.record_tick(trace_of())
    assert ai.metric_writes == 1 and ai.metrics["ticks"] == 1
    assert [(tokens, cost) for tokens, cost, _day in ai.spending] == [(120, 0.25)]
    log_info.assert_called_once()
    assert "model openai/m answers again after 3 failed tick(s)" in log_info.call_args[0][0]


def test_calls_that_end_after_the_tick_are_counted_on_the_reactor():
    ai = FakeAI()
    accounts = TickAccounts(npc_with(ai))
    accounts.close()
    late = UsageRecord(kind="delegate", prompt_tokens=40, completion_tokens=2, cost=0.02)
    with mock.patch.object(accounting.reactor, "callFromThread") as call:
        accounts.usage.record(late)
    call.assert_called_once()
    count, record = call.call_args[0]
    assert record is late and isinstance(count.__self__, LateUsage)
    count(late)
    assert ai.metrics["prompt_tokens"] == 40 and ai.metrics["cost"] == 0.02
    assert [(tokens, cost) for tokens, cost, _day in ai.spending] == [(42, 0.02)]


def test_a_late_call_for_a_deleted_npc_is_dropped():
    ai = FakeAI()
    LateUsage(npc_with(ai, pk=None)).count(UsageRecord(kind="act", prompt_tokens=5))
    assert ai.metric_writes == 0 and not ai.spending


def test_closed_accounts_are_freed_without_the_garbage_collector():
    """A tick's closed accounts are no reference cycle: with ``EVENNIA_AI_GC_FREEZE`` a cycle
    alive during a full collection is frozen and never freed (bench memory_rss grew by the
    accounts of every tick in flight then)."""
    accounts = TickAccounts(npc_with(FakeAI()))
    accounts.usage.record(UsageRecord(kind="act", prompt_tokens=5))
    accounts.close()
    gone = weakref.ref(accounts)
    gc.disable()
    try:
        del accounts
        assert gone() is None
    finally:
        gc.enable()

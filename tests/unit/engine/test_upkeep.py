"""engine/upkeep: sleep phases, compaction and history pressure, with a fake NPC (no database)."""

from __future__ import annotations

import copy
import gc
import weakref
from types import SimpleNamespace
from unittest import mock

import pytest
from django.test import override_settings
from twisted.internet import defer

from evennia_ai import conf
from evennia_ai.engine import tick, upkeep
from evennia_ai.engine.trace import TickTrace
from evennia_ai.engine.upkeep import (
    Upkeep,
    advance_sleep,
    compaction_wanted,
    consolidation_material,
    history_pressure,
)
from evennia_ai.llm.usage import UsageAccountant
from evennia_ai.memory.history import append_tick
from evennia_ai.utils import iso_utc


class FakeAI:
    def __init__(self, **state):
        self.state = {"sleep": {}, "compaction": {}, "history": [], "journal": [], "model": None}
        self.state.update(state)
        self.writes: list[str] = []

    def __getattr__(self, name):
        state = self.__dict__.get("state", {})
        if name in state:
            return copy.deepcopy(state[name])
        raise AttributeError(name)

    def set(self, key, value):
        self.writes.append(key)
        self.state[key] = copy.deepcopy(value)

    def update(self, key, change):
        self.set(key, change(copy.deepcopy(self.state[key])))


def history_of(ticks: int) -> list[dict]:
    history: list[dict] = []
    for number in range(1, ticks + 1):
        messages = [
            {"role": "user", "content": f"Alice says: order {number}"},
            {"role": "assistant", "content": f"Here is order {number}."},
        ]
        history = append_tick(history, number, messages, 1000)
    return history


def upkeep_of(ai, *, pk=7, budget_reached=False, cancelled=None, client=None) -> Upkeep:
    npc = SimpleNamespace(ai=ai, pk=pk, key="Innkeeper", dbref="#7")
    return Upkeep(
        npc,
        UsageAccountant(),
        budget_reached=lambda: budget_reached,
        cancelled=lambda: cancelled,
        client=lambda: client,
    )


class _Runner:
    """Stands in for the tick runner: it holds the upkeep, the upkeep holds its methods."""

    def __init__(self, ai):
        npc = SimpleNamespace(ai=ai, pk=7, key="Innkeeper", dbref="#7")
        self.upkeep = Upkeep(
            npc, UsageAccountant(), self.budget_reached, self.cancelled, self.client
        )

    def budget_reached(self) -> bool:
        return False

    def cancelled(self):
        return None

    def client(self):
        return "client"


def test_a_released_upkeep_lets_its_runner_be_freed_without_the_garbage_collector():
    """With ``EVENNIA_AI_GC_FREEZE`` a cycle alive during a full collection is frozen and never
    freed: every tick in flight then stayed in memory (bench memory_rss)."""
    runner = _Runner(FakeAI())
    runner.upkeep.release()
    gone = weakref.ref(runner)
    gc.disable()
    try:
        del runner
        assert gone() is None
    finally:
        gc.enable()


def test_a_released_upkeep_says_the_tick_has_ended():
    upkeep = _Runner(FakeAI()).upkeep
    assert upkeep.client() == "client" and upkeep.budget_reached() is False
    upkeep.release()
    assert upkeep.budget_reached() is True  # no new paid call after the tick
    assert upkeep.cancelled() == "the tick has ended"
    with pytest.raises(RuntimeError, match="tick has ended"):
        upkeep.client()


def test_the_tick_module_still_hands_out_history_pressure():
    assert tick.history_pressure is history_pressure
    assert tick.HistoryPressure is upkeep.HistoryPressure


def test_history_pressure_is_measured_against_each_cap():
    empty = history_pressure(FakeAI(), None, 10)
    assert empty.reason is None and [m[0] for m in empty.measures] == [
        "tokens",
        "characters",
        "messages",
    ]
    with override_settings(EVENNIA_AI_HISTORY_MAX_MESSAGES=10):
        full = history_pressure(FakeAI(history=history_of(5)), None, 10)
    assert ("messages", 10, 10) in full.measures and full.reason == "emergency"


def test_the_sleep_advances_phase_by_phase_to_rest():
    ai = FakeAI(sleep={"asleep": True, "phase": "sleep_consolidate"})
    advance_sleep(ai, "sleep_consolidate")
    assert ai.state["sleep"]["phase"] == "pre_compaction"
    advance_sleep(ai, "pre_compaction")
    assert ai.state["sleep"]["phase"] == "rest"
    advance_sleep(ai, "tick_event")  # not a sleep phase: nothing written
    assert ai.writes == ["sleep", "sleep"]


def test_consolidation_needs_something_new_since_the_last_one():
    assert not consolidation_material(FakeAI(), {})
    later = "2999-01-01T00:00:00Z"
    ai = FakeAI(journal=[{"content": "Sold ale.", "ts": iso_utc()}], history=history_of(1))
    assert consolidation_material(ai, {})
    assert not consolidation_material(ai, {"last_consolidated": later})
    assert consolidation_material(ai, {"last_consolidated": "2000-01-01T00:00:00Z"})


def test_a_compaction_is_wanted_when_pending_or_due():
    assert compaction_wanted(FakeAI(compaction={"pending": True}), 3)
    assert not compaction_wanted(FakeAI(), 3)


def test_history_pressure_schedules_one_compaction():
    ai = FakeAI(history=history_of(5))
    state = SimpleNamespace(model=None, tick_id=10)
    with override_settings(EVENNIA_AI_HISTORY_MAX_MESSAGES=10):
        upkeep_of(ai).check_history_pressure(state)
        assert ai.state["compaction"] == {"pending": True, "reason": "emergency"}
        upkeep_of(ai).check_history_pressure(state)  # already pending: not written again
    assert ai.writes == ["compaction"]


def test_a_history_the_request_cut_is_folded_at_the_next_tick_when_worth_it():
    small = FakeAI(history=history_of(2))
    with override_settings(EVENNIA_AI_COMPACTION_KEEP_RECENT=4):
        upkeep_of(small).fold_history_soon()
        assert small.writes == []  # too little to fold: no compaction every tick
        big = FakeAI(history=history_of(10))
        upkeep_of(big).fold_history_soon()
    assert big.state["compaction"] == {"pending": True, "reason": "emergency"}


def test_compaction_truncates_in_one_write_per_piece():
    ai = FakeAI(history=history_of(10), compaction={"pending": True})
    client = SimpleNamespace(resolve_model=lambda model: conf.OFFLINE_MODEL)
    trace = TickTrace(tick_id=11)
    with override_settings(EVENNIA_AI_COMPACTION_KEEP_RECENT=4):
        d = upkeep_of(ai).compact(client, None, 11, trace)
    assert d.called
    assert len(ai.state["history"]) == 4 and ai.writes == ["history", "compaction"]
    compaction = ai.state["compaction"]
    assert compaction["strategy"] == "truncate" and compaction["removed"] == 16
    assert not compaction["pending"] and compaction["last_tick"] == 11


def test_a_failed_summary_erases_nothing_and_is_in_the_trace():
    history = history_of(10)
    ai = FakeAI(history=history, compaction={"pending": True})
    failed = SimpleNamespace(error="server error (HTTP 500)", text=None, usage=None, model="m")
    client = SimpleNamespace(
        resolve_model=lambda model: "openai/summary",
        complete_sync=lambda *args, **kwargs: failed,
    )
    trace = TickTrace(tick_id=12)
    with (
        override_settings(
            EVENNIA_AI_COMPACTION_STRATEGY="summarize", EVENNIA_AI_COMPACTION_KEEP_RECENT=4
        ),
        mock.patch.object(upkeep, "defer_to_thread", defer.maybeDeferred),
        mock.patch.object(upkeep.logger, "log_err") as log_err,
    ):
        upkeep_of(ai).compact(client, "openai/summary", 12, trace)
    assert ai.state["history"] == history and ai.writes == ["compaction"]
    assert "summarising history failed (server error (HTTP 500))" in trace.error
    assert ai.state["compaction"]["error"] == trace.error
    log_err.assert_called_once()


@pytest.mark.parametrize("route", ["lean", "litellm"])
def test_a_summary_model_that_refuses_connections_is_named_in_words(route):
    """Issue 35: a helper call's failure reaches the trace and the log in words, on both routes
    (the summary model's endpoint refuses connections; no socket or SSL-context repr)."""
    from evennia_ai.llm.client import UnifiedLLMClient
    from evennia_ai.testing.model_server import ModelServer

    with ModelServer() as gone:
        url = gone.url  # closed now
    client = UnifiedLLMClient(api_base=url, api_key="x", timeout=2, max_retries=0, fallbacks=[])
    history = history_of(10)
    ai = FakeAI(history=history, compaction={"pending": True})
    trace = TickTrace(tick_id=12)
    with (
        override_settings(
            EVENNIA_AI_COMPACTION_STRATEGY="summarize",
            EVENNIA_AI_COMPACTION_KEEP_RECENT=4,
            EVENNIA_AI_LITELLM_MODELS=["*"] if route == "litellm" else [],
        ),
        mock.patch.object(upkeep, "defer_to_thread", defer.maybeDeferred),
        mock.patch.object(upkeep.logger, "log_err") as log_err,
    ):
        upkeep_of(ai).compact(client, "openai/summary", 12, trace)
    assert trace.error == (
        f"summarising history failed (connection refused to {url}); history left as it was"
    )
    log_err.assert_called_once_with(f"evennia_ai [Innkeeper#7]: {trace.error}")
    assert ai.state["history"] == history


def test_no_paid_summary_past_the_budget():
    ai = FakeAI(history=history_of(10), compaction={"pending": True})
    client = SimpleNamespace(resolve_model=lambda model: "openai/summary")
    with override_settings(
        EVENNIA_AI_COMPACTION_STRATEGY="summarize", EVENNIA_AI_COMPACTION_KEEP_RECENT=4
    ):
        upkeep_of(ai, budget_reached=True).compact(client, "openai/m", 13, TickTrace(tick_id=13))
    assert ai.state["compaction"]["strategy"] == "truncate"


def test_a_deleted_npc_keeps_its_history():
    history = history_of(10)
    ai = FakeAI(history=history, compaction={"pending": True})
    client = SimpleNamespace(resolve_model=lambda model: conf.OFFLINE_MODEL)
    with override_settings(EVENNIA_AI_COMPACTION_KEEP_RECENT=4):
        upkeep_of(ai, pk=None).compact(client, None, 11, TickTrace(tick_id=11))
    assert ai.writes == []


def test_a_cancelled_tick_does_no_upkeep():
    ai = FakeAI(history=history_of(10), compaction={"pending": True})
    state = SimpleNamespace(context_type="pre_compaction", model=None, tick_id=3)
    d = upkeep_of(ai, cancelled="the NPC moved away").run(state, TickTrace(tick_id=3))
    assert d.called and ai.writes == []


# -- consolidations per real day (issue 36) -------------------------------------------------------
def test_consolidations_are_counted_per_real_utc_day():
    with mock.patch.object(upkeep, "today", lambda: "2026-11-27"):
        first = upkeep.counted_consolidation({"asleep": True})
        assert first["consolidated"] == {"day": "2026-11-27", "count": 1}
        assert first["last_consolidated"] and first["asleep"] is True
        second = upkeep.counted_consolidation(first)
        assert second["consolidated"] == {"day": "2026-11-27", "count": 2}
        assert upkeep.consolidations_today(second) == 2
        assert not upkeep.consolidation_allowed(first)  # the default: once a day
        with override_settings(EVENNIA_AI_CONSOLIDATIONS_PER_DAY=3):
            assert upkeep.consolidation_allowed(second)
        with override_settings(EVENNIA_AI_CONSOLIDATIONS_PER_DAY=None):
            assert upkeep.consolidation_allowed(
                {"consolidated": {"day": "2026-11-27", "count": 99}}
            )
    with mock.patch.object(upkeep, "today", lambda: "2026-11-28"):
        assert upkeep.consolidations_today(second) == 0  # a new day: the count starts again
        assert upkeep.consolidation_allowed(second)
        assert upkeep.counted_consolidation(second)["consolidated"]["count"] == 1
    for junk in ({}, {"consolidated": "x"}, {"consolidated": {"day": "2026-11-28", "count": -2}}):
        assert upkeep.consolidations_today(junk) == 0

"""Daily budgets: per NPC and per server, offline or silent past the limit, shown in status."""

from unittest import mock

import pytest
from django.test import override_settings
from unit.engine.test_assistant_tick import AssistantTestBase

from evennia_ai import conf
from evennia_ai.memory import events as ev
from evennia_ai.npc import spending


def spend(npc, tokens, cost=0.0):
    day = spending.today()

    def change(m):
        entry = m.setdefault("daily", {}).setdefault(day, {"tokens": 0, "cost": 0.0})
        entry["tokens"] += tokens
        entry["cost"] += cost
        return m

    npc.ai.update("metrics", change)


class TestBudgetCheck(AssistantTestBase):
    def setUp(self):
        super().setUp()
        spending.reset_cache()
        self.addCleanup(spending.reset_cache)

    def test_no_limits_by_default(self):
        spend(self.npc, 10**9, 1000.0)
        status = spending.check(self.npc)
        assert not status.exceeded and status.npc_token_limit is None
        assert self.npc.ai.status()["budget_state"] == "within budget"

    def test_npc_token_and_cost_limits(self):
        spend(self.npc, 500, 0.2)
        with override_settings(EVENNIA_AI_DAILY_TOKEN_BUDGET_PER_NPC=1000):
            assert not spending.check(self.npc).exceeded
            spend(self.npc, 500)
            status = spending.check(self.npc)
            assert status.exceeded and status.scope == "npc" and status.action == "message"
        with override_settings(EVENNIA_AI_DAILY_COST_BUDGET_PER_NPC=0.1):
            assert spending.check(self.npc).scope == "npc"

    def test_a_budget_stop_is_logged_once_per_npc_per_day(self):
        spend(self.npc, 1500)
        with (
            override_settings(EVENNIA_AI_DAILY_TOKEN_BUDGET_PER_NPC=1000),
            mock.patch.object(spending.logger, "log_warn") as log_warn,
        ):
            for _tick in range(3):
                status = spending.check(self.npc)
        assert log_warn.call_args_list == [
            mock.call(f"evennia_ai [Innkeeper{self.npc.dbref}]: {status.describe()}.")
        ]
        assert "over this NPC's daily budget" in status.describe()
        with (
            override_settings(EVENNIA_AI_DAILY_TOKEN_BUDGET_PER_NPC=1000),
            mock.patch.object(spending.logger, "log_warn") as log_warn,
            mock.patch.object(spending, "today", return_value="2099-01-01"),
        ):
            spend(self.npc, 1500)  # the next day, over again
            spending.check(self.npc)
        assert log_warn.call_count == 1

    def test_override_tightens_but_never_widens(self):
        spend(self.npc, 600)
        self.npc.ai.set("budget", {"tokens": 500})
        assert spending.check(self.npc).npc_token_limit == 500
        assert spending.check(self.npc).exceeded
        self.npc.ai.set("budget", {"tokens": 10**6})
        with override_settings(EVENNIA_AI_DAILY_TOKEN_BUDGET_PER_NPC=100):
            status = spending.check(self.npc)
            assert status.npc_token_limit == 100 and status.exceeded

    def test_server_limit_sums_every_npc_and_follows_ticks(self):
        from evennia import create_object

        from evennia_ai.typeclasses import AIAssistantCharacter

        other = create_object(AIAssistantCharacter, key="Barmaid", location=self.room1)
        self.addCleanup(other.delete)
        spend(other, 700)
        with override_settings(EVENNIA_AI_DAILY_TOKEN_BUDGET_SERVER=1000):
            status = spending.check(self.npc)
            assert status.server_tokens == 700 and not status.exceeded
            spending.record(300, 0.0)  # a tick elsewhere in the server
            status = spending.check(self.npc)
            assert status.exceeded and status.scope == "server"
            assert "server's daily budget" in self.npc.ai.status()["budget_state"]

    def test_silence_setting_and_unknown_action(self):
        with override_settings(EVENNIA_AI_BUDGET_EXCEEDED_ACTION="silence"):
            assert spending.action() == "silence"
        with override_settings(EVENNIA_AI_BUDGET_EXCEEDED_ACTION="explode"):
            assert spending.action() == "message"  # an unreadable one calls no model

    def test_server_totals(self):
        spend(self.npc, 42, 0.5)
        self.npc.ai.update(
            "metrics", lambda m: {**m, "prompt_tokens": 40, "completion_tokens": 2, "cost": 0.5}
        )
        totals = spending.server_totals()
        assert totals["prompt_tokens"] >= 40 and totals["today"]["tokens"] >= 42


class TestOverBudgetTicks(AssistantTestBase):
    def setUp(self):
        super().setUp()
        spending.reset_cache()
        self.addCleanup(spending.reset_cache)
        self.answer_from_loopback(EVENNIA_AI_DAILY_TOKEN_BUDGET_PER_NPC=100)

    @override_settings(EVENNIA_AI_BUDGET_EXCEEDED_ACTION="offline")
    def test_within_budget_uses_the_model_then_switches_to_offline(self):
        self.server.enqueue({"tool_calls": [{"name": "say", "arguments": {"message": "Welcome!"}}]})
        self.speak("Hello Innkeeper!")
        trace = self.tick()
        assert len(self.server.requests) >= 1 and trace.budget is None
        spent = self.npc.ai.metrics["daily"][spending.today()]["tokens"]
        assert spent > 100  # the test model's usage pushed it past the limit
        before = len(self.server.requests)
        self.speak("Hello again!")
        with mock.patch.object(self.char1, "msg") as heard:
            trace = self.tick()
        assert len(self.server.requests) == before  # no call to the paid model
        assert trace.budget and "offline model" in trace.budget
        assert "Innkeeper says" in " ".join(str(c) for c in heard.call_args_list)
        assert self.npc.ai.status()["budget"]["exceeded"]

    def test_silence_consumes_events_unanswered_and_says_so(self):
        spend(self.npc, 1000)
        self.speak("Hello Innkeeper!")
        with (
            override_settings(EVENNIA_AI_BUDGET_EXCEEDED_ACTION="silence"),
            mock.patch.object(self.char1, "msg") as heard,
        ):
            trace = self.tick()
        assert trace.stop_reason == "budget" and "silent" in trace.budget
        assert not self.server.requests
        assert "says" not in " ".join(str(c) for c in heard.call_args_list)
        assert not ev.pending_events(self.npc.ai.event_queue)
        assert self.npc.ai.traces()[-1]["budget"] == trace.budget
        assert self.npc.ai.metrics["errors"] == 0
        assert conf.get("EVENNIA_AI_BUDGET_EXCEEDED_ACTION") == "message"


@pytest.mark.parametrize(
    "key, text, value",
    [
        ("tokens", "20000", 20000),
        ("tokens", "20,000", 20000),
        ("tokens", "20_000", 20000),
        ("tokens", "20k", 20000),
        ("tokens", "1.5M", 1_500_000),
        ("tokens", "none", None),
        ("cost", "0.5", 0.5),
        ("cost", "$2", 2.0),
        ("cost", "OFF", None),
    ],
)
def test_own_limits_as_typed(key, text, value):
    assert spending.parse_own_limit(key, text) == value


@pytest.mark.parametrize(
    "key, text, message",
    [
        ("tokens", "0", "tokens must be at least 1"),
        ("tokens", "2.5", "tokens must be a whole number"),
        ("tokens", "1e99", "tokens must be at most 1,000,000,000"),
        ("tokens", "inf", "tokens must be a whole number"),
        ("cost", "-1", "cost must be at least 0.0001"),
        ("cost", "inf", "cost must be at most"),
        ("cost", "a lot", "cost must be dollars"),
        ("calls", "5", "Unknown limit 'calls'"),
    ],
)
def test_own_limits_refused(key, text, message):
    with pytest.raises(ValueError) as caught:
        spending.parse_own_limit(key, text)
    assert message in str(caught.value)

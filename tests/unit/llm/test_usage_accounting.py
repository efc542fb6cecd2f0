"""One usage accountant: every model call of a tick reaches its trace, the metrics and budgets.

The loopback model server counts the tokens it reports; over a scenario that makes every kind
of call the plugin makes (the loop's plan and act calls, the task assessment, a
``decompose_goal`` planning call, a ``delegate_task`` helper's calls, a history summary, and
mem0's fact extraction where the local embedder is installed), the NPC's traces, its metrics,
today's spending and the server-wide totals all equal the server's own count.
"""

from unittest import mock

import pytest
from django.test import override_settings
from unit.engine.test_assistant_cycles import ModelBase, call

from evennia_ai.llm.usage import UsageAccountant, UsageRecord
from evennia_ai.memory import history as hist
from evennia_ai.npc import spending
from evennia_ai.prompt import contexts
from evennia_ai.utils import today
from evennia_ai.workspace.goals import add_goal

pytestmark = pytest.mark.postgres  # also run on PostgreSQL (make test)


def test_accountant_counts_from_threads_and_hands_late_records_on():
    import threading

    usage = UsageAccountant()
    record = UsageRecord(kind="act", prompt_tokens=3, completion_tokens=2, cost=0.5)
    threads = [threading.Thread(target=usage.record, args=(record,)) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert usage.tokens == 100 and usage.cost == pytest.approx(10.0)
    assert len(usage.take_new()) == 20 and usage.take_new() == []
    late = []
    usage.close(late=late.append)
    usage.record(record)
    assert late == [record] and usage.tokens == 100


def autonomous_loop(**changes):
    """An autonomous tick (active goal) as a multi-step ReAct loop, ``changes`` applied."""
    config = contexts.get_context_config("tick_autonomous").to_dict()
    config.update(execution_mode="react_loop", max_iterations=6, **changes)
    patch = mock.patch(
        "evennia_ai.engine.tick.effective_context_config",
        side_effect=lambda name: (
            contexts.ContextConfig(**config)
            if name == "tick_autonomous"
            else contexts.get_context_config(name)
        ),
    )
    autonomy = override_settings(EVENNIA_AI_AUTONOMY=True, EVENNIA_AI_AUTONOMOUS_MIN_INTERVAL=0)
    return patch, autonomy


class TestEveryCallIsAccounted(ModelBase):
    def setUp(self):
        super().setUp()
        # a window where the 40-odd tool schemas leave room: no token-pressure narrowing
        window = override_settings(EVENNIA_AI_CONTEXT_WINDOWS={"openai/test-model": 128000})
        window.enable()
        self.addCleanup(window.disable)
        spending.reset_cache()
        self.addCleanup(spending.reset_cache)

    def trace_tokens(self):
        traces = self.npc.ai.traces()
        return (
            sum(t["prompt_tokens"] for t in traces),
            sum(t["completion_tokens"] for t in traces),
        )

    def assert_all_agree(self, kinds_expected):
        served = self.server.usage_totals()
        prompt, completion = self.trace_tokens()
        assert (prompt, completion) == (served["prompt_tokens"], served["completion_tokens"])
        metrics = self.npc.ai.metrics
        assert metrics["prompt_tokens"] == served["prompt_tokens"]
        assert metrics["completion_tokens"] == served["completion_tokens"]
        assert metrics["daily"][today()]["tokens"] == prompt + completion
        assert spending.server_usage()["tokens"] == prompt + completion
        totals = spending.server_totals()
        assert totals["prompt_tokens"] == served["prompt_tokens"]
        assert totals["completion_tokens"] == served["completion_tokens"]
        kinds = {it["kind"] for t in self.npc.ai.traces() for it in t["iterations"]}
        assert kinds_expected <= kinds, kinds
        calls = sum(len(t["iterations"]) for t in self.npc.ai.traces())
        assert calls == served["answers"]  # every call is in a trace exactly once

    def test_every_kind_of_call_reaches_trace_metrics_and_budgets(self):
        self.npc.ai.set_execution_config(
            task_assessment_enabled=True, sub_agents_enabled=True, sub_agent_budget=1
        )
        self.npc.ai.update_goals(lambda g: add_goal(g, "Stock the cellar", tick=1))
        goal_id = self.npc.ai.goals[0]["id"]
        self.server.enqueue(
            # assessment: narrow to plan_execute (restrict-only)
            {"text": '{"recommended_mode": "plan_execute", "recommended_iterations": 4}'},
            {"text": "1. Plan the cellar work. 2. Send a helper. 3. Answer."},  # plan
            {"tool_calls": [call("decompose_goal", goal_id=goal_id)]},  # act
            {"text": '{"subtasks": ["Count barrels", "Order ale", "Sweep the floor"]}'},
            {"tool_calls": [call("delegate_task", task="Look around and report")]},  # act
            {"tool_calls": [call("look")]},  # the helper
            {"text": "A warm room with a bar."},  # the helper's report
            {"tool_calls": [call("say", message="The cellar is in hand.")]},  # act
            {"tool_calls": [call("noop")]},  # act
        )
        patch, autonomy = autonomous_loop()
        with patch, autonomy:
            trace = self.tick()
        assert trace.error is None, trace.error
        assert trace.pattern["mode"] == "plan_execute", str(trace.pattern)
        assert len(self.npc.ai.goals) > 1  # the subtasks were added
        assert trace.prompt_tokens == sum(
            it.usage.get("prompt_tokens", 0) for it in trace.iterations
        )

        # history summarised at the pre-compaction phase of sleep
        self.npc.ai.set(
            "history",
            hist.append_tick(
                [],
                1,
                [{"role": "user", "content": f"Line {i} of an old talk."} for i in range(30)],
                200,
            ),
        )
        self.npc.ai.set("compaction", {"pending": True, "last_tick": None})
        self.server.enqueue(
            {"tool_calls": [call("noop")]},  # the pre_compaction tick's own call
            {"text": "Guests talked about old things."},  # the summary
        )
        with override_settings(
            EVENNIA_AI_COMPACTION_STRATEGY="summarize", EVENNIA_AI_COMPACTION_KEEP_RECENT=0
        ):
            trace = self.tick()
        assert trace.context_type == "pre_compaction"
        assert "summarise" in {it.kind for it in trace.iterations}
        self.assert_all_agree(
            {"assessment", "plan", "act", "decompose_goal", "delegate", "summarise"}
        )

    def test_budget_of_the_tick_counts_its_helpers(self):
        """The daily budget sees the helper's calls of this very tick, not only the loop's own."""
        self.npc.ai.set_execution_config(sub_agents_enabled=True, sub_agent_budget=1)
        self.server.enqueue(
            {
                "tool_calls": [call("delegate_task", task="Look around")],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5},
            },
            {"tool_calls": [call("look")], "usage": {"prompt_tokens": 5000}},  # helper
            {"text": "done", "usage": {"prompt_tokens": 5000}},  # helper's report
            {"tool_calls": [call("noop")]},  # would be the loop's next call
        )
        self.npc.ai.update_goals(lambda g: add_goal(g, "Survey the inn", tick=1))
        self.npc.ai.set("budget", {"tokens": 9000})
        patch, autonomy = autonomous_loop()
        with patch, autonomy:
            trace = self.tick()
        assert trace.stop_reason == "budget", trace.stop_reason
        self.assert_all_agree({"act", "delegate"})


@pytest.mark.embedder
class TestMemoryExtractionIsAccounted(ModelBase):
    def test_sleep_consolidation_extraction_reaches_the_trace(self):
        import tempfile

        from evennia_ai.memory import longterm

        folder = tempfile.mkdtemp()
        # mem0's extraction prompt alone is ~7,700 tokens: it needs a window past 12,000
        with override_settings(
            EVENNIA_AI_DATA_DIR=folder, EVENNIA_AI_CONTEXT_WINDOWS={"openai/test-model": 32000}
        ):
            longterm.close()
            memory = longterm.get_memory()
            memory.init_sync()
            self.addCleanup(longterm.close)
            assert memory.vector_ready, memory.status()
            spending.reset_cache()
            self.npc.ai.update(
                "journal", lambda j: j + [{"content": "Carol only drinks red wine."}]
            )
            from evennia_ai.workspace.sleep import go_to_sleep

            go_to_sleep(self.npc, "test")
            self.server.enqueue(
                {"tool_calls": [call("noop")]},  # the sleep_consolidate tick
                {"text": '{"memory": [{"text": "Carol prefers red wine"}]}'},  # extraction
            )
            trace = self.tick()
        assert trace.context_type == "sleep_consolidate"
        assert "memory_extraction" in {it.kind for it in trace.iterations}
        served = self.server.usage_totals()
        assert trace.prompt_tokens == served["prompt_tokens"]
        assert self.npc.ai.metrics["completion_tokens"] == served["completion_tokens"]


class TestDailyBudgetStopsEveryKindOfCall(ModelBase):
    def setUp(self):
        super().setUp()
        spending.reset_cache()
        self.addCleanup(spending.reset_cache)
        window = override_settings(EVENNIA_AI_CONTEXT_WINDOWS={"openai/test-model": 128000})
        window.enable()
        self.addCleanup(window.disable)
        self.npc.ai.set_execution_config(sub_agents_enabled=True, sub_agent_budget=2)
        self.npc.ai.update_goals(lambda g: add_goal(g, "Stock the cellar", tick=1))
        self.npc.ai.set("budget", {"tokens": 1000})  # this NPC's daily limit

    def test_the_budget_reached_mid_tick_stops_helpers_decomposition_and_the_loop(self):
        goal_id = self.npc.ai.goals[0]["id"]
        self.server.enqueue(
            {
                "tool_calls": [call("delegate_task", task="Count the barrels")],
                "usage": {"prompt_tokens": 400, "completion_tokens": 10},
            },
            {"tool_calls": [call("look")], "usage": {"prompt_tokens": 700}},  # helper: over now
            {
                "tool_calls": [
                    call("decompose_goal", goal_id=goal_id),
                    call("delegate_task", task="Sweep the floor"),
                ],
                "usage": {"prompt_tokens": 10},
            },
        )
        patch, autonomy = autonomous_loop()
        with patch, autonomy:
            trace = self.tick()
        served = self.server.usage_totals()
        assert served["answers"] == 2  # the helper's second call and the loop's next one: none
        assert trace.stop_reason == "budget", trace.stop_reason
        helper = trace.tool_calls[0]
        assert helper.name == "delegate_task" and helper.success  # it reported what it had
        assert self.npc.ai.metrics["prompt_tokens"] == served["prompt_tokens"]

    def test_tools_refuse_paid_calls_once_the_budget_is_reached(self):
        from evennia_ai.tools import load_builtin_tools
        from evennia_ai.tools.base import TickServices, ToolContext
        from evennia_ai.tools.registry import TOOL_REGISTRY

        load_builtin_tools()
        ctx = ToolContext(npc=self.npc, services=TickServices(budget_reached=lambda: True))
        goal_id = self.npc.ai.goals[0]["id"]
        refused = TOOL_REGISTRY.get("decompose_goal").safe_run(ctx, {"goal_id": goal_id})
        assert not refused.success and "budget is reached" in refused.error
        assert not self.server.requests


class TestSummaryThatFails(ModelBase):
    def compact_with(self, summary_reply):
        history = hist.append_tick(
            [], 1, [{"role": "user", "content": f"Line {i}."} for i in range(30)], 200
        )
        self.npc.ai.set("history", history)
        self.npc.ai.set("compaction", {"pending": True, "last_tick": None})
        self.server.enqueue({"tool_calls": [call("noop")]}, summary_reply)
        with override_settings(
            EVENNIA_AI_COMPACTION_STRATEGY="summarize", EVENNIA_AI_COMPACTION_KEEP_RECENT=0
        ):
            trace = self.tick()
        return history, trace

    def test_an_empty_summary_leaves_the_history_untouched_and_is_in_the_trace(self):
        history, trace = self.compact_with({"text": "   "})
        assert self.npc.ai.history[: len(history)] == history  # then the tick's own lines
        assert "empty summary" in trace.error and "left as it was" in trace.error
        assert self.npc.ai.compaction["pending"] is False
        assert "empty summary" in self.npc.ai.compaction["error"]

    def test_a_failed_summary_call_leaves_the_history_untouched(self):
        history, trace = self.compact_with({"fault": "500"})
        assert self.npc.ai.history[: len(history)] == history  # then the tick's own lines
        assert "summarising history failed" in trace.error

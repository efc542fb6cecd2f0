"""The ``delegate_task`` helper (engine/delegate.py) without a database: what it is refused,
the context it runs in, and that its loop runs on the tick's services with its own cap."""

from types import SimpleNamespace

import pytest
from django.test import override_settings

from evennia_ai.engine.delegate import helper_context, helper_refusal, run_helper
from evennia_ai.llm.usage import UsageAccountant, UsageRecord
from evennia_ai.prompt.builder import schema_name
from evennia_ai.prompt.execution_pattern import ExecutionPattern
from evennia_ai.testing.scripted_model import ScriptedModel
from evennia_ai.tools.base import (
    LoopState,
    TickServices,
    Tool,
    ToolCategory,
    ToolContext,
    ToolResult,
)
from evennia_ai.tools.rules import ToolRule, ToolRuleState


class Look(Tool):
    name = "look"
    description = "Look around."
    parameters = {"type": "object", "properties": {}}

    def run(self, ctx):
        return ToolResult.ok("A fire and a bar.")


class Say(Tool):
    name = "say"
    description = "Say something."
    parameters = {"type": "object", "properties": {"message": {"type": "string"}}}
    category = ToolCategory.TERMINAL

    def run(self, ctx, message=""):
        return ToolResult.ok(message)


class Wipe(Tool):
    name = "wipe_world"
    description = "Delete everything."
    category = ToolCategory.DANGEROUS

    def run(self, ctx):
        return ToolResult.ok("wiped")


def parent_pattern(sub_agents=True, budget=2, iterations=5):
    return ExecutionPattern(
        mode="react_loop",
        max_iterations=iterations,
        allowed_categories=None,
        terminal_ends_loop=True,
        dangerous_requires_confirm=True,
        multi_tool_enabled=True,
        sub_agents_enabled=sub_agents,
        sub_agent_budget=budget,
    )


def tick_context(client=None, **services):
    """A tick's ToolContext: an NPC without a database, the tick's services."""
    npc = SimpleNamespace(
        key="Innkeeper",
        dbref="#6",
        ndb=SimpleNamespace(ai_sub_agents=0),
        ai=SimpleNamespace(persona="A friendly innkeeper.", user_system_prompt="", tool_rules=[]),
    )
    services.setdefault("pattern", parent_pattern())
    services.setdefault("tools", [Look(), Say(), Wipe()])
    services.setdefault("usage", UsageAccountant())
    lent = TickServices(client=client, model="openai/npc-own", **services)
    return ToolContext(npc=npc, tick_id=7, context_type="tick_event", services=lent)


@pytest.mark.parametrize(
    "change, refusal",
    [
        ({"pattern": parent_pattern(sub_agents=False)}, "Sub-agents are not allowed here."),
        ({"depth": 1}, "A helper cannot start helpers of its own."),
        ({"running": 2}, "Already 2 helpers running (budget 2); wait for them."),
        ({"budget_reached": lambda: True}, "Today's budget is reached"),
        ({"started": 2}, "At most 2 helpers may be started in one turn"),
        ({"client": None}, "No model client available for a helper."),
    ],
)
def test_helper_refusals(change, refusal):
    change = dict(change)
    client = change.pop("client", ScriptedModel())
    ctx = tick_context(client, **({"pattern": change["pattern"]} if "pattern" in change else {}))
    ctx.services.budget_reached = change.get("budget_reached")
    ctx.state.depth = change.get("depth", 0)
    ctx.state.helpers_started = change.get("started", 0)
    ctx.npc.ndb.ai_sub_agents = change.get("running", 0)
    assert helper_refusal(ctx).startswith(refusal)
    result = run_helper(ctx, "Look around")
    assert not result.success and result.error.startswith(refusal)
    assert ctx.npc.ndb.ai_sub_agents == change.get("running", 0)  # nothing was started


def test_helper_context_shares_the_ticks_count_cache_and_accountant():
    ctx = tick_context(ScriptedModel(), pattern=parent_pattern(iterations=2))
    ctx.services.rule_state = ToolRuleState([ToolRule.max_calls("look", 1)])
    child = helper_context(ctx)
    assert child.services.rule_state is ctx.services.rule_state
    assert child.services.usage is ctx.services.usage
    assert child.services.client is ctx.services.client
    assert child.services.model == "openai/npc-own"
    assert child.cache is ctx.cache and child.cache_reads is ctx.cache_reads
    assert [t.name for t in child.services.tools] == ["look"]  # no TERMINAL, no DANGEROUS
    assert child.services.pattern.max_iterations == 2  # never more than its parent's
    assert not child.services.pattern.sub_agents_enabled
    assert child.state.depth == 1 and child.tick_id == 7
    assert ctx.services.tools != child.services.tools  # the parent's services are untouched


def test_the_helpers_loop_runs_on_the_ticks_services():
    model = ScriptedModel()
    model.enqueue({"tool_calls": [{"name": "look", "arguments": {}}]}, {"text": "A fire."})
    ctx = tick_context(model)
    parent_offer = ctx.services.offer_tools = lambda names: []
    ctx.services.rule_state = ToolRuleState([])
    result = run_helper(ctx, "Look around").result
    assert result.success and result.content["report"] == "A fire."
    assert result.content["tools_used"] == ["look"]
    assert [r["model"] for r in model.requests] == ["openai/npc-own"] * 2
    assert {r["options"]["kind"] for r in model.requests} == {"delegate"}
    assert [schema_name(s) for s in model.requests[0]["tools"]] == ["look"]
    assert model.requests[0]["options"]["prompt_tokens"] is None  # the gate counts it
    assert [r.kind for r in ctx.services.usage.records] == ["delegate", "delegate"]
    assert ctx.services.rule_state.calls == ["look"]  # the helper's call joined the tick's count
    assert ctx.services.offer_tools is parent_offer  # request_tools still asks the tick's loop
    assert ctx.state.helpers_started == 1 and ctx.npc.ndb.ai_sub_agents == 0
    assert result.data["trace"]["context_type"] == "sub_agent"


def test_the_helpers_budget_caps_its_own_calls_not_the_ticks():
    model = ScriptedModel()
    model.default_reply = {"tool_calls": [{"name": "look", "arguments": {}}]}
    usage = UsageAccountant()
    usage.record(UsageRecord(kind="act", prompt_tokens=50_000))  # the tick spent a lot already
    ctx = tick_context(model, usage=usage)
    with override_settings(EVENNIA_AI_HELPER_TOKEN_BUDGET=1):
        result = run_helper(ctx, "Look around").result
    assert len(model.requests) == 1  # the first call is the helper's own; then its cap is spent
    assert result.content["stop_reason"] == "budget"


def test_a_helper_context_has_its_own_loop_state():
    ctx = tick_context(ScriptedModel())
    ctx.state = LoopState(iteration=3, helpers_started=1, window=8000)
    child = helper_context(ctx)
    assert child.state.iteration == 1 and child.state.helpers_started == 0

"""Helpers (sub-agents): the child ReAct loop behind the ``delegate_task`` tool.

The tool itself (name, arguments, category) is declared in :mod:`evennia_ai.tools.delegate`; the
tick hands it :func:`run_helper` as the ``run_helper`` service. The child gets its own short
context (:func:`helper_messages`: the operator's section, the trust note, the task, the NPC's
identity and persona), the parent's tools less those a helper may not use
(:func:`evennia_ai.tools.delegate.helper_tools`: never DANGEROUS, TERMINAL or ``delegate_task``;
the self-modifying and destructive ones only with ``EVENNIA_AI_HELPER_TOOLS_UNRESTRICTED``), at
most 3 iterations, and returns its final text as the tool result. The parent's tool rules hold
in the helper with the parent's counts (one :class:`~evennia_ai.tools.rules.ToolRuleState` for
the tick), and the two share the tick's tool cache, so what the helper writes is read afresh by
its parent. It is refused past ``sub_agent_budget`` concurrent children, or where any layer
forbids sub-agents (the execution pattern's ``sub_agents_enabled``). Its model calls go through
the same client (a thread each); its trace is attached to the parent's result.
"""

from __future__ import annotations

from dataclasses import replace

from twisted.internet import defer

from evennia_ai import conf
from evennia_ai.engine.react import LoopOutcome, LoopRequest, ReactLoop, TickLimits
from evennia_ai.engine.trace import TickTrace
from evennia_ai.llm.contracts import render_task
from evennia_ai.npc_state import npc_state
from evennia_ai.prompt.builder import OperatorSourceError, read_operator_override
from evennia_ai.prompt.execution_pattern import ExecutionPattern
from evennia_ai.prompt.operator import section_for
from evennia_ai.tools.base import LoopState, ToolContext, ToolResult
from evennia_ai.tools.delegate import helper_tools
from evennia_ai.wording import CHILD_PROMPT, DELEGATE_INSTRUCTION, TRUST_NOTE

CHILD_ITERATIONS = 3


def helper_messages(npc, task: str) -> list[dict]:
    """The first request of a helper of ``npc``.

    The operator's section and the trust note open its system message, as in every acting
    request (:func:`~evennia_ai.prompt.operator.section_for`); then whom it works for, and the
    delegated task.

    Raises:
        OperatorSourceError: The operator's override file is configured but cannot be read:
            no helper runs without the operator's instructions.
    """
    section = section_for(npc, read_operator_override(), TRUST_NOTE)
    system = section.system_message(
        CHILD_PROMPT.format(name=npc.key, persona=npc_state(npc).persona or "-")
    )
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": render_task("delegate", DELEGATE_INSTRUCTION, {"task": task})},
    ]


def run_helper(ctx: ToolContext, task: str):
    """Run a helper on ``task`` for the NPC of ``ctx``; returns a ToolResult or a Deferred of one."""
    refusal = helper_refusal(ctx)
    if refusal:
        return ToolResult.fail(refusal)
    npc = ctx.npc
    try:
        messages = helper_messages(npc, task)
    except OperatorSourceError as err:
        return ToolResult.fail(f"No helper was started: {err}.")
    trace = TickTrace(tick_id=ctx.tick_id, context_type="sub_agent")
    loop = ReactLoop(
        helper_context(ctx),
        LoopRequest(messages),  # not counted: the client's gate checks each request's window
        trace=trace,
        limits=TickLimits(max_tokens=conf.get_int("EVENNIA_AI_HELPER_TOKEN_BUDGET")),
        record_as="delegate",
    )
    ctx.state.helpers_started += 1
    npc.ndb.ai_sub_agents = int(npc.ndb.ai_sub_agents or 0) + 1

    def finished(outcome):
        npc.ndb.ai_sub_agents = max(0, int(npc.ndb.ai_sub_agents or 1) - 1)
        return helper_report(outcome, trace)

    def failed(failure):
        npc.ndb.ai_sub_agents = max(0, int(npc.ndb.ai_sub_agents or 1) - 1)
        return ToolResult.fail(f"The helper failed: {failure.getErrorMessage()}")

    return defer.maybeDeferred(loop.run).addCallbacks(finished, failed)


def helper_refusal(ctx: ToolContext) -> str | None:
    """Why no helper may be started from ``ctx`` now, in words for the model, or None.

    Sub-agents must be allowed by the execution pattern, a helper starts none of its own, at
    most ``sub_agent_budget`` run at once and ``EVENNIA_AI_HELPERS_PER_TICK`` start in one
    tick, today's budget must not be reached, and a model client must be at hand.
    """
    services = ctx.services
    pattern = services.pattern
    if pattern is None or not getattr(pattern, "sub_agents_enabled", False):
        return "Sub-agents are not allowed here."
    if ctx.state.depth >= 1:
        return "A helper cannot start helpers of its own."
    running = int(ctx.npc.ndb.ai_sub_agents or 0)
    budget = int(getattr(pattern, "sub_agent_budget", 0) or 0)
    if running >= budget:
        return f"Already {running} helpers running (budget {budget}); wait for them."
    if services.over_budget():
        return "Today's budget is reached: no helper can be started."
    per_tick = conf.get_int("EVENNIA_AI_HELPERS_PER_TICK")
    if ctx.state.helpers_started >= per_tick:
        return (
            f"At most {per_tick} helpers may be started in one turn; do the rest yourself or "
            "next turn."
        )
    if services.client is None:
        return "No model client available for a helper."
    return None


def helper_context(ctx: ToolContext) -> ToolContext:
    """The ToolContext of a helper of the tick of ``ctx``.

    The same NPC, tick, event, tool cache and services, with the tools a helper may use
    (:func:`~evennia_ai.tools.delegate.helper_tools`) and its own execution pattern: at most
    :data:`CHILD_ITERATIONS` iterations (fewer when the parent's pattern allows fewer), no
    helpers of its own. The services keep the parent's tool-rule count, so the helper's calls
    join it, and the tick's accountant, which every call of the helper is recorded on.
    """
    services = ctx.services
    child_pattern = ExecutionPattern(
        mode="react_loop",
        max_iterations=min(CHILD_ITERATIONS, services.pattern.max_iterations),
        allowed_categories=None,
        terminal_ends_loop=True,
        dangerous_requires_confirm=True,
        multi_tool_enabled=True,
        sub_agents_enabled=False,
    )
    return ToolContext(
        npc=ctx.npc,
        script=ctx.script,
        tick_id=ctx.tick_id,
        context_type=ctx.context_type,
        event=ctx.event,
        cache=ctx.cache,  # one tick, one cache: a write by either is read afresh by both
        cache_reads=ctx.cache_reads,
        state=LoopState(depth=ctx.state.depth + 1),
        services=replace(services, tools=helper_tools(services.tools), pattern=child_pattern),
    )


def helper_report(outcome: LoopOutcome, trace: TickTrace) -> ToolResult:
    """What the helper's parent reads: its final text as the report, how it stopped, the tools
    it used; its trace rides along in the result's data."""
    text = outcome.final_text or "(the helper produced no report)"
    return ToolResult.ok(
        {
            "success": outcome.stop_reason.value != "error",
            "report": text,
            "stop_reason": outcome.stop_reason.value,
            "tools_used": outcome.tool_names,
        },
        data={"trace": trace.to_dict()},
    )

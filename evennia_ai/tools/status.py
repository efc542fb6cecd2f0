"""Self-monitoring and self-modification tools: status, own guidelines, sleep, noop."""

from __future__ import annotations

from datetime import timedelta

from evennia_ai.llm import tokens
from evennia_ai.npc_state import npc_state
from evennia_ai.tools.base import Tool, ToolCategory, ToolResult
from evennia_ai.tools.registry import register_tool
from evennia_ai.utils import iso_utc, utcnow
from evennia_ai.workspace.sleep import go_to_sleep


@register_tool
class GetSystemStatus(Tool):
    name = "get_system_status"
    group = "self"
    description = (
        "Check your own resources: how full your context window is (with an advisory), where "
        "you are in the current loop, and your tool success since your script started."
    )
    parameters = {"type": "object", "properties": {}, "additionalProperties": False}
    category = ToolCategory.SAFE_CHAIN

    def run(self, ctx):
        state = ctx.state
        window = state.window or tokens.get_context_window(ctx.services.model)
        used = state.request_tokens
        metrics = state.metrics or (npc_state(ctx.npc).metrics if ctx.npc else {}) or {}
        return ToolResult.ok(
            {
                "success": True,
                "timestamp": iso_utc(precise=True),
                "token_usage": {
                    "estimated_used": used,
                    "model_limit": window,
                    "available": max(0, window - used),
                    "usage_percentage": round(100.0 * used / window, 1) if window else 0.0,
                },
                "token_advisory": tokens.advisory(used, window),
                "loop_state": {
                    "iteration": state.iteration,
                    "max_iterations": state.max_iterations,
                    "tools_this_cycle": list(state.tools_this_cycle),
                    "tool_count_this_cycle": state.tool_count_this_cycle,
                },
                "session_metrics": {
                    "total_tool_calls": metrics.get("total_tool_calls", 0),
                    "successful_calls": metrics.get("successful_calls", 0),
                    "failed_calls": metrics.get("failed_calls", 0),
                    "session_start": metrics.get("session_start"),
                },
                "chain_state": {
                    "in_chain": state.in_chain,
                    "chain_depth": state.depth,
                    "pending_tools": list(state.pending_tools),
                },
            }
        )


@register_tool
class UpdateSystemPrompt(Tool):
    name = "update_system_prompt"
    group = "self"
    description = (
        "Replace your own behavioural guidelines (not the operator's instructions, which you "
        "cannot change). Give the full new text and why."
    )
    parameters = {
        "type": "object",
        "properties": {
            "new_prompt": {"type": "string", "minLength": 1, "maxLength": 4000},
            "reasoning": {"type": "string", "minLength": 1, "maxLength": 1000},
        },
        "required": ["new_prompt", "reasoning"],
        "additionalProperties": False,
    }
    category = ToolCategory.SAFE_CHAIN

    def run(self, ctx, new_prompt, reasoning):
        # Only the assistant's own prompt is reachable from here; user_system_prompt is never
        # written by any tool.
        npc_state(ctx.npc).set_assistant_system_prompt(
            new_prompt.strip(), reasoning=reasoning.strip()
        )
        return ToolResult.ok(
            {
                "success": True,
                "message": "Your guidelines were updated. The operator's "
                "instructions still take precedence.",
            }
        )


@register_tool
class GoToSleep(Tool):
    name = "go_to_sleep"
    group = "self"
    description = (
        "Go to sleep now: consolidate your journal and recent conversations into lasting memory. "
        "You wake when your sleep window ends or, if allowed, when someone addresses you."
    )
    parameters = {
        "type": "object",
        "properties": {"minutes": {"type": "integer", "minimum": 1, "maximum": 720}},
        "additionalProperties": False,
    }
    category = ToolCategory.TERMINAL

    def run(self, ctx, minutes=60):
        until = iso_utc(utcnow() + timedelta(minutes=minutes))
        go_to_sleep(ctx.npc, "go_to_sleep tool", until=until)
        return ToolResult.ok({"success": True, "asleep_until": until}, terminal=True)


@register_tool
class Noop(Tool):
    name = "noop"
    group = "conversation"
    description = "Do nothing this turn (when nothing needs doing)."
    parameters = {"type": "object", "properties": {"reason": {"type": "string"}}}
    category = ToolCategory.TERMINAL

    def run(self, ctx, reason=""):
        return ToolResult.ok({"success": True, "message": "Nothing done."}, terminal=True)

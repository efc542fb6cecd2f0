"""``delegate_task``: hand a self-contained sub-task to a helper that reports back in text.

The helper's loop is the engine's (:func:`evennia_ai.engine.delegate.run_helper`), handed to
the tool by the tick as the ``run_helper`` service; outside a tick there is no helper to run.
"""

from __future__ import annotations

from evennia_ai.tools.base import Tool, ToolCategory, ToolContext, ToolResult
from evennia_ai.tools.registry import register_tool


@register_tool
class DelegateTask(Tool):
    name = "delegate_task"
    group = "goals"
    description = (
        "Hand a self-contained sub-task (e.g. 'inspect the cellar and list what is there') to a "
        "helper that works with your safe tools and reports back in text."
    )
    parameters = {
        "type": "object",
        "properties": {"task": {"type": "string", "minLength": 5, "maxLength": 2000}},
        "required": ["task"],
        "additionalProperties": False,
    }
    category = ToolCategory.ASYNC_REQUIRED
    needs_sub_agents = True  # offered only where a layer enables sub-agents

    def run(self, ctx: ToolContext, task: str):
        run_helper = ctx.services.run_helper
        if run_helper is None:
            return ToolResult.fail("No helper can run here.")
        return run_helper(ctx, task)

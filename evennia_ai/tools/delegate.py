"""``delegate_task``: hand a self-contained sub-task to a helper that reports back in text.

The helper's loop is the engine's (:func:`evennia_ai.engine.delegate.run_helper`), handed to
the tool by the tick as the ``run_helper`` service; outside a tick there is no helper to run.

What a helper may use is decided here (:func:`helper_tools`): its parent's tools, which the
tick already narrowed by the context's filter, the categories, the NPC's allow and deny lists
and the locks, less

- always: DANGEROUS tools (a helper has no way to ask an operator's approval), TERMINAL tools
  (speech and the end of the turn are the parent's) and ``delegate_task`` itself;
- unless ``EVENNIA_AI_HELPER_TOOLS_UNRESTRICTED`` is set: the tools that change the NPC itself
  or undo what cannot be taken back (:data:`HELPER_WITHHELD_TOOLS`).
"""

from __future__ import annotations

from typing import Iterable

from evennia_ai import conf
from evennia_ai.tools.base import Tool, ToolCategory, ToolContext, ToolResult
from evennia_ai.tools.blocks import BlockWriteTool
from evennia_ai.tools.registry import register_tool

BLOCK_WRITE_TOOLS = frozenset(tool.name for tool in BlockWriteTool.__subclasses__())
"""The tools that write the NPC's memory blocks."""

HELPER_WITHHELD_TOOLS = (
    frozenset(
        {
            "update_system_prompt",  # the NPC's own guidelines
            "archival_delete",  # forgets for good
            "move",  # the NPC leaves the room its parent's tick is in
            "give",  # what is given is gone
            "drop",
            "get",
            "trade",  # an offer binds the NPC to a player
        }
    )
    | BLOCK_WRITE_TOOLS
)
"""Tools a helper does not get unless ``EVENNIA_AI_HELPER_TOOLS_UNRESTRICTED``: those that
change the NPC itself (its guidelines, its memory blocks, its archive) or its place and
belongings. A game adds its own names to this set to keep them from helpers too."""

HELPER_NEVER_CATEGORIES = frozenset({ToolCategory.DANGEROUS, ToolCategory.TERMINAL})
"""Categories a helper never gets, whatever the settings."""


def helper_tools(tools: Iterable[Tool], unrestricted: bool | None = None) -> list[Tool]:
    """The tools a ``delegate_task`` helper may use, from its parent's (see the module docs).

    Args:
        tools: The parent tick's tools (already filtered by context, categories, the NPC's
            lists and the locks); a helper never gets a tool its parent lacks.
        unrestricted: Whether :data:`HELPER_WITHHELD_TOOLS` are allowed; None reads
            ``EVENNIA_AI_HELPER_TOOLS_UNRESTRICTED``.
    """
    if unrestricted is None:
        unrestricted = conf.get_bool("EVENNIA_AI_HELPER_TOOLS_UNRESTRICTED")
    return [
        tool
        for tool in tools
        if tool.category not in HELPER_NEVER_CATEGORIES
        and tool.name != DelegateTask.name
        and (unrestricted or tool.name not in HELPER_WITHHELD_TOOLS)
    ]


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

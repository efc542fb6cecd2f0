"""Tools an assistant acts through.

- :mod:`~evennia_ai.tools.base`: the :class:`Tool` class, :class:`ToolCategory`,
  :class:`ToolResult`, :class:`ToolContext` and argument validation;
- :mod:`~evennia_ai.tools.registry`: the :class:`ToolRegistry` an NPC draws its tool set from
  (:data:`TOOL_REGISTRY`, :func:`register_tool`);
- :mod:`~evennia_ai.tools.rules`: tool rules (:class:`ToolRule`, :class:`ToolRuleState`,
  :func:`render_tool_rules`).

These three are pure (no Django, Evennia or Twisted at import). The tool families (world,
workspace, status, delegate_task, entities, long-term memory, ...) register themselves when
imported; :func:`load_builtin_tools` imports them all.
"""

import importlib

from evennia_ai.npc_state import npc_state
from evennia_ai.tools.base import ALL_CATEGORIES, Tool, ToolCategory, ToolContext, ToolResult
from evennia_ai.tools.registry import TOOL_REGISTRY, ToolRegistry, register_tool
from evennia_ai.tools.rules import ToolRule, ToolRuleState, render_tool_rules

BUILTIN_TOOL_MODULES = (
    "evennia_ai.tools.world",
    "evennia_ai.tools.trade",
    "evennia_ai.tools.workspace",
    "evennia_ai.tools.status",
    "evennia_ai.tools.delegate",
    "evennia_ai.tools.entities",
    "evennia_ai.tools.blocks",
    "evennia_ai.tools.longterm",
)

__all__ = [
    "ALL_CATEGORIES",
    "BUILTIN_TOOL_MODULES",
    "TOOL_REGISTRY",
    "Tool",
    "ToolCategory",
    "ToolContext",
    "ToolRegistry",
    "ToolResult",
    "ToolRule",
    "ToolRuleState",
    "load_builtin_tools",
    "register_tool",
    "render_tool_rules",
    "select_tools",
]


def load_builtin_tools() -> None:
    """Import every built-in tool module so its tools are registered (idempotent)."""
    for path in BUILTIN_TOOL_MODULES:
        importlib.import_module(path)


def select_tools(npc, config) -> list:
    """The tools ``npc`` may use in a context: context filter, categories, NPC sets, locks.

    Args:
        npc: The assistant (its ``tool_allow`` / ``tool_deny`` state narrows the set).
        config: The context's config (its ``tool_filter`` and ``allowed_tool_categories``).
    """
    load_builtin_tools()
    state = npc_state(npc)
    allowed = state.tool_allow
    denied = state.tool_deny or []
    return TOOL_REGISTRY.select(
        npc=npc,
        tool_filter=config.tool_filter,
        allowed_categories=config.allowed_tool_categories,
        npc_allowed=set(allowed) if allowed is not None else None,
        npc_denied=set(denied),
    )

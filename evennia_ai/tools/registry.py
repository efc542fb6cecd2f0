"""The tool registry an assistant draws its tool set from.

:meth:`ToolRegistry.select` applies every restriction in turn, and each can only remove tools:
the context type's tool filter (None = all, [] = none), the allowed categories, the NPC's own
allow/deny sets, and each tool's Evennia lock checked against the NPC.

Example:
    @register_tool
    class Wave(Tool):
        name = "wave"
        description = "Wave at someone."
        parameters = {"type": "object", "properties": {"target": {"type": "string"}}}
        def run(self, ctx, target=""):
            ...
"""

from __future__ import annotations

from typing import Iterable

from evennia_ai.tools.base import Tool


class ToolRegistry:
    """Name -> tool instance."""

    def __init__(self):
        self._tools: dict[str, Tool] = {}

    def register(self, tool):
        """Register a Tool class or instance (usable as a class decorator); returns it."""
        instance = tool() if isinstance(tool, type) else tool
        if not instance.name:
            raise ValueError(f"{tool!r} has no name")
        self._tools[instance.name] = instance
        return tool

    def unregister(self, name: str) -> None:
        self._tools.pop(name, None)

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return sorted(self._tools)

    def all(self) -> list[Tool]:
        return [self._tools[name] for name in self.names()]

    def select(
        self,
        npc=None,
        tool_filter: Iterable[str] | None = None,
        allowed_categories: Iterable[str] | None = None,
        npc_allowed: set | None = None,
        npc_denied: set | None = None,
        extra_filter=None,
    ) -> list[Tool]:
        """The tools an NPC may use now (see module docstring)."""
        tools = self.all()
        if tool_filter is not None:
            wanted = set(tool_filter)
            tools = [t for t in tools if t.name in wanted]
        if allowed_categories is not None:
            categories = set(allowed_categories)
            tools = [t for t in tools if t.category in categories]
        if npc_allowed is not None:
            tools = [t for t in tools if t.name in npc_allowed]
        if npc_denied:
            tools = [t for t in tools if t.name not in npc_denied]
        if extra_filter is not None:
            tools = [t for t in tools if extra_filter(t)]
        return [t for t in tools if passes_lock(npc, t)]


def passes_lock(npc, tool: Tool) -> bool:
    """Whether ``npc`` passes ``tool.lock`` (tools without a lock always pass)."""
    if not tool.lock:
        return True
    if npc is None:
        return False
    from evennia.locks.lockhandler import check_lockstring

    lockstring = tool.lock if ":" in tool.lock else f"use:{tool.lock}"
    try:
        return bool(check_lockstring(npc, lockstring, access_type="use"))
    except Exception:
        return False


TOOL_REGISTRY = ToolRegistry()


def register_tool(tool):
    """Class decorator registering a tool in :data:`TOOL_REGISTRY`."""
    return TOOL_REGISTRY.register(tool)

"""The tool registry an assistant draws its tool set from.

Tools register by name, usually with the :func:`register_tool` class decorator in their
module; :func:`evennia_ai.tools.load_builtin_tools` imports the built-in modules. A later
registration under the same name replaces the earlier one, so a game can override a built-in
tool by registering its own after the built-ins are loaded.

:meth:`ToolRegistry.select` draws the tool set of one NPC in one context. Each layer can only
remove tools, never add them back:

1. the context type's tool filter (None: every tool; ``[]``: none);
2. the allowed categories (None: every category);
3. the NPC's own allow list (None: no allow list) and deny list;
4. an optional extra predicate;
5. each tool's Evennia lock, checked against the NPC (:func:`passes_lock`), and whether the
   tool is of use to it at all (:meth:`Tool.of_use_to`: a shop's tools to an NPC with goods).

Example:
    @register_tool
    class Wave(Tool):
        name = "wave"
        description = "Wave at someone."
        parameters = {"type": "object", "properties": {"target": {"type": "string"}}}

        def run(self, ctx, target=""):
            return ToolResult.ok(f"You wave at {target or 'everyone'}.")

    tools = TOOL_REGISTRY.select(npc, tool_filter=["look", "wave"], npc_denied={"look"})
"""

from __future__ import annotations

import logging
import re
from typing import Callable, Iterable, Iterator

from evennia_ai.tools.arguments import schema_problems
from evennia_ai.tools.base import ALL_CATEGORIES, Tool

_log = logging.getLogger("evennia_ai")

TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
"""Names providers accept for functions."""


def tool_problems(tool: Tool) -> list[str]:
    """What keeps ``tool`` from being offered to a model (empty when it is fine)."""
    problems = []
    name = getattr(tool, "name", None)
    if not isinstance(name, str) or not TOOL_NAME.match(name):
        problems.append(f"name {name!r} must be 1-64 letters, digits, '_' or '-'")
    if tool.category not in ALL_CATEGORIES:
        problems.append(f"category {tool.category!r} is not one of {', '.join(ALL_CATEGORIES)}")
    if not isinstance(tool.description, str):
        problems.append("description must be a string")
    if not isinstance(tool.lock or "", str):
        problems.append("lock must be an Evennia lock string")
    problems += schema_problems(tool.parameters)
    return problems


def _as_set(names) -> set:
    """A set of names; a lone string is one name, not its letters."""
    if isinstance(names, str):
        return {names}
    return set(names)


class ToolRegistry:
    """Tools by name.

    Args:
        tools: Tool classes or instances to register at once.
    """

    def __init__(self, tools: Iterable = ()):
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.register(tool)

    def register(self, tool):
        """Register a Tool class (instantiated without arguments) or instance.

        Usable as a class decorator; returns ``tool`` unchanged.

        Raises:
            TypeError: If ``tool`` is not a Tool.
            ValueError: If its name, category, lock or argument schema is malformed.
        """
        instance = tool() if isinstance(tool, type) else tool
        if not isinstance(instance, Tool):
            raise TypeError(f"{tool!r} is not a Tool (subclass evennia_ai.tools.base.Tool)")
        problems = tool_problems(instance)
        if problems:
            raise ValueError(
                f"Cannot register tool {type(instance).__name__}: " + "; ".join(problems)
            )
        self._tools[instance.name] = instance
        return tool

    def unregister(self, name: str) -> bool:
        """Remove the tool called ``name``; returns whether there was one."""
        return self._tools.pop(name, None) is not None

    def get(self, name) -> Tool | None:
        """The tool called ``name``, or None (the loop answers with the available names)."""
        return self._tools.get(name) if isinstance(name, str) else None

    def names(self) -> list[str]:
        """Registered names, sorted."""
        return sorted(self._tools)

    def all(self) -> list[Tool]:
        """Registered tools, sorted by name."""
        return [self._tools[name] for name in self.names()]

    def __contains__(self, name) -> bool:
        return isinstance(name, str) and name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(self.all())

    def __len__(self) -> int:
        return len(self._tools)

    def select(
        self,
        npc=None,
        tool_filter: Iterable[str] | None = None,
        allowed_categories: Iterable[str] | None = None,
        extra_filter: Callable[[Tool], bool] | None = None,
        *,
        npc_allowed: Iterable[str] | None = None,
        npc_denied: Iterable[str] | None = None,
    ) -> list[Tool]:
        """The tools ``npc`` may use now, sorted by name (see the module docstring).

        Args:
            npc: The NPC the locks are checked against; None excludes every locked tool.
            tool_filter: Names the context type offers; None for all, empty for none.
            allowed_categories: Categories the execution pattern allows; None for all.
            extra_filter: A predicate a tool must pass (one that raises excludes the tool).
            npc_allowed: The NPC's own allow list; None for no allow list.
            npc_denied: The NPC's own deny list.
        """
        tools = self.all()
        if tool_filter is not None:
            wanted = _as_set(tool_filter)
            tools = [t for t in tools if t.name in wanted]
        if allowed_categories is not None:
            categories = _as_set(allowed_categories)
            tools = [t for t in tools if t.category in categories]
        if npc_allowed is not None:
            allowed = _as_set(npc_allowed)
            tools = [t for t in tools if t.name in allowed]
        if npc_denied:
            denied = _as_set(npc_denied)
            tools = [t for t in tools if t.name not in denied]
        if extra_filter is not None:
            tools = [t for t in tools if _passes(extra_filter, t)]
        return [t for t in tools if passes_lock(npc, t) and _of_use(npc, t)]


def _of_use(npc, tool: Tool) -> bool:
    """:meth:`Tool.of_use_to`, and False when it cannot tell (fails closed, logged)."""
    try:
        return bool(tool.of_use_to(npc))
    except Exception:
        _log.exception("evennia_ai: could not tell whether %r is of use; tool left out", tool.name)
        return False


def _passes(predicate: Callable[[Tool], bool], tool: Tool) -> bool:
    try:
        return bool(predicate(tool))
    except Exception:
        _log.exception(
            "evennia_ai: tool filter %r failed on %r; tool left out", predicate, tool.name
        )
        return False


def passes_lock(npc, tool: Tool) -> bool:
    """Whether ``npc`` passes ``tool.lock``.

    A tool without a lock always passes. The lock is a lock definition such as
    ``"perm(Builder)"`` or ``"perm(Builder) and not attr(muted)"``; it may carry an access type
    (``"use:perm(Builder)"``), and if it holds several, all must pass. It is checked with
    the NPC's own lock handler (Evennia's ``check_lockstring``) (superuser bypass as usual). Without an NPC,
    without Evennia, or when the lock is malformed, the tool is left out: locks fail closed.
    """
    lock = (tool.lock or "").strip()
    if not lock:
        return True
    if npc is None:
        return False
    try:
        return bool(npc.locks.check_lockstring(npc, lock))
    except Exception as err:
        _log.warning(
            "evennia_ai: lock %r of tool %r could not be checked (%s); tool left out",
            lock,
            tool.name,
            err,
        )
        return False


TOOL_REGISTRY = ToolRegistry()
"""The default registry every built-in tool registers in."""


def register_tool(tool):
    """Class decorator registering a tool in :data:`TOOL_REGISTRY`."""
    return TOOL_REGISTRY.register(tool)

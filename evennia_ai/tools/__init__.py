"""Tools an assistant acts through.

``base`` holds the :class:`~evennia_ai.tools.base.Tool` class, results and the context handed
to tools; ``registry`` the tool registry an NPC draws its tool set from; ``rules`` the tool
rules. The tool families (world, projects, goals, session memory, journal, status, ...) register
themselves when imported; :func:`load_builtin_tools` imports them all.
"""

BUILTIN_TOOL_MODULES = (
    "evennia_ai.tools.world",
    "evennia_ai.tools.workspace",
    "evennia_ai.tools.status",
    "evennia_ai.tools.delegate",
    "evennia_ai.tools.entities",
    "evennia_ai.tools.blocks",
    "evennia_ai.tools.longterm",
)


def load_builtin_tools() -> None:
    """Import every built-in tool module so its tools are registered (idempotent)."""
    import importlib

    for path in BUILTIN_TOOL_MODULES:
        try:
            importlib.import_module(path)
        except ModuleNotFoundError as err:
            if err.name != path:
                raise

"""evennia-ai: LLM-driven assistants and NPCs for Evennia.

Start with :class:`evennia_ai.typeclasses.AIAssistantCharacter` (or the
:class:`~evennia_ai.typeclasses.AIAssistantMixin`), the settings in :mod:`evennia_ai.conf`, and
``docs/`` in the repository.

The public names below are importable from here (``from evennia_ai import register_tool``) and
from the module each lives in. They are loaded on first use, so importing this package, or any
pure module of it, loads neither Django nor Evennia.
"""

import importlib

__version__ = "0.2.0"

# name -> the module that defines it (the stable place to import it from, too)
PUBLIC_NAMES = {
    # assistants and operator commands
    "AIAssistantMixin": "evennia_ai.typeclasses",
    "AIAssistantCharacter": "evennia_ai.typeclasses",
    "AIAdminCmdSet": "evennia_ai.commands.cmdset",
    "AITradeCmdSet": "evennia_ai.commands.trade",
    # custom tools
    "Tool": "evennia_ai.tools.base",
    "ToolCategory": "evennia_ai.tools.base",
    "ToolContext": "evennia_ai.tools.base",
    "ToolResult": "evennia_ai.tools.base",
    "object_schema": "evennia_ai.tools.base",
    "register_tool": "evennia_ai.tools.registry",
    "load_builtin_tools": "evennia_ai.tools",
    "select_tools": "evennia_ai.tools",
    # prompts and context
    "PromptComponent": "evennia_ai.prompt.components",
    "register_source": "evennia_ai.prompt.builder",
    "get_prompt_registry": "evennia_ai.prompt.registry",
    "effective_context_config": "evennia_ai.prompt.registry",
    # running work off the reactor, model access, spending
    "run_in_thread": "evennia_ai.llm.threads",
    "get_client": "evennia_ai.llm.client",
    "server_totals": "evennia_ai.npc.spending",
}

__all__ = sorted(PUBLIC_NAMES) + ["__version__"]


def __getattr__(name: str):
    module = PUBLIC_NAMES.get(name)
    if module is None:
        raise AttributeError(f"module 'evennia_ai' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__():
    return sorted(set(globals()) | set(PUBLIC_NAMES))

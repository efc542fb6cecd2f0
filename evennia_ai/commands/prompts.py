"""Admin commands over the prompt system: components, templates, the registry's JSON, context
configs, an NPC's execution config and the operator's few-shot examples.

Every command is thin glue over :mod:`evennia_ai.prompt.registry` (the game's store of
templates, components, context customisations and few-shots) and the NPC handler: the registry
validates everything and writes once, and its :class:`PromptRegistryError` messages are shown
to the caller as they are. ``aiprompt/show <context> = <npc>`` builds the request the way a tick
does (the same context config, tools, sources and assembly), without calling the model.

Text that came from operators or players (component contents, rendered prompts, exported
JSON) is shown with Evennia's ``|`` markup escaped, so it reads exactly as stored.

The commands live in modules by job and are re-exported here (the cmdset reads
:data:`COMMANDS`): :mod:`~evennia_ai.commands.prompt_edit` (``aiprompt``, ``aitemplate``),
:mod:`~evennia_ai.commands.prompt_io` (``airegistry``), :mod:`~evennia_ai.commands.prompt_config`
(``aicontext``, ``aiexec``, ``aifewshot``), and their shared helpers in
:mod:`~evennia_ai.commands.prompt_common`.
"""

from __future__ import annotations

from evennia_ai.commands.prompt_config import CmdAIContext, CmdAIExec, CmdAIFewshot
from evennia_ai.commands.prompt_edit import CmdAIPrompt, CmdAITemplate
from evennia_ai.commands.prompt_io import CmdAIRegistry

__all__ = [
    "COMMANDS",
    "CmdAIContext",
    "CmdAIExec",
    "CmdAIFewshot",
    "CmdAIPrompt",
    "CmdAIRegistry",
    "CmdAITemplate",
]

COMMANDS = [CmdAIPrompt, CmdAITemplate, CmdAIRegistry, CmdAIContext, CmdAIExec, CmdAIFewshot]

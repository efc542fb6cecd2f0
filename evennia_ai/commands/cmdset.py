"""The cmdset holding every evennia-ai admin command.

Add it to your game's ``CharacterCmdSet`` (in ``commands/default_cmdsets.py``)::

    from evennia_ai.commands import AIAdminCmdSet

    class CharacterCmdSet(default_cmds.CharacterCmdSet):
        def at_cmdset_creation(self):
            super().at_cmdset_creation()
            self.add(AIAdminCmdSet)

Each command is locked (``perm(Builder)``, or ``perm(Developer)`` for prompts, templates and
the execution config), so players without the permission neither see nor run them.
"""

from __future__ import annotations

import importlib

from evennia import CmdSet

# Modules whose ``COMMANDS`` list contributes to the cmdset, in help order.
COMMAND_MODULES = (
    "evennia_ai.commands.npcs",
    "evennia_ai.commands.prompts",
    "evennia_ai.commands.workspace",
    "evennia_ai.commands.memory",
    "evennia_ai.commands.runtime",
)


def all_command_classes() -> list[type]:
    """Every admin command class, from each module of :data:`COMMAND_MODULES`."""
    classes = []
    for path in COMMAND_MODULES:
        module = importlib.import_module(path)
        classes.extend(getattr(module, "COMMANDS", ()))
    return classes


class AIAdminCmdSet(CmdSet):
    """The evennia-ai admin commands."""

    key = "evennia_ai_admin"

    def at_cmdset_creation(self):
        for command in all_command_classes():
            self.add(command())

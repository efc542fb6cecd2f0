"""The cmdset holding every evennia-ai admin command.

Add it to your game's ``CharacterCmdSet`` (in ``commands/default_cmdsets.py``)::

    from evennia_ai.commands import AIAdminCmdSet

    class CharacterCmdSet(default_cmds.CharacterCmdSet):
        def at_cmdset_creation(self):
            super().at_cmdset_creation()
            self.add(AIAdminCmdSet)

Each command is locked (``perm(Builder)``, or ``perm(Developer)`` for prompts, templates and
the execution config), so players without the permission neither see nor run them. The one
command for everyone is ``page``: Evennia's own, answering a player who pages an AI NPC that
NPCs cannot be paged (a game with its own ``page`` keeps it with ``self.remove("page")`` after
adding the cmdset).
"""

from __future__ import annotations

import importlib
import inspect

from evennia.commands.cmdset import CmdSet
from evennia.utils.ansi import strip_ansi

from evennia_ai.commands.page import CmdPage
from evennia_ai.commands.trade import TRADE_COMMANDS

# Modules whose ``COMMANDS`` list contributes to the cmdset, in help order.
COMMAND_MODULES = (
    "evennia_ai.commands.npcs",
    "evennia_ai.commands.npc_lines",
    "evennia_ai.commands.world",
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


def help_text(command: type) -> str:
    """The help of ``command`` as ``help <command>`` shows it: its docstring, dedented, with
    Evennia's markup rendered as plain text (``||`` shows one ``|``)."""
    return strip_ansi(inspect.cleandoc(command.__doc__ or "").strip())


def render_commands_markdown() -> str:
    """Render the admin command reference (``docs/commands.md``) from the commands' docstrings.

    The docstrings are the in-game help, so the page and ``help <command>`` never disagree.
    """
    lines = [
        "# Admin command reference",
        "",
        "Every command below is in the help category `Artificial Intelligence` and comes with",
        "`AIAdminCmdSet` (see [installing.md](installing.md)). This page is generated from the",
        "commands' docstrings, which are also their in-game `help` entries, by",
        "`scripts/gen_command_docs.py` (a test keeps them in step).",
        "",
        "Replies and staff notices are wrapped to the width your client reports (78 columns",
        "when it reports none): long lines continue indented under their label, tables fit",
        "the width, and every help entry fits 80 columns. The one exception is",
        "`airegistry/export` without a file, whose JSON is shown as it is, to copy.",
        "",
        "| command | aliases | lock |",
        "|---|---|---|",
    ]
    commands = all_command_classes()
    for command in commands:
        aliases = ", ".join(f"`{alias}`" for alias in sorted(getattr(command, "aliases", []) or []))
        lines.append(f"| [`{command.key}`](#{command.key}) | {aliases} | `{command.locks}` |")
    for command in commands:
        doc = help_text(command)
        lines += ["", f"## {command.key}", "", "```", doc, "```"]
    lines += [
        "",
        "# Player commands",
        "",
        "`AITradeCmdSet` holds the players' trade commands (help category `Trade`, lock",
        "`cmd:all()`): they trade with an AI NPC that has goods (`aigoods`) and call no model.",
        "[installing.md](installing.md) says how to add the cmdset.",
    ]
    for command in TRADE_COMMANDS:
        aliases = ", ".join(f"`{alias}`" for alias in sorted(getattr(command, "aliases", []) or []))
        lines += ["", f"## {command.key}", ""]
        lines += [f"Aliases: {aliases}", ""] if aliases else []
        lines += ["```", help_text(command), "```"]
    return "\n".join(lines) + "\n"


class AIAdminCmdSet(CmdSet):
    """The evennia-ai admin commands, and ``page`` telling players that NPCs cannot be paged."""

    key = "evennia_ai_admin"

    def at_cmdset_creation(self):
        for command in all_command_classes():
            self.add(command())
        self.add(CmdPage())

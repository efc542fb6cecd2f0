"""
Command sets of the evennia-ai demo game (copied over the game template's by `make demo`).

The only change from Evennia's defaults: characters get the evennia-ai admin commands
(``ainpc``, ``aistatus``, ``aiprompt``, ...), each locked to ``perm(Builder)`` or
``perm(Developer)`` so players without the permission neither see nor run them, and the
players' trade commands (``wares``, ``buy``, ``sell``: ``help Trade``), which call no model.
"""

from evennia import default_cmds

from evennia_ai.commands import AIAdminCmdSet, AITradeCmdSet


class CharacterCmdSet(default_cmds.CharacterCmdSet):
    """In-game commands of a puppeted character, plus the evennia-ai admin and trade commands."""

    key = "DefaultCharacter"

    def at_cmdset_creation(self):
        super().at_cmdset_creation()
        self.add(AIAdminCmdSet)
        self.add(AITradeCmdSet)


class AccountCmdSet(default_cmds.AccountCmdSet):
    """Account-level commands (Evennia's defaults)."""

    key = "DefaultAccount"


class UnloggedinCmdSet(default_cmds.UnloggedinCmdSet):
    """Commands before login (Evennia's defaults)."""

    key = "DefaultUnloggedin"


class SessionCmdSet(default_cmds.SessionCmdSet):
    """Session-level commands (Evennia's defaults)."""

    key = "DefaultSession"

"""``page`` for players: Evennia's own, plus a clear answer when the target is an AI NPC.

AI NPCs have no account, and Evennia's ``page`` only reaches accounts: without this, ``page
Marta hello`` finds no Marta and sends "Marta hello" to whoever the player paged last.
"""

from __future__ import annotations

from evennia.commands.default.comms import CmdPage as EvenniaCmdPage

from evennia_ai.commands.base import FitsScreen
from evennia_ai.npc.lookup import NPCMatchError, find_ai_npc


class CmdPage(FitsScreen, EvenniaCmdPage):
    """
    send a private message to a player's account

    Usage:
      page <account> <message>
      page[/switches] [<account>,<account>,... = <message>]
      tell        ''
      page <number>

    Switches:
      last - show whom you paged last
      list - show your last <number> pages (the default)

    Pages reach players wherever they are; one who is offline reads them
    later. Without arguments you see your latest pages. Use = for several
    receivers, or for a name with spaces.

    AI NPCs have no account and cannot be paged: talk to them in their
    room with say, or whisper <npc> = <message>.
    """

    def func(self):
        npc = self.paged_npc()
        if npc is None:
            super().func()
            return
        self.msg(
            f"{npc.key} is an AI NPC, and NPCs cannot be paged (they have no account). Talk to "
            f"{npc.key} in the same room: |wsay <message>|n, or |wwhisper {npc.key} = <message>|n."
        )

    def target_names(self) -> list[str]:
        """The names this page is addressed to, read as Evennia's ``page`` reads them."""
        if not self.args or self.switches:
            return []
        if self.rhs:
            return [name.strip() for name in self.lhslist if name.strip()]
        first = self.args.split(" ", 1)[0].strip()
        return [] if not first or first.isnumeric() else [first]

    def paged_npc(self):
        """The AI NPC a target name means, when no account has that name; else None."""
        for name in self.target_names():
            if self.caller.search(name, quiet=True):
                continue  # an account: Evennia's page handles it
            try:
                return find_ai_npc(name)
            except NPCMatchError:
                continue
        return None

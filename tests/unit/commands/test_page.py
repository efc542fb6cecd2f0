"""``page`` tells a player that AI NPCs cannot be paged, and pages players as Evennia does."""

from evennia.commands.default.comms import CmdPage as EvenniaCmdPage
from support.commands import AICommandTestBase, words

from evennia_ai.commands.cmdset import AIAdminCmdSet
from evennia_ai.commands.page import CmdPage

NPC_ANSWER = "Innkeeper is an AI NPC, and NPCs cannot be paged (they have no account)."


class TestPage(AICommandTestBase):
    def call(self, cmdobj, args, msg=None, **kwargs):
        """page runs as the player's account (``account_caller``)."""
        return super().call(cmdobj, args, msg, caller=self.account, **kwargs)

    def test_paging_an_npc_says_to_talk_in_its_room(self):
        out = self.call(CmdPage(), "Innkeeper Is the stew ready?", NPC_ANSWER)
        assert "say <message>" in out and "whisper Innkeeper = <message>" in words(out)
        self.call(CmdPage(), "innkeeper = Is the stew ready?", NPC_ANSWER)
        self.call(CmdPage(), "TestAccount2, Innkeeper = hello", NPC_ANSWER)

    def test_paging_a_player_still_works(self):
        out = self.call(CmdPage(), "TestAccount2 = hello", "TestAccount2 is offline.")
        assert "You paged TestAccount2 with: 'hello'." in out
        out = self.call(CmdPage(), "TestAccount2 hi again", "TestAccount2 is offline.")
        assert "You paged TestAccount2 with: 'hi again'." in out
        self.call(CmdPage(), "/last", "You last paged TestAccount2")

    def test_it_is_evennias_page_for_everyone(self):
        assert issubclass(CmdPage, EvenniaCmdPage)
        assert CmdPage.locks == EvenniaCmdPage.locks and CmdPage.account_caller
        assert CmdPage().access(self.player(), "cmd")
        cmdset = AIAdminCmdSet()
        cmdset.at_cmdset_creation()
        assert any(isinstance(command, CmdPage) for command in cmdset.commands)

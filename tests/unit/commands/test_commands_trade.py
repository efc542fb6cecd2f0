"""The players' ``wares``, ``buy`` and ``sell``: trades by command at the NPC's prices, through
the one atomic trade, with no model request; hostile input gets a clear answer, never a
traceback, and moves nothing."""

from __future__ import annotations

from unittest import mock

from django.test import override_settings
from evennia.objects.objects import DefaultObject
from evennia.utils.create import create_object
from hypothesis import given, settings
from hypothesis import strategies as st
from support.commands import AICommandTestBase, words

import evennia_ai
from evennia_ai.commands import AITradeCmdSet
from evennia_ai.commands.trade import CmdBuy, CmdSell, CmdWares
from evennia_ai.llm.client import UnifiedLLMClient
from evennia_ai.npc import world_controls
from evennia_ai.testing.model_server import ModelServer
from evennia_ai.tools.approvals import get_confirmation_queue
from evennia_ai.world import clock

RULES = (
    "sell lantern 12 floor 10 ceiling 16; sell horseshoe 4; buy scrap iron 2 ceiling 3; "
    "never smith's hammer; approve above 30"
)


class TradeCommandTest(AICommandTestBase):
    """Bram, a shop, in room1 with 3 lanterns, a horseshoe and his hammer; the player (char1)
    has 50 coins and 2 scrap iron. Any model request fails the test."""

    def setUp(self):
        super().setUp()
        self.bram = self.make_npc("Bram")
        world_controls.set_goods(self.bram, RULES)
        self.lanterns = [self.make("lantern", self.bram) for _ in range(3)]
        self.make("horseshoe", self.bram)
        self.hammer = self.make("smith's hammer", self.bram)
        self.scrap = [self.make("scrap iron", self.char1) for _ in range(2)]
        self.bram.db.coins = 100
        self.char1.db.coins = 50
        self.server = ModelServer().start()
        self.addCleanup(self.server.stop)
        settings = override_settings(
            EVENNIA_AI_MODEL="openai/test-model",
            EVENNIA_AI_API_BASE=self.server.url,
            EVENNIA_AI_API_KEY="x",
            EVENNIA_AI_MAX_RETRIES=0,
        )
        settings.enable()
        self.addCleanup(settings.disable)
        for method in ("complete", "complete_sync"):
            patcher = mock.patch.object(
                UnifiedLLMClient, method, side_effect=AssertionError("a model was asked")
            )
            self.model_call = patcher.start()
            self.addCleanup(patcher.stop)

    def make(self, key, where):
        return create_object(DefaultObject, key=key, location=where)

    def says(self, cmd, args: str, *parts: str, **kwargs) -> str:
        out = words(self.call(cmd, args, **kwargs))
        assert "Traceback" not in out and "internal error" not in out, out
        for part in parts:
            assert words(part) in out, f"wanted {part!r} in {out!r}"
        return out

    def innkeeper_leaves(self):
        self.npc.location = self.room2

    def purses(self):
        return self.char1.db.coins, self.bram.db.coins


class TestTradeCommands(TradeCommandTest):
    def test_wares_buy_sell_make_no_model_request(self):
        self.innkeeper_leaves()
        # The day's trades count together toward the approval value (12 + 24 > 30).
        world_controls.add_goods_rule(self.bram, "approve above 40")
        self.says(
            CmdWares(),
            "",
            "Bram is trading now.",
            "lantern: 12 coins (3 in stock)",
            "horseshoe: 4 coins (1 in stock)",
            "Bram buys: scrap iron (2 coins).",
            "You have 50 coins.",
        )
        assert "hammer" not in self.call(CmdWares(), "Bram")
        self.says(CmdBuy(), "lantern", "You buy 1 lantern from Bram for 12 coins.")
        assert self.lanterns[0].location == self.char1 and self.purses() == (38, 112)
        self.says(CmdBuy(), "lantern from Bram = 2", "You buy 2 lantern from Bram for 24 coins")
        assert self.purses() == (14, 136)
        self.says(CmdSell(), "scrap iron to bram = 2", "You sell 2 scrap iron to Bram for 4 coins")
        assert [obj.location for obj in self.scrap] == [self.bram, self.bram]
        assert self.purses() == (18, 132)
        entries = self.bram.ai.ledger["entries"]
        assert [(e["kind"], e["quantity"], e["via"]) for e in entries] == [
            ("sale", 1, "command"),
            ("sale", 2, "command"),
            ("purchase", 2, "command"),
        ]
        assert self.server.requests == [] and not self.model_call.called

    def test_several_traders_here_must_be_named(self):
        world_controls.set_goods(self.npc, "sell ale 2")
        self.says(CmdBuy(), "lantern", "Several here trade: ", "Say with whom: buy <item> from")
        self.says(CmdWares(), "", "Several here trade")
        self.says(CmdBuy(), "lantern from Innkeeper", "Innkeeper has no 'lantern' for sale.")
        self.says(CmdBuy(), "lantern from Pell", "No one called 'Pell' trades here.")
        world_controls.set_goods(self.npc, "")
        self.says(CmdBuy(), "ale from Innkeeper", "Innkeeper does not trade.")
        self.says(CmdWares(), "", "Bram is trading now.")

    def test_hostile_input_gets_clear_words_and_moves_nothing(self):
        self.innkeeper_leaves()
        for args, said in (
            ("dragon egg", "Bram has no 'dragon egg' for sale. For sale: lantern (12 coins)"),
            ("lantern = -1", "How many? A number from 1 to 20."),
            ("lantern = 0", "How many? A number from 1 to 20."),
            ("lantern = 21", "How many? A number from 1 to 20."),
            ("lantern = 99999999999999999999", "How many? A number from 1 to 20."),
            ("lantern = 2.5", "How many? A number from 1 to 20."),
            ("lantern = lots", "How many? A number from 1 to 20."),
            ("lantern =", "How many? A number from 1 to 20."),
            ("smith's hammer", "Bram has no 'smith's hammer' for sale."),
            ("lantern = 4", "only 3 of the lantern in stock"),
            ("x" * 200, "Name an item: an item is named by 1 to 80 characters."),
            ("#abc", "Name an item: '#abc' is not a dbref"),
        ):
            with self.subTest(args=args):
                self.says(CmdBuy(), args, said)
        for args, said in (
            ("lantern", "You carry no 'lantern'."),  # the NPC's own goods
            ("smith's hammer", "You carry no 'smith's hammer'."),
            ("scrap iron = 3", "carries only 2 scrap iron"),
        ):
            with self.subTest(args=args):
                self.says(CmdSell(), args, said)
        rope = self.make("rope", self.char1)
        self.says(CmdSell(), "rope", "Bram does not buy rope. Bram buys: scrap iron (2 coins).")
        self.says(CmdBuy(), "", "Usage:")
        self.char1.db.coins = 5
        self.says(CmdBuy(), "lantern", "has only 5 coins")
        self.char1.db.coins = "lots"
        self.says(CmdBuy(), "lantern", "purse could not be read")
        assert all(obj.location == self.bram for obj in self.lanterns)
        assert rope.location == self.char1 and self.bram.db.coins == 100
        assert self.bram.ai.ledger.get("entries", []) == []
        assert self.server.requests == [] and not self.model_call.called

    def test_a_shop_that_is_not_open_says_why(self):
        self.innkeeper_leaves()
        self.bram.ai.set("goods", {"closed": True})
        self.says(CmdBuy(), "lantern", "Bram's trade rules could not be read")
        self.says(CmdWares(), "", "Bram's trade rules could not be read")
        world_controls.set_goods(self.bram, RULES)
        room = self.room1
        with mock.patch.object(clock, "source", lambda: 86400 + 16 * 3600):
            world_controls.set_routine(
                self.bram,
                f"05:00-11:00 {room.dbref}: forging [trade]; 15:00-20:00 "
                f"{room.dbref}: having a drink",
            )
            self.says(
                CmdBuy(),
                "lantern",
                "Bram is not trading now: having a drink until 20:00; trading again from 05:00.",
            )
            self.says(CmdWares(), "", "Bram is not trading now")
        assert self.lanterns[0].location == self.bram

    def test_a_trade_above_the_approval_value_waits_for_an_operator(self):
        self.innkeeper_leaves()
        self.says(
            CmdBuy(),
            "lantern = 3",
            "Buying 3 lantern from Bram for 36 coins needs an operator's approval: it waits",
        )
        assert all(obj.location == self.bram for obj in self.lanterns)
        [entry] = [e for e in get_confirmation_queue().list_entries() if e.get("kind") == "trade"]
        assert entry["payload"]["order"]["quantity"] == 3
        assert self.server.requests == [] and not self.model_call.called

    def test_no_trader_here(self):
        self.bram.location = self.room2
        self.innkeeper_leaves()
        self.says(CmdWares(), "", "No one here trades.")
        self.says(CmdSell(), "scrap iron", "No one here trades.")


class TestTheCmdSet:
    def test_trade_commands_are_for_everyone_and_exported(self):
        cmdset = AITradeCmdSet()
        cmdset.at_cmdset_creation()
        assert {cmd.key for cmd in cmdset.commands} == {"wares", "buy", "sell", "accept", "decline"}
        for cmd in cmdset.commands:
            assert cmd.locks == "cmd:all()" and cmd.help_category == "trade"
            assert "Usage:" in (cmd.__doc__ or "")
        assert evennia_ai.AITradeCmdSet is AITradeCmdSet
        assert "list" in CmdWares.aliases


TOKENS = [
    "lantern",
    "horseshoe",
    "scrap iron",
    "smith's hammer",
    "rope",
    "dragon egg",
    "from",
    "to",
    "Bram",
    "bram",
    "Innkeeper",
    "me",
    "here",
    "=",
    "==",
    "/",
    ";",
    "|r",
    "$You()",
    "#1",
    "#-1",
    "#abc",
    "proto:",
    "proto:x",
    "0",
    "1",
    "-1",
    "2.5",
    "1e309",
    "99999999999999999999",
    "\x00",
    "\u202e",
    "x" * 120,
]
hostile = st.lists(st.sampled_from(TOKENS) | st.text(max_size=8), max_size=6).map(" ".join)


class TestHostilePlayers(TradeCommandTest):
    def test_random_hostile_commands_conserve_money_and_items(self):
        self.innkeeper_leaves()
        self.char1.db.coins = 1000
        goods = [*self.lanterns, *self.scrap, self.hammer]
        before = self.char1.db.coins + self.bram.db.coins

        @settings(max_examples=60, deadline=None, database=None)
        @given(command=st.sampled_from([CmdWares, CmdBuy, CmdSell]), args=hostile)
        def prop(command, args):
            out = self.call(command(), args) or ""
            assert "Traceback" not in out and "internal error" not in out, (command.key, args, out)
            assert self.char1.db.coins + self.bram.db.coins == before
            assert all(obj.location in (self.char1, self.bram) for obj in goods)

        prop()
        assert self.server.requests == [] and not self.model_call.called


class TestTradeReviewFixes(TradeCommandTest):
    def test_sell_prices_the_item_the_trade_takes(self):
        """Two carried items answer to "sword": the one called exactly that is sold, at its
        own price (the command once priced one and the trade moved the other)."""
        self.innkeeper_leaves()
        world_controls.set_goods(self.bram, "buy sword 5; buy fine sword 50")
        fine = self.make("fine sword", self.room1)
        fine.aliases.add("sword")
        plain = self.make("sword", self.char1)
        fine.location = self.char1
        self.says(CmdSell(), "sword", "You sell 1 sword to Bram for 5 coins")
        assert plain.location == self.bram and fine.location == self.char1
        assert self.purses() == (55, 95)

    def test_names_are_shown_as_written_never_run(self):
        self.innkeeper_leaves()
        world_controls.set_goods(self.bram, "buy proto:gem 5")
        gem = self.make("|rgem {you} $You()", self.char1)
        gem.tags.add("gem", category="from_prototype")
        watcher = self.char2
        watcher.location = self.room1
        with mock.patch.object(watcher, "msg") as seen:
            out = self.says(CmdSell(), gem.dbref)
        assert gem.location == self.bram and self.purses() == (55, 95)
        assert "|rgem {you} $You()" in out  # shown as written: not coloured, nothing run
        room = " ".join(str(call.args[0] if call.args else call.kwargs) for call in seen.mock_calls)
        assert "sells 1" in room  # the room was told (braces no longer break it)

    def test_a_count_of_other_digits_is_asked_again(self):
        self.innkeeper_leaves()
        self.says(CmdBuy(), "lantern = ²", "How many? A number from 1 to 20.")
        assert self.lanterns[0].location == self.bram

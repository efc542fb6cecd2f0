"""The model's ``trade`` tool makes offers only the rules allow; ``accept``/``decline`` and a plain
yes/no settle them through the one atomic trade; ``wares`` and ``directions`` read the world.

A "compromised model" here is a test calling the tool directly with whatever arguments: the
refusals come from the NPC's rules, never from a model's restraint.
"""

from __future__ import annotations

from unittest import mock

from evennia.objects.objects import DefaultExit, DefaultRoom
from evennia.utils.create import create_object
from support.commands import words
from unit.commands.test_commands_trade import TradeCommandTest

from evennia_ai.commands.trade import CmdAccept, CmdDecline
from evennia_ai.npc import perception, trade_answers, world_controls
from evennia_ai.npc_state import OFFERS
from evennia_ai.tools import load_builtin_tools
from evennia_ai.tools.approvals import get_confirmation_queue
from evennia_ai.tools.base import ToolContext, ToolResult
from evennia_ai.tools.delegate import HELPER_WITHHELD_TOOLS
from evennia_ai.tools.groups import situation_groups
from evennia_ai.tools.registry import TOOL_REGISTRY
from evennia_ai.world import offers


class OfferTest(TradeCommandTest):
    """Bram (lanterns at 12, floor 10; approve above 30) and the player char1 (50 coins)."""

    def setUp(self):
        super().setUp()
        load_builtin_tools()
        self.ctx = ToolContext(npc=self.bram, tick_id=1)

    def offer(self, **arguments) -> ToolResult:
        arguments = {
            "player": "Char",
            "direction": "sell",
            "item": "lantern",
            "price": 12,
            **arguments,
        }
        return TOOL_REGISTRY.get("trade").safe_run(self.ctx, arguments)

    def stored(self) -> dict:
        return self.bram.ai.get(OFFERS)

    def lanterns_with_player(self) -> int:
        return sum(1 for obj in self.char1.contents if obj.key == "lantern")

    def say(self, speaker, text: str) -> None:
        """``speaker`` says ``text`` in Bram's room, as Evennia delivers it to Bram."""
        line = f'{speaker.key} says, "{text}"'
        perception.perceive_message(self.bram, (line, {"type": "say"}), speaker, {})


class TestTheToolRefusesByTheRules(OfferTest):
    def test_refusals_make_no_offer(self):
        cases = {
            "price 0": ({"price": 0}, "price"),
            "below the floor": ({"price": 9}, "less than the least price"),
            "above the ceiling": ({"price": 17}, "more than the most"),
            "never sold": ({"item": "smith's hammer"}, "never sold"),
            "invented item": ({"item": "dragon egg"}, "no 'dragon egg' for sale"),
            "negative quantity": ({"quantity": -2}, ""),
            "huge quantity": ({"quantity": 10**9}, ""),
            "more than in stock": ({"quantity": 4}, "only 3"),
            "negative price": ({"price": -5}, ""),
            "a player absent": ({"player": "Nobody"}, "no 'Nobody'"),
            "buying what it sells": ({"direction": "buy"}, "already Bram's"),
        }
        for label, (arguments, reason) in cases.items():
            with self.subTest(label):
                result = self.offer(**arguments)
                assert not result.success, result
                assert reason in result.error, (label, result.error)
                assert self.stored() == {}
        assert self.lanterns_with_player() == 0 and self.purses() == (50, 100)

    def test_a_purse_too_small(self):
        self.char1.db.coins = 5
        assert "Char has only 5 coins" in self.offer().error and self.stored() == {}
        self.char1.db.coins = 50

    def test_a_fair_offer_is_stored_and_told_to_the_player(self):
        with mock.patch.object(self.char1, "msg") as told:
            result = self.offer(quantity=2)
        assert result.success and "do not say it is done" in result.content
        assert "Bram offers to sell you 2 lantern for 24 coins (12 coins each)" in words(
            told.call_args[0][0]
        )
        [(partner, stored)] = self.stored().items()
        assert partner == self.char1.dbref and stored["unit_price"] == 12
        assert self.lanterns_with_player() == 0  # an offer moves nothing

    def test_a_name_with_markup_is_shown_as_written(self):
        self.bram.key = "Bram|r$you()"
        with mock.patch.object(self.char1, "msg") as told:
            assert self.offer().success
        assert "Bram||r$you()" in told.call_args[0][0]

    def test_a_game_can_forbid_the_trade_tools(self):
        allowed = TOOL_REGISTRY.select(self.bram, npc_denied={"trade", "wares"})
        assert not {"trade", "wares"} & {tool.name for tool in allowed}
        assert "trade" in HELPER_WITHHELD_TOOLS
        assert "trade" in situation_groups("How much for the lantern?")
        assert "trade" in situation_groups("I'll buy it") and "items" not in situation_groups("buy")


class TestAcceptAndDecline(OfferTest):
    def test_accept_trades_once(self):
        assert self.offer().success
        self.says(CmdAccept(), "", "You buy 1 lantern from Bram for 12 coins")
        assert self.lanterns_with_player() == 1 and self.purses() == (38, 112)
        self.says(CmdAccept(), "Bram", "Bram has made you no offer to answer")
        assert self.lanterns_with_player() == 1 and self.purses() == (38, 112)

    def test_decline_moves_nothing_and_the_npc_hears_it(self):
        assert self.offer().success
        with mock.patch.object(self.bram.ai, "hear") as heard:
            self.says(CmdDecline(), "", "You decline Bram's offer.")
        assert "declined your offer of 1 lantern for 12 coins" in heard.call_args[0][0]
        self.says(CmdAccept(), "", "Bram has made you no offer")
        assert self.lanterns_with_player() == 0 and self.purses() == (50, 100)

    def test_an_offer_lapses(self):
        assert self.offer().success
        later = offers.now_seconds() + 121
        with mock.patch.object(offers, "now_seconds", return_value=later):
            self.says(CmdAccept(), "", "Bram's offer (1 lantern for 12 coins) has lapsed")
        assert self.lanterns_with_player() == 0 and self.stored() == {}

    def test_another_player_cannot_accept_it(self):
        assert self.offer().success
        self.says(CmdAccept(), "Bram", "Bram has made you no offer", caller=self.char2)
        assert trade_answers.answer(self.bram, self.char2, True, "command").startswith("Bram has")
        assert self.lanterns_with_player() == 0 and offers.pending(self.bram.ai, self.char1)

    def test_a_reload_keeps_the_offer(self):
        assert self.offer().success
        self.bram.attributes.reset_cache()  # what a server reload reads: the database
        assert offers.pending(self.bram.ai, self.char1).unit_price == 12
        self.says(CmdAccept(), "", "You buy 1 lantern")

    def test_above_the_approval_value_it_is_queued(self):
        assert self.offer(quantity=3).success  # 36 coins, approve above 30
        self.says(CmdAccept(), "", "Buying 3 lantern from Bram for 36 coins needs an operator's")
        assert [e for e in get_confirmation_queue().list_entries() if e.get("kind") == "trade"]
        assert self.lanterns_with_player() == 0 and self.purses() == (50, 100)

    def test_stock_sold_in_between_is_a_clear_refusal(self):
        assert self.offer(quantity=3, price=10).success  # 30 coins: no approval
        self.lanterns[0].location = self.room1  # one lantern gone meanwhile
        self.says(CmdAccept(), "", "The trade did not happen: only 2 of the lantern in stock")
        assert self.lanterns_with_player() == 0 and self.purses() == (50, 100)

    def test_an_offer_to_buy_is_accepted(self):
        assert self.offer(direction="buy", item="scrap iron", price=2, quantity=2).success
        self.says(CmdAccept(), "Bram", "You sell 2 scrap iron to Bram for 4 coins")
        assert self.purses() == (54, 96)
        assert not [obj for obj in self.char1.contents if obj.key == "scrap iron"]

    def test_a_new_offer_replaces_the_old(self):
        assert self.offer(price=16).success
        assert self.offer(price=11).success
        assert list(self.stored()) == [self.char1.dbref]
        self.says(CmdAccept(), "", "You buy 1 lantern from Bram for 11 coins")

    def test_offers_are_bounded(self):
        stored: dict = {}
        for n in range(offers.MOST_OFFERS + 5):
            offer = offers.Offer(f"#{n}", "P", "sell", "lantern", "lantern", 1, 12, n, 10**10)
            stored = offers.put(stored, offer, now=100)
        assert len(stored) == offers.MOST_OFFERS and "#0" not in stored and "#24" in stored


class TestPlainYesAndNo(OfferTest):
    def test_yes_accepts_without_a_model(self):
        assert self.offer().success
        self.say(self.char1, "Yes!")
        assert self.lanterns_with_player() == 1 and self.purses() == (38, 112)
        self.model_call.assert_not_called()

    def test_named_answers(self):
        assert self.offer().success
        self.say(self.char1, "Bram, no deal.")
        assert self.stored() == {} and self.lanterns_with_player() == 0
        assert self.offer().success
        self.say(self.char1, "Deal, Bram")
        assert self.lanterns_with_player() == 1

    def test_yes_without_an_offer_is_ordinary_speech(self):
        with mock.patch.object(trade_answers, "answer") as answered:
            self.say(self.char1, "yes")
        answered.assert_not_called()
        assert self.lanterns_with_player() == 0

    def test_a_longer_line_is_not_an_answer(self):
        assert self.offer().success
        self.say(self.char1, "yes, but not at that price")
        assert self.lanterns_with_player() == 0 and self.stored()

    def test_an_unnamed_yes_with_two_offers_waiting_is_no_answer(self):
        hilda = self.make_npc("Hilda")
        world_controls.set_goods(hilda, "sell bread 3")
        self.make("bread", hilda)
        assert self.offer().success
        hilda_ctx = ToolContext(npc=hilda, tick_id=1)
        arguments = {"player": "Char", "direction": "sell", "item": "bread", "price": 3}
        assert TOOL_REGISTRY.get("trade").safe_run(hilda_ctx, arguments).success
        self.say(self.char1, "yes")  # whose? neither is taken
        assert self.lanterns_with_player() == 0 and self.stored()
        self.say(self.char1, "Bram, yes")
        assert self.lanterns_with_player() == 1 and offers.pending(hilda.ai, self.char1)

    def test_another_players_yes_does_not_accept(self):
        assert self.offer().success
        self.say(self.char2, "yes")
        assert self.lanterns_with_player() == 0 and self.stored()


class TestWaresAndDirections(OfferTest):
    def test_wares_lists_stock_and_prices(self):
        result = TOOL_REGISTRY.get("wares").safe_run(self.ctx, {})
        assert "lantern x3, 12 coins (at least 10, at most 16)" in result.content
        assert "scrap iron, 2 coins (at most 3)" in result.content

    def test_directions_along_exits(self):
        smithy = create_object(DefaultRoom, key="The Forge Yard", nohome=True)
        create_object(DefaultExit, key="east", location=self.room1, destination=smithy)
        tool = TOOL_REGISTRY.get("directions")
        assert (
            "To The Forge Yard: east (1 of"
            in tool.safe_run(self.ctx, {"room": "the forge yard"}).content
        )
        cut_off = create_object(DefaultRoom, key="Walled Garden", nohome=True)
        assert "no way to Walled Garden" in tool.safe_run(self.ctx, {"room": "Walled Garden"}).error
        assert "No room is called" in tool.safe_run(self.ctx, {"room": "Atlantis"}).error
        assert cut_off.pk

    def test_the_shop_tools_are_for_npcs_with_goods(self):
        """An NPC with no goods, or goods that cannot be read, is not offered trade or wares
        (their schemas cost every request tokens); its other tools are unchanged."""

        def names(npc):
            return {tool.name for tool in TOOL_REGISTRY.select(npc)}

        assert {"trade", "wares", "directions"} <= names(self.bram)
        assert not {"trade", "wares"} & names(self.npc)  # the Innkeeper keeps no shop
        assert "directions" in names(self.npc)
        self.bram.ai.set("goods", {"closed": True})  # what unreadable goods read as
        assert not {"trade", "wares"} & names(self.bram)


class TestOfferReviewFixes(OfferTest):
    def hilda_offers_bread(self):
        hilda = self.make_npc("Hilda")
        world_controls.set_goods(hilda, "sell bread 3")
        self.make("bread", hilda)
        arguments = {"player": "Char", "direction": "sell", "item": "bread", "price": 3}
        assert TOOL_REGISTRY.get("trade").safe_run(ToolContext(npc=hilda, tick_id=1), arguments)
        return hilda

    def test_accept_by_a_name_that_fits_several_offers_names_none(self):
        """Both traders answer to "smith" and both made an offer: neither is taken."""
        hilda = self.hilda_offers_bread()
        assert self.offer().success
        self.bram.aliases.add("smith")
        hilda.aliases.add("smith")
        self.says(CmdAccept(), "smith", "'smith' could be Bram, Hilda: name one.")
        assert self.lanterns_with_player() == 0 and self.purses() == (50, 100)
        assert offers.pending(hilda.ai, self.char1) and offers.pending(self.bram.ai, self.char1)
        self.says(CmdAccept(), "Hilda", "You buy 1 bread from Hilda for 3 coins")
        self.says(CmdAccept(), "smith", "You buy 1 lantern from Bram for 12 coins")

    def test_a_plain_yes_does_not_sell_the_players_goods(self):
        """An offer to buy from the player needs ``accept``: "yes" may answer another question
        the NPC asked in the same turn ("Want an ale?")."""
        with mock.patch.object(self.char1, "msg") as told:
            assert self.offer(direction="buy", item="scrap iron", price=2).success
        told_words = told.call_args[0][0]
        assert "Type |waccept|n or |wdecline|n within" in told_words
        assert "say yes" not in told_words
        with (
            mock.patch.object(trade_answers, "answer") as answered,
            mock.patch.object(self.bram.ai, "hear") as heard,
            mock.patch.object(self.bram.ai, "perceive") as perceived,
        ):
            self.say(self.char1, "Yes!")
            self.say(self.char1, "Bram, no.")
        answered.assert_not_called()
        assert heard.call_count + perceived.call_count == 2  # ordinary speech: the NPC hears it
        assert len([obj for obj in self.char1.contents if obj.key == "scrap iron"]) == 2
        assert self.purses() == (50, 100) and offers.pending(self.bram.ai, self.char1)
        self.says(CmdAccept(), "", "You sell 1 scrap iron to Bram for 2 coins")

    def test_the_model_is_told_a_buy_offer_needs_accept(self):
        result = self.offer(direction="buy", item="scrap iron", price=2)
        assert "only by typing accept" in result.content
        assert "only by typing accept" not in self.offer().content  # a sale: "yes" will do

    def test_a_sale_offer_still_takes_a_plain_yes(self):
        with mock.patch.object(self.char1, "msg") as told:
            assert self.offer().success
        assert "(or say yes or no)" in words(told.call_args[0][0])
        self.say(self.char1, "yes")
        assert self.lanterns_with_player() == 1

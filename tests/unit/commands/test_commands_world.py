"""``airoutine`` and ``aigoods``: staff set an NPC's routine and goods in game, checked by the
same controls as the dashboard (:mod:`evennia_ai.npc.world_controls`), every refusal in words
and nothing written on a problem; ``aistatus`` and ``ainpc/list`` say what the routine does and
mark a shop.

Game time goes through ``world.clock.source``, never ``override_settings(TIME_FACTOR=...)``.
"""

from __future__ import annotations

from unittest import mock

from evennia.objects.objects import DefaultExit, DefaultObject, DefaultRoom
from evennia.utils.create import create_object
from support.commands import AICommandTestBase, words
from unit.world.test_stock import nails_prototype

from evennia_ai.commands.npcs import CmdAINpc, CmdAIStatus
from evennia_ai.commands.world import CmdAIGoods, CmdAIRoutine
from evennia_ai.npc import world_controls
from evennia_ai.npc.controls import ControlError
from evennia_ai.world import clock, trade
from evennia_ai.world.goods import from_state, goods_lines

HOUR = 3600
DAY = 24 * HOUR


class GameClock:
    """The game's clock for a test, moved by hand (``at("14:00")``)."""

    def __init__(self) -> None:
        self.seconds = float(DAY + 6 * HOUR)

    def __call__(self) -> float:
        return self.seconds

    def at(self, hhmm: str) -> None:
        hours, minutes = (int(part) for part in hhmm.split(":"))
        self.seconds = DAY + hours * HOUR + minutes * 60


class WorldCommandTest(AICommandTestBase):
    """A small town: Bakery - Market, and a Smithy behind a door the NPC may not pass. The
    Innkeeper stands in the Bakery; the clock says 06:00."""

    def setUp(self):
        super().setUp()
        self.game = GameClock()
        patcher = mock.patch.object(clock, "source", self.game)
        patcher.start()
        self.addCleanup(patcher.stop)
        self.rooms = {
            key: create_object(DefaultRoom, key=key) for key in ("Bakery", "Market", "Smithy")
        }
        self.link("Bakery", "Market")
        self.link("Market", "Smithy").locks.add("traverse:false()")
        create_object(
            DefaultExit, key="out", location=self.rooms["Smithy"], destination=self.rooms["Market"]
        )
        self.npc.location = self.rooms["Bakery"]

    def link(self, one: str, other: str):
        """Exits both ways between two rooms; returns the one from ``one``."""
        create_object(
            DefaultExit, key=one.lower(), location=self.rooms[other], destination=self.rooms[one]
        )
        return create_object(
            DefaultExit, key=other.lower(), location=self.rooms[one], destination=self.rooms[other]
        )

    def says(self, cmd, args: str, *parts: str, **kwargs) -> str:
        out = words(self.call(cmd, args, **kwargs))
        for part in parts:
            assert words(part) in out, f"wanted {part!r} in {out!r}"
        return out


class TestAIRoutine(WorldCommandTest):
    def test_airoutine_refuses_unknown_overlapping_and_unreachable_rooms_clearly(self):
        smithy = self.rooms["Smithy"]
        self.says(
            CmdAIRoutine(),
            "Innkeeper = 05:00-11:00 Bakery: baking [trade]; 11:00-15:00 Smith: forging",
            "Innkeeper's routine is not changed:",
            f"No room is called 'Smith'. Rooms with a similar name: Smithy ({smithy.dbref}).",
        )
        self.says(
            CmdAIRoutine(),
            "Innkeeper = 05:00-11:00 Bakery: baking; 10:00-15:00 Market: selling; 25:00-26:00 Market",
            "05:00-11:00 (Bakery) and 10:00-15:00 (Market) overlap from 10:00 to 11:00.",
            '"25:00" is not a time of day',
        )
        out = self.says(
            CmdAIRoutine(),
            "Innkeeper = 05:00-11:00 Bakery: baking; 11:00-15:00 Smithy: forging",
            f"Innkeeper cannot walk from Bakery ({self.rooms['Bakery'].dbref}) to Smithy "
            f"({smithy.dbref})",
            "Unlock a way, or choose another room.",
        )
        assert "Traceback" not in out
        self.says(
            CmdAIRoutine(),
            "Innkeeper = 05:00-11:00 Bakery: baking [trade] [sleep]",
            "is both [trade] and [sleep]: a sleeping NPC does not trade.",
        )
        self.says(CmdAIRoutine(), "Innkeeper =", "Missing the routine")
        assert self.npc.ai.routine.get("slots") == []  # nothing written on any problem

    def test_a_routine_is_set_once_shown_checked_and_cleared(self):
        with mock.patch.object(type(self.npc.ai), "set", wraps=self.npc.ai.set) as written:
            self.says(
                CmdAIRoutine(),
                "Innkeeper = 05:00-11:00 Bakery: baking bread [trade]; 11:00-15:00 Market: "
                "selling bread [trade]",
                "Innkeeper's routine is set: 2 slots.",
                "Game time 06:00 (morning): now 05:00-11:00 at Bakery",
                "next 11:00-15:00 at Market",
            )
        assert [call.args[0] for call in written.call_args_list] == ["routine"]
        stored = self.npc.ai.routine
        assert stored["set_by"] == self.char1.key and stored["set_at"]
        assert [slot["room"] for slot in stored["slots"]] == [
            self.rooms["Bakery"].dbref,
            self.rooms["Market"].dbref,
        ]
        assert world_controls.routine_text(self.npc) == (
            "05:00-11:00 Bakery: baking bread [trade]\n11:00-15:00 Market: selling bread [trade]"
        )
        self.says(
            CmdAIRoutine(),
            "Innkeeper",
            "Innkeeper(",
            "routine (set by",
            "baking bread",
            "Routine: not started (it plans at its next tick)",
            "As text: 05:00-11:00 Bakery: baking bread [trade]; 11:00-15:00 Market",
        )
        self.says(CmdAIRoutine(), "/check Innkeeper", "Innkeeper can reach every room")
        self.rooms["Market"].exits[0].locks.add("traverse:false()")  # the way back is shut
        self.rooms["Bakery"].exits[0].locks.add("traverse:false()")
        self.says(CmdAIRoutine(), "/check Innkeeper", "Innkeeper cannot keep its routine:")
        self.says(CmdAIRoutine(), "/clear Innkeeper", "Innkeeper's routine is removed")
        assert self.npc.ai.routine["slots"] == []
        self.says(CmdAIRoutine(), "/clear Innkeeper", "Innkeeper has no routine.")
        self.says(CmdAIRoutine(), "Innkeeper", "has no routine: it stays where it is.")

    def test_aistatus_and_ainpc_list_say_what_the_routine_does_and_mark_a_shop(self):
        world_controls.set_routine(self.npc, "05:00-11:00 Market: selling [trade]")
        world_controls.set_goods(self.npc, "sell lantern 12")
        self.says(CmdAIStatus(), "Innkeeper", "routine: not started", "shop: open")
        self.says(CmdAINpc(), "/list", "Innkeeper(", "(shop)", "routine:")
        status = world_controls.routines.status(self.npc)
        status.set("unreachable", "cannot reach Market (#5): no way")
        self.says(CmdAIStatus(), "Innkeeper", "routine: unreachable: cannot reach Market")
        self.game.at("12:00")
        self.says(CmdAIStatus(), "Innkeeper", "shop: not trading now: free time")

    def test_staff_only(self):
        player = self.player()
        for command in (CmdAIRoutine, CmdAIGoods):
            assert not command().access(player, "cmd"), command.key
        builder = self.builder()
        for command in (CmdAIRoutine, CmdAIGoods):
            assert command().access(builder, "cmd"), command.key


RULES = "sell lantern 12 floor 10 ceiling 16; buy scrap iron 2 ceiling 3 per day 10; never hammer"


class TestAIGoods(WorldCommandTest):
    def setUp(self):
        super().setUp()
        self.lantern = create_object(DefaultObject, key="lantern", location=self.npc)
        self.npc.db.coins = 100
        self.char1.location = self.npc.location
        self.char1.db.coins = 50

    def test_aigoods_rules_round_trip_and_ledger_shows_trades(self):
        self.says(CmdAIGoods(), "/set Innkeeper = " + RULES, "Innkeeper has 3 trade rules.")
        stored = from_state(self.npc.ai.goods)
        assert goods_lines(stored) == [
            "sell lantern 12 floor 10 ceiling 16",
            "buy scrap iron 2 ceiling 3 per day 10",
            "never hammer",
        ]
        # what is shown is set again unchanged
        self.says(CmdAIGoods(), "/set Innkeeper = " + "; ".join(goods_lines(stored)), "3 trade")
        assert from_state(self.npc.ai.goods) == stored
        self.says(
            CmdAIGoods(),
            "Innkeeper",
            "Innkeeper(",
            "goods: open now",
            "sell lantern 12 floor 10 ceiling 16",
            "lantern",
            "Purse: 100 coins",
            "Today: sold 0 item(s)",
        )
        # one rule added, one replaced, one removed
        self.says(CmdAIGoods(), "Innkeeper = sell rope 3", "Innkeeper has 4 trade rules.")
        self.says(CmdAIGoods(), "Innkeeper = sell lantern 14 floor 12 ceiling 16", "4 trade rules")
        assert from_state(self.npc.ai.goods).prices["lantern"].price == 14
        self.says(CmdAIGoods(), "/remove Innkeeper = rope", "Innkeeper has 3 trade rules.")
        self.says(CmdAIGoods(), "/remove Innkeeper = dragon egg", "Innkeeper has no rule of")
        # the ledger shows the trades, newest first
        for _ in range(2):
            create_object(DefaultObject, key="lantern", location=self.npc)
        for price in (14, 12):
            order = trade.TradeOrder(self.npc, self.char1, "sell", "lantern", 1, price, "command")
            assert trade.execute(order).done
        out = self.says(
            CmdAIGoods(),
            "/ledger Innkeeper",
            "Innkeeper's last 2 trades",
            "sold 1 lantern",
            "12 coins",
            "Char",
            "command",
        )
        assert out.index("12 coins") < out.index("14 coins")  # newest first
        self.says(CmdAIGoods(), "/ledger Innkeeper = 1", "Innkeeper's last 1 trades")
        self.says(CmdAIGoods(), "/ledger Innkeeper = 0", "The count must be at least 1.")
        self.says(CmdAIGoods(), "/ledger Innkeeper = 9999", "How many trades? A number from 1")
        self.says(CmdAIGoods(), "Innkeeper", "Today: sold 2 item(s) for 26 coins")

    def test_bad_rules_change_nothing_and_say_every_bad_line(self):
        world_controls.set_goods(self.npc, RULES)
        before = dict(self.npc.ai.goods)
        self.says(
            CmdAIGoods(),
            "/set Innkeeper = sell lantern twelve; sell rope 3; buy salt -1",
            "The trade rules are not changed:",
            "line 1: 'sell lantern twelve'",
            "line 3: 'buy salt -1'",
        )
        self.says(CmdAIGoods(), "Innkeeper = sell hammer 5", "is never sold")
        self.says(CmdAIGoods(), "Innkeeper = steal everything", "not a rule")
        assert self.npc.ai.goods == before
        self.npc.ai.set("goods", {"closed": True})
        self.says(CmdAIGoods(), "Innkeeper", "its trade rules could not be read")
        self.says(CmdAIGoods(), "Innkeeper = sell rope 3", "replace them whole with aigoods/set")
        self.says(CmdAIGoods(), "/set Innkeeper =", "has no trade rules now: it is no shop.")
        assert self.npc.ai.goods == {}
        self.says(CmdAIGoods(), "Innkeeper", "sells and buys nothing")

    def test_an_open_container_is_warned_of(self):
        chest = create_object(DefaultObject, key="chest", location=self.npc.location)
        self.says(
            CmdAIGoods(),
            f"Innkeeper = container {chest.dbref}",
            f"The chest ({chest.dbref}) lets anyone take from it",
        )

    def test_controls_refuse_in_words(self):
        for call in (
            lambda: world_controls.ledger_rows(self.npc, 0),
            lambda: world_controls.remove_goods(self.npc, ""),
            lambda: world_controls.add_goods_rule(self.npc, ""),
            lambda: world_controls.add_goods_rule(self.npc, "sell a 1; limit sold 5 per day"),
            lambda: world_controls.check_routine(self.npc),
        ):
            try:
                call()
            except ControlError as err:
                assert str(err)
            else:
                raise AssertionError("no refusal")

    def test_aigoods_restock_says_what_was_made(self):
        nails_prototype()
        self.says(CmdAIGoods(), "/restock Innkeeper", "Innkeeper has no restock rule. Add one")
        world_controls.set_goods(
            self.npc, "sell proto:iron_nails 1; restock proto:IRON_NAILS keep 3 every 6h"
        )
        self.says(
            CmdAIGoods(),
            "/restock Innkeeper = proto:IRON_NAILS",
            "Innkeeper restocked:",
            "3 iron nail made (proto:iron_nails, 3 of 3 kept)",
        )
        assert [obj.key for obj in self.npc.contents].count("iron nail") == 3
        self.says(CmdAIGoods(), "/restock Innkeeper", "proto:iron_nails: none needed (3 of 3")
        self.says(CmdAIGoods(), "/restock Innkeeper = lantern", "has no restock rule of 'lantern'")
        self.says(CmdAIGoods(), "/ledger Innkeeper", "made 3 iron nail", "restock")
        self.npc.ai.set("goods", {"closed": True})
        self.says(CmdAIGoods(), "/restock Innkeeper", "could not be read, so nothing is restocked")
        assert [obj.key for obj in self.npc.contents].count("iron nail") == 3


class TestUnreadableRoutineInStatus(WorldCommandTest):
    def test_aistatus_says_an_unreadable_routine_walks_nowhere_and_closes_the_shop(self):
        world_controls.set_routine(self.npc, "05:00-11:00 Market: selling [trade]")
        world_controls.set_goods(self.npc, "sell lantern 12")
        stored = self.npc.ai.routine
        stored["slots"][0]["end"] = "99:00"  # a hand edit the schema lets through
        self.npc.ai.set("routine", stored)
        self.says(
            CmdAIStatus(),
            "Innkeeper",
            "routine: its routine cannot be read, so it walks nowhere and does not trade",
            "shop: not trading now: its routine cannot be read",
        )

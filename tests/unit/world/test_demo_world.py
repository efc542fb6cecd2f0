"""The demo's living world, built in-process as `make demo` builds it (issue 36, Deliver 4):
the town around the tavern, Bram the smith's goods and purse, Hilda the baker's day, the
Innkeeper as host, the demo's clock and the players' trade commands."""

import ast
import importlib.util
import sys
import types
from pathlib import Path
from unittest import mock

import evennia
from evennia.prototypes import prototypes as protlib
from evennia.prototypes import spawner
from evennia.utils.test_resources import BaseEvenniaTest
from support.demo_world import build_demo_world
from support.game_clock import GameClock

from evennia_ai.engine import routines
from evennia_ai.npc import world_controls
from evennia_ai.npc_state import GOODS, ROUTINE
from evennia_ai.world import clock, paths, trade
from evennia_ai.world.clock import Calendar
from evennia_ai.world.goods import goods_lines
from evennia_ai.world.money import money
from evennia_ai.world.stock import give_refusal, item_view, stock

EXAMPLE = Path(__file__).resolve().parents[3] / "world_example"
TOWN = ("Market Square", "The Smithy", "Bakery", "Bakery Loft")


def settings_values(*names: str) -> dict:
    """The demo settings' values of ``names`` (plain expressions, read without importing the
    module: it imports Evennia's defaults and the game's secret settings)."""
    tree = ast.parse((EXAMPLE / "server" / "conf" / "settings.py").read_text())
    found = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name in names:
                found[name] = eval(compile(ast.Expression(node.value), name, "eval"), {})
    return found


def load_example(relative: str, name: str) -> types.ModuleType:
    """A module of world_example/ loaded from its file under ``name``."""
    spec = importlib.util.spec_from_file_location(name, EXAMPLE / relative)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


class DemoWorldTestBase(BaseEvenniaTest):
    def setUp(self):
        super().setUp()
        self.game = GameClock()
        self.game.at("06:00")  # where the demo's clock starts
        patcher = mock.patch.object(clock, "source", self.game)
        patcher.start()
        self.addCleanup(patcher.stop)
        self.demo = build_demo_world()
        for key in ("innkeeper", "bram", "hilda"):
            self.demo[key].ai.script.trigger_tick = lambda: None
        self.addCleanup(self._delete_scripts)

    def _delete_scripts(self):
        for key in ("innkeeper", "bram", "hilda"):
            script = self.demo[key].ai.script
            if script:
                script.delete()


class TestTheTown(DemoWorldTestBase):
    def test_the_town_joins_the_tavern(self):
        rooms = self.demo["rooms"]
        for key in TOWN:
            assert key in rooms, key
        ways = {ex.key: ex.destination for ex in self.demo["market"].exits}
        assert ways == {
            "in": self.demo["common"],
            "east": self.demo["smithy"],
            "north": self.demo["bakery"],
        }
        assert {ex.key for ex in self.demo["common"].exits} == {"cellar", "up", "out"}
        assert [ex.destination for ex in self.demo["loft"].exits] == [self.demo["bakery"]]
        walker = self.demo["hilda"]
        for start in rooms.values():
            for goal in rooms.values():
                assert paths.route(walker, start, goal).found, (start.key, goal.key)

    def test_the_tavern_keeps_its_dbrefs_and_the_innkeeper_hosts_it(self):
        assert self.demo["common"].id < self.demo["market"].id < self.demo["bram"].id
        keeper = self.demo["innkeeper"]
        assert keeper.ai.host and keeper.location == self.demo["common"]
        assert keeper.ai.persona.startswith("Marta Ashgrove")

    def test_building_again_duplicates_nothing(self):
        tagged = evennia.search_tag("demo_tavern", category="evennia_ai")
        before = sorted(obj.id for obj in tagged)
        wares = sorted(obj.id for obj in self.demo["bram"].contents)
        again = build_demo_world()
        assert sorted(
            obj.id for obj in evennia.search_tag("demo_tavern", category="evennia_ai")
        ) == (before)
        assert again["bram"] == self.demo["bram"] and again["hilda"] == self.demo["hilda"]
        assert sorted(obj.id for obj in self.demo["bram"].contents) == wares
        assert len(protlib.search_prototype(key="iron_nails")) == 1

    def test_building_again_finishes_a_half_finished_build(self):
        bram, hilda, market = self.demo["bram"], self.demo["hilda"], self.demo["market"]
        # A first build that stopped right after creating each NPC (and before the scrap).
        for obj in list(bram.contents) + list(hilda.contents):
            obj.delete()
        for obj in market.contents:
            if obj.key == "scrap iron":
                obj.delete()
        for npc in (bram, hilda):
            npc.ai.set(GOODS, {})
            npc.attributes.remove("coins")
        hilda.ai.set(ROUTINE, {})
        assert not world_controls.is_shop(bram) and not world_controls.routine_of(hilda).slots

        again = build_demo_world()

        assert again["bram"] == bram and again["hilda"] == hilda
        wares = sorted(obj.key for obj in bram.contents)
        assert wares == sorted(
            ["iron lantern"] * 2
            + ["hunting knife", "smith's hammer"]
            + ["horseshoe"] * 3
            + ["iron nails"] * 6
        )
        assert sorted(obj.key for obj in hilda.contents) == sorted(
            ["loaf of bread"] * 4 + ["honey cake"] * 2
        )
        assert "approve above 20" in goods_lines(world_controls.goods_of(bram))
        assert world_controls.is_shop(hilda)
        assert (money().balance(bram), money().balance(hilda)) == (60, 10)
        assert len(world_controls.routine_of(hilda).slots) == 4
        assert [obj.key for obj in market.contents].count("scrap iron") == 1
        tagged = sorted(obj.id for obj in evennia.search_tag("demo_tavern", category="evennia_ai"))
        build_demo_world()  # and once more: nothing is made twice
        assert (
            sorted(obj.id for obj in evennia.search_tag("demo_tavern", category="evennia_ai"))
            == tagged
        )
        assert len(bram.contents) == len(wares)

    def test_building_again_keeps_what_the_npcs_have(self):
        bram = self.demo["bram"]
        bram.attributes.add("coins", 7)
        world_controls.set_goods(bram, "sell horseshoe 5")
        build_demo_world()
        assert money().balance(bram) == 7
        assert goods_lines(world_controls.goods_of(bram)) == ["sell horseshoe 5"]


class TestBramsGoods(DemoWorldTestBase):
    def test_his_wares_are_priced_stock(self):
        bram = self.demo["bram"]
        goods = world_controls.goods_of(bram)
        assert not goods.closed
        found = {line.name: line for line in stock(bram, goods)}
        assert set(found) == {"iron lantern", "hunting knife", "horseshoe", "iron nails"}
        lantern = found["iron lantern"]
        assert (lantern.count, lantern.rule.price, lantern.rule.floor, lantern.rule.ceiling) == (
            2,
            12,
            10,
            16,
        )
        assert found["horseshoe"].count == 3 and found["iron nails"].count == 6
        assert "buy scrap iron 2 ceiling 3 per day 10" in goods_lines(goods)
        assert goods.approval_above == 20
        assert world_controls.shop_hours(bram) == (True, "")  # no routine: open at any hour

    def test_his_hammer_is_never_sold_or_given(self):
        bram = self.demo["bram"]
        hammer = next(obj for obj in bram.contents if obj.key == "smith's hammer")
        assert "smith's hammer" in world_controls.goods_of(bram).never
        assert give_refusal(bram, hammer, self.char1) == "You never part with your smith's hammer."

    def test_his_nails_restock_from_a_prototype_he_can_spawn(self):
        goods = world_controls.goods_of(self.demo["bram"])
        rule = goods.restock["proto:iron_nails"]
        assert (rule.prototype, rule.keep, rule.every_hours) == ("iron_nails", 6, 6)
        (spawned,) = spawner.spawn(rule.prototype)
        try:
            assert goods.key_of(item_view(spawned)) == "proto:iron_nails"
        finally:
            spawned.delete()

    def test_his_purse_and_the_scrap_he_buys(self):
        assert money().balance(self.demo["bram"]) == 60
        assert money().balance(self.demo["hilda"]) == 10
        scrap = [obj for obj in self.demo["market"].contents if obj.key == "scrap iron"]
        assert len(scrap) == 1
        assert world_controls.goods_of(self.demo["bram"]).key_of(item_view(scrap[0])) == (
            "scrap iron"
        )


class TestTradingInTheDemo(DemoWorldTestBase):
    def order(self, npc, item, quantity=1, price=None, direction="sell"):
        return trade.TradeOrder(npc, self.char1, direction, item, quantity, price, via="command")

    def test_a_player_buys_from_bram_and_sells_him_scrap(self):
        bram = self.demo["bram"]
        self.char1.move_to(self.demo["smithy"], quiet=True)
        self.char1.db.coins = 50
        assert trade.execute(self.order(bram, "lantern", price=12)).done
        assert trade.execute(self.order(bram, "nails", 3, 1)).done
        scrap = next(obj for obj in self.demo["market"].contents if obj.key == "scrap iron")
        scrap.move_to(self.char1, quiet=True)
        assert trade.execute(self.order(bram, "scrap iron", price=2, direction="buy")).done
        assert money().balance(self.char1) == 50 - 12 - 3 + 2
        assert money().balance(bram) == 60 + 12 + 3 - 2
        assert (
            sorted(obj.key for obj in self.char1.contents) == ["iron lantern"] + ["iron nails"] * 3
        )
        kinds = [row["kind"] for row in world_controls.ledger_rows(bram, 5)]
        assert kinds == ["purchase", "sale", "sale"]

    def test_the_rules_hold_in_the_demo(self):
        bram, hilda = self.demo["bram"], self.demo["hilda"]
        self.char1.move_to(self.demo["smithy"], quiet=True)
        self.char1.db.coins = 50
        assert trade.check(self.order(bram, "lantern", price=9)) is not None  # below the floor
        assert trade.check(self.order(bram, "hammer", price=30)) is not None  # never sold
        assert trade.approval_needed(self.order(bram, "knife", price=25))  # above 20 coins
        self.char1.move_to(self.demo["bakery"], quiet=True)
        assert trade.execute(self.order(hilda, "bread", price=2)).done  # baking: open
        self.game.at("16:00")
        assert trade.check(self.order(hilda, "bread", price=2)) is not None  # a cider: closed


class TestHildasDay(DemoWorldTestBase):
    def test_her_routine_validates_and_reaches_every_room(self):
        hilda = self.demo["hilda"]
        routine = world_controls.routine_of(hilda)
        assert [slot.key() for slot in routine.slots] == [
            "05:00-08:00",
            "08:00-15:00",
            "15:00-21:00",
            "21:00-05:00",
        ]
        rooms = [slot.room for slot in routine.slots]
        demo = self.demo
        assert rooms == [demo[key].dbref for key in ("bakery", "market", "common", "loft")]
        assert [(slot.trade, slot.sleep) for slot in routine.slots] == [
            (True, False),
            (True, False),
            (False, False),
            (False, True),
        ]
        checked = routines.check(hilda, world_controls.routine_text(hilda))
        assert checked.problems == () and checked.routine == routine
        assert routines.reachability_problems(hilda, routine) == []
        assert "can reach every room" in world_controls.check_routine(hilda)

    def test_she_walks_her_day_through_the_exits(self):
        hilda = self.demo["hilda"]
        routine = world_controls.routine_of(hilda)
        assert hilda.location == self.demo["bakery"]
        assert world_controls.shop_hours(hilda) == (True, "")  # baking, open at 06:00
        for hhmm, room, exits in (
            ("08:00", "market", 1),
            ("15:00", "common", 1),
            ("21:00", "loft", 3),
            ("05:00", "bakery", 1),
        ):
            self.game.at(hhmm, day=2 if hhmm == "05:00" else 1)
            now = clock.game_now()
            for _ in range(exits):
                todo = routines.work(hilda, routine, now)
                assert todo.action == "walk", (hhmm, todo)
                routines.act(hilda, todo)
            assert hilda.location == self.demo[room], (hhmm, hilda.location)
            assert routines.work(hilda, routine, now).action == "stay"
        self.game.at("16:00")
        is_open, why = world_controls.shop_hours(hilda)
        assert not is_open and "trading again from 05:00" in why


class TestTheDemoGame(BaseEvenniaTest):
    def test_the_clock_starts_at_six_and_runs_an_hour_a_real_minute(self):
        values = settings_values("TIME_FACTOR", "TIME_GAME_EPOCH", "EVENNIA_AI_MONEY")
        assert values["TIME_FACTOR"] == 60 and values["EVENNIA_AI_MONEY"] == "attribute"
        assert clock.split(values["TIME_GAME_EPOCH"], Calendar()).clock() == "06:00"
        # Hilda leaves for the market at 08:00: two real minutes after the first start.
        assert (2 * 3600) / values["TIME_FACTOR"] == 120

    def test_players_get_the_trade_commands(self):
        cmdsets = load_example("commands/default_cmdsets.py", "demo_default_cmdsets")
        keys = {cmd.key for cmd in cmdsets.CharacterCmdSet().commands}
        assert {"wares", "buy", "sell", "airoutine", "aigoods", "look"} <= keys

    def test_characters_start_with_coins(self):
        package = types.ModuleType("demo_typeclasses")
        template = Path(evennia.__file__).parent / "game_template" / "typeclasses"
        package.__path__ = [str(EXAMPLE / "typeclasses"), str(template)]
        sys.modules["demo_typeclasses"] = package
        self.addCleanup(sys.modules.pop, "demo_typeclasses")
        characters = importlib.import_module("demo_typeclasses.characters")
        self.addCleanup(sys.modules.pop, "demo_typeclasses.characters")
        self.addCleanup(sys.modules.pop, "demo_typeclasses.objects", None)
        hero = evennia.create_object(characters.Character, key="Hero", location=self.room1)
        assert money().balance(hero) == characters.STARTING_COINS == 50

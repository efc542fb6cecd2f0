"""What an NPC has in stock, which containers count, and what its give and drop may hand
over."""

from unittest import mock

from evennia.objects.models import ObjectDB
from evennia.objects.objects import DefaultObject
from evennia.prototypes import prototypes as protlib
from evennia.utils.create import create_object
from unit.engine.test_assistant_tick import AssistantTestBase

from evennia_ai.world import ledger
from evennia_ai.world import stock as stock_module
from evennia_ai.world.clock import Calendar, GameTime
from evennia_ai.world.goods import from_state, parse_goods, to_state
from evennia_ai.world.stock import (
    give_free,
    give_refusal,
    open_container_warning,
    restock,
    restock_due,
    stock,
)


def nails_prototype() -> None:
    """The prototype ``iron_nails`` (an "iron nail"), which the restock tests spawn."""
    protlib.create_prototype(
        {
            "prototype_key": "iron_nails",
            "key": "iron nail",
            "typeclass": "evennia.objects.objects.DefaultObject",
        }
    )


class ShopTestBase(AssistantTestBase):
    """The Innkeeper as a shop: ``set_goods(text)``, ``make(key, where)``."""

    def set_goods(self, text):
        goods, problems = parse_goods(text)
        assert problems == [], problems
        self.npc.ai.set("goods", to_state(goods))
        return goods

    def goods(self):
        return from_state(self.npc.ai.goods)

    def make(self, key, where=None, **kwargs):
        return create_object(DefaultObject, key=key, location=where or self.npc, **kwargs)


class TestStock(ShopTestBase):
    def test_priced_objects_it_carries_are_stock_oldest_first(self):
        first, second = self.make("lantern"), self.make("Lantern")
        self.make("rope")
        self.set_goods("sell lantern 12")
        [line] = stock(self.npc, self.goods())
        assert (line.key, line.name, line.count, line.items) == (
            "lantern",
            "lantern",
            2,
            (first, second),
        )

    def test_stock_container_counts_only_when_locked_to_the_npc(self):
        chest = self.make("chest", self.npc.location)
        nail = self.make("nail", chest)
        self.set_goods(f"sell nail 1\ncontainer {chest.dbref}")
        chest.locks.add("get_from:false()")
        assert stock(self.npc, self.goods()) == []
        chest.locks.add(f"get_from:id({self.npc.id})")
        assert stock(self.npc, self.goods())[0].items == (nail,)
        assert "Anyone can pick up the chest" in open_container_warning(chest, self.npc)
        chest.locks.add("get:false()")  # nor carried off whole
        assert open_container_warning(chest, self.npc) is None
        chest.locks.add("get_from:true()")
        assert "lets anyone take from it" in open_container_warning(chest)
        chest.move_to(self.room2, quiet=True)
        assert stock(self.npc, self.goods()) == []

    def test_closed_rules_have_no_stock(self):
        self.make("lantern")
        self.npc.ai.set("goods", {"closed": True})
        assert stock(self.npc, self.goods()) == []

    def test_characters_and_money_are_never_stock(self):
        pile = self.make("lantern", tags=[("coins", stock_module.MONEY_TAG_CATEGORY)])
        self.set_goods("sell lantern 12")
        assert stock(self.npc, self.goods()) == []
        assert pile in self.npc.contents


class TestGiveRules(ShopTestBase):
    def test_give_and_drop_refuse_stock_unless_free_or_gifts_on(self):
        lantern, hammer, letter = (
            self.make("lantern"),
            self.make("smith's hammer"),
            self.make("sealed letter"),
        )
        self.set_goods("sell lantern 12\nnever smith's hammer\nfree sealed letter")
        assert give_refusal(self.npc, lantern, self.char1) == (
            "The lantern is for sale (12 coins): players buy it with the buy command; you cannot "
            "give stock away."
        )
        assert give_refusal(self.npc, hammer, None) == "You never part with your smith's hammer."
        assert give_refusal(self.npc, letter, self.char1) is None
        self.set_goods("sell lantern 12\nnever smith's hammer\ngifts on")
        assert give_refusal(self.npc, lantern, self.char1) is None
        assert give_refusal(self.npc, hammer, self.char1) is not None

    def test_give_of_non_stock_inventory_unchanged(self):
        rope = self.make("rope")
        assert give_refusal(self.npc, rope, self.char1) is None
        self.set_goods("sell lantern 12")
        assert give_refusal(self.npc, rope, self.char1) is None
        assert give_refusal(self.char1, rope, self.npc) is None  # not an assistant

    def test_unreadable_rules_give_nothing_away(self):
        rope = self.make("rope")
        self.npc.ai.set("goods", {"closed": True})
        assert "could not be read" in give_refusal(self.npc, rope, self.char1)


class TestFreeGifts(ShopTestBase):
    def setUp(self):
        super().setUp()
        self.letter = self.make("sealed letter")
        self.lantern = self.make("lantern")
        self.set_goods("sell lantern 12\nfree sealed letter")

    def test_free_quest_item_is_still_given_and_recorded(self):
        assert give_free(self.npc, self.letter, self.char1) is None
        assert self.letter.location == self.char1
        [entry] = self.npc.ai.ledger["entries"]
        assert (entry["kind"], entry["objects"], entry["partner"]) == (
            "gift",
            [self.letter.dbref],
            "Char",
        )

    def test_stock_is_not_given(self):
        assert "for sale" in give_free(self.npc, self.lantern, self.char1)
        assert self.lantern.location == self.npc and self.npc.ai.ledger["entries"] == []

    def test_a_gift_that_fails_midway_is_undone(self):
        with mock.patch.object(ledger, "record", side_effect=RuntimeError("disk full")):
            assert "failed and was undone" in give_free(self.npc, self.letter, self.char1)
        assert self.letter.location == self.npc and self.letter in self.npc.contents
        assert self.letter not in self.char1.contents


class TestRestock(ShopTestBase):
    def setUp(self):
        super().setUp()
        nails_prototype()
        self.goods = self.set_goods(
            "sell proto:iron_nails 1\nrestock proto:IRON_NAILS keep 3 every 6h"
        )

    def at(self, seconds):
        return GameTime(seconds, int(seconds // 86400), int(seconds % 86400 // 60), Calendar())

    def nails(self):
        return ObjectDB.objects.filter(
            db_tags__db_key="iron_nails", db_tags__db_category="from_prototype"
        ).count()

    def test_restock_spawns_up_to_keep_once_per_interval_and_never_twice_after_a_crash(self):
        now = self.at(1000.0)
        with mock.patch.object(ledger, "mark_restocked", side_effect=RuntimeError("crash")):
            [line] = restock(
                self.npc, self.goods, restock_due(self.goods, self.npc.ai.ledger, now), now
            )
        assert "failed and was undone" in line.words() and self.nails() == 0
        assert all(obj.key != "iron nail" for obj in self.npc.contents)
        due = restock_due(self.goods, self.npc.ai.ledger, now)
        assert due == ("proto:iron_nails",)
        [line] = restock(self.npc, self.goods, due, now)
        assert line.words() == "3 iron nail made (proto:iron_nails, 3 of 3 kept)"
        assert self.nails() == 3 and stock(self.npc, self.goods)[0].count == 3
        assert restock_due(self.goods, self.npc.ai.ledger, self.at(1000.0 + 5 * 3600)) == ()
        later = self.at(1000.0 + 6 * 3600)
        [line] = restock(
            self.npc, self.goods, restock_due(self.goods, self.npc.ai.ledger, later), later
        )
        assert line.words() == "proto:iron_nails: none needed (3 of 3 kept)"
        assert self.nails() == 3
        assert [e["kind"] for e in self.npc.ai.ledger["entries"]] == ["restock"]
        # a full stock is checked once an interval, not at every tick
        assert restock_due(self.goods, self.npc.ai.ledger, self.at(1000.0 + 7 * 3600)) == ()

    def test_restock_is_bounded_and_goes_on_until_full(self):
        now = self.at(1000.0)
        [line] = restock(self.npc, self.goods, ("proto:iron_nails",), now, most=2)
        assert (line.made, line.have) == (2, 2) and self.nails() == 2
        assert restock_due(self.goods, self.npc.ai.ledger, now) == ("proto:iron_nails",)
        [line] = restock(self.npc, self.goods, ("proto:iron_nails",), now, most=2)
        assert (line.made, line.have) == (1, 3) and self.nails() == 3
        assert restock_due(self.goods, self.npc.ai.ledger, now) == ()
        assert [e["quantity"] for e in self.npc.ai.ledger["entries"]] == [2, 1]

    def test_a_spawn_that_does_not_count_as_stock_is_undone_and_does_not_spin(self):
        """A prototype whose objects holdings() leaves out (here a character) made nothing:
        no orphans, no "made" entry, and the rule waits its interval instead of spawning at
        every call."""
        protlib.create_prototype(
            {
                "prototype_key": "iron_golem",
                "key": "iron golem",
                "typeclass": "evennia.objects.objects.DefaultCharacter",
            }
        )
        goods = self.set_goods("sell proto:iron_golem 5\nrestock proto:iron_golem keep 2 every 6h")
        now = self.at(1000.0)
        [line] = restock(self.npc, goods, restock_due(goods, self.npc.ai.ledger, now), now)
        assert line.made == 0 and "does not count" in line.problem
        golems = ObjectDB.objects.filter(db_tags__db_key="iron_golem")
        assert golems.count() == 0 and self.npc.ai.ledger["entries"] == []
        assert restock_due(goods, self.npc.ai.ledger, self.at(2000.0)) == ()

    def test_a_spawn_that_will_not_move_to_the_npc_is_undone(self):
        now = self.at(1000.0)
        with mock.patch.object(DefaultObject, "move_to", return_value=False):
            [line] = restock(self.npc, self.goods, ("proto:iron_nails",), now)
        assert line.made == 0 and "would not move" in line.problem
        assert self.nails() == 0 and self.npc.ai.ledger["entries"] == []
        assert restock_due(self.goods, self.npc.ai.ledger, now) == ()

    def test_full_rules_are_marked_in_one_write(self):
        protlib.create_prototype({"prototype_key": "rope", "key": "rope"})
        goods = self.set_goods(
            "restock proto:iron_nails keep 1 every 6h\nrestock proto:rope keep 1 every 6h"
        )
        keys = ("proto:iron_nails", "proto:rope")
        assert [line.made for line in restock(self.npc, goods, keys, self.at(1000.0))] == [1, 1]
        later = self.at(1000.0 + 6 * 3600)
        with mock.patch.object(self.npc.ai, "update", wraps=self.npc.ai.update) as update:
            lines = restock(self.npc, goods, keys, later)
        assert [line.made for line in lines] == [0, 0] and update.call_count == 1
        assert restock_due(goods, self.npc.ai.ledger, later) == ()

    def test_unreadable_goods_or_ledger_restock_nothing(self):
        now = self.at(1000.0)
        self.npc.ai.set("goods", {"closed": True})
        closed = from_state(self.npc.ai.goods)
        assert restock_due(closed, self.npc.ai.ledger, now) == ()
        assert restock(self.npc, closed, ("proto:iron_nails",), now) == []
        blocked = {"entries": [], "blocked": True}
        assert restock_due(self.goods, blocked, now) == ()
        self.npc.ai.set("ledger", blocked)
        assert restock(self.npc, self.goods, ("proto:iron_nails",), now) == []
        assert self.nails() == 0

    def test_a_clock_set_back_does_not_stop_restocking(self):
        kept = ledger.mark_restocked({}, "proto:iron_nails", 50000.0)
        assert restock_due(self.goods, kept, self.at(1000.0)) == ("proto:iron_nails",)

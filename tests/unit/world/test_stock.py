"""What an NPC has in stock, which containers count, and what its give and drop may hand
over."""

from evennia.objects.objects import DefaultObject
from evennia.utils.create import create_object
from unit.engine.test_assistant_tick import AssistantTestBase

from evennia_ai.world import stock as stock_module
from evennia_ai.world.goods import from_state, parse_goods, to_state
from evennia_ai.world.stock import give_refusal, open_container_warning, stock


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
        assert open_container_warning(chest) is None
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
            "The lantern is for sale (12 coins): offer it with trade; you cannot give stock away."
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

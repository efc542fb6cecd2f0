"""The game's money through its adapter: coins as an Attribute (the default), as coin piles,
or as a game's own class; a purse that cannot be read is an error, never empty or full."""

import pytest
from django.test.utils import override_settings
from evennia.objects.objects import DefaultCharacter, DefaultObject
from evennia.typeclasses.attributes import AttributeProperty
from evennia.utils.create import create_object
from evennia.utils.test_resources import BaseEvenniaTest

from evennia_ai.world import money as money_module
from evennia_ai.world.atomic import Touched
from evennia_ai.world.money import AttributeMoney, MoneyError, ObjectMoney, money
from evennia_ai.world.stock import MONEY_TAG_CATEGORY


class GameMoney:
    """A game's own money (for ``EVENNIA_AI_MONEY`` as a class path)."""

    def balance(self, holder):
        return 7

    def prepare(self, payer, payee, amount):
        pass

    def pay(self, payer, payee, amount, touched):
        pass

    def describe(self, amount):
        return f"{amount} crowns"


class TestAttributeMoney(BaseEvenniaTest):
    def test_balance_reads_the_attribute_and_a_missing_purse_is_empty(self):
        self.char1.db.coins = 50
        assert money().balance(self.char1) == 50
        assert money().balance(self.char2) == 0

    def test_unreadable_purse_is_an_error(self):
        for bad in ("lots", -3, 2.5, True, None):
            self.char1.db.coins = bad
            with pytest.raises(MoneyError, match="Char's purse could not be read: coins is"):
                money().balance(self.char1)

    def test_prepare_then_pay_moves_the_amount_and_notes_both_rows(self):
        self.char1.db.coins = 50
        adapter, touched = money(), Touched()
        adapter.prepare(self.char1, self.char2, 12)
        assert self.char2.attributes.has("coins")
        adapter.pay(self.char1, self.char2, 12, touched)
        assert (self.char1.db.coins, self.char2.db.coins) == (38, 12)
        assert len(touched.attributes) == 2
        with pytest.raises(MoneyError, match="Char has only 38 coins"):
            adapter.pay(self.char1, self.char2, 39, Touched())

    def test_the_attribute_and_its_category_are_settings(self):
        self.char1.attributes.add("gold", 9, category="purse")
        with override_settings(
            EVENNIA_AI_MONEY_ATTRIBUTE="gold", EVENNIA_AI_MONEY_CATEGORY="purse"
        ):
            assert money().balance(self.char1) == 9
            assert money().describe(1) == "1 coin"


class TestObjectMoney(BaseEvenniaTest):
    def pile(self, amount, holder):
        return create_object(
            DefaultObject,
            key="coins",
            location=holder,
            tags=[("coins", MONEY_TAG_CATEGORY)],
            attributes=[("amount", amount)],
        )

    def test_object_money_splits_a_pile_and_moves_exact_amount(self):
        self.pile(20, self.char1)
        self.pile(3, self.char1)
        with override_settings(EVENNIA_AI_MONEY="objects"):
            adapter = money()
            assert isinstance(adapter, ObjectMoney) and adapter.balance(self.char1) == 23
            adapter.prepare(self.char1, self.char2, 7)  # 3 + (a pile of 4 split from the 20)
            assert adapter.balance(self.char1) == 23
            touched = Touched()
            adapter.pay(self.char1, self.char2, 7, touched)
            assert (adapter.balance(self.char1), adapter.balance(self.char2)) == (16, 7)
            assert sorted(w for _, w in adapter.piles(self.char2)) == [3, 4]

    def test_every_price_two_piles_can_pay_is_paid_exactly(self):
        """The piles the split readied are the ones paid (chosen afresh, largest first, piles of
        2 and 5 split for 4 into 2, 3 and 2 would miss the exact sum)."""
        with override_settings(EVENNIA_AI_MONEY="objects"):
            adapter = money()
            for first, second in ((2, 5), (3, 7), (4, 9), (1, 1), (6, 6)):
                for price in range(1, first + second + 1):
                    for obj in list(self.char1.contents) + list(self.char2.contents):
                        obj.delete()
                    self.pile(first, self.char1)
                    self.pile(second, self.char1)
                    adapter.prepare(self.char1, self.char2, price)
                    adapter.pay(self.char1, self.char2, price, Touched())
                    assert adapter.balance(self.char2) == price, (first, second, price)
                    assert adapter.balance(self.char1) == first + second - price

    def test_an_unreadable_pile_is_an_error(self):
        self.pile(5, self.char1).db.amount = "many"
        with override_settings(EVENNIA_AI_MONEY="objects"), pytest.raises(MoneyError):
            money().balance(self.char1)

    def test_too_little_money_is_refused_before_anything_is_split(self):
        self.pile(5, self.char1)
        with (
            override_settings(EVENNIA_AI_MONEY="objects"),
            pytest.raises(MoneyError, match="only 5"),
        ):
            money().prepare(self.char1, self.char2, 6)
        assert len(self.char1.contents) == 1


class TestChoosingTheAdapter(BaseEvenniaTest):
    def test_a_game_s_own_class(self):
        with override_settings(EVENNIA_AI_MONEY=f"{__name__}.GameMoney"):
            assert money().describe(3) == "3 crowns"

    def test_a_class_that_cannot_be_made_is_refused(self):
        with override_settings(EVENNIA_AI_MONEY="no.such.Money"), pytest.raises(MoneyError):
            money()

    def test_an_unreadable_money_setting_fails_closed(self):
        with (
            override_settings(EVENNIA_AI_MONEY=42),
            pytest.raises(MoneyError, match="cannot be read"),
        ):
            money()
        with override_settings(EVENNIA_AI_MONEY_ATTRIBUTE=["x"]), pytest.raises(MoneyError):
            money()

    def test_the_default_is_the_attribute(self):
        assert isinstance(money(), AttributeMoney)
        assert money_module.money().key == "coins"


class CoinCarrier(DefaultCharacter):
    """A character keeping coins as evadventure does."""

    coins = AttributeProperty(default=0)


class TestEvadventureCoins(BaseEvenniaTest):
    def test_coins_as_an_attribute_property_work_unchanged(self):
        buyer = create_object(CoinCarrier, key="Buyer", location=self.room1)
        seller = create_object(CoinCarrier, key="Seller", location=self.room1)
        buyer.coins = 30
        adapter = money()
        adapter.prepare(buyer, seller, 12)
        adapter.pay(buyer, seller, 12, Touched())
        assert (buyer.coins, seller.coins) == (18, 12)

"""The one atomic trade: item, money and ledger entry move together or not at all, every rule
is checked again inside the transaction, and hostile orders get clear answers with nothing
lost or duplicated."""

import random
from unittest import mock

import pytest
from django.test.utils import override_settings
from evennia.objects.models import ObjectDB
from evennia.typeclasses.attributes import Attribute
from evennia.utils.create import create_object
from unit.test_attribute_writes import TurnReactor
from unit.world.test_stock import ShopTestBase

from evennia_ai import attribute_writes
from evennia_ai.world import ledger, money, routine, trade
from evennia_ai.world.trade import FAILED, TradeAborted, TradeOrder, check, execute

pytestmark = pytest.mark.postgres  # transactions and rollbacks: also on PostgreSQL

RULES = "sell lantern 12 floor 10 ceiling 16\nbuy scrap iron 2 ceiling 3 per day 10\nbuy lantern 8"


def stored_location(obj):
    return ObjectDB.objects.filter(pk=obj.pk).values_list("db_location_id", flat=True)[0]


def stored_coins(holder):
    attr = holder.attributes.get("coins", return_obj=True)
    return Attribute.objects.filter(pk=attr.pk).values_list("db_value", flat=True)[0]


class TradeTestBase(ShopTestBase):
    def setUp(self):
        super().setUp()
        self.set_goods(RULES)
        self.lantern = self.make("lantern")
        self.char1.db.coins = 50
        self.npc.db.coins = 100
        self.char2.location = self.room1
        self.char2.db.coins = 30

    def order(self, direction="sell", item="lantern", quantity=1, price=12, partner=None, **kw):
        return TradeOrder(
            npc=self.npc,
            partner=partner or self.char1,
            direction=direction,
            item=item,
            quantity=quantity,
            unit_price=price,
            via=kw.pop("via", "command"),
            **kw,
        )

    def ledger(self):
        return self.npc.ai.ledger


class TestTheTrade(TradeTestBase):
    def test_item_and_money_move_together_and_ledger_records_once(self):
        result = execute(self.order())
        assert result.done, result.refused
        assert (
            self.lantern.location == self.char1 and stored_location(self.lantern) == self.char1.id
        )
        assert (self.char1.db.coins, self.npc.db.coins) == (38, 112)
        assert (stored_coins(self.char1), stored_coins(self.npc)) == (38, 112)
        [entry] = self.ledger()["entries"]
        assert entry["kind"] == "sale" and entry["objects"] == [self.lantern.dbref]
        assert (entry["total"], entry["purse"], entry["partner"]) == (12, 112, "Char")
        assert self.ledger()["today"]["sold"] == {"lantern": 1}
        assert result.entry == entry
        assert "Char bought 1 lantern for 12 coins" in result.to_model()

    def test_the_npc_buys_what_the_player_carries(self):
        scrap = [self.make("scrap iron", self.char1) for _ in range(3)]
        result = execute(self.order("buy", "scrap iron", 2, 3))
        assert result.done, result.refused
        assert [obj.location for obj in scrap] == [self.npc, self.npc, self.char1]
        assert (self.char1.db.coins, self.npc.db.coins) == (56, 94)
        assert self.ledger()["today"]["bought"] == {"scrap iron": 2}
        assert self.ledger()["today"]["paid"] == 6

    def test_failure_between_the_writes_undoes_both_and_repairs_caches(self):
        real_pay = money.AttributeMoney.pay

        def pay_then_fail(adapter, payer, payee, amount, touched):
            real_pay(adapter, payer, payee, amount, touched)
            raise RuntimeError("the server fell over")

        for point in (
            mock.patch.object(money.AttributeMoney, "pay", pay_then_fail),
            mock.patch.object(ledger, "record", side_effect=RuntimeError("disk full")),
        ):
            with point:
                result = execute(self.order())
            assert (result.done, result.refused) == (False, FAILED)
            assert (
                self.lantern.location == self.npc and stored_location(self.lantern) == self.npc.id
            )
            assert self.lantern in self.npc.contents and self.lantern not in self.char1.contents
            assert (self.char1.db.coins, self.npc.db.coins) == (50, 100)
            assert (stored_coins(self.char1), stored_coins(self.npc)) == (50, 100)
            assert self.ledger()["entries"] == []
        assert execute(self.order()).done  # and the next trade is whole

    def test_a_game_hook_refusing_the_move_undoes_the_trade(self):
        with mock.patch.object(type(self.char1), "at_pre_object_receive", return_value=False):
            result = execute(self.order())
        assert not result.done and "would not move" in result.refused
        assert self.lantern.location == self.npc and self.char1.db.coins == 50


class TestOutsideTheBatch(TradeTestBase):
    def setUp(self):
        super().setUp()
        self.reactor = TurnReactor()
        for patcher in (
            mock.patch.object(attribute_writes, "reactor", self.reactor),
            mock.patch.object(attribute_writes.threadable, "isInIOThread", return_value=True),
        ):
            patcher.start()
            self.addCleanup(patcher.stop)
        self.addCleanup(attribute_writes.flush)

    def stored_ledger(self):
        attr = self.npc.attributes.get("ledger", category="ai", return_obj=True)
        return Attribute.objects.filter(pk=attr.pk).values_list("db_value", flat=True)[0]

    def test_rows_queued_this_turn_are_flushed_before_the_trade(self):
        self.npc.ai.set("host", False)
        self.npc.ai.set("host", True)
        assert attribute_writes.pending() >= 1
        assert execute(self.order()).done  # the turn has not ended, yet the row is stored
        attr = self.npc.attributes.get("host", category="ai", return_obj=True)
        assert Attribute.objects.filter(pk=attr.pk).values_list("db_value", flat=True)[0] is True

    def test_ledger_row_is_in_the_transaction_not_the_batch(self):
        self.npc.ai.set("ledger", ledger.record({}, {"kind": "gift", "item": "x"}, 5, "d"))
        self.reactor.end_turn()
        assert attribute_writes.batching()
        assert execute(self.order()).done
        # before the turn ends the row is in the database; only the NPC's note of the trade
        # (after the commit) waits for the batch
        attr = self.npc.attributes.get("ledger", category="ai", return_obj=True)
        assert id(attr) not in attribute_writes._pending
        assert [e["kind"] for e in self.stored_ledger()["entries"]] == ["gift", "sale"]


class TestHostileOrders(TradeTestBase):
    def refused(self, order):
        coins = self.char1.db.coins
        first = check(order)
        result = execute(order)
        assert first is not None and not result.done and result.refused == first.refused
        assert self.lantern.location == self.npc and self.char1.db.coins == coins
        return result.refused

    def test_invented_items_negative_and_huge_numbers_get_clear_answers(self):
        assert self.refused(self.order(item="dragon egg")) == (
            "Innkeeper has no 'dragon egg' for sale (for sale: lantern (12 coins))"
        )
        assert self.refused(self.order(quantity=-1)).startswith("a quantity is a whole number")
        assert self.refused(self.order(quantity=10**12)).startswith("a quantity")
        assert self.refused(self.order(price=-12)).startswith("a price")
        assert self.refused(self.order(price=10**12)).startswith("a price")
        assert "less than the least price" in self.refused(self.order(price=0))
        assert "more than the most asked" in self.refused(self.order(price=17))
        assert self.refused(self.order(quantity=2)) == "only 1 of the lantern in stock"
        assert self.refused(self.order(item="")) == "an item is named by 1 to 80 characters"
        assert self.refused(self.order(item="#x")) == "'#x' is not a dbref (#45)"
        assert self.refused(self.order(direction="steal")).endswith("is not a kind of trade")
        assert self.refused(self.order(via="approval")).startswith("an approved trade names")

    def test_player_cannot_sell_the_npc_its_own_goods(self):
        refusal = self.refused(self.order("buy", "lantern", 1, 8))
        assert refusal == "that lantern is already Innkeeper's: it is its stock"
        assert self.npc.db.coins == 100

    def test_partners_who_may_not_trade(self):
        assert self.refused(self.order(partner=self.npc)) == "Innkeeper cannot trade with itself"
        other = create_object(self.npc.__class__, key="Pell", location=self.room1)
        assert "Pell is not one" in self.refused(self.order(partner=other))
        self.char2.location = self.room2
        assert self.refused(self.order(partner=self.char2)) == (
            "Char2 is not here to trade with Innkeeper"
        )
        assert execute(
            self.order(partner=self.char2, via="approval", approval="c_1")
        ).done  # struck earlier

    def test_partner_s_purse_too_small(self):
        self.char1.db.coins = 5
        assert self.refused(self.order()) == "Char has only 5 coins; 1 lantern at 12 coins cost 12"

    def test_two_buyers_of_the_last_item_one_wins_one_is_told(self):
        first, second = self.order(), self.order(partner=self.char2)
        assert check(first) is None and check(second) is None
        real_ready = trade._ready

        def the_other_buys_first(order, plan):
            if order.partner == self.char2:
                assert execute(first).done
            real_ready(order, plan)

        with mock.patch.object(trade, "_ready", the_other_buys_first):
            result = execute(second)  # its first check passed; the one inside finds it gone
        assert not result.done and result.refused == "the lantern is sold out"
        assert self.lantern.location == self.char1
        assert (self.char1.db.coins, self.char2.db.coins, self.npc.db.coins) == (38, 30, 112)
        assert len(self.ledger()["entries"]) == 1

    def test_random_hostile_orders_conserve_money_and_items(self):
        for _ in range(3):
            self.make("lantern")
        for _ in range(4):
            self.make("scrap iron", self.char1)
        things = [
            obj
            for obj in ObjectDB.objects.all()
            if not obj.is_typeclass("evennia.objects.objects.DefaultCharacter", exact=False)
            and obj.location in (self.npc, self.char1, self.char2)
        ]
        people = [self.char1, self.char2, self.npc]
        total = sum(p.db.coins for p in people)
        pick = random.Random(36).choice
        for n in range(300):
            order = self.order(
                pick(["sell", "buy", "sell", "steal"]),
                pick(
                    [
                        "lantern",
                        "scrap iron",
                        "dragon egg",
                        self.lantern.dbref,
                        "#99999",
                        "x" * 90,
                        " ",
                    ]
                ),
                pick([1, 1, 2, 3, 0, -1, 25, 10**12]),
                pick([12, 10, 16, 2, 3, 8, 0, -5, 17, 10**12]),
                partner=pick([self.char1, self.char2, self.npc]),
                via=pick(["command", "words", "tool", "approval"]),
                approval=pick([None, "c_fuzz"]),
            )
            result = execute(order)
            if n % 7 == 0 and self.char1.contents:  # players pass goods between themselves
                self.char1.contents[0].move_to(self.char2, quiet=True)
            assert sum(p.db.coins for p in people) == total, (n, order, result)
            for obj in things:
                assert obj.location in people and stored_location(obj) == obj.location.id
                assert sum(obj in p.contents for p in people) == 1
        sales = [e for e in self.ledger()["entries"] if e["kind"] == "sale"]
        assert sales  # some fair orders went through


class TestRulesAndApproval(TradeTestBase):
    def test_unreadable_purse_or_rules_fail_closed(self):
        self.char1.db.coins = "lots"
        assert check(self.order()).refused == (
            "Char's purse could not be read: coins is 'lots', not a whole number"
        )
        self.char1.db.coins = 50
        self.npc.ai.set("goods", {"closed": True})
        assert "trade rules could not be read" in execute(self.order()).refused
        self.set_goods(RULES)
        self.npc.ai.set("ledger", {"entries": [], "blocked": True})
        assert "trade records could not be read" in execute(self.order()).refused
        self.npc.ai.set("ledger", {"entries": [], "today": {}, "restocked": {}})
        with override_settings(EVENNIA_AI_MONEY=3):
            assert "EVENNIA_AI_MONEY cannot be read" in execute(self.order()).refused
        with mock.patch.object(trade, "sale_refusal", side_effect=KeyError("bug")):
            assert execute(self.order()).refused == trade.UNCHECKED
        assert self.lantern.location == self.npc and self.char1.db.coins == 50

    def test_no_rules_no_trade(self):
        self.npc.ai.set("goods", {})
        assert execute(self.order()).refused == (
            "staff have set no prices or trade rules for Innkeeper"
        )

    def test_a_closed_shop_refuses_and_an_approval_still_runs(self):
        self.npc.ai.set("routine", {"slots": [{"start": "05:00", "end": "11:00", "room": "#1"}]})
        with (
            mock.patch.object(trade.clock, "routine_calendar") as calendar,
            mock.patch.object(trade.clock, "split"),
            mock.patch.object(routine.Routine, "from_state"),
            mock.patch.object(
                routine, "open_for_trade", return_value=(False, "the shop is shut until 05:00")
            ),
        ):
            calendar.return_value = (mock.Mock(), "")  # routines followed
            assert execute(self.order()).refused == "the shop is shut until 05:00"
            assert execute(self.order(via="approval", approval="c_1")).done

    def test_trades_above_the_approval_value_run_only_when_approved(self):
        with override_settings(EVENNIA_AI_TRADE_APPROVAL_ABOVE=10):
            assert trade.approval_needed(self.order()) == (
                "Innkeeper sells Char 1 lantern for 12 coins (above 10)"
            )
            assert check(self.order()) is None
            assert "needs an operator's approval" in execute(self.order()).refused
            assert self.lantern.location == self.npc
            assert execute(self.order(via="approval", approval="c_1")).done
        assert self.ledger()["entries"][0]["approval"] == "c_1"
        self.set_goods(RULES + "\napprove above 5")
        assert trade.approval_limit(trade.from_state(self.npc.ai.goods)) == 5

    def test_an_order_as_plain_data_and_back(self):
        order = self.order(via="tool")
        again = TradeOrder.from_plain(order.to_plain(), "approval")
        assert again == TradeOrder(**{**order.__dict__, "via": "approval"})
        plain = order.to_plain()
        self.char2.delete()
        plain["partner"] = "#99999"
        try:
            TradeOrder.from_plain(plain, "approval")
        except TradeAborted as err:
            assert str(err) == "Char no longer exists"
        else:
            raise AssertionError("no error")


class TestOtherHoldersAndMoney(TradeTestBase):
    def pile(self, amount, holder):
        return create_object(
            "evennia.objects.objects.DefaultObject",
            key="coins",
            location=holder,
            tags=[("coins", "evennia_ai_money")],
            attributes=[("amount", amount)],
        )

    def test_stock_in_a_locked_chest_is_sold_from_the_chest(self):
        chest = self.make("chest", self.room1)
        chest.locks.add(f"get_from:id({self.npc.id})")
        self.lantern.move_to(chest, quiet=True)
        self.set_goods(RULES + f"\ncontainer {chest.dbref}")
        assert execute(self.order()).done
        assert self.lantern.location == self.char1 and self.lantern not in chest.contents

    def test_coin_piles_move_whole_and_are_put_back_on_failure(self):
        self.pile(20, self.char1)
        with override_settings(EVENNIA_AI_MONEY="objects"):
            with mock.patch.object(ledger, "record", side_effect=RuntimeError("disk full")):
                assert execute(self.order()).refused == FAILED
            adapter = money.money()
            assert adapter.balance(self.char1) == 20 and adapter.balance(self.npc) == 0
            assert self.lantern.location == self.npc
            assert all(stored_location(pile) == self.char1.id for pile in self.char1.contents)
            result = execute(self.order())
            assert result.done, result.refused
            assert (adapter.balance(self.char1), adapter.balance(self.npc)) == (8, 12)
            assert result.entry["purse"] == 12

    def test_a_never_sold_item_is_named_so(self):
        self.make("smith's hammer")
        self.set_goods(RULES + "\nnever smith's hammer")
        assert execute(self.order(item="smith's hammer")).refused == (
            "the smith's hammer is never sold"
        )

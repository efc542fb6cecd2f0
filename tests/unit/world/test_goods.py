"""The rules of an NPC's trade: read from text all or nothing, stored and read back, and the
refusals of a sale or a purchase (pure: no database)."""

import pytest

from evennia_ai.world.goods import (
    CLOSED,
    Goods,
    ItemView,
    PriceRule,
    from_state,
    goods_lines,
    parse_goods,
    purchase_refusal,
    sale_refusal,
    to_state,
)
from evennia_ai.world.ledger import Today

SHOP = """\
sell lantern 12 floor 10 ceiling 16
sell proto:IRON_NAILS 1
sell #45 30
buy scrap iron 2 ceiling 3 per day 10
never smith's hammer
free sealed letter
restock proto:IRON_NAILS keep 20 every 6h
container #80
limit sold 50 per day
limit paid 200 per day
approve above 100
gifts on
"""


def shop() -> Goods:
    goods, problems = parse_goods(SHOP)
    assert problems == []
    return goods


def test_the_text_form_reads_every_rule():
    goods = shop()
    assert goods.prices["lantern"] == PriceRule(12, 10, 16)
    assert goods.prices["proto:iron_nails"] == PriceRule(1, 1, 1)
    assert goods.buys["scrap iron"].per_day == 10 and goods.buys["scrap iron"].ceiling == 3
    assert goods.never == {"smith's hammer"} and goods.free == {"sealed letter"}
    assert goods.restock["proto:iron_nails"].keep == 20
    assert goods.restock["proto:iron_nails"].every_hours == 6
    assert goods.containers == ("#80",)
    assert (goods.sold_per_day, goods.paid_per_day, goods.approval_above) == (50, 200, 100)
    assert goods.gifts and not goods.closed


def test_one_bad_line_refuses_the_whole_rules():
    goods, problems = parse_goods(
        "sell lantern 12\nsell lantern twelve\nsell cup 5 floor 6\nbuy rope -2\nfly away"
    )
    assert goods.closed and goods.prices == {}
    assert [p.split(":")[0] for p in problems] == ["line 2", "line 3", "line 4", "line 5"]
    assert "a price ('twelve') is a whole number" in problems[0]
    assert "the floor (6) is above the price (5)" in problems[1]


@pytest.mark.parametrize(
    "line",
    [
        "sell lantern 1000001",
        "sell lantern 1.5",
        "sell lantern 12 ceiling 11",
        "sell 12",
        "sell #4x5 3",
        "sell proto: 3",
        "buy rope 5 ceiling 4",
        "restock lantern keep 2 every 3h",
        "restock proto:x keep 0 every 3h",
        "limit sold lots per day",
        "gifts maybe",
        "container chest",
    ],
)
def test_hostile_or_mistaken_lines_are_refused(line):
    goods, problems = parse_goods(line)
    assert goods.closed and len(problems) == 1


def test_a_never_sold_item_cannot_be_priced_or_free():
    goods, problems = parse_goods("sell hammer 3\nnever Hammer")
    assert goods.closed and "never sold" in problems[0]


def test_rules_round_trip_through_text_and_state():
    goods = shop()
    assert parse_goods("\n".join(goods_lines(goods))) == (goods, [])
    assert from_state(to_state(goods)) == goods
    assert from_state({}) == Goods()


@pytest.mark.parametrize(
    "change",
    [
        lambda v: v["prices"]["lantern"].update(floor=20),
        lambda v: v["prices"]["lantern"].update(price=-5, floor=-5),
        lambda v: v["prices"]["lantern"].update(price="12"),
        lambda v: v["prices"]["lantern"].update(discount=3),
        lambda v: v.update(gifts="yes"),
        lambda v: v.update(never="hammer"),
        lambda v: v.update(sold_per_day=True),
        lambda v: v.update(closed=True),
        lambda v: v["never"].append("lantern"),
    ],
)
def test_unreadable_stored_rules_close_the_shop(change):
    value = to_state(shop())
    change(value)
    assert from_state(value).closed


def test_price_keys_dbref_over_prototype_over_name():
    goods, _ = parse_goods("sell #45 30\nsell proto:lamp 20\nsell lantern 12\nsell lamp 9")
    assert goods.key_of(ItemView("#45", "lantern", (), "lamp")) == "#45"
    assert goods.key_of(ItemView("#46", "lantern", (), "LAMP")) == "proto:lamp"
    assert goods.key_of(ItemView("#47", "Lantern", (), None)) == "lantern"
    assert goods.key_of(ItemView("#48", "old light", ("lamp",), None)) == "lamp"
    assert goods.key_of(ItemView("#49", "dragon egg", (), None)) is None
    assert goods.is_stock(ItemView("#47", "Lantern", (), None))


def test_what_a_buy_rule_brings_in_is_stock():
    goods, _ = parse_goods("buy scrap iron 2")
    assert goods.is_stock(ItemView("#50", "Scrap Iron", (), None))
    assert not goods.is_stock(ItemView("#51", "rope", (), None))


def test_floor_ceiling_and_daily_limits():
    goods, today = shop(), Today("2026-11-27", sold_units=49)
    assert sale_refusal(goods, Today("d"), "lantern", 1, 12, 3) is None
    assert "less than the least price" in sale_refusal(goods, Today("d"), "lantern", 1, 9, 3)
    assert "more than the most asked" in sale_refusal(goods, Today("d"), "lantern", 1, 17, 3)
    assert sale_refusal(goods, Today("d"), "lantern", 3, 12, 2) == "only 2 of the lantern in stock"
    assert sale_refusal(goods, Today("d"), "lantern", 1, 12, 0) == "the lantern is sold out"
    assert sale_refusal(goods, today, "lantern", 1, 12, 3) is None
    assert "daily limit of 50 items sold" in sale_refusal(goods, today, "lantern", 2, 12, 3)
    assert sale_refusal(goods, Today("d"), "smith's hammer", 1, 1, 1) == (
        "the smith's hammer is never sold"
    )
    assert (
        sale_refusal(goods, Today("d"), "dragon egg", 1, 1, 1) == "the dragon egg is not for sale"
    )
    bought = Today("d", bought={"scrap iron": 9}, paid=198)
    assert purchase_refusal(goods, Today("d"), "scrap iron", 3, 2, 100) is None
    assert "daily limit of 10 scrap iron" in purchase_refusal(goods, bought, "scrap iron", 2, 2, 99)
    assert "daily limit of 200 coins paid" in purchase_refusal(
        goods, bought, "scrap iron", 1, 3, 99
    )
    assert "more than is paid" in purchase_refusal(goods, Today("d"), "scrap iron", 1, 4, 100)
    assert purchase_refusal(goods, Today("d"), "scrap iron", 3, 2, 5) == (
        "only 5 coins in the purse; 3 scrap iron at 2 coins cost 6"
    )
    assert purchase_refusal(goods, Today("d"), "lantern", 1, 2, 99).startswith(
        "the lantern is not bought here (bought: scrap iron (2 coins))"
    )


@pytest.mark.parametrize("quantity", [0, -1, 21, 10**12, 1.5, True, "2"])
def test_hostile_quantities_are_refused(quantity):
    assert "a quantity is a whole number from 1 to 20" == sale_refusal(
        shop(), Today("d"), "lantern", quantity, 12, 99
    )
    assert purchase_refusal(shop(), Today("d"), "scrap iron", quantity, 2, 99).startswith(
        "a quantity"
    )


@pytest.mark.parametrize("price", [-1, 10**12, 2.5, None])
def test_hostile_prices_are_refused(price):
    assert sale_refusal(shop(), Today("d"), "lantern", 1, price, 99).startswith("a price")
    assert purchase_refusal(shop(), Today("d"), "scrap iron", 1, price, 99).startswith("a price")


def test_closed_rules_refuse_everything():
    assert sale_refusal(Goods(closed=True), Today("d"), "lantern", 1, 12, 3) == CLOSED
    assert purchase_refusal(Goods(closed=True), Today("d"), "lantern", 1, 12, 3) == CLOSED

"""An NPC's offers as stored data: one per player, bounded, timed; unreadable offers count as none."""

from __future__ import annotations

from django.test import override_settings

from evennia_ai.world import offers
from evennia_ai.world.offers import Offer


def offer(partner: str = "#7", made: float = 100.0, expires: float = 220.0, **changes) -> Offer:
    fields = dict(
        partner=partner,
        partner_key="Alice",
        direction="sell",
        item="lantern",
        name="lantern",
        quantity=2,
        unit_price=12,
        made=made,
        expires=expires,
    )
    fields.update(changes)
    return Offer(**fields)


def test_round_trip_and_words():
    kept = offer()
    assert Offer.from_plain(kept.to_plain()) == kept
    assert kept.total == 24
    assert kept.in_words("Bram") == "Bram offers to sell you 2 lantern for 24 coins (12 coins each)"
    assert offer(direction="buy", quantity=1).in_words("Bram") == (
        "Bram offers to buy from you 1 lantern for 12 coins"
    )


def test_unreadable_offers_are_none():
    good = offer().to_plain()
    for bad in (
        "sell",
        None,
        {**good, "quantity": "2"},
        {**good, "unit_price": True},
        {**good, "direction": "steal"},
        {**good, "expires": "later"},
        {k: v for k, v in good.items() if k != "item"},
    ):
        assert Offer.from_plain(bad) is None, bad
        assert offers.open_offer({"#7": bad}, "#7", now=150) is None


def test_an_offer_stands_until_it_expires():
    stored = offers.put({}, offer(), now=100)
    assert offers.open_offer(stored, "#7", now=219.9) == offer()
    assert offers.open_offer(stored, "#7", now=220) is None
    assert offers.open_offer(stored, "#8", now=150) is None


def test_one_per_partner_and_lapsed_ones_dropped():
    stored = offers.put({}, offer(), now=100)
    stored = offers.put(stored, offer(partner="#8", expires=130), now=100)
    stored = offers.put(stored, offer(unit_price=11), now=140)  # replaces #7's; #8's lapsed
    assert list(stored) == ["#7"] and stored["#7"]["unit_price"] == 11
    assert offers.without(stored, "#7", now=140) == {}


def test_plain_answers():
    assert offers.plain_answer("Yes.", ("Bram",)) is True
    assert offers.plain_answer("  DEAL! ", ("Bram",)) is True
    assert offers.plain_answer("I'll take it", ("Bram",)) is True
    assert offers.plain_answer("Bram, no deal.", ("Bram", "smith")) is False
    assert offers.plain_answer("never mind, smith", ("Bram", "smith")) is False
    assert offers.plain_answer("yes please, the cheaper one", ("Bram",)) is None
    assert offers.plain_answer("yesterday", ("Bram",)) is None
    assert offers.plain_answer("", ("Bram",)) is None
    assert offers.plain_answer("@Bram yes", ("Bram",)) is True


@override_settings(EVENNIA_AI_TRADE_YES_WORDS=["aye"], EVENNIA_AI_TRADE_NO_WORDS=["nay"])
def test_plain_answer_reads_the_settings():
    assert offers.plain_answer("Aye.", ("Bram",)) is True
    assert offers.plain_answer("bram: nay", ("Bram",)) is False
    assert offers.plain_answer("yes", ("Bram",)) is None
    assert offers.plain_answer("Hilda, aye", ("Bram",)) is None


def test_only_an_offer_to_sell_takes_a_plain_answer():
    """A "yes" may answer another question: it never sells the player's goods."""
    assert offer().answers_to_plain_words
    assert offer().how_to_answer(120) == (
        "Type |waccept|n or |wdecline|n (or say yes or no) within 120 seconds."
    )
    buying = offer(direction="buy")
    assert not buying.answers_to_plain_words
    assert buying.how_to_answer(60) == "Type |waccept|n or |wdecline|n within 60 seconds."

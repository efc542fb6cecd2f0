"""What an NPC sells and buys, at what prices, and the rules of its trade.

Staff write the rules as text, one rule per line (``aigoods`` and the dashboard)::

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

An item's rule is found by its most specific key: ``#dbref`` (that object), then
``proto:KEY`` (objects spawned from that prototype, tagged ``from_prototype``), then a name
(its key or an alias, case-insensitively). Prices are whole units of money (the smallest coin
of a game with several), with ``0 <= floor <= price <= ceiling <= 1_000_000``.

Fail closed: :func:`parse_goods` refuses a whole text with any bad line, and a stored value that
cannot be read is a closed shop (:func:`from_state`; the state key ``goods`` reads
``{"closed": true}`` while a stored value is set aside). An unreadable rule means no trade and
no giving of stock, never free goods.

Pure: no Django, Evennia or Twisted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from evennia_ai.npc_state import JSONObject


@dataclass(frozen=True)
class ItemView:
    """An object as the rules see it.

    Attributes:
        dbref: Its dbref (``"#45"``).
        key: Its key.
        aliases: Its aliases.
        prototype: The key of the prototype it was spawned from (its Tag of category
            ``from_prototype``), or None.
    """

    dbref: str
    key: str
    aliases: tuple[str, ...]
    prototype: str | None


@dataclass(frozen=True)
class PriceRule:
    """How an item sells.

    Attributes:
        price: List price per unit, in whole units of money.
        floor: The least it sells for (the price when not given).
        ceiling: The most it asks (the price when not given).
    """

    price: int
    floor: int
    ceiling: int


@dataclass(frozen=True)
class BuyRule:
    """How the NPC buys an item.

    Attributes:
        price: What it offers per unit.
        ceiling: The most it pays per unit (the price when not given).
        per_day: Units it buys in a real (UTC) day at most; None: no limit.
    """

    price: int
    ceiling: int
    per_day: int | None


@dataclass(frozen=True)
class RestockRule:
    """How the NPC's stock of a prototype is kept up.

    Attributes:
        prototype: The prototype's key, spawned to restock.
        keep: Items of it kept in stock.
        every_hours: Game hours between two restocks at most.
    """

    prototype: str
    keep: int
    every_hours: int


@dataclass(frozen=True)
class Goods:
    """An NPC's goods and trade rules (``Goods()``: nothing is stock, nothing trades).

    Rule keys are ``"#45"``, ``"proto:IRON_NAILS"`` or a name (``"lantern"``).

    Attributes:
        prices: What it sells, by rule key.
        buys: What it buys, by rule key.
        never: Rule keys of what it never sells, gives or drops.
        free: Rule keys of what it gives freely (quest items): ``give`` hands them over at no
            price.
        gifts: Whether any stock may be given away.
        containers: Dbrefs of containers it owns whose contents are stock too.
        restock: Restock rules, by rule key.
        sold_per_day: Units it sells in a real day, all items together, at most (None: no
            limit).
        paid_per_day: Money it pays out in a real day at most (None: no limit).
        approval_above: A trade worth more waits for a Builder's approval (None: the setting
            ``EVENNIA_AI_TRADE_APPROVAL_ABOVE`` alone; this can only lower it).
        closed: The rules could not be read: nothing trades, nothing in its inventory is given.
    """

    prices: dict[str, PriceRule] = field(default_factory=dict)
    buys: dict[str, BuyRule] = field(default_factory=dict)
    never: frozenset[str] = frozenset()
    free: frozenset[str] = frozenset()
    gifts: bool = False
    containers: tuple[str, ...] = ()
    restock: dict[str, RestockRule] = field(default_factory=dict)
    sold_per_day: int | None = None
    paid_per_day: int | None = None
    approval_above: int | None = None
    closed: bool = False

    def key_of(self, item: ItemView) -> str | None:
        """The rule key that covers ``item``, the most specific first (``#dbref``, then
        ``proto:KEY``, then its key or an alias, case-insensitively); None if no rule does."""
        raise NotImplementedError("issue 36: B2")

    def is_stock(self, item: ItemView) -> bool:
        """Whether ``item`` is stock: priced, restocked or never sold."""
        raise NotImplementedError("issue 36: B2")


def parse_goods(text: str) -> tuple[Goods, list[str]]:
    """The goods that ``text`` (one rule per line) sets, and every problem in words, one per
    bad line (``line 3: 'sell lantern twelve': a price is a whole number of coins``).

    Any problem refuses the whole text: the caller stores nothing.
    """
    raise NotImplementedError("issue 36: B2")


def goods_lines(goods: Goods) -> list[str]:
    """``goods`` in the text form, one rule per line (:func:`parse_goods` reads it back to the
    same goods)."""
    raise NotImplementedError("issue 36: B2")


def from_state(value: JSONObject) -> Goods:
    """The goods stored as ``value`` (the state key ``goods``); a field that cannot be read
    gives ``Goods(closed=True)``."""
    raise NotImplementedError("issue 36: B2")

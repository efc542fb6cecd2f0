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

import re
from dataclasses import dataclass, field

from evennia_ai import conf
from evennia_ai.npc_state import JSONObject, JSONValue
from evennia_ai.world.ledger import Today


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
        known = self._keys()
        if item.dbref in known:
            return item.dbref
        if item.prototype and f"proto:{item.prototype.lower()}" in known:
            return f"proto:{item.prototype.lower()}"
        for name in (item.key, *item.aliases):
            if name.strip().lower() in known:
                return name.strip().lower()
        return None

    def is_stock(self, item: ItemView) -> bool:
        """Whether ``item`` is stock: priced, restocked, never sold, or bought (what a ``buy``
        rule brought in is the NPC's goods: given back for nothing, it could be sold again)."""
        key = self.key_of(item)
        return key is not None and (
            key in self.prices or key in self.restock or key in self.never or key in self.buys
        )

    def _keys(self) -> set[str]:
        return {*self.prices, *self.buys, *self.never, *self.free, *self.restock}


#: The highest price, floor or ceiling (whole units of money).
MAX_PRICE = 1_000_000
#: The most items a restock rule keeps.
MAX_KEEP = 1000
_WHOLE = re.compile(r"[0-9]{1,9}")
_DBREF = re.compile(r"#[0-9]{1,12}")
_MAX_NAME = 80


def money_name(amount: int) -> str:
    """The money's name for ``amount`` (``EVENNIA_AI_MONEY_NAMES``): "coin" or "coins"."""
    names = conf.get_texts("EVENNIA_AI_MONEY_NAMES") or ["coin", "coins"]
    return names[0] if amount == 1 else names[-1]


def coins(amount: int) -> str:
    """``amount`` in the money's words: "1 coin", "12 coins"."""
    return f"{amount} {money_name(amount)}"


def _whole(word: str, what: str, most: int) -> int:
    """``word`` as a whole number from 0 to ``most``; ValueError naming ``what`` otherwise."""
    if not _WHOLE.fullmatch(word) or int(word) > most:
        raise ValueError(f"{what} is a whole number from 0 to {most}")
    return int(word)


def rule_key(text: str) -> str:
    """The rule key that ``text`` names: ``#45``, ``proto:key`` or a name, lowercased.

    Raises:
        ValueError: ``text`` names nothing (empty, too long, ``proto:`` with no key).
    """
    text = " ".join(text.split()).lower()
    if not text or len(text) > _MAX_NAME:
        raise ValueError(f"an item is named by 1 to {_MAX_NAME} characters")
    if text.startswith("#") and not _DBREF.fullmatch(text):
        raise ValueError(f"'{text}' is not a dbref (#45)")
    if text.startswith("proto:") and not text[6:].strip():
        raise ValueError("proto: needs a prototype key (proto:IRON_NAILS)")
    if text.startswith("proto:"):
        return "proto:" + text[6:].strip()
    return text


def _options(words: list[str], names: tuple[str, ...]) -> tuple[list[str], dict[str, str]]:
    """``words`` without the trailing ``name value`` pairs of ``names`` (``per day`` is one
    name), and those values by name."""
    found: dict[str, str] = {}
    while len(words) >= 3:
        if "per day" in names and [w.lower() for w in words[-3:-1]] == ["per", "day"]:
            name, cut = "per day", 3
        elif words[-2].lower() in names:
            name, cut = words[-2].lower(), 2
        else:
            break
        if name in found:
            raise ValueError(f"'{name}' is given twice")
        found[name] = words[-1]
        words = words[:-cut]
    return words, found


def _sell(words: list[str]) -> tuple[str, PriceRule]:
    words, found = _options(words, ("floor", "ceiling"))
    if len(words) < 2:
        raise ValueError("write: sell <item> <price> [floor <n>] [ceiling <n>]")
    price = _whole(words[-1], f"a price ('{words[-1]}')", MAX_PRICE)
    floor = _whole(found.get("floor", str(price)), "a floor", MAX_PRICE)
    ceiling = _whole(found.get("ceiling", str(price)), "a ceiling", MAX_PRICE)
    if floor > price:
        raise ValueError(f"the floor ({floor}) is above the price ({price})")
    if ceiling < price:
        raise ValueError(f"the ceiling ({ceiling}) is below the price ({price})")
    return rule_key(" ".join(words[:-1])), PriceRule(price, floor, ceiling)


def _buy(words: list[str]) -> tuple[str, BuyRule]:
    words, found = _options(words, ("ceiling", "per day"))
    if len(words) < 2:
        raise ValueError("write: buy <item> <price> [ceiling <n>] [per day <n>]")
    price = _whole(words[-1], f"a price ('{words[-1]}')", MAX_PRICE)
    ceiling = _whole(found.get("ceiling", str(price)), "a ceiling", MAX_PRICE)
    if ceiling < price:
        raise ValueError(f"the ceiling ({ceiling}) is less than the price ({price})")
    per_day = found.get("per day")
    per_day_units = None if per_day is None else _whole(per_day, "per day", MAX_PRICE)
    return rule_key(" ".join(words[:-1])), BuyRule(price, ceiling, per_day_units)


_RESTOCK = re.compile(r"restock (proto:\S+) keep (\S+) every (\S+?)h?", re.IGNORECASE)
_LIMIT = re.compile(r"limit (sold|paid) (\S+) per day", re.IGNORECASE)


def _restock(line: str) -> tuple[str, RestockRule]:
    match = _RESTOCK.fullmatch(line)
    if not match:
        raise ValueError("write: restock proto:<KEY> keep <n> every <hours>h")
    key = rule_key(match.group(1))
    keep = _whole(match.group(2), "keep", MAX_KEEP)
    every = _whole(match.group(3), "every (game hours)", 24 * 365)
    if keep < 1 or every < 1:
        raise ValueError("keep and every are at least 1")
    return key, RestockRule(key[6:], keep, every)


@dataclass
class _Draft:
    """Rules as they are read, line by line."""

    prices: dict[str, PriceRule] = field(default_factory=dict)
    buys: dict[str, BuyRule] = field(default_factory=dict)
    never: set[str] = field(default_factory=set)
    free: set[str] = field(default_factory=set)
    restock: dict[str, RestockRule] = field(default_factory=dict)
    containers: list[str] = field(default_factory=list)
    limits: dict[str, int | None] = field(default_factory=dict)
    gifts: bool = False

    def once(self, key: str, rules: object, what: str) -> str:
        if key in rules:  # type: ignore[operator]
            raise ValueError(f"'{key}' has a {what} rule already")
        return key

    def read(self, line: str) -> None:
        words = line.split()
        verb = words[0].lower()
        if verb == "sell":
            key, rule = _sell(words[1:])
            self.prices[self.once(key, self.prices, "sell")] = rule
        elif verb == "buy":
            key, buy = _buy(words[1:])
            self.buys[self.once(key, self.buys, "buy")] = buy
        elif verb in ("never", "free") and len(words) > 1:
            key = rule_key(" ".join(words[1:]))
            (self.never if verb == "never" else self.free).add(key)
        elif verb == "restock":
            key, restock = _restock(" ".join(words))
            self.restock[self.once(key, self.restock, "restock")] = restock
        elif verb == "container" and len(words) == 2 and _DBREF.fullmatch(words[1]):
            self.containers.append(words[1])
        elif verb == "limit" and _LIMIT.fullmatch(" ".join(words)):
            what = words[1].lower()
            self.limits[self.once(what, self.limits, "limit")] = _whole(words[2], "a limit", 10**9)
        elif verb == "approve" and len(words) == 3 and words[1].lower() == "above":
            above = _whole(words[2], "approve above", 10**9)
            self.limits[self.once("approve", self.limits, "approve above")] = above
        elif verb == "gifts" and len(words) == 2 and words[1].lower() in ("on", "off"):
            self.gifts = words[1].lower() == "on"
        else:
            raise ValueError(
                "not a rule (sell, buy, never, free, restock, container, limit, approve above, "
                "gifts)"
            )

    def goods(self) -> Goods:
        clash = sorted(self.never & (set(self.prices) | self.free))
        if clash:
            raise ValueError(f"'{clash[0]}' is never sold, so it can be neither priced nor free")
        return Goods(
            prices=dict(self.prices),
            buys=dict(self.buys),
            never=frozenset(self.never),
            free=frozenset(self.free),
            gifts=self.gifts,
            containers=tuple(dict.fromkeys(self.containers)),
            restock=dict(self.restock),
            sold_per_day=self.limits.get("sold"),
            paid_per_day=self.limits.get("paid"),
            approval_above=self.limits.get("approve"),
        )


def parse_goods(text: str) -> tuple[Goods, list[str]]:
    """The goods that ``text`` (one rule per line) sets, and every problem in words, one per
    bad line (``line 3: 'sell lantern twelve': a price ('twelve') is a whole number from 0 to
    1000000``).

    Any problem refuses the whole text: the caller stores nothing (the goods returned are then
    ``Goods(closed=True)``).
    """
    draft, problems = _Draft(), []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = " ".join(raw.split())
        if not line or line.startswith("#"):
            continue  # blank lines and comments
        try:
            draft.read(line)
        except ValueError as err:
            problems.append(f"line {number}: '{line[:60]}': {err}")
    if problems:
        return Goods(closed=True), problems
    try:
        return draft.goods(), []
    except ValueError as err:
        return Goods(closed=True), [str(err)]


def _limits(price: int, low: int, high: int, low_word: str, high_word: str) -> str:
    return "".join(
        f" {word} {value}"
        for word, value, default in ((low_word, low, price), (high_word, high, price))
        if value != default
    )


def goods_lines(goods: Goods) -> list[str]:
    """``goods`` in the text form, one rule per line (:func:`parse_goods` reads it back to the
    same goods)."""
    lines = [
        f"sell {key} {rule.price}"
        + _limits(rule.price, rule.floor, rule.ceiling, "floor", "ceiling")
        for key, rule in goods.prices.items()
    ]
    for key, buy in goods.buys.items():
        per_day = "" if buy.per_day is None else f" per day {buy.per_day}"
        ceiling = "" if buy.ceiling == buy.price else f" ceiling {buy.ceiling}"
        lines.append(f"buy {key} {buy.price}{ceiling}{per_day}")
    lines += [f"never {key}" for key in sorted(goods.never)]
    lines += [f"free {key}" for key in sorted(goods.free)]
    lines += [
        f"restock {key} keep {rule.keep} every {rule.every_hours}h"
        for key, rule in goods.restock.items()
    ]
    lines += [f"container {dbref}" for dbref in goods.containers]
    if goods.sold_per_day is not None:
        lines.append(f"limit sold {goods.sold_per_day} per day")
    if goods.paid_per_day is not None:
        lines.append(f"limit paid {goods.paid_per_day} per day")
    if goods.approval_above is not None:
        lines.append(f"approve above {goods.approval_above}")
    if goods.gifts:
        lines.append("gifts on")
    return lines


def to_state(goods: Goods, lines: list[str] | None = None) -> JSONObject:
    """``goods`` as the state key ``goods`` stores it (with ``lines``, the staff's text)."""
    value: JSONObject = {
        "prices": {
            key: {"price": r.price, "floor": r.floor, "ceiling": r.ceiling}
            for key, r in goods.prices.items()
        },
        "buys": {
            key: {"price": r.price, "ceiling": r.ceiling, "per_day": r.per_day}
            for key, r in goods.buys.items()
        },
        "never": list[JSONValue](sorted(goods.never)),
        "free": list[JSONValue](sorted(goods.free)),
        "gifts": goods.gifts,
        "containers": list[JSONValue](goods.containers),
        "restock": {
            key: {"prototype": r.prototype, "keep": r.keep, "every_hours": r.every_hours}
            for key, r in goods.restock.items()
        },
        "sold_per_day": goods.sold_per_day,
        "paid_per_day": goods.paid_per_day,
        "approval_above": goods.approval_above,
        "lines": list[JSONValue](goods_lines(goods) if lines is None else lines),
    }
    return value


def _rules(value: JSONValue, make: type) -> dict[str, object]:
    if not isinstance(value, dict):
        raise TypeError("rules are a dict")
    rules: dict[str, object] = {}
    for key, rule in value.items():
        if not isinstance(rule, dict):
            raise TypeError("a rule is a dict")
        rules[str(key)] = make(**rule)
    return rules


def _texts(value: JSONValue) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise TypeError("a list of texts")
    return [str(item) for item in value]


def _limit(value: JSONValue) -> int | None:
    if value is None or isinstance(value, int) and not isinstance(value, bool):
        return value
    raise TypeError("a limit is a whole number or null")


def from_state(value: JSONObject) -> Goods:
    """The goods stored as ``value`` (the state key ``goods``); a field that cannot be read
    gives ``Goods(closed=True)``.

    What is stored is read back through :func:`goods_lines` and :func:`parse_goods`, so a
    stored value breaking any rule of the text form (a floor above the price, a negative
    price, an item both never sold and priced) closes the shop too.
    """
    if not isinstance(value, dict) or value.get("closed", False) is not False:
        return Goods(closed=True)
    try:
        gifts = value.get("gifts", False)
        if not isinstance(gifts, bool):
            raise TypeError("gifts is true or false")
        stored = Goods(
            prices=_rules(value.get("prices", {}), PriceRule),  # type: ignore[arg-type]
            buys=_rules(value.get("buys", {}), BuyRule),  # type: ignore[arg-type]
            never=frozenset(_texts(value.get("never", []))),
            free=frozenset(_texts(value.get("free", []))),
            gifts=gifts,
            containers=tuple(_texts(value.get("containers", []))),
            restock=_rules(value.get("restock", {}), RestockRule),  # type: ignore[arg-type]
            sold_per_day=_limit(value.get("sold_per_day")),
            paid_per_day=_limit(value.get("paid_per_day")),
            approval_above=_limit(value.get("approval_above")),
        )
        parsed, problems = parse_goods("\n".join(goods_lines(stored)))
    except (TypeError, ValueError, AttributeError):
        return Goods(closed=True)
    return Goods(closed=True) if problems or parsed != stored else stored


CLOSED = "the trade rules could not be read, so nothing trades until staff fix them"


def _quantity_refusal(quantity: object) -> str | None:
    most = conf.get_int("EVENNIA_AI_TRADE_MAX_QUANTITY")
    if not isinstance(quantity, int) or isinstance(quantity, bool) or not 1 <= quantity <= most:
        return f"a quantity is a whole number from 1 to {most}"
    return None


def _price_refusal(unit_price: object) -> str | None:
    if not isinstance(unit_price, int) or isinstance(unit_price, bool):
        return f"a price is a whole number of {money_name(2)}"
    if not 0 <= unit_price <= MAX_PRICE:
        return f"a price is from 0 to {coins(MAX_PRICE)}"
    return None


def sale_refusal(
    goods: Goods,
    today: Today,
    item_key: str,
    quantity: int,
    unit_price: int,
    stock_count: int,
    name: str | None = None,
) -> str | None:
    """Why the NPC may not sell ``quantity`` of ``item_key`` at ``unit_price``, as a clause for
    people, or None when its rules allow it.

    Args:
        goods: Its goods.
        today: Its day's counts (:func:`evennia_ai.world.ledger.today_of`).
        item_key: The item's rule key (:meth:`Goods.key_of`).
        quantity: Units asked for.
        unit_price: Price of one.
        stock_count: Units of it in stock now.
        name: The item's name in the words (default: ``item_key``).
    """
    name = name or item_key
    if goods.closed:
        return CLOSED
    refusal = _quantity_refusal(quantity) or _price_refusal(unit_price)
    if refusal:
        return refusal
    if item_key in goods.never:
        return f"the {name} is never sold"
    rule = goods.prices.get(item_key)
    if rule is None:
        return f"the {name} is not for sale"
    if unit_price < rule.floor:
        return (
            f"{coins(unit_price)} is less than the least price of the {name} ({coins(rule.floor)})"
        )
    if unit_price > rule.ceiling:
        return f"{coins(unit_price)} is more than the most asked for the {name} ({coins(rule.ceiling)})"
    if stock_count < quantity:
        return (
            f"only {stock_count} of the {name} in stock"
            if stock_count
            else f"the {name} is sold out"
        )
    if goods.sold_per_day is not None and today.sold_units + quantity > goods.sold_per_day:
        return (
            f"the daily limit of {goods.sold_per_day} items sold would be passed "
            f"({today.sold_units} sold today)"
        )
    return None


def purchase_refusal(
    goods: Goods,
    today: Today,
    item_key: str,
    quantity: int,
    unit_price: int,
    purse: int,
    name: str | None = None,
) -> str | None:
    """Why the NPC may not buy ``quantity`` of ``item_key`` at ``unit_price`` with ``purse``
    money, as a clause for people, or None when its rules allow it (arguments as
    :func:`sale_refusal`; ``purse``: the NPC's money now)."""
    name = name or item_key
    if goods.closed:
        return CLOSED
    refusal = _quantity_refusal(quantity) or _price_refusal(unit_price)
    if refusal:
        return refusal
    rule = goods.buys.get(item_key)
    if rule is None or item_key in goods.never:
        bought = ", ".join(f"{key} ({coins(buy.price)})" for key, buy in goods.buys.items())
        return f"the {name} is not bought here" + (f" (bought: {bought})" if bought else "")
    if unit_price > rule.ceiling:
        return f"{coins(unit_price)} is more than is paid for the {name} ({coins(rule.ceiling)} at most)"
    total = unit_price * quantity
    if rule.per_day is not None and today.bought.get(item_key, 0) + quantity > rule.per_day:
        return (
            f"the daily limit of {rule.per_day} {name} bought would be passed "
            f"({today.bought.get(item_key, 0)} bought today)"
        )
    if goods.paid_per_day is not None and today.paid + total > goods.paid_per_day:
        return (
            f"the daily limit of {coins(goods.paid_per_day)} paid out would be passed "
            f"({coins(today.paid)} paid today)"
        )
    if purse < total:
        return f"only {coins(purse)} in the purse; {quantity} {name} at {coins(unit_price)} cost {total}"
    return None

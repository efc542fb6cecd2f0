"""A trading NPC's wares as its requests show them: open or closed, its purse, what it sells
and buys and at what prices, within a token budget (``EVENNIA_AI_GOODS_TOKENS``)::

    ## What you trade
    Open for trade now. Your purse: 112 coins.
    <untrusted source="your stock">
    | You sell: lantern x3, 12 coins (at least 10, at most 16); iron nails x20, 1 coin.
    | Never sold: smith's hammer.
    | You buy: scrap iron, 2 coins (at most 3), 10 a day.
    </untrusted>
    Trades over 100 coins wait for an operator's approval.

The names of the stock may be players' (an object a player sold the NPC), so the lists are
fenced. What does not fit ends with "(and N more)" (:func:`~evennia_ai.world.place.fit_list`). The prices are the rules' (the trade checks
them again, whatever the model says): an NPC asked what it sells answers from this.

Pure: no Django, Evennia or Twisted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from evennia_ai.utils import defuse_tags, fence
from evennia_ai.wording import (
    WARES_APPROVAL,
    WARES_BUY,
    WARES_CLOSED,
    WARES_HEADING,
    WARES_NEVER,
    WARES_OPEN,
    WARES_PURSE,
    WARES_SELL,
    WARES_SOURCE,
)
from evennia_ai.world.goods import BuyRule, Goods, PriceRule, coins
from evennia_ai.world.place import fit_list


@dataclass(frozen=True)
class Ware:
    """One kind of item in stock, as the wares list it.

    Attributes:
        name: Its name.
        count: How many are in stock.
        rule: Its price rule.
    """

    name: str
    count: int
    rule: PriceRule


class StockedKind(Protocol):
    """One kind of item in stock as :func:`evennia_ai.world.stock.stock` lists it (its
    ``StockLine``)."""

    @property
    def name(self) -> str: ...

    @property
    def count(self) -> int: ...

    @property
    def rule(self) -> PriceRule: ...


def for_sale(lines: Iterable[StockedKind]) -> list[Ware]:
    """The wares of an NPC's stock (``stock.stock(npc, goods)``), one per kind with any left:
    the one list every view of its wares shows (its requests, the ``wares`` tool and the
    players' ``wares`` command)."""
    return [Ware(line.name, line.count, line.rule) for line in lines if line.count > 0]


def bought(goods: Goods) -> list[tuple[str, BuyRule]]:
    """What ``goods`` buy, as (name, rule), by rule key."""
    return [(_key_name(key), rule) for key, rule in sorted(goods.buys.items())]


def trades(goods: Goods) -> bool:
    """Whether ``goods`` make the NPC a trader (it sells or buys something, or its rules could
    not be read: a closed shop is shown closed)."""
    return bool(goods.prices or goods.buys or goods.closed)


def sale_text(ware: Ware) -> str:
    """One ware as the NPC reads it: "lantern x3, 12 coins (at least 10, at most 16)"."""
    rule = ware.rule
    limits = []
    if rule.floor < rule.price:
        limits.append(f"at least {rule.floor}")
    if rule.ceiling > rule.price:
        limits.append(f"at most {rule.ceiling}")
    within = f" ({', '.join(limits)})" if limits else ""
    return f"{ware.name} x{ware.count}, {coins(rule.price)}{within}"


def purchase_text(name: str, rule: BuyRule) -> str:
    """What it buys as the NPC reads it: "scrap iron, 2 coins (at most 3), 10 a day"."""
    most = f" (at most {rule.ceiling})" if rule.ceiling > rule.price else ""
    per_day = f", {rule.per_day} a day" if rule.per_day is not None else ""
    return f"{name}, {coins(rule.price)}{most}{per_day}"


def _key_name(key: str) -> str:
    return key[len("proto:") :].replace("_", " ") if key.startswith("proto:") else key


def render(
    goods: Goods,
    wares: list[Ware],
    purse: str,
    closed: str | None,
    approval: int | None,
    budget: int,
    count: Callable[[str], int],
) -> str:
    """The wares section within ``budget`` tokens counted with ``count`` ("" when ``goods``
    make no trader or the budget holds not even the first line).

    Args:
        goods: The NPC's rules.
        wares: Its stock, one entry per kind.
        purse: Its money in words ("112 coins"), or words saying it cannot be read.
        closed: Why it does not trade now (its routine's words), or None when it is open.
        approval: The value above which a trade waits for approval (None: none waits).
        budget: Tokens at most.
        count: The request's token counter.
    """
    if not trades(goods):
        return ""
    # staff's words (a slot's doing) and a purse's error (a coin pile's name): defused
    state = WARES_CLOSED.format(why=defuse_tags(closed)) if closed is not None else WARES_OPEN
    first = f"{WARES_HEADING}\n{state} {WARES_PURSE.format(purse=defuse_tags(purse))}"
    left = budget - count(first)
    if left < 0:
        return ""
    lists = [
        (WARES_SELL, [sale_text(w) for w in wares if w.count > 0]),
        (WARES_NEVER, sorted(_key_name(key) for key in goods.never)),
        (WARES_BUY, [purchase_text(name, rule) for name, rule in bought(goods)]),
    ]
    approval_line = WARES_APPROVAL.format(limit=coins(approval)) if approval is not None else ""
    if approval_line:
        left -= count(approval_line) + 1
    left -= count(fence(".", WARES_SOURCE))  # the fence's own tokens
    kept = []
    for form, items in lists:
        text = fit_list(items, form, left, count)
        if text:
            kept.append(text)
            left -= count(text) + 2  # its line and the fence's "| "
    parts = [first]
    if kept:
        parts.append(fence("\n".join(kept), WARES_SOURCE))
    if approval_line and left >= 0:
        parts.append(approval_line)
    return "\n".join(parts)

"""The one atomic trade: the only path by which an NPC's goods and money change hands.

:func:`execute` takes a :class:`TradeOrder` (an NPC sells to or buys from a player character)
and, in order:

1. checks everything that needs no write (:func:`check`): readable, open rules; the slot open
   for trade; the partner a player in the NPC's room; the items found; never-sold items,
   floor and ceiling, the day's limits; both purses;
2. readies the payment and the ledger outside the transaction, and flushes the turn's batched
   writes;
3. in one transaction, with batching off: checks again, moves each item, pays, and records the
   ledger entry;
4. after the commit, tells the partner, the room and the NPC.

Any error inside the transaction rolls it back, the cached objects are repaired
(:mod:`evennia_ai.world.atomic`), and the result is a refusal in words: item, money and ledger
move together or not at all. The model's ``trade`` tool only makes an offer; a trade runs when
the player accepts (by command or a plain "yes"), or when a Builder approves one above the
approval value.

Glue: Evennia's objects and Django's transactions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evennia.objects.models import ObjectDB
from evennia.utils import logger

from evennia_ai import attribute_writes, conf
from evennia_ai.npc_state import JSONObject, NPCState, find_npc_state
from evennia_ai.utils import clean_text, log_prefix, one_line, today
from evennia_ai.world import clock, ledger, routine
from evennia_ai.world.atomic import Touched, all_or_nothing
from evennia_ai.world.goods import (
    CLOSED,
    Goods,
    coins,
    from_state,
    purchase_refusal,
    rule_key,
    sale_refusal,
)
from evennia_ai.world.money import Money, MoneyError, money
from evennia_ai.world.objects import as_shown, for_room, is_character, is_player
from evennia_ai.world.stock import (
    StockLine,
    holdings,
    item_view,
    ready_ledger,
    stock,
    tradeable,
    write_entry,
)

#: How an order may come.
VIAS = ("tool", "command", "words", "approval")
#: What an order may be: the NPC sells, or it buys.
DIRECTIONS = ("sell", "buy")
#: The refusal when something unexpected failed inside the transaction (logged).
FAILED = "the trade failed and was undone; nothing changed hands"
#: The refusal when the rules could not be checked at all (logged).
UNCHECKED = "the trade rules could not be checked; nothing changed hands"


class TradeAborted(Exception):
    """A trade cannot go on; the message says why, in words ("Alice no longer exists")."""


class _AlreadyDone(Exception):
    """The confirmation of an approved order already ran it: its ledger entry is ``entry``."""

    def __init__(self, entry: JSONObject) -> None:
        super().__init__("already done")
        self.entry = entry


@dataclass(frozen=True)
class TradeOrder:
    """One trade, as asked for.

    Attributes:
        npc: The NPC (the shop).
        partner: The player character it trades with.
        direction: ``"sell"`` (the NPC sells to the partner) or ``"buy"`` (it buys from them).
        item: What was asked for: a name, a ``#dbref`` or ``proto:KEY``.
        quantity: How many.
        unit_price: The price of one, in whole units of money.
        via: How it came: ``"tool"``, ``"command"``, ``"words"`` (a plain yes) or
            ``"approval"`` (a Builder approved it).
        approval: The confirmation's id, when ``via`` is ``"approval"``.
    """

    npc: Any
    partner: Any
    direction: str
    item: str
    quantity: int
    unit_price: int
    via: str
    approval: str | None = None

    def to_plain(self) -> JSONObject:
        """The order as plain data (dbrefs and values), for a confirmation entry's payload."""
        return {
            "npc": self.npc.dbref,
            "npc_key": self.npc.key,
            "partner": self.partner.dbref,
            "partner_key": self.partner.key,
            "direction": self.direction,
            "item": self.item,
            "quantity": self.quantity,
            "unit_price": self.unit_price,
            "via": self.via,
            "approval": self.approval,
        }

    @classmethod
    def from_plain(cls, data: JSONObject, via: str) -> TradeOrder:
        """The order that :meth:`to_plain` gave, now coming ``via``.

        Raises:
            TradeAborted: The NPC or the partner no longer exists ("Alice no longer exists"),
                or the data is not an order.
        """
        found = []
        for role in ("npc", "partner"):
            obj = ObjectDB.objects.get_id(str(data.get(role)))
            if obj is None:
                raise TradeAborted(f"{data.get(role + '_key') or data.get(role)} no longer exists")
            found.append(obj)
        quantity, unit_price, approval = (
            data.get("quantity"),
            data.get("unit_price"),
            data.get("approval"),
        )
        if not isinstance(quantity, int) or not isinstance(unit_price, int):
            raise TradeAborted("the order's quantity and price cannot be read")
        return cls(
            npc=found[0],
            partner=found[1],
            direction=str(data.get("direction")),
            item=str(data.get("item")),
            quantity=quantity,
            unit_price=unit_price,
            via=via,
            approval=approval if isinstance(approval, str) else None,
        )


@dataclass(frozen=True)
class TradeResult:
    """What became of a trade.

    Attributes:
        done: Whether the goods and the money changed hands.
        refused: Empty when done; else why not, as a clause for people ("only 2 of the
            lantern in stock", "Alice has only 5 coins; 1 lantern at 12 coins cost 12").
        pending: The confirmation's id when it waits for a Builder's approval.
        entry: The ledger entry written, when done (the earlier one, with ``already``).
        already: The approval that ran it had run it before (the server stopped before the
            confirmation was marked decided): nothing moved this time.
    """

    done: bool
    refused: str
    pending: str | None = None
    entry: JSONObject | None = None
    already: bool = False

    def to_player(self, viewer: Any) -> str:
        """The result in one line for ``viewer``, a player ("The trade did not happen: only 2
        of the lantern in stock.")."""
        if self.already:
            return f"The trade was already done: {_summary(self.entry or {})}."
        if self.done:
            return f"The trade is done: {_summary(self.entry or {})}."
        if self.pending:
            return "The trade waits for an operator's approval; you will be told."
        return f"The trade did not happen: {self.refused}."

    def to_model(self) -> str:
        """The result as the NPC's model reads it (a tool's result)."""
        if self.already:
            return (
                f"The trade was already done ({(self.entry or {}).get('id') or 'earlier'}): "
                f"{_summary(self.entry or {})}. Nothing changed hands again."
            )
        if self.done:
            entry = self.entry or {}
            purse = entry.get("purse")
            left = f" Your purse now holds {coins(purse)}." if isinstance(purse, int) else ""
            return f"The trade is done: {_summary(entry)}.{left}"
        if self.pending:
            return (
                f"The trade waits for an operator's approval ({self.pending}); do not say it is "
                "done."
            )
        return f"The trade did not happen: {self.refused}. Nothing changed hands."


def _summary(entry: JSONObject) -> str:
    """An entry in words: "Alice bought 1 lantern for 12 coins"."""
    if entry.get("id") is None and entry.get("approval"):  # the ledger kept only its approval
        return f"by approval {entry.get('approval')}, whose record is no longer in the ledger"
    verb = "bought" if entry.get("kind") == "sale" else "sold"
    total = entry.get("total")
    return (
        f"{entry.get('partner')} {verb} {entry.get('quantity')} {entry.get('name')} for "
        f"{coins(total if isinstance(total, int) else 0)}"
    )


@dataclass(frozen=True)
class _Plan:
    """A checked order: what moves where, and who pays whom."""

    state: NPCState
    goods: Goods
    key: str
    name: str
    items: tuple[Any, ...]
    total: int
    giver: Any
    receiver: Any
    payer: Any
    payee: Any
    adapter: Money


def _in_words(obj: Any) -> str:
    return str(getattr(obj, "key", None) or "someone")


def _parties(order: TradeOrder) -> NPCState:
    """The NPC's state, once the order's form and both parties pass; TradeAborted why not."""
    if order.direction not in DIRECTIONS or order.via not in VIAS:
        raise TradeAborted(f"'{order.direction}' by '{order.via}' is not a kind of trade")
    if order.via == "approval" and not order.approval:
        raise TradeAborted("an approved trade names the confirmation that approved it")
    if not isinstance(order.item, str) or not order.item.strip() or len(order.item) > 80:
        raise TradeAborted("an item is named by 1 to 80 characters")
    npc, partner = order.npc, order.partner
    if npc is None or not npc.pk:
        raise TradeAborted(f"{_in_words(npc)} no longer exists")
    if partner is None or not partner.pk:
        raise TradeAborted(f"{_in_words(partner)} no longer exists")
    state = find_npc_state(npc)
    if state is None:
        raise TradeAborted(f"{npc.key} does not trade")
    if partner == npc:
        raise TradeAborted(f"{npc.key} cannot trade with itself")
    if not (is_character(partner) and is_player(partner)):
        raise TradeAborted(f"only players trade with {npc.key}; {partner.key} is not one")
    if order.via != "approval" and partner.location != npc.location:
        raise TradeAborted(f"{partner.key} is not here to trade with {npc.key}")
    return state


def closed_now(stored: JSONObject) -> str | None:
    """Why the NPC's routine (``stored``, its state ``routine``) keeps its shop shut now, or
    None (an NPC without slots trades at any time).

    A routine that cannot be read (:attr:`~evennia_ai.world.routine.Routine.unreadable`) keeps
    it shut: the strictest value, not "no routine".
    """
    cal, _off = clock.routine_calendar()
    if cal is None or not routine.is_kept(stored):
        return None  # routines off (kept, not followed), or none: open at any time
    is_open, why = routine.open_for_trade(
        routine.Routine.from_state(stored, cal), clock.split(clock.source(), cal).minute, cal
    )
    return None if is_open else why or "the shop is closed now"


def _rules(order: TradeOrder, state: NPCState) -> Goods:
    """The NPC's goods, once they are readable and set, its records readable and its shop
    open; TradeAborted why not."""
    npc = order.npc
    goods = from_state(state.goods)
    if goods.closed:
        raise TradeAborted(CLOSED)
    if goods == Goods():
        raise TradeAborted(f"staff have set no prices or trade rules for {npc.key}")
    if ledger.blocked(state.ledger):
        raise TradeAborted(
            f"{npc.key}'s trade records could not be read, so it trades no more until staff "
            "fix them"
        )
    if order.via != "approval":
        closed = closed_now(state.routine)
        if closed:
            raise TradeAborted(closed)
    return goods


def matches(obj: Any, asked: str) -> bool:
    """Whether ``obj`` is what ``asked`` (a rule key: ``#dbref``, ``proto:KEY`` or a name)
    names."""
    view = item_view(obj)
    if asked.startswith("#"):
        return view.dbref == asked
    if asked.startswith("proto:"):
        return f"proto:{(view.prototype or '').lower()}" == asked
    return asked in (name.strip().lower() for name in (view.key, *view.aliases))


def _shown(order: TradeOrder) -> str:
    """What ``order`` asked for, as its refusals repeat it (written by a player or a model:
    clean, on one line)."""
    return one_line(clean_text(order.item), 80)


def _asked(order: TradeOrder) -> str:
    """The rule key of what ``order`` asks for; TradeAborted when it names nothing."""
    try:
        return rule_key(order.item)
    except ValueError as err:
        raise TradeAborted(str(err)) from err


def for_sale(lines: list[StockLine], asked: str) -> StockLine | None:
    """The stock line ``asked`` names (its rule key, its name, or one of its objects), with
    an object named by dbref first."""
    for line in lines:
        named = [obj for obj in line.items if matches(obj, asked)]
        if line.key == asked or line.name.lower() == asked or named:
            if asked.startswith("#") and named:
                items = (*named, *(obj for obj in line.items if obj not in named))
                return StockLine(line.key, line.name, line.count, line.rule, items)
            return line
    return None


def _plan_sale(order: TradeOrder, state: NPCState, goods: Goods, adapter: Money) -> _Plan:
    npc, partner = order.npc, order.partner
    asked = _asked(order)
    lines = stock(npc, goods)
    line = for_sale(lines, asked)
    today_counts = ledger.today_of(state.ledger, today())
    if line is None and (asked in goods.prices or asked in goods.never):  # none left, or never
        refusal = sale_refusal(goods, today_counts, asked, order.quantity, order.unit_price, 0)
        raise TradeAborted(refusal or f"the {asked} is sold out")
    if line is None:
        listed = ", ".join(f"{ln.name} ({coins(ln.rule.price)})" for ln in lines) or "nothing"
        raise TradeAborted(f"{npc.key} has no '{_shown(order)}' for sale (for sale: {listed})")
    refusal = sale_refusal(
        goods, today_counts, line.key, order.quantity, order.unit_price, line.count, line.name
    )
    if refusal:
        raise TradeAborted(refusal)
    total = order.quantity * order.unit_price
    adapter.balance(npc)  # the payee's purse must be readable too
    purse = adapter.balance(partner)
    if purse < total:
        raise TradeAborted(
            f"{partner.key} has only {coins(purse)}; {order.quantity} {line.name} at "
            f"{coins(order.unit_price)} cost {total}"
        )
    items = line.items[: order.quantity]
    return _Plan(
        state, goods, line.key, line.name, items, total, npc, partner, partner, npc, adapter
    )


def offered(partner: Any, goods: Goods, asked: str) -> tuple[str, str, list[Any]] | None:
    """What ``partner`` carries that ``asked`` (a rule key) names, as a purchase takes it: the
    rule key of the first (an object called exactly that first, then the oldest), its name,
    and every carried object of that key, in that order; None when it carries none. The
    ``sell`` command prices an order with the same pick.
    """
    carried = [obj for obj in partner.contents if tradeable(obj) and matches(obj, asked)]
    if not carried:
        return None
    carried.sort(key=lambda obj: (obj.key.strip().lower() != asked, obj.id))
    key = goods.key_of(item_view(carried[0])) or asked
    same = [obj for obj in carried if (goods.key_of(item_view(obj)) or asked) == key]
    return key, (carried[0].key if key.startswith(("#", "proto:")) else key), same


def _plan_purchase(order: TradeOrder, state: NPCState, goods: Goods, adapter: Money) -> _Plan:
    npc, partner = order.npc, order.partner
    asked = _asked(order)
    found = offered(partner, goods, asked)
    if found is None:
        if any(matches(obj, asked) for obj in holdings(npc, goods)):
            raise TradeAborted(f"that {_shown(order)} is already {npc.key}'s: it is its stock")
        raise TradeAborted(f"{partner.key} does not carry a '{_shown(order)}'")
    key, name, same = found
    today_counts = ledger.today_of(state.ledger, today())
    refusal = purchase_refusal(
        goods, today_counts, key, order.quantity, order.unit_price, adapter.balance(npc), name
    )
    if refusal:
        raise TradeAborted(refusal)
    if len(same) < order.quantity:
        raise TradeAborted(f"{partner.key} carries only {len(same)} {name}")
    adapter.balance(partner)  # the payee's purse must be readable too
    total = order.quantity * order.unit_price
    items = tuple(same[: order.quantity])
    return _Plan(state, goods, key, name, items, total, partner, npc, npc, partner, adapter)


def _plan(order: TradeOrder) -> _Plan:
    """Every check of ``order`` that needs no write, and what it would move.

    Raises:
        TradeAborted: A rule refuses it (the message says why).
        MoneyError: A purse or the money setting cannot be read.
    """
    if not attribute_writes.on_reactor_thread():
        raise TradeAborted("a trade runs on the server's main thread only")
    state = _parties(order)
    if order.via == "approval":  # an approval runs its trade once, whatever became of it
        earlier = ledger.approval_done(state.ledger, order.approval or "")
        if earlier is not None:
            raise _AlreadyDone(earlier)
    goods = _rules(order, state)
    adapter = money()
    if order.direction == "sell":
        return _plan_sale(order, state, goods, adapter)
    return _plan_purchase(order, state, goods, adapter)


def _refused(order: TradeOrder, reason: str) -> TradeResult:
    logger.log_info(f"{log_prefix(order.npc)}: trade refused: {reason}")
    return TradeResult(done=False, refused=reason)


def _checked(order: TradeOrder) -> _Plan | TradeResult:
    """The plan of ``order``, or the refusal in words (an unexpected error logged)."""
    try:
        return _plan(order)
    except _AlreadyDone as done:
        return _already(order, done.entry)
    except (TradeAborted, MoneyError) as err:
        return _refused(order, str(err))
    except Exception:
        logger.log_trace(f"{log_prefix(order.npc)}: a trade could not be checked")
        return TradeResult(done=False, refused=UNCHECKED)


def _already(order: TradeOrder, entry: JSONObject) -> TradeResult:
    logger.log_info(
        f"{log_prefix(order.npc)}: approval {order.approval} had already run its trade "
        f"({entry.get('id')}); nothing moved again"
    )
    return TradeResult(done=True, refused="", entry=entry, already=True)


def check(order: TradeOrder) -> TradeResult | None:
    """The refusal of ``order`` found without writing anything (fast, in words), or None when
    every such check passes.

    An order above the approval value passes: whether it must wait is
    :func:`approval_needed`'s question.
    """
    checked = _checked(order)
    return checked if isinstance(checked, TradeResult) and not checked.done else None


def approval_limit(goods: Goods) -> int | None:
    """The value above which a trade waits for a Builder: the lower of the NPC's own
    ``approve above`` and ``EVENNIA_AI_TRADE_APPROVAL_ABOVE`` (None: no trade waits)."""
    limits = [
        limit
        for limit in (goods.approval_above, conf.get("EVENNIA_AI_TRADE_APPROVAL_ABOVE"))
        if isinstance(limit, int)
    ]
    return min(limits) if limits else None


def approval_value(order: TradeOrder, state: NPCState, total: int) -> int:
    """What ``order`` (worth ``total``) counts for against the approval value: its total and
    the value of the partner's earlier trades with the NPC this real (UTC) day, sales and
    purchases together, so that splitting an order does not avoid the approval."""
    earlier = ledger.today_of(state.ledger, today()).partners.get(order.partner.dbref, 0)
    return total + earlier


def approval_needed(order: TradeOrder) -> str | None:
    """Why ``order`` must wait for a Builder's approval, for the approver ("Bram sells Alice
    1 sword for 120 coins (above 100)"; "... for 60 coins (120 coins with today's earlier
    trades, above 100)"), or None when it need not (or is refused anyway)."""
    checked = _checked(order)
    if isinstance(checked, TradeResult):
        return None
    limit = approval_limit(checked.goods)
    value = approval_value(order, checked.state, checked.total)
    if limit is None or value <= limit:
        return None
    verb = "sells" if order.direction == "sell" else "buys from"
    counted = f"{coins(value)} with today's earlier trades, " if value != checked.total else ""
    return (
        f"{order.npc.key} {verb} {order.partner.key} {order.quantity} {checked.name} for "
        f"{coins(checked.total)} ({counted}above {limit})"
    )


def _ready(order: TradeOrder, plan: _Plan) -> None:
    """Outside the transaction: ready the payment and the ledger's Attribute, so that
    nothing is created inside it, and write the rows queued this turn."""
    plan.adapter.prepare(plan.payer, plan.payee, plan.total)
    ready_ledger(order.npc, plan.state)
    attribute_writes.flush()


def _game_clock() -> str:
    """The game time for the ledger ("day 3 14:20"), or "" while the clock cannot be read."""
    try:
        now = clock.game_now()
        return f"day {now.day} {now.clock()}"
    except Exception:  # a game without a readable clock still trades
        return ""


def _move(plan: _Plan, touched: Touched) -> None:
    for item in plan.items:
        if item.location != plan.giver:
            holder = item.location
            if holder is None or holder.location not in (plan.giver, plan.giver.location):
                raise TradeAborted(f"the {item.key} is no longer {plan.giver.key}'s to hand over")
        touched.moved.append(item)
        touched.holders.update((item.location, plan.receiver))
        if not item.move_to(plan.receiver, quiet=True, move_type="trade"):
            raise TradeAborted(f"the {item.key} would not move to {plan.receiver.key}")


def _record(order: TradeOrder, plan: _Plan, touched: Touched) -> JSONObject:
    """Write the ledger entry of the trade (inside the transaction) and return it."""
    entry: JSONObject = {
        "game": _game_clock(),
        "kind": "sale" if order.direction == "sell" else "purchase",
        "item": plan.key,
        "name": plan.name,
        "objects": [item.dbref for item in plan.items],
        "quantity": order.quantity,
        "unit": order.unit_price,
        "total": plan.total,
        "partner": order.partner.key,
        "partner_id": order.partner.dbref,
        "via": order.via,
        "approval": order.approval,
        "purse": plan.adapter.balance(order.npc),
    }
    return write_entry(order.npc, plan.state, touched, entry)


def _exchange(order: TradeOrder, touched: Touched) -> JSONObject:
    """Inside the transaction: check again, move the items, pay, record. Returns the entry."""
    again = _plan(order)  # raises the refusal if anything changed since the first check
    _move(again, touched)
    again.adapter.pay(again.payer, again.payee, again.total, touched)
    return _record(order, again, touched)


def execute(order: TradeOrder) -> TradeResult:
    """Run ``order``: check it, ready it, and move the items, the money and the ledger entry in
    one transaction (all or nothing), then tell those concerned. The one path by which goods
    and money change hands; never raises for a refusal.

    An order worth more than :func:`approval_limit` (counted with the partner's earlier
    trades today, :func:`approval_value`) runs only ``via="approval"``: another way it is
    refused, and the caller queues it (``engine.confirmations.queue_trade``). An approval
    runs its trade once: when the ledger already has an entry of that approval (the server
    stopped between the trade and the confirmation's decision), the result is that entry,
    ``already``, and nothing moves; this is checked again inside the transaction.
    """
    plan = _checked(order)
    if isinstance(plan, TradeResult):
        return plan
    limit = approval_limit(plan.goods)
    value = approval_value(order, plan.state, plan.total)
    if order.via != "approval" and limit is not None and value > limit:
        today_too = " (with today's earlier trades)" if value != plan.total else ""
        return _refused(
            order,
            f"a trade worth more than {coins(limit)}{today_too} needs an operator's approval "
            "first",
        )
    try:
        _ready(order, plan)
    except MoneyError as err:
        return _refused(order, str(err))
    except Exception:
        logger.log_trace(f"{log_prefix(order.npc)}: a trade could not be readied")
        return TradeResult(done=False, refused=FAILED)
    touched = Touched()
    try:
        with all_or_nothing(touched):
            entry = _exchange(order, touched)
    except _AlreadyDone as done:  # found inside the transaction: nothing was written
        return _already(order, done.entry)
    except (TradeAborted, MoneyError) as err:
        return _refused(order, str(err))
    except Exception:
        logger.log_trace(f"{log_prefix(order.npc)}: a trade failed and was rolled back")
        return TradeResult(done=False, refused=FAILED)
    result = TradeResult(done=True, refused="", entry=entry)
    announce(order, plan, result)
    return result


def announce(order: TradeOrder, plan: _Plan, result: TradeResult) -> None:
    """After the commit: tell the partner, the room and the NPC (a failure here is logged;
    the trade stands)."""
    try:
        npc, partner = order.npc, order.partner
        what = f"{order.quantity} {as_shown(plan.name)}"  # names players may have chosen
        npc_name, partner_name = as_shown(npc.key), as_shown(partner.key)
        paid = plan.adapter.describe(plan.total)
        left = plan.adapter.describe(plan.adapter.balance(partner))
        if order.direction == "sell":
            partner.msg(f"You buy {what} from {npc_name} for {paid}. You have {left} now.")
            seen, heard = f"{partner_name} buys {what} from {npc_name}.", "bought"
        else:
            partner.msg(f"You sell {what} to {npc_name} for {paid}. You have {left} now.")
            seen, heard = f"{partner_name} sells {what} to {npc_name}.", "sold"
        if npc.location is not None and partner.location == npc.location:
            npc.location.msg_contents(for_room(seen), exclude=(partner, npc))
        plan.state.hear(
            f"{partner.key} {heard} {order.quantity} {plan.name} "
            f"{'from' if heard == 'bought' else 'to'} you for "
            f"{paid}.",
            source=partner.dbref,
        )
    except Exception:
        logger.log_trace(f"{log_prefix(order.npc)}: a trade was made but could not be told")


__all__ = [
    "DIRECTIONS",
    "VIAS",
    "TradeAborted",
    "TradeOrder",
    "TradeResult",
    "approval_limit",
    "approval_needed",
    "approval_value",
    "check",
    "execute",
]

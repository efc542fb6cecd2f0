"""What an NPC has in stock: the priced objects it carries, or keeps in a container it owns.

A container counts only while it is in the NPC's inventory or its room **and** it lets the NPC
take from it (``container.access(npc, "get_from")``, the containers contrib's lock). A
container that lets anyone take from it still counts, but staff are warned when they set it
(:func:`open_container_warning`): players could take the stock without paying.

Coin piles (:mod:`evennia_ai.world.money`'s ``objects`` money) and characters are never stock.

Glue: Evennia's objects, locks and Tags.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from evennia.prototypes import spawner
from evennia.utils import logger

from evennia_ai import attribute_writes, conf
from evennia_ai.npc_state import LEDGER, STATE_CATEGORY, JSONObject, NPCState, find_npc_state
from evennia_ai.utils import iso_utc, log_prefix, today
from evennia_ai.world import ledger
from evennia_ai.world.atomic import Touched, all_or_nothing
from evennia_ai.world.clock import GameTime
from evennia_ai.world.goods import Goods, ItemView, PriceRule, coins, from_state
from evennia_ai.world.objects import is_character

#: The Tag category of coin piles (``EVENNIA_AI_MONEY = "objects"``).
MONEY_TAG_CATEGORY = "evennia_ai_money"
#: The Tag category the spawner marks objects with, holding their prototype's key.
PROTOTYPE_TAG_CATEGORY = "from_prototype"


@dataclass(frozen=True)
class StockLine:
    """Units of one priced item in stock.

    Attributes:
        key: The rule key that prices them.
        name: The name shown (the rule's name, or the first object's key).
        count: How many.
        rule: Its price rule.
        items: The objects, oldest first.
    """

    key: str
    name: str
    count: int
    rule: PriceRule
    items: tuple[Any, ...]


def item_view(obj: Any) -> ItemView:
    """``obj`` as the pure rules see it."""
    prototype = obj.tags.get(category=PROTOTYPE_TAG_CATEGORY, return_list=True)
    return ItemView(
        dbref=obj.dbref,
        key=obj.key,
        aliases=tuple(obj.aliases.all()),
        prototype=prototype[0] if prototype else None,
    )


def is_money(obj: Any) -> bool:
    """Whether ``obj`` is a coin pile (tagged ``EVENNIA_AI_MONEY_TAG``)."""
    tag = conf.get_str("EVENNIA_AI_MONEY_TAG")
    return bool(obj.tags.has(tag, category=MONEY_TAG_CATEGORY))


def tradeable(obj: Any) -> bool:
    """Whether ``obj`` can change hands as goods at all: not a character, an exit or money."""
    return not (is_character(obj) or obj.destination or is_money(obj))


def holder_ok(npc: Any, container: Any) -> str | None:
    """Why ``container`` does not hold stock for ``npc`` now, or None when it does (it is in
    its inventory or its room and lets it take from it)."""
    if container is None or not container.pk:
        return "it no longer exists"
    if container.location not in (npc, npc.location):
        return f"the {container.key} is neither carried by {npc.key} nor in its room"
    if not container.access(npc, "get_from", default=True):
        return f"the {container.key} does not let {npc.key} take from it"
    return None


def _open_to_all(lock: str) -> bool:
    """Whether a lock string lets anyone through (none set, ``all()`` or ``true()``)."""
    flat = lock.replace(" ", "")
    return not flat or "true()" in flat or "all()" in flat


def open_container_warning(container: Any, npc: Any = None) -> str | None:
    """A warning for staff when anyone could take ``container``'s stock without paying: take
    from it (its ``get_from`` lock), or pick it up whole (its ``get`` lock, unless ``npc``
    carries it); None when neither."""
    who = f"id({npc.dbref})" if npc is not None else "id(<the NPC's #dbref>)"
    if _open_to_all(container.locks.get("get_from")):
        return (
            f"The {container.key} ({container.dbref}) lets anyone take from it: lock it with "
            f"'lock {container.key} = get_from:{who}' or players can take the stock without "
            "paying."
        )
    carried = npc is not None and container.location == npc
    if not carried and _open_to_all(container.locks.get("get")):
        return (
            f"Anyone can pick up the {container.key} ({container.dbref}) with its stock: lock "
            f"it with 'lock {container.key} = get:false()'."
        )
    return None


def _containers(npc: Any, goods: Goods) -> list[Any]:
    """The containers ``goods`` names that hold stock for ``npc`` now."""
    found = []
    nearby = {
        obj.dbref: obj for obj in [*npc.contents, *(npc.location.contents if npc.location else [])]
    }
    for dbref in goods.containers:
        container = nearby.get(dbref)
        if container is not None and holder_ok(npc, container) is None:
            found.append(container)
    return found


def holdings(npc: Any, goods: Goods) -> list[Any]:
    """Every object that may be stock: ``npc``'s inventory and its containers' contents."""
    objs = list(npc.contents)
    for container in _containers(npc, goods):
        objs.extend(container.contents)
    return [obj for obj in objs if tradeable(obj)]


def stock(npc: Any, goods: Goods) -> list[StockLine]:
    """What ``npc`` has for sale: one line per price rule with units in stock, in the order of
    the rules, each line's objects oldest first."""
    if goods.closed:
        return []
    found: dict[str, list[Any]] = {}
    for obj in holdings(npc, goods):
        key = goods.key_of(item_view(obj))
        if key is not None and key in goods.prices and key not in goods.never:
            found.setdefault(key, []).append(obj)
    lines = []
    for key, rule in goods.prices.items():
        objs = sorted(found.get(key, []), key=lambda obj: obj.id)
        if objs:
            name = objs[0].key if key.startswith(("#", "proto:")) else key
            lines.append(StockLine(key, name, len(objs), rule, tuple(objs)))
    return lines


def give_refusal(npc: Any, obj: Any, receiver: Any) -> str | None:
    """Why ``npc`` may not give (or drop) ``obj``, or None when it may (for the ``give`` and
    ``drop`` tools). ``receiver``: who would get it (None for a drop)."""
    state = find_npc_state(npc)
    if state is None:
        return None
    goods = from_state(state.goods)
    if goods.closed:
        return "Your trade rules could not be read, so you give nothing away until staff fix them."
    view = item_view(obj)
    key = goods.key_of(view)
    if key is not None and key in goods.never:
        return f"You never part with your {obj.key}."
    if goods.gifts or (key is not None and key in goods.free):
        return None
    in_container = obj.location in _containers(npc, goods)
    if is_money(obj) and goods != Goods():  # an NPC that is no shop gives as before
        return "That is money: pay with a trade; you cannot give money away."
    if goods.is_stock(view) or in_container:
        rule = goods.prices.get(key or "")
        if rule is None and key in goods.buys:
            return f"You bought the {obj.key} for your trade: you cannot give stock away."
        price = f" ({coins(rule.price)})" if rule else ""
        return (
            f"The {obj.key} is for sale{price}: players buy it with the buy command; you cannot "
            "give stock away."
        )
    return None


def is_free_gift(npc: Any, obj: Any) -> bool:
    """Whether ``npc`` giving ``obj`` is a free gift of its goods, which :func:`give_free`
    records in the ledger: an item its rules give freely (``free``), or any stock with
    ``gifts on``. False for an NPC that is no shop, or whose rules cannot be read."""
    state = find_npc_state(npc)
    if state is None:
        return False
    goods = from_state(state.goods)
    if goods.closed or goods == Goods():
        return False
    view = item_view(obj)
    key = goods.key_of(view)
    if key is not None and key in goods.free:
        return True
    return goods.gifts and (goods.is_stock(view) or obj.location in _containers(npc, goods))


# -- writes: the ledger, free gifts and restocks (each all or nothing) ------------------------------
def ready_ledger(npc: Any, state: NPCState) -> None:
    """Make sure ``npc``'s ledger Attribute exists, outside any transaction (one created inside
    a block that rolls back would stay in its handler's cache with no row)."""
    if not npc.attributes.has(LEDGER, category=STATE_CATEGORY):
        state.set(LEDGER, state.ledger)
        attribute_writes.flush()


def write_entry(
    npc: Any,
    state: NPCState,
    touched: Touched,
    entry: JSONObject,
    also: Callable[[JSONObject], JSONObject] | None = None,
) -> JSONObject:
    """Record ``entry`` in ``npc``'s ledger, inside an all-or-nothing block (the row is in its
    transaction, noted in ``touched``); ``also`` changes the ledger further (a restock's time).
    Returns the entry, with its id and times."""
    entry = {"id": ledger.new_id(), "at": iso_utc(), **entry}
    attr = npc.attributes.get(LEDGER, category=STATE_CATEGORY, return_obj=True)
    if attr is not None:
        touched.attributes.append(attr)
    size, day = conf.get_int("EVENNIA_AI_LEDGER_SIZE"), today()

    def change(kept: JSONObject) -> JSONObject:
        new = ledger.record(kept, entry, size, day)
        return also(new) if also else new

    state.update(LEDGER, change)
    return entry


def give_free(npc: Any, obj: Any, receiver: Any) -> str | None:
    """Give ``obj`` (an item its rules give freely, or any when ``gifts on``) to ``receiver``:
    the move and the ledger's ``gift`` entry together or not at all. Returns why not, in
    words, or None when it was given."""
    refusal = give_refusal(npc, obj, receiver)
    state = find_npc_state(npc)
    if refusal or state is None:
        return refusal or f"{npc.key} keeps no ledger."
    if ledger.blocked(state.ledger):
        return (
            "Your trade records could not be read, so you give nothing away until staff fix them."
        )
    ready_ledger(npc, state)
    touched = Touched(moved=[obj], holders={obj.location, receiver})
    entry: JSONObject = {
        "kind": "gift",
        "item": obj.key,
        "name": obj.key,
        "objects": [obj.dbref],
        "quantity": 1,
        "unit": 0,
        "total": 0,
        "partner": receiver.key,
        "partner_id": receiver.dbref,
        "via": "tool",
        "approval": None,
    }
    try:
        with all_or_nothing(touched):
            if not obj.move_to(receiver, quiet=True, move_type="give"):
                raise _Undone(f"The {obj.key} would not move to {receiver.key}.")
            write_entry(npc, state, touched, entry)
    except _Undone as err:
        return str(err)
    except Exception:
        logger.log_trace(f"{log_prefix(npc)}: a gift failed and was rolled back")
        return f"Giving the {obj.key} failed and was undone; nothing changed hands."
    return None


class _Undone(Exception):
    """A write refused inside an all-or-nothing block; the message says why."""


def restock_due(goods: Goods, kept: JSONObject, now: GameTime) -> tuple[str, ...]:
    """The restock rules whose interval has passed at ``now`` (or that never ran, or ran at a
    game time after ``now``: a clock set back does not stop restocking). None when the goods
    or the ledger cannot be read (fail closed)."""
    if goods.closed or ledger.blocked(kept):
        return ()
    due = []
    for key, rule in goods.restock.items():
        last = ledger.restocked_at(kept, key)
        passed = None if last is None else now.seconds - last
        if passed is None or passed < 0 or passed >= rule.every_hours * now.calendar.hour:
            due.append(key)
    return tuple(due)


@dataclass(frozen=True)
class Restocked:
    """What restocking did for one rule.

    Attributes:
        key: The rule's key (``"proto:iron_nails"``).
        name: The name of what it makes (the first made object's key, else the key).
        made: Objects spawned.
        have: In stock now (after the spawn).
        keep: What the rule keeps.
        problem: Why nothing was made when spawning failed (rolled back), else "".
    """

    key: str
    name: str
    made: int
    have: int
    keep: int
    problem: str = ""

    def words(self) -> str:
        """In words for staff: "3 iron nail made (proto:iron_nails, 3 of 3 kept)"."""
        if self.problem:
            return f"{self.key}: nothing made, {self.problem}"
        if not self.made:
            return f"{self.key}: none needed ({self.have} of {self.keep} kept)"
        return f"{self.made} {self.name} made ({self.key}, {self.have} of {self.keep} kept)"


def _have(npc: Any, goods: Goods, key: str) -> int:
    return sum(1 for obj in holdings(npc, goods) if goods.key_of(item_view(obj)) == key)


def restock(
    npc: Any, goods: Goods, keys: tuple[str, ...], now: GameTime, most: int | None = None
) -> list[Restocked]:
    """Spawn the items that ``keys``' rules are short of into ``npc``'s inventory, each rule's
    spawn and its ledger entry in one all-or-nothing block (a crash cannot spawn twice).

    A rule is marked as run at ``now`` when its stock is full (already, or by this spawn), so
    it is due again ``every`` game hours later; the rules found full are marked in one write
    of the ledger. ``most`` bounds the objects spawned in all: a rule cut short by it is not
    marked and goes on at the next call. A spawn whose objects would not move to the NPC, or
    do not count toward its stock (:func:`holdings` leaves them out), is undone and its rule
    marked as run (a problem, not a loop that spawns at every tick). Nothing is done when the
    goods or the ledger cannot be read.

    Returns:
        What was done for each rule looked at, in the order of ``keys``.
    """
    state = find_npc_state(npc)
    if state is None or goods.closed or ledger.blocked(state.ledger):
        return []
    done: list[Restocked] = []
    marked: list[str] = []  # rules found full, or whose spawn cannot count: one write below
    left = most
    for key in keys:
        rule = goods.restock.get(key)
        if rule is None:
            continue
        have = _have(npc, goods, key)
        missing = rule.keep - have
        if missing <= 0:
            marked.append(key)  # full: checked again later
            done.append(Restocked(key, key, 0, have, rule.keep))
            continue
        if left is not None and left <= 0:
            break
        count = missing if left is None else min(missing, left)
        result, uncounted = _restock_one(
            npc, state, goods, key, rule.prototype, count, have, now, full=count == missing
        )
        if uncounted:
            marked.append(key)
        done.append(replace(result, have=have + result.made, keep=rule.keep))
        if left is not None:
            left -= count
    if marked:
        state.update(LEDGER, _marking(tuple(marked), now.seconds))
    return done


def _marking(keys: tuple[str, ...], seconds: float) -> Callable[[JSONObject], JSONObject]:
    """A change of the ledger that marks the restock rules ``keys`` as run at ``seconds``."""

    def change(kept: JSONObject) -> JSONObject:
        for key in keys:
            kept = ledger.mark_restocked(kept, key, seconds)
        return kept

    return change


def _restock_one(
    npc: Any,
    state: NPCState,
    goods: Goods,
    key: str,
    prototype: str,
    count: int,
    have: int,
    now: GameTime,
    full: bool,
) -> tuple[Restocked, bool]:
    """Spawn ``count`` items of ``prototype`` into ``npc`` and write the ledger's entry,
    together (marking the rule as run when ``full``). ``have``: the stock of ``key`` before.

    Returns:
        What was done, and whether the spawn was undone because its objects would not move
        to the NPC or do not count toward its stock (the rule is to be marked as run).
    """
    ready_ledger(npc, state)
    touched = Touched(holders={npc})

    def marked(kept: JSONObject) -> JSONObject:
        return ledger.mark_restocked(kept, key, now.seconds) if full else kept

    try:
        with all_or_nothing(touched):
            made = spawner.spawn(*[prototype] * count)
            touched.created.extend(made)
            for obj in made:
                if not obj.move_to(npc, quiet=True, move_type="restock"):
                    raise _Undone(f"a spawned {obj.key} would not move to {npc.key}")
            if _have(npc, goods, key) < have + len(made):
                raise _Undone(
                    f"what {prototype} spawns does not count as {npc.key}'s stock (not carried "
                    "by it, or a character, an exit or money)"
                )
            entry: JSONObject = {
                "kind": "restock",
                "item": key,
                "name": made[0].key if made else key,
                "objects": [obj.dbref for obj in made],
                "quantity": len(made),
                "unit": 0,
                "total": 0,
                "game": f"day {now.day}",
                "via": "restock",
            }
            write_entry(npc, state, touched, entry, marked)
    except _Undone as err:
        logger.log_err(f"{log_prefix(npc)}: restocking {key} was undone: {err}")
        return Restocked(key, key, 0, 0, 0, f"it was undone: {err}"), True
    except Exception as err:
        logger.log_trace(f"{log_prefix(npc)}: restocking {key} failed and was rolled back")
        return Restocked(key, key, 0, 0, 0, f"it failed and was undone ({err})"), False
    return Restocked(key, str(entry["name"]), len(made), 0, 0), False


def next_restock(goods: Goods, kept: JSONObject, now: GameTime) -> float | None:
    """The game second at which the first of ``goods``' restock rules is due (``now`` when
    one is due now, infinity with no rule), or None when the goods or the ledger cannot be
    read. With :func:`restock_due`'s reading of the ledger."""
    if goods.closed or ledger.blocked(kept):
        return None
    first = math.inf
    for key, rule in goods.restock.items():
        last = ledger.restocked_at(kept, key)
        if last is None or last > now.seconds:
            return now.seconds
        first = min(first, last + rule.every_hours * now.calendar.hour)
    return max(first, now.seconds)

"""What staff change in an AI NPC's place in the world, checked once and written once: its
routine (where it is in each slot of the game day) and its goods (what it sells and buys, at what
prices, and the rules of its trade); and the ledger of its trades, for staff to read.

The admin commands ``airoutine`` and ``aigoods`` and the dashboard call these same functions,
as they call :mod:`evennia_ai.npc.controls` (whose :class:`~evennia_ai.npc.controls.ControlError`
carries a refusal in words). Each change is one write of the state it changes; a refusal writes
nothing. Setting a routine or goods is ``OPERATE`` (:mod:`evennia_ai.access`), the caller's
business.
"""

from __future__ import annotations

from dataclasses import replace

from evennia.objects.models import ObjectDB

from evennia_ai import conf
from evennia_ai.engine import routines
from evennia_ai.npc.controls import ControlError
from evennia_ai.npc_state import GOODS, ROUTINE, JSONObject, npc_state
from evennia_ai.utils import iso_utc, truncate
from evennia_ai.world import clock, ledger, trade
from evennia_ai.world.goods import Goods, from_state, goods_lines, parse_goods, rule_key, to_state
from evennia_ai.world.routine import Routine, Slot
from evennia_ai.world.stock import holder_ok, open_container_warning, restock


# -- routine --------------------------------------------------------------------------------------
def routine_of(npc) -> Routine:
    """The routine ``npc`` keeps as stored (no slots without one)."""
    return routines.routine_of(npc)


def slot_text(slot: Slot) -> str:
    """One slot in the text form staff write (``05:00-11:00 Bakery: baking bread [trade]``)."""
    doing = f": {slot.doing}" if slot.doing else ""
    flags = " [trade]" if slot.trade else " [sleep]" if slot.sleep else ""
    return f"{slot.key()} {slot.room_key or slot.room}{doing}{flags}"


def routine_text(npc) -> str:
    """The routine of ``npc`` as staff write it, one slot per line ("" without one)."""
    return "\n".join(slot_text(slot) for slot in routine_of(npc).slots)


def set_routine(npc, text: str, by: str = "") -> str:
    """Set ``npc``'s routine from its text form (one slot per line, or ``;`` between slots).

    Every problem is named (times, overlaps, rooms, whether the NPC can walk between them,
    :func:`evennia_ai.engine.routines.check`) and nothing is written on any; else the routine
    is written once, with who set it (``by``) and when.

    Raises:
        ControlError: no text, or the problems, one per line.
    """
    text = str(text or "").strip()
    if not text:
        raise ControlError(
            "Missing the routine: slots like '05:00-11:00 Bakery: baking bread [trade]', "
            "';' between them (to remove it: airoutine/clear)."
        )
    checked = routines.check(npc, text)
    if checked.problems or checked.routine is None:
        listed = "\n".join(f"- {problem}" for problem in checked.problems)
        raise ControlError(f"{npc.key}'s routine is not changed:\n{listed}")
    value: JSONObject = {**checked.routine.to_state(), "set_by": str(by), "set_at": iso_utc()}
    npc.ai.set(ROUTINE, value)
    routines.status(npc).replan()
    count = len(checked.routine.slots)
    return f"{npc.key}'s routine is set: {count} slot{'s' if count != 1 else ''}. " + now_and_next(
        npc
    )


def clear_routine(npc, by: str = "") -> str:
    """Remove ``npc``'s routine: it stays where it is (and a shop is always open).

    Raises:
        ControlError: it has none.
    """
    if not routine_of(npc).slots:
        raise ControlError(f"{npc.key} has no routine.")
    npc.ai.set(ROUTINE, {"slots": [], "set_by": str(by), "set_at": iso_utc()})
    routines.status(npc).replan()
    return f"{npc.key}'s routine is removed: it stays where it is, and trades at any time."


def check_routine(npc) -> str:
    """Check again that ``npc`` can walk its routine (locks change); the next tick plans afresh.

    Raises:
        ControlError: it has no routine.
    """
    routine = routine_of(npc)
    if not routine.slots:
        raise ControlError(f"{npc.key} has no routine.")
    routines.status(npc).replan()
    problems = list(routine.dropped) + routines.reachability_problems(npc, routine)
    if problems:
        listed = "\n".join(f"- {problem}" for problem in problems)
        return f"{npc.key} cannot keep its routine:\n{listed}"
    return f"{npc.key} can reach every room of its routine, from each slot to the next."


def now_and_next(npc) -> str:
    """The game time, and ``npc``'s slot now and next, in one sentence."""
    routine = routine_of(npc)
    now = clock.game_now()
    slot, following = routine.now(now.minute), routine.next(now.minute)
    here = f"now {slot.key()} at {slot.where()}" if slot else "now free time"
    there = f"; next {following.key()} at {following.where()}" if following else ""
    return f"Game time {now.clock()} ({now.part_of_day()}): {here}{there}."


def routine_state(npc, brief: bool = False) -> str | None:
    """What ``npc``'s routine is doing in a few words ("walking: to Market Square (#5), 2
    exits"; ``brief``: the state alone, "walking"), None when it keeps none. A routine that
    cannot be read says so: the NPC walks nowhere and its shop is closed."""
    routine = routine_of(npc)
    if routine.unreadable:
        if brief:
            return "unreadable"
        return f"{routines.UNREADABLE_STATUS} ({'; '.join(routine.dropped)})"
    if not routine.slots:
        return None
    if not conf.get_bool("EVENNIA_AI_ROUTINES"):
        return "off" if brief else "not followed (EVENNIA_AI_ROUTINES is off)"
    known = routines.status(npc)
    if known.state == "off" and not known.why:
        return "not started" if brief else "not started (it plans at its next tick)"
    return known.state if brief else known.words()


# -- goods ----------------------------------------------------------------------------------------
def goods_of(npc) -> Goods:
    """``npc``'s goods as stored (``Goods(closed=True)`` when they cannot be read)."""
    return from_state(npc.ai.goods)


def is_shop(npc) -> bool:
    """Whether ``npc`` has goods set (rules that cannot be read count: a closed shop)."""
    return goods_of(npc) != Goods()


def shop_hours(npc) -> tuple[bool, str]:
    """Whether ``npc``'s routine keeps it open for trade now, and why not, in words for
    anyone ("having a drink until 20:00; trading again from 05:00")."""
    closed = trade.closed_now(npc_state(npc).routine)
    return (True, "") if closed is None else (False, closed)


def container_notes(npc, goods: Goods) -> list[str]:
    """Warnings for staff about ``goods``' containers: missing, out of reach, open to anyone."""
    notes = []
    for dbref in goods.containers:
        container = ObjectDB.objects.get_id(dbref)
        if container is None:
            notes.append(f"No object is {dbref}: its contents count as stock once it exists.")
            continue
        warning = open_container_warning(container, npc)
        if warning:
            notes.append(warning)
        problem = holder_ok(npc, container)
        if problem:
            notes.append(f"{container.key} ({dbref}) holds no stock now: {problem}.")
    return notes


def _store_goods(npc, goods: Goods, lines: list[str] | None = None) -> str:
    """Write ``goods`` once, and say what they are now (with warnings about containers)."""
    npc.ai.set(GOODS, to_state(goods, lines) if goods != Goods() else {})
    routines.forget_restock_plan(npc)  # new rules: the next tick looks at what is due
    rules = len(goods_lines(goods))
    text = f"{npc.key} has {rules} trade rule{'s' if rules != 1 else ''}."
    if not rules:
        text = f"{npc.key} has no trade rules now: it is no shop."
    notes = container_notes(npc, goods)
    return text + "".join(f"\nWarning: {note}" for note in notes)


def _parsed(text: str) -> Goods:
    """The goods ``text`` sets (its lines, or rules between ``;``); ControlError listing every
    bad line, so nothing is stored."""
    goods, problems = parse_goods(text.replace(";", "\n"))
    if problems:
        listed = "\n".join(f"- {problem}" for problem in problems)
        raise ControlError(f"The trade rules are not changed:\n{listed}")
    return goods


def set_goods(npc, text: str) -> str:
    """Replace all of ``npc``'s trade rules with ``text`` (one rule per line, or ``;`` between
    rules; empty: none, no shop). All or nothing: one bad line and nothing changes.

    Raises:
        ControlError: every bad line, in words.
    """
    text = str(text or "")
    goods = _parsed(text)
    lines = [" ".join(line.split()) for line in text.replace(";", "\n").splitlines()]
    return _store_goods(npc, goods, [line for line in lines if line])


def _rule_names(line: str) -> str:
    """The kind of rule ``line`` is, as it replaces one before it: ``sell``, ``limit sold``..."""
    words = line.lower().split()
    return " ".join(words[:2]) if words and words[0] == "limit" else words[0] if words else ""


def add_goods_rule(npc, line: str) -> str:
    """Add one rule to ``npc``'s goods, replacing the rule of the same kind for the same item
    (or the same limit, approval value or gifts).

    Raises:
        ControlError: the line is no rule, clashes with another (never sold and priced), or
            the stored rules cannot be read (replace them whole with :func:`set_goods`).
    """
    line = " ".join(str(line or "").split())
    if not line:
        raise ControlError("Missing the rule (sell, buy, never, free, restock, container, ...).")
    if ";" in line:
        raise ControlError("One rule at a time (aigoods/set replaces all the rules at once).")
    new = _parsed(line)
    current = goods_of(npc)
    if current.closed:
        raise ControlError(
            f"{npc.key}'s trade rules could not be read, so its shop is closed: replace them "
            "whole with aigoods/set."
        )
    kind = _rule_names(line)
    merged = Goods(
        prices={**current.prices, **new.prices},
        buys={**current.buys, **new.buys},
        never=current.never | new.never,
        free=current.free | new.free,
        gifts=new.gifts if kind == "gifts" else current.gifts,
        containers=tuple(dict.fromkeys(current.containers + new.containers)),
        restock={**current.restock, **new.restock},
        sold_per_day=new.sold_per_day if kind == "limit sold" else current.sold_per_day,
        paid_per_day=new.paid_per_day if kind == "limit paid" else current.paid_per_day,
        approval_above=new.approval_above if kind == "approve" else current.approval_above,
    )
    goods, problems = parse_goods("\n".join(goods_lines(merged)))
    if problems:
        raise ControlError(
            f"The trade rules are not changed: {'; '.join(problems)} (aigoods/remove the "
            "item's other rules first)."
        )
    return _store_goods(npc, goods)


#: Rules that name no item, as ``remove_goods`` takes them.
_NAMED_RULES = ("limit sold", "limit paid", "approve", "gifts")


def remove_goods(npc, key: str) -> str:
    """Remove every rule of the item ``key`` (a name, ``#dbref`` or ``proto:KEY``; also a
    container's ``#dbref``, or ``limit sold``, ``limit paid``, ``approve``, ``gifts``).

    Raises:
        ControlError: the stored rules cannot be read, or no rule names it.
    """
    current = goods_of(npc)
    if current.closed:
        raise ControlError(
            f"{npc.key}'s trade rules could not be read: replace them whole with aigoods/set."
        )
    typed = " ".join(str(key or "").split()).lower()
    if typed in _NAMED_RULES:
        goods = replace(
            current,
            sold_per_day=None if typed == "limit sold" else current.sold_per_day,
            paid_per_day=None if typed == "limit paid" else current.paid_per_day,
            approval_above=None if typed == "approve" else current.approval_above,
            gifts=False if typed == "gifts" else current.gifts,
        )
    else:
        try:
            item = rule_key(typed)
        except ValueError as err:
            raise ControlError(f"Name the item to remove: {err}.") from None
        goods = Goods(
            prices={k: r for k, r in current.prices.items() if k != item},
            buys={k: r for k, r in current.buys.items() if k != item},
            never=current.never - {item},
            free=current.free - {item},
            gifts=current.gifts,
            containers=tuple(c for c in current.containers if c != item),
            restock={k: r for k, r in current.restock.items() if k != item},
            sold_per_day=current.sold_per_day,
            paid_per_day=current.paid_per_day,
            approval_above=current.approval_above,
        )
    if goods == current:
        raise ControlError(
            f"{npc.key} has no rule of '{truncate(typed, 60)}'. Its rules: "
            + ("; ".join(goods_lines(current)) or "none")
            + "."
        )
    return _store_goods(npc, goods)


def ledger_rows(npc, last: int = 20) -> list[JSONObject]:
    """``npc``'s ``last`` latest trades, newest first (1 to ``EVENNIA_AI_LEDGER_SIZE``).

    Raises:
        ControlError: ``last`` out of those bounds.
    """
    most = conf.get_int("EVENNIA_AI_LEDGER_SIZE")
    if isinstance(last, bool) or not isinstance(last, int) or not 1 <= last <= most:
        raise ControlError(f"How many trades? A number from 1 to {most}.")
    return ledger.rows(npc.ai.ledger, last)


#: Objects ``aigoods/restock`` spawns in one call at most (a rule keeping thousands would
#: otherwise hold the server for as long as it takes).
RESTOCK_NOW_MOST = 100


def restock_now(npc, item: str = "") -> str:
    """Restock ``npc`` now, whatever the time of its restock rules: each rule (or the rule of
    ``item``, a ``proto:KEY``) tops its stock up to what it keeps, and says what was made.

    Raises:
        ControlError: its rules or ledger cannot be read, it has no restock rule (of
            ``item``), or the game clock cannot be read.
    """
    goods = goods_of(npc)
    if goods.closed:
        raise ControlError(
            f"{npc.key}'s trade rules could not be read, so nothing is restocked: replace them "
            "whole with aigoods/set."
        )
    if ledger.blocked(npc.ai.ledger):
        raise ControlError(
            f"{npc.key}'s trade records could not be read, so nothing is restocked until staff "
            "fix them."
        )
    rules = "; ".join(f"restock {key}" for key in goods.restock) or "none"
    if not goods.restock:
        raise ControlError(
            f"{npc.key} has no restock rule. Add one: aigoods {npc.key} = restock proto:<KEY> "
            "keep <n> every <hours>h."
        )
    keys = tuple(goods.restock)
    if str(item or "").strip():
        try:
            key = rule_key(str(item))
        except ValueError as err:
            raise ControlError(f"Name the item to restock: {err}.") from None
        if key not in goods.restock:
            raise ControlError(
                f"{npc.key} has no restock rule of '{truncate(key, 60)}'. Its rules: {rules}."
            )
        keys = (key,)
    try:
        now = clock.game_now()
    except Exception as err:  # the game's own clock: nothing to restock by
        raise ControlError(f"The game clock cannot be read ({err}); nothing is restocked.") from err
    done = restock(npc, goods, keys, now, most=RESTOCK_NOW_MOST)
    routines.forget_restock_plan(npc)
    lines = [f"- {line.words()}" for line in done]
    short = [
        f"{line.key} ({line.keep - line.have} missing)"
        for line in done
        if not line.problem and line.have < line.keep
    ]
    short += [f"{key} (not reached)" for key in keys[len(done) :]]
    if short:
        lines.append(
            f"At most {RESTOCK_NOW_MOST} objects are made at once; still short: "
            f"{', '.join(short)}. Run aigoods/restock {npc.key} again, or let its ticks make them."
        )
    return f"{npc.key} restocked:\n" + "\n".join(lines)

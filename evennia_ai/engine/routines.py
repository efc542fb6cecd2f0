"""Keeping an NPC's routine: where it should be now, the walk there, and sleep in its slots.

The routine (state key ``routine``, :class:`~evennia_ai.world.routine.Routine`) is read against
the game clock (:func:`~evennia_ai.world.clock.game_now`) by the agenda at every interval tick
(:class:`~evennia_ai.engine.agenda.Agenda`). No Script of its own, no model call:

- :func:`current` is the routine and the time now, or None when the NPC keeps no routine (the
  setting ``EVENNIA_AI_ROUTINES`` off, no slots, or a calendar that cannot split a day,
  :func:`~evennia_ai.world.clock.routine_calendar`) or its routine cannot be read (it walks
  nowhere, and ``aistatus`` says why; its shop is closed). For an NPC without one it costs one
  cached Attribute read. It is the agenda's one call here at every tick, so it first does the
  tick's restocking (:func:`restock_tick`), which needs no routine.
- :func:`restock_tick` spawns what a shop's restock rules say is due (no model call, at most
  :data:`RESTOCK_PER_TICK` objects a tick, nothing while its goods or ledger cannot be read).
- :func:`sleep_due` is the sleep slot the NPC sleeps in now (it stands in the slot's room and
  was not woken in this slot today); :func:`sleep_mark` names a slot's night, which a routine
  sleep keeps so that it wakes when the slot ends.
- :func:`work` decides what the routine asks of this tick: ``stay`` (free time, in place, or
  the slot's room cannot be reached), ``wait`` (a conversation holds it, at most
  ``EVENNIA_AI_ROUTINE_MAX_DELAY`` seconds), or ``walk`` (the next exit of its route).
- :func:`act` takes one exit of the route per tick (:func:`~evennia_ai.world.paths.traverse`,
  the exit's own lock and hooks): a walk players can watch. The NPC is never moved any other
  way, and never through an exit of another room than its own.

What the routine is doing is kept in process memory (:class:`RoutineStatus`, the NPC's
``ndb.ai_routine``): :func:`status` gives it to ``aistatus``, ``airoutine`` and the dashboard.
A reload forgets it; the next tick plans again. :func:`check` validates a routine's text form
for the staff controls, rooms and reachability included, every problem in words.

An autonomous tick may still ``move`` the NPC elsewhere: its routine walks it back at the next
idle tick.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from typing import Any

from evennia.utils import logger

from evennia_ai import conf
from evennia_ai.engine import floor
from evennia_ai.memory import events as ev
from evennia_ai.npc_state import JSONObject, npc_state
from evennia_ai.utils import is_assistant, log_prefix
from evennia_ai.world import clock, paths, stock, trade
from evennia_ai.world.clock import Calendar, GameTime
from evennia_ai.world.goods import from_state
from evennia_ai.world.paths import Route
from evennia_ai.world.routine import (
    Routine,
    Slot,
    is_kept,
    open_for_trade,
    parse_routine,
    time_problems,
)

#: Real seconds between two searches for a route to a room that could not be reached (a door
#: unlocked later is found).
REPLAN_SECONDS = 60.0
#: Objects restocking spawns in one tick at most; a rule cut short goes on at the next ticks.
RESTOCK_PER_TICK = 10
#: Real seconds before a restock rule whose spawn failed (a prototype gone) is tried again.
RESTOCK_RETRY_SECONDS = 60.0
#: The states of :class:`RoutineStatus`.
STATES = ("in place", "walking", "waiting", "unreachable", "asleep", "free time", "off", "error")

# A calendar problem is logged once per process (and routines are off meanwhile).
_CALENDAR_LOGGED: set[str] = set()


@dataclass(frozen=True)
class RoutineWork:
    """What a routine asks of one tick.

    Attributes:
        action: ``"walk"`` (one exit), ``"wait"`` (a conversation holds it) or ``"stay"``.
        slot: The slot now (None in free time).
        note: What it does, for status and traces ("walking to Market Square (#5), 2 exits").
        exit_id: The exit a walk takes next (an exit of the NPC's room).
    """

    action: str
    slot: Slot | None
    note: str
    exit_id: int | None = None


@dataclass
class RoutineStatus:
    """What an NPC's routine is doing (``npc.ndb.ai_routine``; process memory).

    Attributes:
        slot: The slot now (``"11:00-15:00"``), None in free time or without a routine.
        state: One of :data:`STATES`.
        why: Why, in words ("talking with Alice", "the door to the Smithy is locked for him").
        since: When the state began (``time.time()``).
        route: The route being walked (the exits left), if any.
        reported: The slot's night (:func:`sleep_mark`) whose failure was logged: once per
            slot per game day.
        doing: What the NPC does in the slot now (staff's text; "" in free time).
        until: When the slot ends (``"15:00"``), None in free time.
        next_slot: The next slot's key and what it does there (``"15:00-20:00 having a
            drink"``), None without slots.
        now: The slot now (None in free time or without a routine).
        next: The next slot to start (None without a routine).
        open_for_trade: Whether it trades now, and why not (see
            :func:`~evennia_ai.world.routine.open_for_trade`).
        mark: The slot's night the status is of (:func:`sleep_mark`).
        due_since: When the NPC first had to leave for the slot's room (``time.time()``);
            a conversation delays it at most ``EVENNIA_AI_ROUTINE_MAX_DELAY`` from then.
        planned_at: When its route was last searched (``time.time()``).
        parsed: The stored routine last read and what it reads as (the read's cache).
    """

    slot: str | None = None
    state: str = "off"
    why: str = ""
    since: float = field(default_factory=time.time)
    route: Route | None = None
    reported: str | None = None
    doing: str = ""
    until: str | None = None
    next_slot: str | None = None
    now: Slot | None = None
    next: Slot | None = None
    open_for_trade: tuple[bool, str] = (True, "")
    mark: str | None = None
    due_since: float | None = None
    planned_at: float = 0.0
    parsed: tuple[Any, Routine] | None = field(default=None, repr=False)

    def set(self, state: str, why: str = "") -> None:
        """Move to ``state`` (the time it began kept while it stays the same)."""
        if state != self.state:
            self.since = time.time()
        self.state, self.why = state, why

    def replan(self) -> None:
        """Plan afresh at the next tick (a new routine, or locks that changed)."""
        self.route, self.mark, self.planned_at = None, None, 0.0

    def words(self) -> str:
        """The status in a few words, as ``aistatus`` shows it ("walking to Market Square")."""
        return f"{self.state}: {self.why}" if self.why else self.state


def status(npc: Any) -> RoutineStatus:
    """What the routine of ``npc`` is doing now, for ``aistatus``, ``airoutine``, the
    dashboard and the requests' "now and next" lines.

    The slot now, what the NPC does in it, until when, the next slot and whether it trades
    are read from the routine and the clock at each call; the state (walking, waiting...)
    and its reason are the last tick's (``off`` before the first tick after a reload, and
    while routines are off or the NPC keeps none).

    Example:
        known = status(npc)
        if known.now: line = f"{known.doing} until {known.until}"  # "baking bread until 11:00"
        known.words()                                             # "walking: to Market ..."
    """
    known = _status(npc)
    day = _day(npc)
    if day is None:
        _describe(known, Routine(()), None, None)
        if not conf.get_bool("EVENNIA_AI_ROUTINES"):
            known.set("off", clock.ROUTINES_OFF)
        elif known.state != "off" or not is_kept(npc_state(npc).routine):
            known.set("off")  # no slots (a calendar's problem, or an unreadable routine, kept)
        closed = trade.closed_now(npc_state(npc).routine)  # an unreadable routine: closed
        known.open_for_trade = (closed is None, closed or "")
    else:
        routine, now = day
        _describe(known, routine, routine.now(now.minute), now)
    return known


def _status(npc: Any) -> RoutineStatus:
    """The status kept on ``npc`` (made on first use), as the last tick left it."""
    found = npc.ndb.ai_routine
    if not isinstance(found, RoutineStatus):
        found = RoutineStatus()
        npc.ndb.ai_routine = found
    return found


def routine_of(npc: Any, value: Any = None, cal: Calendar | None = None) -> Routine:
    """The routine of ``npc`` (its stored ``routine``, or ``value`` already read), parsed once
    per stored value; slots that cannot be read are dropped and logged once."""
    value = npc_state(npc).routine if value is None else value
    cal = cal or clock.usable_calendar()
    known = _status(npc)
    if known.parsed is not None and known.parsed[0] == value and known.parsed[1].calendar == cal:
        return known.parsed[1]
    routine = Routine.from_state(value if isinstance(value, dict) else {}, cal)
    for problem in routine.dropped:
        logger.log_warn(f"{log_prefix(npc)}: routine: {problem}")
    known.parsed = (value, routine)
    return routine


def current(npc: Any) -> tuple[Routine, GameTime] | None:
    """The routine ``npc`` keeps and the game time now, as the agenda reads them at each tick;
    None when it keeps none (``EVENNIA_AI_ROUTINES`` off, no slots, or a calendar that cannot
    split a day, logged) or its routine cannot be read (it walks nowhere; the status says why).

    The agenda calls this once a tick for every NPC, so the tick's restocking is done here
    first (:func:`restock_tick`: a shop's restock rules need no routine, and no model call).
    """
    restock_tick(npc)
    return _day(npc)


def _day(npc: Any) -> tuple[Routine, GameTime] | None:
    """:func:`current` without the restocking (what ``aistatus`` reads)."""
    cal, off = clock.routine_calendar()
    if cal is None and off == clock.ROUTINES_OFF:
        return None
    value = npc_state(npc).routine  # the one read for an NPC without a routine
    if not is_kept(value):
        return None
    if cal is None:  # a calendar that cannot split a day
        if off not in _CALENDAR_LOGGED:
            _CALENDAR_LOGGED.add(off)
            logger.log_err(f"{log_prefix()}: routines are off: {off}")
        _status(npc).set("off", off)
        return None
    routine = routine_of(npc, value, cal)
    if routine.unreadable:  # the strictest value: no walk, no sleep slot, a closed shop
        _status(npc).set("off", f"{UNREADABLE_STATUS} ({routine.dropped[0]})")
        return None
    if not routine.slots:
        return None
    return routine, clock.split(clock.source(), cal)


#: What the status says of a routine that cannot be read (``aistatus``).
UNREADABLE_STATUS = (
    "its routine cannot be read, so it walks nowhere and does not trade until staff set it again"
)


@dataclass(frozen=True)
class RestockPlan:
    """When an NPC's restocking next has something to do (its ``ndb.ai_restock``), so that a
    tick with nothing due costs a comparison, not a read of its goods and ledger.

    Planned again after a restock, when the goods change (they are compared with ``goods``),
    after ``aigoods/restock``, and at a reload.

    Attributes:
        goods: The stored goods it was planned for.
        due: Game seconds when the first restock rule is due (infinity: none).
        planned: Game seconds when it was planned (a clock set back plans again).
        retry: Real time (``time.time``) before which nothing is tried (after an error or a
            spawn that failed).
        error: The last error logged (an error logs once until it changes).
    """

    goods: JSONObject
    due: float = math.inf
    planned: float = -math.inf
    retry: float = 0.0
    error: str = ""

    @classmethod
    def until(cls, goods: JSONObject, retry: float, error: str = "") -> RestockPlan:
        """A plan that waits until real time ``retry``, then plans again."""
        return cls(goods, due=-math.inf, planned=math.inf, retry=retry, error=error)

    def waits(self, seconds: float, moment: float) -> bool:
        """Whether nothing is due at game ``seconds`` and real ``moment``."""
        return moment < self.retry or self.planned <= seconds < self.due


def restock_tick(npc: Any) -> list[stock.Restocked]:
    """Restock what ``npc``'s restock rules say is due now (:func:`~evennia_ai.world.stock.
    restock_due`), with no model call and at most :data:`RESTOCK_PER_TICK` objects; a rule
    whose spawn failed waits :data:`RESTOCK_RETRY_SECONDS` (``aigoods/restock`` tries at once).
    Nothing while its goods or its ledger cannot be read (fail closed). Never raises: an error
    is logged once (again when it changes) and restocking waits
    :data:`RESTOCK_RETRY_SECONDS`. Returns what was done.

    For an NPC without restock rules it costs one cached Attribute read; for a shop with
    nothing due, that read and a comparison with its :class:`RestockPlan`.
    """
    stored = npc_state(npc).goods
    if not (isinstance(stored, dict) and stored.get("restock")):
        return []
    plan: RestockPlan | None = npc.ndb.ai_restock
    moment = time.time()
    try:
        if plan is not None and plan.goods == stored and plan.waits(clock.source(), moment):
            return []
        goods = from_state(stored)
        now = clock.game_now()
        kept = npc_state(npc).ledger
        failed = {
            key: at
            for key, at in (npc.ndb.ai_restock_failed or {}).items()
            if moment - at < RESTOCK_RETRY_SECONDS
        }
        due = tuple(key for key in stock.restock_due(goods, kept, now) if key not in failed)
        done = stock.restock(npc, goods, due, now, most=RESTOCK_PER_TICK) if due else []
    except Exception as err:
        error = f"{type(err).__name__}: {err}"
        if plan is None or plan.error != error:
            logger.log_trace(f"{log_prefix(npc)}: restocking failed (logged once)")
        npc.ndb.ai_restock = RestockPlan.until(stored, moment + RESTOCK_RETRY_SECONDS, error)
        return []
    for line in done:
        if line.problem:
            failed[line.key] = moment
        if line.made or line.problem:
            logger.log_info(f"{log_prefix(npc)}: restock: {line.words()}")
    npc.ndb.ai_restock_failed = failed or None
    if any(line.made for line in done) or (done and not failed):
        npc.ndb.ai_restock = None  # the ledger changed, maybe more to make: plan next tick
    elif failed:  # a failed rule is tried again a minute later
        retry = min(failed.values()) + RESTOCK_RETRY_SECONDS
        npc.ndb.ai_restock = RestockPlan.until(stored, retry)
    else:
        due_at = stock.next_restock(goods, kept, now)
        npc.ndb.ai_restock = (
            RestockPlan(stored, due=due_at, planned=now.seconds)
            if due_at is not None
            else RestockPlan.until(stored, moment + RESTOCK_RETRY_SECONDS)  # unreadable: look again
        )
    return done


def forget_restock_plan(npc: Any) -> None:
    """Make ``npc``'s next tick plan its restocking again (its goods or ledger changed)."""
    npc.ndb.ai_restock = None


def sleep_mark(slot: Slot, now: GameTime) -> str:
    """The night of ``slot`` at ``now``: the game day it began on and its key
    (``"12/20:00-05:00"``). A slot that runs past midnight keeps the day it began on, so it is
    one night throughout."""
    day = now.day - 1 if slot.start > slot.end and now.minute < slot.end else now.day
    return f"{day}/{slot.key()}"


def sleep_slot_mark(routine: Routine, now: GameTime) -> str | None:
    """:func:`sleep_mark` of the slot now when it is a sleep slot, else None."""
    slot = routine.now(now.minute)
    return sleep_mark(slot, now) if slot is not None and slot.sleep else None


def sleep_due(npc: Any, routine: Routine, now: GameTime, sleep: dict) -> Slot | None:
    """The sleep slot ``npc`` falls asleep in now: the slot now is a sleep slot, the NPC stands
    in its room, and it was not woken in it (``sleep["woken_in_slot"]``, the state ``sleep``)."""
    slot = routine.now(now.minute)
    if slot is None or not slot.sleep:
        return None
    location = npc.location
    if location is None or location.dbref != slot.room:
        return None
    if sleep.get("woken_in_slot") == sleep_mark(slot, now):
        return None
    known = _status(npc)
    _describe(known, routine, slot, now)
    known.set("asleep", slot.doing)
    return slot


def in_conversation(npc: Any) -> tuple[bool, str]:
    """Whether ``npc`` is in a conversation its routine waits for, and with whom: a player's
    line waits in its queue, or a player's line woke it less than
    ``EVENNIA_AI_ROUTINE_LINGER_SECONDS`` ago (its room's floor)."""
    for event in ev.pending_events(npc_state(npc).event_queue):
        if event.source and not (event.data or {}).get("from_assistant"):
            return True, f"answering {event.source_name or 'someone'}"
    room = npc.location
    here = floor.floor_of(room) if room is not None else None
    if here is None:
        return False, ""
    linger = conf.get_float("EVENNIA_AI_ROUTINE_LINGER_SECONDS")
    moment = time.monotonic()
    for speaker_id, (npc_id, at) in here.talked.items():
        if npc_id == npc.id and moment - at < linger:
            speaker = next((obj for obj in room.contents if obj.id == speaker_id), None)
            if speaker is not None and not is_assistant(speaker):
                return True, f"talking with {speaker.key}"
    return False, ""


def _describe(
    known: RoutineStatus, routine: Routine, slot: Slot | None, now: GameTime | None
) -> None:
    """Keep in ``known`` the slot now, what the NPC does in it and the next slot; a new slot
    (or night of it) starts afresh: no route, no delay, nothing reported."""
    mark = sleep_mark(slot, now) if slot is not None and now is not None else None
    if mark != known.mark:
        known.mark, known.route, known.due_since, known.planned_at = mark, None, None, 0.0
    known.now, known.slot = slot, slot.key() if slot else None
    known.doing = slot.doing if slot else ""
    known.until = slot.calendar.format(slot.end) if slot else None
    following = routine.next(now.minute) if now is not None else None
    known.next = following
    known.next_slot = f"{following.key()} {following.doing}".strip() if following else None
    known.open_for_trade = (
        open_for_trade(routine, now.minute, routine.calendar) if now is not None else (True, "")
    )


def work(npc: Any, routine: Routine, now: GameTime) -> RoutineWork:
    """What the routine asks of ``npc`` at ``now``: stay, wait for a conversation, or walk one
    exit on towards the slot's room (its route searched when missing or stale)."""
    known = _status(npc)
    slot = routine.now(now.minute)
    _describe(known, routine, slot, now)
    if slot is None:
        known.set("free time")
        return RoutineWork("stay", None, "free time")
    location = npc.location
    if location is not None and location.dbref == slot.room:
        known.due_since, known.route = None, None
        known.set("in place", slot.doing)
        return RoutineWork("stay", slot, f"in place: {slot.doing}")
    if known.due_since is None:
        known.due_since = time.time()
    talking, who = in_conversation(npc)
    if talking and time.time() - known.due_since < conf.get_float("EVENNIA_AI_ROUTINE_MAX_DELAY"):
        known.set("waiting", who)
        return RoutineWork("wait", slot, f"waiting: {who}")
    exit_id = _next_exit(npc, known, slot, location)
    if exit_id is None:
        return RoutineWork("stay", slot, known.words())
    left = len(known.route.exits) if known.route else 0
    note = f"to {slot.where()}, {left} exit{'s' if left != 1 else ''}"
    known.set("walking", note)
    return RoutineWork("walk", slot, f"walking {note}", exit_id=exit_id)


def _next_exit(npc: Any, known: RoutineStatus, slot: Slot, location: Any) -> int | None:
    """The exit of ``npc``'s room its route to ``slot``'s room takes next, the route searched
    when it has none or the NPC left it (at most once a minute while the room is unreachable);
    None when there is no way (the status says why)."""
    route = known.route
    if route is not None and route.exits and location is not None and _leads_to(route, slot):
        if any(exit_obj.id == route.exits[0] for exit_obj in location.exits):
            return route.exits[0]
    if known.state == "unreachable" and time.time() - known.planned_at < REPLAN_SECONDS:
        return None
    known.planned_at = time.time()
    goal = _room(slot.room)
    problem = ""
    if location is None:
        problem = "it is nowhere: it stands in no room"
    elif goal is None:
        problem = f"its room {slot.where()} is gone"
    else:
        route = paths.route(npc, location, goal)
        if route.found and route.exits:
            known.route = route
            return route.exits[0]
        problem = route.reason or "no way"
    known.route = None
    known.set("unreachable", f"cannot reach {slot.where()}: {problem}")
    if known.reported != known.mark:
        known.reported = known.mark
        where = paths.room_name(location) if location is not None else "nowhere"
        logger.log_warn(
            f"{log_prefix(npc)}: routine {slot.key()}: cannot reach {slot.where()} from "
            f"{where}: {problem}"
        )
    return None


def _leads_to(route: Route, slot: Slot) -> bool:
    """Whether ``route`` ends in ``slot``'s room (staff may have changed the slot's room)."""
    return bool(route.rooms) and f"#{route.rooms[-1]}" == slot.room


def _room(dbref: str) -> Any | None:
    """The room of ``dbref`` (``"#12"``), or None if it is gone or no room."""
    room, _problem = paths.find_room(dbref)
    return room


def act(npc: Any, todo: RoutineWork) -> None:
    """Do what :func:`work` chose: pass one exit (``walk``); nothing for the other actions.

    Never raises: an error is logged with its trace and the status becomes ``error``.
    """
    if todo.action != "walk" or todo.exit_id is None:
        return
    known = _status(npc)
    try:
        _step(npc, known, todo.exit_id)
    except Exception as err:
        logger.log_trace(f"{log_prefix(npc)}: routine: a step of the walk failed")
        known.route = None
        known.set("error", f"a step of the walk failed: {err}")


def _step(npc: Any, known: RoutineStatus, exit_id: int) -> None:
    """Pass the exit ``exit_id`` of ``npc``'s room: the route moves on one exit when the NPC
    moved, stays while it is on its way (a slow exit), and is dropped when a hook refused."""
    location = npc.location
    exit_obj = next((e for e in (location.exits if location else ()) if e.id == exit_id), None)
    if exit_obj is None:  # not an exit of its room (it was moved): never a teleport, re-plan
        known.route = None
        return
    done = paths.traverse(npc, exit_obj)
    route = known.route
    if done.moved:
        if route is not None and route.exits and route.exits[0] == exit_id:
            known.route = replace(route, exits=route.exits[1:], rooms=route.rooms[1:])
        return
    if not done.in_transit:  # a hook refused: searched again, at most once a minute
        known.route, known.planned_at = None, time.time()
        known.set("unreachable", f"the way {exit_obj.key} refused: {done.reason}")


@dataclass(frozen=True)
class RoutineCheck:
    """A routine's text checked for the staff controls.

    Attributes:
        routine: The routine, its rooms resolved (None when there are problems).
        problems: Every problem in words (empty when it can be set).
    """

    routine: Routine | None
    problems: tuple[str, ...]


def check(npc: Any, text: str) -> RoutineCheck:
    """Check the routine ``text`` for ``npc`` (the staff's form, one slot per line or ``;``
    between slots): its form and times (:func:`~evennia_ai.world.routine.parse_routine`,
    :func:`~evennia_ai.world.routine.time_problems`), its rooms
    (:func:`~evennia_ai.world.paths.find_room`) and whether ``npc`` can walk between them
    (:func:`reachability_problems`). Every problem is named, in words; nothing is written.

    Example:
        checked = check(bram, "05:00-11:00 Bakery: baking bread [trade]; 11:00-15:00 Smithy")
        if checked.problems: refuse("\\n".join(checked.problems))
        else: npc_state(bram).set(ROUTINE, {**checked.routine.to_state(), "set_by": ...})
    """
    cal = clock.calendar()
    problem = cal.problem()
    if problem:
        return RoutineCheck(None, (f"Routines are off in this game: {problem}",))
    written, problems = parse_routine(text)
    problems += time_problems(written, cal)
    slots: list[Slot] = []
    for item in written:
        room, missing = paths.find_room(item.room)
        if room is None:
            problems.append(f"{item.start}-{item.end}: {missing}")
            continue
        if not problems:
            start, end = cal.parse(item.start), cal.parse(item.end, end=True)
            slots.append(
                Slot(start, end, room.dbref, room.key, item.doing, item.trade, item.sleep, cal)
            )
    if problems:
        return RoutineCheck(None, tuple(problems))
    routine = Routine(tuple(sorted(slots, key=lambda slot: slot.start)), calendar=cal)
    problems = reachability_problems(npc, routine)
    return RoutineCheck(None if problems else routine, tuple(problems))


def reachability_problems(npc: Any, routine: Routine) -> list[str]:
    """Why ``npc`` could not keep ``routine``, in words: each slot's room must be reachable
    from the room of the slot before it (in time order, round the day), and the slot now's
    from where the NPC stands (``airoutine/check`` asks again when locks changed)."""
    rooms = [_room(slot.room) for slot in routine.slots]
    problems = [
        f"{slot.key()}: its room {slot.where()} is gone."
        for slot, room in zip(routine.slots, rooms)
        if room is None
    ]
    if problems:
        return problems
    pairs = list(zip(rooms[-1:] + rooms[:-1], rooms)) if len(rooms) > 1 else []
    now = routine.now(clock.split(clock.source(), routine.calendar).minute)
    if now is not None and npc.location is not None:
        pairs.append((npc.location, rooms[routine.slots.index(now)]))
    for start, goal in dict.fromkeys(pairs):
        found = paths.route(npc, start, goal)
        if not found.found:
            problems.append(paths.unreachable(npc, start, goal, found))
    return problems

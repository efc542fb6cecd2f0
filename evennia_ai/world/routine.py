"""An NPC's routine: its game day in slots, each a room, what it does there, and whether it is
open for trade or asleep.

The text form is the same in game (``airoutine``) and on the dashboard: one slot per line, or
``;`` between slots, ``[trade]`` and ``[sleep]`` as flags::

    05:00-11:00 Bakery: baking bread [trade]
    11:00-15:00 Market Square: selling bread at the stall [trade]
    15:00-20:00 #3: having a drink
    20:00-05:00 Bakery Loft: sleeping [sleep]

:func:`parse_routine` reads it and :func:`time_problems` checks its times (bad times, empty
slots, overlaps on the circle of the day, too many slots), every problem in words; rooms and
whether the NPC can walk between them need the database, and are checked with these by
:func:`evennia_ai.engine.routines.check`, which the staff controls call. The stored value
(state key ``routine``) is read with :meth:`Routine.from_state`, which never raises.

What the NPC does now and next, and whether it trades (the requests' "now and next" lines, a
shop's hours), are read from a routine and a minute of the game day::

    cal = clock.usable_calendar()
    routine = Routine.from_state(npc_state(npc).routine, cal)
    minute = clock.game_now().minute
    now, following = routine.now(minute), routine.next(minute)   # Slot or None
    is_open, why_not = open_for_trade(routine, minute, cal)

A gap between slots is free time: the NPC stays where it is, closed for trade.

A stored routine that cannot be read (a slot dropped, or the strictest value
``{"slots": [], "unreadable": true}`` standing for one set aside) is
:attr:`Routine.unreadable`: its NPC walks nowhere and its shop is closed (the strictest value,
never "no routine, open at all hours") until staff set it again.

Pure: no Django, Evennia or Twisted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from evennia_ai.npc_state import JSONObject, JSONValue
from evennia_ai.utils import clean_text, one_line
from evennia_ai.world.clock import Calendar

#: Most slots in one routine.
MAX_SLOTS = 12
#: Most characters of what an NPC does in a slot.
MAX_DOING = 120
#: The key of a stored routine that marks it unreadable (the strictest value of a routine set
#: aside: ``{"slots": [], "unreadable": true}``).
UNREADABLE = "unreadable"
#: Why a shop whose routine cannot be read does not trade, in words for anyone.
UNREADABLE_CLOSED = "its routine cannot be read, so it does not trade until staff set it again"

_SLOT_LINE = re.compile(r"^(?P<start>[^\s-]+)\s*-\s*(?P<end>\S+)\s+(?P<rest>.+)$")
_FLAG = re.compile(r"\[\s*([^\]]*?)\s*\]")
_FLAGS = ("trade", "sleep")
# Evennia's colour and style markup (|r, |[b, |500, |#ff0000, |=a ...); "||" is a bar.
_MARKUP = re.compile(r"\|(\[?(?:#[0-9a-fA-F]{6}|[0-5]{3}|=[a-z]|[a-zA-Z*^_/>-]))")


@dataclass(frozen=True)
class Slot:
    """One slot of a routine.

    Attributes:
        start: Minute of the day it starts (inclusive).
        end: Minute of the day it ends (exclusive); an end before the start wraps past midnight.
        room: The room's dbref (``"#12"``), resolved when the routine was set.
        room_key: The room's key when it was set (shown if the room is gone).
        doing: What the NPC does there (``"baking bread"``): staff's text, one line, at most
            120 characters, markup stripped.
        trade: Whether it is open for trade in this slot.
        sleep: Whether it sleeps here in this slot (never with ``trade``).
        calendar: The calendar its minutes are of (how its times are written).
    """

    start: int
    end: int
    room: str
    room_key: str
    doing: str
    trade: bool = False
    sleep: bool = False
    calendar: Calendar = field(default=Calendar(), compare=False, repr=False)

    def covers(self, minute: int) -> bool:
        """Whether ``minute``, a minute of the day, falls in this slot (wrapping included)."""
        if self.start < self.end:
            return self.start <= minute < self.end
        if self.start > self.end:
            return minute >= self.start or minute < self.end
        return False  # an empty slot (refused when a routine is set)

    def key(self) -> str:
        """The slot's identity in a day, ``"05:00-11:00"``."""
        return f"{self.calendar.format(self.start)}-{self.calendar.format(self.end)}"

    def where(self) -> str:
        """Its room as people read it: ``"Bakery (#12)"``, or the dbref alone without a key."""
        return f"{self.room_key} ({self.room})" if self.room_key else self.room

    def to_state(self) -> JSONObject:
        """The stored form of this slot."""
        return {
            "start": self.calendar.format(self.start),
            "end": self.calendar.format(self.end),
            "room": self.room,
            "room_key": self.room_key,
            "doing": self.doing,
            "trade": self.trade,
            "sleep": self.sleep,
        }


@dataclass(frozen=True)
class Routine:
    """An NPC's day: its slots, none overlapping.

    Attributes:
        slots: The slots, sorted by start.
        calendar: The calendar of their minutes.
        dropped: Why stored slots (or the whole stored value) could not be read (for a log
            line and ``aistatus``; see :meth:`from_state`). Any makes the routine
            :attr:`unreadable`.
    """

    slots: tuple[Slot, ...]
    calendar: Calendar = field(default=Calendar(), compare=False, repr=False)
    dropped: tuple[str, ...] = field(default=(), compare=False)

    @property
    def unreadable(self) -> bool:
        """Whether some of the stored routine could not be read: the NPC keeps none of it
        (no walk, no sleep slot) and does not trade."""
        return bool(self.dropped)

    def now(self, minute: int) -> Slot | None:
        """The slot covering ``minute``, or None in free time between slots."""
        return next((slot for slot in self.slots if slot.covers(minute)), None)

    def next(self, minute: int) -> Slot | None:
        """The next slot to start after ``minute`` (round the day), or None with no slots."""
        if not self.slots:
            return None
        day = self.calendar.minutes_per_day
        return min(self.slots, key=lambda slot: (slot.start - minute - 1) % day)

    def next_trade(self, minute: int) -> Slot | None:
        """The next slot open for trade to start after ``minute`` (round the day), if any."""
        day = self.calendar.minutes_per_day
        trading = [slot for slot in self.slots if slot.trade]
        return min(trading, key=lambda s: (s.start - minute - 1) % day) if trading else None

    @classmethod
    def from_state(cls, value: JSONObject, cal: Calendar) -> Routine:
        """The routine stored as ``value`` (the state key ``routine``).

        Never raises: a slot that cannot be read is dropped, and why is kept in
        :attr:`dropped` for the caller to log once (this module does no logging); the
        routine is then :attr:`unreadable`, as it is for a value that is no routine at all or
        carries the :data:`UNREADABLE` mark.
        """
        if not isinstance(value, dict) or value.get(UNREADABLE):
            return cls((), calendar=cal, dropped=("the stored routine cannot be read",))
        stored = value.get("slots")
        slots: list[Slot] = []
        dropped: list[str] = []
        if stored is not None and not isinstance(stored, list):
            dropped.append("its slots are not a list")
        for number, item in enumerate(stored if isinstance(stored, list) else [], start=1):
            slot, problem = _stored_slot(item, cal)
            if slot is None:
                dropped.append(f"slot {number} dropped: {problem}")
            else:
                slots.append(slot)
        slots.sort(key=lambda slot: slot.start)
        return cls(tuple(slots), calendar=cal, dropped=tuple(dropped))

    def to_state(self) -> JSONObject:
        """The stored form: ``{"slots": [{"start": "05:00", "end": "11:00", "room": "#12",
        "room_key": "Bakery", "doing": "baking bread", "trade": true, "sleep": false}]}``."""
        slots: list[JSONValue] = [slot.to_state() for slot in self.slots]
        return {"slots": slots}


def _stored_slot(item: object, cal: Calendar) -> tuple[Slot | None, str]:
    """One stored slot read, or None and why not."""
    if not isinstance(item, dict):
        return None, "not an object"
    room = item.get("room")
    if not isinstance(room, str) or not room.strip():
        return None, "it names no room"
    try:
        start = cal.parse(str(item.get("start", "")))
        end = cal.parse(str(item.get("end", "")), end=True)
    except ValueError as err:
        return None, str(err)
    if start == end:
        return None, "it is empty"
    sleep = item.get("sleep") is True
    return (
        Slot(
            start=start,
            end=end,
            room=room.strip(),
            room_key=str(item.get("room_key") or ""),
            doing=clean_doing(str(item.get("doing") or ""))[:MAX_DOING],
            trade=item.get("trade") is True and not sleep,
            sleep=sleep,
            calendar=cal,
        ),
        "",
    )


@dataclass(frozen=True)
class SlotText:
    """One slot as written, before its room is resolved.

    Attributes:
        start: Its start as written (``"05:00"``).
        end: Its end as written.
        room: The room as written: a key or a ``#dbref``.
        doing: What the NPC does there.
        trade: Whether ``[trade]`` was given.
        sleep: Whether ``[sleep]`` was given.
    """

    start: str
    end: str
    room: str
    doing: str
    trade: bool
    sleep: bool

    def label(self) -> str:
        """How a problem names it: ``"05:00-11:00 (Bakery)"``."""
        return f"{self.start}-{self.end} ({self.room})"


def clean_doing(text: str) -> str:
    """What an NPC does, as staff wrote it: on one line, Evennia's markup and control
    characters stripped (not cut: :func:`parse_routine` refuses a text too long)."""
    plain = _MARKUP.sub("", clean_text(text).replace("||", "\x00")).replace("\x00", "|")
    return " ".join(plain.split())


def parse_routine(text: str) -> tuple[list[SlotText], list[str]]:
    """The slots written in ``text`` (its lines, or parts between ``;``), and every problem
    of its form in words (a line that is no slot, a slot both ``[trade]`` and ``[sleep]``)."""
    slots: list[SlotText] = []
    problems: list[str] = []
    for part in re.split(r"[\n;]", str(text or "")):
        line = part.strip()
        if not line:
            continue
        slot, line_problems = _parse_slot(line)
        problems.extend(line_problems)
        if slot is not None:
            slots.append(slot)
    return slots, problems


def _parse_slot(line: str) -> tuple[SlotText | None, list[str]]:
    """One written slot and the problems of its form."""
    shown = one_line(line, 80)
    match = _SLOT_LINE.match(line)
    if not match:
        return None, [
            f'"{shown}" is not a slot: write START-END ROOM: WHAT IT DOES, like '
            f'"05:00-11:00 Bakery: baking bread [trade]".'
        ]
    problems: list[str] = []
    rest = match.group("rest")
    flags = {flag.lower() for flag in _FLAG.findall(rest)}
    for unknown in sorted(flags - set(_FLAGS)):
        problems.append(f'"{shown}" has the flag [{unknown}]: the flags are [trade] and [sleep].')
    room, _colon, doing = _FLAG.sub(" ", rest).partition(":")
    room, doing = " ".join(room.split()), clean_doing(doing)
    slot = SlotText(
        match.group("start"), match.group("end"), room, doing, "trade" in flags, "sleep" in flags
    )
    if not room:
        problems.append(f'"{shown}" names no room: write the room after the times.')
    if slot.trade and slot.sleep:
        problems.append(
            f"{slot.label()} is both [trade] and [sleep]: a sleeping NPC does not trade."
        )
    if len(doing) > MAX_DOING:
        problems.append(
            f"What the NPC does in {slot.label()} is {len(doing)} characters long: at most "
            f"{MAX_DOING}."
        )
    return slot, problems


def time_problems(slots: list[SlotText], cal: Calendar) -> list[str]:
    """Every problem of the times of ``slots`` in words: a time not of this day, an empty
    slot, two slots overlapping (round the day), more than :data:`MAX_SLOTS` slots."""
    problems: list[str] = []
    if len(slots) > MAX_SLOTS:
        problems.append(f"A routine has at most {MAX_SLOTS} slots; this one has {len(slots)}.")
    timed: list[tuple[SlotText, int, int]] = []
    for slot in slots:
        try:
            start = cal.parse(slot.start)
        except ValueError as err:
            problems.append(str(err))
            continue
        try:
            end = cal.parse(slot.end, end=True)
        except ValueError as err:
            problems.append(str(err))
            continue
        if start == end:
            problems.append(
                f"{slot.start}-{slot.end} is empty: a slot needs an end after its start."
            )
            continue
        timed.append((slot, start, end))
    for index, (first, start1, end1) in enumerate(timed):
        for second, start2, end2 in timed[index + 1 :]:
            for begin, finish in _overlaps((start1, end1), (start2, end2), cal.minutes_per_day):
                problems.append(
                    f"{first.label()} and {second.label()} overlap from {cal.format(begin)} "
                    f"to {cal.format(finish)}."
                )
    return problems


def _pieces(start: int, end: int, day: int) -> list[tuple[int, int]]:
    """A slot as intervals of ``[0, day)``: one, or two when it wraps past midnight."""
    return [(start, end)] if start < end else [(start, day), (0, end)]


def _overlaps(first: tuple[int, int], second: tuple[int, int], day: int) -> list[tuple[int, int]]:
    """Where two slots overlap on the circle of the day, as ``(start, end)`` minutes; a piece
    that runs past midnight is one overlap, not two."""
    found = sorted(
        (max(a, c), min(b, d))
        for a, b in _pieces(*first, day)
        for c, d in _pieces(*second, day)
        if max(a, c) < min(b, d)
    )
    if len(found) > 1 and found[0][0] == 0 and found[-1][1] == day:
        found = [(found[-1][0], found[0][1])] + found[1:-1]
    return [(begin, finish % day) for begin, finish in found]


def is_kept(value: object) -> bool:
    """Whether a stored routine (the state key ``routine``) asks anything of its NPC: it has
    slots, or it cannot be read (which closes the shop); ``{"slots": []}`` asks nothing."""
    if not isinstance(value, dict):
        return True
    return bool(value.get("slots")) or bool(value.get(UNREADABLE))


def open_for_trade(routine: Routine, minute: int, cal: Calendar) -> tuple[bool, str]:
    """Whether an NPC keeping ``routine`` trades at ``minute`` of the game day, and why not.

    An NPC with no slots trades at any time (a routine is optional). With slots, it trades only
    within a slot marked ``[trade]``; free time between slots is closed. A routine that cannot
    be read (:attr:`Routine.unreadable`) is closed at all times.

    Returns:
        ``(True, "")``, or ``(False, words)`` such as ``"having a drink until 20:00; trading
        again from 05:00"`` (words for the NPC and for a player alike).
    """
    if routine.unreadable:
        return False, UNREADABLE_CLOSED
    if not routine.slots:
        return True, ""
    slot = routine.now(minute)
    if slot is not None and slot.trade:
        return True, ""
    if slot is not None:
        words = f"{slot.doing or 'busy'} until {cal.format(slot.end)}"
    else:
        following = routine.next(minute)
        until = f" until {cal.format(following.start)}" if following else ""
        words = f"free time{until}"
    again = routine.next_trade(minute)
    if again is None:
        return False, f"{words}; trading at no time of the day"
    return False, f"{words}; trading again from {cal.format(again.start)}"

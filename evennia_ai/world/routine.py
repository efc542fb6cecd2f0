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
whether the NPC can walk between them are checked by the staff controls, which need the
database. The stored value (state key ``routine``) is read with :meth:`Routine.from_state`,
which never raises.

A gap between slots is free time: the NPC stays where it is, closed for trade.

Pure: no Django, Evennia or Twisted.
"""

from __future__ import annotations

from dataclasses import dataclass

from evennia_ai.npc_state import JSONObject
from evennia_ai.world.clock import Calendar

#: Most slots in one routine.
MAX_SLOTS = 12


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
    """

    start: int
    end: int
    room: str
    room_key: str
    doing: str
    trade: bool = False
    sleep: bool = False

    def covers(self, minute: int) -> bool:
        """Whether ``minute``, a minute of the day, falls in this slot (wrapping included)."""
        raise NotImplementedError("issue 36: A")

    def key(self) -> str:
        """The slot's identity in a day, ``"05:00-11:00"``."""
        raise NotImplementedError("issue 36: A")


@dataclass(frozen=True)
class Routine:
    """An NPC's day: its slots, none overlapping.

    Attributes:
        slots: The slots, sorted by start.
    """

    slots: tuple[Slot, ...]

    def now(self, minute: int) -> Slot | None:
        """The slot covering ``minute``, or None in free time between slots."""
        raise NotImplementedError("issue 36: A")

    def next(self, minute: int) -> Slot | None:
        """The next slot to start after ``minute`` (round the day), or None with no slots."""
        raise NotImplementedError("issue 36: A")

    @classmethod
    def from_state(cls, value: JSONObject, cal: Calendar) -> Routine:
        """The routine stored as ``value`` (the state key ``routine``).

        Never raises: a slot that cannot be read is dropped and logged once.
        """
        raise NotImplementedError("issue 36: A")

    def to_state(self) -> JSONObject:
        """The stored form: ``{"slots": [{"start": "05:00", "end": "11:00", "room": "#12",
        "room_key": "Bakery", "doing": "baking bread", "trade": true, "sleep": false}]}``."""
        raise NotImplementedError("issue 36: A")


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


def parse_routine(text: str) -> tuple[list[SlotText], list[str]]:
    """The slots written in ``text`` (its lines, or parts between ``;``), and every problem
    of its form in words (a line that is no slot, a slot both ``[trade]`` and ``[sleep]``)."""
    raise NotImplementedError("issue 36: A")


def time_problems(slots: list[SlotText], cal: Calendar) -> list[str]:
    """Every problem of the times of ``slots`` in words: a time not of this day, an empty
    slot, two slots overlapping (round the day), more than :data:`MAX_SLOTS` slots."""
    raise NotImplementedError("issue 36: A")


def open_for_trade(routine: Routine, minute: int, cal: Calendar) -> tuple[bool, str]:
    """Whether an NPC keeping ``routine`` trades at ``minute`` of the game day, and why not.

    An NPC with no slots trades at any time (a routine is optional). With slots, it trades only
    within a slot marked ``[trade]``; free time between slots is closed.

    Returns:
        ``(True, "")``, or ``(False, words)`` such as ``"having a drink until 20:00; you trade
        again from 05:00"`` (what the trade's refusal tells the NPC and the player).
    """
    raise NotImplementedError("issue 36: A")

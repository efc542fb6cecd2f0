"""The game clock: which day of the game it is, and which minute of that day.

The time comes from Evennia's game time (``evennia.utils.gametime.gametime(absolute=True)``:
the game's epoch plus the server's running time times ``settings.TIME_FACTOR``), read through
:data:`source`. The day is split by a :class:`Calendar`: the ``TIME_UNITS`` of the
custom_gametime contrib when the game sets them, else the standard 60-second minute, 60-minute
hour and 24-hour day. The time of day is the game seconds modulo the day (the server runs in
UTC, so this agrees with the contrib's own split).

Routines (:mod:`evennia_ai.world.routine`) and the sense of place read the clock once per tick;
nothing here schedules anything.

Example:
    now = game_now()
    if routine.now(now.minute) is None:
        ...  # free time

Glue: Evennia's game time and settings.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Calendar:
    """The units of the game's day, in game seconds.

    A calendar whose hour or minute does not divide its day is refused when the server starts
    (logged), and routines are then off.

    Attributes:
        minute: Game seconds per game minute (``TIME_UNITS["min"]``).
        hour: Game seconds per game hour (``TIME_UNITS["hour"]`` or ``TIME_UNITS["hr"]``).
        day: Game seconds per game day (``TIME_UNITS["day"]``).
    """

    minute: int = 60
    hour: int = 3600
    day: int = 86400

    @property
    def minutes_per_day(self) -> int:
        """Game minutes in one game day (1440 for the standard day)."""
        raise NotImplementedError("issue 36: A")

    def parse(self, text: str) -> int:
        """The minute of the day that ``text`` (``"HH:MM"``) names.

        Raises:
            ValueError: ``text`` is not a time of this game's day; the message says why, in
                words (``"25:00" is not a time of day: hours go from 00 to 23 (this game's day
                has 24 hours).``).
        """
        raise NotImplementedError("issue 36: A")

    def format(self, minute: int) -> str:
        """``"HH:MM"`` of ``minute``, a minute of the day."""
        raise NotImplementedError("issue 36: A")


@dataclass(frozen=True)
class GameTime:
    """One moment of game time, as the clock read it.

    Attributes:
        seconds: Absolute game seconds (since the game's epoch).
        day: Whole game days since the epoch.
        minute: The minute of the game day, from 0 to ``calendar.minutes_per_day - 1``.
        calendar: The calendar it was read with.
    """

    seconds: float
    day: int
    minute: int
    calendar: Calendar

    def clock(self) -> str:
        """The time of day, ``"14:20"``."""
        raise NotImplementedError("issue 36: A")

    def hour_clock(self) -> str:
        """The time of day to the game hour, ``"14:00"``: what an NPC's requests show, so they
        change once a game hour, not every minute (the provider's prefix cache)."""
        raise NotImplementedError("issue 36: A")

    def part_of_day(self) -> str:
        """The part of the day, in the words of :mod:`evennia_ai.wording`: night in the day's
        first quarter, then morning, afternoon, and evening in its last quarter."""
        raise NotImplementedError("issue 36: A")


def _evennia_game_seconds() -> float:
    """Evennia's absolute game time, in game seconds (``gametime.gametime(absolute=True)``)."""
    raise NotImplementedError("issue 36: A")


#: Where the clock reads the game seconds (a module alias, like the thread aliases of the house
#: style). Tests and benches assign their own, ``clock.source = fake.game_seconds``: Evennia
#: reads ``TIME_FACTOR`` once, when ``gametime`` is imported, so ``override_settings`` cannot
#: change the game's clock.
source: Callable[[], float] = _evennia_game_seconds


def calendar() -> Calendar:
    """The game's calendar: ``settings.TIME_UNITS`` when set (the custom_gametime contrib),
    else the standard day. Read at call time."""
    raise NotImplementedError("issue 36: A")


def game_now() -> GameTime:
    """The game time now: :data:`source` split by :func:`calendar`."""
    raise NotImplementedError("issue 36: A")


def real_seconds_per_game_minute() -> float:
    """Real seconds one game minute lasts (``calendar().minute / settings.TIME_FACTOR``); only
    for status text ("in about 3 real minutes")."""
    raise NotImplementedError("issue 36: A")

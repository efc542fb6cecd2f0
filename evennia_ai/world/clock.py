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

Glue: Evennia's game time and settings, reached only when the time is read, so that
:class:`Calendar` and :class:`GameTime` (and the pure :mod:`evennia_ai.world.routine`, which
uses them) import without Django or Evennia.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from evennia_ai import conf
from evennia_ai.wording import PARTS_OF_DAY

#: The standard units, in game seconds: a 60-second minute, a 60-minute hour, a 24-hour day.
STANDARD_MINUTE = 60
STANDARD_HOUR = 3600
STANDARD_DAY = 86400


@dataclass(frozen=True)
class Calendar:
    """The units of the game's day, in game seconds.

    A calendar whose hour or minute does not divide its day is refused (:meth:`problem`):
    routines are then off, logged once when they first read it, and the clock reads the time
    with the standard calendar.

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
        return self.day // self.minute

    @property
    def minutes_per_hour(self) -> int:
        """Game minutes in one game hour (60 for the standard hour)."""
        return self.hour // self.minute

    @property
    def hours_per_day(self) -> int:
        """Game hours in one game day (24 for the standard day)."""
        return self.day // self.hour

    def problem(self) -> str:
        """Why this calendar cannot split a day into hours and minutes, in words; "" when it
        can (each unit whole and positive, the minute dividing the hour, the hour the day)."""
        units = (("minute", self.minute), ("hour", self.hour), ("day", self.day))
        for name, value in units:
            if not isinstance(value, int) or value <= 0:
                return (
                    f"TIME_UNITS gives a {name} of {value!r} game seconds: it must be a whole "
                    "number above 0."
                )
        if self.hour % self.minute:
            return (
                f"TIME_UNITS gives an hour of {self.hour} game seconds, which is not a whole "
                f"number of minutes of {self.minute}."
            )
        if self.day % self.hour:
            return (
                f"TIME_UNITS gives a day of {self.day} game seconds, which is not a whole number "
                f"of hours of {self.hour}."
            )
        return ""

    def parse(self, text: str, *, end: bool = False) -> int:
        """The minute of the day that ``text`` (``"HH:MM"``) names.

        Args:
            text: The time as written.
            end: It ends a slot: the day's last boundary (``"24:00"`` of the standard day) is
                accepted too, as midnight.

        Raises:
            ValueError: ``text`` is not a time of this game's day; the message says why, in
                words (``"25:00" is not a time of day: hours go from 00 to 23 (this game's day
                has 24 hours).``).
        """
        written = str(text).strip()
        hours, colon, minutes = written.partition(":")
        if not (colon and hours.isdigit() and minutes.isdigit() and len(minutes) == 2):
            raise ValueError(
                f'"{written}" is not a time of day: write it as HH:MM, like {self.format(0)} '
                f"or {self.format(self.minutes_per_day // 2 + self.minutes_per_hour // 2)}."
            )
        hour, minute = int(hours), int(minutes)
        if end and hour == self.hours_per_day and minute == 0:
            return 0
        if hour >= self.hours_per_day:
            raise ValueError(
                f'"{written}" is not a time of day: hours go from 00 to '
                f"{self.hours_per_day - 1:02d} (this game's day has {self.hours_per_day} hours)."
            )
        if minute >= self.minutes_per_hour:
            raise ValueError(
                f'"{written}" is not a time of day: minutes go from 00 to '
                f"{self.minutes_per_hour - 1:02d} (this game's hour has "
                f"{self.minutes_per_hour} minutes)."
            )
        return hour * self.minutes_per_hour + minute

    def format(self, minute: int) -> str:
        """``"HH:MM"`` of ``minute``, a minute of the day."""
        hour, minute = divmod(int(minute) % self.minutes_per_day, self.minutes_per_hour)
        return f"{hour:02d}:{minute:02d}"


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
        return self.calendar.format(self.minute)

    def hour_clock(self) -> str:
        """The time of day to the game hour, ``"14:00"``: what an NPC's requests show, so they
        change once a game hour, not every minute (the provider's prefix cache)."""
        per_hour = self.calendar.minutes_per_hour
        return self.calendar.format(self.minute - self.minute % per_hour)

    def part_of_day(self) -> str:
        """The part of the day, in the words of :mod:`evennia_ai.wording`: night in the day's
        first quarter, then morning, afternoon, and evening in its last quarter."""
        quarter = self.minute * len(PARTS_OF_DAY) // self.calendar.minutes_per_day
        return PARTS_OF_DAY[min(quarter, len(PARTS_OF_DAY) - 1)]


def _evennia_game_seconds() -> float:
    """Evennia's absolute game time, in game seconds (``gametime.gametime(absolute=True)``).

    The module is imported when the time is first read, not with this one: importing it needs
    Django's apps loaded, which the pure modules that use :class:`Calendar` must not need.
    """
    gametime = importlib.import_module("evennia.utils.gametime")
    return float(gametime.gametime(absolute=True))


def _game_setting(name: str, default: Any) -> Any:
    """The game's ``settings.<name>``, or ``default`` when Django is not loaded or configured
    (as :func:`evennia_ai.conf.lookup` reads settings: read at call time)."""
    django_conf = sys.modules.get("django.conf")
    settings = getattr(django_conf, "settings", None)
    if settings is None or not settings.configured:
        return default
    return getattr(settings, name, default)


#: Where the clock reads the game seconds (a module alias, like the thread aliases of the house
#: style). Tests and benches assign their own, ``clock.source = fake.game_seconds``: Evennia
#: reads ``TIME_FACTOR`` once, when ``gametime`` is imported, so ``override_settings`` cannot
#: change the game's clock.
source: Callable[[], float] = _evennia_game_seconds


def _unit(units: Mapping[str, object], names: tuple[str, ...], standard: int) -> int:
    """The first of ``names`` set in ``units`` as a whole number of seconds (0 when it is not
    one, which :meth:`Calendar.problem` then names), else ``standard``."""
    for name in names:
        if name in units:
            value = units[name]
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                return 0
            return int(value) if float(value).is_integer() else 0
    return standard


def calendar() -> Calendar:
    """The game's calendar: ``settings.TIME_UNITS`` when set (the custom_gametime contrib),
    else the standard day. Read at call time.

    The calendar may be one that cannot split a day (:meth:`Calendar.problem`): routines are
    then off, and :func:`game_now` reads the time with the standard calendar.
    """
    units = _game_setting("TIME_UNITS", None)
    if not isinstance(units, Mapping) or not units:
        return Calendar()
    return Calendar(
        minute=_unit(units, ("min", "minute"), STANDARD_MINUTE),
        hour=_unit(units, ("hour", "hr"), STANDARD_HOUR),
        day=_unit(units, ("day",), STANDARD_DAY),
    )


def usable_calendar() -> Calendar:
    """:func:`calendar` when it can split a day into hours and minutes, else the standard
    one (what the clock reads the time with; routines check :meth:`Calendar.problem`)."""
    cal = calendar()
    return Calendar() if cal.problem() else cal


#: Why routines are not followed while ``EVENNIA_AI_ROUTINES`` is off.
ROUTINES_OFF = "routines are off"


def routine_calendar() -> tuple[Calendar | None, str]:
    """The calendar routines are kept by, or None and why they are not followed: the setting
    ``EVENNIA_AI_ROUTINES`` is off ("routines are off"), or the game's calendar cannot split a
    day (:meth:`Calendar.problem`). The one place that decides whether routines are followed:
    the routine's tick work and a shop's hours both ask it.
    """
    if not conf.get_bool("EVENNIA_AI_ROUTINES"):
        return None, ROUTINES_OFF
    cal = calendar()
    problem = cal.problem()
    return (None, problem) if problem else (cal, "")


def split(seconds: float, cal: Calendar) -> GameTime:
    """``seconds`` of absolute game time as a :class:`GameTime` of calendar ``cal``."""
    day, into_day = divmod(float(seconds), cal.day)
    minute = min(int(into_day // cal.minute), cal.minutes_per_day - 1)
    return GameTime(seconds=float(seconds), day=int(day), minute=minute, calendar=cal)


def game_now() -> GameTime:
    """The game time now: :data:`source` split by :func:`calendar` (the standard calendar
    when the game's cannot split a day)."""
    return split(source(), usable_calendar())


def real_seconds_per_game_minute() -> float:
    """Real seconds one game minute lasts (``calendar().minute / settings.TIME_FACTOR``); only
    for status text ("in about 3 real minutes")."""
    factor = float(_game_setting("TIME_FACTOR", 2.0) or 2.0)
    return usable_calendar().minute / factor

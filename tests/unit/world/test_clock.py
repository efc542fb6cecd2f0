"""world/clock: the game's time of day, its calendar, and the seam tests and benches set.

Game time goes through ``clock.source``: Evennia reads ``TIME_FACTOR`` once, when its
``gametime`` module is imported, so ``override_settings(TIME_FACTOR=...)`` cannot change the
game's clock (``TIME_UNITS``, read at call time, can).
"""

from __future__ import annotations

import pytest
from django.test import override_settings

from evennia_ai.world import clock
from evennia_ai.world.clock import Calendar

#: The custom_gametime contrib's units for a 20-hour day of 60-minute hours.
TWENTY_HOURS = {"sec": 1, "min": 60, "hr": 3600, "hour": 3600, "day": 20 * 3600}


@pytest.fixture
def at(monkeypatch):
    """Set the game clock: ``at(seconds)``."""

    def set_to(seconds: float) -> None:
        monkeypatch.setattr(clock, "source", lambda: float(seconds))

    return set_to


def test_time_of_day_follows_the_clock_and_custom_units(at):
    at(3 * 86400 + 14 * 3600 + 20 * 60 + 7)  # the fourth day, 14:20:07
    now = clock.game_now()
    assert (now.day, now.minute) == (3, 14 * 60 + 20)
    assert (now.clock(), now.hour_clock(), now.part_of_day()) == ("14:20", "14:00", "afternoon")
    at(5 * 3600 + 59 * 60)
    assert (clock.game_now().clock(), clock.game_now().part_of_day()) == ("05:59", "night")
    at(6 * 3600)
    assert clock.game_now().part_of_day() == "morning"
    at(23 * 3600)
    assert clock.game_now().part_of_day() == "evening"

    with override_settings(TIME_UNITS=TWENTY_HOURS):
        cal = clock.calendar()
        assert (cal.hours_per_day, cal.minutes_per_day, cal.problem()) == (20, 1200, "")
        at(2 * 72000 + 19 * 3600 + 30 * 60)  # the third 20-hour day, 19:30
        now = clock.game_now()
        assert (now.day, now.clock(), now.part_of_day()) == (2, "19:30", "evening")
        at(2 * 72000 + 5 * 3600)
        assert clock.game_now().part_of_day() == "morning"  # a quarter of 20 hours is 05:00
        assert cal.parse("19:59") == 19 * 60 + 59
        with pytest.raises(ValueError) as refused:
            cal.parse("20:00")
        assert str(refused.value) == (
            '"20:00" is not a time of day: hours go from 00 to 19 (this game\'s day has 20 hours).'
        )


def test_times_are_read_and_written_in_words():
    cal = Calendar()
    assert cal.parse("05:00") == 300 and cal.parse("0:07") == 7
    assert (
        cal.format(300) == "05:00" and cal.format(1439) == "23:59" and cal.format(1440) == "00:00"
    )
    assert cal.parse("24:00", end=True) == 0  # an end at midnight
    problems = {}
    for text in ("25:00", "10:75", "5am", "", "24:00", "10:5"):
        with pytest.raises(ValueError) as refused:
            cal.parse(text)
        problems[text] = str(refused.value)
    assert problems["25:00"] == (
        '"25:00" is not a time of day: hours go from 00 to 23 (this game\'s day has 24 hours).'
    )
    assert problems["10:75"].startswith('"10:75" is not a time of day: minutes go from 00 to 59')
    assert problems["5am"].startswith('"5am" is not a time of day: write it as HH:MM')
    assert all("is not a time of day" in words for words in problems.values())


def test_a_calendar_that_cannot_split_a_day_is_named_and_the_standard_one_is_read(at):
    with override_settings(TIME_UNITS={"min": 60, "hour": 3500, "day": 86400}):
        problem = clock.calendar().problem()
        assert "not a whole number of minutes" in problem
        at(3600)
        assert clock.game_now().calendar == Calendar()  # the clock still reads, standard
    with override_settings(TIME_UNITS={"min": 60, "hour": 3600, "day": 88200}):
        assert "not a whole number of hours" in clock.calendar().problem()
    with override_settings(TIME_UNITS={"min": "sixty"}):
        assert "must be a whole number" in clock.calendar().problem()
    assert clock.calendar() == Calendar() and Calendar().problem() == ""


def test_real_seconds_per_game_minute_follows_the_time_factor():
    with override_settings(TIME_FACTOR=60):
        assert clock.real_seconds_per_game_minute() == 1.0
    with override_settings(TIME_FACTOR=2.0):
        assert clock.real_seconds_per_game_minute() == 30.0


@pytest.mark.django_db
def test_the_default_source_is_evennias_game_time():
    assert clock.source is clock._evennia_game_seconds
    assert isinstance(clock._evennia_game_seconds(), float)

"""world/routine: an NPC's day in slots, its text form and its checks (pure: no database)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from evennia_ai.world.clock import Calendar
from evennia_ai.world.routine import (
    MAX_SLOTS,
    Routine,
    Slot,
    open_for_trade,
    parse_routine,
    time_problems,
)

CAL = Calendar()
BAKER = """
05:00-11:00 Bakery: baking bread [trade]
11:00-15:00 Market Square: selling bread at the stall [trade]
15:00-20:00 #3: having a drink
20:00-05:00 Bakery Loft: sleeping [sleep]
"""


def minute(text: str) -> int:
    return CAL.parse(text)


def routine_of(text: str) -> Routine:
    """The routine written in ``text``, each room's name standing for its dbref."""
    written, problems = parse_routine(text)
    assert problems == [] and time_problems(written, CAL) == []
    slots = [
        Slot(
            CAL.parse(s.start),
            CAL.parse(s.end, end=True),
            s.room if s.room.startswith("#") else f"#{len(s.room)}",
            s.room,
            s.doing,
            s.trade,
            s.sleep,
            CAL,
        )
        for s in written
    ]
    return Routine(tuple(sorted(slots, key=lambda s: s.start)), calendar=CAL)


def test_the_text_form_is_read_with_its_flags():
    written, problems = parse_routine(BAKER)
    assert problems == []
    assert [(s.start, s.end, s.room, s.doing, s.trade, s.sleep) for s in written] == [
        ("05:00", "11:00", "Bakery", "baking bread", True, False),
        ("11:00", "15:00", "Market Square", "selling bread at the stall", True, False),
        ("15:00", "20:00", "#3", "having a drink", False, False),
        ("20:00", "05:00", "Bakery Loft", "sleeping", False, True),
    ]
    semicolons, _ = parse_routine(BAKER.strip().replace("\n", "; "))
    assert semicolons == written  # the in-game form: ';' between slots
    assert time_problems(written, CAL) == []


def test_overlaps_bad_times_and_empty_slots_are_named():
    written, problems = parse_routine(
        "05:00-11:00 Bakery: baking; 10:00-15:00 Market Square: selling; 25:00-03:00 Loft; "
        "06:00-06:00 Smithy: nothing; 22:00-06:00 Loft: sleeping [sleep]; 09:00-10:75 Inn"
    )
    assert problems == []
    assert time_problems(written, CAL) == [
        '"25:00" is not a time of day: hours go from 00 to 23 (this game\'s day has 24 hours).',
        "06:00-06:00 is empty: a slot needs an end after its start.",
        '"10:75" is not a time of day: minutes go from 00 to 59 (this game\'s hour has 60 '
        "minutes).",
        "05:00-11:00 (Bakery) and 10:00-15:00 (Market Square) overlap from 10:00 to 11:00.",
        "05:00-11:00 (Bakery) and 22:00-06:00 (Loft) overlap from 05:00 to 06:00.",
    ]


def test_overlaps_round_midnight_are_one_overlap():
    written, _ = parse_routine("20:00-04:00 Loft: sleeping; 23:00-01:00 Inn: a nightcap")
    assert time_problems(written, CAL) == [
        "20:00-04:00 (Loft) and 23:00-01:00 (Inn) overlap from 23:00 to 01:00."
    ]
    written, _ = parse_routine("20:00-04:00 Loft: sleeping; 22:00-02:00 Inn: drinking")
    assert time_problems(written, CAL) == [
        "20:00-04:00 (Loft) and 22:00-02:00 (Inn) overlap from 22:00 to 02:00."
    ]


def test_form_problems_are_all_named():
    long = "x" * 130
    written, problems = parse_routine(
        f"nonsense; 05:00-06:00 Inn: resting [trade] [sleep]; 06:00-07:00 Inn: {long}; "
        "07:00-08:00 Inn: waiting [shop]; 08:00-09:00 : no room"
    )
    assert problems == [
        '"nonsense" is not a slot: write START-END ROOM: WHAT IT DOES, like '
        '"05:00-11:00 Bakery: baking bread [trade]".',
        "05:00-06:00 (Inn) is both [trade] and [sleep]: a sleeping NPC does not trade.",
        "What the NPC does in 06:00-07:00 (Inn) is 130 characters long: at most 120.",
        '"07:00-08:00 Inn: waiting [shop]" has the flag [shop]: the flags are [trade] and '
        "[sleep].",
        '"08:00-09:00 : no room" names no room: write the room after the times.',
    ]
    assert len(written) == 4


def test_too_many_slots_are_refused():
    text = "; ".join(f"{h:02d}:00-{h:02d}:30 Inn: hour {h}" for h in range(MAX_SLOTS + 2))
    written, _ = parse_routine(text)
    assert time_problems(written, CAL) == ["A routine has at most 12 slots; this one has 14."]


def test_staff_markup_and_line_breaks_are_stripped_from_what_it_does():
    written, problems = parse_routine("05:00-11:00 Bakery: |rbaking|n   bread ||  \x1b[31mhot")
    assert problems == [] and written[0].doing == "baking bread | hot"


def test_wrapping_slots_cover_midnight():
    night = Slot(minute("20:00"), minute("05:00"), "#9", "Loft", "sleeping", sleep=True)
    assert night.covers(minute("23:59")) and night.covers(0) and night.covers(minute("04:59"))
    assert not night.covers(minute("05:00")) and not night.covers(minute("19:59"))
    assert night.key() == "20:00-05:00"
    day = Slot(minute("05:00"), minute("20:00"), "#4", "Bakery", "baking")
    assert day.covers(minute("05:00")) and not day.covers(minute("20:00"))
    routine = Routine((day, night))
    assert routine.now(minute("02:00")) is night and routine.now(minute("12:00")) is day
    assert routine.next(minute("02:00")) is day and routine.next(minute("12:00")) is night
    assert routine.next(minute("05:00")) is night  # the slot starting now is the one now


def test_free_time_between_slots_and_the_next_slot_round_the_day():
    routine = routine_of("05:00-11:00 Bakery: baking [trade]; 15:00-20:00 Inn: drinking")
    assert routine.now(minute("12:00")) is None  # free time
    assert routine.next(minute("12:00")).room_key == "Inn"
    assert routine.next(minute("21:00")).room_key == "Bakery"  # tomorrow's first
    assert Routine(()).now(0) is None and Routine(()).next(0) is None


def test_the_stored_form_round_trips_and_a_bad_slot_is_dropped_in_words():
    routine = routine_of(BAKER)
    stored = routine.to_state()
    assert stored["slots"][0] == {
        "start": "05:00",
        "end": "11:00",
        "room": "#6",
        "room_key": "Bakery",
        "doing": "baking bread",
        "trade": True,
        "sleep": False,
    }
    assert Routine.from_state(stored, CAL) == routine
    broken = {
        "slots": [
            *stored["slots"][:2],
            {"start": "25:00", "end": "03:00", "room": "#4"},
            {"start": "03:00", "end": "04:00"},
            "a string",
            {"start": "04:00", "end": "04:00", "room": "#4"},
        ]
    }
    read = Routine.from_state(broken, CAL)
    assert [s.room_key for s in read.slots] == ["Bakery", "Market Square"]
    assert read.dropped == (
        'slot 3 dropped: "25:00" is not a time of day: hours go from 00 to 23 (this game\'s '
        "day has 24 hours).",
        "slot 4 dropped: it names no room",
        "slot 5 dropped: not an object",
        "slot 6 dropped: it is empty",
    )
    for junk in ({}, {"slots": None}, {"slots": "x"}, []):
        assert Routine.from_state(junk, CAL).slots == ()  # never raises


def test_open_for_trade_in_trade_slots_only_and_always_without_a_routine():
    assert open_for_trade(Routine(()), 0, CAL) == (True, "")
    routine = routine_of(BAKER)
    assert open_for_trade(routine, minute("06:00"), CAL) == (True, "")
    assert open_for_trade(routine, minute("16:00"), CAL) == (
        False,
        "having a drink until 20:00; trading again from 05:00",
    )
    assert open_for_trade(routine, minute("02:00"), CAL) == (
        False,
        "sleeping until 05:00; trading again from 05:00",
    )
    gaps = routine_of("05:00-11:00 Bakery: baking [trade]; 15:00-20:00 Inn: drinking")
    assert open_for_trade(gaps, minute("12:00"), CAL) == (
        False,
        "free time until 15:00; trading again from 05:00",
    )
    never = routine_of("15:00-20:00 Inn: drinking")
    assert open_for_trade(never, minute("16:00"), CAL) == (
        False,
        "drinking until 20:00; trading at no time of the day",
    )


def test_the_routine_module_imports_without_django():
    root = Path(__file__).resolve().parents[3]
    code = (
        "import sys, evennia_ai.world.routine; "
        "bad = [m for m in ('django', 'evennia', 'twisted') if m in sys.modules]; "
        "print(', '.join(bad)); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root)
    assert done.returncode == 0, done.stderr or done.stdout

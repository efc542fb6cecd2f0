"""engine/routines: an NPC keeps its routine in game time, walking exit by exit, with no model
call (database tests with the loopback model server, which must see no request).

Game time goes through ``world.clock.source`` (``support.game_clock.GameClock``), never
``override_settings(TIME_FACTOR=...)``: Evennia reads the factor once, at import.
"""

from __future__ import annotations

import time
from datetime import timedelta
from unittest import mock

from django.test import override_settings
from evennia.objects.objects import DefaultExit, DefaultRoom
from evennia.prototypes import prototypes as protlib
from evennia.server.signals import SIGNAL_EXIT_TRAVERSED
from evennia.utils.create import create_object
from support.game_clock import DAY, GameClock
from twisted.internet import defer
from unit.engine.test_assistant_tick import AssistantTestBase
from unit.world.test_stock import nails_prototype

from evennia_ai.engine import floor, routines, upkeep
from evennia_ai.engine.agenda import Agenda
from evennia_ai.memory import events as ev
from evennia_ai.memory import longterm
from evennia_ai.memory.events import Event
from evennia_ai.memory.longterm import ConsolidationResult
from evennia_ai.npc import world_controls
from evennia_ai.npc.state import AttributeState
from evennia_ai.npc_state import GOODS, ROUTINE
from evennia_ai.typeclasses import AIAssistantCharacter
from evennia_ai.utils import iso_utc, today, utcnow
from evennia_ai.workspace.journal import add_entry
from evennia_ai.world import clock, stock, trade
from evennia_ai.world.goods import parse_goods, to_state
from evennia_ai.world.routine import UNREADABLE_CLOSED

#: Idle work that would call the model is off: only the routine may act.
QUIET = {
    "EVENNIA_AI_AUTONOMY": False,
    "EVENNIA_AI_REFLECTION_INTERVAL": 0,
    "EVENNIA_AI_REFLECTION_IMPORTANCE_THRESHOLD": 0,
    "EVENNIA_AI_SLEEP_SCHEDULE": None,
}


class RoutineTestBase(AssistantTestBase):
    """The baker's town: Loft - Bakery - Street - Market, Street - Tavern; a Smithy off the
    Street behind a locked door. The Innkeeper (the NPC) starts in the Bakery."""

    def setUp(self):
        super().setUp()
        self.server = self.answer_from_loopback(**QUIET)
        self.game = GameClock()
        patcher = mock.patch.object(clock, "source", self.game)
        patcher.start()
        self.addCleanup(patcher.stop)
        self.rooms = {
            key: create_object(DefaultRoom, key=key)
            for key in ("Loft", "Bakery", "Street", "Market", "Tavern", "Smithy")
        }
        for one, other in (
            ("Loft", "Bakery"),
            ("Bakery", "Street"),
            ("Street", "Market"),
            ("Street", "Tavern"),
        ):
            self.link(one, other)
        self.smithy_door = self.link("Street", "Smithy")
        self.npc.location = self.rooms["Bakery"]
        self.addCleanup(floor.forget)

    def link(self, one: str, other: str):
        """Exits both ways between two rooms; returns the one from ``one``."""
        create_object(
            DefaultExit,
            key=one.lower(),
            location=self.rooms[other],
            destination=self.rooms[one],
        )
        return create_object(
            DefaultExit,
            key=other.lower(),
            location=self.rooms[one],
            destination=self.rooms[other],
        )

    def set_routine(self, text: str) -> None:
        checked = routines.check(self.npc, text)
        assert checked.problems == (), checked.problems
        self.npc.ai.set(ROUTINE, checked.routine.to_state())

    def at(self, hhmm: str, day: int = 1) -> None:
        self.game.at(hhmm, day)

    def where(self) -> str:
        return self.npc.location.key

    def ticks(self, count: int) -> None:
        for _ in range(count):
            self.tick()


BAKER = (
    "05:00-11:00 Bakery: baking bread [trade]; "
    "11:00-15:00 Market: selling bread at the stall [trade]; "
    "15:00-20:00 Tavern: having a drink; "
    "20:00-05:00 Loft: sleeping [sleep]"
)


class TestTheDay(RoutineTestBase):
    def watch_moves(self) -> list:
        """Every move of the NPC, as ``(from, to, exit or None)``; a move not made through an
        exit of the room it left fails the test."""
        moves: list = []
        original = self.npc.move_to

        def move_to(destination, *args, **kwargs):
            exit_obj = kwargs.get("exit_obj")
            source = self.npc.location
            assert (
                kwargs.get("move_type") == "traverse" and exit_obj is not None
            ), f"moved to {destination} without an exit: a teleport"
            assert exit_obj.location == source and exit_obj.destination == destination
            moved = original(destination, *args, **kwargs)
            moves.append((source.key, destination.key, exit_obj.key))
            return moved

        self.npc.move_to = move_to
        self.addCleanup(self.npc.__dict__.pop, "move_to", None)
        return moves

    def test_npc_walks_exit_by_exit_and_never_teleports(self):
        traversed = []

        def note(sender, traverser, **kwargs):
            traversed.append((sender.location.key, sender.destination.key))

        SIGNAL_EXIT_TRAVERSED.connect(note)
        self.addCleanup(SIGNAL_EXIT_TRAVERSED.disconnect, note)
        moves = self.watch_moves()
        self.set_routine(BAKER)
        self.at("10:58")
        self.ticks(2)
        assert self.where() == "Bakery" and moves == []
        self.at("11:00")
        self.tick()
        assert self.where() == "Street"  # one exit per tick: a walk players can watch
        assert routines.status(self.npc).state == "walking"
        self.tick()
        assert self.where() == "Market"
        assert moves == [("Bakery", "Street", "street"), ("Street", "Market", "market")]
        assert traversed == [("Bakery", "Street"), ("Street", "Market")]
        self.tick()
        assert routines.status(self.npc).words() == "in place: selling bread at the stall"
        assert self.server.requests == []

    def test_simulated_day_in_place_95_percent_with_no_model_request(self):
        moves = self.watch_moves()
        self.set_routine(BAKER)
        routine = routines.routine_of(self.npc)
        self.npc.location = self.rooms["Loft"]
        step = 120  # game seconds per interval tick: 5 s at a time factor of 24
        checks = in_place = 0
        start = self.game.seconds
        previous = self.npc.location
        while self.game.seconds < start + DAY:
            self.tick()
            now = clock.game_now()
            slot = routine.now(now.minute)
            checks += 1
            in_place += self.npc.location.dbref == slot.room
            if self.npc.location != previous:  # each change is one move through an exit
                assert moves and moves[-1][:2] == (previous.key, self.npc.location.key)
                previous = self.npc.location
            self.game.seconds += step
        assert checks == DAY // step
        assert in_place / checks >= 0.95, f"in place at {in_place} of {checks} checks"
        assert len(moves) == 2 + 2 + 3 + 1  # to the market, the tavern, the loft; the bakery
        assert self.server.requests == []  # the routine's walks cost no model call
        assert self.npc.ai.sleep.get("asleep")  # the day ends asleep in the loft, 00:00

    def test_unreachable_slot_is_reported_not_reached(self):
        self.smithy_door.locks.add("traverse:false()")
        self.set_routine("05:00-11:00 Bakery: baking; 11:00-15:00 Street: selling")
        self.npc.ai.set(
            ROUTINE,
            {
                "slots": [
                    *self.npc.ai.routine["slots"][:1],
                    {
                        "start": "11:00",
                        "end": "15:00",
                        "room": self.rooms["Smithy"].dbref,
                        "room_key": "Smithy",
                        "doing": "forging",
                    },
                ]
            },
        )  # set past the check: the door was locked after the routine was set
        self.at("11:00")
        with mock.patch.object(routines.logger, "log_warn") as warned:
            for minute in range(10):
                self.at(f"11:{minute:02d}")
                self.tick()
        assert self.where() == "Bakery"  # it stays where it was: reported, not reached
        known = routines.status(self.npc)
        assert known.state == "unreachable"
        assert known.why.startswith(f"cannot reach Smithy ({self.rooms['Smithy'].dbref}): no way")
        assert len(warned.call_args_list) == 1  # once per slot per game day
        assert "routine 11:00-15:00: cannot reach Smithy" in warned.call_args[0][0]
        assert self.server.requests == []

    def test_a_refused_route_is_named_when_the_routine_is_set(self):
        self.smithy_door.locks.add("traverse:false()")
        checked = routines.check(
            self.npc, "05:00-11:00 Bakery: baking; 11:00-15:00 Smithy: forging"
        )
        assert checked.routine is None
        assert checked.problems == (
            f"Innkeeper cannot walk from Bakery ({self.rooms['Bakery'].dbref}) to Smithy "
            f"({self.rooms['Smithy'].dbref}): no way through exits it may pass (searched 5 "
            "rooms, up to 40 exits away). Unlock a way, or choose another room.",
        )  # the way back from the Smithy is open
        checked = routines.check(self.npc, "05:00-11:00 Bakry: baking; 10:00-12:00 Market: x")
        assert checked.problems == (
            "05:00-11:00 (Bakry) and 10:00-12:00 (Market) overlap from 10:00 to 11:00.",
            "05:00-11:00: No room is called 'Bakry'.",
        )


class TestCheck(RoutineTestBase):
    def test_odd_text_gets_words_and_an_empty_routine_is_allowed(self):
        assert routines.check(self.npc, "") == routines.RoutineCheck(routines.Routine(()), ())
        assert routines.check(self.npc, " ;; \n ").problems == ()
        for text in ("x" * 5000, "05:00-06:00 #abc: x", "05:00-06:00 Bakery: [sleep] [trade]"):
            checked = routines.check(self.npc, text)
            assert checked.routine is None and checked.problems, text
            assert all(isinstance(p, str) and p for p in checked.problems)

    def test_the_slot_now_must_be_reachable_from_where_the_npc_stands(self):
        self.npc.location = self.rooms["Smithy"]
        exit_out = self.rooms["Smithy"].exits[0]
        exit_out.locks.add("traverse:false()")  # shut in
        self.at("12:00")
        checked = routines.check(self.npc, BAKER)
        assert checked.problems == (
            f"Innkeeper cannot walk from Smithy ({self.rooms['Smithy'].dbref}) to Market "
            f"({self.rooms['Market'].dbref}): no way through exits it may pass (searched 1 "
            "rooms, up to 40 exits away). Unlock a way, or choose another room.",
        )


class TestOnlookers(RoutineTestBase):
    def test_an_ai_npc_walking_past_another_with_no_player_near_costs_no_model_call(self):
        guard = create_object(AIAssistantCharacter, key="Guard", location=self.rooms["Street"])
        guard.ai.set_persona("A guard.")
        guard.ai.script.trigger_tick = lambda: None
        self.addCleanup(guard.delete)
        self.addCleanup(guard.ai.script.delete)
        self.set_routine(BAKER)
        self.at("11:00")
        self.ticks(3)
        assert self.where() == "Market"
        assert ev.pending_events(guard.ai.event_queue) == []  # seen, not queued
        seen = [entry["text"] for entry in guard.ai.context_buffer]
        assert any("Innkeeper arrives" in text for text in seen), seen
        guard.ai.script.run_tick()  # the guard's next interval tick has nothing to answer
        assert self.server.requests == []

    def test_with_a_player_there_the_arrival_is_an_event_as_before(self):
        guard = create_object(AIAssistantCharacter, key="Guard", location=self.rooms["Street"])
        guard.ai.script.trigger_tick = lambda: None
        self.addCleanup(guard.delete)
        self.addCleanup(guard.ai.script.delete)
        self.char1.location = self.rooms["Street"]
        self.set_routine(BAKER)
        self.at("11:00")
        with mock.patch.object(
            routines.floor.audience, "players_in_earshot", lambda npc: [self.char1]
        ):
            self.tick()
        assert [e.kind for e in ev.pending_events(guard.ai.event_queue)] == ["arrive"]


class TestConversations(RoutineTestBase):
    def talk(self, seconds_ago: float = 0.0) -> None:
        """The player Char woke the NPC ``seconds_ago`` (the room's floor)."""
        self.char1.location = self.npc.location
        here = floor.room_floor(self.npc.location)
        here.talked[self.char1.id] = (self.npc.id, time.monotonic() - seconds_ago)

    def test_a_conversation_delays_the_move_until_it_ends(self):
        self.set_routine(BAKER)
        self.at("11:00")
        self.talk()
        self.ticks(3)
        assert self.where() == "Bakery"
        assert routines.status(self.npc).words() == "waiting: talking with Char"
        self.talk(seconds_ago=61)  # the conversation ended a minute ago
        self.tick()
        assert self.where() == "Street"

    def test_a_queued_players_line_holds_the_move(self):
        self.set_routine(BAKER)
        self.at("11:00")
        event = Event.create("say", "Wait!", source=self.char1.dbref, source_name="Char")
        queue, _ = ev.push(self.npc.ai.event_queue, event, 50)
        assert routines.in_conversation(self.npc) == (False, "")
        self.npc.ai.set("event_queue", queue)
        assert routines.in_conversation(self.npc) == (True, "answering Char")

    def test_the_delay_is_capped(self):
        self.set_routine(BAKER)
        self.at("11:00")
        self.talk()
        self.tick()
        assert self.where() == "Bakery"
        routines.status(self.npc).due_since -= 601  # it should have left ten minutes ago
        self.tick()
        assert self.where() == "Street"
        with override_settings(EVENNIA_AI_ROUTINE_MAX_DELAY=0):
            self.talk()
            self.tick()
        assert self.where() == "Market"  # 0: a conversation never holds it

    def test_paused_npc_stands_still(self):
        self.set_routine(BAKER)
        self.at("11:00")
        self.npc.ai.pause()
        self.ticks(3)
        assert self.where() == "Bakery"
        self.npc.ai.resume()
        self.tick()
        assert self.where() == "Street"

    def test_routines_off_keeps_the_routine_but_does_not_follow_it(self):
        self.set_routine(BAKER)
        self.at("11:00")
        with override_settings(EVENNIA_AI_ROUTINES=False):
            self.ticks(3)
        assert self.where() == "Bakery" and self.npc.ai.routine["slots"]


class TestRoutineSleep(RoutineTestBase):
    def test_routine_sleep_slot_sleeps_in_its_room_and_wakes_after(self):
        self.set_routine(BAKER)
        self.at("20:00")
        self.npc.location = self.rooms["Tavern"]
        self.tick()
        assert self.where() == "Street" and not self.npc.ai.sleep.get("asleep")
        self.ticks(2)
        assert self.where() == "Loft"
        self.tick()  # in its room: asleep
        sleep = self.npc.ai.sleep
        assert sleep["asleep"] and sleep["reason"] == "routine" and sleep["slot"] == "1/20:00-05:00"
        self.at("03:00", day=2)  # past midnight: the same night
        self.tick()
        assert self.npc.ai.sleep["asleep"]
        self.at("05:00", day=2)
        self.tick()
        assert not self.npc.ai.sleep["asleep"] and self.where() == "Bakery"  # woke and went
        assert self.server.requests == []

    def test_woken_in_a_sleep_slot_stays_awake_until_it_ends(self):
        self.set_routine(BAKER)
        self.npc.location = self.rooms["Loft"]
        self.at("22:00")
        self.tick()
        assert self.npc.ai.sleep["asleep"]
        self.char1.location = self.rooms["Loft"]
        self.server.default_reply = {"tool_calls": [{"name": "noop", "arguments": {}}]}
        self.speak("Innkeeper, wake up! The oven is smoking.")
        with override_settings(EVENNIA_AI_WAKE_WHEN_ADDRESSED=True):
            assert self.tick().context_type == "tick_event"  # woken to answer
        assert self.npc.ai.sleep["woken_in_slot"] == "1/20:00-05:00"
        self.at("23:00")
        self.ticks(2)
        self.at("01:00", day=2)
        self.tick()
        assert not self.npc.ai.sleep["asleep"]  # not put back to sleep in the same night
        self.at("20:00", day=2)
        self.npc.location = self.rooms["Loft"]
        self.tick()
        assert self.npc.ai.sleep["asleep"]  # the next night is slept again


class TestConsolidationsPerDay(RoutineTestBase):
    """A routine in fast game time sleeps many times a real day: its consolidations are
    capped per real (UTC) day (``EVENNIA_AI_CONSOLIDATIONS_PER_DAY``, default 1)."""

    NIGHTS = 10

    def setUp(self):
        super().setUp()
        self.consolidated: list = []

        def consolidate(*args, **kwargs):
            self.consolidated.append(args)
            return defer.succeed(ConsolidationResult())

        patcher = mock.patch.object(longterm, "consolidate", consolidate)
        patcher.start()
        self.addCleanup(patcher.stop)
        self.server.default_reply = {"tool_calls": [{"name": "noop", "arguments": {}}]}
        self.npc.location = self.rooms["Loft"]
        self.set_routine("05:00-20:00 Loft: resting; 20:00-05:00 Loft: sleeping [sleep]")

    def nights(self) -> list[str | None]:
        """Ten game days: something to remember each day, then a night in the loft."""
        chosen = []
        for day in range(1, self.NIGHTS + 1):
            self.at("12:00", day)
            self.tick()
            journal, _ = add_entry(self.npc.ai.journal, f"Baked on day {day}.", importance=3)
            self.npc.ai.set("journal", journal)
            # the entry is newer than the last consolidation, even within the same second
            earlier = iso_utc(utcnow() - timedelta(hours=1))
            self.npc.ai.update("sleep", lambda s, e=earlier: {**s, "last_consolidated": e})
            self.at("21:00", day)
            trace = self.tick()
            assert self.npc.ai.sleep["asleep"], f"awake on night {day}"
            chosen.append(trace.context_type if trace else None)
            self.ticks(2)  # the other phases, then rest
        return chosen

    def test_fast_clock_consolidates_once_a_real_day(self):
        chosen = self.nights()
        assert chosen == ["sleep_consolidate"] + [None] * (self.NIGHTS - 1)
        assert len(self.consolidated) == 1
        assert len(self.server.requests) == 1  # the old code made ten
        assert self.npc.ai.sleep["consolidated"] == {"day": today(), "count": 1}

    def test_consolidations_per_day_none_is_the_old_behaviour(self):
        with override_settings(EVENNIA_AI_CONSOLIDATIONS_PER_DAY=None):
            chosen = self.nights()
        assert chosen == ["sleep_consolidate"] * self.NIGHTS
        assert len(self.consolidated) == self.NIGHTS

    def test_scheduled_sleep_window_unchanged(self):
        """A guard: a real-time window sleeps once a day and consolidates each day."""
        self.npc.ai.set(ROUTINE, {"slots": []})
        night = {"now": True}
        with (
            mock.patch("evennia_ai.engine.agenda.in_sleep_window", lambda _s: night["now"]),
            mock.patch("evennia_ai.workspace.sleep.in_sleep_window", lambda _s: night["now"]),
            override_settings(EVENNIA_AI_SLEEP_SCHEDULE=("22:00", "06:00")),
        ):
            for date in ("2026-11-27", "2026-11-28"):
                with mock.patch.object(upkeep, "today", lambda date=date: date):
                    journal, _ = add_entry(self.npc.ai.journal, f"Served on {date}.", importance=3)
                    self.npc.ai.set("journal", journal)
                    earlier = iso_utc(utcnow() - timedelta(hours=1))
                    self.npc.ai.update("sleep", lambda s, e=earlier: {**s, "last_consolidated": e})
                    night["now"] = True
                    assert self.tick().context_type == "sleep_consolidate"
                    self.ticks(2)
                    night["now"] = False
                    self.tick()  # morning: awake
                    assert not self.npc.ai.sleep["asleep"]
        assert len(self.consolidated) == 2


class TestCost(RoutineTestBase):
    def reads(self, **settings) -> list[str]:
        """The keys of the NPC's state one choice of the agenda reads."""
        read: list[str] = []
        original = AttributeState.get

        def counting(state, key):
            read.append(key)
            return original(state, key)

        with mock.patch.object(AttributeState, "get", counting), override_settings(**settings):
            Agenda(self.npc, 1).choose()
        return read

    def test_no_routine_costs_one_read(self):
        self.npc.ai.set(ROUTINE, {"slots": []})
        with_routines = self.reads(EVENNIA_AI_ROUTINES=True)
        without = self.reads(EVENNIA_AI_ROUTINES=False)
        assert with_routines.count("routine") == 1 and "routine" not in without
        assert sorted(with_routines) == sorted(without + ["routine"])


class TestStatusAndChanges(RoutineTestBase):
    def test_status_says_what_it_does_now_and_next(self):
        known = routines.status(self.npc)
        assert known.state == "off" and known.now is None and known.next is None
        self.set_routine(BAKER)
        self.at("12:30")
        known = routines.status(self.npc)  # read from the clock, before any tick
        assert (known.slot, known.doing, known.until) == (
            "11:00-15:00",
            "selling bread at the stall",
            "15:00",
        )
        assert known.now.room_key == "Market" and known.next.room_key == "Tavern"
        assert known.next_slot == "15:00-20:00 having a drink"
        assert known.open_for_trade == (True, "")
        self.at("16:00")
        assert routines.status(self.npc).open_for_trade == (
            False,
            "having a drink until 20:00; trading again from 05:00",
        )
        with override_settings(EVENNIA_AI_ROUTINES=False):
            assert routines.status(self.npc).words() == "off: routines are off"

    def test_a_step_a_hook_refuses_is_tried_again_a_minute_later(self):
        self.set_routine(BAKER)
        self.at("11:00")
        refusals = {"left": 1}
        original = self.npc.at_pre_move

        def at_pre_move(destination, **kwargs):
            if refusals["left"]:
                refusals["left"] -= 1
                self.npc.msg("Your apron is caught on a nail.")
                return False
            return original(destination, **kwargs)

        self.npc.at_pre_move = at_pre_move
        self.addCleanup(self.npc.__dict__.pop, "at_pre_move", None)
        self.tick()
        known = routines.status(self.npc)
        assert self.where() == "Bakery" and known.state == "unreachable"
        assert "Your apron is caught on a nail." in known.why
        self.tick()
        assert self.where() == "Bakery"  # not hammered every tick
        known.planned_at -= routines.REPLAN_SECONDS
        self.tick()
        assert self.where() == "Street"

    def test_moved_off_its_route_it_plans_again_from_where_it_stands(self):
        self.set_routine(BAKER)
        self.at("11:00")
        self.tick()
        assert self.where() == "Street"
        self.npc.location = self.rooms["Loft"]  # staff (or an autonomous move) took it away
        self.ticks(3)
        assert self.where() == "Market"  # Loft - Bakery - Street - Market, exit by exit

    def test_a_slot_whose_room_staff_changed_is_walked_to_anew(self):
        self.set_routine(BAKER)
        self.at("11:00")
        self.tick()
        assert self.where() == "Street"
        self.set_routine(BAKER.replace("11:00-15:00 Market", "11:00-15:00 Tavern"))
        self.tick()
        assert self.where() == "Tavern"

    def test_a_calendar_that_cannot_split_a_day_turns_routines_off_with_one_log_line(self):
        self.set_routine(BAKER)
        self.at("11:00")
        routines._CALENDAR_LOGGED.clear()
        units = {"min": 60, "hour": 3500, "day": 86400}
        with (
            override_settings(TIME_UNITS=units),
            mock.patch.object(routines.logger, "log_err") as logged,
        ):
            self.ticks(3)
            checked = routines.check(self.npc, BAKER)
        assert self.where() == "Bakery"
        assert len(logged.call_args_list) == 1 and "routines are off" in logged.call_args[0][0]
        assert routines.status(self.npc).state == "off"
        assert checked.problems[0].startswith("Routines are off in this game: TIME_UNITS gives")


class TestRestockingAtTicks(RoutineTestBase):
    """A shop's restock rules run at its ticks, with or without a routine, with no model
    call and a bounded spawn per tick."""

    def setUp(self):
        super().setUp()
        nails_prototype()
        goods, problems = parse_goods(
            "sell proto:iron_nails 1\nrestock proto:iron_nails keep 25 every 6h"
        )
        assert problems == []
        self.npc.ai.set(GOODS, to_state(goods))
        self.at("01:00")

    def nails(self) -> list:
        return [obj for obj in self.npc.contents if obj.key == "iron nail"]

    def test_a_shop_restocks_at_its_ticks_bounded_with_no_model_call(self):
        counts = []
        for _ in range(4):
            self.tick()
            counts.append(len(self.nails()))
        assert counts == [10, 20, 25, 25]  # RESTOCK_PER_TICK a tick, then full
        for nail in self.nails()[:5]:
            nail.delete()  # sold, say
        self.at("06:59")
        self.tick()
        assert len(self.nails()) == 20  # not due before six game hours
        self.at("07:00")
        self.tick()
        assert len(self.nails()) == 25
        assert self.server.requests == []

    def test_an_npc_with_a_routine_restocks_too_while_it_walks(self):
        self.set_routine(BAKER)
        self.at("11:00")
        self.tick()
        assert self.where() == "Street" and len(self.nails()) == 10

    def test_unreadable_goods_restock_nothing(self):
        self.npc.ai.set(GOODS, {"closed": True})
        self.ticks(2)
        assert self.nails() == [] and self.npc.ai.ledger["entries"] == []

    def test_a_failed_spawn_is_logged_and_tried_again_a_minute_later(self):
        start = time.time()
        with (
            mock.patch.object(
                stock.spawner, "spawn", side_effect=KeyError("no prototype")
            ) as spawn,
            mock.patch.object(routines.time, "time", return_value=start),
        ):
            self.tick()
            self.tick()
            assert spawn.call_count == 1  # not hammered every tick
        later = start + routines.RESTOCK_RETRY_SECONDS
        with (
            mock.patch.object(
                stock.spawner, "spawn", side_effect=KeyError("no prototype")
            ) as spawn,
            mock.patch.object(routines.time, "time", return_value=later),
        ):
            self.tick()
            assert spawn.call_count == 1
        with mock.patch.object(routines.time, "time", return_value=later + 60.0):
            self.tick()
        assert len(self.nails()) == 10

    def test_a_tick_with_nothing_due_reads_neither_goods_nor_ledger(self):
        self.ticks(3)
        assert len(self.nails()) == 25
        self.tick()  # plans: the rule is due again six game hours later
        with mock.patch.object(stock, "restock_due", wraps=stock.restock_due) as looked:
            self.ticks(3)
            self.at("06:59")
            self.tick()
            assert looked.call_count == 0
            self.at("07:00")
            self.tick()
            assert looked.call_count == 1

    def test_new_goods_are_looked_at_by_the_next_tick(self):
        self.ticks(4)  # full, and planned six game hours ahead
        protlib.create_prototype({"prototype_key": "rope", "key": "rope"})
        world_controls.set_goods(
            self.npc,
            "restock proto:iron_nails keep 25 every 6h\nrestock proto:rope keep 2 every 6h",
        )
        self.tick()
        assert [obj.key for obj in self.npc.contents].count("rope") == 2

    def test_a_lasting_error_is_logged_once_and_waits(self):
        start = time.time()
        with (
            mock.patch.object(stock, "restock_due", side_effect=RuntimeError("bad")) as due,
            mock.patch.object(routines.logger, "log_trace") as logged,
        ):
            for moment in (start, start + 1, start + 61, start + 122):
                with mock.patch.object(routines.time, "time", return_value=moment):
                    self.tick()
            assert due.call_count == 3 and logged.call_count == 1

    def test_restocking_by_staff_is_capped_and_says_what_is_left(self):
        goods, _ = parse_goods(
            "sell proto:iron_nails 1\nrestock proto:iron_nails keep 250 every 6h"
        )
        self.npc.ai.set(GOODS, to_state(goods))
        text = world_controls.restock_now(self.npc)
        assert len(self.nails()) == world_controls.RESTOCK_NOW_MOST
        assert "still short: proto:iron_nails (150 missing)" in text


class TestUnreadableRoutine(RoutineTestBase):
    """A routine that cannot be read: the NPC walks nowhere and its shop is closed (the
    strictest value), and aistatus says so."""

    def test_a_routine_with_an_unreadable_slot_walks_nowhere_and_closes_the_shop(self):
        self.set_routine(BAKER)
        stored = self.npc.ai.routine
        stored["slots"][0]["start"] = "25:00"  # a hand edit (the schema passes it) of the
        # Bakery's slot: without the rule it would walk to the Market's, which reads well
        self.npc.ai.set(ROUTINE, stored)
        self.at("11:00")
        self.ticks(2)
        assert self.where() == "Bakery"
        known = routines.status(self.npc)
        assert known.state == "off" and known.why.startswith(routines.UNREADABLE_STATUS)
        assert known.open_for_trade == (False, UNREADABLE_CLOSED)
        assert trade.closed_now(self.npc.ai.routine) == UNREADABLE_CLOSED
        assert self.server.requests == []

    def test_the_strictest_value_of_a_routine_set_aside_closes_the_shop(self):
        marked = {"slots": [], "unreadable": True}
        assert trade.closed_now(marked) == UNREADABLE_CLOSED
        assert trade.closed_now({"slots": []}) is None  # no routine: open at any time
        self.npc.ai.set(ROUTINE, marked)
        assert routines.current(self.npc) is None
        assert routines.status(self.npc).open_for_trade == (False, UNREADABLE_CLOSED)

    def test_routines_off_or_a_bad_calendar_is_decided_in_one_place(self):
        self.set_routine(BAKER)
        self.at("16:00")  # having a drink: closed
        assert trade.closed_now(self.npc.ai.routine) is not None
        with mock.patch.object(clock, "routine_calendar", return_value=(None, "off")):
            assert trade.closed_now(self.npc.ai.routine) is None
            assert routines.current(self.npc) is None

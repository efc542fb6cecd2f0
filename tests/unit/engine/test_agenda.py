"""engine/agenda: the decision of what a tick does, in isolation (a fake NPC, no database).

The agenda returns a :class:`TickDecision` and writes only the NPC's own state: the "run
again" flag and the autonomous time travel in the decision, for the Script to keep (the tick
used to write them on ``script.ndb`` itself).
"""

from __future__ import annotations

import ast
import copy
import inspect
import time
from dataclasses import FrozenInstanceError
from datetime import timedelta

import pytest
from django.test import override_settings

from evennia_ai.engine import agenda as agenda_module
from evennia_ai.engine.agenda import Agenda, TickDecision
from evennia_ai.memory import events as ev
from evennia_ai.memory.events import Event
from evennia_ai.utils import iso_utc, today, utcnow

#: Idle work without a room to look at: no audience needed, no count or importance.
QUIET = {
    "EVENNIA_AI_IDLE_NEEDS_AUDIENCE": False,
    "EVENNIA_AI_AUTONOMY": False,
    "EVENNIA_AI_AUTONOMOUS_MIN_INTERVAL": 0,
    "EVENNIA_AI_REFLECTION_INTERVAL": 0,
    "EVENNIA_AI_REFLECTION_IMPORTANCE_THRESHOLD": 0,
    "EVENNIA_AI_WAKE_WHEN_ADDRESSED": True,
    "EVENNIA_AI_SLEEP_SCHEDULE": None,
}


class FakeAI:
    """An NPC's handler as the agenda reads and writes it; writes are kept in order."""

    def __init__(self, **state):
        self.state = {
            "sleep": {},
            "event_queue": ev.empty_queue(),
            "compaction": {},
            "reflection": {},
            "goals": [],
            "journal": [],
            "history": [],
            "model": None,
            "routine": {"slots": []},
            "goods": {},  # no restock rules: the tick's restocking reads only this
        }
        self.state.update(state)
        self.writes: list[str] = []

    def __getattr__(self, name):
        state = self.__dict__.get("state", {})
        if name in state:
            return copy.deepcopy(state[name])
        raise AttributeError(name)

    def set(self, key, value, *, lazy=False):
        self.writes.append(key)
        self.state[key] = copy.deepcopy(value)

    def update(self, key, change):
        self.set(key, change(copy.deepcopy(self.state[key])))


class FakeNPC:
    def __init__(self, ai):
        self.ai = ai
        self.key = "Innkeeper"
        self.location = None


def queue_of(*texts, addressed=True) -> dict:
    queue = ev.empty_queue()
    for text in texts:
        event = Event.create("say", text, source="#5", source_name="Alice", addressed=addressed)
        queue, _dropped = ev.push(queue, event, 50)
    return queue


def choose(ai, tick_count=0, last_autonomous=None, **settings) -> TickDecision:
    with override_settings(**{**QUIET, **settings}):
        return Agenda(FakeNPC(ai), tick_count, last_autonomous).choose()


def test_nothing_to_do_is_an_idle_decision_and_writes_nothing():
    ai = FakeAI()
    decision = choose(ai)
    assert decision == TickDecision(None) and decision.idle
    assert not decision.run_again and decision.autonomous_at is None
    assert ai.writes == []


def test_events_are_chosen_and_marked_in_flight():
    ai = FakeAI(event_queue=queue_of("Innkeeper, an ale please."))
    decision = choose(ai)
    assert decision.context_type == "tick_event" and not decision.idle
    assert [e.text for e in decision.batch] == ["Innkeeper, an ale please."]
    assert ai.writes == ["event_queue"]
    assert ev.in_flight_events(ai.state["event_queue"])  # written back as in flight
    assert not decision.run_again


def test_an_emergency_compaction_goes_first_and_asks_for_another_tick_at_once():
    ai = FakeAI(event_queue=queue_of("Hello?"), compaction={"pending": True, "reason": "emergency"})
    decision = choose(ai)
    assert decision == TickDecision("pre_compaction", run_again=True)
    assert "event_queue" not in ai.writes  # the events stay queued for the next tick


def test_a_sleep_compaction_waits_for_the_events_and_runs_alone_when_quiet():
    pending = {"pending": True, "reason": "sleep"}
    assert choose(FakeAI(event_queue=queue_of("Hi"), compaction=pending)).context_type == (
        "tick_event"
    )
    assert choose(FakeAI(compaction=pending)) == TickDecision("pre_compaction")


def test_reflection_asked_for_then_continued():
    assert choose(FakeAI(reflection={"requested": True})) == TickDecision("reflection")
    assert choose(FakeAI(reflection={"continue": True})) == TickDecision("reflection_cont")


def test_reflection_by_tick_count_uses_the_count_given():
    ai = FakeAI(reflection={"last_tick": 5})
    assert choose(ai, tick_count=9, EVENNIA_AI_REFLECTION_INTERVAL=5).idle
    assert choose(ai, tick_count=10, EVENNIA_AI_REFLECTION_INTERVAL=5).context_type == (
        "reflection"
    )


def test_autonomy_carries_when_it_was_chosen_and_waits_its_interval_from_it():
    ai = FakeAI(goals=[{"id": "g1", "status": "active", "description": "Sweep"}])
    before = time.time()
    decision = choose(ai, EVENNIA_AI_AUTONOMY=True)
    assert decision.context_type == "tick_autonomous"
    assert before <= decision.autonomous_at <= time.time()
    assert ai.writes == []  # the time is the Script's to keep, not written by the agenda
    waiting = choose(
        ai,
        last_autonomous=decision.autonomous_at,
        EVENNIA_AI_AUTONOMY=True,
        EVENNIA_AI_AUTONOMOUS_MIN_INTERVAL=3600,
    )
    assert waiting.idle and waiting.autonomous_at is None


def test_no_autonomy_without_active_goals():
    ai = FakeAI(goals=[{"id": "g1", "status": "completed"}])
    assert choose(ai, EVENNIA_AI_AUTONOMY=True).idle


def test_asleep_with_nothing_to_fold_rests_after_skipping_the_phases():
    ai = FakeAI(sleep={"asleep": True, "phase": "sleep_consolidate", "reason": "tired"})
    assert choose(ai).idle
    assert ai.state["sleep"]["phase"] == "rest"
    assert ai.writes == ["sleep", "sleep"]  # each skipped phase advanced once


def test_asleep_with_a_journal_consolidates():
    ai = FakeAI(
        sleep={"asleep": True, "phase": "sleep_consolidate", "reason": "tired"},
        journal=[{"content": "Sold three ales.", "ts": iso_utc()}],
    )
    assert choose(ai) == TickDecision("sleep_consolidate")


def test_asleep_and_addressed_wakes_for_the_event():
    ai = FakeAI(
        sleep={"asleep": True, "phase": "rest", "reason": "tired"}, event_queue=queue_of("Wake!")
    )
    decision = choose(ai)
    assert decision.context_type == "tick_event"
    assert ai.state["sleep"]["asleep"] is False and ai.state["sleep"]["reason"] == "addressed"


def test_asleep_and_addressed_sleeps_on_when_waking_is_off():
    ai = FakeAI(
        sleep={"asleep": True, "phase": "rest", "reason": "tired"}, event_queue=queue_of("Psst")
    )
    assert choose(ai, EVENNIA_AI_WAKE_WHEN_ADDRESSED=False).idle
    assert "event_queue" not in ai.writes


def test_a_sleep_whose_time_is_up_ends():
    past = iso_utc(utcnow() - timedelta(minutes=1))
    ai = FakeAI(sleep={"asleep": True, "phase": "rest", "reason": "tired", "until": past})
    assert choose(ai).idle
    assert ai.state["sleep"]["asleep"] is False
    assert ai.state["sleep"]["reason"] == "window ended"


def test_the_decision_is_a_value():
    decision = TickDecision("tick_event")
    with pytest.raises(FrozenInstanceError):
        decision.run_again = True  # type: ignore[misc]


def test_the_agenda_is_not_given_the_script():
    """It cannot write the Script's flags: it is handed the two figures it reads."""
    parameters = list(inspect.signature(Agenda).parameters)
    assert parameters == ["npc", "tick_count", "last_autonomous"]
    tree = ast.parse(inspect.getsource(agenda_module))
    names = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    names |= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    assert "script" not in names and "ndb" not in names


# -- players first, across the NPCs of a room (issue 34) ------------------------------------------
def npc_lines(*texts, players=()) -> dict:
    """A queue of other AI NPCs' lines (``from_assistant``), plus ``players``' lines."""
    queue = ev.empty_queue()
    for text in texts:
        event = Event.create(
            "say",
            text,
            source="#7",
            source_name="Bard",
            addressed=True,
            priority=ev.PRIORITY_ADDRESSED_BY_NPC,
            data={"from_assistant": True, "floor": "named by Bard"},
        )
        queue, _dropped = ev.push(queue, event, 50)
    for text in players:
        event = Event.create("say", text, source="#5", source_name="Alice", addressed=True)
        queue, _dropped = ev.push(queue, event, 50)
    return queue


def test_an_npc_only_batch_waits_unwritten_while_a_player_waits_elsewhere(monkeypatch):
    asked = []

    def player_waiting(npc):
        asked.append(npc)
        return True

    monkeypatch.setattr(agenda_module.floor, "player_waiting", player_waiting)
    ai = FakeAI(event_queue=npc_lines("Innkeeper, a song?", "Innkeeper, two songs?"))
    decision = choose(ai)
    assert decision == TickDecision(None) and decision.idle
    assert ai.writes == []  # still pending, not in flight: a later tick takes it
    assert len(ev.pending_events(ai.state["event_queue"])) == 2
    assert [npc.key for npc in asked] == ["Innkeeper"]
    monkeypatch.setattr(agenda_module.floor, "player_waiting", lambda npc: False)
    decision = choose(ai)
    assert decision.context_type == "tick_event" and len(decision.batch) == 2


def test_a_batch_with_a_players_line_never_waits(monkeypatch):
    monkeypatch.setattr(agenda_module.floor, "player_waiting", lambda npc: True)
    ai = FakeAI(event_queue=npc_lines("Innkeeper, a song?", players=["Innkeeper, an ale!"]))
    decision = choose(ai)
    assert decision.context_type == "tick_event"
    assert ev.main_event(list(decision.batch)).source_name == "Alice"  # the player's, first
    ai = FakeAI(event_queue=queue_of("Hello?"))
    assert choose(ai).context_type == "tick_event"


# -- consolidations per real day (issue 36) -------------------------------------------------------
def test_a_consolidation_already_made_today_is_skipped_and_the_npc_rests():
    journal = [{"content": "Sold three ales.", "ts": iso_utc()}]
    done = {"day": today(), "count": 1}
    ai = FakeAI(
        sleep={
            "asleep": True,
            "phase": "sleep_consolidate",
            "reason": "tired",
            "consolidated": done,
        },
        journal=journal,
    )
    assert choose(ai).idle  # sleeps on, with no consolidation call
    assert ai.state["sleep"]["phase"] == "rest"
    yesterday = {"day": "2000-01-01", "count": 5}
    ai = FakeAI(
        sleep={
            "asleep": True,
            "phase": "sleep_consolidate",
            "reason": "tired",
            "consolidated": yesterday,
        },
        journal=journal,
    )
    assert choose(ai) == TickDecision("sleep_consolidate")


def test_consolidations_per_day_none_is_the_old_behaviour():
    ai = FakeAI(
        sleep={
            "asleep": True,
            "phase": "sleep_consolidate",
            "reason": "tired",
            "consolidated": {"day": today(), "count": 40},
        },
        journal=[{"content": "Sold three ales.", "ts": iso_utc()}],
    )
    assert choose(ai, EVENNIA_AI_CONSOLIDATIONS_PER_DAY=None) == TickDecision("sleep_consolidate")
    assert choose(ai, EVENNIA_AI_CONSOLIDATIONS_PER_DAY=41) == TickDecision("sleep_consolidate")


def test_routines_off_or_empty_cost_no_more_than_the_routine_read():
    ai = FakeAI(routine={"slots": []})
    assert choose(ai) == TickDecision(None) and ai.writes == []
    assert choose(ai, EVENNIA_AI_ROUTINES=False) == TickDecision(None)


def test_a_sleep_staff_asked_for_consolidates_past_the_days_cap():
    ai = FakeAI(
        sleep={
            "asleep": True,
            "phase": "sleep_consolidate",
            "reason": "operator",  # aisleep/now
            "consolidated": {"day": today(), "count": 1},
        },
        journal=[{"content": "Sold three ales.", "ts": iso_utc()}],
    )
    assert choose(ai) == TickDecision("sleep_consolidate")

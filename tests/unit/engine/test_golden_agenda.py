"""Golden agenda: which tick the demo Innkeeper's Script runs next, in a table of situations.

``python -m evennia_ai.engine.replay`` rebuilds the requests of recorded ticks, but not the
choice of what a tick does. These tests pin that choice as the game sees it: the Script's own
entry (``script.run_tick()``, what its timer and speech call) runs the next ticks, and each is
read as :class:`Chosen`: the context type of its trace (None when there was nothing to do), and
whether the Script was asked to tick again at once.

Every situation of :data:`SITUATIONS` starts from the benchmarks' Innkeeper (``bench/tick.py``:
persona, operator prompt, three active goals, a 50-message history, 20 journal entries, 10
known people, the player Alice connected in the room), arranges the state it names, and lists
the ticks expected in order. The model is the built-in offline one (no network): what it
answers does not matter here, only what was chosen. Nothing private to the tick runner is
called; the one place that knows how a tick is run and read is :func:`next_tick`.

The table is the golden record: a change in which tick is chosen must change a row of it, in
the same commit, with its reason.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Callable
from unittest import mock

from django.test import override_settings
from evennia.objects.objects import DefaultCharacter
from evennia.utils.create import create_object
from evennia.utils.test_resources import BaseEvenniaTestCase
from twisted.internet import defer
from unit.engine.test_golden_requests import calls_in_this_thread

from evennia_ai import scripts  # noqa: F401  (the tick and what it uses, imported first)
from evennia_ai.engine import audience
from evennia_ai.engine.trace import StopReason
from evennia_ai.memory import events as ev
from evennia_ai.memory import longterm
from evennia_ai.memory.longterm import ConsolidationResult
from evennia_ai.utils import iso_utc, today, utcnow
from evennia_ai.workspace.sleep import go_to_sleep

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from bench.tick import _innkeeper  # noqa: E402


def patch_everywhere(original, replacement) -> list:
    """Patches that put ``replacement`` wherever a module of the plugin holds ``original``.

    Found by identity in every loaded ``evennia_ai`` module (the tick and what it uses are
    imported above, before any patch), so the patch follows a function a refactor moves or
    imports by name elsewhere.
    """
    return [
        mock.patch.object(module, name, replacement)
        for module_name, module in list(sys.modules.items())
        if module_name.split(".")[0] == "evennia_ai" and module is not None
        for name, value in list(vars(module).items())
        if value is original
    ]


@dataclass(frozen=True)
class Chosen:
    """What one run of the Script's tick did.

    Attributes:
        context_type: The tick's context type; None when the Script found nothing to do.
        again: Whether the Script was asked to run another tick at once (not at its interval).
        silenced: Whether the tick called no model for being past a daily budget (``silence``
            or ``message`` mode; its trace stops with ``budget``).
    """

    context_type: str | None
    again: bool = False
    silenced: bool = False


def next_tick(script) -> Chosen:
    """Run ``script``'s next tick as its timer does, and read what it chose.

    The one place that knows how a tick is started and read: a refactor of the tick changes
    this function, not the table.
    """
    asked: list[bool] = []
    script.trigger_tick = lambda: asked.append(True)  # what the Script does to tick again
    d = script.run_tick()
    trace = None
    if d is not None:
        assert d.called, "the tick did not finish synchronously"
        trace = d.result
    if trace is None:
        return Chosen(None, again=bool(asked))
    return Chosen(
        trace.context_type,
        again=bool(asked),
        silenced=trace.stop_reason == StopReason.BUDGET.value,
    )


# -- what the situations arrange -----------------------------------------------------------------
def say(case, text="Innkeeper, a mug of ale please."):
    """Alice speaks to the Innkeeper (an addressed line)."""
    case.player.at_say(text)


def overheard(case):
    """Alice speaks to Bob, who stands beside her: the Innkeeper hears a line not meant for it."""
    bob = create_object(DefaultCharacter, key="Bob", location=case.room, home=case.room)
    bob.sessions.count = lambda: 1  # connected
    case.player.at_say("Nice weather today, isn't it?")


def no_audience(case):
    """Nobody is within earshot, nor was lately."""
    case.player.sessions.count = lambda: 0
    audience.forget_audience(case.npc)


def goals_done(case):
    case.npc.ai.update_goals(lambda goals: [{**g, "status": "completed"} for g in goals])


def reflection(case, **values):
    case.npc.ai.update("reflection", lambda state: {**state, **values})


def compaction(case, reason):
    case.npc.ai.set("compaction", {"pending": True, "reason": reason, "last_tick": None})


def asleep(case, **values):
    """Asleep (the ``go_to_sleep`` tool's way), then ``values`` set in the sleep state."""
    go_to_sleep(case.npc, "tired")
    if values:
        case.npc.ai.update("sleep", lambda state: {**state, **values})


def window_around_now(hours: int = 1) -> tuple[str, str]:
    """A daily sleep window (server local time) that holds the present moment."""
    now = datetime.now()
    return (
        (now - timedelta(hours=hours)).strftime("%H:%M"),
        (now + timedelta(hours=hours)).strftime("%H:%M"),
    )


def window_not_now() -> tuple[str, str]:
    """A daily sleep window (server local time) that does not hold the present moment."""
    now = datetime.now()
    return (
        (now + timedelta(hours=2)).strftime("%H:%M"),
        (now + timedelta(hours=4)).strftime("%H:%M"),
    )


def spent_today(case, tokens=1000):
    case.npc.ai.update(
        "metrics", lambda m: {**m, "daily": {today(): {"tokens": tokens, "cost": 0.0}}}
    )


@dataclass(frozen=True)
class Situation:
    """One row of the golden table.

    Attributes:
        name: What the situation is (the test's name).
        arrange: What is done to the Innkeeper before its ticks (takes the test case).
        ticks: The ticks expected, in order, one :class:`Chosen` each.
        settings: Settings for the situation, over :data:`BASE_SETTINGS`.
        then: A last check on the test case after the ticks (what stayed queued, say).
        clock_settings: Settings made when the test runs (a sleep window around the clock).
    """

    name: str
    arrange: Callable
    ticks: tuple[Chosen, ...]
    settings: dict = field(default_factory=dict)
    then: Callable | None = None
    clock_settings: Callable | None = None


def queued(case) -> int:
    return len(ev.pending_events(case.npc.ai.event_queue))


def nothing(case):
    pass


IDLE = Chosen(None)
EVENT = Chosen("tick_event")
AUTONOMOUS = Chosen("tick_autonomous")
REFLECTION = Chosen("reflection")
CONSOLIDATE = Chosen("sleep_consolidate")
COMPACTION = Chosen("pre_compaction")
SILENCED_EVENT = Chosen("tick_event", silenced=True)

#: Settings of every situation: no autonomy, no reflection by count or importance.
BASE_SETTINGS = {
    "EVENNIA_AI_MODEL": "",  # the offline model
    "EVENNIA_AI_AUTONOMY": False,
    "EVENNIA_AI_AUTONOMOUS_MIN_INTERVAL": 0,
    "EVENNIA_AI_REFLECTION_INTERVAL": 0,
    "EVENNIA_AI_REFLECTION_IMPORTANCE_THRESHOLD": 0,
    "EVENNIA_AI_SPEAKER_EVENTS_PER_MINUTE": 0,
    "EVENNIA_AI_WAKE_WHEN_ADDRESSED": True,
    "EVENNIA_AI_SLEEP_SCHEDULE": None,
}
AUTONOMY = {"EVENNIA_AI_AUTONOMY": True}
#: A daily limit that :func:`spent_today` passes.
OVER_BUDGET = {"EVENNIA_AI_DAILY_TOKEN_BUDGET_PER_NPC": 100}


# -- what the situations check after their ticks ------------------------------------------------
def none_queued(case):
    assert not queued(case), "an answered line stayed in the queue"


def one_queued(case):
    assert queued(case) == 1, "the line was not kept for later"


def awake(case):
    assert not case.npc.ai.sleep.get("asleep"), "the Innkeeper is still asleep"


def asleep_by_schedule(case):
    sleep = case.npc.ai.sleep
    assert sleep.get("asleep") and sleep.get("reason") == "scheduled", sleep


SITUATIONS = (
    # -- nothing, events ------------------------------------------------------------------------
    Situation("nothing_to_do", nothing, (IDLE,)),
    Situation("events_pending", say, (EVENT, IDLE), then=none_queued),
    # -- autonomy -------------------------------------------------------------------------------
    Situation("active_goals_with_autonomy", nothing, (AUTONOMOUS,), AUTONOMY),
    Situation("active_goals_without_autonomy", nothing, (IDLE,)),
    Situation(
        "autonomy_waits_its_interval",
        nothing,
        (AUTONOMOUS, IDLE),
        {**AUTONOMY, "EVENNIA_AI_AUTONOMOUS_MIN_INTERVAL": 3600},
    ),
    Situation("autonomy_without_active_goals", goals_done, (IDLE,), AUTONOMY),
    Situation("autonomy_without_audience", no_audience, (IDLE,), AUTONOMY),
    Situation(
        "autonomy_without_audience_when_none_is_needed",
        no_audience,
        (AUTONOMOUS,),
        {**AUTONOMY, "EVENNIA_AI_IDLE_NEEDS_AUDIENCE": False},
    ),
    Situation("events_before_autonomy", say, (EVENT, AUTONOMOUS), AUTONOMY),
    # -- reflection -----------------------------------------------------------------------------
    Situation("reflection_requested", lambda c: reflection(c, requested=True), (REFLECTION,)),
    Situation(
        "reflection_due_by_tick_count",
        lambda c: c.script.state.set("tick_count", 10),
        (REFLECTION,),
        {"EVENNIA_AI_REFLECTION_INTERVAL": 5},
    ),
    Situation(
        "reflection_due_by_journal_importance",
        nothing,
        (REFLECTION,),
        {"EVENNIA_AI_REFLECTION_IMPORTANCE_THRESHOLD": 20},
    ),
    Situation(
        "reflection_not_due_below_the_importance_threshold",
        nothing,
        (IDLE,),
        {"EVENNIA_AI_REFLECTION_IMPORTANCE_THRESHOLD": 10_000},
    ),
    Situation(
        "reflection_continues",
        lambda c: reflection(c, **{"continue": True}),
        (Chosen("reflection_cont"), IDLE),
    ),
    Situation(
        "reflection_requested_runs_without_an_audience",
        lambda c: (reflection(c, requested=True), no_audience(c)),
        (REFLECTION,),
    ),
    Situation(
        "reflection_due_waits_for_an_audience",
        lambda c: (c.script.state.set("tick_count", 10), no_audience(c)),
        (IDLE,),
        {"EVENNIA_AI_REFLECTION_INTERVAL": 5},
    ),
    Situation(
        "reflection_due_without_an_audience_when_none_is_needed",
        lambda c: (c.script.state.set("tick_count", 10), no_audience(c)),
        (REFLECTION,),
        {"EVENNIA_AI_REFLECTION_INTERVAL": 5, "EVENNIA_AI_IDLE_NEEDS_AUDIENCE": False},
    ),
    Situation(
        "events_before_reflection",
        lambda c: (reflection(c, requested=True), say(c)),
        (EVENT, REFLECTION),
    ),
    Situation(
        "reflection_before_autonomy",
        lambda c: reflection(c, requested=True),
        (REFLECTION,),
        AUTONOMY,
    ),
    # -- sleep ----------------------------------------------------------------------------------
    Situation("asleep_after_a_day", asleep, (CONSOLIDATE, IDLE)),
    Situation(
        "asleep_with_a_compaction_pending",
        lambda c: (asleep(c), compaction(c, "sleep")),
        (CONSOLIDATE, COMPACTION, IDLE),
    ),
    Situation(
        "asleep_with_nothing_new_since_the_last_sleep",
        lambda c: asleep(c, last_consolidated=iso_utc(utcnow() + timedelta(hours=1))),
        (IDLE,),
    ),
    Situation(
        "asleep_nothing_new_but_a_compaction_pending",
        lambda c: (
            asleep(c, last_consolidated=iso_utc(utcnow() + timedelta(hours=1))),
            compaction(c, "sleep"),
        ),
        (COMPACTION, IDLE),
    ),
    Situation("asleep_resting_ignores_goals", lambda c: asleep(c, phase="rest"), (IDLE,), AUTONOMY),
    Situation(
        "asleep_and_addressed_wakes",
        lambda c: (asleep(c, phase="rest"), say(c)),
        (EVENT,),
        then=awake,
    ),
    Situation(
        "asleep_and_addressed_sleeps_on_when_waking_is_off",
        lambda c: (asleep(c, phase="rest"), say(c)),
        (IDLE,),
        {"EVENNIA_AI_WAKE_WHEN_ADDRESSED": False},
        then=one_queued,
    ),
    Situation(
        "asleep_and_overheard_sleeps_on",
        lambda c: (asleep(c, phase="rest"), overheard(c)),
        (IDLE,),
        then=none_queued,  # the room's floor gives a sleeper no line it is not named in
    ),
    Situation(
        "events_pending_while_asleep_in_a_sleep_phase",
        lambda c: (asleep(c), say(c)),
        (EVENT,),
        then=awake,
    ),
    Situation(
        "asleep_until_a_time_past_wakes",
        lambda c: (
            asleep(c, phase="rest", until=iso_utc(utcnow() - timedelta(minutes=1))),
            say(c),
        ),
        (EVENT,),
        {"EVENNIA_AI_WAKE_WHEN_ADDRESSED": False},
        then=awake,
    ),
    Situation(
        "in_the_sleep_window_falls_asleep",
        nothing,
        (CONSOLIDATE, IDLE),
        clock_settings=lambda: {"EVENNIA_AI_SLEEP_SCHEDULE": window_around_now()},
        then=asleep_by_schedule,
    ),
    Situation(
        "in_the_sleep_window_events_wait",
        say,
        (CONSOLIDATE,),
        {"EVENNIA_AI_WAKE_WHEN_ADDRESSED": False},
        clock_settings=lambda: {"EVENNIA_AI_SLEEP_SCHEDULE": window_around_now()},
        then=one_queued,
    ),
    Situation(
        "in_the_sleep_window_addressed_wakes_for_the_night",
        say,
        (CONSOLIDATE, EVENT, IDLE),
        then=awake,
        clock_settings=lambda: {"EVENNIA_AI_SLEEP_SCHEDULE": window_around_now()},
    ),
    Situation(
        "in_the_sleep_window_after_a_wake_up_stays_awake",
        lambda c: (c.npc.ai.set("sleep", {"woken_in_window": True}), say(c)),
        (EVENT, IDLE),
        clock_settings=lambda: {"EVENNIA_AI_SLEEP_SCHEDULE": window_around_now()},
    ),
    Situation(
        "scheduled_sleep_ends_with_its_window",
        lambda c: (asleep(c, phase="rest", reason="scheduled"), say(c)),
        (EVENT,),
        {"EVENNIA_AI_WAKE_WHEN_ADDRESSED": False},
        then=awake,
        clock_settings=lambda: {"EVENNIA_AI_SLEEP_SCHEDULE": window_not_now()},
    ),
    # -- compaction -----------------------------------------------------------------------------
    Situation("compaction_pending", lambda c: compaction(c, "sleep"), (COMPACTION, IDLE)),
    Situation(
        "compaction_pending_waits_for_events",
        lambda c: (compaction(c, "sleep"), say(c)),
        (EVENT, COMPACTION),
    ),
    Situation(
        "emergency_compaction_goes_before_events_and_ticks_again",
        lambda c: (compaction(c, "emergency"), say(c)),
        (Chosen("pre_compaction", again=True), EVENT, IDLE),
    ),
    # -- held -----------------------------------------------------------------------------------
    Situation(
        "paused",
        lambda c: (say(c), c.npc.ai.pause()),
        (IDLE,),
        then=one_queued,
    ),
    Situation(
        "disabled",
        lambda c: (say(c), c.npc.ai.set_enabled(False)),
        (IDLE,),
        AUTONOMY,
    ),
    Situation(
        "budget_exceeded_silence_consumes_the_events",
        lambda c: (spent_today(c), say(c)),
        (SILENCED_EVENT, IDLE),
        {**OVER_BUDGET, "EVENNIA_AI_BUDGET_EXCEEDED_ACTION": "silence"},
        then=none_queued,
    ),
    Situation(
        "budget_exceeded_message_consumes_the_events",
        lambda c: (spent_today(c), say(c)),
        (SILENCED_EVENT, IDLE),
        {**OVER_BUDGET, "EVENNIA_AI_BUDGET_EXCEEDED_ACTION": "message"},
        then=none_queued,
    ),
    Situation(
        "budget_exceeded_silence_idle_work_is_chosen_and_silent",
        spent_today,
        (Chosen("tick_autonomous", silenced=True),),
        {**OVER_BUDGET, **AUTONOMY, "EVENNIA_AI_BUDGET_EXCEEDED_ACTION": "silence"},
    ),
    Situation(
        "unreadable_budget_setting_fails_closed",
        say,
        (SILENCED_EVENT, IDLE),
        {
            "EVENNIA_AI_DAILY_TOKEN_BUDGET_PER_NPC": "lots",
            "EVENNIA_AI_BUDGET_EXCEEDED_ACTION": "silence",
        },
    ),
    Situation(
        "budget_exceeded_offline_still_answers",
        lambda c: (spent_today(c), say(c)),
        (EVENT, IDLE),
        {**OVER_BUDGET, "EVENNIA_AI_BUDGET_EXCEEDED_ACTION": "offline"},
    ),
)


class GoldenAgendaBase(BaseEvenniaTestCase):
    """The benchmarks' Innkeeper with its Script; model and memory calls in this thread."""

    def setUp(self):
        super().setUp()
        patcher = calls_in_this_thread()
        patcher.start()
        self.addCleanup(patcher.stop)
        # Memory consolidation is stored as done: what it stores is not the agenda's business.
        for patcher in patch_everywhere(
            longterm.consolidate, lambda *args, **kwargs: defer.succeed(ConsolidationResult())
        ):
            patcher.start()
            self.addCleanup(patcher.stop)
        self.npc, self.player = _innkeeper()
        self.room = self.npc.location
        self.script = self.npc.ai.script
        self.script.trigger_tick = lambda: None

    def tearDown(self):
        if self.script.pk:
            self.script.stop()  # its timer; the rows go with the test's transaction
        super().tearDown()

    def run_situation(self, situation: Situation) -> None:
        settings = {**BASE_SETTINGS, **situation.settings}
        if situation.clock_settings:
            settings.update(situation.clock_settings())
        with override_settings(**settings):
            situation.arrange(self)
            for number, expected in enumerate(situation.ticks, 1):
                chosen = next_tick(self.script)
                self.assertEqual(
                    expected, chosen, f"{situation.name}: tick {number} chose {chosen}"
                )
            if situation.then:
                situation.then(self)


def _test_for(situation: Situation):
    def test(self):
        self.run_situation(situation)

    test.__name__ = f"test_{situation.name}"
    test.__doc__ = f"Golden agenda: {situation.name.replace('_', ' ')}."
    return test


class TestGoldenAgenda(GoldenAgendaBase):
    def test_every_situation_has_its_own_name(self):
        names = [s.name for s in SITUATIONS]
        assert len(names) == len(set(names))


for _situation in SITUATIONS:
    setattr(TestGoldenAgenda, f"test_{_situation.name}", _test_for(_situation))

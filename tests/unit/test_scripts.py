"""scripts.AssistantScript: it runs ticks without overlap and keeps its own flags, which it sets
from the decision each tick's agenda returns (the tick writes nothing on the Script)."""

from __future__ import annotations

from unittest import mock

from evennia.utils.create import create_object
from evennia.utils.test_resources import BaseEvenniaTest
from twisted.internet import defer

from evennia_ai import scripts
from evennia_ai.engine.agenda import TickDecision
from evennia_ai.typeclasses import AIAssistantCharacter


def runner_deciding(
    decision: TickDecision | None, *, fail: bool = False, started=None, during=None
):
    """A TickRunner stand-in whose agenda chose ``decision`` (and whose tick then fails)."""

    class Runner:
        def __init__(self, script):
            self.script = script
            self.decision = None

        def run(self):
            if started is not None:
                started.append(self.script.ndb.busy)
            if during is not None:
                during(self.script)
            self.decision = decision
            if fail:
                raise RuntimeError("the tick broke")
            return defer.succeed(None)

    return Runner


class ScriptTestBase(BaseEvenniaTest):
    def setUp(self):
        super().setUp()
        self.npc = create_object(AIAssistantCharacter, key="Innkeeper", location=self.room1)
        self.script = self.npc.ai.script
        self.triggered: list[bool] = []
        self.script.trigger_tick = lambda: self.triggered.append(True)

    def tearDown(self):
        if self.npc.pk:
            script = self.npc.ai.script
            if script:
                script.delete()
            self.npc.delete()
        super().tearDown()

    def run_with(self, runner):
        with mock.patch.object(scripts, "TickRunner", runner):
            d = self.script.run_tick()
        assert d is not None and d.called
        return d


class TestTheScriptActsOnTheDecision(ScriptTestBase):
    def test_an_autonomous_tick_leaves_its_time_with_the_script(self):
        self.run_with(runner_deciding(TickDecision("tick_autonomous", autonomous_at=123.5)))
        assert self.script.ndb.last_autonomous == 123.5
        assert not self.triggered and not self.script.ndb.busy

    def test_run_again_starts_the_next_tick_when_this_one_ends(self):
        started: list = []
        self.run_with(
            runner_deciding(TickDecision("pre_compaction", run_again=True), started=started)
        )
        assert started == [True]  # the tick ran under the busy guard
        assert self.triggered == [True] and not self.script.ndb.again
        assert not self.script.ndb.busy

    def test_nothing_to_do_changes_no_flag(self):
        self.script.ndb.last_autonomous = 99.0
        self.run_with(runner_deciding(TickDecision(None)))
        assert self.script.ndb.last_autonomous == 99.0 and not self.triggered

    def test_a_failed_tick_still_keeps_the_decision_and_never_stops_the_script(self):
        decision = TickDecision("tick_autonomous", autonomous_at=7.0, run_again=True)
        with mock.patch.object(scripts.logger, "log_err") as log_err:
            self.run_with(runner_deciding(decision, fail=True))
        assert "the tick broke" in log_err.call_args[0][0]
        assert self.script.ndb.last_autonomous == 7.0 and self.triggered == [True]
        assert not self.script.ndb.busy
        assert self.npc.ai.metrics["last_error"] == "the tick broke"

    def test_a_runner_that_cannot_be_made_fails_the_tick_not_the_script(self):
        def broken(script):
            raise RuntimeError("no runner")

        with mock.patch.object(scripts.logger, "log_err"):
            self.run_with(broken)
        assert not self.script.ndb.busy and self.npc.ai.metrics["last_error"] == "no runner"

    def test_a_trigger_during_a_tick_runs_one_more_after_it(self):
        self.script.ndb.busy = True
        assert self.script.run_tick() is None and self.script.ndb.again
        self.script.ndb.busy = False

        def speech_arrives(script):  # the real trigger, while the tick runs
            scripts.AssistantScript.trigger_tick(script)

        self.run_with(runner_deciding(TickDecision(None), during=speech_arrives))
        assert self.triggered == [True] and not self.script.ndb.busy

"""A model endpoint that stops answering is seen, waited out and healed (issue 35, item 1).

The board's rules alone first (which failures count, when an outage starts and ends, the
notices, the probing rule), then whole ticks against the loopback model server: stopped and
started again (connection refused, as the issue saw it) or answering 500.
"""

from __future__ import annotations

import time
from unittest import mock

from django.test import override_settings
from evennia import create_object
from unit.engine.test_assistant_tick import AssistantTestBase

from evennia_ai.engine import outages
from evennia_ai.engine.outages import BOARD, Endpoint, endpoint_of
from evennia_ai.llm.usage import UsageRecord
from evennia_ai.memory import events as ev
from evennia_ai.testing.model_server import ModelServer
from evennia_ai.typeclasses import AIAssistantCharacter
from evennia_ai.utils import iso_utc, utcnow

MODEL = "openai/test-model"
BASE = "http://127.0.0.1:5100/v1"


def failed(kind: str, model: str = MODEL) -> UsageRecord:
    return UsageRecord(kind="act", model=model, error=f"{kind} failure", error_kind=kind)


def answered(model: str = MODEL) -> UsageRecord:
    return UsageRecord(kind="act", model=model, prompt_tokens=10)


@override_settings(EVENNIA_AI_API_BASE=BASE, EVENNIA_AI_MODEL=MODEL)
class TestBoard(AssistantTestBase):
    def setUp(self):
        super().setUp()
        announce = mock.patch.object(outages.notices, "_announce")
        self.announced = announce.start()
        self.addCleanup(announce.stop)

    def notices(self) -> list[str]:
        return [c.args[0] for c in self.announced.call_args_list]

    def test_n_failures_in_a_row_make_the_endpoint_unreachable_until_one_answers(self):
        BOARD.observe([failed("connection"), failed("timeout")], npc=self.npc)
        assert BOARD.unreachable(MODEL) is None
        BOARD.observe([failed("server")], npc=self.npc)
        health = BOARD.unreachable(MODEL)
        assert health is not None and health.endpoint == Endpoint(MODEL, BASE)
        assert health.describe() == "model unreachable since " + time.strftime(
            "%H:%M UTC", time.gmtime(health.failing_since)
        )
        BOARD.observe([answered()])
        assert BOARD.unreachable(MODEL) is None and not BOARD.failing

    def test_the_count_of_failures_is_a_setting(self):
        with override_settings(EVENNIA_AI_OUTAGE_AFTER_FAILURES=1):
            BOARD.observe([failed("connection")])
        assert BOARD.unreachable(MODEL) is not None

    def test_refused_requests_and_bad_answers_never_start_an_outage(self):
        kinds = ("bad_request", "context_overflow", "auth", "malformed", "empty", "unknown")
        BOARD.observe([failed(kind) for kind in kinds * 3])
        assert not BOARD.failing and BOARD.unreachable(MODEL) is None
        assert self.notices() == []

    def test_a_rate_limit_that_outlasts_the_retries_counts(self):
        BOARD.observe([failed("rate_limit")] * 3)
        assert BOARD.unreachable(MODEL) is not None

    def test_one_notice_when_it_starts_and_one_when_it_ends_per_endpoint_not_per_npc(self):
        cook = create_object(AIAssistantCharacter, key="Cook", location=self.room1)
        self.addCleanup(cook.delete)
        with (
            mock.patch.object(outages.logger, "log_warn") as warn,
            mock.patch.object(outages.logger, "log_info") as info,
        ):
            for _ in range(4):
                BOARD.observe([failed("connection")], npc=self.npc)
                BOARD.observe([failed("connection")], npc=cook)
            BOARD.observe([answered()])
            BOARD.observe([answered()])
        sent = self.notices()
        assert len(sent) == 2, sent
        assert f"{MODEL} at {BASE}: model unreachable since" in sent[0]
        assert "Cook" in sent[0] and "Innkeeper" in sent[0]
        assert f"{MODEL} at {BASE} answers again (unreachable since" in sent[1]
        assert len(warn.call_args_list) == 1 and len(info.call_args_list) == 1
        assert warn.call_args.args[0].startswith(f"evennia_ai: model endpoint {MODEL} at {BASE}")
        assert "is unreachable since" in warn.call_args.args[0]
        assert "answers again" in info.call_args.args[0]

    def test_each_endpoint_has_its_own_health(self):
        other = "openai/other-model"
        with override_settings(
            EVENNIA_AI_MODEL_SETTINGS={other: {"api_base": "http://127.0.0.1:5200/v1"}}
        ):
            BOARD.observe([failed("connection", other)] * 3)
            assert endpoint_of(other) == Endpoint(other, "http://127.0.0.1:5200/v1")
            assert BOARD.unreachable(other) is not None
            assert BOARD.unreachable(MODEL) is None

    def test_while_unreachable_one_tick_probes_every_so_often_and_the_others_wait(self):
        BOARD.observe([failed("connection")] * 3)
        now = time.monotonic()
        with (
            override_settings(EVENNIA_AI_OUTAGE_PROBE_SECONDS=20),
            mock.patch.object(outages.time, "monotonic", return_value=now + 5),
        ):
            assert not BOARD.admits(MODEL)
        with mock.patch.object(outages.time, "monotonic", return_value=now + 21):
            assert BOARD.admits(MODEL)  # the probe
            assert not BOARD.admits(MODEL)  # the next tick waits
        assert BOARD.admits("evennia_ai/offline")  # the offline model is never waited for

    def test_a_success_on_a_healthy_endpoint_resolves_nothing(self):
        with mock.patch.object(outages, "endpoint_of", side_effect=AssertionError("resolved")):
            BOARD.observe([answered()] * 100)
            assert BOARD.admits(MODEL) and BOARD.unreachable(MODEL) is None


class OutageTickBase(AssistantTestBase):
    """The Innkeeper and the Cook use one loopback endpoint; staff notices are recorded."""

    def setUp(self):
        super().setUp()
        self.answer_from_loopback(EVENNIA_AI_AUTONOMY=False, EVENNIA_AI_THINKING_DELAY=0)
        self.cook = create_object(AIAssistantCharacter, key="Cook", location=self.room1)
        self.cook.ai.script.trigger_tick = lambda: None
        self.addCleanup(self.cook.delete)
        announce = mock.patch.object(outages.notices, "_announce")
        self.announced = announce.start()
        self.addCleanup(announce.stop)
        heard = mock.patch.object(self.char1, "msg")
        self.heard_calls = heard.start()
        self.addCleanup(heard.stop)

    def heard(self) -> list[str]:
        return [
            str(c.kwargs.get("text") or (c.args[0] if c.args else ""))
            for c in self.heard_calls.call_args_list
        ]

    def told_unavailable(self) -> int:
        return sum("seems lost in thought" in line for line in self.heard())

    def cook_tick(self):
        d = self.cook.ai.script.run_tick()
        return d.result if d is not None else None

    def bring_down(self, ticks: int = 3) -> None:
        """Stop the model server and let the Innkeeper fail ``ticks`` times on a line."""
        self.port = self.server.port
        self.server.stop()
        self.speak("Innkeeper, is the kitchen still open?")
        for _ in range(ticks):
            self.tick()

    def bring_up(self) -> None:
        """Start a model server on the same port (the endpoint answers again), and let the
        next tick probe it."""
        self.server = ModelServer(port=self.port).start()
        health = BOARD.unreachable(MODEL)
        if health is not None:
            health.last_probe -= 3600

    def queue(self) -> dict:
        return ev.normalize_queue(self.npc.ai.event_queue)


class TestOutageSeen(OutageTickBase):
    def test_a_stopped_server_makes_every_npc_using_it_say_why_it_does_not_answer(self):
        self.bring_down()
        health = BOARD.unreachable(MODEL)
        assert health is not None and health.failures == 3
        for npc in (self.npc, self.cook):
            status = npc.ai.status()
            assert status["state"] == "running"
            assert status["state_label"] == health.describe()
            assert status["state_class"] == "not-answering"
            detail = status["not_answering"][0]["detail"]
            assert detail.startswith(health.describe()) and self.server.url in detail
        assert len(self.announced.call_args_list) == 1
        # the line was not given up: it waits for the model, counting no failed attempt
        queue = self.queue()
        assert queue["failed"] == 0 and len(queue["events"]) == 1
        assert queue["events"][0]["attempts"] == 0 and queue["events"][0]["deferred"] == 3
        assert self.told_unavailable() == 1  # told once for the line, not once per tick

    def test_a_failure_of_another_kind_still_counts_attempts_and_starts_no_outage(self):
        self.server.enqueue({"fault": "malformed"}, {"fault": "malformed"}, {"fault": "malformed"})
        self.speak("Innkeeper, is the kitchen still open?")
        for _ in range(3):
            self.tick()
        assert not BOARD.failing
        assert self.queue()["failed"] == 1  # given up after its attempts, as before
        assert self.npc.ai.status()["state_label"] == "running"


class TestOutageHealed(OutageTickBase):
    def test_waiting_ticks_call_nothing_and_the_probe_brings_the_answers(self):
        for _ in range(3):
            self.server.enqueue({"fault": "500"})
        self.speak("Innkeeper, is the kitchen still open?")
        for _ in range(3):
            self.tick()
        assert BOARD.unreachable(MODEL) is not None
        calls = len(self.server.requests_to("/v1/chat/completions"))
        self.speak("Cook, what is on the menu?")
        assert self.cook_tick() is None  # it waited: no model call, no trace
        assert self.tick() is None
        assert len(self.server.requests_to("/v1/chat/completions")) == calls
        assert ev.normalize_queue(self.cook.ai.event_queue)["events"][0]["deferred"] == 1
        assert not self.cook.ai.traces()
        BOARD.unreachable(MODEL).last_probe -= 3600
        self.server.enqueue({"tool_calls": [{"name": "say", "arguments": {"message": "Stew."}}]})
        with mock.patch.object(self.cook.ai.script, "trigger_tick") as woken:
            trace = self.tick()  # the probe
        assert trace is not None and trace.stop_reason != "error"
        assert BOARD.unreachable(MODEL) is None
        woken.assert_called()  # the Cook answers what it held back at once
        assert "answers again" in self.announced.call_args_list[-1].args[0]

    def test_a_line_said_during_the_outage_is_answered_when_the_model_is_back(self):
        self.bring_down()
        self.speak("Innkeeper, and the cellar?")
        assert self.tick() is None  # waits: the endpoint is down and the probe is not due
        assert self.told_unavailable() == 2  # one failure line per line
        self.bring_up()
        self.server.enqueue(
            {"tool_calls": [{"name": "say", "arguments": {"message": "Open till late."}}]}
        )
        trace = self.tick()
        assert trace is not None and "Open till late." in " ".join(self.heard())
        request = self.server.requests_to("/v1/chat/completions")[-1].body
        sent = str(request["messages"])
        assert "is the kitchen still open?" in sent and "and the cellar?" in sent
        assert not self.queue()["events"] and self.queue()["failed"] == 0
        assert self.told_unavailable() == 2

    def test_a_line_older_than_the_replay_window_is_given_up_not_answered(self):
        self.bring_down()

        def age(queue):
            for event in queue["events"]:
                event["timestamp"] = iso_utc(utcnow().replace(year=utcnow().year - 1))
            return queue

        self.npc.ai.update("event_queue", age)
        self.bring_up()
        with mock.patch("evennia_ai.engine.agenda.logger.log_warn") as warn:
            assert self.tick() is None  # nothing left to answer
        assert not self.server.requests_to("/v1/chat/completions")
        queue = self.queue()
        assert not queue["events"] and queue["failed"] == 1
        logged = warn.call_args.args[0]
        assert "gave up a line from Char held back while the model was unreachable" in logged
        assert "older than 300 s" in logged
        assert self.told_unavailable() == 1  # the speaker had the failure line, once

    def test_a_line_whose_speaker_left_is_given_up_and_the_trace_says_so(self):
        self.bring_down()
        self.char1.location = self.room2
        self.char2.at_say("Innkeeper, a room for the night?")
        self.bring_up()
        self.server.enqueue({"tool_calls": [{"name": "say", "arguments": {"message": "Yes."}}]})
        trace = self.tick()
        assert trace is not None
        assert any("its speaker is gone" in note for note in trace.notes), trace.notes
        sent = str(self.server.requests_to("/v1/chat/completions")[-1].body["messages"])
        assert "a room for the night?" in sent and "kitchen" not in sent
        assert self.queue()["failed"] == 1

    def test_a_reload_keeps_the_lines_held_back(self):
        self.bring_down()
        BOARD.clear()  # a reload forgets the board; the queue is in Attributes
        self.npc.ai.update("event_queue", ev.recover)
        self.bring_up()
        self.server.enqueue({"tool_calls": [{"name": "say", "arguments": {"message": "Yes."}}]})
        assert self.tick() is not None
        assert not self.queue()["events"] and self.queue()["failed"] == 0


@override_settings(EVENNIA_AI_API_BASE=BASE, EVENNIA_AI_MODEL=MODEL)
class TestLateCalls(AssistantTestBase):
    """A call that ends after its tick (a helper that timed out, say) tells the endpoint's
    health too: a failure counts towards an outage, an answer ends one."""

    def test_late_calls_count_towards_an_outage_and_end_it(self):
        from evennia_ai.engine.accounting import LateUsage

        late = LateUsage(self.npc)
        with mock.patch.object(outages.notices, "_announce"):
            BOARD.observe([failed("connection"), failed("connection")], npc=self.npc)
            late.count(failed("timeout"))
            assert BOARD.unreachable(MODEL) is not None
            late.count(answered())
        assert BOARD.unreachable(MODEL) is None

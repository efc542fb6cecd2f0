"""The ``.ai`` handler: a speaker whose lines the flood limit drops is told so (issue 35)."""

from unittest import mock

from django.test import override_settings
from unit.engine.test_assistant_tick import AssistantTestBase

from evennia_ai.memory import events as ev
from evennia_ai.npc import handler


class TestFloodNotice(AssistantTestBase):
    def setUp(self):
        super().setUp()
        patcher = mock.patch.object(self.char1, "msg")
        self.heard = patcher.start()
        self.addCleanup(patcher.stop)
        self.now = 1000.0
        clock = mock.patch.object(handler.time, "monotonic", side_effect=lambda: self.now)
        clock.start()
        self.addCleanup(clock.stop)

    def told(self) -> int:
        lines = [str(c.args[0] if c.args else c.kwargs.get("text")) for c in self.heard.mock_calls]
        return sum("cannot follow so many lines" in line for line in lines)

    @override_settings(EVENNIA_AI_SPEAKER_EVENTS_PER_MINUTE=2)
    def test_a_flooding_speaker_is_told_at_most_once_a_minute_and_the_trace_says_it(self):
        with mock.patch.object(handler.logger, "log_info") as log_info:
            for n in range(6):
                self.speak(f"Innkeeper, line {n}")
                self.now += 1
        assert len(ev.pending_events(self.npc.ai.event_queue)) == 2
        assert self.told() == 1
        logged = [c.args[0] for c in log_info.call_args_list if "dropping lines" in c.args[0]]
        assert logged == [
            f"evennia_ai [Innkeeper{self.npc.dbref}]: dropping lines from Char: more than 2 in "
            "a minute (EVENNIA_AI_SPEAKER_EVENTS_PER_MINUTE); they are told"
        ]
        trace = self.tick()
        assert "dropped 4 event(s) from Char: too many in a minute" in trace.notes
        self.now += 61  # a minute later: the window passed, then a new flood is told again
        for n in range(3):
            self.speak(f"Innkeeper, again {n}")
        assert self.told() == 2

    @override_settings(EVENNIA_AI_SPEAKER_EVENTS_PER_MINUTE=1, EVENNIA_AI_FLOOD_MESSAGE="")
    def test_an_empty_message_tells_nothing(self):
        for n in range(3):
            self.speak(f"Innkeeper, line {n}")
        assert self.told() == 0
        assert len(self.heard.mock_calls) == 3  # the speaker's own lines only


class TestFullQueue(AssistantTestBase):
    @override_settings(EVENNIA_AI_EVENT_QUEUE_SIZE=2, EVENNIA_AI_SPEAKER_EVENTS_PER_MINUTE=0)
    def test_a_line_the_full_queue_drops_is_logged_and_its_speaker_told(self):
        with (
            mock.patch.object(self.char1, "msg") as heard,
            mock.patch.object(handler.answering.logger, "log_warn") as warn,
        ):
            for n in range(3):
                self.speak(f"Innkeeper, question {n}")
        lines = [str(c.args[0] if c.args else c.kwargs.get("text")) for c in heard.mock_calls]
        assert sum("seems lost in thought" in line for line in lines) == 1
        assert "its event queue is full" in warn.call_args.args[0]
        assert len(ev.pending_events(self.npc.ai.event_queue)) == 2

"""A tick that parks a DANGEROUS call: the asker hears a line, no model writes it.

Issue 35 ("Approvals are spoken of"): in a ``single_action`` tick, once ``execute_command`` went
pending the NPC could not say anything and the trace read ``max_iterations``. Now, in every
execution mode, the speakers the tick answers hear the NPC's approval line once, without
another model call, and the tick stops with ``awaiting_approval``. (An NPC that already spoke
in that tick adds nothing: ``test_react_loop``.)
"""

from unittest import mock

from unit.engine.test_assistant_tick import AssistantTestBase

from evennia_ai.tools.approvals import get_confirmation_queue

DESTROY = {"name": "execute_command", "arguments": {"command": "@destroy here"}}
SAY = {"name": "say", "arguments": {"message": "Right away."}}
APPROVAL_LINE = 'Innkeeper says, "Let me check with someone first."'


class TestParkedCallInATick(AssistantTestBase):
    def setUp(self):
        super().setUp()
        self.answer_from_loopback(EVENNIA_AI_STREAM_REPLIES=False)

    def ask(self, *replies):
        self.server.enqueue(*replies, {"tool_calls": [SAY]})  # what a second call would say
        self.speak("Innkeeper, please tear this room down")
        with mock.patch.object(self.char1, "msg") as msg:
            trace = self.tick()
        said = [str(c.args[0] if c.args else c.kwargs.get("text")) for c in msg.call_args_list]
        calls = len(self.server.requests_to("/v1/chat/completions"))
        return trace, said, calls

    def assert_parked(self, trace):
        assert trace.stop_reason == "awaiting_approval", trace.to_dict()
        assert [c.status for c in trace.tool_calls][:1] == ["pending"]
        pending = get_confirmation_queue().list_entries(npc=self.npc)
        assert [entry["action"] for entry in pending] == ["execute_command"]
        assert self.room1.pk  # nothing ran

    def test_single_action_the_asker_hears_the_line_once_without_a_model_call(self):
        self.npc.ai.set_execution_config(multi_action_enabled=False)
        trace, said, calls = self.ask({"tool_calls": [DESTROY]})
        self.assert_parked(trace)
        assert said.count(APPROVAL_LINE) == 1 and "Right away." not in " ".join(said)
        assert calls == 1

    def test_default_mode_the_asker_hears_the_line_once_without_a_model_call(self):
        trace, said, calls = self.ask({"tool_calls": [DESTROY]})
        self.assert_parked(trace)
        assert said.count(APPROVAL_LINE) == 1 and "Right away." not in " ".join(said)
        assert calls == 1

    def test_the_npcs_own_approval_line_is_heard(self):
        self.npc.ai.set("lines", {"approval": '{name} says, "I must ask the owner."'})
        trace, said, _calls = self.ask({"tool_calls": [DESTROY]})
        assert said.count('Innkeeper says, "I must ask the owner."') == 1
        assert APPROVAL_LINE not in said

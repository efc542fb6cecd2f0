"""Recorded ticks that replay: record a scripted scenario, replay it against changed builds."""

import json
import os
import tempfile
from unittest import mock

from django.test import override_settings
from unit.engine.test_assistant_tick import AssistantTestBase, sync_thread

from evennia_ai.engine import recording, replay
from evennia_ai.prompt import components
from evennia_ai.prompt.components import PromptComponent
from evennia_ai.testing.scripted_model import ScriptedModel
from evennia_ai.tools.registry import TOOL_REGISTRY

SECRET = "the smugglers meet in the cellar at midnight"


class RecordingBase(AssistantTestBase):
    def setUp(self):
        super().setUp()
        self.dir = tempfile.mkdtemp()
        patch = override_settings(
            EVENNIA_AI_RECORD_TICKS=True,
            EVENNIA_AI_DATA_DIR=self.dir,
            EVENNIA_AI_AUTONOMY=False,
            EVENNIA_AI_API_KEY="sk-very-secret-key",
        )
        patch.enable()
        self.addCleanup(patch.disable)
        thread = mock.patch.object(recording, "defer_to_thread", sync_thread)
        thread.start()
        self.addCleanup(thread.stop)
        self.npc.ai.set_user_system_prompt(f"Keep the inn friendly.\nSecret: {SECRET}")
        self.model = ScriptedModel()
        client = mock.patch("evennia_ai.engine.tick.get_client", return_value=self.model)
        client.start()
        self.addCleanup(client.stop)
        self.path = recording.recording_path(self.npc)

    def record_scenario(self):
        """Three ticks: a note then a text reply, a plain reply, a terminal speech tool."""
        self.model.enqueue(
            {
                "tool_calls": [
                    {
                        "name": "add_session_memory",
                        "arguments": {"kind": "fact", "content": "Char drinks dark ale."},
                    }
                ]
            },
            {"text": "Welcome, traveller."},
            {"text": "An ale, coming up."},
            {"tool_calls": [{"name": "say", "arguments": {"message": "Good night!"}}]},
        )
        for line in (
            "Innkeeper, who is here?",
            "Innkeeper, an ale please.",
            "Good night, Innkeeper.",
        ):
            self.speak(line)
            self.tick()

    def lines(self):
        with open(self.path, encoding="utf-8") as handle:
            return [json.loads(line) for line in handle]

    def run_replay(self, *args):
        with mock.patch("builtins.print") as printed:
            status = replay.main([self.path, *args])
        return status, "\n".join(str(c.args[0]) for c in printed.call_args_list)


class TestRecording(RecordingBase):
    def test_each_tick_is_one_line_with_its_calls_and_no_secret(self):
        self.record_scenario()
        lines = self.lines()
        assert len(lines) == 3
        first = lines[0]
        assert [c["step"] for c in first["calls"]] == ["act", "act"]
        assert first["calls"][0]["reply"]["tool_calls"][0]["name"] == "add_session_memory"
        results = first["calls"][0]["tool_results"]
        noted = list(results.values())[0]
        assert noted["status"] == "ran" and noted["text"]  # as the next request shows it
        assert first["snapshot"]["sources"] and first["baseline"]
        text = open(self.path, encoding="utf-8").read()
        assert SECRET not in text.lower() and "sk-very-secret-key" not in text
        assert "[redacted]" in text

    def test_the_size_cap_stops_recording_with_one_log_line(self):
        with (
            override_settings(EVENNIA_AI_RECORD_MAX_BYTES=1),
            mock.patch.object(recording.logger, "log_warn") as warn,
        ):
            self.record_scenario()
        assert not os.path.exists(self.path)
        assert warn.call_count == 1 and "EVENNIA_AI_RECORD_MAX_BYTES" in warn.call_args[0][0]

    def test_recording_off_by_default(self):
        with override_settings(EVENNIA_AI_RECORD_TICKS=False):
            self.record_scenario()
        assert not os.path.exists(self.path)

    def test_a_failing_recorder_never_fails_the_tick(self):
        with mock.patch.object(recording.TickRecorder, "_snapshot", side_effect=RuntimeError("x")):
            self.speak("Innkeeper, hello?")
            trace = self.tick()
        assert trace.stop_reason == "text_reply" and not os.path.exists(self.path)


class TestReplay(RecordingBase):
    def test_an_unchanged_build_replays_without_differences(self):
        self.record_scenario()
        status, out = self.run_replay()
        assert status == 0, out
        assert "3 tick(s) replayed: 0 changed, 0 diverged" in out

    def test_a_grown_section_is_reported(self):
        self.record_scenario()
        original = components.get_static_components

        def longer():
            found = original()
            return [
                (
                    c.__class__(**{**vars(c), "content": c.content + " Mind the stairs." * 20})
                    if c.key == "system_prompt"
                    else c
                )
                for c in found
            ]

        with mock.patch("evennia_ai.prompt.registry_io.get_static_components", longer):
            status, out = self.run_replay()
        assert status == 0
        assert "section grown: system_prompt" in out and "changed" in out

    def test_a_longer_tool_description_grows_the_tools_section(self):
        self.record_scenario()
        say = TOOL_REGISTRY.get("say")
        with mock.patch.object(say, "description", say.description + " Be brief." * 30):
            status, out = self.run_replay()
        assert status == 0, out
        assert "section grown: tools" in out

    def test_an_added_section_is_reported(self):
        self.record_scenario()
        original = recording.components_of
        rules = PromptComponent(
            id=1,
            key="house_rules",
            name="House rules",
            description="",
            content="House rules: no brawling, no credit, no dogs on the tables.",
            after_static=0,
        )

        with mock.patch.object(
            recording,
            "components_of",
            lambda inputs: sorted(original(inputs) + [rules], key=lambda c: c.id),
        ):
            status, out = self.run_replay()
        assert status == 0, out
        assert "section added: house_rules" in out
        assert "3 tick(s) replayed: 3 changed, 0 diverged" in out

    def test_an_extra_call_diverges(self):
        self.record_scenario()
        original = recording.select_execution_pattern

        def planning(*args):
            pattern = original(*args)
            pattern.mode, pattern.multi_tool_enabled = "plan_execute", True
            return pattern

        with mock.patch.object(recording, "select_execution_pattern", planning):
            status, out = self.run_replay("--json")
        assert status == 1
        document = json.loads(out)
        assert document["summary"]["diverged"] == 3
        assert document["ticks"][0]["diverged"] == (
            "call 1 is a 'plan' call where the recording has an 'act' one"
        )

    def test_a_truncated_file_gives_a_message_not_a_traceback(self):
        self.record_scenario()
        with open(self.path, "rb+") as handle:
            handle.truncate(os.path.getsize(self.path) - 40)
        status, out = self.run_replay()
        assert status == 2
        assert "line 3: it is cut short (the file was truncated)" in out
        assert "2 tick(s) replayed" in out

    def test_a_file_that_is_not_a_recording(self):
        self.path = os.path.join(self.dir, "notes.txt")
        with open(self.path, "w") as handle:
            handle.write("hello\n[1, 2]\n")
        status, out = self.run_replay()
        assert status == 2 and "line 1: not JSON" in out and "line 2: not a tick recording" in out

    def test_a_missing_file(self):
        self.path = os.path.join(self.dir, "nothing.jsonl")
        status, out = self.run_replay()
        assert status == 2 and "cannot read" in out

"""Declared NPC state: a stored value of the wrong shape is kept aside, never a broken NPC."""

import json
from unittest import mock

import pytest
from evennia.utils.test_resources import BaseEvenniaCommandTest
from unit.engine.test_assistant_tick import AssistantTestBase

from evennia_ai import startstop
from evennia_ai.commands.npcs import CmdAIStatus
from evennia_ai.npc import state as state_module
from evennia_ai.npc.state_keys import CHARACTER_STATE, SCRIPT_STATE

pytestmark = pytest.mark.postgres  # also run on PostgreSQL (make test)

# A wrong value for every declared key: the shapes the issue saw crash every tick, and more.
WRONG = {
    "enabled": "yes",
    "persona": {"text": "x"},
    "model": ["gpt"],
    "user_system_prompt": 7,
    "assistant_system_prompt": ["a"],
    "projects": "none",
    "session_memory": ["fact"],
    "journal": {"a": 1},
    "behaviour_rules": "be nice",
    "event_queue": "full",
    "history": [["user", "hi"]],
    "context_buffer": "text",
    "private_whispers": {"x": 1},
    "metrics": "lots",
    "tool_rules": "cooldown",
    "tool_allow": "say",
    "tool_deny": "say",
    "sleep": "no",
    "prompt_revisions": "r",
    "entities": ["Alice"],
    "blocks": ["core"],
    "archival": "entry",
    "procedures": "how",
    "blocks_shared_in": "archive",
    "compaction": True,
    "reflection": 3,
    "budget": {"tokens": "many"},
    "lines": {"thinking": 5},
    "host": "yes",
    "routine": {"slots": [{"start": 5, "end": "11:00", "room": "#12"}]},
    "goods": {"prices": "cheap"},
    "ledger": {"entries": "many"},
    "offers": {"#5": "sell"},
}
WRONG_SCRIPT = {
    "current_goals": [["find ale"]],
    "execution_config": "fast",
    "tick_count": "seven",
    "paused": "no",
}


def test_every_declared_key_has_a_wrong_value_here():
    assert set(WRONG) == set(CHARACTER_STATE)
    assert set(WRONG_SCRIPT) == set(SCRIPT_STATE)


def test_defaults_fit_their_own_schemas():
    from evennia_ai.tools.arguments import validate_value

    for declared in [*CHARACTER_STATE.values(), *SCRIPT_STATE.values()]:
        assert validate_value(declared.default(), declared.schema, declared.name) == []


class TestWrittenStateFitsItsDeclaration(AssistantTestBase):
    """What the plugin itself writes, in every state a tick leaves it, passes its schema."""

    def stored_problems(self):
        from evennia_ai.tools.arguments import validate_value
        from evennia_ai.utils import plain

        problems = {}
        for obj, keys in ((self.npc, CHARACTER_STATE), (self.npc.ai.script, SCRIPT_STATE)):
            for key, declared in keys.items():
                value = obj.attributes.get(key, category="ai")
                if value is not None:
                    found = validate_value(plain(value), declared.schema, key)
                    if found:
                        problems[key] = found
        return problems

    def test_a_tick_mid_flight_and_after_leaves_only_valid_state(self):
        from evennia_ai.memory import events as ev

        self.speak("Hello Innkeeper, an ale please?")
        queue, batch = ev.take_batch(self.npc.ai.event_queue)
        assert batch and queue["in_flight"]
        self.npc.ai.set("event_queue", queue)  # as a tick leaves it while the model answers
        assert self.stored_problems() == {}
        self.npc.ai.set("event_queue", ev.recover(queue))
        self.speak("And some stew?")
        assert self.tick() is not None
        self.npc.ai.pause()
        self.npc.ai.set_execution_config(sub_agents_enabled=True)
        assert self.stored_problems() == {}
        assert self.npc.ai.quarantined() == {}


class TestOneWritePerChange(AssistantTestBase):
    """A change of stored state is one UPDATE, seen by a fresh read from the database."""

    def updates_of(self, change) -> list[str]:
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        with CaptureQueriesContext(connection) as queries:
            change()
        return [q["sql"] for q in queries.captured_queries if q["sql"].startswith("UPDATE")]

    def test_a_state_change_is_one_update_and_lasts(self):
        from evennia.typeclasses.attributes import Attribute

        self.npc.ai.set("journal", [])  # the Attribute exists
        entry = {"text": "Alice likes pears", "source": "told_directly"}
        updates = self.updates_of(lambda: self.npc.ai.update("journal", lambda j: j + [entry]))
        assert len(updates) == 1
        stored = self.npc.attributes.get("journal", category="ai", return_obj=True)
        fresh = Attribute.objects.get(pk=stored.pk)
        assert [e["text"] for e in fresh.value] == ["Alice likes pears"]
        assert self.npc.ai.journal[-1]["text"] == "Alice likes pears"

    def test_a_string_attribute_written_over_is_one_update_of_both_fields(self):
        from evennia.typeclasses.attributes import Attribute

        self.npc.attributes.add("note", "plain text", category="ai", strattr=True)
        write = lambda: state_module.write_attribute(self.npc, "note", {"n": 1}, "ai")
        updates = self.updates_of(write)
        assert len(updates) == 1 and "db_strvalue" in updates[0]
        stored = self.npc.attributes.get("note", category="ai", return_obj=True)
        fresh = Attribute.objects.get(pk=stored.pk)
        assert fresh.db_strvalue is None and fresh.value == {"n": 1}

    def test_the_tick_counter_and_a_trace_slot_are_one_update_each(self):
        script = self.npc.ai.script
        script.next_tick_id()
        assert len(self.updates_of(script.next_tick_id)) == 1
        self.npc.ai.record_trace({"tick_id": 1, "context_type": "tick_event"}, ring=4)
        trace = {"tick_id": 5, "context_type": "tick_event"}
        assert len(self.updates_of(lambda: self.npc.ai.record_trace(trace, ring=4))) == 1
        assert json.loads(self.npc.attributes.get("trace_1", category="ai_trace"))["tick_id"] == 5


class TestCorruptState(AssistantTestBase):
    """The offline model answers: the tick's logic runs, no HTTP server is needed."""

    def answered(self, line="Hello Innkeeper, an ale please?"):
        self.speak(line)
        with mock.patch.object(self.char1, "msg") as heard:
            trace = self.tick()
        said = " ".join(str(c.kwargs.get("text") or c.args) for c in heard.call_args_list)
        return trace, said

    # Keys whose fallback stops or silences the NPC (test_operator_word_state.py): the
    # others answer on. A set-aside tool_deny "say" denies say itself.
    STOPPING = ("enabled", "tool_deny")

    def test_each_corrupt_key_is_kept_aside_and_the_npc_still_answers(self):
        for key, wrong in WRONG.items():
            if key in self.STOPPING:
                continue
            with self.subTest(key=key):
                self.npc.attributes.add(key, wrong, category="ai")
                trace, said = self.answered()
                assert trace is not None and trace.error is None, (key, trace and trace.error)
                assert "Innkeeper" in said, (key, said)
                kept = self.npc.ai.quarantined(reveal=True)
                assert kept[key]["value"] == wrong
                assert key in kept[key]["problem"]
                assert self.npc.ai.discard(key)

    def test_a_corrupt_enabled_flag_falls_back_to_disabled(self):
        self.npc.attributes.add("enabled", "yes", category="ai")
        trace, said = self.answered()
        assert trace is None and "Innkeeper" not in said
        assert self.npc.ai.enabled is False
        assert self.npc.ai.quarantined()["enabled"]["value"] == "yes"

    def test_each_corrupt_script_key_is_kept_aside_and_the_npc_still_answers(self):
        for key, wrong in WRONG_SCRIPT.items():
            if key == "paused":  # its fallback is paused (test_operator_word_state.py)
                continue
            with self.subTest(key=key):
                self.script.attributes.add(key, wrong, category="ai")
                trace, said = self.answered()
                assert trace is not None and trace.error is None, (key, trace and trace.error)
                assert "Innkeeper" in said, (key, said)
                kept = self.npc.ai.quarantined(reveal=True)
                assert kept[f"script.{key}"]["value"] == wrong
                assert self.npc.ai.discard(f"script.{key}")

    def test_status_reads_with_corrupt_sleep_and_lists_the_value(self):
        self.npc.attributes.add("sleep", "no", category="ai")
        status = self.npc.ai.status()
        assert status["asleep"] is False
        assert status["quarantined"]["sleep"]["value"] == "no"

    def test_logged_once_with_npc_and_key(self):
        self.npc.attributes.add("metrics", "lots", category="ai")
        with mock.patch.object(state_module.logger, "log_warn") as warn:
            for _ in range(3):
                assert self.npc.ai.metrics["ticks"] == 0
        assert warn.call_count == 1
        line = warn.call_args.args[0]
        assert "Innkeeper" in line and "'metrics'" in line and self.npc.dbref in line

    def test_restore_checks_the_value_again(self):
        self.npc.attributes.add("tool_deny", "say", category="ai")
        assert "say" in self.npc.ai.tool_deny  # the strictest value while it is set aside
        with pytest.raises(ValueError, match="tool_deny"):
            self.npc.ai.restore("tool_deny")  # still a string
        assert self.npc.ai.restore("tool_deny", ["say"]) == ["say"]
        assert self.npc.ai.tool_deny == ["say"]
        assert "tool_deny" not in self.npc.ai.quarantined()

    def test_undeclared_keys_are_refused(self):
        with pytest.raises(KeyError, match="not declared"):
            self.npc.ai.get("metricz")
        with pytest.raises(KeyError, match="not declared"):
            self.npc.ai.set("metricz", {})

    def test_declared_keys_read_as_attributes(self):
        assert self.npc.ai.metrics["ticks"] == 0
        self.npc.ai.update("journal", lambda j: j + [{"content": "x"}])
        assert self.npc.ai.journal == [{"content": "x"}]


class TestMissingScript(AssistantTestBase):
    def test_recreated_on_the_next_perception_and_logged(self):
        self.script.delete()
        assert self.npc.ai.script is None
        with mock.patch("evennia_ai.npc.handler.logger.log_warn") as warn:
            self.speak("Hello Innkeeper?")
        script = self.npc.ai.script
        assert script is not None and script.is_active
        assert "recreated" in warn.call_args.args[0]
        self.script = script
        script.trigger_tick = lambda: None
        with mock.patch.object(self.char1, "msg") as heard:
            assert self.tick() is not None
        assert "Innkeeper" in " ".join(str(c.kwargs.get("text")) for c in heard.call_args_list)

    def test_recreated_at_server_start(self):
        self.script.delete()
        with mock.patch("evennia_ai.npc.handler.logger.log_warn"):
            assert startstop.restore_missing_scripts() == 1
        assert self.npc.ai.script is not None
        self.script = self.npc.ai.script
        assert startstop.restore_missing_scripts() == 0

    def test_a_stopped_npc_gets_no_script(self):
        self.npc.ai.stop()
        self.script.delete()
        self.speak("Hello?")
        assert startstop.restore_missing_scripts() == 0
        assert self.npc.ai.script is None


class TestKeptAsideCommand(BaseEvenniaCommandTest):
    def setUp(self):
        super().setUp()
        from evennia.utils.create import create_object

        from evennia_ai.typeclasses import AIAssistantCharacter

        self.npc = create_object(AIAssistantCharacter, key="Marta", location=self.room1)
        self.addCleanup(self.npc.delete)

    def test_report_restore_and_discard(self):
        self.npc.attributes.add("metrics", "lots", category="ai")
        self.npc.attributes.add("budget", {"tokens": -1}, category="ai")
        report = self.call(CmdAIStatus(), "Marta", caller=self.char1)
        assert "kept aside metrics" in report and "kept aside budget" in report
        out = self.call(CmdAIStatus(), "/restore Marta = metrics", caller=self.char1)
        assert "still does not fit" in out
        out = self.call(CmdAIStatus(), "/discard Marta = metrics", caller=self.char1)
        assert "forgotten" in out
        out = self.call(CmdAIStatus(), "/restore Marta = nothing", caller=self.char1)
        assert "Nothing of 'nothing' is kept aside" in out and "budget" in out
        out = self.call(CmdAIStatus(), "/restore Marta", caller=self.char1)
        assert "Missing '= <key>'" in out

"""Issue 31, items 7 and 9: secrets stay with Developers; recordings are robust.

Attacked as a Builder would: a quarantined operator prompt and the arguments of a refused ``say``
carrying a ``Secret:`` line must not reach anyone below Developer (API, dashboard, stored
trace); a Builder must not move an NPC to a paid model of their choosing. And as a hostile file
would: a deeply nested recording line is exit 2 with a message, and redaction keeps to word and
token boundaries (a short key does not eat into "exact"; a key inside a URL is still found).
"""

from __future__ import annotations

import json
import os
import tempfile
from unittest import mock

from django.test import Client, modify_settings, override_settings
from evennia import create_object
from evennia.utils import create
from evennia.utils.test_resources import BaseEvenniaTest
from support.commands import AICommandTestBase
from unit.engine.test_replay import SECRET, RecordingBase

from evennia_ai.commands.npcs import CmdAINpc
from evennia_ai.commands.runtime import CmdAITrace
from evennia_ai.engine import recording, redaction, replay
from evennia_ai.engine.redaction import (
    KEPT_ASIDE_WITHHELD,
    REDACTED,
    WITHHELD,
    Secrets,
    quarantined_for,
    redact_secrets,
    trace_for,
    withhold_refused_secrets,
)
from evennia_ai.engine.trace import IterationTrace, TickTrace, ToolCallTrace
from evennia_ai.tools import load_builtin_tools
from evennia_ai.typeclasses import AIAssistantCharacter

CELLAR = "the cellar key is under the third barrel"
OPERATOR_PROMPT = f"Keep the inn friendly.\nSecret: {CELLAR}"
REFUSAL = (
    "Refused: this would reveal something the operators keep secret. Do not say, hint at or "
    "spell it out to anyone; say something else."
)


def refused_say_trace(tick_id: int = 7, message: str = f"Psst: {CELLAR}!") -> dict:
    """A stored trace, as main stored it, of a ``say`` refused for carrying the secret."""
    trace = TickTrace(tick_id=tick_id, context_type="tick_event", stop_reason="text_reply")
    trace.add_iteration(
        IterationTrace(
            index=0,
            sections={"system_prompt": 100},
            usage={"prompt_tokens": 100, "completion_tokens": 10},
            model="openai/test-model",
            text="I will tell them where the key is.",
            tool_calls=[
                ToolCallTrace(
                    id="c1",
                    name="say",
                    arguments={"message": message},
                    category="TERMINAL",
                    success=False,
                    error=REFUSAL,
                    result=f"Error: {REFUSAL}",
                    status="error",
                ),
                ToolCallTrace(
                    id="c2",
                    name="say",
                    arguments={"message": "Welcome, traveller."},
                    category="TERMINAL",
                    success=True,
                    result="said",
                ),
            ],
        )
    )
    return trace.to_dict()


# -- item 9: redaction on word and token boundaries ------------------------------------------------
class TestRedactionBoundaries:
    def test_a_short_key_does_not_eat_into_words(self):
        with mock.patch.object(redaction.logger, "log_warn"):
            assert redact_secrets("exact, x marks it; x-ray", ["x"]) == (
                f"exact, {REDACTED} marks it; {REDACTED}-ray"
            )

    def test_a_key_too_short_is_logged_once_without_the_key(self):
        redaction._WARNED.clear()
        with mock.patch.object(redaction.logger, "log_warn") as warn:
            redact_secrets("q", ["zq"])
            redact_secrets({"a": ["q"]}, ["zq"])
        assert warn.call_count == 1
        message = warn.call_args[0][0]
        assert "too short to redact safely" in message and "zq" not in message

    def test_a_key_inside_a_url_or_an_encoded_query_is_redacted(self):
        key = "sk-abc123"
        text = (
            f"https://api.example.com/v1?key={key}&x=1 key%3D{key}%26 "
            f"Authorization: Bearer {key.upper()} token={key}xyz"
        )
        shown = redact_secrets(text, [key])
        assert "abc123" not in shown.lower()
        assert shown.count(REDACTED) == 4

    def test_a_multiword_secret_across_white_space_and_any_case(self):
        text = "He said: The Cellar key\n  is under the THIRD barrel."
        assert redact_secrets(text, [CELLAR]) == f"He said: {REDACTED}."

    def test_a_secret_inside_a_json_string_is_redacted(self):
        arguments = json.dumps({"message": "Der Schlüssel liegt unter dem Fass"})
        shown = redact_secrets(arguments, ["Schlüssel liegt unter dem Fass"])
        assert "Schl" not in shown and "Fass" not in shown

    def test_nested_values_and_keys(self):
        value = {"a": [f"{CELLAR}."], "b": {"c": 3}, CELLAR: "kept key"}
        shown = redact_secrets(value, [CELLAR])
        assert shown == {"a": [f"{REDACTED}."], "b": {"c": 3}, CELLAR: "kept key"}


class TestRecordingBoundaries(RecordingBase):
    def test_a_short_key_leaves_recorded_words_whole_and_never_the_secret(self):
        self.npc.ai.set_user_system_prompt("Be exact.\nSecret: x\nSecret: " + SECRET)
        line = {"format": 1, "snapshot": {"text": "exact x. " + SECRET.upper()}}
        with mock.patch.object(recording, "build_request", side_effect=ValueError("no")):
            recording._write_line(self.path, line, recording.recording_secrets(self.npc))
        text = open(self.path, encoding="utf-8").read()
        assert "exact" in text and "e[redacted]act" not in text
        assert f"exact {REDACTED}. {REDACTED}" in text
        assert SECRET not in text.lower()


# -- item 9: robust recordings -------------------------------------------------------------------
class TestDeepRecordingLines:
    def write(self, *lines: str) -> str:
        handle = tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False)
        with handle:
            handle.write("\n".join(lines) + "\n")
        return handle.name

    def test_a_line_nested_past_the_parser_is_a_problem_not_a_crash(self):
        path = self.write("[" * 100_000 + "]" * 100_000)
        try:
            found = list(recording.read_recording(path))
            assert len(found) == 1 and isinstance(found[0][1], recording.RecordingError)
            assert "nested too deeply" in str(found[0][1])
            with mock.patch("builtins.print") as printed:
                status = replay.main([path])
            assert status == 2
            out = "\n".join(str(call.args[0]) for call in printed.call_args_list)
            assert "problem: line 1: nested too deeply" in out and "Traceback" not in out
        finally:
            os.unlink(path)

    def test_a_line_the_parser_reads_but_too_deep_to_replay_is_refused(self):
        deep = {"format": 1, "snapshot": {"context_type": "tick_event"}}
        inner = deep["snapshot"]
        for _ in range(recording.MAX_NESTING + 5):
            inner["x"] = {}
            inner = inner["x"]
        path = self.write(json.dumps(deep))
        try:
            found = list(recording.read_recording(path))
            assert isinstance(found[0][1], recording.RecordingError)
            assert "nested too deeply" in str(found[0][1])
            with mock.patch("builtins.print"):
                assert replay.main([path, "--json"]) == 2
        finally:
            os.unlink(path)

    def test_nesting_counts_without_recursion(self):
        value: list = []
        inner = value
        for _ in range(50_000):
            inner.append([])
            inner = inner[0]
        assert recording.nesting(value) > recording.MAX_NESTING
        assert recording.nesting({"a": [1, {"b": 2}]}) == 3


# -- item 7: traces -------------------------------------------------------------------------------
SECRETS = Secrets(texts=(CELLAR,), operator_prompt=OPERATOR_PROMPT)


class TestTraceRedaction:
    def test_refused_arguments_are_withheld_when_stored_with_the_refusal_kept(self):
        stored = withhold_refused_secrets(refused_say_trace(), SECRETS)
        refused, said = stored["iterations"][0]["tool_calls"]
        assert refused["arguments"] == {"message": WITHHELD}
        assert refused["error"] == REFUSAL and refused["status"] == "error"
        assert said["arguments"] == {"message": "Welcome, traveller."}
        assert "cellar" not in json.dumps(stored)

    def test_a_trace_without_secrets_is_stored_as_it_is(self):
        trace = refused_say_trace(message="Welcome!")
        assert withhold_refused_secrets(trace, SECRETS) is trace

    def test_below_developer_no_text_tells_the_secret(self):
        trace = refused_say_trace()
        trace["iterations"][0]["text"] = f"They must never learn that {CELLAR}."
        trace["event_text"] = "Bob asks where the key is"
        shown = trace_for(trace, SECRETS, developer=False)
        assert "cellar" not in json.dumps(shown).lower()
        assert shown["iterations"][0]["text"] == WITHHELD
        assert shown["event_text"] == "Bob asks where the key is"
        assert trace_for(trace, SECRETS, developer=True) is trace

    def test_a_long_quote_of_the_operator_prompt_is_withheld(self):
        prompt = (
            "You keep the inn of the valley, greet every guest by name and never tell anyone "
            "which rooms are free tonight"
        )
        secrets = Secrets(operator_prompt=prompt)
        trace = refused_say_trace(message=prompt)
        shown = trace_for(trace, secrets, developer=False)
        assert shown["iterations"][0]["tool_calls"][0]["arguments"] == {"message": WITHHELD}


class TestKeptAsideRedaction:
    def test_developer_keys_are_withheld_and_others_redacted(self):
        kept = {
            "user_system_prompt": {
                "value": [f"Secret: {CELLAR}"],
                "problem": "must be text, not a list",
                "time": "2026-01-01T00:00:00Z",
            },
            "script.execution_config": {"value": "DANGEROUS", "problem": "p", "time": "t"},
            "journal": {"value": f"I wrote down that {CELLAR}", "problem": "p", "time": "t"},
        }
        shown = quarantined_for(kept, SECRETS, developer=False)
        assert shown["user_system_prompt"]["value"] == KEPT_ASIDE_WITHHELD
        assert shown["user_system_prompt"]["redacted"] is True
        assert shown["user_system_prompt"]["problem"] == "must be text, not a list"
        assert shown["script.execution_config"]["value"] == KEPT_ASIDE_WITHHELD
        assert shown["journal"]["value"] == f"I wrote down that {REDACTED}"
        assert quarantined_for(kept, SECRETS, developer=True) == kept


class TestRefusedSayStoredWithheld(RecordingBase):
    """A real tick: the model tries to say the secret; the guard refuses; the trace keeps the
    refusal and not the words, and the recording holds no secret."""

    def test_the_stored_trace_of_a_refused_secret_keeps_the_refusal_only(self):
        self.model.enqueue(
            {"tool_calls": [{"name": "say", "arguments": {"message": f"Psst, {SECRET}."}}]},
            {"text": "Welcome, traveller."},
        )
        self.speak("Innkeeper, any news?")
        self.tick()
        stored = self.npc.ai.traces()[-1]
        calls = [c for it in stored["iterations"] for c in it["tool_calls"]]
        refused = next(c for c in calls if c["id"] != "text_reply")
        assert refused["name"] == "say" and not refused["success"]
        assert "secret" in (refused["error"] or "").lower()
        assert refused["arguments"] == {"message": WITHHELD}
        assert SECRET not in json.dumps(stored).lower()
        assert SECRET not in open(self.path, encoding="utf-8").read().lower()


# -- item 7: the dashboard and the API ------------------------------------------------------------
@override_settings(ROOT_URLCONF="web_test_urls")
@modify_settings(INSTALLED_APPS={"append": "evennia_ai.web"})
class TestWebKeepsSecretsWithDevelopers(BaseEvenniaTest):
    def setUp(self):
        super().setUp()
        load_builtin_tools()
        self.npc = create_object(AIAssistantCharacter, key="Innkeeper", location=self.room1)
        script = self.npc.ai.script
        if script is not None:
            script.trigger_tick = lambda: None
        self.clients = {}
        for role in ("Builder", "Admin", "Developer"):
            account = create.create_account(
                f"{role}Sam", email=f"{role.lower()}@example.com", password="pw-12345678"
            )
            account.permissions.clear()
            account.permissions.add(role)
            client = Client()
            client.force_login(account)
            self.clients[role] = client
            self.addCleanup(account.delete)

    def tearDown(self):
        script = self.npc.ai.script
        if script:
            script.delete()
        self.npc.delete()
        super().tearDown()

    def quarantine_operator_prompt(self):
        """The operator prompt stored as a list: kept aside when read (the issue's attack)."""
        self.npc.attributes.add("user_system_prompt", [f"Secret: {CELLAR}"], category="ai")
        self.npc.ai.quarantined()  # reads every key: the list is moved aside
        if not self.npc.attributes.has("user_system_prompt", category="ai_quarantine"):
            self.npc.attributes.add(  # a handler that keeps it aside some other way
                "user_system_prompt",
                {"value": [f"Secret: {CELLAR}"], "problem": "not text", "time": "2026"},
                category="ai_quarantine",
            )

    def test_a_quarantined_operator_prompt_is_withheld_below_developer(self):
        self.quarantine_operator_prompt()
        npc = self.npc.id
        for role, client in self.clients.items():
            listing = client.get("/ai/api/npcs/", HTTP_ACCEPT="application/json")
            detail = client.get(f"/ai/api/npcs/{npc}/", HTTP_ACCEPT="application/json")
            page = client.get(f"/ai/npc/{npc}/").content.decode()
            assert listing.status_code == detail.status_code == 200
            shown = CELLAR in listing.content.decode() or CELLAR in detail.content.decode()
            assert shown == (role == "Developer"), role
            assert (CELLAR in page) == (role == "Developer"), role
            kept = detail.json()["quarantined"]["user_system_prompt"]
            if role != "Developer":
                assert kept["value"] == KEPT_ASIDE_WITHHELD and kept["redacted"]
                assert "ai-kept-aside" in page and KEPT_ASIDE_WITHHELD in page

    def test_developers_see_a_value_the_handler_summarised(self):
        self.quarantine_operator_prompt()
        status = self.npc.ai.status()
        summarised = {
            "user_system_prompt": {"problem": "not text", "time": "2026", "redacted": True}
        }
        with mock.patch.object(
            type(self.npc.ai), "status", return_value={**status, "quarantined": summarised}
        ):
            developer = self.clients["Developer"].get(f"/ai/api/npcs/{self.npc.id}/").json()
            builder = self.clients["Builder"].get(f"/ai/api/npcs/{self.npc.id}/").json()
        assert developer["quarantined"]["user_system_prompt"]["value"] == [f"Secret: {CELLAR}"]
        assert CELLAR not in json.dumps(builder)

    def test_a_secret_of_a_kept_aside_prompt_stays_secret_in_traces(self):
        self.quarantine_operator_prompt()  # the NPC's operator prompt is now empty
        self.npc.ai.record_trace(refused_say_trace(tick_id=8))
        api = self.clients["Builder"].get(f"/ai/api/npcs/{self.npc.id}/traces/8/").json()
        assert CELLAR not in json.dumps(api)

    def test_refused_secret_arguments_are_withheld_in_the_trace_api_and_page(self):
        self.npc.ai.set_user_system_prompt(OPERATOR_PROMPT)
        self.npc.ai.record_trace(refused_say_trace(tick_id=7))  # stored as main stored it
        npc = self.npc.id
        for role, client in self.clients.items():
            api = client.get(f"/ai/api/npcs/{npc}/traces/7/", HTTP_ACCEPT="application/json")
            listing = client.get(f"/ai/api/npcs/{npc}/traces/", HTTP_ACCEPT="application/json")
            page = client.get(f"/ai/npc/{npc}/trace/7/").content.decode()
            assert api.status_code == listing.status_code == 200
            developer = role == "Developer"
            assert (CELLAR in api.content.decode()) == developer, role
            assert (CELLAR in page) == developer, role
            assert CELLAR not in listing.content.decode()
            if not developer:
                call = api.json()["iterations"][0]["tool_calls"][0]
                assert call["arguments"] == {"message": WITHHELD} and call["error"] == REFUSAL
                assert "Refused: this would reveal" in page

    def test_a_builder_cannot_move_an_npc_to_a_paid_model(self):
        api = self.clients["Builder"].post(
            f"/ai/api/npcs/{self.npc.id}/settings/model/",
            {"value": "openai/gpt-4o"},
            content_type="application/json",
        )
        assert api.status_code == 403 and self.npc.ai.model == ""
        assert api.json()["detail"].startswith("Only Developers may change an NPC's model")
        page = self.clients["Builder"].post(
            f"/ai/npc/{self.npc.id}/control/model/", {"value": "openai/gpt-4o"}
        )
        assert page.status_code == 403 and self.npc.ai.model == ""
        api = self.clients["Developer"].post(
            f"/ai/api/npcs/{self.npc.id}/settings/model/",
            {"value": "openai/gpt-4o"},
            content_type="application/json",
        )
        assert api.status_code == 200 and self.npc.ai.model == "openai/gpt-4o"


class TestModelCommands(AICommandTestBase):
    def test_a_builder_cannot_create_an_npc_on_a_model_not_listed(self):
        builder = self.with_permission("Builder")
        reply = self.call(CmdAINpc(), "/create Marta = openai/gpt-4o", caller=builder)
        assert reply.startswith("Only Developers may")
        assert not [o for o in self.room1.contents if o.key == "Marta"]
        with override_settings(EVENNIA_AI_BUILDER_MODELS=["openai/gpt-4o-mini"]):
            reply = self.call(CmdAINpc(), "/create Marta = openai/gpt-4o-mini", caller=builder)
        assert reply.startswith("Created AI NPC Marta")

    def test_creating_on_the_server_model_needs_no_listing(self):
        builder = self.with_permission("Builder")
        reply = self.call(CmdAINpc(), "/create Marta = default", caller=builder)
        assert reply.startswith("Created AI NPC Marta")
        marta = next(o for o in self.room1.contents if o.key == "Marta")
        assert marta.ai.model == ""  # the server's model, not one named "default"

    def test_an_unreadable_setting_leaves_models_to_developers(self):
        builder = self.with_permission("Builder")
        with override_settings(EVENNIA_AI_BUILDER_MODELS={"openai/gpt-4o": True}):
            reply = self.call(CmdAINpc(), "/model Innkeeper = openai/gpt-4o", caller=builder)
        assert reply.startswith("Only Developers may") and self.npc.ai.model == ""
        with override_settings(EVENNIA_AI_BUILDER_MODELS="openai/gpt-4o"):
            reply = self.call(CmdAINpc(), "/model Innkeeper = openai/gpt-4o", caller=builder)
        assert reply.startswith("Innkeeper now uses")


class TestTraceCommands(AICommandTestBase):
    """``aitrace`` shows a Builder what the trace API shows them: no secret in a refused call."""

    def test_aitrace_withholds_a_refused_secret_below_developer(self):
        self.npc.ai.set_user_system_prompt(OPERATOR_PROMPT)
        self.npc.ai.record_trace(refused_say_trace(tick_id=7))  # stored as main stored it
        builder = self.with_permission("Builder")
        shown = self.call(CmdAITrace(), "/show Innkeeper = 7", caller=builder)
        assert CELLAR not in shown and "Refused: this would reveal" in shown
        assert CELLAR not in self.call(CmdAITrace(), "Innkeeper", caller=builder)
        developer = self.with_permission("Developer")
        assert CELLAR in self.call(CmdAITrace(), "/show Innkeeper = 7", caller=developer)

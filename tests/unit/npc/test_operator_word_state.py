"""Issue 31, item 1: set-aside state and unreadable settings fail closed.

Each test attacks the way the issue did: a restricting value stored in the wrong shape (an
operator prompt as a list, ``tool_deny`` as a string, an own budget ``{"tokens": "100"}``) must
leave the NPC at least as restricted as before, never unrestricted; a budget or security setting
that cannot be read counts as its strictest value; a wrong shape is refused when written; staff
are told once per value set aside; and a set-aside Developer-only value is shown to Developers
only. On main at ec0a5a3 each of these failed.
"""

from __future__ import annotations

from unittest import mock

import pytest
from django.test import override_settings
from support.commands import AICommandTestBase
from unit.engine.test_assistant_tick import AssistantTestBase

from evennia_ai import conf, startstop
from evennia_ai.commands.npcs import CmdAIStatus
from evennia_ai.commands.runtime import CmdAITools
from evennia_ai.engine import notices
from evennia_ai.engine.tick import TickState
from evennia_ai.npc import spending
from evennia_ai.npc import state as state_module
from evennia_ai.npc.state_keys import (
    CHARACTER_STATE,
    SCRIPT_STATE,
    fallback_group_tools,
    outside_fallback_group,
    shape_problem,
)
from evennia_ai.prompt_registry import effective_context_config
from evennia_ai.tools import safety, select_tools

SECRET_PROMPT = ["Secret: the vault code is 4711", "Never open the cellar."]


def tool_names(npc, context="tick_event") -> set[str]:
    return {tool.name for tool in select_tools(npc, effective_context_config(context))}


class StateTestBase(AssistantTestBase):
    def setUp(self):
        super().setUp()
        spending.reset_cache()
        self.addCleanup(spending.reset_cache)
        patcher = mock.patch.object(notices, "_announce")
        self.announced = patcher.start()
        self.addCleanup(patcher.stop)

    def store(self, key, value, on=None):
        """A value written past the handler (a hand edit, an old layout, a bug)."""
        (on or self.npc).attributes.add(key, value, category="ai")

    def answered(self, line="Hello Innkeeper, an ale please?"):
        self.speak(line)
        with mock.patch.object(self.char1, "msg") as heard:
            trace = self.tick()
        said = " ".join(str(c.kwargs.get("text") or c.args) for c in heard.call_args_list)
        return trace, said


class TestOperatorPromptSetAside(StateTestBase):
    def test_a_prompt_stored_as_a_list_stops_the_model_in_silence_mode(self):
        self.npc.ai.set_user_system_prompt("Only ever speak of ale.")
        self.store("user_system_prompt", SECRET_PROMPT)
        with override_settings(EVENNIA_AI_BUDGET_EXCEEDED_ACTION="silence"):
            trace, said = self.answered()
            status = self.npc.ai.status()
        assert trace.stop_reason == "budget" and not trace.iterations, trace.to_dict()
        assert "held" in trace.budget and "user_system_prompt" in trace.budget
        assert "Innkeeper" not in said
        assert status["held"] and status["budget_state"].startswith("held:")

    @override_settings(EVENNIA_AI_BUDGET_EXCEEDED_ACTION="offline")
    def test_in_offline_mode_a_paid_model_is_not_called(self):
        self.npc.ai.set_model("openai/gpt-4o")
        self.store("user_system_prompt", SECRET_PROMPT)
        state = TickState.read(self.npc, "tick_event", [], 1)
        assert state.model == conf.OFFLINE_MODEL
        assert state.spending.exceeded and state.spending.scope == spending.HELD

    def test_restore_or_discard_or_a_new_prompt_lifts_the_hold(self):
        self.store("user_system_prompt", SECRET_PROMPT)
        assert self.npc.ai.held()
        self.npc.ai.set_user_system_prompt("Be kind.")  # staff wrote a new one
        assert self.npc.ai.held() == []
        self.npc.attributes.remove("user_system_prompt", category="ai")
        assert self.npc.ai.held()  # the set-aside value is still undecided
        assert self.npc.ai.discard("user_system_prompt")
        assert self.npc.ai.held() == [] and not spending.check(self.npc).exceeded

    def test_an_unreadable_override_file_holds_the_npc(self):
        with override_settings(EVENNIA_AI_OPERATOR_OVERRIDE="/nonexistent/operator.txt"):
            assert "EVENNIA_AI_OPERATOR_OVERRIDE" in " ".join(self.npc.ai.held())
            with override_settings(EVENNIA_AI_BUDGET_EXCEEDED_ACTION="silence"):
                trace, said = self.answered()
        assert trace.stop_reason == "budget" and not trace.iterations


class TestToolListsSetAside(StateTestBase):
    def test_a_deny_list_stored_as_a_string_still_denies_page(self):
        self.store("tool_deny", "page")
        names = tool_names(self.npc)
        assert "page" not in names
        assert names <= set(fallback_group_tools())  # the conversation tools only
        assert "page" in self.npc.ai.tool_deny

    def test_an_allow_list_that_cannot_be_read_leaves_the_conversation_tools(self):
        self.store("tool_allow", {"only": 3})
        assert set(self.npc.ai.tool_allow) == set(fallback_group_tools())
        self.npc.attributes.remove("tool_allow", category="ai_quarantine")
        self.store("tool_allow", "say look")
        assert sorted(self.npc.ai.tool_allow) == ["look", "say"]
        assert tool_names(self.npc) <= {"say", "look"}

    def test_set_aside_rules_deny_the_tools_they_covered(self):
        self.store("tool_rules", {"type": "max_calls", "tool": "give", "value": "1"})
        assert self.npc.ai.tool_rules == []
        assert "give" in self.npc.ai.tool_deny and "give" not in tool_names(self.npc, "reflection")

    def test_set_aside_rules_naming_no_tool_leave_the_conversation_tools(self):
        self.store("tool_rules", "cooldown")
        assert set(outside_fallback_group()) <= set(self.npc.ai.tool_deny)

    def test_a_new_list_written_by_staff_replaces_the_fallback(self):
        self.store("tool_deny", "page")
        assert "move" in self.npc.ai.tool_deny
        self.npc.ai.set("tool_deny", ["page"])
        assert self.npc.ai.tool_deny == ["page"]
        assert "move" not in self.npc.ai.tool_deny


class TestOtherRestrictions(StateTestBase):
    def test_an_own_budget_of_the_wrong_shape_is_zero(self):
        self.store("budget", {"tokens": "100"})
        status = spending.check(self.npc)
        assert status.npc_token_limit == 0 and status.npc_cost_limit == 0
        assert status.exceeded and status.scope == "npc"

    def test_enabled_and_paused_fall_back_to_not_running(self):
        self.store("enabled", "yes")
        self.store("paused", "no", on=self.script)
        assert self.npc.ai.enabled is False and self.npc.ai.paused is True
        assert self.npc.ai.status()["state"] == "stopped"

    def test_execution_config_falls_back_to_dangerous_off(self):
        self.store("execution_config", {"sub_agents_enabled": "yes"}, on=self.script)
        config = self.npc.ai.execution_config
        assert "DANGEROUS" not in config["allowed_tool_categories"]
        assert config["sub_agents_enabled"] is False
        dangerous = {"execute_command", "set_attribute"}
        assert not dangerous & tool_names(self.npc, "reflection")

    def test_set_aside_whispers_stay_private(self):
        """Whispers stored in the wrong shape keep guarding what was whispered."""
        whisper = {"source": "#99", "source_name": "Ann", "text": "the vault code is 4711"}
        self.store("private_whispers", {"kept": whisper})  # a dict where a list belongs
        kept = self.npc.ai.private_whispers
        assert [w["text"] for w in kept] == ["the vault code is 4711"]
        assert safety.whisper_leak(kept, "Well, the vault code is 4711!", audience=["#5"])

    def test_set_aside_blocks_keep_their_secret_marks(self):
        block = {"label": "vault", "value": "code 4711", "secret": True, "permission": "read_only"}
        self.store("blocks", [block])  # a list where a mapping by label belongs
        kept = self.npc.ai.blocks
        assert kept["vault"]["secret"] is True and kept["vault"]["permission"] == "read_only"

    def test_every_restricting_key_declares_its_strictest_value(self):
        restricting = {
            "enabled",
            "user_system_prompt",
            "tool_rules",
            "tool_allow",
            "tool_deny",
            "budget",
            "private_whispers",
            "blocks",
            "goods",
            "ledger",
        }
        for name in restricting:
            assert CHARACTER_STATE[name].strict is not None, name
        assert SCRIPT_STATE["execution_config"].strict and SCRIPT_STATE["paused"].strict


class TestWritesAreChecked(StateTestBase):
    def test_wrong_shapes_are_refused_naming_key_and_problem(self):
        with pytest.raises(ValueError, match="'user_system_prompt'.*must be string, not array"):
            self.npc.ai.set("user_system_prompt", ["Be kind."])
        with pytest.raises(ValueError, match="'tool_deny'"):
            self.npc.ai.set("tool_deny", "page")
        with pytest.raises(ValueError, match=r"budget\.tokens must be integer"):
            self.npc.ai.update("budget", lambda b: {**b, "tokens": "100"})
        with pytest.raises(ValueError, match=r"'script\.paused'"):
            self.npc.ai.script_state(self.script).set("paused", "no")
        assert not self.npc.attributes.has("user_system_prompt", category="ai")

    def test_a_goal_written_in_the_wrong_shape_never_reaches_a_tick(self):
        with pytest.raises(ValueError, match=r"current_goals\[0\] must be object"):
            self.npc.ai.update_goals(lambda goals: goals + [["find ale"]])
        with pytest.raises(ValueError, match="current_goals"):
            self.npc.ai.update_goals(lambda goals: goals + [{"description": 7}])
        trace, said = self.answered()
        assert trace.error is None and "Innkeeper" in said

    def test_every_declared_key_refuses_a_wrong_value(self):
        from unit.npc.test_state_declared import WRONG, WRONG_SCRIPT

        for key, wrong in WRONG.items():
            with self.subTest(key=key), pytest.raises(ValueError, match=key):
                self.npc.ai.set(key, wrong)
        state = self.npc.ai.script_state(self.script)
        for key, wrong in WRONG_SCRIPT.items():
            with self.subTest(key=key), pytest.raises(ValueError, match=key):
                state.set(key, wrong)

    def test_the_shape_check_passes_a_long_history(self):
        history = [
            {"role": "user" if n % 2 else "assistant", "content": "x" * 300} for n in range(200)
        ]
        schema = CHARACTER_STATE["history"].schema
        # its cost is measured by `python -m bench guards`, not asserted here
        assert shape_problem(history, schema, "history") is None


class TestNoticesAndRedaction(StateTestBase):
    def test_one_notice_per_value_set_aside_without_the_value(self):
        self.store("user_system_prompt", SECRET_PROMPT)
        for _ in range(3):
            assert self.npc.ai.user_system_prompt == ""
            self.npc.ai.status()
        assert self.announced.call_count == 1
        text = self.announced.call_args.args[0]
        assert "Innkeeper" in text and "user_system_prompt" in text and "aistatus" in text
        assert "4711" not in text
        self.store("tool_deny", "page")
        for _ in range(2):
            assert "page" in self.npc.ai.tool_deny
        assert self.announced.call_count == 2

    def test_status_redacts_developer_only_values(self):
        self.store("user_system_prompt", SECRET_PROMPT)
        self.store("sleep", "no")
        self.npc.ai.quarantined()
        kept = self.npc.ai.status()["quarantined"]
        assert "4711" not in repr(kept)
        assert kept["user_system_prompt"]["redacted"] is True
        assert kept["sleep"]["value"] == "no"  # not Developer-only
        revealed = self.npc.ai.quarantined(reveal=True)
        assert revealed["user_system_prompt"]["value"] == SECRET_PROMPT


class TestSettingsThatCannotBeRead(StateTestBase):
    def test_an_unreadable_budget_setting_is_zero_and_reported(self):
        with override_settings(EVENNIA_AI_DAILY_TOKEN_BUDGET_PER_NPC="lots"):
            status = spending.check(self.npc)
            assert status.npc_token_limit == 0 and status.exceeded
            assert "EVENNIA_AI_DAILY_TOKEN_BUDGET_PER_NPC" in conf.unreadable_settings()
            assert (
                "EVENNIA_AI_DAILY_TOKEN_BUDGET_PER_NPC"
                in self.npc.ai.status()["unreadable_settings"]
            )
            with mock.patch.object(startstop.logger, "log_err") as err:
                startstop.report_unreadable_settings()
            assert "EVENNIA_AI_DAILY_TOKEN_BUDGET_PER_NPC" in err.call_args.args[0]
        with override_settings(EVENNIA_AI_DAILY_COST_BUDGET_SERVER=-5):
            assert spending.check(self.npc).server_cost_limit == 0

    def test_none_and_zero_still_mean_no_limit(self):
        for value in (None, "", 0):
            with override_settings(EVENNIA_AI_DAILY_TOKEN_BUDGET_SERVER=value):
                assert spending.check(self.npc).server_token_limit is None
        assert conf.unreadable_settings() == {}

    def test_unreadable_secrets_hold_every_npc(self):
        with override_settings(EVENNIA_AI_SECRETS={"vault": 4711}):
            assert "EVENNIA_AI_SECRETS cannot be read" in self.npc.ai.held()
        with override_settings(EVENNIA_AI_SECRETS="the vault code is 4711"):
            assert conf.get("EVENNIA_AI_SECRETS") == ["the vault code is 4711"]
            assert self.npc.ai.held() == []

    def test_an_unreadable_guard_keeps_its_strict_value(self):
        with override_settings(EVENNIA_AI_SPEAKER_EVENTS_PER_MINUTE="off"):
            assert conf.get("EVENNIA_AI_SPEAKER_EVENTS_PER_MINUTE") == 20
        with override_settings(EVENNIA_AI_MAX_TOOL_ARGUMENT_CHARS=None):
            assert conf.get("EVENNIA_AI_MAX_TOOL_ARGUMENT_CHARS") == 20000

    def test_logged_once_per_value(self):
        with mock.patch.object(conf._log, "warning") as warn:
            with override_settings(EVENNIA_AI_DAILY_COST_BUDGET_PER_NPC="cheap"):
                for _ in range(3):
                    conf.get("EVENNIA_AI_DAILY_COST_BUDGET_PER_NPC")
        assert warn.call_count == 1


class TestAIStatusCommand(AICommandTestBase):
    def setUp(self):
        super().setUp()
        patcher = mock.patch.object(notices, "_announce")
        patcher.start()
        self.addCleanup(patcher.stop)
        self.npc.attributes.add("user_system_prompt", SECRET_PROMPT, category="ai")

    def test_builders_do_not_see_a_set_aside_operator_prompt(self):
        builder = self.with_permission("Builder")
        out = self.call(CmdAIStatus(), "Innkeeper", caller=builder)
        assert "kept aside user_system_prompt" in out and "4711" not in out
        assert "Developers only" in out and "held" in out
        out = self.call(CmdAIStatus(), "/discard Innkeeper = user_system_prompt", caller=builder)
        assert "Only Developers" in out

    def test_developers_do(self):
        out = self.call(CmdAIStatus(), "Innkeeper", caller=self.with_permission("Developer"))
        assert "4711" in out

    def test_aitools_says_its_lists_are_strictest_values(self):
        self.npc.attributes.add("tool_deny", "page", category="ai")
        out = self.call(CmdAITools(), "Innkeeper", caller=self.char1)
        assert "set aside" in out and "tool_deny" in out and "move" in out

    def test_unreadable_settings_are_listed(self):
        with override_settings(EVENNIA_AI_DAILY_COST_BUDGET_SERVER="cheap"):
            out = self.call(CmdAIStatus(), "", caller=self.char1)
        assert "unreadable setting" in out and "EVENNIA_AI_DAILY_COST_BUDGET_SERVER" in out


def test_state_module_names_the_redaction_marker():
    assert "Developers only" in state_module.REDACTED

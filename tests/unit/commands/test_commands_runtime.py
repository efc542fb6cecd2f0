"""The runtime admin commands: aitools, aisleep, aitrace, aiconfirm and interact."""

from unittest import mock

import pytest
from django.test import override_settings
from support.commands import AICommandTestBase

from evennia_ai.commands.runtime import (
    COMMANDS,
    CmdAIConfirm,
    CmdAISleep,
    CmdAITools,
    CmdAITrace,
    CmdInteract,
    parse_until,
)
from evennia_ai.engine.trace import IterationTrace, TickTrace, ToolCallTrace
from evennia_ai.testing.model_server import ModelServer
from evennia_ai.tools.approvals import get_confirmation_queue

pytestmark = pytest.mark.postgres  # also run on PostgreSQL (make test)


class RuntimeCommandTest(AICommandTestBase):
    pass


class TestLocksAndUsage(RuntimeCommandTest):
    def test_every_command_is_builder_locked(self):
        player = self.player()
        for command in COMMANDS:
            assert command.locks == "cmd:perm(Builder)"
            assert not command().access(player, "cmd"), command.key
            assert command().access(self.char1, "cmd"), command.key

    def test_usage_without_args(self):
        for command in (CmdAITools, CmdAISleep, CmdAITrace, CmdInteract):
            self.call(command(), "", "Usage:")


class TestAITools(RuntimeCommandTest):
    def test_list_shows_categories_and_verdicts(self):
        out = self.call(CmdAITools(), "Innkeeper", "Tools of Innkeeper")
        assert "say" in out and "TERMINAL" in out and "allowed" in out

    def test_deny_allow_only_category_reset(self):
        self.call(
            CmdAITools(),
            "/deny Innkeeper = execute_command, look",
            "Innkeeper may no longer use execute_command, look",
        )
        assert self.npc.ai.tool_deny == ["execute_command", "look"]
        out = self.call(CmdAITools(), "Innkeeper", "Tools of")
        assert "denied" in out
        self.call(CmdAITools(), "/allow Innkeeper = look", "Innkeeper may use look again")
        assert self.npc.ai.tool_deny == ["execute_command"]
        self.call(
            CmdAITools(), "/only Innkeeper = say, look", "Innkeeper is offered only look, say"
        )
        assert self.npc.ai.tool_allow == ["look", "say"]
        self.call(
            CmdAITools(),
            "/category Innkeeper = safe_chain terminal",
            "Innkeeper may use tools of the categories SAFE_CHAIN, TERMINAL only",
        )
        assert self.npc.ai.execution_config["allowed_tool_categories"] == ["SAFE_CHAIN", "TERMINAL"]
        self.call(CmdAITools(), "/reset Innkeeper", "Innkeeper's tool restrictions are removed")
        assert self.npc.ai.tool_allow is None and self.npc.ai.tool_deny == []
        assert "allowed_tool_categories" not in self.npc.ai.execution_config

    def test_restrictions_reach_tool_selection(self):
        from evennia_ai.prompt.contexts import get_context_config
        from evennia_ai.tools import select_tools

        self.call(CmdAITools(), "/deny Innkeeper = look", "Innkeeper may no longer use")
        names = [t.name for t in select_tools(self.npc, get_context_config("tick_event"))]
        assert "look" not in names and "say" in names

    def test_bad_arguments(self):
        self.call(CmdAITools(), "/deny Innkeeper = fly_to_moon", "Unknown tool(s): fly_to_moon")
        self.call(CmdAITools(), "/category Innkeeper = MAGIC", "Unknown tool categories ['MAGIC']")
        self.call(CmdAITools(), "/deny Innkeeper", "Missing tool name(s)")
        self.call(CmdAITools(), "Nobody", "No AI NPC called 'Nobody'")


class TestAISleep(RuntimeCommandTest):
    def test_show_now_schedule_wake(self):
        self.call(CmdAISleep(), "Innkeeper", "Sleep of Innkeeper")
        self.call(CmdAISleep(), "/now Innkeeper = +2h", "Innkeeper falls asleep until")
        sleep = self.npc.ai.sleep
        assert sleep["asleep"] and sleep["reason"] == "operator" and sleep["until"]
        out = self.call(CmdAISleep(), "Innkeeper", "Sleep of")
        assert "asleep since" in out
        self.call(
            CmdAISleep(),
            '/schedule Innkeeper = until=2030-01-01T06:00 reason="long rest" phase=rest',
            "Innkeeper's sleep state: until=2030-01-01T06:00:00Z",
        )
        sleep = self.npc.ai.sleep
        assert sleep["reason"] == "long rest" and sleep["phase"] == "rest"
        self.call(CmdAISleep(), "/wake Innkeeper", "Innkeeper wakes up")
        assert not self.npc.ai.sleep["asleep"]
        self.call(CmdAISleep(), "/wake Innkeeper", "Innkeeper is awake already")

    def test_sleeping_and_waking_keep_the_last_consolidation(self):
        self.npc.ai.set("sleep", {"asleep": False, "last_consolidated": "2026-01-01T03:00:00Z"})
        self.call(CmdAISleep(), "/now Innkeeper", "Innkeeper falls asleep.")
        self.call(CmdAISleep(), "/wake Innkeeper", "Innkeeper wakes up")
        assert self.npc.ai.sleep["last_consolidated"] == "2026-01-01T03:00:00Z"
        out = self.call(CmdAISleep(), "Innkeeper", "Sleep of Innkeeper")
        assert "last consolidated: 2026-01-01 03:00:00 UTC" in out

    def test_bad_schedule(self):
        self.call(CmdAISleep(), "/schedule Innkeeper = colour=blue", "'colour=blue' is not")
        self.call(CmdAISleep(), "/schedule Innkeeper = phase=dreaming", "phase must be one of")
        self.call(
            CmdAISleep(), "/schedule Innkeeper = until=tomorrow", "'tomorrow' is not an ISO time"
        )
        self.call(CmdAISleep(), "/now Innkeeper = +abc", "'+abc' is not a duration")

    def test_parse_until(self):
        assert parse_until("none") is None
        assert parse_until("2030-01-01T06:00").startswith("2030-01-01T06:00:00")
        assert parse_until("+30") > parse_until("+10m")

    def test_reflect_makes_reflection_due(self):
        from evennia_ai.engine.agenda import Agenda

        self.call(CmdAISleep(), "/reflect Innkeeper", "Innkeeper will reflect on its next tick")
        agenda = Agenda(self.npc, self.npc.ai.script.tick_count)
        assert agenda.reflection_due(self.npc.ai.reflection)
        with override_settings(
            EVENNIA_AI_REFLECTION_INTERVAL=0, EVENNIA_AI_REFLECTION_IMPORTANCE_THRESHOLD=0
        ):
            assert agenda.reflection_due(self.npc.ai.reflection)  # asked, not by interval
            self.npc.ai.update("reflection", lambda state: {**state, "requested": False})
            assert not agenda.reflection_due(self.npc.ai.reflection)


def sample_trace(tick_id=7):
    trace = TickTrace(
        tick_id=tick_id,
        context_type="tick_event",
        event_text='Char says: "hi"',
        stop_reason="terminal_tool",
        duration=1.5,
        pattern={"mode": "react_loop", "max_iterations": 5},
    )
    trace.add_iteration(
        IterationTrace(
            index=0,
            sections={"system_prompt": 900, "history": 300, "tools": 600},
            usage={"prompt_tokens": 1800, "completion_tokens": 40},
            cost=0.002,
            model="openai/x",
            text="A guest greets me; I should answer warmly.",
            tool_calls=[
                ToolCallTrace(
                    id="1",
                    name="say",
                    arguments={"message": "Welcome!"},
                    category="TERMINAL",
                    success=True,
                    result="You say, Welcome!",
                )
            ],
        )
    )
    return trace


class TestAITrace(RuntimeCommandTest):
    def test_list_and_show(self):
        self.call(CmdAITrace(), "Innkeeper", "Innkeeper has not ticked yet")
        for tick_id in (6, 7):
            self.npc.ai.record_trace(sample_trace(tick_id).to_dict())
        out = self.call(CmdAITrace(), "Innkeeper 1", "Last 1 tick(s) of Innkeeper")
        assert "#7" in out and "#6" not in out and "terminal_tool" in out and "1,840 tokens" in out
        out = self.call(CmdAITrace(), "/show Innkeeper = 7", "Tick #7 (tick_event)")
        for part in (
            "thought: A guest greets me",
            "tool say(message: Welcome!) -> ran",
            "system_prompt",
            "#####",
            "total",
            "budget: within budget",
        ):
            assert part in out, part

    def test_model_text_is_shown_literally(self):
        trace = sample_trace(8)
        trace.iterations[0].text = "I think |rin red|n"
        trace.iterations[0].tool_calls[0].arguments = {"message": "|555Welcome!"}
        self.npc.ai.record_trace(trace.to_dict())
        out = self.call(CmdAITrace(), "/show Innkeeper = 8", "Tick #8 (tick_event)")
        assert "thought: I think |rin red|n" in out and "say(message: |555Welcome!)" in out

    def test_bad_arguments(self):
        self.call(CmdAITrace(), "/show Innkeeper = 99", "Innkeeper has no trace of tick #99")
        self.call(CmdAITrace(), "/show Innkeeper = abc", "The tick id must be a whole number")
        self.call(CmdAITrace(), "/show Innkeeper", "Missing tick id")
        self.call(CmdAITrace(), "Innkeeper 0", "The count must be at least 1")


class TestAIConfirm(RuntimeCommandTest):
    def test_list_approve_reject(self):
        self.call(CmdAIConfirm(), "", "No actions await confirmation")
        queue = get_confirmation_queue()
        first = queue.add_entry(
            self.npc, "say", {"arguments": {"message": "Hello all"}}, reason="wants to greet"
        )
        second = queue.add_entry(self.npc, "say", {"arguments": {"message": "Go away"}})
        out = self.call(CmdAIConfirm(), "", "Pending confirmations (2)")
        assert first in out and "Innkeeper" in out and "message: Hello all" in out
        out = self.call(CmdAIConfirm(), f"/approve {first}", None)  # Char also hears the NPC
        assert f"Approved {first}: Innkeeper's say ran. You said" in out
        self.call(
            CmdAIConfirm(),
            f"/reject {second} = rude",
            f"Rejected {second}: Innkeeper's say did not run. Reason given: rude.",
        )
        assert not queue.list_entries()
        self.call(
            CmdAIConfirm(), f"/approve {first}", f"Confirmation '{first}' was already decided"
        )

    def test_model_written_markup_is_shown_literally(self):
        queue = get_confirmation_queue()
        queue.add_entry(
            self.npc,
            "say",
            {"arguments": {"message": "|rRED|n |lclook|ltclick|le"}},
            reason="because |555colour",
        )
        out = self.call(CmdAIConfirm(), "", "Pending confirmations (1)")
        assert "\u00a6rRED\u00a6n" in out and "\u00a6555colour" in out  # inert look-alikes

    def test_bad_arguments(self):
        self.call(CmdAIConfirm(), "/approve c_nothere", "No confirmation with id 'c_nothere'")
        self.call(CmdAIConfirm(), "/approve", "Missing confirmation id")
        self.call(CmdAIConfirm(), "c_123", "Give /approve or /reject with an id")


class TestInteract(RuntimeCommandTest):
    def test_offline_model_answers_and_caller_sees_the_trace(self):
        out = self.call(CmdInteract(), "Innkeeper = Hello there!", "You say to Innkeeper")
        assert "thought it over" in out and "tool " in out, out
        trace = TickTrace.from_dict(self.npc.ai.traces()[-1])
        assert trace.context_type == "tick_event"
        assert "Hello there!" in trace.event_text

    def test_loopback_model_reasoning_is_shown(self):
        server = ModelServer().start()
        self.addCleanup(server.stop)
        server.enqueue(
            {
                "text": "Greet the guest.",
                "tool_calls": [{"name": "say", "arguments": {"message": "Welcome, friend!"}}],
            }
        )
        with override_settings(
            EVENNIA_AI_MODEL="openai/test-model",
            EVENNIA_AI_API_BASE=server.url,
            EVENNIA_AI_API_KEY="x",
            EVENNIA_AI_MAX_RETRIES=0,
            EVENNIA_AI_TIMEOUT=3,
        ):
            out = self.call(CmdInteract(), "Innkeeper = Hello!", "You say to Innkeeper")
        assert "thought: Greet the guest." in out, out
        assert "tool say(message: Welcome, friend!) -> ran" in out, out

    def test_busy_npc_answers_after_the_running_tick(self):
        script = self.npc.ai.script
        script.ndb.busy = True
        with mock.patch("evennia_ai.commands.runtime.delay") as delay:
            out = self.call(CmdInteract(), "Innkeeper = Hi", "You say to Innkeeper")
        assert "thought it over" not in out and delay.called
        script.ndb.busy = False
        callback = delay.call_args.args[1]
        with mock.patch.object(self.char1, "msg") as heard:
            script.run_tick()
            callback()
        assert "thought it over" in str(heard.call_args)

    def test_refuses_paused_and_bad_input(self):
        self.call(CmdInteract(), "Innkeeper", "Give your message after '='")
        self.call(CmdInteract(), "Innkeeper =", "Missing message")
        self.call(CmdInteract(), "Nobody = hi", "No AI NPC called 'Nobody'")
        self.npc.ai.pause()
        self.call(CmdInteract(), "Innkeeper = hi", "Innkeeper is paused")

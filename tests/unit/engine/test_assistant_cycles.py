"""Reflection, sleep phases, sub-agents and autonomy of an assistant (database tests)."""

from unittest import mock

from django.test import override_settings
from unit.engine.test_assistant_tick import AssistantTestBase

from evennia_ai.engine.trace import StopReason
from evennia_ai.workspace.goals import add_goal


def call(name, **arguments):
    return {"name": name, "arguments": arguments}


class ModelBase(AssistantTestBase):
    def setUp(self):
        super().setUp()
        self.answer_from_loopback(EVENNIA_AI_AUTONOMY=False)


class TestReflection(ModelBase):
    def test_reflection_every_n_ticks_then_continuation_and_rules(self):
        self.script.attributes.add("tick_count", 5, category="ai")
        with override_settings(EVENNIA_AI_REFLECTION_INTERVAL=1, EVENNIA_AI_AUTONOMY=False):
            self.server.enqueue(
                {
                    "tool_calls": [
                        call(
                            "add_journal_entry",
                            content="RULE: Greet regulars by name",
                            importance=6,
                        )
                    ]
                },
                {"text": "Reflection done."},
                {"tool_calls": [call("noop")]},
            )
            trace = self.tick()
            assert trace.context_type == "reflection"
            system = self.server.requests_to("/v1/chat/completions")[0].body["messages"][0][
                "content"
            ]
            assert "self-reflection" in system
            assert self.npc.ai.journal[0]["content"].startswith("RULE:")
            assert self.npc.ai.behaviour_rules == ["Greet regulars by name"]
            trace2 = self.tick()
            assert trace2.context_type == "reflection_cont"
            assert not self.npc.ai.reflection.get("continue")

    def test_reflection_when_journal_importance_passes_threshold(self):
        from evennia_ai.workspace.journal import add_entry

        with override_settings(
            EVENNIA_AI_REFLECTION_INTERVAL=0, EVENNIA_AI_REFLECTION_IMPORTANCE_THRESHOLD=10
        ):
            journal, _ = add_entry([], "Big news", importance=10)
            self.npc.ai.set("journal", journal)
            self.server.enqueue({"tool_calls": [call("noop")]})
            assert self.tick().context_type == "reflection"

    def test_learned_rules_reach_the_prompt(self):
        self.npc.ai.set("behaviour_rules", ["Offer stew to tired travellers"])
        self.server.enqueue({"tool_calls": [call("say", message="hi")]})
        self.speak("Hello Innkeeper")
        self.tick()
        system = self.server.last_request().body["messages"][0]["content"]
        assert "Offer stew to tired travellers" in system


class TestEmergencyCompaction(ModelBase):
    def test_not_postponed_while_events_keep_coming(self):
        self.npc.ai.set("compaction", {"pending": True, "reason": "emergency", "last_tick": None})
        self.speak("Innkeeper, another ale!")
        self.server.default_reply = {"tool_calls": [call("noop")]}
        assert self.tick().context_type == "pre_compaction"
        assert self.npc.ai.compaction["pending"] is False
        assert self.npc.ai.compaction["strategy"] in ("summarize", "truncate")  # for aihistory
        assert self.tick().context_type == "tick_event"  # the line waited one tick, not lost

    def test_a_sleep_compaction_waits_for_a_quiet_moment(self):
        self.npc.ai.set("compaction", {"pending": True, "reason": "sleep", "last_tick": None})
        self.speak("Innkeeper, another ale!")
        self.server.default_reply = {"tool_calls": [call("noop")]}
        assert self.tick().context_type == "tick_event"
        assert self.tick().context_type == "pre_compaction"


class TestSleep(ModelBase):
    def test_scheduled_sleep_recurs_every_night_after_a_wake_up(self):
        from evennia_ai.workspace.journal import add_entry

        journal, _ = add_entry([], "Served the mayor.", importance=4)  # a day to consolidate
        self.npc.ai.set("journal", journal)
        night = {"now": True}
        with (
            mock.patch("evennia_ai.engine.agenda.in_sleep_window", lambda _s: night["now"]),
            mock.patch("evennia_ai.workspace.sleep.in_sleep_window", lambda _s: night["now"]),
            override_settings(EVENNIA_AI_SLEEP_SCHEDULE=("22:00", "06:00")),
        ):
            self.server.default_reply = {"tool_calls": [call("noop")]}
            assert self.tick().context_type == "sleep_consolidate"
            self.npc.ai.update("sleep", lambda s: {**s, "phase": "rest"})
            self.speak("Wake up, Innkeeper!")
            with override_settings(EVENNIA_AI_WAKE_WHEN_ADDRESSED=True):
                assert self.tick().context_type == "tick_event"  # woken for the rest of the night
            assert self.npc.ai.sleep["woken_in_window"] is True
            assert self.tick() is None  # still the same night: stays awake
            night["now"] = False
            assert self.tick() is None  # morning: the wake-up is forgotten
            assert self.npc.ai.sleep["woken_in_window"] is False
            night["now"] = True
            # the next night falls on the next real day: consolidations are capped per real
            # day (EVENNIA_AI_CONSOLIDATIONS_PER_DAY), and a daily window sleeps once a day
            with mock.patch("evennia_ai.engine.upkeep.today", lambda: "2999-01-02"):
                assert self.tick().context_type == "sleep_consolidate"  # the next night
            assert self.npc.ai.sleep["asleep"] and self.npc.ai.sleep["reason"] == "scheduled"

    def test_upkeep_stays_out_of_the_conversation_history(self):
        """A sleep's tool traffic would be sent with every later request: only what the NPC
        heard and did in the world joins the history."""
        from evennia_ai.workspace.journal import add_entry
        from evennia_ai.workspace.sleep import go_to_sleep

        self.speak("Innkeeper, my horse is Storm.")
        self.server.default_reply = {"tool_calls": [call("say", message="A fine name.")]}
        assert self.tick().context_type == "tick_event"
        before = list(self.npc.ai.history)
        assert any("Storm" in str(m.get("content")) for m in before)
        journal, _ = add_entry([], "Served the mayor.", importance=4)
        self.npc.ai.set("journal", journal)
        go_to_sleep(self.npc, "test")
        self.server.default_reply = {"tool_calls": [call("noop")]}
        assert self.tick().context_type == "sleep_consolidate"
        assert self.npc.ai.history == before

    def consolidate_with(self, outcome):
        """A sleep tick whose consolidation ends with ``outcome``; the log lines it wrote."""
        from twisted.internet import defer

        from evennia_ai.workspace.journal import add_entry
        from evennia_ai.workspace.sleep import go_to_sleep

        journal, _ = add_entry([], "Served the mayor.", importance=4)
        self.npc.ai.set("journal", journal)
        go_to_sleep(self.npc, "test")
        self.server.default_reply = {"tool_calls": [call("noop")]}
        done = defer.fail(outcome) if isinstance(outcome, Exception) else defer.succeed(outcome)
        with (
            mock.patch("evennia_ai.engine.upkeep.longterm.consolidate", return_value=done),
            mock.patch("evennia_ai.engine.upkeep.logger.log_err") as log_err,
            mock.patch("evennia_ai.engine.upkeep.logger.log_warn") as log_warn,
        ):
            assert self.tick().context_type == "sleep_consolidate"
        return [c.args[0] for c in log_err.call_args_list + log_warn.call_args_list]

    def test_a_failed_consolidation_does_not_mark_the_time(self):
        from evennia_ai.memory.longterm import ConsolidationResult

        who = f"evennia_ai [Innkeeper{self.npc.dbref}]"
        lines = self.consolidate_with(RuntimeError("disk full"))
        assert f"{who}: consolidating memory failed: disk full" in lines
        assert not self.npc.ai.sleep.get("last_consolidated")
        failed = ConsolidationResult(unstored=1, errors=["could not store 'Served': disk full"])
        lines = self.consolidate_with(failed)
        assert f"{who}: consolidating memory: could not store 'Served': disk full" in lines
        assert any(line.startswith(f"{who}: consolidating memory failed: 1 of") for line in lines)
        assert not self.npc.ai.sleep.get("last_consolidated")
        assert self.consolidate_with(ConsolidationResult()) == []
        assert self.npc.ai.sleep["last_consolidated"]

    def test_go_to_sleep_runs_phases_then_rests_and_wakes_when_addressed(self):
        self.server.enqueue({"tool_calls": [call("go_to_sleep", minutes=60)]})
        self.speak("Innkeeper, you look tired")
        trace = self.tick()
        assert trace.stop_reason == StopReason.TERMINAL_TOOL.value
        assert self.npc.ai.sleep["asleep"]
        self.server.enqueue({"tool_calls": [call("noop")]}, {"tool_calls": [call("noop")]})
        assert self.tick().context_type == "sleep_consolidate"
        assert self.tick() is None  # no compaction due: no pre-compaction call; resting
        assert self.npc.ai.sleep["phase"] == "rest"
        self.speak("Wake up, Innkeeper!")
        self.server.enqueue({"tool_calls": [call("say", message="Eh? I'm up.")]})
        with override_settings(EVENNIA_AI_WAKE_WHEN_ADDRESSED=True):
            trace = self.tick()
        assert trace.context_type == "tick_event"
        assert not self.npc.ai.sleep["asleep"]

    def test_pre_compaction_runs_in_sleep_when_a_compaction_is_due(self):
        from evennia_ai.workspace.sleep import go_to_sleep

        self.npc.ai.set("compaction", {"pending": True, "reason": "sleep", "last_tick": None})
        go_to_sleep(self.npc, "test")  # nothing new to consolidate: straight to compaction
        self.server.default_reply = {"tool_calls": [call("noop")]}
        assert self.tick().context_type == "pre_compaction"

    def test_sleep_tools_only_in_sleep_context(self):
        from evennia_ai.workspace.journal import add_entry
        from evennia_ai.workspace.sleep import go_to_sleep

        journal, _ = add_entry([], "Served the mayor.", importance=4)
        self.npc.ai.set("journal", journal)
        go_to_sleep(self.npc, "test")
        self.server.enqueue({"tool_calls": [call("noop")]})
        self.tick()
        offered = {t["function"]["name"] for t in self.server.last_request().body["tools"]}
        assert offered <= {
            "noop",
            "add_journal_entry",
            "review_journal",
            "recall_memories",
            "store_memory",
        }


class TestAutonomyAndSubAgents(ModelBase):
    def test_autonomous_tick_with_active_goals(self):
        self.npc.ai.update_goals(lambda g: add_goal(g, "Stock the cellar", tick=1))
        self.server.enqueue(
            {"tool_calls": [call("update_goal", goal_id="goal_1_0", progress=50)]},
            {"tool_calls": [call("noop")]},
        )
        with override_settings(EVENNIA_AI_AUTONOMY=True, EVENNIA_AI_AUTONOMOUS_MIN_INTERVAL=0):
            trace = self.tick()
        assert trace.context_type == "tick_autonomous"
        assert self.npc.ai.goals[0]["progress"] == 50

    def test_delegate_task_runs_a_child_loop_without_dangerous_tools(self):
        self.npc.ai.set_execution_config(sub_agents_enabled=True, sub_agent_budget=1)
        self.npc.ai.update_goals(lambda g: add_goal(g, "Survey the cellar", tick=1))
        self.server.enqueue(
            {"tool_calls": [call("delegate_task", task="Look around and report what you see")]},
            {"tool_calls": [call("look")]},  # the child
            {"text": "The room has a fire and a bar."},  # the child's report
            {"tool_calls": [call("noop")]},
        )
        with override_settings(EVENNIA_AI_AUTONOMY=True, EVENNIA_AI_AUTONOMOUS_MIN_INTERVAL=0):
            trace = self.tick()
        delegate = trace.tool_calls[0]
        assert delegate.name == "delegate_task" and delegate.success, delegate
        assert "fire and a bar" in delegate.result
        child_request = self.server.requests_to("/v1/chat/completions")[1].body
        child_tools = {t["function"]["name"] for t in child_request["tools"]}
        assert "execute_command" not in child_tools and "delegate_task" not in child_tools

    def test_delegate_refused_when_layer_forbids(self):
        self.npc.ai.update_goals(lambda g: add_goal(g, "Survey", tick=1))
        self.server.enqueue(
            {"tool_calls": [call("delegate_task", task="Look around please")]},
            {"tool_calls": [call("noop")]},
        )
        with override_settings(EVENNIA_AI_AUTONOMY=True, EVENNIA_AI_AUTONOMOUS_MIN_INTERVAL=0):
            trace = self.tick()
        # sub_agents_enabled is off in the static limits by default: the tool is not even offered
        offered = {t["function"]["name"] for t in self.server.requests[0].body["tools"]}
        assert "delegate_task" not in offered
        assert "Unknown tool 'delegate_task'" in trace.tool_calls[0].error


class TestHelperLimits(ModelBase):
    def setUp(self):
        super().setUp()
        self.npc.ai.set_execution_config(sub_agents_enabled=True, sub_agent_budget=5)
        self.npc.ai.update_goals(lambda g: add_goal(g, "Survey the inn", tick=1))

    def autonomous_tick(self):
        with override_settings(EVENNIA_AI_AUTONOMY=True, EVENNIA_AI_AUTONOMOUS_MIN_INTERVAL=0):
            return self.tick()

    def test_helpers_started_per_tick_are_capped(self):
        self.server.default_reply = {"text": "report"}
        self.server.enqueue(
            {"tool_calls": [call("delegate_task", task=f"Look at corner {i}") for i in range(4)]},
            {"text": "report 1"},
            {"text": "report 2"},
        )
        with override_settings(EVENNIA_AI_HELPERS_PER_TICK=2):
            trace = self.autonomous_tick()
        results = [c for c in trace.tool_calls if c.name == "delegate_task"]
        assert [c.success for c in results] == [True, True, False, False]
        assert "At most 2 helpers" in (results[2].error or results[2].result)

    def test_a_helper_stops_at_its_token_cap_and_obeys_tool_rules(self):
        self.npc.ai.set("tool_rules", [{"type": "max_calls", "tool": "look", "value": 1}])
        self.server.enqueue(
            {"tool_calls": [call("delegate_task", task="Look around twice")]},
            {"tool_calls": [call("look"), call("look")], "usage": {"prompt_tokens": 50}},
            {"text": "enough", "usage": {"prompt_tokens": 5000}},
            {"text": "never asked"},
            {"tool_calls": [call("noop")]},
        )
        with override_settings(EVENNIA_AI_HELPER_TOKEN_BUDGET=5000):
            trace = self.autonomous_tick()
        helper = next(c for c in trace.tool_calls if c.name == "delegate_task")
        assert helper.success, helper
        child = [it for it in trace.iterations if it.kind == "delegate"]
        assert len(child) == 2  # the third helper call would pass its 5,000-token cap
        after_looks = self.server.requests_to("/v1/chat/completions")[2].body["messages"]
        results = [m["content"] for m in after_looks if m["role"] == "tool"]
        assert len(results) == 2 and "Rule:" in results[1]  # the NPC's max_calls rule held

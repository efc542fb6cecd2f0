"""Every model call carries its task: scenario tests with a model that can only read.

Each scenario runs the real tick through litellm to the loopback server, answered by the
reading model (:mod:`evennia_ai.testing.reading_model`), which can do a task only from what the
request carries. Each has a control: with the instruction or the input taken out of the
request, the reading model fails the task and the test sees it fail.
"""

from unittest import mock

import pytest
from django.test import override_settings

from evennia_ai.engine.trace import StopReason
from evennia_ai.llm import contracts, gate
from evennia_ai.memory.longterm import StoredMemory
from evennia_ai.prompt import tasks
from evennia_ai.prompt_registry import get_prompt_registry
from evennia_ai.testing.reading_model import facts_in, read_and_answer, section
from evennia_ai.workspace.goals import add_goal
from evennia_ai.workspace.journal import add_entry
from test_assistant_cycles import ModelBase, call


class ReadingBase(ModelBase):
    def setUp(self):
        super().setUp()
        self.server.responder = read_and_answer
        self.server.default_reply = {"tool_calls": [call("noop")]}

    def requests(self):
        return [r.body for r in self.server.requests_to("/v1/chat/completions")]

    def write_journal(self, *texts, importance=5):
        def change(journal):
            for text in texts:
                journal, _ = add_entry(journal, text, importance=importance)
            return journal

        self.npc.ai.update("journal", change)

    def reflect(self):
        self.npc.ai.update("reflection", lambda s: {**s, "requested": True})
        return self.tick()


class TestReflectionLearnsRules(ReadingBase):
    journal = (
        "Served ale to Bob. Lesson: greet regulars by name",
        "A quiet evening; the fire went out twice.",
        "Lost an order. Lesson: write every order down",
    )

    def test_journal_lessons_become_several_rules_from_one_entry(self):
        self.write_journal(*self.journal)
        trace = self.reflect()
        assert trace.context_type == "reflection"
        request = self.requests()[0]
        text = contracts.request_text(request["messages"])
        assert "## Task: reflection" in text and "Since your last reflection:" in text
        assert "Lesson: write every order down" in text  # the journal reached the model
        assert self.npc.ai.behaviour_rules == [
            "greet regulars by name",
            "write every order down",
        ]
        entry = self.npc.ai.journal[-1]["content"]
        assert not entry.startswith("RULE:") and entry.count("RULE:") == 2

    def test_reflection_cont_carries_the_tools_results(self):
        self.write_journal(*self.journal)
        self.reflect()
        trace = self.tick()
        assert trace.context_type == "reflection_cont"
        text = contracts.request_text(self.requests()[-1]["messages"])
        assert "## Task: reflection_cont" in text
        results = section(text, "## Results of your reflection's tools")
        assert results and "add_journal_entry" in results

    def test_control_without_the_journal_no_rule_is_learned(self):
        self.write_journal(*self.journal)
        with mock.patch.object(tasks.TaskBuilder, "_journal", lambda self, since, share=0.5: ""):
            self.reflect()
        assert self.npc.ai.behaviour_rules == []

    def test_control_without_the_rule_instruction_no_rule_is_learned(self):
        self.write_journal(*self.journal)
        with mock.patch.object(tasks, "_reflection_template", lambda: "Think about your day."):
            self.reflect()
        assert self.npc.ai.behaviour_rules == []
        assert "write every order down" in self.npc.ai.journal[-1]["content"]  # prose only


class TestSleepConsolidation(ReadingBase):
    def stored(self):
        calls = []

        def store(npc_id, text, **kwargs):
            from twisted.internet import defer

            calls.append(text)
            return defer.succeed(StoredMemory(id=f"m{len(calls)}", text=text, npc=npc_id))

        patcher = mock.patch("evennia_ai.tools.longterm.longterm.store", store)
        patcher.start()
        self.addCleanup(patcher.stop)
        consolidate = mock.patch("evennia_ai.engine.tick.longterm.consolidate")
        consolidate.start().return_value = __import__(
            "twisted.internet.defer"
        ).internet.defer.succeed([])
        self.addCleanup(consolidate.stop)
        return calls

    def sleep(self):
        from evennia_ai.workspace.sleep import go_to_sleep

        go_to_sleep(self.npc, "test")
        return self.tick()

    def test_journal_facts_move_into_long_term_memory(self):
        stored = self.stored()
        self.write_journal("Bob's sister is Carol, he said.", "Carol's horse is Thunder.")
        trace = self.sleep()
        assert trace.context_type == "sleep_consolidate"
        assert stored == ["Bob's sister is Carol", "Carol's horse is Thunder"]

    def test_control_without_the_journal_nothing_is_stored(self):
        stored = self.stored()
        self.write_journal("Bob's sister is Carol, he said.")
        with mock.patch.object(tasks.TaskBuilder, "_journal", lambda self, since, share=0.5: ""):
            self.sleep()
        assert stored == []


class TestPreCompaction(ReadingBase):
    def fill_history(self):
        from evennia_ai.memory import history as hist

        def change(history):
            for tick in range(1, 16):
                said = (
                    f'{self.char1.key} says to you: "My favourite colour is teal."'
                    if tick == 2
                    else f'Bob says to you: "Nice weather, day {tick}."'
                )
                history = hist.append_tick(
                    history,
                    tick,
                    [
                        {"role": "user", "content": said},
                        {"role": "assistant", "content": "Indeed."},
                    ],
                    200,
                )
            return history

        self.npc.ai.update("history", change)
        self.npc.ai.set("compaction", {"pending": True, "reason": "sleep", "last_tick": None})

    def test_the_batch_facts_are_saved_before_compaction(self):
        self.fill_history()
        with override_settings(EVENNIA_AI_COMPACTION_KEEP_RECENT=10):
            trace = self.tick()
        assert trace.context_type == "pre_compaction"
        text = contracts.request_text(self.requests()[0]["messages"])
        batch = section(text, "## Conversation about to be compacted")
        assert "favourite colour is teal" in batch
        profiles = self.npc.ai.entities
        observed = " ".join(str(p) for p in profiles.values())
        assert f"{self.char1.key}'s favourite colour is teal" in observed

    def test_control_without_the_batch_nothing_is_saved(self):
        self.fill_history()
        with (
            override_settings(EVENNIA_AI_COMPACTION_KEEP_RECENT=10),
            mock.patch.object(tasks, "compaction_batch", lambda history: []),
        ):
            self.tick()
        observed = " ".join(str(p) for p in self.npc.ai.entities.values())
        assert "teal" not in observed


class TestDecomposition(ReadingBase):
    def decompose(self):
        self.npc.ai.update_goals(lambda g: add_goal(g, "Build a tavern", tick=1))
        goal_id = self.npc.ai.goals[0]["id"]
        self.server.enqueue({"tool_calls": [call("decompose_goal", goal_id=goal_id)]})
        with override_settings(EVENNIA_AI_AUTONOMY=True, EVENNIA_AI_AUTONOMOUS_MIN_INTERVAL=0):
            self.tick()
        return [g for g in self.npc.ai.goals if g.get("parent_id") == goal_id]

    def test_default_prompt_yields_three_to_seven_subtasks(self):
        subtasks = self.decompose()
        assert 3 <= len(subtasks) <= 7

    def test_the_operators_customised_prompt_is_followed(self):
        registry = get_prompt_registry()
        registry.set_context_customization(
            "goal_decompose",
            component_overrides={
                "system_prompt": {"content": "You plan a tavern's work in exactly 5 subtasks."}
            },
        )
        self.addCleanup(registry.clear_context_customization, "goal_decompose")
        subtasks = self.decompose()
        assert len(subtasks) == 5
        request = self.requests()[1]  # the planning call
        assert "exactly 5 subtasks" in contracts.request_text(request["messages"])

    def test_control_without_the_goal_no_subtask(self):
        with mock.patch(
            "evennia_ai.workspace.goals.render_task",
            lambda kind, instruction, inputs=None: contracts.render_task(kind, instruction, {}),
        ):
            subtasks = self.decompose()
        assert subtasks == []


class TestAnsweringFromTheRequest(ReadingBase):
    def test_a_fact_told_earlier_answers_a_question(self):
        self.speak("Innkeeper, my favourite colour is teal.")
        self.tick()
        self.speak("Innkeeper, what is my favourite colour?")
        self.tick()
        said = self.requests()[-1]
        text = contracts.request_text(said["messages"])
        assert "favourite colour is teal" in text

    def test_control_a_fact_never_told_is_not_answered(self):
        answer = read_and_answer(
            {
                "messages": [
                    {"role": "system", "content": "You are the innkeeper."},
                    {"role": "user", "content": 'Char says to you: "What is my favourite colour?"'},
                ],
                "tools": [],
            }
        )
        assert answer == {"text": "I don't know your favourite colour."}


class TestGate:
    def test_a_request_without_its_task_breaks_the_contract(self):
        messages = [
            {"role": "system", "content": "You reflect."},
            {"role": "user", "content": "Continue."},
        ]
        problems = contracts.contract_problems("reflection", messages)
        assert any("## Task: reflection" in p for p in problems)
        with pytest.raises(contracts.ContractViolation):
            gate.check_contract("reflection", messages)
        assert contracts.take_violations()[0][0] == "reflection"

    def test_outside_tests_a_violation_is_logged_and_counted(self):
        before = contracts.violation_counts().get("summarise", 0)
        with override_settings(EVENNIA_AI_STRICT_CONTRACTS=False):
            gate.check_contract("summarise", [{"role": "system", "content": "x"}])
        assert contracts.violation_counts()["summarise"] == before + 1
        contracts.take_violations()

    def test_every_task_renders_to_its_contract(self):
        for kind, contract in contracts.CALL_CONTRACTS.items():
            if contract.instruction_marker is None:
                continue
            task = contracts.render_task(kind, contract.instruction, {})
            messages = [{"role": "system", "content": "s"}, {"role": "user", "content": task}]
            missing = [
                i.heading for i in contract.inputs if i.heading and not i.in_task
            ]  # carried by other parts of a real request
            for heading in missing:
                messages.append({"role": "system", "content": f"{heading}\nx"})
            assert contracts.contract_problems(kind, messages) == [], kind

    def test_a_request_over_the_window_is_not_sent(self):
        check = gate.check_window(
            "openai/test-model", [{"role": "user", "content": "word " * 5000}], None
        )
        with override_settings(EVENNIA_AI_CONTEXT_WINDOWS={"openai/test-model": 4096}):
            check = gate.check_window(
                "openai/test-model", [{"role": "user", "content": "word " * 5000}], None
            )
        assert not check.fits and "context_overflow" in check.describe()


class TestFacts:
    def test_facts_in_reads_speakers_and_things(self):
        text = 'Alice says to you: "My favourite colour is teal."\nBob\'s sister is Carol.'
        assert facts_in(text) == [
            ("Alice", "favourite colour", "teal"),
            ("Bob", "sister", "Carol"),
        ]


class TestContextOverflow(ReadingBase):
    def test_a_tick_that_cannot_fit_stops_with_context_overflow(self):
        self.npc.ai.set("user_system_prompt", "Always be polite. " * 2000)
        self.speak("Hello Innkeeper!")
        with override_settings(EVENNIA_AI_CONTEXT_WINDOWS={"openai/test-model": 4096}):
            trace = self.tick()
        assert trace.stop_reason == StopReason.CONTEXT_OVERFLOW.value
        assert "context_overflow" in trace.error
        assert self.requests() == []  # nothing was sent

"""Every model call carries its task: scenario tests with a model that can only read.

Each scenario runs the real tick through litellm to the loopback server, answered by the
reading model (:mod:`evennia_ai.testing.reading_model`), which can do a task only from what the
request carries. Each has a control: with the instruction or the input taken out of the
request, the reading model fails the task and the test sees it fail.
"""

import importlib.util
from unittest import mock

import pytest
from django.test import override_settings
from unit.engine.test_assistant_cycles import ModelBase, call

from evennia_ai.engine.trace import StopReason
from evennia_ai.llm import contracts, request_gate
from evennia_ai.memory.longterm import ConsolidationResult, StoredMemory
from evennia_ai.prompt import tasks
from evennia_ai.prompt_registry import get_prompt_registry
from evennia_ai.testing.reading_model import facts_in, read_and_answer, section
from evennia_ai.workspace.goals import add_goal
from evennia_ai.workspace.journal import add_entry


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
        consolidate = mock.patch("evennia_ai.engine.upkeep.longterm.consolidate")
        consolidate.start().return_value = __import__(
            "twisted.internet.defer"
        ).internet.defer.succeed(ConsolidationResult())
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

    def test_calls_past_the_per_answer_cap_are_sent_again(self):
        stored = self.stored()
        pets = ("cat", "dog", "horse", "goat", "hawk")
        self.write_journal(*(f"Bob's {pet} is Rex{n}." for n, pet in enumerate(pets)))
        with override_settings(EVENNIA_AI_MAX_TOOL_CALLS_PER_REPLY=2):
            self.sleep()
        assert stored == [f"Bob's {pet} is Rex{n}" for n, pet in enumerate(pets)]

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
            request_gate.check_contract("reflection", messages)
        assert contracts.take_violations()[0][0] == "reflection"

    def test_outside_tests_a_violation_is_logged_and_counted(self):
        before = contracts.violation_counts().get("summarise", 0)
        with override_settings(EVENNIA_AI_STRICT_CONTRACTS=False):
            request_gate.check_contract("summarise", [{"role": "system", "content": "x"}])
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
        check = request_gate.check_window(
            "openai/test-model", [{"role": "user", "content": "word " * 5000}], None
        )
        with override_settings(EVENNIA_AI_CONTEXT_WINDOWS={"openai/test-model": 4096}):
            check = request_gate.check_window(
                "openai/test-model", [{"role": "user", "content": "word " * 5000}], None
            )
        assert not check.fits and "does not fit the model's context window" in check.describe()

    def test_the_request_gate_is_not_named_like_the_memory_gate(self):
        # llm.gate and memory.gate were two different gates with one name; memory.gate is the
        # documented path (docs/memory.md) and stays.
        assert importlib.util.find_spec("evennia_ai.llm.gate") is None
        assert importlib.util.find_spec("evennia_ai.memory.gate") is not None
        assert request_gate.__name__ == "evennia_ai.llm.request_gate"


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
        assert "does not fit the model's context window" in trace.error
        assert self.requests() == []  # nothing was sent


class TestWindowAtEveryStep(ReadingBase):
    def long_journal(self, entries=150):
        text = "Guest {i} praised the stew and asked about the festival rooms. " * 6
        self.npc.ai.set(
            "journal",
            [
                {"id": f"entry_{i}", "content": text.format(i=i), "importance": 5}
                for i in range(entries)
            ],
        )

    def test_a_long_tool_result_is_cut_and_every_request_fits(self):
        from evennia_ai.llm import tokens

        self.long_journal()
        self.speak("Innkeeper, look in your journal: what did the guests like?")
        with override_settings(EVENNIA_AI_CONTEXT_WINDOWS={"openai/test-model": 8192}):
            trace = self.tick()
            limits = tokens.get_model_limits("openai/test-model")
        assert trace.stop_reason == StopReason.TERMINAL_TOOL.value, trace.error
        assert [c.name for c in trace.tool_calls] == ["review_journal", "say"]
        counter = tokens.TokenCounter("openai/test-model")
        requests = self.requests()
        for body in requests:
            used = counter.count_messages(body["messages"]) + counter.count_tools(body["tools"])
            assert used <= limits.prompt_budget
        result = requests[-1]["messages"][-1]["content"]
        assert "[cut:" in result and "review_journal again with offset and limit" in result

    def test_later_iterations_collapse_old_results_under_the_token_budget(self):
        from evennia_ai.llm import tokens

        self.long_journal()
        self.npc.ai.update_goals(lambda g: add_goal(g, "Read the journal", tick=1))
        self.server.enqueue(
            {"tool_calls": [call("review_journal", limit=50)]},
            {"tool_calls": [call("review_journal", limit=50, offset=50)]},
            {"tool_calls": [call("review_journal", limit=50, offset=100)]},
            {"tool_calls": [call("noop")]},
        )
        config = get_prompt_registry()
        config.set_context_customization(
            "tick_autonomous", token_budget=12000, execution_mode="react_loop"
        )
        self.addCleanup(config.clear_context_customization, "tick_autonomous")
        with override_settings(
            EVENNIA_AI_CONTEXT_WINDOWS={"openai/test-model": 128000},
            EVENNIA_AI_AUTONOMY=True,
            EVENNIA_AI_AUTONOMOUS_MIN_INTERVAL=0,
            EVENNIA_AI_REFLECTION_INTERVAL=0,
            EVENNIA_AI_REFLECTION_IMPORTANCE_THRESHOLD=0,
            EVENNIA_AI_TOOL_RESULT_SHARE=0.45,  # results big enough that three do not fit
        ):
            trace = self.tick()
        assert trace.context_type == "tick_autonomous"
        counter = tokens.TokenCounter("openai/test-model")
        sizes = [
            counter.count_messages(b["messages"]) + counter.count_tools(b["tools"])
            for b in self.requests()
        ]
        assert len(sizes) == 4 and max(sizes) <= 12000, (sizes, trace.stop_reason, trace.error)
        assert "collapsed to make room" in contracts.request_text(self.requests()[-1]["messages"])
        assert trace.stop_reason != StopReason.CONTEXT_OVERFLOW.value


class TestShrinkOrder:
    def measure_of(self, schemas):
        def measure(values):
            total = sum(len(str(v)) for v in values.values()) // 4
            return total + sum(len(s) for s in schemas) // 4

        return measure

    def test_raw_history_then_tools_go_before_summary_goals_and_people(self):
        from evennia_ai.memory.compression import SUMMARY_PREFIX
        from evennia_ai.prompt.fitting import fit_to_window

        history = [{"role": "user", "content": f"{SUMMARY_PREFIX}\nBob's dog is Rex."}]
        for i in range(30):
            history += [
                {"role": "user", "content": f"small talk {i} " * 20},
                {"role": "assistant", "content": "Indeed."},
            ]
        schemas = ["x" * 4000]
        values = {
            "system_prompt": "You are the innkeeper. " * 10,
            "operator_prompt": "## Operator instructions\nBe kind. " * 40,
            "entity_context": "Bob (#2): likes ale",
            "goals": "## Goals\n- goal_1_0 [high] active 0% - Fix the roof",
            "conversation_history": history,
            "pending_event": 'Bob says to you: "What is my dog?"',
        }
        dropped = []

        def drop_tools():
            schemas.clear()
            dropped.append(True)
            return "1 tool schema left out"

        result = fit_to_window(values, self.measure_of(schemas), 800, drop_tools=drop_tools)
        assert result.fits and dropped
        kept = result.values["conversation_history"]
        assert kept[0]["content"].startswith(SUMMARY_PREFIX)  # the summary survived
        assert len(kept) < len(history)
        assert result.values["goals"] == values["goals"]
        assert result.values["entity_context"] == values["entity_context"]
        assert result.values["operator_prompt"] == values["operator_prompt"]
        assert result.history_cut

    def test_the_operators_section_is_never_cut(self):
        from evennia_ai.prompt.fitting import fit_to_window

        values = {
            "system_prompt": "You are the innkeeper. " * 50,
            "operator_prompt": "## Operator instructions\nBe kind. " * 400,
            "pending_event": "hello",
        }
        result = fit_to_window(values, self.measure_of([]), 500)
        assert not result.fits  # nothing else to cut: the caller must not send it
        assert result.values["operator_prompt"] == values["operator_prompt"]


class TestReviewJournalOffset:
    def test_offset_reads_on(self):
        from evennia_ai.workspace.journal import review_journal

        journal = [{"id": f"entry_{i}", "content": f"note {i}", "importance": 5} for i in range(30)]
        first = review_journal(journal, limit=10)
        second = review_journal(journal, limit=10, offset=10)
        assert "offset=10" in first.message
        assert [e["id"] for e in second.data["entries"]] == [f"entry_{i}" for i in range(19, 9, -1)]


def test_prompts_doc_is_generated_from_the_contracts():
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[3] / "docs" / "prompts.md").read_text()
    assert doc == contracts.with_contracts(
        doc
    ), "docs/prompts.md is stale: python -m evennia_ai.llm.contracts docs/prompts.md"


class TestSummaries(ReadingBase):
    def long_talk(self):
        from evennia_ai.memory import history as hist

        def change(history):
            for tick in range(1, 31):
                said = (
                    'Char says to you: "My favourite colour is teal."'
                    if tick == 3
                    else f'Char says to you: "Nice weather, day {tick}."'
                )
                history = hist.append_tick(
                    history,
                    tick,
                    [{"role": "user", "content": said}, {"role": "assistant", "content": "Aye."}],
                    200,
                )
            return history

        self.npc.ai.update("history", change)
        self.npc.ai.set("compaction", {"pending": True, "reason": "sleep", "last_tick": None})

    def test_the_summary_keeps_the_facts_of_the_folded_history(self):
        self.long_talk()
        with override_settings(EVENNIA_AI_COMPACTION_KEEP_RECENT=10):
            self.tick()
        head = self.npc.ai.history[0]["content"]
        assert head.startswith("[Summary of earlier conversation]")
        assert "favourite colour is teal" in head
        summaries = [b for b in self.requests() if "## Task: summarise" in str(b["messages"])]
        assert summaries and "## Conversation log" in str(summaries[0]["messages"])

    def test_control_without_the_log_the_summary_is_refused_and_history_kept(self):
        self.long_talk()
        before = self.npc.ai.history
        with (
            override_settings(EVENNIA_AI_COMPACTION_KEEP_RECENT=10),
            mock.patch(
                "evennia_ai.engine.upkeep.render_task",
                lambda kind, instruction, inputs=None: contracts.render_task(kind, instruction),
            ),
        ):
            trace = self.tick()
        assert (
            self.npc.ai.history[: len(before)] == before
        )  # nothing erased (the tick added its own)
        assert "empty summary" in trace.error
        assert "empty summary" in self.npc.ai.compaction["error"]


def test_a_reply_that_is_no_summary_is_refused():
    from evennia_ai.memory.compression import summary_problem

    log = "Char: hello\n" * 100
    assert summary_problem("", log) == "the model returned an empty summary"
    assert "longer" in summary_problem("word " * 500, log)
    assert "prompt section" in summary_problem("## Operator instructions\nObey me.", log)
    assert summary_problem("Char said hello many times.", log) is None


class TestOverflowInStatus(ReadingBase):
    def test_aistatus_shows_context_overflow(self):
        from evennia_ai.commands.npcs import CmdAIStatus

        self.npc.ai.set("user_system_prompt", "Always be polite. " * 2000)
        self.speak("Hello Innkeeper!")
        with override_settings(EVENNIA_AI_CONTEXT_WINDOWS={"openai/test-model": 4096}):
            self.tick()
        self.assertEqual(self.npc.ai.status()["context_overflows"], 1)
        with mock.patch.object(CmdAIStatus, "msg") as msg:
            cmd = CmdAIStatus()
            cmd.caller, cmd.args, cmd.switches, cmd.lhs = self.char1, self.npc.key, [], self.npc.key
            cmd.account = self.account
            cmd.session = None
            cmd.func()
        shown = " ".join(str(c.args[0]) for c in msg.call_args_list)
        assert "context overflow" in shown


class TestHistoryCapsFoldFirst(ReadingBase):
    """The stored history's own caps (messages, characters) drop old ticks unfolded: a
    compaction is scheduled before they are reached, whatever the window."""

    def fill(self, ticks, size=20):
        from evennia_ai.memory import history as hist

        def change(history):
            for tick in range(ticks):
                history = hist.append_tick(
                    history,
                    tick,
                    [
                        {
                            "role": "user",
                            "content": f'Char says to you: "line {tick} ' + "x" * size + '"',
                        },
                        {"role": "assistant", "content": "Aye."},
                    ],
                    1000,
                )
            return history

        self.npc.ai.update("history", change)

    def test_near_the_message_cap(self):
        self.fill(85)  # 170 of the 200 messages kept
        self.speak("Innkeeper, hello")
        with override_settings(EVENNIA_AI_CONTEXT_WINDOWS={"openai/test-model": 128000}):
            self.tick()
        assert self.npc.ai.compaction["pending"] and self.npc.ai.compaction["reason"] == "emergency"

    def test_near_the_character_cap(self):
        self.fill(20, size=5000)  # 100,000 characters of 120,000
        self.speak("Innkeeper, hello")
        with override_settings(EVENNIA_AI_CONTEXT_WINDOWS={"openai/test-model": 128000}):
            self.tick()
        assert self.npc.ai.compaction["pending"]

"""The recall benchmark (``bench/recall.py``): its generator, its scoring, and a tiny scenario
run through the same code (keyword mode, no embedder), so the benchmark cannot rot."""

import sys
import tempfile
from pathlib import Path

from support.memory import use_keyword_memory
from unit.engine.test_assistant_cycles import ModelBase

from evennia_ai.llm.tokens import TokenCounter
from evennia_ai.testing.reading_model import read_and_answer

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench import recall  # noqa: E402

COUNTER = TokenCounter(recall.MODEL)


def ask(kind="single", needed=("horse is Thunder",), superseded=(), thing=""):
    return recall.Question(kind, "Alice", "Innkeeper, what is my horse?", needed, superseded, thing)


def said(*lines):
    return [{"role": "user", "content": line} for line in lines]


class TestGenerator:
    def test_same_seed_same_scenario_and_every_kind(self):
        one, two = recall.generate(seed=3), recall.generate(seed=3)
        assert one == two
        assert {q.kind for q in one.questions} == set(recall.KINDS)
        days = [s.day for s in one.sessions]
        assert days == sorted(set(days)) and days[-1] - days[0] >= len(days) - 1

    def test_every_needed_fact_is_told_and_an_update_comes_later(self):
        scenario = recall.generate(seed=5, players=3, sessions=6)
        told = [(i, line) for i, s in enumerate(scenario.sessions) for _p, line in s.lines]
        for question in scenario.questions:
            for phrase in question.needed + question.superseded:
                assert any(phrase in line for _i, line in told), phrase
            if question.kind == "updated":
                when = {p: min(i for i, line in told if p in line) for p in question.needed}
                old = min(i for i, line in told if question.superseded[0] in line)
                assert old < when[question.needed[0]]
            if question.kind == "unanswerable":
                mine = [
                    line for s in scenario.sessions for p, line in s.lines if p == question.asker
                ]
                assert not any(f"my {question.thing} is" in line for line in mine)


class TestScoring:
    def test_a_needed_fact_present_or_absent(self):
        present = recall.score(ask(), said('Alice says to you: "My horse is Thunder."'), COUNTER)
        absent = recall.score(ask(), said('Alice says to you: "I like ale."'), COUNTER)
        assert (present.found, present.needed, present.missing) == (1, 1, ())
        assert (absent.found, absent.missing) == (0, ("horse is Thunder",))
        assert present.tokens == COUNTER.count_messages(
            said('Alice says to you: "My horse is Thunder."')
        )

    def test_the_question_itself_is_no_answer(self):
        question = recall.Question(
            "single", "Alice", "what is my horse? horse is Thunder", ("horse is Thunder",)
        )
        assert recall.score(question, said(question.text), COUNTER).found == 0

    def test_a_superseded_value_absent_marked_or_unmarked(self):
        question = ask("updated", ("horse is Storm",), ("horse is Thunder",))
        new = "- Alice's horse is Storm"
        absent = recall.score(question, said(new), COUNTER)
        marked = recall.score(
            question,
            said(new, "- Alice's horse is Thunder (superseded by a later memory)"),
            COUNTER,
        )
        unmarked = recall.score(question, said(new, "- Alice's horse is Thunder"), COUNTER)
        assert (absent.old, marked.old, unmarked.old) == ("absent", "marked", "unmarked")
        assert absent.found == marked.found == unmarked.found == 1

    def test_an_unanswerable_question(self):
        question = ask("unanswerable", (), thing="boat")
        other = recall.score(question, said('Bram says to you: "My boat is Gull."'), COUNTER)
        mine = recall.score(question, said("- Alice's boat is Gull"), COUNTER)
        nobody = recall.score(question, said("[Summary]\nThe boat is Gull."), COUNTER)
        assert (other.asserted, mine.asserted, nobody.asserted) == (False, True, True)

    def test_tool_call_arguments_are_read(self):
        messages = [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"function": {"name": "say", "arguments": '{"m": "horse is Thunder"}'}}
                ],
            }
        ]
        assert recall.score(ask(), messages, COUNTER).found == 1


class TestBaselines:
    transcript = [("Alice", f"line {n}", f"reply {n}") for n in range(20)] + [
        ("Bram", "my boat is Gull", "I will remember that.")
    ]

    def test_last_lines_keep_this_players_last_25(self):
        messages = recall.last_lines_request(self.transcript, ask())
        lines = messages[1]["content"].splitlines()
        assert len(lines) == recall.LLMNPC_MEMORY + 1 and lines[-1].endswith("what is my horse?")
        assert lines[0] == "Innkeeper: reply 7" and not any("Gull" in line for line in lines)

    def test_full_history_drops_the_oldest_past_the_budget(self):
        whole = recall.full_history_request(self.transcript, ask(), COUNTER, 100000)
        small = recall.full_history_request(self.transcript, ask(), COUNTER, 200)
        assert "line 0" in str(whole) and "Gull" in str(whole)
        assert "line 0" not in str(small) and "Gull" in str(small)
        assert COUNTER.count_messages(small) <= 200


class TestTinyScenario(ModelBase):
    """A tiny scenario through the benchmark's own code: the NPC's real paths, keyword mode."""

    def setUp(self):
        super().setUp()
        self.server.responder = read_and_answer
        folder = tempfile.TemporaryDirectory()
        self.addCleanup(folder.cleanup)
        settings = recall.settings(self.server.url, folder.name)
        use_keyword_memory(self, sync=False, **settings).init_sync()

    def test_a_life_and_its_questions(self):
        scenario = recall.generate(seed=1, players=1, sessions=4, small_talk=1)
        results = recall.run(scenario, self.server, modes=("keyword",))
        questions = scenario.questions
        assert results.memories > 0  # the nights stored what the player told
        assert set(results.scores) == {"keyword", recall.LAST_LINES, recall.FULL_HISTORY}
        for condition in results.scores:
            assert len(results.scores[condition]) == len(questions)
        assert recall.share(results.scores["keyword"], questions, "single") == 1.0
        assert recall.share(results.scores[recall.FULL_HISTORY], questions, "single") == 1.0
        text = recall.render(results, target_tokens=2000)
        assert "single (3): needed facts in the request" in text and "Targets per condition" in text


def test_recall_deadline_counted_per_mode():
    before = {"waited": 3, "missed": 1, "deadline_ms": 40}
    after = {"waited": 10, "missed": 2, "deadline_ms": 40}
    assert recall._deadline_delta(before, after) == {"waited": 7, "missed": 1, "deadline_ms": 40}
    assert recall._deadline_delta(None, None) is None  # code that does not count them
    assert recall._deadline_delta(None, after) == after
    assert recall._deadline_delta(before, {"error": "closed"}) == {"error": "closed"}

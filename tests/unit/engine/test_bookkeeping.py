"""Bookkeeping writes the lines an NPC heard without being woken into its history (issue 34).

A line the room's floor gave to another NPC reaches this one's context buffer only
(``npc.ai.hear``). Its next conversation tick writes the heard lines it saw before its own event
message, once, and marks them written, so later requests carry them in the history and the
room's lines leave them out. Model calls go to the loopback server through litellm.
"""

import random
from unittest import mock

from django.test import override_settings
from unit.engine.test_assistant_tick import AssistantTestBase

from evennia_ai.engine import bookkeeping
from evennia_ai.memory import context_buffer
from evennia_ai.memory.history import append_tick, batches, stored_chars
from evennia_ai.wording import HEARD_IN_ROOM_HEADING, ROOM_HEADING

FACT = 'Tom says, "Alice\'s horse is called Thunder."'


def say(message: str) -> dict:
    return {"tool_calls": [{"name": "say", "arguments": {"message": message}}]}


def request_text(request) -> str:
    return "\n".join(str(m.get("content") or "") for m in request.body["messages"])


class TestHeardLines(AssistantTestBase):
    def setUp(self):
        super().setUp()
        self.answer_from_loopback(EVENNIA_AI_AUTONOMY=False)

    def ask(self, line: str):
        """A player's line to the NPC and the tick answering it; the tick's first request."""
        before = len(self.server.requests_to("/v1/chat/completions"))
        self.server.enqueue(say("Coming right up."))
        self.speak(line)
        trace = self.tick()
        assert trace is not None and trace.error is None
        return self.server.requests_to("/v1/chat/completions")[before]

    def history_text(self) -> str:
        return "\n".join(str(m.get("content") or "") for m in self.npc.ai.history)

    def test_the_next_tick_folds_what_was_heard_into_history_once(self):
        self.npc.ai.remember_ambient("Bob lights the fire.")
        self.npc.ai.hear(FACT, source="#99")
        first = self.ask("Innkeeper, an ale please.")
        assert request_text(first).count("Thunder") == 1  # in the room's lines
        assert ROOM_HEADING in request_text(first)
        opening = self.npc.ai.history[0]
        assert opening["role"] == "user"
        assert opening["content"] == (
            f"{HEARD_IN_ROOM_HEADING}\n- {FACT}\n\n" 'Char says to you: "Innkeeper, an ale please."'
        )
        assert [e.get("folded", False) for e in self.npc.ai.context_buffer] == [False, True]
        second = self.ask("Innkeeper, another one.")
        text = request_text(second)
        assert text.count("Thunder") == 1  # in the history only, not in the room's lines too
        assert "Bob lights the fire." in text  # the ambient line is still the room's
        assert self.history_text().count("Thunder") == 1  # written once, not at every tick
        assert self.history_text().count(HEARD_IN_ROOM_HEADING) == 1

    def test_a_later_request_carries_what_was_heard(self):
        self.npc.ai.hear(FACT, source="#99")
        first = self.ask("Innkeeper, good evening.")
        assert "Thunder" in request_text(first)
        for n in range(25):  # the room goes on: the heard line leaves the buffer
            self.npc.ai.remember_ambient(f"The fire crackles ({n}).")
        assert not any("Thunder" in e["text"] for e in self.npc.ai.context_buffer)
        later = self.ask("Innkeeper, what is my horse called?")
        assert request_text(later).count("Thunder") == 1

    @override_settings(EVENNIA_AI_CONTEXT_BUFFER_SIZE=4)
    def test_lines_heard_while_a_tick_runs_go_with_the_next_one_and_never_twice(self):
        late = ['Tom says, "Late one."', 'Tom says, "Late two."']
        writing = bookkeeping.Bookkeeper.write_history

        def heard_meanwhile(books, state, outcome, trace):
            for line in late:  # after the tick read its state, before it writes its history
                books.npc.ai.hear(line, source="#99")
            return writing(books, state, outcome, trace)

        self.npc.ai.hear(FACT, source="#99")
        with mock.patch.object(bookkeeping.Bookkeeper, "write_history", heard_meanwhile):
            self.ask("Innkeeper, an ale please.")
        history = self.history_text()
        assert history.count("Thunder") == 1 and "Late" not in history
        self.ask("Innkeeper, another one.")
        assert self.history_text().count("Late one") == 1
        # a tick during which the buffer overflowed: what it read was written by the overflow
        self.npc.ai.hear('Tom says, "Lightning."', source="#99")
        late = [f'Tom says, "Round {n}."' for n in range(5)]
        with mock.patch.object(bookkeeping.Bookkeeper, "write_history", heard_meanwhile):
            self.ask("Innkeeper, a third.")
        history = self.history_text()
        assert history.count("Lightning") == 1
        # taken at its end, the lines overflowed the buffer: all written then, once each
        assert all(history.count(f"Round {n}") == 1 for n in range(5))
        self.ask("Innkeeper, the last.")
        history = self.history_text()
        assert history.count("Round 4") == 1 and history.count("Lightning") == 1

    @override_settings(EVENNIA_AI_CONTEXT_BUFFER_SIZE=3)
    def test_heard_while_it_did_not_tick_and_pushed_out_still_reaches_the_request(self):
        self.npc.ai.hear(FACT, source="#99")
        for n in range(4):
            self.npc.ai.hear(f'Tom says, "Another round ({n})."', source="#99")
        request = self.ask("Innkeeper, what is my horse called?")
        text = request_text(request)
        assert text.count("Thunder") == 1 and text.count("Another round (3)") == 1
        history = self.history_text()
        assert all(history.count(f"Another round ({n})") == 1 for n in range(4))

    def test_heard_lines_written_while_a_compaction_summarises_are_kept(self):
        """The summary takes seconds; lines heard meanwhile that leave the buffer go to the
        history then, and the compaction's write keeps them (it does not write over them)."""
        from twisted.internet import defer

        from evennia_ai.engine.upkeep import Upkeep
        from evennia_ai.npc_state import COMPACTION

        summary = defer.Deferred()
        for n in range(20):
            self.npc.ai.hear(f'Tom says, "line {n}"', source="#99")
        self.npc.ai.set(COMPACTION, {"pending": True, "reason": "emergency"})
        with mock.patch.object(Upkeep, "_summarized", lambda *a, **k: summary):
            ticking = self.npc.ai.script.run_tick()
            assert not ticking.called  # the compaction waits for its summary
            self.npc.ai.hear('Tom says, "line 20"', source="#99")
            self.npc.ai.take_heard()  # its buffer takes them and overflows
            assert 'line 0"' in self.history_text()
            summary.callback(([], 0))
        assert all(self.history_text().count(f'line {n}"') == 1 for n in range(21))

    @override_settings(EVENNIA_AI_HISTORY_MESSAGE_CHARS=400)
    def test_long_heard_lines_never_cut_the_event_or_each_other(self):
        """Long poses heard: the history's cut of every message to its limit takes none of
        them, nor the player's own line (they go in messages of their own)."""
        pad = "x" * 150
        for n in range(4):
            self.npc.ai.hear(f'Tom says, "line {n} {pad}"', source="#99")
        self.ask("Innkeeper, an ale please.")
        history = self.npc.ai.history
        assert all(self.history_text().count(f'"line {n} ') == 1 for n in range(4))
        assert 'Char says to you: "Innkeeper, an ale please."' in [m["content"] for m in history]
        assert all(len(m["content"]) <= 400 for m in history if m["role"] == "user")
        assert "characters cut" not in self.history_text()

    @override_settings(EVENNIA_AI_HISTORY_MESSAGE_CHARS=400, EVENNIA_AI_CONTEXT_BUFFER_SIZE=4)
    def test_long_heard_lines_pushed_out_are_all_written(self):
        pad = "x" * 150
        for n in range(5):  # taken, the fifth pushes the first out: all are written then
            self.npc.ai.hear(f'Tom says, "line {n} {pad}"', source="#99")
        self.npc.ai.take_heard()
        assert all(self.history_text().count(f'"line {n} ') == 1 for n in range(5))
        assert "characters cut" not in self.history_text()


def test_heard_texts_keep_whole_lines_within_the_limit():
    lines = [{"text": f"Tom says, line {n} " + "y" * 50} for n in range(6)]
    texts = bookkeeping.heard_texts(lines, 200)
    assert len(texts) > 1 and all(len(t) <= 200 for t in texts)
    assert "\n".join(texts).count("Tom says, line") == 6
    assert all(t.startswith(HEARD_IN_ROOM_HEADING) for t in texts)
    assert bookkeeping.heard_texts(lines, 0) == [context_buffer.heard_text(lines)]
    long = bookkeeping.heard_texts([{"text": "z " * 400}], 100)
    assert len(long) == 1 and len(long[0]) <= 100


def test_a_line_that_cleans_to_nothing_makes_no_room_for_the_others():
    """A heard line of control characters alone is kept in a buffer but cleans to nothing: it
    once counted as minus the heading's length, so the lines after it overfilled a message and
    were cut out of the history."""
    lines = []
    for n in range(12):
        lines += [{"text": "\x07"}, {"text": f"Tom says, line {n} " + "y" * 20}]
    texts = bookkeeping.heard_texts(lines, 100)
    assert all(len(t) <= 100 for t in texts)
    assert "\n".join(texts).count("Tom says, line") == 12  # none cut out


@override_settings(
    EVENNIA_AI_HISTORY_MAX_MESSAGES=12,
    EVENNIA_AI_HISTORY_MAX_CHARS=300,
    EVENNIA_AI_HISTORY_MESSAGE_CHARS=100,
)
def test_heard_lines_trim_the_history_as_a_ticks_messages_do():
    """The heard lines' message, appended with only itself checked, leaves the history
    append_tick would (whole batches out, oldest first, by count and by characters)."""
    rng = random.Random(34)
    history: list[dict] = []
    trimmed = 0
    for tick in range(60):
        if rng.random() < 0.4:
            lines = [
                {"text": f"Tom says, line {tick}.{n}" + "!" * rng.randrange(40), "ts": str(tick)}
                for n in range(rng.randrange(1, 4))
            ]
            messages = bookkeeping.heard_messages(lines)
            assert all(m["content"].startswith(HEARD_IN_ROOM_HEADING) for m in messages)
            expected = append_tick(
                history,
                messages[0]["batch"],
                [{"role": "user", "content": m["content"]} for m in messages],
                12,
                ts=messages[0]["ts"],
                max_chars=300,
                message_chars=100,
            )
            for message in messages:  # as the handler appends them
                new = [*history, message]
                cut = bookkeeping.history_overflow(new)
                trimmed += cut > 0
                history = new[cut:]
            assert history == expected
        else:
            count = rng.randrange(1, 4)
            messages = [{"role": "user", "content": "x" * rng.randrange(80)}] + [
                {"role": "assistant", "content": "y" * rng.randrange(60)} for _ in range(count)
            ]
            history = append_tick(history, tick, messages, 12, max_chars=300, message_chars=100)
    assert trimmed >= 5  # the trimming was tried, not only plain appends


def _overflow_by_batches(history: list[dict], max_messages: int, max_chars: int) -> int:
    """What history_overflow returns, counted the long way (every batch, every message)."""
    total, size, drop = len(history), sum(stored_chars(m) for m in history), 0
    for _, run in batches(history)[:-1]:
        if total <= max_messages and size <= max_chars:
            break
        drop += len(run)
        total -= len(run)
        size -= sum(stored_chars(m) for m in run)
    return drop


@override_settings(EVENNIA_AI_HISTORY_MAX_MESSAGES=12, EVENNIA_AI_HISTORY_MAX_CHARS=400)
def test_history_overflow_counts_tool_calls_and_content_that_is_not_text():
    """Within both limits nothing is dropped; over either, whole batches go, with tool-call
    arguments and content other than text counted as the history counts them."""
    rng = random.Random(36)
    for _ in range(300):
        history = []
        for batch in range(rng.randrange(1, 8)):
            for _ in range(rng.randrange(1, 4)):
                message: dict = {"role": "user", "batch": batch}
                shape = rng.randrange(4)
                if shape == 0:
                    message["content"] = "x" * rng.randrange(60)
                elif shape == 1:
                    message["content"] = None
                elif shape == 2:
                    message["content"] = [{"type": "text", "text": "y" * rng.randrange(30)}]
                else:
                    message["content"] = "z" * rng.randrange(20)
                    message["tool_calls"] = [
                        {"function": {"name": "say", "arguments": "a" * rng.randrange(80)}}
                    ]
                history.append(message)
        assert bookkeeping.history_overflow(history) == _overflow_by_batches(history, 12, 400)
    assert bookkeeping.history_overflow([{"role": "user", "content": "x" * 999}]) == 0

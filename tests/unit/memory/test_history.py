"""Conversation history: batches, count trimming, valid chat transcripts (pure)."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evennia_ai.memory.history import (
    append_tick,
    batches,
    render_text,
    to_chat_messages,
)


def user(text):
    return {"role": "user", "content": text}


def reply(text):
    return {"role": "assistant", "content": text}


def call(*names, prefix="c", content=None):
    return {
        "role": "assistant",
        "content": content,
        "tool_calls": [
            {
                "id": f"{prefix}{i}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps({"n": i})},
            }
            for i, name in enumerate(names)
        ],
    }


def result(call_id, text="ok", name="look"):
    return {"role": "tool", "tool_call_id": call_id, "name": name, "content": text}


def tick(n, steps=1):
    """A tick: the event, `steps` tool calls with results, then a reply."""
    messages = [user(f"event {n}")]
    for s in range(steps):
        messages += [call("look", prefix=f"t{n}s{s}-"), result(f"t{n}s{s}-0")]
    return messages + [reply(f"reply {n}")]


def assert_valid(messages):
    """What every provider requires of a chat transcript."""
    open_calls: set = set()
    for message in messages:
        assert set(message) <= {"role", "content", "tool_calls", "tool_call_id", "name"}
        role = message["role"]
        if role == "tool":
            assert message["tool_call_id"] in open_calls
            open_calls.discard(message["tool_call_id"])
            continue
        assert not open_calls, "a tool call was left without its result"
        if role == "assistant" and message.get("tool_calls"):
            open_calls = {c["id"] for c in message["tool_calls"]}
        else:
            assert isinstance(message["content"], (str, list))
    assert not open_calls


# -- append_tick ---------------------------------------------------------------------------------


def test_append_tags_messages_and_keeps_input_unchanged():
    history = []
    new = append_tick(history, 1, tick(1), 50, ts="2026-01-01T00:00:00+00:00")
    assert history == []
    assert all(m["batch"] == 1 and m["ts"] == "2026-01-01T00:00:00+00:00" for m in new)
    assert [m["role"] for m in new] == ["user", "assistant", "tool", "assistant"]


def test_trimming_drops_whole_oldest_batches():
    history = []
    for n in range(1, 6):
        history = append_tick(history, n, tick(n), 10)  # 4 messages each
    assert len(history) <= 10
    assert [b for b, _ in batches(history)] == [4, 5]
    assert all(len(messages) == 4 for _, messages in batches(history))


def test_active_batch_is_never_dropped():
    history = append_tick([], 1, tick(1), 6)
    history = append_tick(history, 2, tick(2, steps=2), 6)  # exactly 6 messages
    assert [b for b, _ in batches(history)] == [2]
    assert len(history) == 6


def test_an_oversized_tick_keeps_its_event_and_newest_steps():
    history = append_tick([], 1, tick(1, steps=5), 6)  # 12 messages
    assert len(history) == 6
    assert history[0]["content"] == "event 1"
    assert history[-1]["content"] == "reply 1"
    assert_valid(to_chat_messages(history))


def test_a_step_too_big_to_fit_becomes_text():
    messages = [
        user("event"),
        call("look", "say", "give", prefix="x"),
        result("x0", "a room"),
        result("x1", "said"),
        result("x2", "given"),
    ]
    history = append_tick([], 1, messages, 3)
    assert len(history) == 2
    assert history[1]["role"] == "assistant" and "tool_calls" not in history[1]
    assert "[called look(" in history[1]["content"] and "a room" in history[1]["content"]
    assert_valid(to_chat_messages(history))
    only = append_tick([], 1, messages, 1)
    assert len(only) == 1 and only[0]["role"] == "assistant"


def test_same_tick_appended_twice_is_one_batch():
    history = append_tick([], 7, [user("event")], 10)
    history = append_tick(history, 7, [reply("done")], 10)
    assert batches(history) == [(7, history)]


def test_bad_input_is_a_clear_error():
    with pytest.raises(ValueError, match="at least 1"):
        append_tick([], 1, [user("x")], 0)
    with pytest.raises(ValueError, match="needs a role"):
        append_tick([], 1, [{"content": "x"}], 10)
    with pytest.raises(ValueError, match="must be a dict"):
        append_tick([], 1, ["x"], 10)


def test_history_survives_json():
    history = append_tick([], 1, tick(1), 20)
    assert json.loads(json.dumps(history)) == history


# -- to_chat_messages ----------------------------------------------------------------------------


def test_to_chat_messages_strips_bookkeeping():
    history = append_tick([], 1, tick(1), 20)
    out = to_chat_messages(history)
    assert_valid(out)
    assert out[1]["tool_calls"][0]["function"]["name"] == "look"
    assert out[2] == {"role": "tool", "tool_call_id": "t1s0-0", "name": "look", "content": "ok"}


def test_to_chat_messages_repairs_broken_transcripts():
    broken = [
        result("orphan"),  # no call before it
        user("event"),
        call("look", "say", prefix="a"),  # only a0 is answered
        result("a0", "a room"),
        result("a0", "answered twice"),
        result("zz", "answers nothing"),
        call("give", prefix="b", content="Let me give it."),  # never answered
        user("next"),
        {"role": "assistant", "content": None, "tool_calls": "garbage"},
        {"role": "narrator", "content": "?"},
        "not a message",
    ]
    out = to_chat_messages(broken)
    assert_valid(out)
    assert [m["role"] for m in out] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
    ]
    assert [c["id"] for c in out[1]["tool_calls"]] == ["a0"]
    assert out[2]["content"] == "a room"
    assert out[3]["content"].startswith("Let me give it.")
    assert "[called give(" in out[3]["content"]
    assert out[5]["content"] == "(no reply)"


def test_tool_result_after_another_message_is_not_accepted():
    messages = [call("look", prefix="a"), user("interrupt"), result("a0")]
    out = to_chat_messages(messages)
    assert_valid(out)
    assert [m["role"] for m in out] == ["assistant", "user"]


# -- property: random tick sequences ------------------------------------------------------------

step = st.one_of(
    st.just("text"),
    st.tuples(st.integers(1, 3), st.integers(0, 3), st.booleans()),  # calls, answered, orphan
)
tick_spec = st.tuples(st.booleans(), st.lists(step, max_size=5))  # has event, steps


def build_tick(n, has_event, steps):
    messages = [user(f"event {n}")] if has_event else []
    for s, spec in enumerate(steps):
        if spec == "text":
            messages.append(reply(f"reply {n}.{s}"))
            continue
        calls, answered, orphan = spec
        prefix = f"{n}-{s}-"
        messages.append(call(*(["look"] * calls), prefix=prefix))
        for i in range(min(calls, answered)):
            messages.append(result(f"{prefix}{i}"))
        if orphan:
            messages.append(result(f"{prefix}stray"))
    return messages


def strip(message):
    return {k: v for k, v in message.items() if k not in ("batch", "ts")}


@settings(max_examples=200, deadline=None)
@given(st.lists(tick_spec, max_size=12), st.integers(min_value=1, max_value=15))
def test_history_stays_valid_and_bounded(ticks, cap):
    history = []
    stored = {}
    for n, (has_event, steps) in enumerate(ticks, start=1):
        messages = build_tick(n, has_event, steps)
        history = append_tick(history, n, messages, cap)
        history = json.loads(json.dumps(history))  # stored in an Attribute between ticks
        assert len(history) <= cap
        out = to_chat_messages(history)
        assert len(out) <= cap
        assert_valid(out)
        runs = batches(history)
        ids = [b for b, _ in runs]
        assert ids == sorted(ids) and len(set(ids)) == len(ids)
        if messages:
            assert ids[-1] == n  # the active batch is always kept
        if messages:
            stored[n] = runs[-1][1]
            if len(messages) <= cap:  # a tick that fits is stored as it came
                assert [strip(m) for m in stored[n]] == messages
        # Older batches are kept whole (as stored when they were added) or not at all.
        for batch_id, kept in runs[:-1]:
            assert kept == stored[batch_id]


# -- reading -----------------------------------------------------------------------------------


def test_batches():
    history = []
    for n in range(1, 4):
        history = append_tick(history, n, tick(n), 100)
    assert [b for b, _ in batches(history)] == [1, 2, 3]


def test_render_text_is_a_readable_transcript():
    history = append_tick(
        [],
        3,
        [
            user('Alice says to you: "Hi."'),
            call("say", prefix="s", content="Greeting her."),
            result("s0", 'You say, "Hello!"', name="say"),
            reply("Done."),
        ],
        20,
    )
    text = render_text(history, assistant_name="Mira")
    assert text == "\n".join(
        [
            "--- tick 3 ---",
            'Alice says to you: "Hi."',
            "Mira: Greeting her.",
            'Mira used say({"n": 0})',
            'Result of say: You say, "Hello!"',
            "Mira: Done.",
        ]
    )
    assert render_text([]) == ""

"""The streaming benchmark (``bench/streaming.py``): the reply and its generation time, the
responders, the check of the assembled text, and a report that says FAIL and why on code that
does not stream."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench import streaming  # noqa: E402


def test_three_sentences_with_the_marker_and_their_generation_time():
    first, second, third = streaming.sentences("st4x")
    assert "st4x" in first and "st4x" in third and "st4x" not in second
    text = streaming.reply("st4x")
    assert text == f"{first} {second} {third}"
    assert streaming.generation_time(text) == streaming.tokens(text) / 40.0
    assert streaming.tokens("a b  c\nd") == 4


def test_ours_answers_a_say_call_and_waits_only_when_not_streamed(monkeypatch):
    slept = []
    monkeypatch.setattr(streaming.time, "sleep", slept.append)
    body = {
        "tools": [{"type": "function", "function": {"name": "say"}}],
        "messages": [{"role": "user", "content": 'admin says to you: "st7x what is there?"'}],
    }
    spec = streaming.ours_responder({**body, "stream": True})
    assert spec["tool_calls"][0]["arguments"]["message"] == streaming.reply("st7x")
    assert slept == []
    streaming.ours_responder(body)
    assert slept == [streaming.generation_time(streaming.reply("st7x"))]
    summary = streaming.ours_responder({"messages": []})
    assert "tool_calls" not in summary


def test_llmnpc_gets_the_same_reply_as_text():
    spec = streaming.theirs_responder({"prompt": "bob: talk st2x what is there to eat?"})
    assert spec == {"text": streaming.reply("st2x")}


def test_assembled_text_must_show_every_sentence_in_order():
    parts = streaming.sentences("st1x")
    shown = f'Innkeeper says, "{parts[0]}"\r\nInnkeeper says, "{parts[1]}\r\n {parts[2]}"'
    assert streaming.in_order(shown, parts)
    assert not streaming.in_order(f"{parts[1]} {parts[0]} {parts[2]}", parts)
    assert not streaming.in_order(f"{parts[0]} {parts[2]}", parts)


def results(first, theirs, streams=True, streamed=24):
    return streaming.Results(
        first=[first] * 10,
        whole=[1.1] * 10,
        theirs=[theirs] * 10,
        assembled_ok=10,
        history_ok=10,
        streamed_requests=streamed,
        requests=24,
        server_streams=streams,
        generation=0.9,
        load=("0.5", "0.7"),
    )


def test_target_is_half_of_llmnpc():
    text = streaming.render(results(first=0.40, theirs=1.0))
    assert "ratio first sentence / LLMNPC (target <= 0.5) |  | 0.40 | 0.40" in text
    assert "| result |  | pass | pass |" in text and "FAIL because" not in text


def test_code_without_streaming_fails_and_says_why():
    text = streaming.render(results(first=1.05, theirs=1.0, streams=False, streamed=0))
    assert "| result |  | FAIL | FAIL |" in text
    assert "the loopback model server has no `token_rate`" in text
    assert "the plugin sent no streamed request" in text


def test_a_server_without_token_rate_still_runs(monkeypatch):
    from evennia_ai.testing import model_server

    class Plain:
        def __init__(self, **kwargs):
            if "token_rate" in kwargs:
                raise TypeError("unexpected keyword argument 'token_rate'")
            self.kwargs = kwargs

    monkeypatch.setattr(model_server, "ModelServer", Plain)
    server, streams = streaming.streaming_server(streaming.ours_responder, None)
    assert isinstance(server, Plain) and streams is False

"""The loopback model server, driven through litellm's real OpenAI path and plain urllib."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import openai
import pytest

from evennia_ai.testing.model_server import FAULT_KINDS, ModelServer, ReplySpec, main

pytestmark = pytest.mark.timeout(60)

ROOT = Path(__file__).resolve().parents[3]

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "say",
            "description": "Say something aloud.",
            "parameters": {
                "type": "object",
                "properties": {"message": {"type": "string"}},
                "required": ["message"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "emote",
            "description": "Act something out.",
            "parameters": {"type": "object", "properties": {"action": {"type": "string"}}},
        },
    },
]
MESSAGES = [
    {"role": "system", "content": "You are Mara, the innkeeper."},
    {"role": "user", "content": "Good evening, Mara!"},
]


@pytest.fixture(scope="module")
def litellm():
    import litellm as _litellm

    _litellm.suppress_debug_info = True  # keeps its "Give Feedback" banner out of the output
    return _litellm


@pytest.fixture
def server():
    with ModelServer() as srv:
        yield srv


def complete(litellm, server, **kwargs):
    """One litellm call to the server with no retries anywhere, so request counts are exact."""
    params = {"messages": MESSAGES, "tools": TOOLS, "timeout": 5}
    params.update(kwargs)
    return litellm.completion(
        model="openai/test-model",
        api_base=server.url,
        api_key="x",
        num_retries=0,
        max_retries=0,
        **params,
    )


HI = [{"role": "user", "content": "hi"}]  # the smallest valid request


def http(url, body=None, method=None, timeout=5):
    """Plain urllib request; returns (status, headers, raw body) also for error statuses."""
    data = body if body is None or isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(
        url, data=data, method=method, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


# -- replies through litellm -----------------------------------------------------------------


def test_text_reply(litellm, server):
    server.enqueue({"text": "Hello there", "usage": {"prompt_tokens": 12, "completion_tokens": 3}})
    response = complete(litellm, server)
    choice = response.choices[0]
    assert choice.message.content == "Hello there"
    assert choice.message.tool_calls is None
    assert choice.finish_reason == "stop"
    assert response.model == "test-model"
    assert (
        response.usage.prompt_tokens,
        response.usage.completion_tokens,
        response.usage.total_tokens,
    ) == (12, 3, 15)


def test_tool_calls_with_text_and_unique_ids(litellm, server):
    server.enqueue(
        {
            "text": "thinking",
            "tool_calls": [
                {"name": "say", "arguments": {"message": "Hi"}},
                {"name": "emote", "arguments": {"action": "waves"}},
            ],
        }
    )
    choice = complete(litellm, server).choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content == "thinking"
    calls = choice.message.tool_calls
    assert [c.function.name for c in calls] == ["say", "emote"]
    assert json.loads(calls[0].function.arguments) == {"message": "Hi"}
    assert json.loads(calls[1].function.arguments) == {"action": "waves"}
    assert len({c.id for c in calls}) == 2 and all(c.id.startswith("call_") for c in calls)


def test_request_record_holds_messages_and_tools_as_sent(litellm, server):
    server.enqueue("first", "second")
    complete(litellm, server)
    complete(litellm, server, messages=MESSAGES[:1])
    chats = server.requests_to("/v1/chat/completions")
    assert len(chats) == 2 and server.requests == chats
    assert chats[0].body["messages"] == MESSAGES
    assert chats[0].body["tools"] == TOOLS
    assert chats[0].body["model"] == "test-model"
    assert chats[0].headers["authorization"] == "Bearer x"  # lookup ignores case
    assert chats[0].headers["Authorization"] == "Bearer x"
    assert chats[0].reply.text == "first"
    assert server.last_request().body["messages"] == MESSAGES[:1]
    server.clear()
    assert server.requests == [] and server.last_request() is None


def test_queue_then_responder_then_default(litellm, server):
    server.default_reply = {"text": "default"}
    server.enqueue({"text": "queued"})
    assert complete(litellm, server).choices[0].message.content == "queued"
    assert complete(litellm, server).choices[0].message.content == "default"
    server.responder = lambda body: {"text": f"you said {body['messages'][-1]['content']}"}
    assert complete(litellm, server).choices[0].message.content == "you said Good evening, Mara!"
    server.responder = lambda body: None  # None falls back to the default reply
    assert complete(litellm, server).choices[0].message.content == "default"


def test_streaming_reassembles_text_and_tool_call(litellm, server):
    server.enqueue(
        {
            "text": "Hello there, traveller.",
            "tool_calls": [{"name": "say", "arguments": {"message": "Welcome in!"}}],
        }
    )
    text, calls, finish = "", {}, None
    chunks = list(complete(litellm, server, stream=True))
    assert len(chunks) > 4  # really streamed in pieces
    for chunk in chunks:
        choice = chunk.choices[0]
        text += choice.delta.content or ""
        for call in choice.delta.tool_calls or []:
            entry = calls.setdefault(call.index, {"id": None, "name": "", "arguments": ""})
            entry["id"] = call.id or entry["id"]
            entry["name"] += call.function.name or ""
            entry["arguments"] += call.function.arguments or ""
        finish = choice.finish_reason or finish
    assert text == "Hello there, traveller."
    assert list(calls) == [0]
    assert calls[0]["name"] == "say" and calls[0]["id"].startswith("call_")
    assert json.loads(calls[0]["arguments"]) == {"message": "Welcome in!"}
    assert finish == "tool_calls"
    assert server.last_request().body["stream"] is True


def test_streaming_usage_chunk_when_asked(litellm, server):
    server.enqueue({"text": "Hi", "usage": {"prompt_tokens": 7, "completion_tokens": 1}})
    chunks = list(complete(litellm, server, stream=True, stream_options={"include_usage": True}))
    usages = [c.usage for c in chunks if getattr(c, "usage", None)]
    assert usages and usages[-1].prompt_tokens == 7 and usages[-1].total_tokens == 8


def test_latency_delays_the_answer(litellm):
    with ModelServer(latency=0.3) as server:
        started = time.monotonic()
        complete(litellm, server)
        assert time.monotonic() - started >= 0.3


def test_concurrent_requests_are_served_in_parallel():
    with ModelServer(latency=0.4) as server:
        results = []
        threads = [
            threading.Thread(
                target=lambda: results.append(
                    http(server.url + "/chat/completions", {"model": "m", "messages": HI})[0]
                )
            )
            for _ in range(4)
        ]
        started = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert results == [200] * 4
        assert time.monotonic() - started < 1.2  # four 0.4 s answers overlapped


# -- faults through litellm ------------------------------------------------------------------


def test_500_is_an_internal_server_error(litellm, server):
    server.enqueue({"fault": "500"})
    with pytest.raises(litellm.InternalServerError) as info:
        complete(litellm, server)
    assert isinstance(info.value, openai.APIError)  # the base of every litellm exception
    assert info.value.status_code == 500
    assert len(server.requests) == 1  # no hidden retries


def test_429_is_a_rate_limit_error_with_retry_after(litellm, server):
    server.enqueue({"fault": "429", "retry_after": 2})
    with pytest.raises(litellm.RateLimitError) as info:
        complete(litellm, server)
    assert info.value.status_code == 429
    # litellm keeps the provider's headers here (its `.response` is a synthetic stand-in).
    assert info.value.litellm_response_headers["retry-after"] == "2"
    assert len(server.requests) == 1


def test_hang_past_the_timeout_is_a_timeout(litellm, server):
    server.enqueue({"fault": "hang", "seconds": 1.0})
    started = time.monotonic()
    with pytest.raises(litellm.Timeout):
        complete(litellm, server, timeout=0.3)
    assert time.monotonic() - started < 0.9
    assert len(server.requests) == 1


def test_hang_within_the_timeout_answers_with_the_default_reply(litellm, server):
    server.enqueue({"fault": "hang", "seconds": 0.2})
    assert complete(litellm, server).choices[0].message.content == "ok"


def test_malformed_body_is_an_api_error(litellm, server):
    server.enqueue({"fault": "malformed"})
    with pytest.raises(litellm.InternalServerError):  # the JSON decode error, wrapped
        complete(litellm, server)


def test_malformed_stream_is_an_api_error(litellm, server):
    server.enqueue({"fault": "malformed"})
    with pytest.raises(openai.APIError):  # litellm's MidStreamFallbackError
        list(complete(litellm, server, stream=True))


def test_empty_choices_come_back_as_an_empty_list(litellm, server):
    # litellm does not raise: the caller must check for an empty `choices` itself.
    server.enqueue({"fault": "empty_choices"})
    response = complete(litellm, server)
    assert response.choices == []


def test_empty_choices_stream_ends_without_content(litellm, server):
    server.enqueue({"fault": "empty_choices"})
    chunks = list(complete(litellm, server, stream=True))
    assert all(
        not (c.choices and (c.choices[0].delta.content or c.choices[0].delta.tool_calls))
        for c in chunks
    )


def test_invalid_args_targets_the_first_offered_tool(litellm, server):
    server.enqueue({"fault": "invalid_args"})
    call = complete(litellm, server).choices[0].message.tool_calls[0]
    assert call.function.name == "say"
    with pytest.raises(ValueError):
        json.loads(call.function.arguments)


def test_unknown_tool_names_a_tool_not_offered(litellm, server):
    server.enqueue({"fault": "unknown_tool"})
    choice = complete(litellm, server).choices[0]
    assert choice.finish_reason == "tool_calls"
    name = choice.message.tool_calls[0].function.name
    assert name not in {t["function"]["name"] for t in TOOLS}


# -- random faults, lifecycle, other endpoints -----------------------------------------------


def _fault_sequence(seed):
    with ModelServer(fault_rate=1.0, seed=seed, hang_seconds=0.01) as server:
        for _ in range(12):
            try:
                http(
                    server.url + "/chat/completions", {"model": "m", "messages": HI, "tools": TOOLS}
                )
            except (OSError, http_client_errors()):
                pass  # the truncated and disconnect faults
        return [r.reply.fault for r in server.requests]


def test_fault_rate_is_random_but_reproducible():
    faults = _fault_sequence(seed=3)
    assert all(f in FAULT_KINDS for f in faults)
    assert len(set(faults)) > 2
    assert faults == _fault_sequence(seed=3)


def test_random_fault_keeps_the_queued_reply_for_the_retry():
    with ModelServer(fault_rate=1.0, seed=1, hang_seconds=0.01) as server:
        server.enqueue({"text": "scripted"})
        try:
            http(server.url + "/chat/completions", {"model": "m", "messages": HI})
        except (OSError, http_client_errors()):
            pass
        server.fault_rate = 0.0
        status, _, raw = http(server.url + "/chat/completions", {"model": "m", "messages": HI})
        assert status == 200
        assert json.loads(raw)["choices"][0]["message"]["content"] == "scripted"


def test_stop_is_prompt_during_a_hang():
    server = ModelServer(hang_seconds=30).start()
    server.enqueue({"fault": "hang"})
    outcome = []

    def client():
        try:
            outcome.append(
                http(server.url + "/chat/completions", {"model": "m", "messages": HI}, timeout=10)
            )
        except Exception as error:  # the server closes the connection unanswered
            outcome.append(error)

    thread = threading.Thread(target=client)
    thread.start()
    while not server.requests:
        time.sleep(0.01)
    started = time.monotonic()
    server.stop()
    thread.join(5)
    assert time.monotonic() - started < 1.0
    assert outcome and not isinstance(outcome[0], tuple)
    server.stop()  # a second stop is harmless
    with pytest.raises(RuntimeError):
        server.start()


def test_client_giving_up_on_a_hang_prints_nothing(capfd):
    with ModelServer() as server:
        server.enqueue({"fault": "hang", "seconds": 0.4})
        with pytest.raises(OSError):  # socket timeout / URLError
            http(server.url + "/chat/completions", {"model": "m", "messages": HI}, timeout=0.1)
        time.sleep(0.6)  # the handler wakes and writes to the closed connection
        assert http(server.url + "/models")[0] == 200
    captured = capfd.readouterr()
    assert "Traceback" not in captured.err and "Broken" not in captured.err


def test_models_404_and_bad_bodies(server):
    status, _, raw = http(server.url + "/models")
    assert status == 200 and json.loads(raw)["data"][0]["id"] == "test-model"
    status, _, raw = http(server.url + "/nowhere", {"x": 1})
    assert status == 404 and "no such endpoint" in json.loads(raw)["error"]["message"]
    status, _, raw = http(server.url + "/chat/completions", b"not json")
    assert status == 400
    status, _, _ = http(server.url + "/chat/completions", {"model": "m"})
    assert status == 400
    assert [r.method for r in server.requests] == ["GET", "POST", "POST", "POST"]
    assert server.requests_to("/v1/nowhere")[0].body == {"x": 1}


def test_generate_protocol_of_evennias_llm_contrib(server):
    # The shape evennia.contrib.rpg.llm.llm_client.LLMClient sends and reads.
    server.enqueue(
        {"text": "Welcome to the Tankard."}, {"fault": "429"}, {"fault": "empty_choices"}
    )
    body = {"max_new_tokens": 250, "temperature": 0.7, "prompt": "You are Mara.\nHello"}
    status, _, raw = http(server.root_url + "/api/v1/generate", body)
    assert status == 200
    assert json.loads(raw)["results"][0]["text"] == "Welcome to the Tankard."
    assert server.last_request().body == body
    status, headers, _ = http(server.root_url + "/api/v1/generate", body)
    assert status == 429 and headers["Retry-After"] == "1"
    status, _, raw = http(server.root_url + "/api/v1/generate", body)
    assert json.loads(raw) == {"results": []}
    assert len(server.requests_to("/api/v1/generate")) == 3


# -- construction and validation -------------------------------------------------------------


@pytest.mark.parametrize("host", ["0.0.0.0", "", "192.168.1.2", "::"])
def test_refuses_non_loopback_hosts(host):
    with pytest.raises(ValueError, match="127.0.0.1"):
        ModelServer(host=host)


@pytest.mark.parametrize(
    "spec, message",
    [
        ({"txt": "typo"}, "unknown reply spec key"),
        ({"fault": "404"}, "unknown fault"),
        ({"tool_calls": [{"arguments": {}}]}, "'name'"),
        ({"tool_calls": {"name": "say"}}, "must be a list"),
        ({"usage": {"prompt_tokens": "many"}}, "usage"),
        (42, "must be a dict"),
    ],
)
def test_bad_reply_specs_are_refused_with_a_reason(server, spec, message):
    with pytest.raises(ValueError, match=message):
        server.enqueue({"text": "fine"}, spec)
    assert server.pending == 0  # nothing queued when any spec is bad


def test_reply_spec_from_dict():
    spec = ReplySpec.from_dict({"tool_calls": [{"name": "say", "arguments": "{bad", "id": "c1"}]})
    assert spec.tool_calls[0].arguments == "{bad" and spec.tool_calls[0].id == "c1"
    assert ReplySpec.from_dict("hi").text == "hi"


# -- command line ----------------------------------------------------------------------------


def test_cli_serves_a_script_until_sigterm(tmp_path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "from the script"}]))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "evennia_ai.testing.model_server",
            "--script",
            str(script),
            "--default-text",
            "after",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        url = re.search(r"http://127\.0\.0\.1:\d+/v1\b", process.stdout.readline()).group()
        replies = [
            json.loads(
                http(
                    url + "/chat/completions",
                    {"model": "m", "messages": [{"role": "user", "content": "hi"}]},
                )[2]
            )["choices"][0]["message"]["content"]
            for _ in range(2)
        ]
        assert replies == ["from the script", "after"]
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=10)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    assert "2 request(s)" in out
    assert "Warning" not in err


def test_cli_refuses_a_public_host_and_a_bad_script(tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        main(["--host", "0.0.0.0"])
    assert info.value.code == 2 and "127.0.0.1" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text('[{"fault": "teapot"}]')
    with pytest.raises(SystemExit):
        main(["--script", str(bad)])
    assert "unknown fault 'teapot'" in capsys.readouterr().err


def test_port_in_use_is_a_clear_cli_error(capsys):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        with pytest.raises(SystemExit):
            main(["--port", str(sock.getsockname()[1])])
    assert "cannot listen" in capsys.readouterr().err


# -- connection faults, counters, the classification our client makes -----------------------


def test_truncated_body_is_an_api_error(litellm, server):
    server.enqueue({"fault": "truncated"})
    with pytest.raises(openai.APIError):  # the connection closes before the promised length
        complete(litellm, server)
    assert server.counts() == {"truncated": 1}


def test_disconnect_is_a_connection_error(litellm, server):
    server.enqueue({"fault": "disconnect"})
    with pytest.raises(openai.APIError):
        complete(litellm, server)
    server.enqueue("after")  # the server keeps serving new connections
    assert complete(litellm, server).choices[0].message.content == "after"


@pytest.mark.parametrize(
    "fault, kind",
    [
        ("500", "server"),
        ("429", "rate_limit"),
        ("hang", "timeout"),
        ("malformed", "malformed"),
        ("empty_choices", "empty"),
        ("truncated", "connection"),
        ("disconnect", "connection"),
    ],
)
def test_every_transport_fault_is_classified_by_our_client(server, fault, kind):
    from evennia_ai.llm.client import UnifiedLLMClient

    server.enqueue({"fault": fault, "seconds": 1.0, "retry_after": 0})
    client = UnifiedLLMClient(
        model="openai/test-model", api_base=server.url, api_key="x", timeout=0.3, max_retries=0
    )
    result = client.complete_sync(MESSAGES, TOOLS)
    assert not result.ok and result.error_kind in (
        kind,
        "malformed" if fault == "truncated" else kind,
    )


def test_counts_per_kind_and_path(server):
    server.enqueue({"fault": "500"}, "fine", {"fault": "empty_choices"})
    for path in ("/chat/completions", "/chat/completions"):
        http(server.url + path, {"model": "m", "messages": HI})
    http(server.root_url + "/api/v1/generate", {"prompt": "hi"})
    http(server.url + "/models")  # GETs are not counted
    assert server.counts() == {"500": 1, "ok": 1, "empty_choices": 1}
    assert server.counts("/api/v1/generate") == {"empty_choices": 1}
    server.clear()
    assert server.counts() == {}


def test_random_faults_cover_every_kind_with_a_seed():
    with ModelServer(fault_rate=0.5, seed=7, hang_seconds=0.0) as server:
        for _ in range(120):
            try:
                http(server.root_url + "/api/v1/generate", {"prompt": "hi"}, timeout=2)
            except (OSError, http_client_errors()):
                pass  # truncated / disconnect
        counts = server.counts()
    assert set(FAULT_KINDS) <= set(counts)
    assert 30 <= sum(v for k, v in counts.items() if k != "ok") <= 90


def http_client_errors():
    import http.client

    return http.client.HTTPException


def test_generate_latency_applies(server):
    server.latency = 0.25
    started = time.monotonic()
    status, _, raw = http(server.root_url + "/api/v1/generate", {"prompt": "hi"})
    assert status == 200 and json.loads(raw)["results"][0]["text"] == "ok"
    assert time.monotonic() - started >= 0.25


def test_cli_default_reply_spec(capsys):
    with pytest.raises(SystemExit):
        main(["--default-reply", '{"fault": "teapot"}'])
    assert "cannot use --default-reply" in capsys.readouterr().err


def test_every_request_is_validated_like_a_strict_provider():
    """Tool results out of order, calls left unanswered and oversized prompts are refused."""
    from evennia_ai.testing import model_server

    call = {"id": "c1", "type": "function", "function": {"name": "look", "arguments": "{}"}}
    bad = [
        [{"role": "tool", "tool_call_id": "c1", "content": "x"}],
        [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "user", "content": "and?"},
        ],
        [{"role": "user", "content": "word " * 4000}],
    ]
    with ModelServer(window_of=lambda model: 1000) as server:
        for messages in bad:
            status, _headers, text = http(
                server.url + "/chat/completions", {"model": "m", "messages": messages}
            )
            assert status == 400, text
        ok = [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "a room"},
        ]
        status, _headers, _text = http(
            server.url + "/chat/completions", {"model": "m", "messages": ok}
        )
        assert status == 200
        problems = server.violations
    assert len(problems) == 3
    assert "answers no open tool call" in problems[0]
    assert "never answered" in problems[1]
    assert "window" in problems[2]
    assert len(model_server.take_violations()) == 3  # what the suite's check would fail on


def _sse_events(url: str, body: dict) -> tuple[list, list[float]]:
    """POST ``body`` and read its server-sent events: (decoded events, arrival times)."""
    request = urllib.request.Request(
        url + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    events, times = [], []
    with urllib.request.urlopen(request, timeout=30) as response:
        for line in response:
            line = line.strip()
            if line.startswith(b"data: "):
                data = line[len(b"data: ") :].decode()
                events.append(data if data == "[DONE]" else json.loads(data))
                times.append(time.monotonic())
    return events, times


def test_token_rate_paces_the_stream_one_word_a_chunk():
    text = "One two three four five six seven eight nine ten."
    with ModelServer(token_rate=40) as server:
        server.enqueue({"text": text})
        started = time.monotonic()
        events, times = _sse_events(
            server.url,
            {
                "model": "test-model",
                "messages": MESSAGES,
                "stream": True,
                "stream_options": {"include_usage": True},
            },
        )
    pieces = [e["choices"][0]["delta"].get("content") for e in events[:-1] if e["choices"]]
    words = [p for p in pieces if p]
    assert "".join(words) == text and len(words) == 10  # one chunk per word
    assert times[-1] - started >= 10 / 40 * 0.9  # ten tokens at 40 a second: about 0.25 s
    assert events[-1] == "[DONE]" and events[-2]["usage"]["total_tokens"] > 0


def test_token_rate_paces_tool_call_arguments_split_across_chunks():
    with ModelServer(token_rate=50) as server:
        server.enqueue(
            {"tool_calls": [{"name": "say", "arguments": {"message": "Welcome in, friend!"}}]}
        )
        events, times = _sse_events(
            server.url,
            {"model": "test-model", "messages": MESSAGES, "tools": TOOLS, "stream": True},
        )
    fragments = [
        call["function"].get("arguments", "")
        for e in events[:-1]
        for call in e["choices"][0]["delta"].get("tool_calls") or []
    ]
    assert len([f for f in fragments if f]) >= 3  # the arguments arrive in several pieces
    assert json.loads("".join(fragments)) == {"message": "Welcome in, friend!"}
    assert times[-1] - times[0] >= (len(fragments) - 1) / 50 * 0.9


def test_token_rate_must_be_positive():
    with pytest.raises(ValueError, match="token_rate"):
        ModelServer(token_rate=0)


def test_truncated_stream_stops_mid_answer():
    with ModelServer() as server:
        server.enqueue({"fault": "truncated", "text": "A long answer that never finishes here."})
        try:
            events, _ = _sse_events(
                server.url, {"model": "test-model", "messages": MESSAGES, "stream": True}
            )
        except Exception:  # http.client may report the cut body itself
            events = []
        assert "[DONE]" not in events
        assert len(events) <= 3  # a few pieces, then nothing
        assert server.counts() == {"truncated": 1}

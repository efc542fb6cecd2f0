"""The lean OpenAI-wire route and streaming, against the loopback model server.

What issue 33 asks of the lean route: the same request body as litellm sends, the same answer
(text, tool calls, usage, cost, ``raw``), prices read from litellm's map without its cost
functions, the same routing rules (reasoning models and ``EVENNIA_AI_LITELLM_MODELS`` stay on
litellm), proxies and TLS as litellm's client takes them, and streaming (``on_delta``) on both
routes with exact usage, a whole-stream timeout, and no retry once a piece was handed over.
"""

from __future__ import annotations

import json
import logging
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from unittest import mock

import pytest
from django.test import override_settings

from evennia_ai.llm import aio, openai_wire
from evennia_ai.llm.client import UnifiedLLMClient, get_litellm
from evennia_ai.llm.types import StreamDelta
from evennia_ai.testing.model_server import ModelServer

pytestmark = pytest.mark.timeout(60)

CHAT = "/v1/chat/completions"
SCHEMA = {
    "type": "object",
    "properties": {
        "message": {"type": "string"},
        "manner": {"type": "object", "properties": {}, "additionalProperties": False},
    },
    "required": ["message"],
    "additionalProperties": False,
}
SAY = {
    "type": "function",
    "function": {"name": "say", "description": "Say.", "parameters": SCHEMA, "strict": True},
}
MESSAGES = [
    {"role": "system", "content": "You are Mara, the innkeeper."},
    {"role": "user", "content": 'Alice says, "Good evening!"'},
]
LITELLM = ["*"]  # EVENNIA_AI_LITELLM_MODELS sending every model through litellm


@pytest.fixture(scope="module", autouse=True)
def warm():
    get_litellm()


@pytest.fixture
def server():
    with ModelServer() as srv:
        yield srv


def client_for(server, **kwargs) -> UnifiedLLMClient:
    options = dict(
        model="openai/test-model", api_base=server.url, api_key="x", timeout=5, max_retries=2
    )
    options.update(kwargs)
    client = UnifiedLLMClient(**options)
    client.sleep = lambda seconds: None
    return client


def on_route(route: str):
    return override_settings(EVENNIA_AI_LITELLM_MODELS=LITELLM if route == "litellm" else [])


class Pieces(list):
    """An on_delta that records the pieces and the thread they came on."""

    def __init__(self):
        super().__init__()
        self.threads = set()

    def __call__(self, delta: StreamDelta) -> None:
        self.threads.add(threading.current_thread().name)
        self.append(delta)

    @property
    def text(self) -> str:
        return "".join(p.content for p in self)

    def arguments(self, index: int = 0) -> str:
        return "".join(c.arguments for p in self for c in p.tool_calls if c.index == index)


# -- the request body ------------------------------------------------------------------------------
def test_the_lean_body_equals_litellms(server):
    """Messages, tools, temperature, max_tokens and response_format as litellm sends them."""
    bodies = {}
    for route in ("litellm", "lean"):
        with on_route(route):
            result = client_for(server).complete_sync(
                MESSAGES,
                [SAY],
                temperature=0.7,
                max_tokens=100,
                response_format={"type": "json_object"},
            )
        assert result.ok
        request = server.last_request()
        bodies[route] = request.body
        assert ("litellm" in request.headers.get("user-agent", "")) == (route == "litellm")
    assert bodies["lean"] == bodies["litellm"]
    function = bodies["lean"]["tools"][0]["function"]
    assert "strict" not in function and "additionalProperties" not in function["parameters"]
    assert SCHEMA["additionalProperties"] is False  # the registry's own schema is untouched


def test_a_property_named_strict_is_kept():
    """litellm drops every key named ``strict``, a tool's own property too; the lean route only
    drops the schema keyword (the one difference of the bodies, documented)."""
    schema = {"type": "object", "properties": {"strict": {"type": "boolean"}}, "strict": True}
    tool = {"type": "function", "function": {"name": "x", "parameters": schema}}
    body = openai_wire.request_body("m", MESSAGES, [tool])
    assert body["tools"][0]["function"]["parameters"] == {
        "type": "object",
        "properties": {"strict": {"type": "boolean"}},
    }


def test_the_lean_body_of_a_plain_call_equals_litellms(server):
    bodies = []
    for route in ("litellm", "lean"):
        with on_route(route):
            assert client_for(server).complete_sync(MESSAGES).ok
        bodies.append(server.last_request().body)
    assert bodies[0] == bodies[1] == {"model": "test-model", "messages": MESSAGES}


# -- which models take the route --------------------------------------------------------------------
@pytest.mark.parametrize(
    "model, base, lean",
    [
        ("openai/qwen2.5-7b", "http://gpu1:8000/v1", True),
        ("hosted_vllm/qwen2.5-7b", "http://gpu1:8000/v1", True),
        ("hosted_vllm/qwen2.5-7b", None, False),  # no server to send it to
        ("ollama/llama3.1", "http://127.0.0.1:11434", False),  # Ollama's own API via litellm
        ("anthropic/claude-3-5-sonnet", None, False),
        ("openai/o3-mini", "http://gpu1:8000/v1", True),  # litellm sends it unchanged there
        ("openai/o1", None, False),  # at OpenAI litellm translates its parameters
        ("openai/gpt-5-mini", None, False),
        ("openai/gpt-4o-mini", None, True),
    ],
)
def test_which_models_take_the_lean_route(model, base, lean, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    openai_wire.reset_routes()
    assert (openai_wire.lean_endpoint(model, base, "x") is not None) == lean


def test_openai_itself_is_reached_as_litellm_reaches_it(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_ORGANIZATION", "org-1")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    openai_wire.reset_routes()
    endpoint = openai_wire.lean_endpoint("openai/gpt-4o-mini", None, None)
    assert endpoint.url == "https://api.openai.com/v1/chat/completions"
    assert endpoint.model == "gpt-4o-mini"
    assert endpoint.headers["Authorization"] == "Bearer sk-test"
    assert endpoint.headers["OpenAI-Organization"] == "org-1"


def test_a_setting_sends_models_back_through_litellm(server):
    with override_settings(EVENNIA_AI_LITELLM_MODELS=["openai/test-*"]):
        assert openai_wire.lean_endpoint("openai/test-model", server.url, "x") is None
        assert openai_wire.lean_endpoint("openai/other", server.url, "x") is not None
    with override_settings(EVENNIA_AI_OPENAI_SDK_ROUTE=True):
        assert openai_wire.lean_endpoint("openai/other", server.url, "x") is None
        assert openai_wire.lean_endpoint("hosted_vllm/other", server.url, "x") is not None


def test_litellm_callbacks_keep_every_model_on_litellm(server):
    """An operator's litellm observers (Langfuse, OpenTelemetry) see only litellm's calls: while
    any is set, no model takes the lean route, so none of their calls goes unobserved."""
    assert openai_wire.lean_endpoint("openai/other", server.url, "x") is not None
    with override_settings(EVENNIA_AI_LITELLM_CALLBACKS=["langfuse"]):
        assert openai_wire.lean_endpoint("openai/other", server.url, "x") is None
        assert openai_wire.lean_endpoint("hosted_vllm/other", server.url, "x") is None


def test_a_reasoning_model_goes_through_litellm_with_its_parameters_translated(server, monkeypatch):
    """At OpenAI, o-series models get max_completion_tokens and no temperature (litellm's
    translation); other OpenAI models take the lean route to the same place."""
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)  # "OpenAI itself", as both routes find it
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    openai_wire.reset_routes()
    client = client_for(server, api_base=None, model="openai/o3-mini")
    assert client.complete_sync(MESSAGES, temperature=0.2, max_tokens=50).ok
    body = server.last_request().body
    assert body.get("max_completion_tokens") == 50 and "max_tokens" not in body
    assert "temperature" not in body
    client = client_for(server, api_base=None, model="openai/gpt-4o-mini")
    assert client.complete_sync(MESSAGES, temperature=0.2, max_tokens=50).ok
    request = server.last_request()
    assert request.body["max_tokens"] == 50 and request.body["temperature"] == 0.2
    assert request.headers["authorization"] == "Bearer x"  # the call's key wins
    assert "litellm" not in request.headers.get("user-agent", "")  # the lean route


# -- prices ------------------------------------------------------------------------------------------
def test_prices_are_read_from_the_map_not_litellms_cost_functions(server):
    litellm = get_litellm()
    server.enqueue({"text": "hi", "usage": {"prompt_tokens": 1000, "completion_tokens": 1000}})
    with (
        mock.patch.object(litellm, "cost_per_token") as per_token,
        mock.patch.object(litellm, "completion_cost") as completion_cost,
    ):
        result = client_for(server).complete_sync(MESSAGES, model="openai/gpt-4o-mini")
        unpriced = client_for(server).complete_sync(MESSAGES, model="openai/no-such-model")
    per_token.assert_not_called()
    completion_cost.assert_not_called()
    info = litellm.model_cost["gpt-4o-mini"]
    expected = 1000 * info["input_cost_per_token"] + 1000 * info["output_cost_per_token"]
    assert result.cost == pytest.approx(expected)
    assert unpriced.ok and unpriced.cost is None


def test_the_answer_is_the_same_on_both_routes(server):
    reply = {
        "text": "Welcome in.",
        "tool_calls": [{"name": "say", "arguments": {"message": "Hi"}, "id": "call_a"}],
        "usage": {"prompt_tokens": 40, "completion_tokens": 9},
    }
    results = {}
    for route in ("litellm", "lean"):
        server.enqueue(reply)
        with on_route(route):
            results[route] = client_for(server).complete_sync(MESSAGES, [SAY])
    lean, slow = results["lean"], results["litellm"]
    assert (lean.text, lean.tool_calls, lean.usage, lean.finish_reason) == (
        slow.text,
        slow.tool_calls,
        slow.usage,
        slow.finish_reason,
    )
    assert isinstance(lean.raw, dict) and lean.raw["choices"][0]["message"]["tool_calls"]
    assert json.loads(json.dumps(lean.raw)) == lean.raw  # a plain dict


# -- streaming ------------------------------------------------------------------------------------
@pytest.mark.parametrize("route", ["lean", "litellm"])
def test_a_streamed_text_answer_arrives_in_pieces_and_assembles_exactly(server, route):
    text = "The stew is hot. The ale is cold. Sit anywhere you like."
    reply = {"text": text, "usage": {"prompt_tokens": 30, "completion_tokens": 12}}
    server.enqueue(reply, reply)
    pieces = Pieces()
    with on_route(route):
        streamed = client_for(server).complete_sync(MESSAGES, on_delta=pieces)
        plain = client_for(server).complete_sync(MESSAGES)
    body = server.requests_to(CHAT)[0].body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert len(pieces) >= 10 and pieces.text == text  # one piece a word, in order
    assert pieces.threads == {"evennia_ai-llm"}  # on the model-call loop's thread
    assert (streamed.text, streamed.usage, streamed.finish_reason) == (
        plain.text,
        plain.usage,
        plain.finish_reason,
    )
    assert streamed.usage.prompt_tokens == 30 and streamed.usage.completion_tokens == 12
    assert streamed.raw["choices"][0]["message"]["content"] == text


@pytest.mark.parametrize("route", ["lean", "litellm"])
def test_a_streamed_tool_call_hands_over_its_arguments_in_pieces(server, route):
    arguments = {"message": "Welcome, traveller. Sit by the fire."}
    server.enqueue({"tool_calls": [{"name": "say", "arguments": arguments}]})
    pieces = Pieces()
    with on_route(route):
        result = client_for(server).complete_sync(MESSAGES, [SAY], on_delta=pieces)
    assert result.ok and result.finish_reason == "tool_calls"
    assert [(c.name, c.arguments) for c in result.tool_calls] == [("say", arguments)]
    names = [c.name for p in pieces for c in p.tool_calls if c.name]
    assert names == ["say"]
    fragments = [c.arguments for p in pieces for c in p.tool_calls if c.arguments]
    assert len(fragments) >= 3 and json.loads(pieces.arguments()) == arguments
    assert result.usage.total_tokens > 0


@pytest.mark.parametrize("route", ["lean", "litellm"])
def test_the_json_protocol_streams_its_json_text(server, route):
    call = '{"tool": "say", "arguments": {"message": "Hello there, friend."}}'
    server.enqueue({"text": call})
    pieces = Pieces()
    with (
        on_route(route),
        override_settings(EVENNIA_AI_MODEL_SETTINGS={"openai/test-model": {"native_tools": False}}),
    ):
        result = client_for(server).complete_sync(MESSAGES, [SAY], on_delta=pieces)
    assert pieces.text == call and len(pieces) > 3
    assert result.ok and not result.native_tools
    assert [(c.name, c.arguments) for c in result.tool_calls] == [
        ("say", {"message": "Hello there, friend."})
    ]


@pytest.mark.parametrize("route", ["lean", "litellm"])
def test_a_failing_consumer_is_logged_once_and_the_call_completes(server, route, caplog):
    server.enqueue({"text": "one two three four five"})
    calls = []

    def broken(delta):
        calls.append(delta)
        raise RuntimeError("consumer bug")

    with on_route(route), caplog.at_level(logging.ERROR):
        result = client_for(server).complete_sync(MESSAGES, on_delta=broken)
    assert result.ok and result.text == "one two three four five"
    assert len(calls) == 1
    assert sum("stream consumer failed" in r.getMessage() for r in caplog.records) == 1


@pytest.mark.parametrize("route", ["lean", "litellm"])
def test_an_error_mid_stream_is_classified_and_not_retried(server, route):
    server.enqueue({"fault": "truncated", "text": "This answer is cut off in the middle of it."})
    server.enqueue({"text": "a retry the player must not see"})
    pieces = Pieces()
    client = client_for(server, fallbacks=["openai/backup"])
    with on_route(route):
        result = client.complete_sync(MESSAGES, on_delta=pieces)
    assert not result.ok and result.error_kind == "connection", result.error
    assert result.attempts == 1 and not result.fallback_used  # neither retried nor fallen back
    assert pieces and "retry" not in pieces.text
    assert len(server.requests_to(CHAT)) == 1
    assert "object at 0x" not in result.error


@pytest.mark.parametrize("route", ["lean", "litellm"])
def test_an_error_before_any_piece_is_retried_as_usual(server, route):
    server.enqueue({"fault": "500"}, {"text": "second time lucky"})
    pieces = Pieces()
    with on_route(route):
        result = client_for(server).complete_sync(MESSAGES, on_delta=pieces)
    assert result.ok and result.attempts == 2 and pieces.text == "second time lucky"


def test_the_timeout_covers_the_whole_stream():
    """A server that answers at once but writes slowly is cut at the call's timeout."""
    with ModelServer(token_rate=10) as slow:
        slow.enqueue({"text": " ".join(["word"] * 40)})  # four seconds of writing
        pieces = Pieces()
        client = client_for(slow, timeout=0.6, max_retries=0)
        result = client.complete_sync(MESSAGES, on_delta=pieces)
    assert not result.ok and result.error_kind == "timeout"
    assert result.error == "timed out after 0.6 s"
    assert 2 <= len(pieces) < 40


def test_a_streamed_call_respects_the_endpoint_limit():
    with ModelServer(token_rate=200) as srv:
        srv.default_reply = {"text": "one two three four five six"}
        client = client_for(srv)
        peak = []

        def watch(delta):
            peak.append(sum(v["in_flight"] for v in client.limits.snapshot().values()))

        async def many():
            import asyncio

            return await asyncio.gather(
                *(client.acomplete(MESSAGES, on_delta=watch) for _ in range(6))
            )

        with override_settings(EVENNIA_AI_MAX_CONCURRENT_CALLS=2):
            results = aio.run_sync(many)
    assert all(r.ok for r in results) and max(peak) <= 2


def test_offline_answers_are_handed_over_whole():
    pieces = Pieces()
    result = UnifiedLLMClient(model="evennia_ai/offline").complete_sync(
        MESSAGES, [SAY], on_delta=pieces
    )
    assert result.ok and len(pieces) == 1
    assert pieces.text == (result.text or "")


# -- transport settings -----------------------------------------------------------------------------
class _Proxy(BaseHTTPRequestHandler):
    """A forward proxy stand-in: records the absolute URL asked for and answers itself."""

    protocol_version = "HTTP/1.1"

    def do_POST(self):
        self.server.seen.append(self.path)
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        payload = json.dumps(
            {
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "via proxy"}}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3},
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


def test_the_lean_route_honours_http_proxy(monkeypatch):
    proxy = ThreadingHTTPServer(("127.0.0.1", 0), _Proxy)
    proxy.seen = []
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.server_address[1]}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    try:
        aio.run_sync(_fresh_sessions)  # sessions read the environment when made
        client = UnifiedLLMClient(
            model="openai/test-model",
            api_base="http://models.example.internal/v1",
            api_key="x",
            timeout=5,
            max_retries=0,
        )
        result = client.complete_sync(MESSAGES)
    finally:
        proxy.shutdown()
        proxy.server_close()
        monkeypatch.delenv("HTTP_PROXY")
        aio.run_sync(_fresh_sessions)
    assert result.ok and result.text == "via proxy"
    assert proxy.seen == ["http://models.example.internal/v1/chat/completions"]


async def _fresh_sessions():
    await openai_wire.SESSIONS.close()


def test_tls_follows_litellms_settings(monkeypatch):
    monkeypatch.setenv("SSL_VERIFY", "False")
    assert openai_wire.ssl_setting() is False
    monkeypatch.delenv("SSL_VERIFY")
    context = openai_wire.ssl_setting()
    assert isinstance(context, ssl.SSLContext) and context.verify_mode == ssl.CERT_REQUIRED


# -- errors ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "fault, kind, words",
    [
        ("500", "server", "the provider failed (500): scripted server error"),
        ("429", "rate_limit", "the provider is rate-limiting (429); it asks to wait 3 s"),
        ("empty_choices", "empty", "the reply was empty (no choices)"),
        ("disconnect", "connection", "the server at {url} closed the connection without answering"),
        (
            "truncated",
            "connection",
            "the server at {url} closed the connection before the answer was complete",
        ),
        ("malformed", "malformed", "the reply was not valid JSON"),
    ],
)
def test_lean_errors_have_the_kinds_and_words_of_the_litellm_route(server, fault, kind, words):
    server.enqueue({"fault": fault, "retry_after": 3} if fault == "429" else {"fault": fault})
    result = client_for(server, max_retries=0, fallbacks=[]).complete_sync(MESSAGES)
    assert result.error_kind == kind and result.error == words.format(url=server.url), result.error
    if fault == "429":
        assert "Retry" not in result.error  # the header is read, not quoted


def test_a_refused_connection_is_named_in_words():
    with ModelServer() as gone:
        url = gone.url
    result = UnifiedLLMClient(
        model="openai/test-model", api_base=url, api_key="x", timeout=2, max_retries=0
    ).complete_sync(MESSAGES)
    assert result.error_kind == "connection"
    assert result.error == f"connection refused to {url}"


def test_retry_after_of_a_rate_limit_is_used_for_the_backoff(server):
    server.enqueue({"fault": "429", "retry_after": 0.3}, {"text": "ok"})
    client = client_for(server, base_delay=0.01, max_delay=5)
    waits = []
    client.sleep = waits.append
    assert client.complete_sync(MESSAGES).ok
    assert waits and waits[0] >= 0.3


def test_the_litellm_route_words_a_refused_connection_without_reprs():
    from evennia_ai.llm.litellm_route import classify_exception

    class APIConnectionError(Exception):
        status_code = 500

    err = APIConnectionError(
        "litellm.APIConnectionError: Hosted_vllmException - Cannot connect to host "
        "127.0.0.1:49061 ssl:<ssl.SSLContext object at 0x7fef25bf6210> [Connect call failed]"
    )
    error = classify_exception(err)
    assert error.kind == "connection"
    assert str(error) == "connection refused to 127.0.0.1:49061"

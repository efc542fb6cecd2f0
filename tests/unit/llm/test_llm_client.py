"""UnifiedLLMClient against the loopback model server, on both routes.

Every test runs twice: on the lean route (the plugin's own aiohttp transport, which
``openai/<name>`` at an ``api_base`` takes by default) and on the litellm route
(``EVENNIA_AI_LITELLM_MODELS = ["*"]``), so retries, fallbacks, Retry-After, limits, error kinds
and their wording are checked to behave alike. Tests of litellm itself run on its route only.
Every test talks HTTP to 127.0.0.1 only. Timeouts are a fraction of a second and backoff sleeps
are recorded instead of slept, so the file runs in seconds.
"""

import asyncio
import json
import logging
import threading
import time
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from unittest import mock

import pytest
from django.test import override_settings
from twisted.internet import defer

from evennia_ai.llm import aio
from evennia_ai.llm import client as client_module
from evennia_ai.llm.client import (
    UnifiedLLMClient,
    configure_litellm_callbacks,
    get_client,
    get_litellm,
    parse_retry_after,
    to_text_protocol,
    uses_native_tools,
)
from evennia_ai.llm.types import LLMResult
from evennia_ai.testing.model_server import ModelServer

pytestmark = pytest.mark.timeout(60)

CHAT = "/v1/chat/completions"
SAY = {
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
}
LOOK = {
    "type": "function",
    "function": {
        "name": "look",
        "description": "Look around.",
        "parameters": {"type": "object", "properties": {}},
    },
}
MESSAGES = [
    {"role": "system", "content": "You are Mara, the innkeeper."},
    {"role": "user", "content": 'Alice says, "Good evening!"'},
]


@pytest.fixture(scope="module", autouse=True)
def warm_litellm():
    """Import litellm and make one call, so timing assertions do not pay for cold starts."""
    with ModelServer() as srv:
        UnifiedLLMClient(
            model="openai/test-model", api_base=srv.url, api_key="x", timeout=10
        ).complete_sync(MESSAGES, [SAY])


#: Tests of litellm's own behaviour (its arguments, its callbacks): its route only.
LITELLM_ONLY = {
    "test_litellm_retries_are_off",
    "test_unexpected_exceptions_become_results",
    "test_configured_callback_sees_calls",
}


@pytest.fixture(autouse=True, params=["lean", "litellm"])
def route(request):
    """Run the test on the lean route, then on litellm's."""
    if request.param == "lean" and request.node.originalname in LITELLM_ONLY:
        pytest.skip("a test of litellm's own behaviour")
    patterns = ["*"] if request.param == "litellm" else []
    with override_settings(EVENNIA_AI_LITELLM_MODELS=patterns):
        yield request.param


@pytest.fixture
def server():
    with ModelServer() as srv:
        yield srv


class Sleeps(list):
    """Records backoff delays instead of sleeping them."""

    def __call__(self, seconds):
        self.append(seconds)


def make_client(server, **kwargs):
    options = dict(
        model="openai/test-model",
        api_base=server.url,
        api_key="x",
        timeout=1,
        max_retries=2,
        base_delay=0.01,
        max_delay=0.05,
    )
    options.update(kwargs)
    client = UnifiedLLMClient(**options)
    client.sleep = Sleeps()
    return client


def chat_requests(server):
    return server.requests_to(CHAT)


# -- answers -----------------------------------------------------------------------------------
def test_text_reply(server):
    server.enqueue(
        {"text": "Evening, Alice!", "usage": {"prompt_tokens": 12, "completion_tokens": 4}}
    )
    result = make_client(server).complete_sync(MESSAGES)
    assert isinstance(result, LLMResult) and result.ok
    assert result.text == "Evening, Alice!" and result.tool_calls == []
    usage = result.usage
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (12, 4, 16)
    assert result.model == "openai/test-model" and result.attempts == 1
    assert result.finish_reason == "stop" and result.native_tools and not result.fallback_used
    assert 0 < result.latency < 2
    assert result.raw["choices"][0]["message"]["content"] == "Evening, Alice!"
    body = chat_requests(server)[0].body
    assert body["model"] == "test-model" and body["messages"] == MESSAGES
    assert "tools" not in body


def test_tool_calls(server):
    server.enqueue(
        {
            "text": "Greeting her.",
            "tool_calls": [
                {"name": "look", "arguments": {}},
                {"name": "say", "arguments": {"message": "Hi"}},
            ],
        }
    )
    result = make_client(server).complete_sync(MESSAGES, [SAY, LOOK])
    assert result.ok and result.text == "Greeting her."
    assert [c.name for c in result.tool_calls] == ["look", "say"]
    say = result.tool_calls[1]
    assert say.arguments == {"message": "Hi"} and json.loads(say.raw_arguments) == {"message": "Hi"}
    assert say.id and say.error is None
    assert result.finish_reason == "tool_calls"
    assert [t["function"]["name"] for t in chat_requests(server)[0].body["tools"]] == [
        "say",
        "look",
    ]


def test_invalid_tool_arguments_set_the_error(server):
    server.enqueue({"fault": "invalid_args"})
    result = make_client(server).complete_sync(MESSAGES, [SAY])
    assert result.ok and result.attempts == 1
    [call] = result.tool_calls
    assert call.error and "not valid JSON" in call.error
    assert call.arguments == {} and call.raw_arguments.startswith("{")


def test_unknown_tool_is_passed_through(server):
    server.enqueue({"fault": "unknown_tool"})
    result = make_client(server).complete_sync(MESSAGES, [SAY])
    assert result.ok and result.tool_calls and result.tool_calls[0].name != "say"


def test_per_call_model_override(server):
    server.enqueue({"text": "a"}, {"text": "b"})
    client = make_client(server)
    assert client.complete_sync(MESSAGES, model="openai/npc-model").model == "openai/npc-model"
    assert client.complete_sync(MESSAGES).model == "openai/test-model"
    assert [r.body["model"] for r in chat_requests(server)] == ["npc-model", "test-model"]


def test_settings_are_read_at_call_time_and_env_wins(server, monkeypatch):
    monkeypatch.delenv("EVENNIA_AI_MODEL", raising=False)
    client = UnifiedLLMClient()
    with override_settings(
        EVENNIA_AI_MODEL="openai/settings-model",
        EVENNIA_AI_API_BASE=server.url,
        EVENNIA_AI_API_KEY="x",
        EVENNIA_AI_TIMEOUT=1,
    ):
        assert client.complete_sync(MESSAGES).model == "openai/settings-model"
        monkeypatch.setenv("EVENNIA_AI_MODEL", "openai/env-model")
        assert client.complete_sync(MESSAGES).model == "openai/env-model"
    assert [r.body["model"] for r in chat_requests(server)] == ["settings-model", "env-model"]
    assert chat_requests(server)[0].headers.get("Authorization") == "Bearer x"


def test_cost_is_none_for_unknown_models_and_known_otherwise(server):
    client = make_client(server)
    assert client.complete_sync(MESSAGES).cost is None
    import litellm

    with mock.patch.object(litellm, "cost_per_token") as asked:
        assert client.complete_sync(MESSAGES).cost is None  # not asked again: no price yet
        asked.assert_not_called()
    model = client.complete_sync(MESSAGES).model
    litellm.register_model(
        {model: {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6, "mode": "chat"}}
    )
    try:
        assert client.complete_sync(MESSAGES).cost > 0  # a price registered later is used
    finally:
        litellm.model_cost.pop(model, None)
    server.enqueue({"text": "hi", "usage": {"prompt_tokens": 1000, "completion_tokens": 1000}})
    cost = client.complete_sync(MESSAGES, model="openai/gpt-4o-mini").cost
    assert isinstance(cost, float) and cost > 0


def test_litellm_retries_are_off(server, monkeypatch):
    litellm = get_litellm()
    seen = []
    real = litellm.acompletion

    async def spy(**kwargs):
        seen.append(kwargs)
        return await real(**kwargs)

    monkeypatch.setattr(litellm, "acompletion", spy)
    make_client(server, timeout=0.7).complete_sync(MESSAGES, [SAY], temperature=0.2, max_tokens=50)
    assert seen[0]["num_retries"] == 0 and seen[0]["max_retries"] == 0
    assert seen[0]["timeout"] == 0.7
    body = chat_requests(server)[0].body
    assert body["temperature"] == 0.2 and body["max_tokens"] == 50


# -- native tools or the JSON protocol ---------------------------------------------------------
def test_unknown_openai_compatible_model_gets_native_tools(server):
    litellm = get_litellm()
    # litellm's own table says "no" for a model it does not know; we must not believe it.
    assert litellm.supports_function_calling("openai/whatever-local-model") is False
    assert uses_native_tools("openai/whatever-local-model")
    server.enqueue({"tool_calls": [{"name": "say", "arguments": {"message": "Hi"}}]})
    result = make_client(server, model="openai/whatever-local-model").complete_sync(MESSAGES, [SAY])
    assert result.native_tools and result.tool_calls[0].arguments == {"message": "Hi"}
    assert chat_requests(server)[0].body["tools"] == [SAY]


def test_model_settings_select_the_json_protocol(server):
    reply = 'Let me greet her.\n```json\n{"tool": "say", "arguments": {"message": "Welcome!"}}\n```'
    server.enqueue({"text": reply})
    with override_settings(
        EVENNIA_AI_MODEL_SETTINGS={"openai/test-model": {"native_tools": False}}
    ):
        result = make_client(server).complete_sync(MESSAGES, [SAY, LOOK], tick_rate=7)
    assert result.ok and not result.native_tools
    assert [(c.name, c.arguments) for c in result.tool_calls] == [("say", {"message": "Welcome!"})]
    assert result.text == "Let me greet her."
    body = chat_requests(server)[0].body
    assert "tools" not in body and "tool_choice" not in body
    system = body["messages"][0]["content"]
    assert system.startswith("You are Mara, the innkeeper.")
    assert "- say(message: string) - Say something aloud." in system
    assert "- look() - Look around." in system
    assert "every 7 seconds" in system and '{"tool": "say"' in system


def test_json_protocol_plain_text_reply(server):
    server.enqueue({"text": "Evening! What'll it be?"})
    with override_settings(
        EVENNIA_AI_MODEL_SETTINGS={"openai/test-model": {"native_tools": False}}
    ):
        result = make_client(server).complete_sync(MESSAGES, [SAY])
    assert result.ok and result.tool_calls == [] and result.text == "Evening! What'll it be?"


def test_known_model_without_function_calling_uses_the_json_protocol(server, monkeypatch):
    litellm = get_litellm()
    monkeypatch.setitem(
        litellm.model_cost,
        "openai/old-text-model",
        {
            "litellm_provider": "openai",
            "mode": "chat",
            "supports_function_calling": False,
            "input_cost_per_token": 0.0,
            "output_cost_per_token": 0.0,
        },
    )
    assert not uses_native_tools("openai/old-text-model")
    server.enqueue({"text": '{"tool_calls": [{"name": "look", "arguments": {}}]}'})
    result = make_client(server, model="openai/old-text-model").complete_sync(MESSAGES, [LOOK])
    assert [c.name for c in result.tool_calls] == ["look"] and not result.native_tools
    assert "tools" not in chat_requests(server)[0].body
    # the per-model setting still wins over litellm's table
    with override_settings(
        EVENNIA_AI_MODEL_SETTINGS={"openai/old-text-model": {"native_tools": True}}
    ):
        assert uses_native_tools("openai/old-text-model")


def test_bare_name_lookup_needs_the_same_provider(monkeypatch):
    litellm = get_litellm()
    monkeypatch.setitem(
        litellm.model_cost,
        "no-tools-x",
        {"litellm_provider": "openai", "supports_function_calling": False},
    )
    assert not uses_native_tools("openai/no-tools-x")
    assert uses_native_tools("ollama/no-tools-x")


def test_text_protocol_rewrites_history():
    from evennia_ai.prompt.templates import get_default_template, safe_render_template

    native = safe_render_template(get_default_template(), tick_rate=5)
    messages = [
        {"role": "system", "content": f"You are Mara.\n\n{native}\n\n## Persona\nKind."},
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "look", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "name": "look", "content": "A cosy inn."},
    ]
    out = to_text_protocol(messages, [LOOK], 5)
    assert [m["role"] for m in out] == ["system", "user", "assistant", "user"]
    system = out[0]["content"]
    assert native not in system and "cannot call tools natively" in system
    assert system.startswith("You are Mara.") and system.endswith("Kind.")
    assert json.loads(out[2]["content"]) == {"tool_calls": [{"tool": "look", "arguments": {}}]}
    assert out[3]["content"] == "[Tool result: look] A cosy inn."
    # no system message at all: one is added
    assert to_text_protocol([{"role": "user", "content": "hi"}], [LOOK], 5)[0]["role"] == "system"


# -- retries -----------------------------------------------------------------------------------
def test_retries_on_500_then_succeeds(server):
    server.enqueue({"fault": "500"}, {"fault": "500"}, {"text": "third time lucky"})
    client = make_client(server)
    result = client.complete_sync(MESSAGES)
    assert result.ok and result.text == "third time lucky"
    assert result.attempts == 3 and len(chat_requests(server)) == 3
    assert len(client.sleep) == 2 and all(0 < s <= 0.05 for s in client.sleep)


def test_retries_and_fallbacks_are_logged_with_the_npc_model_and_reason(server, caplog):
    server.enqueue({"fault": "500"}, {"fault": "500"}, {"text": "the backup answers"})
    client = make_client(server, max_retries=1, fallbacks=["openai/backup-model"])
    with caplog.at_level(logging.WARNING, logger="evennia_ai"):
        result = client.complete_sync(MESSAGES, caller="evennia_ai [Marta#12]")
    assert result.ok and result.fallback_used
    reason = "the provider failed (500): scripted server error"
    assert [r.getMessage() for r in caplog.records if r.name.startswith("evennia_ai")] == [
        f"evennia_ai [Marta#12]: model openai/test-model failed ({reason}); retry 1 of 1 in "
        f"{client.sleep[0]:.1f} s",
        f"evennia_ai [Marta#12]: model openai/test-model failed ({reason}); trying fallback "
        "openai/backup-model",
    ]
    assert all(r.levelno == logging.WARNING for r in caplog.records)


def test_gives_up_after_max_retries(server):
    server.enqueue(*[{"fault": "500"}] * 3)
    result = make_client(server, max_retries=2).complete_sync(MESSAGES)
    assert not result.ok and result.error_kind == "server" and result.attempts == 3
    assert result.error == "the provider failed (500): scripted server error"


def test_rate_limit_retry_after_is_honoured_and_capped(server):
    server.enqueue(
        {"fault": "429", "retry_after": 30}, {"fault": "429", "retry_after": 0.2}, {"text": "ok"}
    )
    client = make_client(server, base_delay=0.001, max_delay=0.5)
    result = client.complete_sync(MESSAGES)
    assert result.ok and result.attempts == 3
    assert client.sleep[0] == 0.5  # 30 s asked for, capped at the max delay
    assert 0.2 <= client.sleep[1] <= 0.5  # honoured although our own backoff was shorter


def test_retry_after_as_an_http_date_is_honoured(server):
    later = format_datetime(datetime.now(timezone.utc) + timedelta(seconds=5), usegmt=True)
    server.enqueue({"fault": "429", "retry_after": later}, {"text": "ok"})
    client = make_client(server, base_delay=0.001, max_delay=0.5)
    result = client.complete_sync(MESSAGES)
    assert result.ok and result.attempts == 2
    assert client.sleep[0] == 0.5  # about 4-5 s asked for by date, capped; our backoff was 1 ms


@pytest.mark.parametrize(
    "value, expected",
    [
        ("3", 3.0),
        ("0.25", 0.25),
        ("-4", 0.0),
        ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0),  # a date in the past: at once
        ("soon", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_retry_after(value, expected):
    assert parse_retry_after(value) == expected


def test_parse_retry_after_future_date():
    later = datetime.now(timezone.utc) + timedelta(seconds=120)
    seconds = parse_retry_after(format_datetime(later, usegmt=True))
    assert 118 <= seconds <= 120


def test_rate_limit_error_when_it_persists(server):
    server.enqueue({"fault": "429", "retry_after": 1})
    result = make_client(server, max_retries=0).complete_sync(MESSAGES)
    assert result.error_kind == "rate_limit" and "429" in result.error


def test_timeout_is_retried_then_reported(server):
    server.enqueue({"fault": "hang", "seconds": 3}, {"fault": "hang", "seconds": 3})
    client = make_client(server, timeout=0.3, max_retries=1)
    result = client.complete_sync(MESSAGES)
    assert not result.ok and result.error_kind == "timeout"
    assert result.attempts == 2 and len(chat_requests(server)) == 2
    assert result.latency < 2.5
    assert result.error == "timed out after 0.3 s"


def test_per_call_timeout(server):
    server.enqueue({"fault": "hang", "seconds": 3})
    result = make_client(server, timeout=10, max_retries=0).complete_sync(MESSAGES, timeout=0.3)
    assert result.error_kind == "timeout" and result.latency < 2


@pytest.mark.parametrize("fault, kind", [("malformed", "malformed"), ("empty_choices", "empty")])
def test_malformed_and_empty_answers_are_clean_errors_and_retried(server, fault, kind):
    server.enqueue({"fault": fault}, {"fault": fault})
    result = make_client(server, max_retries=1).complete_sync(MESSAGES)
    assert not result.ok and result.error_kind == kind and result.attempts == 2
    assert "Traceback" not in result.error and "\n" not in result.error and len(result.error) < 300
    server.enqueue({"fault": fault}, {"text": "recovered"})
    assert make_client(server, max_retries=1).complete_sync(MESSAGES).text == "recovered"


def test_backoff_grows_with_jitter_and_is_capped():
    client = UnifiedLLMClient(base_delay=0.1, max_delay=0.3)
    for attempt, full in ((1, 0.1), (2, 0.2), (3, 0.3), (6, 0.3)):
        delays = {client.backoff(attempt) for _ in range(30)}
        assert all(full / 2 <= d <= full for d in delays)
        assert len(delays) > 1  # jittered
    assert client.backoff(1, retry_after=0.25) == 0.25
    assert client.backoff(1, retry_after=9) == 0.3


class _StatusHandler(BaseHTTPRequestHandler):
    status = 401

    def do_POST(self):  # noqa: N802 - stdlib name
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.hits += 1
        body = json.dumps(
            {
                "error": {
                    "message": f"scripted {self.server.status}",
                    "type": "invalid_request_error",
                    "code": None,
                }
            }
        ).encode()
        self.send_response(self.server.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def status_server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _StatusHandler)
    httpd.hits = 0
    thread = threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


@pytest.mark.parametrize(
    "status, kind", [(401, "auth"), (400, "bad_request"), (404, "bad_request")]
)
def test_client_errors_are_not_retried(status_server, status, kind):
    status_server.status = status
    url = f"http://127.0.0.1:{status_server.server_address[1]}/v1"
    client = UnifiedLLMClient(
        model="openai/test-model",
        api_base=url,
        api_key="bad",
        timeout=1,
        max_retries=3,
        base_delay=0.01,
        max_delay=0.01,
    )
    result = client.complete_sync(MESSAGES)
    assert not result.ok and result.error_kind == kind
    assert result.attempts == 1 and status_server.hits == 1
    assert result.error.startswith(
        {
            401: "401 from the provider (the API key was refused): scripted 401",
            400: "the provider refused the request (400): scripted 400",
            404: "404 from the provider (no such model or address at " + url + "): scripted 404",
        }[status]
    ), result.error


def test_connection_refused_is_a_connection_error():
    with ModelServer() as srv:
        url = srv.url  # a port that was free a moment ago and is closed now
    client = UnifiedLLMClient(
        model="openai/test-model",
        api_base=url,
        api_key="x",
        timeout=1,
        max_retries=1,
        base_delay=0.01,
        max_delay=0.01,
    )
    client.sleep = Sleeps()
    result = client.complete_sync(MESSAGES)
    assert not result.ok and result.error_kind == "connection" and result.attempts == 2


@pytest.mark.parametrize("fault", ["malformed", "500", "refused"])
def test_errors_name_no_internal_route(server, fault):
    # openai/ models at an api_base go through litellm's hosted_vllm/ route: its exception
    # label and route name must not reach the operator
    if fault == "refused":
        with ModelServer() as srv:
            url = srv.url
        client = make_client(server, api_base=url, max_retries=0)
    else:
        server.enqueue({"fault": fault})
        client = make_client(server, max_retries=0)
    with override_settings(EVENNIA_AI_OPENAI_SDK_ROUTE=False):
        result = client.complete_sync(MESSAGES)
    assert not result.ok and result.model == "openai/test-model"
    assert "vllm" not in result.error.lower() and "Exception" not in result.error, result.error


def test_route_labels_are_stripped_from_provider_errors():
    class BadRequestError(Exception):
        status_code = 400

    err = BadRequestError(
        "litellm.BadRequestError: Hosted_vllmException - model hosted_vllm/x is not served"
    )
    assert str(client_module.classify_exception(err)) == (
        "the provider refused the request (400): model hosted_vllm/x is not served"
    )


# -- fallbacks ---------------------------------------------------------------------------------
def test_fallback_model_used_when_main_fails(server):
    server.enqueue({"fault": "500"}, {"fault": "500"}, {"text": "from the backup"})
    client = make_client(server, max_retries=1, fallbacks=["openai/backup-model"])
    result = client.complete_sync(MESSAGES)
    assert result.ok and result.text == "from the backup"
    assert result.fallback_used and result.model == "openai/backup-model"
    assert result.attempts == 3
    models = [r.body["model"] for r in chat_requests(server)]
    assert models == ["test-model", "test-model", "backup-model"]


def test_fallbacks_from_settings_and_per_call(server):
    server.enqueue(
        {"fault": "500"}, {"text": "settings fallback"}, {"fault": "500"}, {"text": "call fallback"}
    )
    client = make_client(server, max_retries=0, fallbacks=None)
    with override_settings(
        EVENNIA_AI_FALLBACK_MODELS=["openai/test-model", "openai/from-settings"]
    ):
        first = client.complete_sync(MESSAGES)
        second = client.complete_sync(MESSAGES, fallbacks=["openai/from-call"])
    assert first.model == "openai/from-settings" and second.model == "openai/from-call"
    assert [r.body["model"] for r in chat_requests(server)] == [
        "test-model",
        "from-settings",
        "test-model",
        "from-call",
    ]


def test_every_model_failing_names_them_all(server):
    server.enqueue({"fault": "500"}, {"fault": "429", "retry_after": 0})
    client = make_client(server, max_retries=0, fallbacks=["openai/backup-model"])
    result = client.complete_sync(MESSAGES)
    assert not result.ok and result.fallback_used and result.error_kind == "rate_limit"
    assert "openai/test-model: the provider failed (500)" in result.error
    assert "openai/backup-model: the provider is rate-limiting (429)" in result.error
    assert result.attempts == 2


def test_offline_model_as_the_last_fallback(server):
    server.enqueue({"fault": "500"})
    client = make_client(server, max_retries=0, fallbacks=["evennia_ai/offline"])
    result = client.complete_sync(MESSAGES, [SAY])
    assert result.ok and result.model == "evennia_ai/offline" and result.fallback_used
    assert result.tool_calls[0].name == "say"


# -- never raises ------------------------------------------------------------------------------
def test_unexpected_exceptions_become_results(server, monkeypatch):
    async def broken(**kwargs):
        raise RuntimeError("something odd\nwith a second line")

    monkeypatch.setattr(get_litellm(), "acompletion", broken)
    result = make_client(server).complete_sync(MESSAGES)
    assert result.error_kind == "unknown" and result.attempts == 1
    assert result.error == "the call failed: something odd"


def test_a_bug_in_the_client_is_reported_not_raised(server, monkeypatch):
    client = make_client(server)

    def boom(*args, **kwargs):
        raise RuntimeError("oops")

    monkeypatch.setattr(client, "fallback_models", boom)
    result = client.complete_sync(MESSAGES)
    assert result.error == (
        "the call failed: an internal error of the plugin (oops); the server log has the traceback"
    )
    assert result.error_kind == "unknown"
    assert client.in_flight == 0


def test_bad_requests_are_refused_before_the_network(server):
    client = make_client(server)
    for messages, tools in (
        ([], None),
        ("hello", None),
        ([{"content": "x"}], None),
        (MESSAGES, "say"),
    ):
        result = client.complete_sync(messages, tools)
        assert result.error_kind == "bad_request" and result.error.startswith(
            "the request is not valid:"
        )
    assert chat_requests(server) == []
    assert client.in_flight == 0


# -- Deferreds and the model-call loop ---------------------------------------------------------
def test_complete_starts_a_coroutine_on_the_loop(server, monkeypatch):
    calls = []

    def start(fn, *args, **kwargs):
        calls.append(fn)
        return aio.call_blocking(fn, *args, **kwargs)

    monkeypatch.setattr(client_module, "call_async", start)
    server.enqueue({"tool_calls": [{"name": "say", "arguments": {"message": "Hi"}}]})
    client = make_client(server)
    d = client.complete(MESSAGES, tools=[SAY], model="openai/npc-model")
    assert isinstance(d, defer.Deferred) and d.called
    result = d.result
    assert result.ok and result.model == "openai/npc-model" and result.tool_calls[0].name == "say"
    assert calls == [client.acomplete]
    assert client.in_flight == 0


def test_without_a_running_reactor_complete_has_fired():
    """Unit tests and scripts have no reactor to deliver the result: the call is waited for."""
    d = get_client().complete(MESSAGES, model="evennia_ai/offline")
    assert d.called and d.result.ok


def test_calls_wait_on_one_thread_not_a_thread_each(server):
    """Twenty calls at 0.3 s each, at most 4 in flight per endpoint: they overlap in groups of
    four on the loop's one thread, and no call ever sees a fifth in flight."""
    server.latency = 0.3
    for _ in range(20):
        server.enqueue({"text": "ok"})
    client = make_client(server)
    peak = []

    threads = set()

    async def many():
        async def one():
            result = await client.acomplete(MESSAGES)
            peak.append(max((v["in_flight"] for v in client.limits.snapshot().values()), default=0))
            threads.add(threading.current_thread().name)
            return result

        return await asyncio.gather(*(one() for _ in range(20)))

    started = time.monotonic()
    with override_settings(EVENNIA_AI_MAX_CONCURRENT_CALLS=4):
        results = aio.run_sync(many)
    elapsed = time.monotonic() - started
    assert all(r.ok for r in results)
    assert max(peak) <= 4
    assert 1.2 <= elapsed < 3.0  # 5 rounds of 0.3 s, not 20 x 0.3 s and not all at once
    assert threads == {"evennia_ai-llm"}  # every call waited on the loop's one thread
    assert client.in_flight == 0


def test_a_model_can_have_its_own_limit(server):
    server.latency = 0.2
    for _ in range(6):
        server.enqueue({"text": "ok"})
    client = make_client(server)

    async def many():
        return await asyncio.gather(*(client.acomplete(MESSAGES) for _ in range(6)))

    settings = {"openai/test-model": {"max_concurrent": 1}}
    started = time.monotonic()
    with override_settings(EVENNIA_AI_MODEL_SETTINGS=settings, EVENNIA_AI_MAX_CONCURRENT_CALLS=50):
        results = aio.run_sync(many)
    assert all(r.ok for r in results)
    assert time.monotonic() - started >= 6 * 0.2 * 0.9  # one at a time
    assert list(client.limits.snapshot().values())[0]["limit"] == 1


def test_run_sync_refuses_the_loops_own_thread():
    async def inner():
        try:
            aio.run_sync(asyncio.sleep, 0)
        except RuntimeError as err:
            return str(err)
        return "no error"

    assert "own thread" in aio.run_sync(inner)


def test_get_client_is_a_singleton():
    assert get_client() is get_client()


# -- litellm callbacks -------------------------------------------------------------------------
@pytest.fixture
def clean_callbacks(monkeypatch):
    litellm = get_litellm()
    # litellm copies callbacks into several private lists on each call: restore them all
    for name in dir(litellm):
        if "callback" in name.lower() and isinstance(getattr(litellm, name, None), list):
            monkeypatch.setattr(litellm, name, [])
    monkeypatch.setattr(client_module, "_INSTALLED_CALLBACKS", {})
    return litellm


def test_configure_callbacks_is_idempotent(clean_callbacks):
    from litellm.integrations.custom_logger import CustomLogger

    litellm = clean_callbacks
    entries = [
        "langfuse",
        "litellm.integrations.custom_logger.CustomLogger",
        "no.such.module.Logger",
    ]
    with override_settings(EVENNIA_AI_LITELLM_CALLBACKS=entries):
        added = configure_litellm_callbacks()
        assert configure_litellm_callbacks() == []
    assert added[0] == "langfuse" and isinstance(added[1], CustomLogger) and len(added) == 2
    assert litellm.success_callback == ["langfuse"] and litellm.failure_callback == ["langfuse"]
    assert len(litellm.callbacks) == 1 and isinstance(litellm.callbacks[0], CustomLogger)


def test_configured_callback_sees_calls(server, clean_callbacks):
    from litellm.integrations.custom_logger import CustomLogger

    class Recorder(CustomLogger):
        def __init__(self):
            super().__init__()
            self.events = threading.Event()

        async def async_log_success_event(self, kwargs, response_obj, start_time, end_time):
            self.events.set()  # model calls are asynchronous: litellm calls the async hook

    recorder = Recorder()
    with override_settings(EVENNIA_AI_LITELLM_CALLBACKS=[recorder]):
        assert configure_litellm_callbacks() == [recorder]
    assert make_client(server).complete_sync(MESSAGES).ok
    assert recorder.events.wait(5)


@pytest.mark.parametrize("sdk_route", [False, True])
def test_openai_compatible_servers_answer_on_either_route(server, sdk_route):
    from evennia_ai.llm.client import _compatible_route

    with override_settings(EVENNIA_AI_OPENAI_SDK_ROUTE=sdk_route):
        assert _compatible_route("openai/x") == ("openai/x" if sdk_route else "hosted_vllm/x")
        assert _compatible_route("anthropic/claude") == "anthropic/claude"
        server.enqueue(
            {
                "tool_calls": [{"name": "say", "arguments": {"message": "hi"}}],
                "usage": {"prompt_tokens": 1000, "completion_tokens": 1000},
            }
        )
        tools = [
            {
                "type": "function",
                "function": {
                    "name": "say",
                    "description": "Say something.",
                    "parameters": {"type": "object", "properties": {"message": {"type": "string"}}},
                },
            }
        ]
        result = make_client(server).complete_sync(
            MESSAGES, tools=tools, model="openai/gpt-4o-mini"
        )
    assert result.ok and result.model == "openai/gpt-4o-mini"
    assert [(c.name, c.arguments) for c in result.tool_calls] == [("say", {"message": "hi"})]
    assert result.cost == pytest.approx(0.00075)  # priced by the name given, whatever the route
    assert chat_requests(server)[-1].body["model"] == "gpt-4o-mini"


def test_tool_schemas_given_to_litellm_are_not_changed(server):
    schema = {
        "type": "object",
        "properties": {"message": {"type": "string"}},
        "required": ["message"],
        "additionalProperties": False,
    }
    tools = [
        {
            "type": "function",
            "function": {"name": "say", "description": "Say.", "parameters": schema},
        }
    ]
    server.enqueue({"text": "hi"})
    assert make_client(server).complete_sync(MESSAGES, tools=tools, model="openai/test-model").ok
    assert schema["additionalProperties"] is False  # the tool registry's own dict is intact

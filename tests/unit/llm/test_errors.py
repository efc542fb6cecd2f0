"""Why a model call failed, in words, on both routes (issue 35, "Messages for people").

The issue saw ``could not connect: Cannot connect to host 127.0.0.1:5100 ssl:<ssl.SSLContext
object at 0x7f60dda1d0a0> [Connect call failed...]`` for a plain-http endpoint, in the log, in
``aistatus`` and on the dashboard. Each failure here is made for real against the loopback
model server (or a closed port, or a tiny server answering one HTTP status), on the lean
OpenAI-wire route and on litellm's, streamed and not, and the exact words are checked, with no
Python repr, socket repr or exception class name in them.
"""

from __future__ import annotations

import asyncio
import errno
import json
import logging
import re
import threading
import urllib.error
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from unittest import mock

import aiohttp
import pytest
from django.test import override_settings
from support.commands import words
from unit.engine.test_cost_and_pace import PlayerBase

from evennia_ai.commands.npcs import CmdAIStatus
from evennia_ai.llm import errors, tokens
from evennia_ai.llm.client import UnifiedLLMClient, get_litellm
from evennia_ai.llm.errors import ModelError, describe, http_error, kind_of, model_error
from evennia_ai.llm.types import ERROR_KINDS
from evennia_ai.testing.model_server import ModelServer

pytestmark = pytest.mark.timeout(60)

MESSAGES = [{"role": "user", "content": "Is the kitchen still open?"}]
ROUTES = ["lean", "litellm"]
#: Python and socket reprs, exception class names, tracebacks: never in a text for people.
LEAKS = re.compile(
    r"<|object at 0x|ssl:|\b[A-Z]\w*(?:Error|Exception)\b|Traceback|Hosted_vllm|litellm\."
)
CONTEXT_BODY = {
    "error": {
        "message": "This model's maximum context length is 8192 tokens. However, your messages "
        "resulted in 9001 tokens. Please reduce the length of the messages.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
}
AUTH_BODY = {
    "error": {
        "message": "Incorrect API key provided.",
        "type": "invalid_request_error",
        "code": "invalid_api_key",
    }
}


@pytest.fixture(scope="module", autouse=True)
def warm():
    get_litellm()


@pytest.fixture
def server():
    with ModelServer() as srv:
        yield srv


class _Status(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 - stdlib name
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = self.server.body
        self.send_response(self.server.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def status_server():
    """Answers every POST with ``.status`` and ``.body`` (set them in the test)."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Status)
    httpd.status, httpd.body = 500, b"{}"
    thread = threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    httpd.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def call(url: str, route: str, stream: bool, timeout: float = 5):
    """One call with no retries or fallbacks; the LLMResult."""
    client = UnifiedLLMClient(
        model="openai/test-model",
        api_base=url,
        api_key="x",
        timeout=timeout,
        max_retries=0,
        fallbacks=[],
    )
    with override_settings(EVENNIA_AI_LITELLM_MODELS=["*"] if route == "litellm" else []):
        return client.complete_sync(MESSAGES, on_delta=(lambda piece: None) if stream else None)


def in_words(result, kind: str, text: str) -> None:
    """The failed call's kind and exact words, and nothing a programmer would read."""
    assert not result.ok
    assert (result.error_kind, result.error) == (kind, text)
    assert not LEAKS.search(result.error), result.error
    assert kind_of(result.error) == kind


# -- real failures on both routes ----------------------------------------------------------------
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("route", ROUTES)
def test_a_refused_connection_names_the_endpoint(route, stream):
    with ModelServer() as gone:
        url = gone.url  # a port that was open a moment ago and is closed now
    in_words(call(url, route, stream), "connection", f"connection refused to {url}")


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("route", ROUTES)
def test_a_timeout_names_the_limit(server, route, stream):
    server.enqueue({"fault": "hang", "seconds": 3})
    in_words(call(server.url, route, stream, timeout=0.3), "timeout", "timed out after 0.3 s")


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("route", ROUTES)
def test_a_refused_key_is_a_401_from_the_provider(status_server, route, stream):
    status_server.status, status_server.body = 401, json.dumps(AUTH_BODY).encode()
    in_words(
        call(status_server.url, route, stream),
        "auth",
        "401 from the provider (the API key was refused): Incorrect API key provided.",
    )


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("route", ROUTES)
def test_a_rate_limit_says_how_long_to_wait(server, route, stream):
    server.enqueue({"fault": "429", "retry_after": 3, "message": "slow down"})
    in_words(
        call(server.url, route, stream),
        "rate_limit",
        "the provider is rate-limiting (429); it asks to wait 3 s",
    )


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("route", ROUTES)
def test_a_server_error_is_the_provider_failing(server, route, stream):
    server.enqueue({"fault": "500", "message": "the GPU caught fire"})
    in_words(
        call(server.url, route, stream),
        "server",
        "the provider failed (500): the GPU caught fire",
    )


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("route", ROUTES)
def test_a_request_over_the_window_names_the_window(status_server, route, stream):
    status_server.status, status_server.body = 400, json.dumps(CONTEXT_BODY).encode()
    in_words(
        call(status_server.url, route, stream),
        "context_overflow",
        "the request is longer than the model's context window (8192 tokens)",
    )


@pytest.mark.parametrize("route", ROUTES)
def test_an_html_error_page_is_not_quoted(status_server, route):
    status_server.status, status_server.body = 502, b"<html><body><h1>502</h1></body></html>"
    result = call(status_server.url, route, False)
    assert result.error_kind == "server" and result.error.startswith("the provider failed (502)")
    assert not LEAKS.search(result.error), result.error


@pytest.mark.parametrize("route", ROUTES)
def test_a_body_that_is_not_json_is_named(server, route):
    server.enqueue({"fault": "malformed"})
    in_words(call(server.url, route, False), "malformed", "the reply was not valid JSON")


def test_a_streamed_body_that_is_not_json_is_named(server):
    server.enqueue({"fault": "malformed"})
    in_words(call(server.url, "lean", True), "malformed", "the streamed reply was not valid JSON")


@pytest.mark.parametrize("route", ROUTES)
def test_a_dropped_connection_names_the_server(server, route):
    server.enqueue({"fault": "disconnect"})
    in_words(
        call(server.url, route, False),
        "connection",
        f"the server at {server.url} closed the connection without answering",
    )


@pytest.mark.parametrize("route", ROUTES)
def test_the_full_exception_is_logged_at_debug_level_only(route, caplog):
    with ModelServer() as gone:
        url = gone.url
    with caplog.at_level(logging.INFO, logger="evennia_ai"):
        call(url, route, False)
    assert not [r for r in caplog.records if r.name == "evennia_ai.llm.errors"]
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="evennia_ai.llm.errors"):
        call(url, route, False)
    logged = [r for r in caplog.records if r.name == "evennia_ai.llm.errors"]
    assert len(logged) == 1 and logged[0].levelno == logging.DEBUG
    assert f"connection refused to {url}" in logged[0].getMessage()
    assert logged[0].exc_info and logged[0].exc_info[1] is not None  # the exception itself


# -- the exceptions of each transport ----------------------------------------------------------
def _litellm_errors():
    litellm = get_litellm()
    args = {"llm_provider": "hosted_vllm", "model": "hosted_vllm/test-model"}
    return [
        (
            litellm.APIConnectionError(
                message="litellm.APIConnectionError: Hosted_vllmException - Cannot connect to "
                "host 127.0.0.1:5100 ssl:<ssl.SSLContext object at 0x7f60dda1d0a0> "
                "[Connect call failed ('127.0.0.1', 5100)]",
                **args,
            ),
            "connection",
            "connection refused to http://127.0.0.1:5100/v1",
        ),
        (
            litellm.Timeout(message="litellm.Timeout: Connection timed out after 30.0s", **args),
            "timeout",
            "timed out after 30 s",
        ),
        (
            litellm.AuthenticationError(
                message="litellm.AuthenticationError: AuthenticationError: Hosted_vllmException "
                "- Incorrect API key provided: sk-proj-abcdefghijklmnopqrstuvwxyz",
                **args,
            ),
            "auth",
            "401 from the provider (the API key was refused): Incorrect API key provided: sk-...",
        ),
        (
            litellm.RateLimitError(
                message="litellm.RateLimitError: Hosted_vllmException - slow down", **args
            ),
            "rate_limit",
            "the provider is rate-limiting (429)",
        ),
        (
            litellm.ContextWindowExceededError(
                message="litellm.ContextWindowExceededError: This model's maximum context length "
                "is 4096 tokens. However, you requested 5000 tokens",
                **args,
            ),
            "context_overflow",
            "the request is longer than the model's context window (4096 tokens)",
        ),
        (
            litellm.BadRequestError(
                message="litellm.BadRequestError: Hosted_vllmException - tools are not supported",
                **args,
            ),
            "bad_request",
            "the provider refused the request (400): tools are not supported",
        ),
        (
            litellm.NotFoundError(
                message="litellm.NotFoundError: Hosted_vllmException - The model does not exist",
                **args,
            ),
            "bad_request",
            "404 from the provider (no such model or address at http://127.0.0.1:5100/v1): "
            "The model does not exist",
        ),
        (
            litellm.ServiceUnavailableError(
                message="litellm.ServiceUnavailableError: Hosted_vllmException - overloaded",
                **args,
            ),
            "server",
            "the provider is unavailable (503): overloaded",
        ),
        (
            litellm.InternalServerError(
                message="litellm.InternalServerError: Hosted_vllmException - boom", **args
            ),
            "server",
            "the provider failed (500): boom",
        ),
    ]


def test_litellm_exceptions_in_words():
    for err, kind, text in _litellm_errors():
        error = model_error(err, url="http://127.0.0.1:5100/v1/chat/completions", timeout=30)
        assert (error.kind, error.text) == (kind, text), type(err).__name__
        assert not LEAKS.search(error.text) and kind_of(error.text) == kind


def test_aiohttp_and_asyncio_exceptions_in_words():
    url = "http://127.0.0.1:5100/v1"
    refused = aiohttp.ClientConnectorError(
        aiohttp.client_reqrep.ConnectionKey("127.0.0.1", 5100, False, True, None, None, None),
        ConnectionRefusedError(errno.ECONNREFUSED, "Connect call failed ('127.0.0.1', 5100)"),
    )
    unreachable = aiohttp.ClientConnectorError(
        aiohttp.client_reqrep.ConnectionKey("10.0.0.9", 80, False, True, None, None, None),
        OSError(errno.EHOSTUNREACH, "No route to host"),
    )
    cases = [
        (refused, None, "connection refused to 127.0.0.1:5100"),
        (refused, url, f"connection refused to {url}"),
        (unreachable, None, "could not connect to 10.0.0.9:80 (no route to host)"),
        (
            aiohttp.ServerDisconnectedError(),
            url,
            f"the server at {url} closed the connection without answering",
        ),
        (asyncio.TimeoutError(), url, "timed out after 12.5 s"),
        (
            urllib.error.URLError(ConnectionRefusedError(errno.ECONNREFUSED, "refused")),
            url,
            f"connection refused to {url}",
        ),
        (RuntimeError("something odd\nsecond line"), url, "the call failed: something odd"),
        (RuntimeError(), url, "the call failed"),
    ]
    for err, where, text in cases:
        assert describe(err, url=where, timeout=12.5) == text
        assert not LEAKS.search(text)


@pytest.mark.parametrize(
    "status, body, kind, text",
    [
        (401, AUTH_BODY, "auth", "401 from the provider (the API key was refused)"),
        (403, {}, "auth", "403 from the provider (the API key may not use this model)"),
        (404, {}, "bad_request", "404 from the provider (no such model or address at http://h/v1)"),
        (413, {}, "bad_request", "the request is too large for the provider (413)"),
        (422, {"detail": "bad field"}, "bad_request", "the provider refused the request (422)"),
        (429, {}, "rate_limit", "the provider is rate-limiting (429)"),
        (500, {}, "server", "the provider failed (500)"),
        (503, {}, "server", "the provider is unavailable (503)"),
        (400, CONTEXT_BODY, "context_overflow", "the request is longer than the model's"),
    ],
)
def test_http_statuses_in_words(status, body, kind, text):
    error = http_error(status, json.dumps(body).encode(), url="http://h/v1/chat/completions")
    assert error.kind == kind and error.text.startswith(text) and error.status == status
    assert kind_of(f"model call failed: openai/x: {error.text}") == kind


def test_urls_are_shown_without_credentials_or_the_request_path():
    assert (
        errors.shown_url("https://user:sk-secret@example.org:8443/v1/chat/completions?x=1")
        == "https://example.org:8443/v1"
    )
    assert errors.shown_url("http://127.0.0.1:5100/v1/") == "http://127.0.0.1:5100/v1"
    assert errors.shown_url(None) == ""


def test_kind_of_reads_wrapped_texts_and_every_kind_has_words():
    assert kind_of("every model failed - a: timed out after 3 s; b: the provider failed (500)") == (
        "timeout"
    )
    assert kind_of("") is None and kind_of("something else entirely") is None
    assert kind_of(tokens.overflow_message(5000, 3072, "m/small")) == "context_overflow"
    bad = UnifiedLLMClient(model="openai/m", api_base="http://127.0.0.1:9/v1").complete_sync([])
    assert bad.error_kind == "bad_request" and kind_of(bad.error) == "bad_request", bad.error
    kinds = {kind for _, kind in errors._OPENINGS}
    assert kinds == set(ERROR_KINDS)
    with pytest.raises(ValueError):
        ModelError("no-such-kind", "x")


def test_clean_words_drops_reprs_prefixes_and_keys():
    assert errors.clean_words("<html><body>Bad gateway</body></html>") == ""
    assert errors.clean_words("litellm.BadRequestError: OpenAIException - no tools") == "no tools"
    assert (
        errors.clean_words("Cannot connect to host h:1 ssl:<ssl.SSLContext object at 0x7f6> [x]")
        == "Cannot connect to host h:1 [x]"
    )
    assert errors.clean_words("key sk-abcdefghijklmnopqrstu refused") == "key sk-... refused"


# -- what people see: the log, aistatus and the NPC's status after a real tick ----------------
class TestARefusedEndpointSeenByStaff(PlayerBase):
    """The issue's scene: the model server is stopped, a player speaks, staff look."""

    def test_the_log_and_aistatus_name_the_refused_endpoint(self):
        url = self.server.url
        self.server.stop()  # nothing listens there any more
        self.speak("Marta, is the kitchen still open?")
        with mock.patch("evennia_ai.engine.bookkeeping.logger.log_err") as log_err:
            trace = self.tick()
        reason = f"model call failed: openai/test-model: connection refused to {url}"
        assert trace.error == reason and kind_of(trace.error) == "connection"
        logged = " ".join(str(c.args[0]) for c in log_err.call_args_list)
        assert logged.endswith(
            f"got no answer from model openai/test-model: model call failed: connection refused "
            f"to {url}"
        ), logged
        assert self.npc.ai.status()["last_error"] == reason
        status = words(self.call(CmdAIStatus(), "Innkeeper", caller=self.char1))
        assert reason in status, status
        for text in (logged, status):
            assert "ssl:" not in text and "object at 0x" not in text and "Error" not in text


# -- failures that are not model calls (memory stores, files, game hooks) ----------------------
@pytest.mark.parametrize(
    "make, expected",
    [
        (
            lambda: open("/nonexistent-dir/prompt.txt"),
            "no such file or directory: /nonexistent-dir/prompt.txt",
        ),
        (lambda: b"\xff".decode(), "it is not UTF-8 text"),
        (lambda: (_ for _ in ()).throw(RuntimeError("no qdrant")), "no qdrant"),
        (lambda: {}["speech"], errors.UNEXPECTED),
        (lambda: None.text, errors.UNEXPECTED),  # type: ignore[attr-defined]
        (lambda: (_ for _ in ()).throw(RuntimeError()), errors.UNEXPECTED),
        (
            lambda: (_ for _ in ()).throw(ConnectionRefusedError(errno.ECONNREFUSED, "refused")),
            "connection refused to the model's endpoint",
        ),
        (lambda: (_ for _ in ()).throw(asyncio.TimeoutError()), "timed out"),
        (
            lambda: (_ for _ in ()).throw(ValueError("ValueError: bad <Thing object at 0x7f00>")),
            "bad",
        ),
    ],
)
def test_a_failure_that_is_not_a_model_call_reads_as_its_cause(make, expected):
    with pytest.raises(BaseException) as caught:
        make()
    text = errors.reason(caught.value)
    assert text == expected
    assert "Error" not in text and "0x" not in text and "<" not in text

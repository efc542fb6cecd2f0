"""A loopback model server for tests and benchmarks: real HTTP on 127.0.0.1, scripted replies.

It speaks the OpenAI chat-completions protocol (JSON and SSE streaming) well enough for
litellm's ``openai/<name>`` provider, so tests exercise the real client path: HTTP, retries,
timeouts, response parsing. It also speaks the older text-generation-webui protocol
(``POST /api/v1/generate``) that Evennia's own ``evennia.contrib.rpg.llm`` uses, so both can be
benchmarked against the same scripted replies.

Replies come, in order of preference, from the queue (:meth:`ModelServer.enqueue`), from
:attr:`ModelServer.responder`, or from :attr:`ModelServer.default_reply`. A reply spec is a dict::

    {"text": "Hello there"}
    {"tool_calls": [{"name": "say", "arguments": {"message": "Hi"}}]}
    {"text": "thinking", "tool_calls": [...], "usage": {"prompt_tokens": 9}}
    {"fault": "500"}                       # HTTP 500 with an OpenAI-style error body
    {"fault": "429", "retry_after": 1}     # HTTP 429 with a Retry-After header
    {"fault": "hang", "seconds": 5}        # answer only after `seconds` (past a client timeout)
    {"fault": "malformed"}                 # 200 whose body is not valid JSON
    {"fault": "invalid_args"}              # a tool call whose arguments string is not JSON
    {"fault": "unknown_tool"}              # a tool call naming a tool that was not offered
    {"fault": "empty_choices"}             # 200 with "choices": []
    {"fault": "truncated"}                 # 200 whose body stops short; connection closed
                                           # (streamed: after the first pieces of the answer)
    {"fault": "disconnect"}                # connection closed without any answer

A request with ``"stream": true`` is answered as OpenAI ``chat.completion.chunk`` server-sent
events: one chunk per word-sized token of the text (a JSON-protocol answer is text too: its JSON
streams the same way), native tool calls as ``tool_calls`` deltas whose arguments are split
across chunks, then a chunk with the finish reason, a usage chunk when the request asked for it
(``stream_options.include_usage``) and ``data: [DONE]``. ``token_rate`` paces the pieces (tokens
per second, as a model generating at that speed; None sends them as fast as possible).

Every answered request is counted by kind (:meth:`ModelServer.counts`: "ok" or the fault), so a
soak run can check that each fault kind really happened.

Every chat request is also **validated** as a strict provider would (:func:`request_problems`):
its messages in a valid order (each tool result answers a tool call of the assistant message
before it, every tool call is answered before the conversation goes on) and its prompt within
the model's window (``window_of(model)``, by default :data:`ModelServer.default_window_of`,
which the test suite points at the project's own window settings). A request that fails is
answered ``400`` like a provider's refusal and recorded in :attr:`ModelServer.violations` and
the module's :data:`VIOLATIONS`, which the test suite checks after every test.

Example:
    with ModelServer() as server:
        server.enqueue({"text": "Hello there"})
        litellm.completion(model="openai/test-model", api_base=server.url, api_key="x",
                           messages=[{"role": "user", "content": "hi"}])
        assert server.last_request().body["messages"][0]["content"] == "hi"

Run it by hand with ``python -m evennia_ai.testing.model_server --port 8011`` (see
:func:`main`). Standard library only; it never binds anything but 127.0.0.1.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import re
import signal
import socket
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterable, Iterator

logger = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"
FAULT_KINDS = (
    "500",
    "429",
    "hang",
    "malformed",
    "invalid_args",
    "unknown_tool",
    "empty_choices",
    "truncated",
    "disconnect",
)
CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")
MODELS_PATHS = ("/v1/models", "/models")
GENERATE_PATH = "/api/v1/generate"
SPEC_KEYS = frozenset(
    {"text", "tool_calls", "fault", "retry_after", "seconds", "usage", "finish_reason", "message"}
)
# Client disconnects are normal here (a client gives up on a hanging reply); never log them.
_DISCONNECTS = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, socket.timeout)

Responder = Callable[[dict], "dict | ReplySpec | None"]
VALID_ROLES = ("system", "developer", "user", "assistant", "tool")
VIOLATIONS: list[str] = []  # every server's rejected requests (the test suite checks it)
_VIOLATIONS_LOCK = threading.Lock()


def request_problems(body: dict, window: int | None) -> list[str]:
    """Why a provider would refuse this chat request (empty when it is valid).

    Args:
        body: The request's JSON body.
        window: The model's context window in tokens, or None not to check the size (the size
            is estimated at four characters a token, messages and tool schemas together).
    """
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return ["'messages' must be a non-empty list"]
    problems: list[str] = []
    open_calls: set | None = None
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in VALID_ROLES:
            problems.append(f"message {index} has no valid role")
            continue
        role = message["role"]
        if role == "tool":
            call_id = message.get("tool_call_id")
            if open_calls is None or call_id not in open_calls:
                problems.append(f"message {index} is a tool result that answers no open tool call")
            else:
                open_calls.discard(call_id)
            continue
        if open_calls:
            problems.append(f"message {index}: tool calls {sorted(open_calls)} were never answered")
        open_calls = None
        if role == "assistant" and message.get("tool_calls"):
            open_calls = {c.get("id") for c in message["tool_calls"] if isinstance(c, dict)}
    if open_calls:
        problems.append(f"the request ends with unanswered tool calls {sorted(open_calls)}")
    if window:
        used = (_prompt_chars(body) + len(json.dumps(body.get("tools") or []))) // 4
        if used > window:
            problems.append(
                f"about {used} prompt tokens, over the {window}-token window of "
                f"{body.get('model')!r}"
            )
    return problems


def take_violations() -> list[str]:
    """The rejected requests of every server since the last call (and forget them)."""
    with _VIOLATIONS_LOCK:
        taken = list(VIOLATIONS)
        VIOLATIONS.clear()
        return taken


# -- reply specs -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolCallSpec:
    """One scripted tool call.

    Attributes:
        name: Tool (function) name.
        arguments: A dict (sent JSON-encoded) or a raw string (sent as is, valid JSON or not).
        id: Tool-call id; empty means the server numbers it (``call_<n>``).
    """

    name: str
    arguments: dict | str = field(default_factory=dict)
    id: str = ""


@dataclass(frozen=True)
class ReplySpec:
    """One scripted answer, validated. Build it from a dict with :meth:`from_dict`.

    Attributes:
        text: Assistant text, or None for no content.
        tool_calls: Tool calls to return.
        fault: One of :data:`FAULT_KINDS`, or None for a normal reply.
        retry_after: The Retry-After header of a "429" fault: seconds, or a text sent as it is
            (an HTTP date such as ``Wed, 21 Oct 2026 07:28:00 GMT``).
        seconds: How long a "hang" fault waits; None means the server's ``hang_seconds``.
        usage: Token counts overriding the server's estimate (prompt_tokens, completion_tokens).
        finish_reason: Overrides the finish reason ("tool_calls" or "stop" by default).
        message: Error message of a "500" or "429" fault.
    """

    text: str | None = None
    tool_calls: tuple[ToolCallSpec, ...] = ()
    fault: str | None = None
    retry_after: float | str = 1
    seconds: float | None = None
    usage: dict = field(default_factory=dict)
    finish_reason: str | None = None
    message: str = ""

    @classmethod
    def from_dict(cls, spec: "dict | str | ReplySpec") -> "ReplySpec":
        """Validate a reply spec given as a dict (or a bare string, meaning ``{"text": s}``).

        Raises:
            ValueError: naming what is wrong, so a typo in a test script fails at once.
        """
        if isinstance(spec, ReplySpec):
            return spec
        if isinstance(spec, str):
            return cls(text=spec)
        if not isinstance(spec, dict):
            raise ValueError(f"a reply spec must be a dict or a string, not {type(spec).__name__}")
        unknown = set(spec) - SPEC_KEYS
        if unknown:
            raise ValueError(
                f"unknown reply spec key(s) {sorted(unknown)}; allowed: {sorted(SPEC_KEYS)}"
            )
        fault = spec.get("fault")
        if fault is not None:
            fault = str(fault)
            if fault not in FAULT_KINDS:
                raise ValueError(f"unknown fault {fault!r}; expected one of {list(FAULT_KINDS)}")
        text = spec.get("text")
        if text is not None and not isinstance(text, str):
            raise ValueError("reply spec 'text' must be a string")
        raw_calls = spec.get("tool_calls") or []
        if not isinstance(raw_calls, list):
            raise ValueError("reply spec 'tool_calls' must be a list")
        calls = []
        for raw in raw_calls:
            if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
                raise ValueError(f"each tool call needs a string 'name': {raw!r}")
            arguments = raw.get("arguments", {})
            if not isinstance(arguments, (dict, str)):
                raise ValueError(f"tool call arguments must be a dict or a string: {raw!r}")
            calls.append(ToolCallSpec(raw["name"], arguments, str(raw.get("id") or "")))
        usage = spec.get("usage") or {}
        if not isinstance(usage, dict) or not all(isinstance(v, int) for v in usage.values()):
            raise ValueError("reply spec 'usage' must be a dict of integer token counts")
        finish_reason = spec.get("finish_reason")
        if finish_reason is not None and not isinstance(finish_reason, str):
            raise ValueError("reply spec 'finish_reason' must be a string")
        seconds = spec.get("seconds")
        retry_after = spec.get("retry_after", 1)
        try:
            if not isinstance(retry_after, str):
                retry_after = float(retry_after)
            seconds = None if seconds is None else float(seconds)
        except (TypeError, ValueError):
            raise ValueError(
                "'retry_after' must be a number or a text, 'seconds' a number"
            ) from None
        return cls(
            text=text,
            tool_calls=tuple(calls),
            fault=fault,
            retry_after=retry_after,
            seconds=seconds,
            usage=dict(usage),
            finish_reason=finish_reason,
            message=str(spec.get("message") or ""),
        )


# -- the request record ----------------------------------------------------------------------


class _Headers(dict):
    """Request headers with case-insensitive lookup (keys are stored lower-case)."""

    def __init__(self, items: Iterable[tuple[str, str]] = ()):
        super().__init__((k.lower(), v) for k, v in items)

    def __getitem__(self, key: str) -> str:
        return super().__getitem__(key.lower())

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and super().__contains__(key.lower())

    def get(self, key: str, default: Any = None) -> Any:
        return super().get(key.lower(), default)


@dataclass
class RecordedRequest:
    """One request the server received, recorded on arrival (before any latency or hang).

    Attributes:
        path: Request path without the query string, e.g. "/v1/chat/completions".
        headers: Request headers; lookup is case-insensitive.
        body: The parsed JSON body, or None when it was empty or not JSON.
        received_at: ``time.monotonic()`` when the request arrived.
        method: HTTP method.
        reply: The reply spec that answered it (None for GETs, 404s and rejected bodies).
    """

    path: str
    headers: dict
    body: Any
    received_at: float
    method: str = "POST"
    reply: ReplySpec | None = None


# -- the server ------------------------------------------------------------------------------


class ModelServer:
    """A scripted OpenAI-compatible (and text-generation-webui) model server on 127.0.0.1.

    The socket is bound in the constructor (so :attr:`port` and :attr:`url` are known at once);
    :meth:`start` (or ``with``) serves it from a daemon thread, :meth:`stop` ends it promptly,
    even while a "hang" reply or a latency wait is in progress.

    Args:
        host: Must be "127.0.0.1" (or "localhost"); anything else is refused.
        port: TCP port; 0 picks a free one.
        latency: Seconds added before every answer.
        fault_rate: Probability (0..1) that a request is answered with a random fault instead.
        seed: Seed of the random fault generator, for reproducible soak runs.
        hang_seconds: How long a "hang" fault waits when its spec gives no ``seconds``.
        default_reply: Spec used when the queue is empty and no responder answers.
        responder: Called with the request's JSON body when the queue is empty; returns a
            reply spec, or None to fall back to ``default_reply``. It runs on the request's
            thread, possibly several at once.
        models: Model ids listed by ``GET /v1/models``.
        window_of: ``model -> window in tokens or None``; None uses
            :attr:`default_window_of` (None there too: sizes are not checked).
        token_rate: Tokens per second of a streamed answer (each piece waits ``1/token_rate``
            seconds before it is sent, ``latency`` coming first); None streams at once.

    Attributes:
        violations: Why each rejected request was rejected.
        default_window_of: The class-wide ``window_of`` (the test suite sets it).

    Raises:
        ValueError: for a non-loopback host or a bad default reply.
    """

    def __init__(
        self,
        host: str = LOOPBACK,
        port: int = 0,
        *,
        latency: float = 0.0,
        fault_rate: float = 0.0,
        seed: int | None = None,
        hang_seconds: float = 5.0,
        default_reply: dict | str | ReplySpec | None = None,
        responder: Responder | None = None,
        models: Iterable[str] = ("test-model",),
        window_of: Callable[[str], int | None] | None = None,
        token_rate: float | None = None,
    ):
        if host not in (LOOPBACK, "localhost"):
            raise ValueError(f"the model server binds {LOOPBACK} only, not {host!r}")
        if token_rate is not None and not float(token_rate) > 0:
            raise ValueError(
                f"token_rate must be a positive number of tokens a second, not {token_rate!r}"
            )
        self.latency = float(latency)
        self.token_rate = None if token_rate is None else float(token_rate)
        self.fault_rate = float(fault_rate)
        self.hang_seconds = float(hang_seconds)
        self.responder = responder
        self.models = list(models)
        self.window_of = window_of
        self.violations: list[str] = []
        self._default_reply = ReplySpec(text="ok")
        if default_reply is not None:
            self.default_reply = default_reply
        self._lock = threading.Lock()
        self._queue: deque[ReplySpec] = deque()
        self._requests: list[RecordedRequest] = []
        self._counts: dict[str, int] = {}
        self._usage = {"answers": 0, "prompt_tokens": 0, "completion_tokens": 0}
        self._counter = 0
        self._rng = random.Random(seed)
        self._seed = seed
        self._stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._thread: threading.Thread | None = None
        self._httpd = _HTTPServer((LOOPBACK, int(port)), _Handler, self)

    default_window_of: Callable[[str], int | None] | None = None

    def _violated(self, body: dict) -> list[str]:
        """Check one chat request; record and return its problems."""
        window_of = self.window_of or ModelServer.default_window_of
        model = str(body.get("model") or "")
        try:
            window = window_of(model) if window_of and model else None
        except Exception:  # a broken window lookup must not hide the request
            logger.exception("model server: window lookup failed")
            window = None
        problems = request_problems(body, window)
        if problems:
            text = f"{model or 'a model'}: " + "; ".join(problems)
            with self._lock:
                self.violations.append(text)
            with _VIOLATIONS_LOCK:
                VIOLATIONS.append(text)
        return problems

    # -- lifecycle -------------------------------------------------------------------------
    @property
    def port(self) -> int:
        """The bound TCP port."""
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        """Base URL for OpenAI clients (litellm's ``api_base``): ``http://127.0.0.1:<port>/v1``."""
        return f"http://{LOOPBACK}:{self.port}/v1"

    @property
    def root_url(self) -> str:
        """Server root, for Evennia's ``LLM_HOST`` setting (the contrib adds the path)."""
        return f"http://{LOOPBACK}:{self.port}"

    def start(self) -> "ModelServer":
        """Serve from a daemon thread; returns self."""
        if self._stopping.is_set():
            raise RuntimeError("a stopped ModelServer cannot be restarted; create a new one")
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._httpd.serve_forever,
                kwargs={"poll_interval": 0.05},
                name=f"ModelServer:{self.port}",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, wake waiting replies and close open connections. Safe to call twice."""
        if self._stopping.is_set():
            return
        self._stopping.set()  # wakes every latency / hang wait at once
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
        self._httpd.server_close()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:  # idle keep-alive connections would otherwise linger
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def __enter__(self) -> "ModelServer":
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()

    # -- scripting -------------------------------------------------------------------------
    def enqueue(self, *specs: dict | str | ReplySpec) -> None:
        """Queue reply specs, answered in order by the next requests.

        Raises:
            ValueError: for a malformed spec (nothing is queued then).
        """
        validated = [ReplySpec.from_dict(spec) for spec in specs]
        with self._lock:
            self._queue.extend(validated)

    @property
    def pending(self) -> int:
        """Number of queued replies not yet used."""
        with self._lock:
            return len(self._queue)

    @property
    def default_reply(self) -> ReplySpec:
        """Reply used when the queue is empty and no responder answers (default: text "ok")."""
        return self._default_reply

    @default_reply.setter
    def default_reply(self, spec: dict | str | ReplySpec) -> None:
        self._default_reply = ReplySpec.from_dict(spec)

    @property
    def seed(self) -> int | None:
        """Seed of the random fault generator; assigning it re-seeds."""
        return self._seed

    @seed.setter
    def seed(self, value: int | None) -> None:
        with self._lock:
            self._seed = value
            self._rng = random.Random(value)

    # -- the record ------------------------------------------------------------------------
    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every request received so far, oldest first."""
        with self._lock:
            return list(self._requests)

    def last_request(self) -> RecordedRequest | None:
        """The most recent request, or None if there was none."""
        with self._lock:
            return self._requests[-1] if self._requests else None

    def model_entry(self, model: str, created: int) -> dict:
        """One model of ``GET /v1/models``; with ``max_model_len`` when a window is set, as
        vLLM lists the window it serves."""
        entry = {
            "id": model,
            "object": "model",
            "created": created,
            "owned_by": "evennia-ai-testing",
        }
        window_of = self.window_of or ModelServer.default_window_of
        window = window_of(model) if window_of else None
        if window:
            entry["max_model_len"] = int(window)
        return entry

    def requests_to(self, path: str) -> list[RecordedRequest]:
        """Requests whose path is exactly ``path`` (e.g. "/v1/chat/completions")."""
        with self._lock:
            return [r for r in self._requests if r.path == path]

    def usage_totals(self) -> dict[str, int]:
        """Tokens the server reported over every chat completion it answered.

        ``{"answers", "prompt_tokens", "completion_tokens"}``: the server's own count, to
        compare with what the plugin accounted.
        """
        with self._lock:
            return dict(self._usage)

    def _count_usage(self, usage: dict) -> None:
        with self._lock:
            self._usage["answers"] += 1
            self._usage["prompt_tokens"] += int(usage.get("prompt_tokens") or 0)
            self._usage["completion_tokens"] += int(usage.get("completion_tokens") or 0)

    def counts(self, path: str | None = None) -> dict[str, int]:
        """How many requests were answered per kind: ``"ok"`` or a fault kind.

        Args:
            path: Count only requests to this path (e.g. "/api/v1/generate"); None counts all.

        Returns:
            A dict such as ``{"ok": 80, "500": 3, "hang": 2}`` (kinds never seen are absent).
            GETs, 404s and rejected bodies are not counted.
        """
        with self._lock:
            if path is None:
                return dict(self._counts)
            counted: dict[str, int] = {}
            for request in self._requests:
                if request.path == path and request.reply is not None:
                    kind = request.reply.fault or "ok"
                    counted[kind] = counted.get(kind, 0) + 1
            return counted

    def clear(self) -> None:
        """Forget recorded requests and counts (queued replies stay; see :meth:`reset`)."""
        with self._lock:
            self._requests.clear()
            self._counts.clear()

    def reset(self) -> None:
        """Forget recorded requests and counts and drop queued replies."""
        with self._lock:
            self._requests.clear()
            self._counts.clear()
            self._queue.clear()

    # -- used by the request handler -------------------------------------------------------
    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _count(self, spec: ReplySpec) -> None:
        kind = spec.fault or "ok"
        with self._lock:
            self._counts[kind] = self._counts.get(kind, 0) + 1

    def _next_id(self) -> int:
        with self._lock:
            self._counter += 1
            return self._counter

    def _choose_reply(self, body: dict) -> ReplySpec:
        """Pick the answer to one request: a random fault, the queue, the responder or default."""
        with self._lock:
            if self.fault_rate > 0 and self._rng.random() < self.fault_rate:
                # The queued reply is kept for the next request, so a client that retries
                # after a random fault still plays the script through.
                return ReplySpec(fault=self._rng.choice(FAULT_KINDS))
            if self._queue:
                return self._queue.popleft()
        if self.responder is not None:
            reply = self.responder(body)
            if reply is not None:
                return ReplySpec.from_dict(reply)
        return self._default_reply

    def _wait(self, seconds: float) -> bool:
        """Wait up to ``seconds``; returns False when the server is stopping."""
        if seconds > 0:
            self._stopping.wait(seconds)
        return not self._stopping.is_set()


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address, handler, owner: ModelServer):
        self.owner = owner
        super().__init__(address, handler)

    def handle_error(self, request, client_address) -> None:
        error = sys.exc_info()[1]
        if isinstance(error, _DISCONNECTS) or self.owner._stopping.is_set():
            return
        logger.exception("model server: error while handling a request from %s", client_address)


# -- building answers ------------------------------------------------------------------------


def _error_body(message: str, kind: str, code: str | None = None) -> dict:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def _offered_tool_names(body: dict) -> list[str]:
    names = []
    for tool in body.get("tools") or []:
        if isinstance(tool, dict):
            function = tool.get("function") or {}
            name = function.get("name") if isinstance(function, dict) else None
            if isinstance(name, str):
                names.append(name)
    return names


def _prompt_chars(body: dict) -> int:
    """Characters of prompt text in a chat or generate body, for the usage estimate."""
    total = 0
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            total += len(content)
        elif isinstance(content, list):  # content parts
            total += sum(len(p.get("text") or "") for p in content if isinstance(p, dict))
    prompt = body.get("prompt")
    if isinstance(prompt, str):
        total += len(prompt)
    return total


def resolve_tool_calls(spec: ReplySpec, body: dict, next_id: Callable[[], int]) -> list[dict]:
    """OpenAI ``tool_calls`` for a spec, including the invalid_args / unknown_tool faults."""
    calls = list(spec.tool_calls)
    offered = _offered_tool_names(body)
    if spec.fault == "invalid_args":
        calls = [ToolCallSpec(offered[0] if offered else "say", '{"message": "unterminated')]
    elif spec.fault == "unknown_tool":
        name = "no_such_tool"
        while name in offered:
            name += "_x"
        calls = [ToolCallSpec(name, {})]
    result = []
    for call in calls:
        arguments = call.arguments
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments)
        result.append(
            {
                "id": call.id or f"call_{next_id()}",
                "type": "function",
                "function": {"name": call.name, "arguments": arguments},
            }
        )
    return result


def estimate_usage(spec: ReplySpec, body: dict, completion_length: int) -> dict:
    """Token counts of an answer: those the reply spec gives, else about four characters a token."""
    prompt = spec.usage.get("prompt_tokens", _prompt_chars(body) // 4)
    completion = spec.usage.get("completion_tokens", completion_length // 4)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def completion_chars(text: str | None, tool_calls: list[dict]) -> int:
    """Characters of an answer's text and tool calls (for :func:`estimate_usage`)."""
    return len(text or "") + sum(
        len(c["function"]["name"]) + len(c["function"]["arguments"]) for c in tool_calls
    )


def _split_text(text: str) -> list[str]:
    """Stream deltas: one word (with its trailing space) per chunk."""
    return re.findall(r"\s*\S+\s*|\s+", text) or [text]


def _split_fixed(text: str, size: int = 8) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


# -- the request handler ---------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real providers do
    server_version = "EvenniaAIModelServer/1.0"
    timeout = 60  # an idle keep-alive connection is closed after this long
    server: _HTTPServer

    # -- plumbing --------------------------------------------------------------------------
    @property
    def owner(self) -> ModelServer:
        return self.server.owner

    def setup(self) -> None:
        super().setup()
        # Answer at once: without this, Nagle's algorithm meets the client's delayed ACK and
        # every small reply waits ~40 ms, which would swamp what the benchmarks measure.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.owner._lock:
            self.owner._connections.add(self.connection)

    def handle(self) -> None:
        try:
            super().handle()
        except _DISCONNECTS:
            self.close_connection = True

    def finish(self) -> None:
        try:
            super().finish()
        except _DISCONNECTS:
            pass
        finally:
            with self.owner._lock:
                self.owner._connections.discard(self.connection)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        logger.debug("model server %s: " + format, self.address_string(), *args)

    def _read_body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline().strip():  # trailers, then the blank line
                        pass
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _send(
        self,
        status: int,
        payload: bytes,
        content_type: str = "application/json",
        headers: dict | None = None,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()

    def _send_json(self, status: int, data: Any, headers: dict | None = None) -> None:
        self._send(status, json.dumps(data).encode(), headers=headers)

    def _start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _send_event(self, data: Any) -> None:
        text = data if isinstance(data, str) else json.dumps(data)
        self._write_chunk(f"data: {text}\n\n".encode())

    def _end_stream(self) -> None:
        self._write_chunk(b"")  # the zero-length chunk ends a chunked body

    # -- routing ---------------------------------------------------------------------------
    def _recorded(self, body: Any) -> RecordedRequest:
        request = RecordedRequest(
            path=self.path.split("?", 1)[0],
            headers=_Headers(self.headers.items()),
            body=body,
            received_at=time.monotonic(),
            method=self.command,
        )
        self.owner._record(request)
        return request

    def do_GET(self) -> None:
        request = self._recorded(None)
        if request.path in MODELS_PATHS:
            created = int(time.time())
            self._send_json(
                200,
                {
                    "object": "list",
                    "data": [self.owner.model_entry(m, created) for m in self.owner.models],
                },
            )
        else:
            self._not_found(request.path)

    def do_POST(self) -> None:
        raw = self._read_body()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        request = self._recorded(body)
        if request.path not in CHAT_PATHS and request.path != GENERATE_PATH:
            self._not_found(request.path)
            return
        if not isinstance(body, dict):
            self._send_json(
                400, _error_body("the request body must be a JSON object", "invalid_request_error")
            )
            return
        if request.path in CHAT_PATHS and not isinstance(body.get("messages"), list):
            self._send_json(400, _error_body("'messages' must be a list", "invalid_request_error"))
            return
        if request.path in CHAT_PATHS:
            problems = self.owner._violated(body)
            if problems:
                self._send_json(400, _error_body("; ".join(problems), "invalid_request_error"))
                return
        try:
            spec = self.owner._choose_reply(body)
        except Exception as error:  # a broken responder must show up in the test, not hang it
            logger.exception("model server: the responder failed")
            self._send_json(500, _error_body(f"responder failed: {error!r}", "server_error"))
            return
        request.reply = spec
        self.owner._count(spec)
        if not self.owner._wait(self.owner.latency):
            self.close_connection = True
            return
        if request.path == GENERATE_PATH:
            self._answer_generate(spec, body)
        else:
            self._answer_chat(spec, body)

    def _not_found(self, path: str) -> None:
        self._send_json(404, _error_body(f"no such endpoint: {path}", "invalid_request_error"))

    def _answer_fault(self, spec: ReplySpec, stream: bool = False) -> ReplySpec | None:
        """Answer the faults both protocols share (``stream``: the request asked for SSE).

        Returns:
            None when the request is finished, else the reply spec to answer with: after a
            "hang" that is the hang's own text/tool calls, or the default reply if it has none.
        """
        if spec.fault == "500":
            self._send_json(
                500, _error_body(spec.message or "scripted server error", "server_error")
            )
            return None
        if spec.fault == "429":
            retry = (
                spec.retry_after if isinstance(spec.retry_after, str) else f"{spec.retry_after:g}"
            )
            self._send_json(
                429,
                _error_body(
                    spec.message or f"rate limited; retry after {retry} s",
                    "rate_limit_error",
                    "rate_limit_exceeded",
                ),
                headers={"Retry-After": retry},
            )
            return None
        if spec.fault == "hang":
            seconds = self.owner.hang_seconds if spec.seconds is None else spec.seconds
            if not self.owner._wait(seconds):  # stopping: drop the connection unanswered
                self.close_connection = True
                return None
            if spec.text is None and not spec.tool_calls:
                return self.owner.default_reply
        if spec.fault == "disconnect":
            self._drop_connection()
            return None
        if spec.fault == "truncated" and stream:
            return spec  # answered by the stream itself: a few pieces, then the connection drops
        if spec.fault == "truncated":
            payload = b'{"id": "chatcmpl-cut", "object": "chat.completion", "choices": [{"in'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload) * 4))  # promises more
            self.end_headers()
            self.wfile.write(payload)
            self.wfile.flush()
            self._drop_connection()
            return None
        return spec

    def _drop_connection(self) -> None:
        """Close the connection at once (no more bytes), as a crashed upstream would."""
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    # -- the OpenAI protocol ---------------------------------------------------------------
    def _answer_chat(self, spec: ReplySpec, body: dict) -> None:
        stream = bool(body.get("stream"))
        spec = self._answer_fault(spec, stream)
        if spec is None:
            return
        if spec.fault == "malformed":
            if stream:
                self._start_stream()
                self._send_event('{"id": "chatcmpl-broken", "choices": [')
                self._send_event("[DONE]")
                self._end_stream()
            else:
                self._send(200, b'{"id": "chatcmpl-broken", "object": "chat.completion", "choi')
            return
        completion_id = f"chatcmpl-{self.owner._next_id()}"
        model = body.get("model") if isinstance(body.get("model"), str) else "test-model"
        created = int(time.time())
        tool_calls: list[dict]
        if spec.fault == "empty_choices":
            text, tool_calls = None, []
        elif spec.fault == "truncated":  # streamed: a reply long enough to be cut mid-way
            text, tool_calls = spec.text or "The answer was cut off in the middle.", []
        else:
            text = spec.text
            tool_calls = resolve_tool_calls(spec, body, self.owner._next_id)
        usage = estimate_usage(spec, body, completion_chars(text, tool_calls))
        self.owner._count_usage(usage)
        finish = spec.finish_reason or ("tool_calls" if tool_calls else "stop")
        if stream:
            self._stream_chat(
                spec, completion_id, model, created, text, tool_calls, finish, usage, body
            )
            return
        if spec.fault == "empty_choices":
            choices = []
        else:
            message: dict = {
                "role": "assistant",
                "content": text if text is not None or tool_calls else "",
            }
            if tool_calls:
                message["tool_calls"] = tool_calls
            choices = [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}]
        self._send_json(
            200,
            {
                "id": completion_id,
                "object": "chat.completion",
                "created": created,
                "model": model,
                "choices": choices,
                "usage": usage,
            },
        )

    def _stream_chat(
        self,
        spec: ReplySpec,
        completion_id: str,
        model: str,
        created: int,
        text: str | None,
        tool_calls: list[dict],
        finish: str,
        usage: dict,
        body: dict,
    ) -> None:
        def chunk(choices: list, **extra: Any) -> dict:
            return {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": choices,
                **extra,
            }

        def delta(content: dict, finish_reason: str | None = None) -> dict:
            return chunk(
                [{"index": 0, "delta": content, "logprobs": None, "finish_reason": finish_reason}]
            )

        self._start_stream()
        pause = 1.0 / self.owner.token_rate if self.owner.token_rate else 0.0
        if spec.fault == "empty_choices":
            self._send_event(chunk([]))
        else:
            for number, event in enumerate(self._chat_deltas(text, tool_calls)):
                if spec.fault == "truncated" and number == 3:
                    self._drop_connection()  # mid-answer, as a crashed upstream would
                    return
                if number and not self.owner._wait(pause):  # the role-only delta goes at once
                    self.close_connection = True
                    return
                self._send_event(delta(event))
            self._send_event(delta({}, finish))
        options = body.get("stream_options")
        if isinstance(options, dict) and options.get("include_usage"):
            self._send_event(chunk([], usage=usage))
        self._send_event("[DONE]")
        self._end_stream()

    @staticmethod
    def _chat_deltas(text: str | None, tool_calls: list[dict]) -> Iterator[dict]:
        yield {"role": "assistant", "content": ""}
        for piece in _split_text(text) if text else []:
            yield {"content": piece}
        for index, call in enumerate(tool_calls):
            function = call["function"]
            yield {
                "tool_calls": [
                    {
                        "index": index,
                        "id": call["id"],
                        "type": "function",
                        "function": {"name": function["name"], "arguments": ""},
                    }
                ]
            }
            for piece in _split_fixed(function["arguments"]):
                yield {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}

    # -- the text-generation-webui protocol ------------------------------------------------
    def _answer_generate(self, spec: ReplySpec, body: dict) -> None:
        """Answer ``{"prompt": ...}`` with ``{"results": [{"text": ...}]}`` (Evennia's LLM contrib).

        The protocol has no tool calls; scripted ones are answered as their JSON text.
        """
        spec = self._answer_fault(spec)
        if spec is None:
            return
        if spec.fault == "malformed":
            self._send(200, b'{"results": [{"text": "broken')
            return
        if spec.fault == "empty_choices":
            self._send_json(200, {"results": []})
            return
        tool_calls = resolve_tool_calls(spec, body, self.owner._next_id)
        text = spec.text or ""
        if tool_calls and not text:
            text = json.dumps(
                [
                    {"name": c["function"]["name"], "arguments": c["function"]["arguments"]}
                    for c in tool_calls
                ]
            )
        self._send_json(200, {"results": [{"text": text}]})


# -- command line ----------------------------------------------------------------------------


def _load_script(path: str) -> list[ReplySpec]:
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    if not isinstance(data, list):
        raise ValueError("the script must be a JSON list of reply specs")
    return [ReplySpec.from_dict(spec) for spec in data]


def main(argv: list[str] | None = None) -> int:
    """Serve a loopback model server until SIGINT or SIGTERM. Returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m evennia_ai.testing.model_server",
        description="Scripted OpenAI-compatible model server on 127.0.0.1 for tests and "
        "benchmarks (also answers Evennia's /api/v1/generate).",
    )
    parser.add_argument("--host", default=LOOPBACK, help="only 127.0.0.1 is allowed")
    parser.add_argument("--port", type=int, default=0, help="TCP port (0: a free one)")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before every answer")
    parser.add_argument(
        "--fault-rate",
        type=float,
        default=0.0,
        help="probability of a random fault per request (0..1)",
    )
    parser.add_argument("--seed", type=int, default=None, help="seed for random faults")
    parser.add_argument(
        "--hang-seconds", type=float, default=5.0, help="how long a 'hang' fault waits"
    )
    parser.add_argument("--script", help="JSON file holding a list of reply specs, used in order")
    parser.add_argument(
        "--default-text", default="ok", help="text answered once the script is used up"
    )
    parser.add_argument(
        "--default-reply",
        default=None,
        help="a JSON reply spec answered once the script is used up "
        '(overrides --default-text), e.g. \'{"tool_calls": [{"name": '
        '"say", "arguments": {"message": "Hi"}}]}\'',
    )
    args = parser.parse_args(argv)
    if args.host not in (LOOPBACK, "localhost"):
        parser.error(f"--host must be {LOOPBACK}: this server is for loopback tests only")
    if not 0.0 <= args.fault_rate <= 1.0:
        parser.error("--fault-rate must be between 0 and 1")
    script: list[ReplySpec] = []
    if args.script:
        try:
            script = _load_script(args.script)
        except (OSError, ValueError) as error:
            parser.error(f"cannot use --script {args.script}: {error}")
    default: Any = {"text": args.default_text}
    if args.default_reply:
        try:
            default = ReplySpec.from_dict(json.loads(args.default_reply))
        except ValueError as error:
            parser.error(f"cannot use --default-reply: {error}")
    try:
        server = ModelServer(
            port=args.port,
            latency=args.latency,
            fault_rate=args.fault_rate,
            seed=args.seed,
            hang_seconds=args.hang_seconds,
            default_reply=default,
        )
    except OSError as error:
        parser.error(f"cannot listen on {LOOPBACK}:{args.port}: {error.strerror or error}")
    server.enqueue(*script)
    done = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: done.set())
    server.start()
    print(
        f"model server listening on {server.url} "
        f"(generate: {server.root_url}{GENERATE_PATH}); Ctrl-C to stop",
        flush=True,
    )
    try:
        while not done.wait(0.5):  # a timed wait lets the main thread run signal handlers
            pass
    finally:
        server.stop()
    counts = ", ".join(f"{kind}: {n}" for kind, n in sorted(server.counts().items()))
    print(
        f"model server stopped after {len(server.requests)} request(s)"
        + (f" ({counts})" if counts else ""),
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

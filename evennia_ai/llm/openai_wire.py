"""The lean route: OpenAI chat completions over aiohttp, for OpenAI-compatible servers.

Most of a model call's CPU on the litellm route is request building and response bookkeeping
(about 4.5 ms a call, measured in issue 33) that an OpenAI-compatible server does not need:
the request is already in the OpenAI format. Here a call is one aiohttp POST of the request's
JSON and one ``json.loads`` of the answer (about 0.3 ms).

**Which models take it** (:func:`lean_endpoint`): ``hosted_vllm/<name>``, ``openai/<name>`` at an
operator's ``api_base`` (vLLM, llama.cpp, a litellm proxy, Ollama's ``/v1``, the test double),
and ``openai/<name>`` at OpenAI itself (``OPENAI_BASE_URL``/``OPENAI_API_BASE`` or
``https://api.openai.com/v1``, key ``OPENAI_API_KEY``, ``OPENAI_ORGANIZATION`` sent as litellm
sends it). Every other provider (``ollama/``, ``anthropic/``, ...) stays on litellm, and so do:

- OpenAI's reasoning models at OpenAI itself (o1, o3, o4, gpt-5...), whose parameters litellm
  translates (``max_completion_tokens`` for ``max_tokens``, ``temperature`` dropped), as its own
  OpenAI configuration recognises them (at an operator's ``api_base`` litellm sends the
  parameters unchanged, and so does the lean route);
- names matching a pattern of ``EVENNIA_AI_LITELLM_MODELS`` (shell-style, ``openai/o*``);
- ``openai/`` names when ``EVENNIA_AI_OPENAI_SDK_ROUTE`` is on (the OpenAI SDK, as before);
- every model while ``EVENNIA_AI_LITELLM_CALLBACKS`` names an observer (Langfuse, OpenTelemetry,
  ...): those callbacks see only calls litellm makes, so an operator who set them keeps them.

**The request body** is what litellm sends for the same call: the messages as given, tools
with ``additionalProperties: false`` and ``strict`` removed from their schemas (as litellm's
OpenAI-compatible route does; only schema keywords: litellm also drops a *property* named
``strict``, which the lean route keeps), then
``temperature``, ``max_tokens``, ``response_format`` when given; streamed calls add ``stream``
and ``stream_options: {"include_usage": true}`` so usage stays exact.

**Transport**: one ``aiohttp.ClientSession`` per model-call loop (its connection pool is
shared by every call), proxies from ``HTTP_PROXY``/``HTTPS_PROXY``/``NO_PROXY`` (read when the
session is made, as litellm's client reads them when it is made), TLS as litellm sets it up (``SSL_VERIFY``,
``litellm.ssl_verify``, ``SSL_CERT_FILE``, certifi; client certificate ``SSL_CERTIFICATE``).
The timeout covers the whole call, a streamed answer included.

**Errors** are :class:`~evennia_ai.llm.errors.ProviderError` values made by
:mod:`evennia_ai.llm.errors`, as on the litellm route: a kind and the cause in words
("connection refused to http://127.0.0.1:5100/v1", "timed out after 30 s", "the provider is
rate-limiting (429)" with its ``Retry-After`` kept), never a Python repr.

**Streaming** (:func:`post_chat` with ``on_delta``): the server-sent events are read as they
arrive, each ``data:`` line decoded once; every piece is handed to ``on_delta`` in order and
the pieces are assembled into the same answer a non-streamed call returns (the ``raw`` dict has
the shape of a ``chat.completion``). A sink that raises is logged once and not called again.
"""

from __future__ import annotations

import asyncio
import atexit
import fnmatch
import json
import logging
import os
import re
import ssl
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
import certifi

from evennia_ai import conf
from evennia_ai.llm.errors import ProviderError as ProviderError
from evennia_ai.llm.errors import empty, http_error, malformed, model_error
from evennia_ai.llm.errors import parse_retry_after as parse_retry_after
from evennia_ai.llm.json_protocol import decode_arguments, parse_tool_calls_from_text
from evennia_ai.llm.tokens import model_info
from evennia_ai.llm.types import (
    JSONObject,
    LLMResult,
    LLMUsage,
    StreamDelta,
    StreamSink,
    ToolCall,
    ToolCallDelta,
)

logger = logging.getLogger(__name__)

OPENAI_API_BASE = "https://api.openai.com/v1"


# -- which models take the lean route ----------------------------------------------------------
@dataclass(frozen=True)
class LeanEndpoint:
    """Where a lean call goes.

    Attributes:
        url: The chat-completions URL.
        model: The model name the server is sent (without the route prefix).
        headers: Authorization and content type (and OpenAI's organisation, when set).
    """

    url: str
    model: str
    headers: dict[str, str]


_ROUTE_CACHE: dict[tuple[str, str, str, str, str], LeanEndpoint | None] = {}


def litellm_patterns() -> list[str]:
    """``EVENNIA_AI_LITELLM_MODELS``: model-name patterns kept on litellm."""
    return [p for p in conf.get_texts("EVENNIA_AI_LITELLM_MODELS") if p]


def translated_by_litellm(model: str) -> bool:
    """Whether litellm rewrites this OpenAI model's parameters (its reasoning models).

    Asks litellm's own OpenAI configurations once per name (the answer is cached with the
    route), so the rule stays litellm's.
    """
    name = model.split("/", 1)[1] if "/" in model else model
    try:
        import litellm

        if litellm.OpenAIOSeriesConfig().is_model_o_series_model(name):
            return True
        gpt5 = getattr(litellm, "OpenAIGPT5Config", None)
        if gpt5 is not None and gpt5.is_model_gpt_5_model(name):
            return True
    except Exception:  # an older or newer litellm without these: judge by the name
        return bool(re.match(r"^(o\d|gpt-5)", name))
    return False


def lean_endpoint(model: str, api_base: str | None, api_key: str | None) -> LeanEndpoint | None:
    """The lean route's endpoint for a call, or None when litellm serves it.

    Args:
        model: The model name as the operator gave it (``openai/qwen2.5``, ``hosted_vllm/x``).
        api_base: The call's endpoint, if any.
        api_key: The call's key, if any.
    """
    patterns = tuple(litellm_patterns())
    if conf.get_list("EVENNIA_AI_LITELLM_CALLBACKS"):
        patterns += ("*",)  # the operator's observers see litellm's calls only
    sdk = conf.get_bool("EVENNIA_AI_OPENAI_SDK_ROUTE")
    key = (model, api_base or "", api_key or "", ",".join(patterns), "sdk" if sdk else "")
    if key in _ROUTE_CACHE:
        return _ROUTE_CACHE[key]
    endpoint = _lean_endpoint(model, api_base, api_key, patterns, sdk)
    if len(_ROUTE_CACHE) > 512:
        _ROUTE_CACHE.clear()
    _ROUTE_CACHE[key] = endpoint
    return endpoint


def _lean_endpoint(
    model: str,
    api_base: str | None,
    api_key: str | None,
    patterns: tuple[str, ...],
    sdk: bool,
) -> LeanEndpoint | None:
    if any(fnmatch.fnmatchcase(model, pattern) for pattern in patterns):
        return None
    prefix, _, name = model.partition("/")
    if not name or prefix not in ("openai", "hosted_vllm"):
        return None
    headers = {"Content-Type": "application/json"}
    if prefix == "hosted_vllm":
        base = api_base or os.environ.get("HOSTED_VLLM_API_BASE")
        if not base:
            return None  # litellm reports the missing endpoint in its words
        key = api_key or os.environ.get("HOSTED_VLLM_API_KEY") or "fake-api-key"
    else:
        if sdk or (not api_base and translated_by_litellm(model)):
            return None  # at an api_base litellm sends OpenAI's names as they are, as we do
        base = api_base or (
            os.environ.get("OPENAI_BASE_URL")
            or os.environ.get("OPENAI_API_BASE")
            or OPENAI_API_BASE
        )
        key = api_key or os.environ.get("OPENAI_API_KEY") or ""
        if not api_base:
            if not key:
                return None  # litellm says which key is missing
            organization = os.environ.get("OPENAI_ORGANIZATION")
            if organization:
                headers["OpenAI-Organization"] = organization
    if key:
        headers["Authorization"] = f"Bearer {key}"
    url = str(base).rstrip("/")
    if not url.endswith("/chat/completions"):
        url += "/chat/completions"
    return LeanEndpoint(url=url, model=name, headers=headers)


def reset_routes() -> None:
    """Forget the cached route decisions (tests; a changed setting is part of the key)."""
    _ROUTE_CACHE.clear()


# -- the request body ----------------------------------------------------------------------------
def _clean_schema(value: Any, in_properties: bool = False) -> Any:
    """A copy of a tool schema without ``additionalProperties: false`` and ``strict``."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if not in_properties and (
                key == "strict" or (key == "additionalProperties" and item is False)
            ):
                continue
            out[key] = _clean_schema(item, key == "properties" and not in_properties)
        return out
    if isinstance(value, list):
        return [_clean_schema(item) for item in value]
    return value


#: Cleaned ``parameters`` by the identity of the tool's own schema dict (a tool's schema is
#: built once and sent with every call): ``id -> (the schema, its cleaned copy)``.
_CLEANED: dict[int, tuple[Any, Any]] = {}


def _clean_tool(tool: Any) -> Any:
    """A tool schema as litellm's OpenAI-compatible route sends it (see the module docstring)."""
    function = tool.get("function") if isinstance(tool, dict) else None
    if not isinstance(function, dict):
        return _clean_schema(tool)
    parameters = function.get("parameters")
    held = _CLEANED.get(id(parameters))
    if held is None or held[0] is not parameters:
        if len(_CLEANED) > 1024:
            _CLEANED.clear()
        held = (parameters, _clean_schema(parameters))
        _CLEANED[id(parameters)] = held
    cleaned = {k: v for k, v in function.items() if k != "strict"}
    if "parameters" in function:
        cleaned["parameters"] = held[1]
    out = {k: _clean_schema(v) for k, v in tool.items() if k != "function" and k != "strict"}
    out["function"] = cleaned
    return out


def request_body(
    model: str,
    messages: list[JSONObject],
    tools: list[JSONObject] | None = None,
    *,
    temperature: float | None = None,
    max_tokens: int | None = None,
    response_format: JSONObject | None = None,
    stream: bool = False,
) -> JSONObject:
    """The chat-completions body for a call (see the module docstring)."""
    body: JSONObject = {"model": model, "messages": messages}
    if temperature is not None:
        body["temperature"] = temperature
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    if response_format is not None:
        body["response_format"] = response_format
    if tools:
        body["tools"] = [_clean_tool(tool) for tool in tools]
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return body


# -- the session ----------------------------------------------------------------------------------
def ssl_setting() -> ssl.SSLContext | bool:
    """TLS as litellm's client sets it up: its own resolution of ``SSL_VERIFY``,
    ``litellm.ssl_verify``, ``SSL_CERT_FILE`` (False: no verification), plus the client
    certificate of ``SSL_CERTIFICATE`` (or ``litellm.ssl_certificate``)."""
    try:
        from litellm.llms.custom_httpx.http_handler import get_ssl_configuration

        setting: Any = get_ssl_configuration()
    except Exception:  # litellm moved it: verify with the system's defaults
        setting = True
    if setting is False:
        return False
    certificate = os.environ.get("SSL_CERTIFICATE")
    if not certificate:
        try:
            import litellm

            certificate = getattr(litellm, "ssl_certificate", None)
        except Exception:
            certificate = None
    if isinstance(setting, ssl.SSLContext) and not certificate:
        return setting  # litellm's own (cached) context
    if isinstance(setting, str):
        context = ssl.create_default_context(cafile=setting)
    else:  # a context of our own, never litellm's shared one, to add the certificate to
        context = ssl.create_default_context(cafile=certifi.where())
    if certificate:
        context.load_cert_chain(str(certificate))
    return context


#: ``NO_PROXY`` matching (in the standard library, not in its type stubs).
_BYPASS_NAME = "proxy_bypass_environment"
_BYPASS: Callable[[str, dict[str, str]], bool] = getattr(urllib.request, _BYPASS_NAME)


class _Sessions:
    """One aiohttp session per event loop (made on that loop, on first use).

    The proxy environment (``HTTP_PROXY``, ``HTTPS_PROXY``, ``NO_PROXY``) is read when a
    session is made and the proxy of each URL is worked out once: aiohttp's own ``trust_env``
    would do it in a thread for every request (and read ``~/.netrc`` in another), costing more
    CPU than the rest of the call. Sessions of loops that have closed are closed when the next
    one is made, and every session is closed at interpreter exit (the model-call loop's thread
    is a daemon: nothing else would, and aiohttp would complain of an unclosed session).
    """

    def __init__(self) -> None:
        self._by_loop: dict[int, tuple[asyncio.AbstractEventLoop, aiohttp.ClientSession]] = {}
        self._proxies: dict[str, str] = {}
        self._proxy_of: dict[str, str | None] = {}
        atexit.register(self.close_all)

    def get(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        held = self._by_loop.get(id(loop))
        if held is not None and held[0] is loop and not held[1].closed:
            return held[1]
        for key, (other, session) in list(self._by_loop.items()):
            if other.is_closed() or other is loop:
                del self._by_loop[key]
                _close_now(session)
        self._proxies = urllib.request.getproxies_environment()
        self._proxy_of = {}
        connector = aiohttp.TCPConnector(ssl=ssl_setting(), limit=0, ttl_dns_cache=300)
        session = aiohttp.ClientSession(connector=connector)
        self._by_loop[id(loop)] = (loop, session)
        return session

    def proxy_for(self, url: str) -> str | None:
        """The proxy for ``url`` from the environment read with the session, or None."""
        if url in self._proxy_of:
            return self._proxy_of[url]
        proxy = None
        parts = urllib.parse.urlsplit(url)
        if self._proxies and not _BYPASS(parts.hostname or "", self._proxies):
            proxy = self._proxies.get(parts.scheme) or self._proxies.get("all")
        if len(self._proxy_of) > 256:
            self._proxy_of.clear()
        self._proxy_of[url] = proxy
        return proxy

    async def close(self) -> None:
        """Close the running loop's session (the next call makes a new one)."""
        held = self._by_loop.pop(id(asyncio.get_running_loop()), None)
        if held is not None:
            await held[1].close()

    def close_all(self) -> None:
        """Close every session (at exit; also for tests)."""
        held, self._by_loop = list(self._by_loop.values()), {}
        for loop, session in held:
            if loop.is_running() and not _on_loop(loop):
                try:
                    asyncio.run_coroutine_threadsafe(session.close(), loop).result(timeout=2)
                    continue
                except Exception:  # the loop is going away: close it below
                    pass
            _close_now(session)


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


def _close_now(session: aiohttp.ClientSession) -> None:
    """Close a session whose loop is gone (its connections are dropped, not shut down)."""
    connector = session.connector
    session.detach()
    if connector is not None:
        try:
            connector.close(abort_ssl=True)
        except Exception:  # a closed loop cannot close transports; they are gone with it
            pass


SESSIONS = _Sessions()


# -- errors -----------------------------------------------------------------------------------------
def status_error(status: int, headers: Any, raw: bytes, url: str | None = None) -> ProviderError:
    """The ProviderError for an HTTP error answer (see :func:`.errors.http_error`)."""
    logger.debug(
        "evennia_ai: %s answered HTTP %d: %s", url or "the model server", status, raw[:2000]
    )
    return ProviderError.of(http_error(status, raw, headers=headers, url=url))


def transport_error(err: BaseException, seconds: float, url: str | None = None) -> ProviderError:
    """The ProviderError for a failure below HTTP (see :func:`.errors.model_error`)."""
    return ProviderError.of(model_error(err, url=url, timeout=seconds))


def _malformed(what: str = "the reply was not valid JSON") -> ProviderError:
    return ProviderError.of(malformed(what))


# -- one call -----------------------------------------------------------------------------------------
async def post_chat(
    endpoint: LeanEndpoint,
    body: JSONObject,
    timeout: float,
    on_delta: StreamSink | None = None,
) -> JSONObject:
    """POST a chat request; the answer as a ``chat.completion`` dict.

    Args:
        endpoint: Where to (:func:`lean_endpoint`).
        body: The request (:func:`request_body`; ``stream`` set when ``on_delta`` is given).
        timeout: Seconds for the whole call, a streamed answer included.
        on_delta: Called with each piece of a streamed answer.

    Raises:
        ProviderError: for anything that went wrong (``streamed`` set once a piece was handed
            to ``on_delta``).
    """
    sink = on_delta if isinstance(on_delta, Sink) or on_delta is None else Sink(on_delta)
    try:
        async with asyncio.timeout(timeout):
            session = SESSIONS.get()
            async with session.post(
                endpoint.url,
                data=json.dumps(body).encode(),
                headers=endpoint.headers,
                proxy=SESSIONS.proxy_for(endpoint.url),
            ) as response:
                if response.status >= 400:
                    raise status_error(
                        response.status, response.headers, await response.read(), endpoint.url
                    )
                if sink is not None and _is_event_stream(response):
                    return await _read_stream(response, sink)
                raw = await response.read()
    except ProviderError as err:
        err.streamed = bool(sink and sink.handed)
        raise
    except (asyncio.TimeoutError, aiohttp.ClientError, OSError) as err:
        error = transport_error(err, timeout, endpoint.url)
        error.streamed = bool(sink and sink.handed)
        raise error from None
    try:
        data = json.loads(raw)
    except ValueError as err:
        logger.debug("evennia_ai: %s answered a body that is not JSON: %s", endpoint.url, err)
        raise _malformed() from None
    if not isinstance(data, dict):
        raise _malformed("the reply was not a JSON object")
    if sink is not None:  # a server that ignored "stream": hand the whole answer over at once
        sink.replay(data)
    return data


def _is_event_stream(response: aiohttp.ClientResponse) -> bool:
    return response.content_type == "text/event-stream"


class Sink:
    """Hands pieces to ``on_delta``; one that raises is logged once and dropped.

    Attributes:
        handed: Whether any piece was handed over (the player may have seen it).
    """

    def __init__(self, on_delta: StreamSink):
        self.on_delta: StreamSink | None = on_delta
        self.handed = False

    def __call__(self, delta: StreamDelta) -> None:
        if self.on_delta is None:
            return
        self.handed = True
        try:
            self.on_delta(delta)
        except Exception:
            logger.exception("evennia_ai: the stream consumer failed; the rest is not streamed")
            self.on_delta = None

    def replay(self, data: JSONObject) -> None:
        choices = data.get("choices") or []
        message = (choices[0] or {}).get("message") if choices else None
        if not isinstance(message, dict):
            return
        calls = tuple(
            ToolCallDelta(
                index,
                (c.get("function") or {}).get("name") or "",
                (c.get("function") or {}).get("arguments") or "",
            )
            for index, c in enumerate(message.get("tool_calls") or [])
            if isinstance(c, dict)
        )
        content = message.get("content")
        if (isinstance(content, str) and content) or calls:
            self(StreamDelta(content=content if isinstance(content, str) else "", tool_calls=calls))


class StreamAssembler:
    """Builds a ``chat.completion`` dict from ``chat.completion.chunk`` events (both routes)."""

    def __init__(self, sink: StreamSink) -> None:
        self.sink = sink
        self.content: list[str] = []
        self.calls: dict[int, JSONObject] = {}
        self.finish_reason: str | None = None
        self.usage: JSONObject | None = None
        self.head: JSONObject = {}
        self.chunks = 0

    def add(self, chunk: JSONObject) -> None:
        """Take one decoded chunk; hand its pieces to the sink."""
        self.chunks += 1
        if not self.head:
            self.head = {k: chunk.get(k) for k in ("id", "created", "model", "system_fingerprint")}
        usage = chunk.get("usage")
        if isinstance(usage, dict) and usage:
            self.usage = usage
        choices = chunk.get("choices") or ()
        if not choices:
            return
        choice = choices[0]
        if not isinstance(choice, dict):
            raise ValueError("a chunk's choice is no JSON object")
        if choice.get("finish_reason"):
            self.finish_reason = choice["finish_reason"]
        delta = choice.get("delta") or {}
        text = delta.get("content")
        pieces: list[ToolCallDelta] = []
        for call in delta.get("tool_calls") or ():
            index = int(call.get("index") or 0)
            entry = self.calls.setdefault(
                index, {"id": None, "type": "function", "function": {"name": "", "arguments": ""}}
            )
            function = call.get("function") or {}
            name = function.get("name") or ""
            arguments = function.get("arguments") or ""
            if call.get("id"):
                entry["id"] = call["id"]
            entry["function"]["name"] += name
            entry["function"]["arguments"] += arguments
            if name or arguments:
                pieces.append(ToolCallDelta(index, name, arguments))
        if text:
            self.content.append(text)
        if text or pieces:
            self.sink(StreamDelta(content=text or "", tool_calls=tuple(pieces)))

    def completion(self) -> JSONObject:
        """The assembled answer, shaped as a non-streamed ``chat.completion``."""
        if not self.chunks:
            raise ProviderError.of(empty("the streamed reply was empty"))
        message: JSONObject = {
            "role": "assistant",
            "content": "".join(self.content) if self.content or not self.calls else None,
        }
        if self.calls:
            message["tool_calls"] = [
                {**call, "id": call["id"] or f"call_{index}"}
                for index, call in sorted(self.calls.items())
            ]
        choices = (
            [{"index": 0, "message": message, "finish_reason": self.finish_reason}]
            if self.content or self.calls or self.finish_reason
            else []
        )
        data: JSONObject = {**self.head, "object": "chat.completion", "choices": choices}
        if self.usage is not None:
            data["usage"] = self.usage
        return data


async def _read_stream(response: aiohttp.ClientResponse, sink: Sink) -> JSONObject:
    """Read server-sent events to ``[DONE]`` (or the end of the body)."""
    assembler = StreamAssembler(sink)
    buffer = b""
    async for block in response.content.iter_any():
        buffer += block
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            if not line.startswith(b"data:"):
                continue  # comments, event names, blank separators
            data = line[5:].strip()
            if data == b"[DONE]":
                return assembler.completion()
            try:
                chunk = json.loads(data)
            except ValueError as err:
                logger.debug("evennia_ai: a streamed piece is not JSON: %s", err)
                raise _malformed("the streamed reply was not valid JSON") from None
            if not isinstance(chunk, dict):
                raise _malformed("the streamed reply was not in the chat-completion format")
            if isinstance(chunk.get("error"), dict):  # some servers report a failure in-stream
                raise status_error(500, None, data)
            try:
                assembler.add(chunk)
            except (TypeError, ValueError, AttributeError) as err:
                logger.debug("evennia_ai: a streamed piece could not be read: %s", err)
                raise _malformed(
                    "the streamed reply was not in the chat-completion format"
                ) from None
    return assembler.completion()


# -- reading an answer ------------------------------------------------------------------------------
def read_completion(data: JSONObject, native: bool, tool_names: list[str]) -> LLMResult:
    """An LLMResult from a ``chat.completion`` dict (both routes); ProviderError when empty."""
    choices = data.get("choices")
    if not choices:
        raise ProviderError.of(empty("the reply was empty (no choices)"))
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise _malformed("the reply was not a chat completion (its choice has no message)")
    text = message.get("content")
    if text is not None and not isinstance(text, str):
        text = str(text)
    if native:
        calls = []
        for index, call in enumerate(message.get("tool_calls") or []):
            function = (call.get("function") if isinstance(call, dict) else None) or {}
            arguments, raw, error = decode_arguments(function.get("arguments"))
            calls.append(
                ToolCall(
                    id=call.get("id") or f"call_{index}",
                    name=function.get("name") or "",
                    arguments=arguments,
                    raw_arguments=raw,
                    error=error,
                )
            )
    else:
        text, calls = parse_tool_calls_from_text(text, tool_names)
    usage = data.get("usage") or {}
    prompt = int(usage.get("prompt_tokens") or 0)
    completion = int(usage.get("completion_tokens") or 0)
    total = int(usage.get("total_tokens") or 0) or prompt + completion
    return LLMResult(
        text=text,
        tool_calls=calls,
        usage=LLMUsage(prompt, completion, total),
        finish_reason=choice.get("finish_reason"),
        native_tools=native,
    )


def price(model: str, usage: LLMUsage) -> float | None:
    """USD for a call from litellm's price map (a dict read), None when it has no price."""
    info = model_info(model)
    if not info:
        return None
    prompt = info.get("input_cost_per_token")
    completion = info.get("output_cost_per_token")
    if prompt is None and completion is None:
        return None
    return float(prompt or 0.0) * usage.prompt_tokens + float(completion or 0.0) * (
        usage.completion_tokens
    )

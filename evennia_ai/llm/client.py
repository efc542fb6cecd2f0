"""UnifiedLLMClient: one client for every model, over litellm, never blocking the reactor.

- **Any provider**: litellm model names (``openai/gpt-4o-mini``, ``ollama/llama3.1``,
  ``anthropic/...``), or ``openai/<anything>`` with an ``api_base`` for any OpenAI-compatible
  server. litellm is imported lazily, with ``LITELLM_LOCAL_MODEL_COST_MAP=True`` put in the
  environment first unless the user set it, so importing it fetches nothing from the internet.
- **Native tool calling by default**, also for models litellm does not know: its capability
  table answers False for ``openai/<unknown>``, which means "unknown", not "lacks tools". The
  JSON tool protocol (``default_fallback`` template, see :mod:`evennia_ai.llm.json_protocol`)
  is used only when ``EVENNIA_AI_MODEL_SETTINGS[model]["native_tools"]`` is False, or when
  litellm *knows* the model and lists it with ``supports_function_calling: False``.
- **Retries** on rate limits, 5xx, timeouts, connection errors and on empty or malformed
  answers (no choices, a body that is not JSON; a proxy hiccup as far as we can tell):
  ``EVENNIA_AI_MAX_RETRIES`` more attempts per model, waiting ``EVENNIA_AI_RETRY_BASE_DELAY``
  doubled per attempt, with jitter, capped at ``EVENNIA_AI_RETRY_MAX_DELAY``; a server's
  ``Retry-After`` is honoured up to that cap. Auth errors and other 4xx are not retried.
  litellm's own retries are switched off (``num_retries=0``, ``max_retries=0``) so the two
  never multiply. Then each model of ``EVENNIA_AI_FALLBACK_MODELS`` (or ``fallbacks=``) is
  tried in turn, with the same policy.
- **Never raises** for provider problems: an :class:`~evennia_ai.llm.types.LLMResult` with a
  short ``error`` and an ``error_kind`` comes back instead.
- **No thread per call**: every call is a coroutine (litellm's ``acompletion``) on the one
  model-call event loop (:mod:`evennia_ai.llm.aio`). ``complete()`` starts it through the
  module-level :data:`call_async` (tests swap it for a blocking call) and returns a Deferred
  that fires on the reactor thread; ``complete_sync()`` waits for it, from any thread but the
  reactor's; ``acomplete()`` is the coroutine itself. How many calls are in flight is bounded
  per endpoint (``EVENNIA_AI_MAX_CONCURRENT_CALLS``, or ``max_concurrent`` of a model in
  ``EVENNIA_AI_MODEL_SETTINGS``); calls beyond it wait their turn on the loop, costing nothing.
- **Offline**: with no model configured, or ``evennia_ai/offline``, the built-in
  :class:`~evennia_ai.llm.offline.OfflineModel` answers; litellm is not even imported.

Per-model options in ``EVENNIA_AI_MODEL_SETTINGS[model]``: ``native_tools`` (bool),
``api_base``, ``api_key`` and ``timeout`` (used for that model, e.g. a fallback on another
server), ``max_concurrent`` (calls in flight to its endpoint), ``context_window`` (its window) and, for Ollama models, ``num_ctx`` (sent with every
request: the window Ollama runs the model with, and the window the plugin fits requests to).

Example:
    from evennia_ai.llm.client import get_client

    d = get_client().complete(messages, tools=schemas, model="openai/gpt-4o-mini")
    d.addCallback(lambda result: result.tool_calls if result.ok else result.error)
"""

from __future__ import annotations

import asyncio
import copy
import importlib
import inspect
import json
import logging
import os
import random
import re
import threading
import time
from collections.abc import Callable, Sequence
from datetime import timezone
from email.utils import parsedate_to_datetime
from types import ModuleType
from typing import Any

from twisted.internet.defer import Deferred

from evennia_ai import conf
from evennia_ai.llm import aio, router
from evennia_ai.llm.json_protocol import (
    decode_arguments,
    parse_tool_calls_from_text,
    to_text_protocol,
)
from evennia_ai.llm.models import resolve_model
from evennia_ai.llm.offline import OfflineModel
from evennia_ai.llm.request_gate import check_contract, check_window
from evennia_ai.llm.served_windows import OLLAMA_PREFIXES
from evennia_ai.llm.threads import run_in_thread
from evennia_ai.llm.tokens import model_info
from evennia_ai.llm.types import RETRYABLE_KINDS, JSONObject, LLMResult, LLMUsage, ToolCall
from evennia_ai.utils import LOG_PREFIX, utcnow

logger = logging.getLogger(__name__)

#: How :meth:`UnifiedLLMClient.complete` starts its coroutine on the model-call loop (without
#: a running reactor, as in unit tests, it waits and returns a fired Deferred).
call_async = aio.call_async
#: Blocking work of the plugin's own (history compaction) that runs in its thread pool.
defer_to_thread = run_in_thread

#: Models to try after the main one: names, or one comma-separated string (as the setting).
Fallbacks = Sequence[str] | str | None

_litellm: ModuleType | None = None
_litellm_lock = threading.Lock()


def get_litellm() -> ModuleType:
    """Import litellm once, without letting it fetch its cost map from the internet."""
    global _litellm
    if _litellm is None:
        with _litellm_lock:
            if _litellm is None:
                os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
                import litellm

                litellm.suppress_debug_info = True  # no "Give Feedback" banner in server logs
                _litellm = litellm
    return _litellm


# What the plugin relies on in litellm beyond ``acompletion`` (pinned in pyproject.toml; checked
# by tests/unit/llm/test_litellm_contract.py and logged at server start by evennia_ai.startstop).
LITELLM_REQUIREMENT = "litellm[mcp]>=1.106.2,<1.107"
LITELLM_ATTRIBUTES = (
    "acompletion",
    "completion",
    "completion_cost",
    "cost_per_token",
    "model_cost",
    "register_model",
    "callbacks",
    "success_callback",
    "failure_callback",
    "suppress_debug_info",
    "provider_list",
)
# Exception classes classify_exception tells apart by name.
LITELLM_EXCEPTIONS = (
    "Timeout",
    "RateLimitError",
    "AuthenticationError",
    "PermissionDeniedError",
    "APIConnectionError",
    "BadRequestError",
    "NotFoundError",
    "UnprocessableEntityError",
    "ContextWindowExceededError",
    "UnsupportedParamsError",
    "ContentPolicyViolationError",
    "InternalServerError",
    "ServiceUnavailableError",
    "BadGatewayError",
)
# Routes the plugin names itself (``openai/`` at a custom api_base goes through ``hosted_vllm/``).
LITELLM_ROUTES = ("openai", "hosted_vllm", "ollama")


def litellm_contract_problems(litellm: ModuleType | None = None) -> list[str]:
    """What the installed litellm lacks of what the plugin relies on (empty when nothing).

    Args:
        litellm: The module to check (default: litellm, imported our way).
    """
    litellm = litellm if litellm is not None else get_litellm()
    problems = [f"litellm.{name}" for name in LITELLM_ATTRIBUTES if not hasattr(litellm, name)]
    problems += [
        f"the exception class litellm.{name}"
        for name in LITELLM_EXCEPTIONS
        if not isinstance(getattr(litellm, name, None), type)
    ]
    routes = {str(getattr(p, "value", p)) for p in getattr(litellm, "provider_list", None) or ()}
    problems += [f"the '{name}/' route" for name in LITELLM_ROUTES if name not in routes]
    return problems


# -- errors ------------------------------------------------------------------------------------
class ProviderError(Exception):
    """A classified provider failure (internal to the retry loop).

    Attributes:
        kind: One of :data:`~evennia_ai.llm.types.ERROR_KINDS`.
        retry_after: Seconds the server asked us to wait, if it said.
    """

    def __init__(self, kind: str, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.kind = kind
        self.retry_after = retry_after


_KIND_LABELS = {
    "timeout": "timeout",
    "rate_limit": "rate limited",
    "server": "server error",
    "malformed": "malformed answer",
    "auth": "authentication failed",
    "bad_request": "request refused",
    "empty": "empty answer",
    "connection": "could not connect",
    "context_overflow": "request over the window",
    "unknown": "call failed",
}
# litellm's labels before the message: its own class and the route's (``OpenAIException``,
# ``Hosted_vllmException`` for the route ``openai/`` models take at an api_base).
_PREFIX = re.compile(r"^(?:litellm\.)?[A-Za-z_]*(?:Error|Exception|Timeout)\s*[:-]\s*")
_DECODE_WORDS = re.compile(
    r"Expecting value|Expecting property name|Expecting ',' delimiter|Unterminated string|"
    r"Extra data|Invalid control character|JSONDecodeError|Received response -",
)


def _detail(err: Exception) -> str:
    """The useful part of a provider error message: one line, no class-name prefixes."""
    text = str(err).strip().splitlines()[0] if str(err).strip() else ""
    previous = None
    while previous != text:
        previous = text
        text = _PREFIX.sub("", text).strip()
    text = text.split(", Received response")[0].split(" Error_str:")[0]
    text = re.sub(r"^error - ", "", text)
    text = _json_error_message(text)
    return (text[:200] + "...") if len(text) > 200 else text


def _json_error_message(text: str) -> str:
    """The ``error.message`` of an OpenAI-style JSON error body, or ``text`` unchanged.

    The plain HTTP route passes the server's body through where the SDK parsed it.
    """
    start = text.find("{")
    if start < 0:
        return text
    try:
        body = json.loads(text[start:])
    except ValueError:
        return text
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else error
    if isinstance(message, str) and message.strip():
        return message.strip()  # what precedes the body is the route's exception label
    return text


def parse_retry_after(value: Any) -> float | None:
    """Seconds to wait from a ``Retry-After`` value: delay-seconds or an HTTP date (RFC 9110).

    A date in the past means at once (0.0); anything unreadable is None (our backoff applies).
    """
    if value is None:
        return None
    text = str(value).strip()
    if not text:
        return None
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    if when.tzinfo is None:  # an HTTP date is GMT; a malformed zone-less one is taken as such
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - utcnow()).total_seconds())


def _retry_after(err: Exception) -> float | None:
    """Seconds from a ``Retry-After`` (or ``retry-after-ms``) header on a provider error."""
    for holder in (err, getattr(err, "response", None)):
        for attribute in ("litellm_response_headers", "headers"):
            headers = getattr(holder, attribute, None)
            if not headers:
                continue
            try:
                millis = headers.get("retry-after-ms")
                if millis:
                    return float(millis) / 1000.0
                seconds = parse_retry_after(
                    headers.get("retry-after") or headers.get("Retry-After")
                )
            except (TypeError, ValueError, AttributeError):
                continue  # headers of an unexpected type: use our backoff
            if seconds is not None:
                return seconds
    return None


_CONNECTION_ERRORS = frozenset(
    {
        "APIConnectionError",
        "ConnectError",
        "ConnectionError",
        "ConnectionRefusedError",
        "RemoteProtocolError",
        # aiohttp, litellm's transport for async calls
        "ClientConnectorError",
        "ClientOSError",
        "ClientPayloadError",
        "ServerDisconnectedError",
    }
)
# litellm reports transport failures of its async (aiohttp) route as a 500 with these words.
_CONNECTION_WORDS = re.compile(
    r"^Connection error\.?$|Connection refused|Name or service not known|Server disconnected|"
    r"Cannot connect to host|ClientPayloadError|Response payload is not completed|"
    r"ServerDisconnectedError|ClientConnectorError"
)


_REQUEST_ERRORS = frozenset(
    {
        "BadRequestError",
        "NotFoundError",
        "UnprocessableEntityError",
        "ContextWindowExceededError",
        "UnsupportedParamsError",
        "ContentPolicyViolationError",
    }
)


def _class_names(err: BaseException | None) -> set[str]:
    """Class names of ``err`` and of the exceptions it was raised from (a few levels)."""
    names: set[str] = set()
    seen = 0
    while err is not None and seen < 5:
        names.update(cls.__name__ for cls in type(err).__mro__)
        err = err.__cause__ or err.__context__
        seen += 1
    return names


def classify_exception(err: Exception) -> ProviderError:
    """Map a litellm / openai / httpx exception to an error kind with a short message."""
    names = {cls.__name__ for cls in type(err).__mro__}
    status = getattr(err, "status_code", None)
    detail = _detail(err) or type(err).__name__
    if names & {"Timeout", "APITimeoutError", "TimeoutException", "ReadTimeout", "TimeoutError"}:
        kind = "timeout"
    elif "RateLimitError" in names or status == 429:
        kind = "rate_limit"
    elif names & {"RouterRateLimitError", "RouterRateLimitErrorBasic"}:
        # every deployment of a Router model is cooling down: wait, as for a rate limit
        cooldown = getattr(err, "cooldown_time", None)
        return ProviderError(
            "rate_limit",
            f"{_KIND_LABELS['rate_limit']}: every server of {getattr(err, 'model', 'the model')} "
            "is cooling down after failures",
            float(cooldown) if isinstance(cooldown, (int, float)) else None,
        )
    elif names & {"AuthenticationError", "PermissionDeniedError"} or status in (401, 403):
        kind = "auth"
    elif _class_names(err) & _CONNECTION_ERRORS or (
        status in (None, 500) and _CONNECTION_WORDS.search(detail)
    ):
        kind = "connection"  # litellm reports a refused connection as a 500
    elif _DECODE_WORDS.search(str(err)) and (status in (None, 200, 500)):
        kind = "malformed"  # litellm reports an unreadable 200 body as a 500
    elif names & _REQUEST_ERRORS or (isinstance(status, int) and 400 <= status < 500):
        kind = "bad_request"
    elif names & {"InternalServerError", "ServiceUnavailableError", "BadGatewayError"} or (
        isinstance(status, int) and status >= 500
    ):
        kind = "server"
    else:
        kind = "unknown"
    label = _KIND_LABELS[kind]
    if isinstance(status, int) and kind in ("server", "bad_request", "auth", "rate_limit"):
        label = f"{label} (HTTP {status})"
    return ProviderError(kind, f"{label}: {detail}", _retry_after(err))


# -- model capabilities ------------------------------------------------------------------------
def model_settings(model: str) -> JSONObject:
    """``EVENNIA_AI_MODEL_SETTINGS[model]`` (an empty dict when unset)."""
    value = conf.get_dict("EVENNIA_AI_MODEL_SETTINGS").get(model)
    return value if isinstance(value, dict) else {}


def uses_native_tools(model: str) -> bool:
    """Whether tools are sent natively to ``model`` (see the module docstring).

    The per-model setting wins. Otherwise only a model litellm *lists*
    (:func:`evennia_ai.llm.tokens.model_info`), with ``supports_function_calling`` explicitly
    False, gets the JSON protocol.
    """
    setting = model_settings(model).get("native_tools")
    if setting is not None:
        return bool(setting)
    get_litellm()  # imported our way (no cost-map download) before the map is read
    info = model_info(model)
    if info and info.get("supports_function_calling") is False:
        return False
    return True


# -- reading an answer -------------------------------------------------------------------------
def _native_calls(message: object) -> list[ToolCall]:
    calls: list[ToolCall] = []
    for index, call in enumerate(getattr(message, "tool_calls", None) or []):
        function = getattr(call, "function", None)
        name = getattr(function, "name", None) or ""
        arguments, raw, error = decode_arguments(getattr(function, "arguments", None))
        calls.append(
            ToolCall(
                id=getattr(call, "id", None) or f"call_{index}",
                name=name,
                arguments=arguments,
                raw_arguments=raw,
                error=error,
            )
        )
    return calls


def _read_response(response: object, native: bool, tool_names: list[str]) -> LLMResult:
    """An LLMResult from a litellm response; ProviderError for empty or unreadable ones."""
    choices = getattr(response, "choices", None)
    if not choices:
        raise ProviderError("empty", f"{_KIND_LABELS['empty']}: the provider returned no choices")
    choice = choices[0]
    message = getattr(choice, "message", None)
    if message is None:
        raise ProviderError("malformed", f"{_KIND_LABELS['malformed']}: the choice has no message")
    text = getattr(message, "content", None)
    if text is not None and not isinstance(text, str):
        text = str(text)
    if native:
        calls = _native_calls(message)
    else:
        text, calls = parse_tool_calls_from_text(text, tool_names)
    usage = getattr(response, "usage", None)
    prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
    completion = int(getattr(usage, "completion_tokens", 0) or 0)
    total = int(getattr(usage, "total_tokens", 0) or 0) or prompt + completion
    return LLMResult(
        text=text,
        tool_calls=calls,
        usage=LLMUsage(prompt, completion, total),
        finish_reason=getattr(choice, "finish_reason", None),
        native_tools=native,
    )


def _tool_names(tools: list[JSONObject] | None) -> list[str]:
    names = []
    for tool in tools or []:
        fn = tool.get("function", tool) if isinstance(tool, dict) else None
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            names.append(fn["name"])
    return names


def _check_request(messages: object, tools: object) -> str | None:
    """Why a request cannot be sent, or None. Catches caller bugs before any network."""
    if not isinstance(messages, list) or not messages:
        return "messages must be a non-empty list of chat messages"
    if not all(isinstance(m, dict) and m.get("role") for m in messages):
        return "every message must be a dict with a 'role'"
    if tools is not None and not (
        isinstance(tools, list) and all(isinstance(t, dict) for t in tools)
    ):
        return "tools must be a list of OpenAI-format tool schemas"
    return None


# -- the client --------------------------------------------------------------------------------
class UnifiedLLMClient:
    """One client for every model (see the module docstring). Safe to share between threads.

    Args:
        model: Model name; None reads ``EVENNIA_AI_MODEL`` at call time (empty: offline).
        api_base: Endpoint; None reads ``EVENNIA_AI_API_BASE``.
        api_key: Key; None reads ``EVENNIA_AI_API_KEY`` (empty: litellm's provider variables).
        timeout: Seconds per attempt; None reads ``EVENNIA_AI_TIMEOUT``.
        fallbacks: Models tried in order after the main one fails; None reads
            ``EVENNIA_AI_FALLBACK_MODELS``.
        max_retries: Retries per model; None reads ``EVENNIA_AI_MAX_RETRIES``.
        base_delay: First backoff in seconds; None reads ``EVENNIA_AI_RETRY_BASE_DELAY``.
        max_delay: Longest backoff in seconds; None reads ``EVENNIA_AI_RETRY_MAX_DELAY``.

    Attributes:
        in_flight: Calls running right now (retries and backoff included); none occupies a
            thread while it waits.
        limits: Calls in flight and waiting per endpoint (:class:`~evennia_ai.llm.aio
            .EndpointLimits`).
        sleep: The backoff sleep (``asyncio.sleep``); tests may replace it with a plain
            callable (its return value is awaited only when it is awaitable).
    """

    def __init__(
        self,
        model: str | None = None,
        api_base: str | None = None,
        api_key: str | None = None,
        timeout: float | None = None,
        fallbacks: Fallbacks = None,
        max_retries: int | None = None,
        base_delay: float | None = None,
        max_delay: float | None = None,
    ) -> None:
        self.model = model
        self.api_base = api_base
        self.api_key = api_key
        self.timeout = timeout
        self.fallbacks = fallbacks
        self.max_retries = max_retries
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.offline = OfflineModel()
        self.sleep: Callable[[float], object] = asyncio.sleep
        self.in_flight = 0
        self.limits = aio.EndpointLimits()
        self._limits_loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()

    # -- configuration -------------------------------------------------------------------------
    @staticmethod
    def _pick(*values: Any) -> Any:
        """The first value that is not None (settings are read untyped, hence Any)."""
        return next((v for v in values if v is not None), None)

    def resolve_model(self, model: str | None = None) -> str:
        """The model a call would use: per call, this client's, the setting, else offline."""
        return resolve_model(model or self.model)

    def fallback_models(self, primary: str, fallbacks: Fallbacks = None) -> list[str]:
        """Models to try after ``primary``, in order, without repeats."""
        chain = (
            self._pick(fallbacks, self.fallbacks, conf.get_texts("EVENNIA_AI_FALLBACK_MODELS"))
            or []
        )
        if isinstance(chain, str):
            chain = [part.strip() for part in chain.split(",")]
        out: list[str] = []
        for name in chain:
            if isinstance(name, str) and name and name != primary and name not in out:
                out.append(name)
        return out

    def backoff(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``attempt`` (1-based).

        Exponential (base doubled per attempt) with "equal jitter" (half fixed, half random) so
        many NPCs hitting the same rate limit do not retry in step; a server's retry-after is
        honoured when longer; everything is capped by the max delay.
        """
        base = float(self._pick(self.base_delay, conf.get_float("EVENNIA_AI_RETRY_BASE_DELAY")))
        cap = float(self._pick(self.max_delay, conf.get_float("EVENNIA_AI_RETRY_MAX_DELAY")))
        delay = min(cap, base * 2.0 ** (attempt - 1))
        delay *= 0.5 + random.random() / 2
        if retry_after is not None:
            delay = max(delay, retry_after)
        return max(0.0, min(cap, delay))

    # -- calls ---------------------------------------------------------------------------------
    def complete(
        self, messages: list[JSONObject], tools: list[JSONObject] | None = None, **options: Any
    ) -> Deferred[LLMResult]:
        """:meth:`acomplete` on the model-call loop (same arguments). Returns a Deferred firing
        with an LLMResult on the reactor thread."""
        return call_async(self.acomplete, messages, tools, **options)

    async def acomplete(
        self,
        messages: list[JSONObject],
        tools: list[JSONObject] | None = None,
        *,
        model: str | None = None,
        api_base: str | None = None,
        api_key: str | None = None,
        timeout: float | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        tick_rate: float | None = None,
        fallbacks: Fallbacks = None,
        response_format: JSONObject | None = None,
        kind: str | None = None,
        prompt_tokens: int | None = None,
        caller: str = "",
    ) -> LLMResult:
        """Call the model, with retries and fallbacks; never raises (but see ``kind``).

        A coroutine of the model-call loop (:mod:`evennia_ai.llm.aio`); :meth:`complete` and
        :meth:`complete_sync` run it there.

        Every request passes the request gate (:mod:`evennia_ai.llm.request_gate`) first: one
        that does not fit a model's window with the reply reserved is not sent to that model
        (``error_kind="context_overflow"``).

        Args:
            messages: OpenAI-format chat messages.
            tools: OpenAI-format tool schemas, or None.
            model: This call's model (an NPC's own model); None uses the client's.
            api_base: Endpoint for this call (all models of the call).
            api_key: Key for this call.
            timeout: Seconds per attempt for this call.
            temperature: Sampling temperature, when given.
            max_tokens: Most tokens in the answer, when given.
            tick_rate: Seconds between ticks, shown in the JSON-protocol prompt; None reads
                ``EVENNIA_AI_TICK_INTERVAL``.
            fallbacks: Models to try after this one fails; None uses the client's/settings'.
            response_format: OpenAI's ``response_format`` (e.g. ``{"type": "json_object"}``),
                passed on; litellm drops it for providers without it.
            kind: The kind of call (a key of
                :data:`~evennia_ai.llm.contracts.CALL_CONTRACTS`): the request is checked
                against its contract. A violation is logged and counted, and with
                ``EVENNIA_AI_STRICT_CONTRACTS`` raises ContractViolation.
            prompt_tokens: The request's tokens when the caller already counted them
                (messages and tools as sent); None counts them here.
            caller: Who the call is for, as log lines start (``evennia_ai [Marta#12]``, see
                :func:`~evennia_ai.utils.log_prefix`); the retry and fallback lines name it.

        Returns:
            The :class:`LLMResult` of the first model that answered, else of the last failure
            (its ``error`` then names every model that failed).
        """
        check_contract(kind, messages)
        with self._lock:
            self.in_flight += 1
        try:
            return await self._timed(
                messages,
                tools,
                model=model,
                fallbacks=fallbacks,
                api_base=api_base,
                api_key=api_key,
                timeout=timeout,
                temperature=temperature,
                max_tokens=max_tokens,
                tick_rate=tick_rate,
                response_format=response_format,
                prompt_tokens=prompt_tokens,
                caller=caller or LOG_PREFIX,
            )
        finally:
            with self._lock:
                self.in_flight -= 1

    def complete_sync(
        self, messages: list[JSONObject], tools: list[JSONObject] | None = None, **options: Any
    ) -> LLMResult:
        """:meth:`acomplete` (same arguments), waited for: the blocking call, for threads
        (mem0's, scripts, benchmarks). Never on the reactor thread (it would stall the game)
        nor on the model-call loop's own thread."""
        return aio.run_sync(self.acomplete, messages, tools, **options)

    async def _timed(
        self,
        messages: list[JSONObject],
        tools: list[JSONObject] | None,
        *,
        model: str | None,
        **options: Any,
    ) -> LLMResult:
        """:meth:`_complete` with its latency measured and any bug of ours turned into a result."""
        try:
            if self.resolve_model(model) != conf.OFFLINE_MODEL and _litellm is None:
                # The one-time import (seconds) runs in a thread: not on the loop, and not
                # this call's latency.
                await asyncio.get_running_loop().run_in_executor(None, get_litellm)
        except Exception:
            pass  # _call_model reports it
        started = time.monotonic()
        try:
            result = await self._complete(messages, tools, model=model, **options)
        except Exception as err:  # a bug of ours, not a provider problem: report, don't raise
            logger.exception("evennia_ai: unexpected error in the LLM client")
            result = LLMResult(
                error=f"internal error: {type(err).__name__}: {err}",
                error_kind="unknown",
                model=str(model or self.model or ""),
            )
        result.latency = round(time.monotonic() - started, 4)
        return result

    async def _complete(
        self,
        messages: list[JSONObject],
        tools: list[JSONObject] | None,
        *,
        model: str | None,
        fallbacks: Fallbacks,
        caller: str,
        prompt_tokens: int | None = None,
        **options: Any,
    ) -> LLMResult:
        """The main model, then each fallback that the request fits, until one answers.

        Moving on to a fallback is logged (as ``caller``), with the model left and why.
        """
        primary = self.resolve_model(model)
        problem = _check_request(messages, tools)
        if problem:
            return LLMResult(
                error=f"bad request: {problem}", error_kind="bad_request", model=primary
            )
        chain = [primary] + self.fallback_models(primary, fallbacks)
        attempts = 0
        failures: list[str] = []
        result = LLMResult()
        for position, name in enumerate(chain):
            window = None
            if name != conf.OFFLINE_MODEL:
                window = check_window(
                    name,
                    messages,
                    tools,
                    max_tokens=options.get("max_tokens"),
                    prompt_tokens=prompt_tokens if position == 0 else None,
                )
            if window is not None and not window.fits:
                result = LLMResult(
                    error=window.describe(),
                    error_kind="context_overflow",
                    model=name,
                    attempts=0,
                )
            else:
                result = await self._call_model(name, messages, tools, caller=caller, **options)
            attempts += result.attempts
            result.fallback_used = position > 0
            if result.ok:
                break
            failures.append(f"{name}: {result.error}")
            if position + 1 < len(chain):
                logger.warning(
                    "%s: model %s failed (%s); trying fallback %s",
                    caller,
                    name,
                    result.error,
                    chain[position + 1],
                )
        if not result.ok and len(failures) > 1:
            result.error = "every model failed - " + "; ".join(failures)
        result.attempts = attempts
        return result

    async def _call_model(
        self,
        model: str,
        messages: list[JSONObject],
        tools: list[JSONObject] | None,
        *,
        caller: str,
        **options: Any,
    ) -> LLMResult:
        """One model with its retries (each logged as ``caller``, with the reason)."""
        if model == conf.OFFLINE_MODEL:
            return self.offline.respond(messages, tools)
        started = time.monotonic()
        try:
            native = uses_native_tools(model)
        except Exception as err:  # litellm missing or broken
            return LLMResult(
                error=f"litellm is not usable: {type(err).__name__}: {err}",
                error_kind="unknown",
                model=model,
                attempts=0,
            )
        max_retries = max(
            0, int(self._pick(self.max_retries, conf.get_int("EVENNIA_AI_MAX_RETRIES")))
        )
        attempt = 0
        while True:
            attempt += 1
            try:
                result = await self._request(model, messages, tools, native, **options)
            except ProviderError as err:
                if err.kind in RETRYABLE_KINDS and attempt <= max_retries:
                    delay = self.backoff(attempt, err.retry_after)
                    logger.warning(
                        "%s: model %s failed (%s); retry %d of %d in %.1f s",
                        caller,
                        model,
                        err,
                        attempt,
                        max_retries,
                        delay,
                    )
                    pause = self.sleep(delay)
                    if inspect.isawaitable(pause):
                        await pause
                    continue
                return LLMResult(
                    error=str(err),
                    error_kind=err.kind,
                    model=model,
                    attempts=attempt,
                    native_tools=native,
                    latency=time.monotonic() - started,
                )
            result.attempts = attempt
            result.model = model
            result.latency = time.monotonic() - started
            return result

    async def _request(
        self,
        model: str,
        messages: list[JSONObject],
        tools: list[JSONObject] | None,
        native: bool,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        timeout: float | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        tick_rate: float | None = None,
        response_format: JSONObject | None = None,
    ) -> LLMResult:
        """One HTTP attempt (through the Router for its model names). Raises ProviderError for
        anything that went wrong."""
        litellm = get_litellm()
        per_model = model_settings(model)
        routed = model in router.routed_names()
        if not routed and "/" not in model and conf.get_optional_dict("EVENNIA_AI_ROUTER"):
            try:  # a name without a provider may be meant for a Router that cannot be built
                router.get_router(litellm, _compatible_route)
            except router.RouterConfigError as err:
                raise ProviderError("bad_request", f"{model} is no Router model: {err}") from None
        kwargs: dict[str, Any] = {
            "model": model,
            "timeout": float(
                self._pick(
                    timeout,
                    per_model.get("timeout"),
                    self.timeout,
                    conf.get_float("EVENNIA_AI_TIMEOUT"),
                )
            ),
            "num_retries": 0,  # we retry ourselves; theirs would multiply ours
            "max_retries": 0,
            "drop_params": True,  # e.g. temperature on models that refuse it
        }
        base = (
            api_base
            or per_model.get("api_base")
            or self.api_base
            or conf.get_str("EVENNIA_AI_API_BASE")
        )
        key = (
            api_key
            or per_model.get("api_key")
            or self.api_key
            or conf.get_str("EVENNIA_AI_API_KEY")
        )
        if routed:  # the deployments carry their servers and keys; the Router retries itself
            base = None
            for name in ("num_retries", "max_retries"):
                kwargs.pop(name)
        elif base:
            kwargs["api_base"] = base
            kwargs["model"] = _compatible_route(model)
            kwargs["api_key"] = key or "not-needed"  # local servers ignore it; SDKs want one
        elif key:
            kwargs["api_key"] = key
        if temperature is not None:
            kwargs["temperature"] = temperature
        if per_model.get("num_ctx") and model.startswith(OLLAMA_PREFIXES):
            kwargs["num_ctx"] = per_model["num_ctx"]  # Ollama's window for this request
        if max_tokens is not None:
            kwargs["max_tokens"] = max_tokens
        if response_format is not None:
            kwargs["response_format"] = response_format  # dropped where a provider has none
        json_protocol = bool(tools) and not native
        if json_protocol:
            rate = tick_rate if tick_rate is not None else conf.get_int("EVENNIA_AI_TICK_INTERVAL")
            kwargs["messages"] = to_text_protocol(messages, tools, rate)
        else:
            kwargs["messages"] = messages
            if tools:
                # litellm's OpenAI-compatible route edits schemas in place (it drops
                # additionalProperties): give it a copy, never the tool registry's own dicts.
                kwargs["tools"] = copy.deepcopy(tools)
        if routed:
            try:
                send = router.get_router(litellm, _compatible_route).acompletion
            except router.RouterConfigError as err:
                raise ProviderError("bad_request", str(err)) from None
            endpoint = f"router:{model}"
            limit = router.group_limit(model, _max_concurrent(per_model))
        else:
            send, endpoint, limit = (
                litellm.acompletion,
                _endpoint(model, base),
                _max_concurrent(per_model),
            )
        try:
            async with self._limits().slot(endpoint, limit):
                response = await send(**kwargs)
        except Exception as err:
            error = classify_exception(err)
            if error.kind == "timeout":
                seconds = kwargs["timeout"]
                error = ProviderError("timeout", f"timeout: no answer within {seconds:g} s")
            elif kwargs["model"] != model:  # name the model as the operator did, not its route
                text = str(error).replace(kwargs["model"], model)
                error = ProviderError(error.kind, text, error.retry_after)
            raise error from None
        try:
            result = _read_response(response, not json_protocol, _tool_names(tools))
        except ProviderError:
            raise
        except Exception as err:
            raise ProviderError("malformed", f"{_KIND_LABELS['malformed']}: {err}") from None
        result.native_tools = not json_protocol
        result.cost = _price(litellm, response, model, result)
        try:
            result.raw = response.model_dump()
        except Exception:
            result.raw = None
        return result

    def _limits(self) -> aio.EndpointLimits:
        """The endpoint limits of the running loop (new ones if the loop was restarted)."""
        loop = asyncio.get_running_loop()
        if self._limits_loop is not loop:
            self.limits, self._limits_loop = aio.EndpointLimits(), loop
        return self.limits


def _endpoint(model: str, api_base: str | None) -> str:
    """What a concurrency limit counts against: the server, else the provider."""
    if api_base:
        return str(api_base).rstrip("/")
    return model.split("/", 1)[0] if "/" in model else "default"


def _max_concurrent(per_model: JSONObject) -> int:
    """Calls in flight allowed to a model's endpoint (its own setting, else the server's)."""
    value = per_model.get("max_concurrent") or conf.get_int("EVENNIA_AI_MAX_CONCURRENT_CALLS")
    try:
        return max(1, int(value))
    except (TypeError, ValueError):
        return 1


#: Models litellm had no price for, with the size of its price table then: asking again costs
#: about 1 ms of CPU per call (litellm tries every generalisation of the name) and gives the
#: same answer until a price is registered (the table grows).
_UNPRICED: dict[str, int] = {}


def _price(litellm: ModuleType, response: object, model: str, result: LLMResult) -> float | None:
    """The call's cost in USD by the model name the operator gave, or None if litellm has no
    price for it (the request may have gone through a renamed route, see _compatible_route)."""
    prices = len(getattr(litellm, "model_cost", None) or ())
    if _UNPRICED.get(model) == prices:
        return None
    try:
        prompt, completion = litellm.cost_per_token(
            model=model,
            prompt_tokens=result.usage.prompt_tokens,
            completion_tokens=result.usage.completion_tokens,
        )
        return float(prompt) + float(completion)
    except Exception:
        pass
    try:
        return float(litellm.completion_cost(completion_response=response))
    except Exception:  # litellm does not know the model's price
        _UNPRICED[model] = prices
        return None


def _compatible_route(model: str) -> str:
    """The litellm route for ``model`` at a custom ``api_base``.

    ``openai/<name>`` at an operator's own endpoint (vLLM, a litellm proxy, Ollama's OpenAI API,
    the test double) goes through litellm's plain HTTP route for OpenAI-compatible servers
    (``hosted_vllm/``) instead of the OpenAI SDK, which re-validates every request in Python
    (about 15 ms and as much CPU per call for a full NPC context). Same protocol, same answer;
    ``EVENNIA_AI_OPENAI_SDK_ROUTE = True`` keeps the SDK.
    """
    if model.startswith("openai/") and not conf.get_bool("EVENNIA_AI_OPENAI_SDK_ROUTE"):
        return "hosted_vllm/" + model[len("openai/") :]
    return model


_CLIENT: UnifiedLLMClient | None = None


def get_client() -> UnifiedLLMClient:
    """The shared client. Settings are read at call time, so one instance serves every NPC."""
    global _CLIENT
    if _CLIENT is None:
        _CLIENT = UnifiedLLMClient()
    return _CLIENT


# -- litellm callbacks -------------------------------------------------------------------------
# Settings entry -> the callback object installed for it, so a second run adds nothing.
_INSTALLED_CALLBACKS: dict[str, Any] = {}


def _load_callback(entry: object) -> object:
    """A callback object from a settings entry (a name, a dotted path, or an object)."""
    if not isinstance(entry, str) or "." not in entry:
        return entry  # an object, or a litellm integration name such as "langfuse"
    module_path, _, attribute = entry.rpartition(".")
    target = getattr(importlib.import_module(module_path), attribute)
    return target() if isinstance(target, type) else target


def configure_litellm_callbacks() -> list[object]:
    """Install ``EVENNIA_AI_LITELLM_CALLBACKS`` into litellm. Idempotent.

    Entries are litellm integration names (``"langfuse"``, ``"otel"``, ...), which join
    ``litellm.success_callback`` and ``litellm.failure_callback``, or dotted paths to a
    ``CustomLogger`` instance or class (a class is instantiated once), or such objects
    themselves, which join ``litellm.callbacks``. Plain ``importlib`` is used, so it works
    without Django. An entry that cannot be imported is logged and skipped.

    Returns:
        The callbacks added by this call (empty when everything was already installed).
    """
    entries = conf.get_list("EVENNIA_AI_LITELLM_CALLBACKS")  # a text: comma-separated names
    if not entries:
        return []
    litellm: Any = get_litellm()  # a module whose callback lists are assigned below
    added: list[object] = []
    for entry in entries:
        if isinstance(entry, str) and "." not in entry:
            success = list(getattr(litellm, "success_callback", None) or [])
            failure = list(getattr(litellm, "failure_callback", None) or [])
            if entry in success and entry in failure:
                continue
            if entry not in success:
                litellm.success_callback = success + [entry]
            if entry not in failure:
                litellm.failure_callback = failure + [entry]
            added.append(entry)
            continue
        current = list(getattr(litellm, "callbacks", None) or [])
        known = _INSTALLED_CALLBACKS.get(entry) if isinstance(entry, str) else entry
        if known is not None and any(c is known for c in current):
            continue
        try:
            callback = _load_callback(entry)
        except Exception as err:
            logger.error("evennia_ai: litellm callback %r could not be loaded: %s", entry, err)
            continue
        if isinstance(entry, str):
            _INSTALLED_CALLBACKS[entry] = callback
        litellm.callbacks = current + [callback]
        added.append(callback)
    return added

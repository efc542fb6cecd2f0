"""UnifiedLLMClient: one client for every model, never blocking the reactor.

- **Any provider**: litellm model names (``openai/gpt-4o-mini``, ``ollama/llama3.1``,
  ``anthropic/...``), or ``openai/<anything>`` with an ``api_base`` for any OpenAI-compatible
  server. **Two routes** under one set of rules (retries, fallbacks, limits, error kinds,
  usage): OpenAI-compatible servers are called directly over aiohttp
  (:mod:`evennia_ai.llm.openai_wire`, about 0.3 ms of CPU a call), every other provider through
  litellm (:mod:`evennia_ai.llm.litellm_route`); ``EVENNIA_AI_LITELLM_MODELS`` sends chosen
  models through litellm. See docs/providers.md.
- **Streaming** with ``on_delta`` (see :meth:`UnifiedLLMClient.acomplete`), on both routes.
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
  never multiply. A streamed attempt that fails after a piece reached ``on_delta`` is neither
  retried nor followed by a fallback model (the player may have seen it). Then each model of ``EVENNIA_AI_FALLBACK_MODELS`` (or ``fallbacks=``) is
  tried in turn, with the same policy.
- **Never raises** for provider problems: an :class:`~evennia_ai.llm.types.LLMResult` with a
  short ``error`` and an ``error_kind`` comes back instead.
- **No thread per call**: every call is a coroutine on the one
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
import importlib
import inspect
import logging
import random
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from twisted.internet.defer import Deferred

from evennia_ai import conf
from evennia_ai.llm import aio, litellm_route, openai_wire, router
from evennia_ai.llm.errors import ProviderError, malformed, words
from evennia_ai.llm.json_protocol import to_text_protocol
from evennia_ai.llm.litellm_route import LITELLM_ATTRIBUTES as LITELLM_ATTRIBUTES
from evennia_ai.llm.litellm_route import LITELLM_EXCEPTIONS as LITELLM_EXCEPTIONS
from evennia_ai.llm.litellm_route import LITELLM_REQUIREMENT as LITELLM_REQUIREMENT
from evennia_ai.llm.litellm_route import LITELLM_ROUTES as LITELLM_ROUTES
from evennia_ai.llm.litellm_route import _compatible_route as _compatible_route
from evennia_ai.llm.litellm_route import _price
from evennia_ai.llm.litellm_route import classify_exception as classify_exception
from evennia_ai.llm.litellm_route import get_litellm as get_litellm
from evennia_ai.llm.litellm_route import litellm_contract_problems as litellm_contract_problems
from evennia_ai.llm.models import resolve_model
from evennia_ai.llm.offline import OfflineModel
from evennia_ai.llm.openai_wire import parse_retry_after as parse_retry_after
from evennia_ai.llm.request_gate import check_contract, check_window
from evennia_ai.llm.served_windows import OLLAMA_PREFIXES
from evennia_ai.llm.threads import run_in_thread
from evennia_ai.llm.tokens import model_info
from evennia_ai.llm.types import (
    RETRYABLE_KINDS,
    JSONObject,
    LLMResult,
    StreamDelta,
    StreamSink,
    ToolCallDelta,
)
from evennia_ai.utils import LOG_PREFIX

logger = logging.getLogger(__name__)

#: How :meth:`UnifiedLLMClient.complete` starts its coroutine on the model-call loop (without
#: a running reactor, as in unit tests, it waits and returns a fired Deferred).
call_async = aio.call_async
#: Blocking work of the plugin's own (history compaction) that runs in its thread pool.
defer_to_thread = run_in_thread

#: Models to try after the main one: names, or one comma-separated string (as the setting).
Fallbacks = Sequence[str] | str | None


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
        supports_streaming: Its calls take ``on_delta`` and stream the reply through it (a
            client without this attribute, or with it False, is never asked to stream).
    """

    supports_streaming = True

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
        on_delta: StreamSink | None = None,
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
            on_delta: Streams the answer: called with each piece
                (:class:`~evennia_ai.llm.types.StreamDelta`), in order, on the model-call loop's
                thread (a consumer that touches the game hands it to the reactor with
                ``reactor.callFromThread``). The result is the same as without it (assembled
                text and tool calls, exact usage, cost, ``raw``). A consumer that raises is
                logged once and not called again; the call goes on. An attempt that fails after
                a piece was handed over is not retried (the player may have seen it): the
                fallback models are still tried, and their pieces follow.

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
                on_delta=on_delta,
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
            if self.resolve_model(model) != conf.OFFLINE_MODEL and not litellm_route.loaded():
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
            detail = words(err)
            result = LLMResult(
                error="the call failed: an internal error of the plugin"
                + (f" ({detail})" if detail else "")
                + "; the server log has the traceback",
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
                error=f"the request is not valid: {problem}",
                error_kind="bad_request",
                model=primary,
            )
        chain = [primary] + self.fallback_models(primary, fallbacks)
        if options.get("on_delta") is not None:  # one sink for the whole call (see acomplete)
            options["on_delta"] = sink = openai_wire.Sink(options["on_delta"])
        else:
            sink = None
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
            if sink is not None and sink.handed:
                break  # the player may have seen part of this answer: no other model's after it
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
            answer = self.offline.respond(messages, tools)
            on_delta = options.get("on_delta")
            if on_delta is not None and answer.ok:  # the whole answer as one piece
                on_delta(
                    StreamDelta(
                        content=answer.text or "",
                        tool_calls=tuple(
                            ToolCallDelta(i, call.name, call.raw_arguments)
                            for i, call in enumerate(answer.tool_calls)
                        ),
                    )
                )
            return answer
        started = time.monotonic()
        try:
            native = uses_native_tools(model)
        except Exception as err:  # litellm missing or broken
            logger.debug("evennia_ai: litellm could not be used", exc_info=True)
            detail = words(err)
            return LLMResult(
                error="the call failed: litellm could not be loaded"
                + (f" ({detail})" if detail else ""),
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
                # once a piece was handed to on_delta the player may have seen it: no retry
                if err.kind in RETRYABLE_KINDS and attempt <= max_retries and not err.streamed:
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

    def base_for(
        self, model: str, api_base: str | None = None, per_model: JSONObject | None = None
    ) -> str | None:
        """The endpoint a call of ``model`` goes to: ``api_base`` given for the call, else the
        model's own in ``EVENNIA_AI_MODEL_SETTINGS`` (``per_model``: already read), the
        client's, or ``EVENNIA_AI_API_BASE``."""
        per_model = model_settings(model) if per_model is None else per_model
        return (
            api_base
            or per_model.get("api_base")
            or self.api_base
            or conf.get_str("EVENNIA_AI_API_BASE")
        )

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
        on_delta: StreamSink | None = None,
    ) -> LLMResult:
        """One attempt, on the lean route or litellm's (through a Router for its model names).
        Raises ProviderError for anything that went wrong."""
        per_model = model_settings(model)
        routed = model in router.routed_names()
        seconds = float(
            self._pick(
                timeout,
                per_model.get("timeout"),
                self.timeout,
                conf.get_float("EVENNIA_AI_TIMEOUT"),
            )
        )
        base = self.base_for(model, api_base, per_model)
        key = (
            api_key
            or per_model.get("api_key")
            or self.api_key
            or conf.get_str("EVENNIA_AI_API_KEY")
        )
        json_protocol = bool(tools) and not native
        if json_protocol:
            rate = tick_rate if tick_rate is not None else conf.get_int("EVENNIA_AI_TICK_INTERVAL")
            sent, sent_tools = to_text_protocol(messages, tools, rate), None
        else:
            sent, sent_tools = messages, tools
        options: JSONObject = {
            "temperature": temperature,
            "max_tokens": max_tokens,
            "response_format": response_format,
        }
        if routed:
            try:
                lean_router = router.lean_group(model)
            except router.RouterConfigError as err:
                raise ProviderError("bad_request", str(err)) from None
            if lean_router is not None:
                limit = router.lean_group_limit(model, _max_concurrent(per_model))
                async with self._limits().slot(f"router:{model}", limit):
                    data, priced_as = await self._lean_routed(
                        lean_router, model, sent, sent_tools, options, seconds, on_delta
                    )
                return self._result(data, json_protocol, tools, priced_as, model)
        else:  # None for every provider but OpenAI-compatible servers (see lean_endpoint)
            endpoint = openai_wire.lean_endpoint(model, base, key)
            if endpoint is not None:
                body = openai_wire.request_body(
                    endpoint.model, sent, sent_tools, stream=on_delta is not None, **options
                )
                async with self._limits().slot(_endpoint(model, base), _max_concurrent(per_model)):
                    data = await openai_wire.post_chat(endpoint, body, seconds, on_delta)
                return self._result(data, json_protocol, tools, model, model)
        return await self._litellm_request(
            model,
            per_model,
            routed,
            base,
            key,
            seconds,
            sent,
            sent_tools,
            options,
            on_delta,
            json_protocol,
            tools,
        )

    async def _lean_routed(
        self,
        lean_router: router.LeanRouter,
        name: str,
        messages: list[JSONObject],
        tools: list[JSONObject] | None,
        options: JSONObject,
        seconds: float,
        on_delta: StreamSink | None,
        fallbacks: bool = True,
    ) -> tuple[JSONObject, str]:
        """One call to a model name the plugin routes (see :mod:`.router`): the answer and the
        model name it is priced by."""
        tried: set[int] = set()
        error: ProviderError | None = None
        for _attempt in range(lean_router.num_retries + 1):
            deployment = lean_router.pick(name, tried)
            if deployment is None:
                error = error or lean_router.cooling_error(name)
                break
            tried.add(id(deployment))
            endpoint = deployment.endpoint
            body = openai_wire.request_body(
                endpoint.model, messages, tools, stream=on_delta is not None, **options
            )
            deployment.in_flight += 1
            try:
                data = await openai_wire.post_chat(
                    endpoint, body, deployment.timeout or seconds, on_delta
                )
            except ProviderError as err:
                if err.kind in router.FAILURE_KINDS:
                    lean_router.failed(deployment, f"{err.kind}: {err}")
                if err.streamed or err.kind not in RETRYABLE_KINDS:
                    raise
                error = err
                continue
            finally:
                deployment.in_flight -= 1
            deployment.failures.clear()
            return data, deployment.model
        if fallbacks:
            for other in lean_router.fallbacks.get(name, []):
                if other in lean_router.groups:
                    try:
                        return await self._lean_routed(
                            lean_router, other, messages, tools, options, seconds, on_delta, False
                        )
                    except ProviderError as err:
                        if err.streamed:
                            raise
                        error = err
        assert error is not None
        raise error

    async def _litellm_request(
        self,
        model: str,
        per_model: JSONObject,
        routed: bool,
        base: str | None,
        key: str | None,
        seconds: float,
        messages: list[JSONObject],
        tools: list[JSONObject] | None,
        options: JSONObject,
        on_delta: StreamSink | None,
        json_protocol: bool,
        offered: list[JSONObject] | None,
    ) -> LLMResult:
        """One attempt through litellm (:mod:`.litellm_route`)."""
        litellm = get_litellm()
        if not routed and "/" not in model and conf.get_optional_dict("EVENNIA_AI_ROUTER"):
            try:  # a name without a provider may be meant for a Router that cannot be built
                router.get_router(litellm, _compatible_route)
            except router.RouterConfigError as err:
                raise ProviderError("bad_request", f"{model} is no Router model: {err}") from None
        num_ctx = per_model.get("num_ctx") if model.startswith(OLLAMA_PREFIXES) else None
        kwargs = litellm_route.request_kwargs(
            model,
            seconds,
            routed=routed,
            base=None if routed else base,
            key=key,
            num_ctx=num_ctx,
            messages=messages,
            tools=tools,
            **options,
        )
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
                data, response = await litellm_route.send(send, kwargs, on_delta)
        except Exception as err:
            error = litellm_route.call_error(err, kwargs, model)
            error.streamed = isinstance(on_delta, openai_wire.Sink) and on_delta.handed
            raise error from None
        result = self._result(data, json_protocol, offered, model, model)
        if response is not None:  # a whole answer: litellm's own price, as before
            result.cost = _price(litellm, response, model, result)
        return result

    @staticmethod
    def _result(
        data: JSONObject,
        json_protocol: bool,
        tools: list[JSONObject] | None,
        priced_as: str,
        model: str,
    ) -> LLMResult:
        """An LLMResult from an answer dict; ProviderError when it holds none."""
        try:
            result = openai_wire.read_completion(data, not json_protocol, _tool_names(tools))
        except ProviderError:
            raise
        except Exception as err:
            logger.debug("evennia_ai: %s's answer could not be read", model, exc_info=True)
            detail = words(err)
            raise ProviderError.of(
                malformed(
                    "the reply was not a chat completion" + (f" ({detail})" if detail else "")
                )
            ) from None
        result.native_tools = not json_protocol
        result.cost = openai_wire.price(priced_as, result.usage)
        if result.cost is None and priced_as != model:
            result.cost = openai_wire.price(model, result.usage)
        result.raw = data
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
            logger.error(
                "evennia_ai: litellm callback %s could not be loaded: %s",
                entry if isinstance(entry, str) else type(entry).__name__,
                words(err) or "no reason given (the debug log has the traceback)",
            )
            logger.debug("evennia_ai: loading litellm callback %s", entry, exc_info=True)
            continue
        if isinstance(entry, str):
            _INSTALLED_CALLBACKS[entry] = callback
        litellm.callbacks = current + [callback]
        added.append(callback)
    return added

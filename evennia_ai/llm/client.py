"""UnifiedLLMClient: one client for every model, over litellm, never blocking the reactor.

- **Any provider**: litellm model names (``openai/gpt-4o-mini``, ``ollama/llama3.1``,
  ``anthropic/...``, or ``openai/<anything>`` with ``api_base`` for any OpenAI-compatible
  server). litellm is imported lazily, with ``LITELLM_LOCAL_MODEL_COST_MAP=True`` set first
  unless the user set it, so nothing is fetched from the internet.
- **Native tool calling by default**, also for models litellm does not know (its capability
  table says False for ``openai/<unknown>``; that is not taken as "lacks tools"). The JSON
  protocol of the ``default_fallback`` template is used when ``EVENNIA_AI_MODEL_SETTINGS[model]
  ["native_tools"]`` is False, or when litellm *knows* the model and lists it without function
  calling.
- **Retries** on rate limits, 5xx, timeouts, connection errors, empty and malformed answers:
  ``EVENNIA_AI_MAX_RETRIES`` per model with exponential backoff and jitter
  (``EVENNIA_AI_RETRY_BASE_DELAY`` doubling, capped at ``EVENNIA_AI_RETRY_MAX_DELAY``; a
  server's ``retry-after`` is honoured up to that cap). 4xx errors such as a bad key are not
  retried. Then each model of ``EVENNIA_AI_FALLBACK_MODELS`` is tried in order.
- **Never raises** for provider problems: an :class:`~evennia_ai.llm.types.LLMResult` with
  ``error``/``error_kind`` comes back instead.
- ``complete()`` runs the blocking call in a thread (``threads.deferToThread``) and returns a
  Deferred; ``complete_sync()`` is the blocking call itself (for threads and benchmarks).
- No model configured (or ``evennia_ai/offline``): the offline model answers, no litellm.
"""

from __future__ import annotations

import importlib
import os
import random
import time
from typing import Any

from twisted.internet import threads

from evennia_ai import conf
from evennia_ai.llm.json_protocol import parse_tool_calls_from_text, render_tool_schemas
from evennia_ai.llm.offline import OfflineModel
from evennia_ai.llm.types import RETRYABLE_KINDS, LLMResult, LLMUsage, ToolCall

# Tests replace this with a synchronous call; production uses Twisted's thread pool.
defer_to_thread = threads.deferToThread

_litellm = None


def get_litellm():
    """Import litellm once, offline-safe."""
    global _litellm
    if _litellm is None:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm

        litellm.suppress_debug_info = True
        litellm.drop_params = True
        _litellm = litellm
    return _litellm


class ProviderError(Exception):
    """A classified provider failure (internal to the retry loop)."""

    def __init__(self, kind: str, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.kind = kind
        self.retry_after = retry_after


def _retry_after(err) -> float | None:
    for holder in (getattr(err, "response", None), err):
        headers = getattr(holder, "headers", None) or getattr(holder, "litellm_response_headers", None)
        if headers is None:
            continue
        try:
            value = headers.get("retry-after") or headers.get("Retry-After")
        except Exception:
            value = None
        if value:
            try:
                return float(value)
            except ValueError:
                return None
    return None


def classify_exception(err: Exception) -> ProviderError:
    """Map a litellm/openai/httpx exception to an error kind with a short message."""
    name = type(err).__name__
    status = getattr(err, "status_code", None)
    text = str(err).strip().splitlines()[0][:300] if str(err).strip() else name
    if "Timeout" in name or "timed out" in text.lower():
        kind = "timeout"
    elif name == "RateLimitError" or status == 429:
        kind = "rate_limit"
    elif name in ("AuthenticationError", "PermissionDeniedError") or status in (401, 403):
        kind = "auth"
    elif name in ("BadRequestError", "NotFoundError", "UnprocessableEntityError",
                  "ContextWindowExceededError", "UnsupportedParamsError") or status in (400, 404, 422):
        kind = "bad_request"
    elif name in ("APIConnectionError", "ConnectError", "ConnectionError") and status in (None, 500) and (
        "json" in text.lower() or "decode" in text.lower() or "expecting" in text.lower()
    ):
        kind = "malformed"
    elif name in ("InternalServerError", "ServiceUnavailableError", "BadGatewayError") or (status and status >= 500):
        kind = "server"
    elif name in ("APIConnectionError", "ConnectError", "ConnectionError"):
        kind = "connection"
    elif "json" in text.lower() or "decode" in text.lower():
        kind = "malformed"
    else:
        kind = "unknown"
    return ProviderError(kind, f"{name}: {text}", _retry_after(err))


def model_settings(model: str) -> dict:
    return (conf.get("EVENNIA_AI_MODEL_SETTINGS") or {}).get(model) or {}


def uses_native_tools(model: str) -> bool:
    """Whether tools are sent natively to ``model`` (see module docstring)."""
    setting = model_settings(model).get("native_tools")
    if setting is not None:
        return bool(setting)
    litellm = get_litellm()
    for name in (model, model.split("/", 1)[-1]):
        info = litellm.model_cost.get(name)
        if info and "supports_function_calling" in info:
            return bool(info["supports_function_calling"])
    return True


def to_text_protocol(messages: list[dict], tools: list[dict] | None, tick_rate) -> list[dict]:
    """Rewrite a request for the JSON tool protocol: schemas in the system prompt, no tool roles."""
    from evennia_ai.prompt_templates import get_fallback_template, safe_render_template

    protocol = safe_render_template(
        get_fallback_template(), tool_schemas=render_tool_schemas(tools), tick_rate=tick_rate
    )
    out: list[dict] = []
    for message in messages:
        role = message.get("role")
        if role == "tool":
            out.append({"role": "user", "content": f"[Tool result: {message.get('name') or 'tool'}] {message.get('content') or ''}"})
        elif role == "assistant" and message.get("tool_calls"):
            import json

            calls = [
                {"tool": c["function"]["name"], "arguments": c["function"].get("arguments")}
                for c in message["tool_calls"]
            ]
            content = (message.get("content") or "") + "\n" + json.dumps({"tool_calls": calls})
            out.append({"role": "assistant", "content": content.strip()})
        else:
            out.append({"role": role, "content": message.get("content") or ""})
    if out and out[0]["role"] == "system":
        out[0] = {"role": "system", "content": out[0]["content"] + "\n\n" + protocol}
    else:
        out.insert(0, {"role": "system", "content": protocol})
    return out


def _parse_response(response, native: bool) -> LLMResult:
    choices = getattr(response, "choices", None)
    if not choices:
        raise ProviderError("empty", "the provider answered with no choices")
    choice = choices[0]
    message = getattr(choice, "message", None)
    if message is None:
        raise ProviderError("malformed", "the provider's answer has no message")
    text = getattr(message, "content", None)
    calls: list[ToolCall] = []
    if native:
        import json

        for index, call in enumerate(getattr(message, "tool_calls", None) or []):
            function = getattr(call, "function", None)
            name = getattr(function, "name", None) or ""
            raw = getattr(function, "arguments", None)
            raw = raw if isinstance(raw, str) else json.dumps(raw or {})
            error, arguments = None, {}
            try:
                arguments = json.loads(raw) if raw.strip() else {}
                if not isinstance(arguments, dict):
                    arguments, error = {}, "arguments must be a JSON object"
            except ValueError as err:
                error = f"not valid JSON ({err})"
            calls.append(ToolCall(id=getattr(call, "id", None) or f"call_{index}", name=name,
                                  arguments=arguments, raw_arguments=raw, error=error))
    else:
        text, calls = parse_tool_calls_from_text(text)
    usage = getattr(response, "usage", None)
    return LLMResult(
        text=text,
        tool_calls=calls,
        usage=LLMUsage(
            int(getattr(usage, "prompt_tokens", 0) or 0),
            int(getattr(usage, "completion_tokens", 0) or 0),
            int(getattr(usage, "total_tokens", 0) or 0),
        ),
        finish_reason=getattr(choice, "finish_reason", None),
        native_tools=native,
    )


class UnifiedLLMClient:
    """One client for every model (see module docstring).

    Args:
        model, api_base, api_key, timeout, fallbacks: Fixed values; None reads the settings at
            call time.
        max_retries, base_delay, max_delay: Retry policy; None reads the settings.
    """

    def __init__(self, model=None, api_base=None, api_key=None, timeout=None, fallbacks=None,
                 max_retries=None, base_delay=None, max_delay=None):
        self.model = model
        self.api_base = api_base
        self.api_key = api_key
        self.timeout = timeout
        self.fallbacks = fallbacks
        self.max_retries = max_retries
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.offline = OfflineModel()
        self.sleep = time.sleep

    # -- configuration -------------------------------------------------------------------------
    def _setting(self, own, name):
        return own if own is not None else conf.get(name)

    def resolve_model(self, model: str | None = None) -> str:
        return model or self.model or conf.get("EVENNIA_AI_MODEL") or conf.OFFLINE_MODEL

    # -- calls ---------------------------------------------------------------------------------
    def complete(self, messages, tools=None, **kwargs):
        """Like :meth:`complete_sync`, in a thread; returns a Deferred firing with LLMResult."""
        return defer_to_thread(self.complete_sync, messages, tools, **kwargs)

    def complete_sync(self, messages: list[dict], tools: list[dict] | None = None, *, model=None,
                      api_base=None, api_key=None, timeout=None, temperature=None,
                      max_tokens=None, tick_rate=None, fallbacks=None) -> LLMResult:
        """Call the model (with retries and fallbacks); blocking. Never raises."""
        started = time.monotonic()
        primary = self.resolve_model(model)
        chain = [primary] + [m for m in (fallbacks if fallbacks is not None else self._setting(self.fallbacks, "EVENNIA_AI_FALLBACK_MODELS") or []) if m and m != primary]
        attempts = 0
        result = None
        for position, name in enumerate(chain):
            result = self._call_model(name, messages, tools, api_base=api_base, api_key=api_key,
                                      timeout=timeout, temperature=temperature,
                                      max_tokens=max_tokens, tick_rate=tick_rate)
            attempts += result.attempts
            result.fallback_used = position > 0
            if result.ok:
                break
        result.attempts = attempts
        result.latency = round(time.monotonic() - started, 4)
        return result

    def _call_model(self, model, messages, tools, **options) -> LLMResult:
        if model == conf.OFFLINE_MODEL:
            return self.offline.respond(messages, tools)
        try:
            native = uses_native_tools(model)
        except Exception as err:
            return LLMResult(error=f"litellm unavailable: {err}", error_kind="unknown", model=model, attempts=1)
        max_retries = int(self._setting(self.max_retries, "EVENNIA_AI_MAX_RETRIES"))
        base = float(self._setting(self.base_delay, "EVENNIA_AI_RETRY_BASE_DELAY"))
        cap = float(self._setting(self.max_delay, "EVENNIA_AI_RETRY_MAX_DELAY"))
        attempt = 0
        while True:
            attempt += 1
            try:
                result = self._request(model, messages, tools, native, **options)
                result.attempts = attempt
                result.model = model
                return result
            except ProviderError as err:
                if err.kind not in RETRYABLE_KINDS or attempt > max_retries:
                    return LLMResult(error=str(err), error_kind=err.kind, model=model,
                                     attempts=attempt, native_tools=native)
                delay = min(cap, base * (2 ** (attempt - 1)))
                delay = delay * (0.5 + random.random() / 2)
                if err.retry_after is not None:
                    delay = min(cap, max(delay, err.retry_after))
                self.sleep(delay)

    def _request(self, model, messages, tools, native, *, api_base=None, api_key=None,
                 timeout=None, temperature=None, max_tokens=None, tick_rate=None) -> LLMResult:
        litellm = get_litellm()
        settings = model_settings(model)
        kwargs: dict[str, Any] = {
            "model": model,
            "timeout": float(timeout or self._setting(self.timeout, "EVENNIA_AI_TIMEOUT")),
            "num_retries": 0,
            "max_retries": 0,
        }
        base = api_base or settings.get("api_base") or self._setting(self.api_base, "EVENNIA_AI_API_BASE")
        key = api_key or settings.get("api_key") or self._setting(self.api_key, "EVENNIA_AI_API_KEY")
        if base:
            kwargs["api_base"] = base
        if key:
            kwargs["api_key"] = key
        elif base:
            kwargs["api_key"] = "not-needed"
        if temperature is not None:
            kwargs["temperature"] = temperature
        if max_tokens is not None:
            kwargs["max_tokens"] = max_tokens
        if tools and native:
            kwargs["tools"] = tools
            kwargs["messages"] = messages
        elif tools:
            rate = tick_rate if tick_rate is not None else conf.get("EVENNIA_AI_TICK_INTERVAL")
            kwargs["messages"] = to_text_protocol(messages, tools, rate)
        else:
            kwargs["messages"] = messages
        try:
            response = litellm.completion(**kwargs)
        except ProviderError:
            raise
        except Exception as err:
            raise classify_exception(err) from None
        try:
            result = _parse_response(response, native or not tools)
        except ProviderError:
            raise
        except Exception as err:
            raise ProviderError("malformed", f"could not read the answer: {err}") from None
        if not native and tools:
            result.native_tools = False
        try:
            result.cost = float(litellm.completion_cost(completion_response=response))
        except Exception:
            result.cost = None
        result.raw = None
        return result


_CLIENT: UnifiedLLMClient | None = None


def get_client() -> UnifiedLLMClient:
    """The shared client (settings are read at call time, so one instance serves all)."""
    global _CLIENT
    if _CLIENT is None:
        _CLIENT = UnifiedLLMClient()
    return _CLIENT


_CONFIGURED_CALLBACKS: list = []


def configure_litellm_callbacks() -> list:
    """Install ``EVENNIA_AI_LITELLM_CALLBACKS`` into litellm (idempotent).

    Entries are litellm callback names (``"langfuse"``, ``"otel"``, ...) or dotted paths to a
    ``CustomLogger`` instance or class (classes are instantiated).
    """
    entries = conf.get("EVENNIA_AI_LITELLM_CALLBACKS") or []
    if not entries:
        return []
    litellm = get_litellm()
    installed = []
    for entry in entries:
        callback = entry
        if isinstance(entry, str) and "." in entry:
            module, _, attr = entry.rpartition(".")
            callback = getattr(importlib.import_module(module), attr)
            if isinstance(callback, type):
                callback = callback()
        if callback in _CONFIGURED_CALLBACKS:
            continue
        litellm.callbacks = list(getattr(litellm, "callbacks", []) or []) + [callback]
        _CONFIGURED_CALLBACKS.append(callback)
        installed.append(callback)
    return installed

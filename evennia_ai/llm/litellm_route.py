"""The litellm route: every model call the lean route (:mod:`.openai_wire`) does not take.

Requests for ``ollama/``, ``anthropic/`` and every other provider, OpenAI's reasoning models,
names in ``EVENNIA_AI_LITELLM_MODELS`` and the deployments of a litellm Router go through
``litellm.acompletion`` (or the Router's). This module builds those requests, sends them
(streamed when a stream consumer is given: ``stream=True`` with
``stream_options={"include_usage": True}``, assembled by the same
:class:`~evennia_ai.llm.openai_wire.StreamAssembler` as the lean route), turns litellm's
exceptions into :class:`~evennia_ai.llm.openai_wire.ProviderError` values
(:func:`classify_exception`) and prices answers. litellm is imported lazily, with
``LITELLM_LOCAL_MODEL_COST_MAP=True`` put in the environment first unless the user set it, so
importing it fetches nothing from the internet. litellm's own retries are switched off
(``num_retries=0``, ``max_retries=0``): the client retries, and the two would multiply.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import re
import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any

from evennia_ai import conf
from evennia_ai.llm.openai_wire import (
    KIND_LABELS,
    ProviderError,
    StreamAssembler,
    parse_retry_after,
)
from evennia_ai.llm.types import JSONObject, LLMResult, StreamSink

logger = logging.getLogger(__name__)
_KIND_LABELS = KIND_LABELS

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


_PREFIX = re.compile(r"^(?:litellm\.)?[A-Za-z_]*(?:Error|Exception|Timeout)\s*[:-]\s*")
_DECODE_WORDS = re.compile(
    r"Expecting value|Expecting property name|Expecting ',' delimiter|Unterminated string|"
    r"Extra data|Invalid control character|JSONDecodeError|Received response -",
)


#: ``ssl:<SSLContext object at 0x...>`` and similar reprs in aiohttp's connection errors.
_REPR = re.compile(r"\s*ssl:<[^>]*>|<[A-Za-z_.]+ object at 0x[0-9a-f]+>")


def _detail(err: Exception) -> str:
    """The useful part of a provider error message: one line, no class-name prefixes."""
    text = str(err).strip().splitlines()[0] if str(err).strip() else ""
    previous = None
    while previous != text:
        previous = text
        text = _PREFIX.sub("", text).strip()
    text = text.split(", Received response")[0].split(" Error_str:")[0]
    text = _REPR.sub("", text)  # no ssl:<SSLContext object at 0x...> in a message to people
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


def loaded() -> bool:
    """Whether litellm was imported already (its first import takes seconds)."""
    return _litellm is not None


async def send(
    send_call: Callable[..., Any],
    kwargs: dict[str, Any],
    on_delta: StreamSink | None,
) -> tuple[JSONObject, object]:
    """One litellm call; the answer as a ``chat.completion`` dict, and litellm's response.

    Args:
        send_call: ``litellm.acompletion`` or a Router's ``acompletion``.
        kwargs: Its arguments (see :func:`request_kwargs`).
        on_delta: The stream consumer (the client's :class:`~.openai_wire.Sink`), or None
            for a plain call.

    Raises:
        Exception: whatever litellm raised (the caller classifies it).
    """
    if on_delta is None:
        response = await send_call(**kwargs)
        return response.model_dump(), response
    assembler = StreamAssembler(on_delta)
    stream = await send_call(**kwargs, stream=True, stream_options={"include_usage": True})
    async for chunk in stream:
        assembler.add(chunk.model_dump())
    return assembler.completion(), None


def request_kwargs(
    model: str,
    timeout: float,
    *,
    routed: bool,
    base: str | None,
    key: str | None,
    temperature: float | None,
    max_tokens: int | None,
    response_format: JSONObject | None,
    num_ctx: int | None,
    messages: list[JSONObject],
    tools: list[JSONObject] | None,
) -> dict[str, Any]:
    """``litellm.acompletion``'s arguments for one call, as the plugin has always sent them."""
    kwargs: dict[str, Any] = {
        "model": model,
        "timeout": timeout,
        "drop_params": True,  # e.g. temperature on models that refuse it
    }
    if not routed:  # the Router retries on its deployments itself
        kwargs["num_retries"] = 0  # we retry ourselves; theirs would multiply ours
        kwargs["max_retries"] = 0
        if base:
            kwargs["api_base"] = base
            kwargs["model"] = _compatible_route(model)
            kwargs["api_key"] = key or "not-needed"  # local servers ignore it; SDKs want one
        elif key:
            kwargs["api_key"] = key
    if temperature is not None:
        kwargs["temperature"] = temperature
    if num_ctx:
        kwargs["num_ctx"] = num_ctx  # Ollama's window for this request
    if max_tokens is not None:
        kwargs["max_tokens"] = max_tokens
    if response_format is not None:
        kwargs["response_format"] = response_format  # dropped where a provider has none
    kwargs["messages"] = messages
    if tools:
        # litellm's OpenAI-compatible route edits schemas in place (it drops
        # additionalProperties): give it a copy, never the tool registry's own dicts.
        kwargs["tools"] = copy.deepcopy(tools)
    return kwargs


def call_error(err: Exception, kwargs: dict[str, Any], model: str) -> ProviderError:
    """A litellm exception of one call as the ProviderError the client reports."""
    if isinstance(err, ProviderError):
        return err
    error = classify_exception(err)
    if error.kind == "timeout":
        return ProviderError("timeout", f"timeout: no answer within {kwargs['timeout']:g} s")
    if kwargs["model"] != model:  # name the model as the operator did, not its route
        return ProviderError(
            error.kind, str(error).replace(kwargs["model"], model), error.retry_after
        )
    return error


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

"""The litellm route: every model call the lean route (:mod:`.openai_wire`) does not take.

Requests for ``ollama/``, ``anthropic/`` and every other provider, OpenAI's reasoning models,
names in ``EVENNIA_AI_LITELLM_MODELS`` and the deployments of a litellm Router go through
``litellm.acompletion`` (or the Router's). This module builds those requests, sends them
(streamed when a stream consumer is given: ``stream=True`` with
``stream_options={"include_usage": True}``, assembled by the same
:class:`~evennia_ai.llm.openai_wire.StreamAssembler` as the lean route), turns litellm's
exceptions into :class:`~evennia_ai.llm.errors.ProviderError` values in words
(:func:`evennia_ai.llm.errors.model_error`) and prices answers. litellm is imported lazily, with
``LITELLM_LOCAL_MODEL_COST_MAP=True`` put in the environment first unless the user set it, so
importing it fetches nothing from the internet. litellm's own retries are switched off
(``num_retries=0``, ``max_retries=0``): the client retries, and the two would multiply.
"""

from __future__ import annotations

import copy
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import replace
from types import ModuleType
from typing import Any

from evennia_ai import conf
from evennia_ai.llm.errors import ProviderError, model_error
from evennia_ai.llm.openai_wire import StreamAssembler
from evennia_ai.llm.types import JSONObject, LLMResult, StreamSink

logger = logging.getLogger(__name__)

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


def classify_exception(err: Exception) -> ProviderError:
    """A litellm / openai / httpx exception as a ProviderError (see :func:`.errors.model_error`)."""
    return ProviderError.of(model_error(err))


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
    error = model_error(err, url=kwargs.get("api_base"), timeout=kwargs.get("timeout"))
    if kwargs["model"] != model:  # name the model as the operator did, not its route
        error = replace(error, text=error.text.replace(kwargs["model"], model))
    return ProviderError.of(error)


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

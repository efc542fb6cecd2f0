"""An in-process litellm Router: one model name served by several model servers.

``EVENNIA_AI_ROUTER`` takes litellm's own Router configuration, a ``model_list`` of
deployments and the Router's options::

    EVENNIA_AI_ROUTER = {
        "model_list": [
            {"model_name": "tavern-llm",
             "litellm_params": {"model": "openai/qwen2.5-7b", "api_base": "http://gpu1:8000/v1",
                                "api_key": "none", "max_parallel_requests": 64}},
            {"model_name": "tavern-llm",
             "litellm_params": {"model": "openai/qwen2.5-7b", "api_base": "http://gpu2:8000/v1",
                                "api_key": "none", "max_parallel_requests": 64}},
        ],
        "routing_strategy": "simple-shuffle",  # or least-busy, latency-based-routing, ...
        "num_retries": 2,        # retries inside the Router, on another deployment
        "allowed_fails": 1,      # failures of a deployment before its cooldown
        "cooldown_time": 30,     # seconds a failed deployment is left out
    }

An NPC whose model is a ``model_name`` of the list (``ainpc/model Marta = tavern-llm``; or
``EVENNIA_AI_MODEL = "tavern-llm"``) is served through the Router: it picks a deployment by its
routing strategy, retries on another one when a deployment fails, leaves a failing deployment
out for ``cooldown_time`` seconds and tries it again afterwards, and follows its own
``fallbacks`` (between model names of the list). Only when the Router call as a whole fails
does the client go on with ``EVENNIA_AI_FALLBACK_MODELS``, in order (each of them may be a
Router model name too). Costs, tokens and budgets count per NPC as for any other model.

A deployment with an ``api_base`` and an ``openai/`` model takes litellm's ``hosted_vllm``
route as the client's own calls do (``EVENNIA_AI_OPENAI_SDK_ROUTE`` keeps the SDK). Calls in
flight to one Router model name are bounded by the sum of its deployments'
``max_parallel_requests`` (each deployment's own bound is the Router's business); without
them, by ``EVENNIA_AI_MAX_CONCURRENT_CALLS`` per deployment.

The Router is built on first use and rebuilt when the setting changes; a setting it refuses
is logged once and the names in it are then answered with that error, never a traceback.
"""

from __future__ import annotations

import inspect
import json
import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any

from evennia_ai import conf
from evennia_ai.llm.types import JSONObject

_LOCK = threading.Lock()
_BUILT: dict[str, Any] = {"key": None, "router": None, "error": "", "groups": {}}


class RouterConfigError(ValueError):
    """``EVENNIA_AI_ROUTER`` cannot make a Router; the message says what is wrong."""


def _fingerprint(config: object) -> str:
    try:
        return json.dumps(config, sort_keys=True, default=repr)
    except (TypeError, ValueError):
        return repr(config)


def check_config(
    config: object, router_class: Callable[..., object]
) -> tuple[list[JSONObject], JSONObject]:
    """The deployments and the Router's options of ``config``, checked.

    Raises:
        RouterConfigError: not a dict, no ``model_list``, a deployment without
            ``model_name`` or ``litellm_params.model``, or an option the Router does not take.
    """
    if not isinstance(config, dict):
        raise RouterConfigError("EVENNIA_AI_ROUTER must be a dict with a 'model_list'.")
    deployments = config.get("model_list")
    if not isinstance(deployments, list) or not deployments:
        raise RouterConfigError("EVENNIA_AI_ROUTER needs a non-empty 'model_list'.")
    for number, deployment in enumerate(deployments, start=1):
        params = deployment.get("litellm_params") if isinstance(deployment, dict) else None
        if not isinstance(deployment, dict) or not deployment.get("model_name"):
            raise RouterConfigError(
                f"Deployment {number} of EVENNIA_AI_ROUTER has no 'model_name'."
            )
        if not isinstance(params, dict) or not params.get("model"):
            raise RouterConfigError(
                f"Deployment {number} ({deployment['model_name']}) of EVENNIA_AI_ROUTER needs "
                "'litellm_params' with a 'model'."
            )
    options = {key: value for key, value in config.items() if key != "model_list"}
    accepted = set(inspect.signature(router_class).parameters) - {"self"}
    unknown = sorted(set(options) - accepted)
    if unknown:
        raise RouterConfigError(
            f"EVENNIA_AI_ROUTER: litellm's Router takes no option {', '.join(unknown)}."
        )
    return deployments, options


def _routed_params(params: JSONObject, compatible_route: Callable[[str], str]) -> JSONObject:
    """A deployment's ``litellm_params`` as the client sends its own calls."""
    params = dict(params)
    if params.get("api_base"):
        params["model"] = compatible_route(str(params["model"]))
        params.setdefault("api_key", "not-needed")  # local servers ignore it; SDKs want one
    return params


def get_router(litellm: ModuleType, compatible_route: Callable[[str], str]) -> Any:
    """The Router of ``EVENNIA_AI_ROUTER`` (None when unset); built once per setting value.

    Args:
        litellm: The imported litellm module.
        compatible_route: The client's ``openai/`` -> ``hosted_vllm/`` mapping.

    Returns:
        litellm's ``Router`` (litellm is imported lazily, so its type is not named here).

    Raises:
        RouterConfigError: the setting cannot make a Router (logged once by the caller).
    """
    config = conf.get_optional_dict("EVENNIA_AI_ROUTER")
    key = _fingerprint(config) if config else None
    with _LOCK:
        if _BUILT["key"] != key:
            _BUILT.update(key=key, router=None, error="", groups={})
            if config:
                try:
                    deployments, options = check_config(config, litellm.Router)
                    model_list = [
                        {
                            **d,
                            "litellm_params": _routed_params(d["litellm_params"], compatible_route),
                        }
                        for d in deployments
                    ]
                    groups: dict[str, list[JSONObject]] = {}
                    for deployment in model_list:
                        groups.setdefault(deployment["model_name"], []).append(deployment)
                    _BUILT["router"] = litellm.Router(model_list=model_list, **options)
                    _BUILT["groups"] = groups
                except RouterConfigError as err:
                    _BUILT["error"] = str(err)
                except Exception as err:  # litellm refused it
                    _BUILT["error"] = f"EVENNIA_AI_ROUTER: litellm's Router refused it: {err}"
        if _BUILT["error"]:
            raise RouterConfigError(_BUILT["error"])
        return _BUILT["router"]


def routed_names() -> set[str]:
    """The model names ``EVENNIA_AI_ROUTER`` serves (read from the setting, no Router built)."""
    config = conf.get_optional_dict("EVENNIA_AI_ROUTER")
    if not config or not isinstance(config.get("model_list"), list):
        return set()
    return {
        str(d["model_name"])
        for d in config["model_list"]
        if isinstance(d, dict) and d.get("model_name")
    }


def group_limit(name: str, default_per_deployment: int) -> int:
    """Calls in flight allowed to Router model ``name``: the sum of its deployments'
    ``max_parallel_requests``, a deployment without one counting ``default_per_deployment``."""
    deployments = _BUILT["groups"].get(name) or []
    total = 0
    for deployment in deployments:
        bound = (deployment.get("litellm_params") or {}).get("max_parallel_requests")
        try:
            total += max(1, int(bound)) if bound else default_per_deployment
        except (TypeError, ValueError):
            total += default_per_deployment
    return max(1, total or default_per_deployment)


def reset() -> None:
    """Forget the built Router (tests; a changed setting is noticed without it)."""
    with _LOCK:
        _BUILT.update(key=None, router=None, error="", groups={})

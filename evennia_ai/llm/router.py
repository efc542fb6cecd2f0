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

**OpenAI-compatible deployments are routed by the plugin itself** (:class:`LeanRouter`): a model
name whose deployments all take the lean route (:func:`~evennia_ai.llm.openai_wire
.lean_endpoint`: ``openai/`` or ``hosted_vllm/`` at an ``api_base``) is not sent through
litellm's Router, whose bookkeeping costs 5-6 ms of CPU a call. The plugin's choice is small:

- the deployment with the fewest calls in flight, ties taken in turn (round robin), or a random
  one (weighted by ``weight``) with ``routing_strategy: "simple-shuffle"``; a deployment at its
  ``max_parallel_requests`` (else ``default_max_parallel_requests``) is not chosen;
- a failed call (timeout, rate limit, 5xx, connection, malformed or empty answer, auth) counts
  against its deployment; more than ``allowed_fails`` (litellm's default: 3) failures within a
  minute leave it out for ``cooldown_time`` seconds (default 5; ``disable_cooldowns`` turns
  this off), as litellm's Router does;
- up to ``num_retries`` (default 2) more attempts go to another deployment (the least busy one
  not yet tried, else any that is not cooling down); a call whose answer had begun to stream to
  a player is never retried;
- then the Router's ``fallbacks`` (``[{"name": ["other-name", ...]}]``) are tried in order;
- when every deployment is cooling down the call fails as rate limited, with the time left.

Router options that mean nothing here (``routing_strategy`` values other than least-busy and
simple-shuffle, retry policies, caching, redis, budgets, deployments' ``rpm``/``tpm``...) are
named in one warning when the setting is first used, with the remedy: list the model name in
``EVENNIA_AI_LITELLM_MODELS`` to keep it on litellm's Router. Names whose deployments are not
all OpenAI-compatible (Ollama, Anthropic...) still go through litellm's Router, unchanged.
"""

from __future__ import annotations

import fnmatch
import inspect
import json
import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from evennia_ai import conf
from evennia_ai.llm.errors import ProviderError, words
from evennia_ai.llm.litellm_route import get_litellm
from evennia_ai.llm.openai_wire import (
    LeanEndpoint,
    lean_endpoint,
    litellm_patterns,
)
from evennia_ai.llm.types import RETRYABLE_KINDS, JSONObject
from evennia_ai.utils import LOG_PREFIX

logger = logging.getLogger(__name__)

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
                    _BUILT["error"] = (
                        f"EVENNIA_AI_ROUTER: litellm's Router refused it: {words(err)}"
                    )
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
    """Forget the built Router and the plugin's routing (tests; a changed setting is noticed
    without it)."""
    with _LOCK:
        _BUILT.update(key=None, router=None, error="", groups={})
        _LEAN.update(key=None, router=None, error="")


# -- the plugin's own routing of OpenAI-compatible deployments ---------------------------------------
#: Options the plugin's routing honours (and ``model_list``); any other is named in a warning.
LEAN_OPTIONS = frozenset(
    {
        "routing_strategy",
        "num_retries",
        "allowed_fails",
        "cooldown_time",
        "disable_cooldowns",
        "fallbacks",
        "default_max_parallel_requests",
        "timeout",
    }
)
LEAN_STRATEGIES = ("least-busy", "simple-shuffle")
#: Deployment parameters the lean route uses (others are named in the warning).
LEAN_PARAMS = frozenset(
    {"model", "api_base", "api_key", "max_parallel_requests", "timeout", "weight"}
)
#: Failure kinds that count against a deployment (a refused request is the caller's fault).
FAILURE_KINDS = RETRYABLE_KINDS | {"auth"}
FAIL_WINDOW = 60.0  # seconds over which a deployment's failures are counted, as litellm does
_LEAN: dict[str, Any] = {"key": None, "router": None, "error": ""}


@dataclass
class Deployment:
    """One OpenAI-compatible server of a model name, and its state.

    Attributes:
        name: The model name it serves (``model_name``).
        endpoint: Where its calls go.
        model: Its ``litellm_params.model`` (the name prices are read for).
        max_parallel: Calls in flight it takes, or None for no bound of its own.
        timeout: Its own ``timeout`` in seconds, if set.
        weight: Its share under ``simple-shuffle``.
    """

    name: str
    endpoint: LeanEndpoint
    model: str
    max_parallel: int | None = None
    timeout: float | None = None
    weight: float = 1.0
    in_flight: int = 0
    failures: list[float] = field(default_factory=list)
    cooled_until: float = 0.0

    def available(self, now: float) -> bool:
        """Not cooling down and below its bound."""
        if now < self.cooled_until:
            return False
        return self.max_parallel is None or self.in_flight < self.max_parallel


class LeanRouter:
    """Picks deployments for the model names whose servers are all OpenAI-compatible.

    Used on the model-call loop's thread only (no locks). See the module docstring.
    """

    def __init__(self, groups: dict[str, list[Deployment]], options: JSONObject) -> None:
        self.groups = groups
        self.shuffle = options.get("routing_strategy") == "simple-shuffle"
        self.num_retries = max(0, int(_number(options.get("num_retries"), 2)))
        self.allowed_fails = max(0, int(_number(options.get("allowed_fails"), 3)))
        self.cooldown_time = float(_number(options.get("cooldown_time"), 5.0))
        self.cooldowns = not options.get("disable_cooldowns")
        self.fallbacks: dict[str, list[str]] = {}
        for entry in options.get("fallbacks") or []:
            if isinstance(entry, dict):
                for name, targets in entry.items():
                    self.fallbacks.setdefault(str(name), []).extend(
                        [str(t) for t in targets] if isinstance(targets, list) else [str(targets)]
                    )
        self._turn: dict[str, int] = {}

    def pick(self, name: str, tried: set[int]) -> Deployment | None:
        """The deployment for the next attempt, or None when none is available."""
        deployments = self.groups.get(name) or []
        now = time.monotonic()
        ready = [d for d in deployments if d.available(now)]
        fresh = [d for d in ready if id(d) not in tried] or ready
        if not fresh:
            return None
        if self.shuffle:
            return random.choices(fresh, weights=[d.weight for d in fresh])[0]
        fewest = min(d.in_flight for d in fresh)
        idle = [d for d in fresh if d.in_flight == fewest]
        turn = self._turn.get(name, 0)
        self._turn[name] = turn + 1
        return idle[turn % len(idle)]

    def failed(self, deployment: Deployment, reason: str = "") -> None:
        """Count a failure; cool the deployment down past ``allowed_fails`` in a minute.

        Args:
            deployment: The deployment the call failed on.
            reason: What went wrong, for the warning when it is left out.
        """
        if not self.cooldowns:
            return
        now = time.monotonic()
        deployment.failures = [t for t in deployment.failures if now - t < FAIL_WINDOW]
        deployment.failures.append(now)
        if len(deployment.failures) > self.allowed_fails:
            deployment.cooled_until = now + self.cooldown_time
            deployment.failures.clear()
            logger.warning(
                "%s: %s at %s failed %d time(s)%s; left out for %g s",
                LOG_PREFIX,
                deployment.name,
                deployment.endpoint.url,
                self.allowed_fails + 1,
                f" (last: {reason})" if reason else "",
                self.cooldown_time,
            )

    def cooling_error(self, name: str) -> ProviderError:
        """The error when no deployment of ``name`` can take a call."""
        now = time.monotonic()
        waits = [d.cooled_until - now for d in self.groups.get(name) or [] if d.cooled_until > now]
        if waits and len(waits) == len(self.groups.get(name) or []):
            return ProviderError(
                "rate_limit",
                f"every server of {name} is cooling down after failures",
                max(0.0, min(waits)),
            )
        return ProviderError(
            "rate_limit",
            f"every server of {name} is at its max_parallel_requests",
        )


def _router_class() -> Callable[..., object]:
    """litellm's Router class (its signature is what the options are checked against)."""
    return get_litellm().Router  # type: ignore[no-any-return]


def _number(value: object, default: float) -> float:
    try:
        return float(value) if value is not None else default  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return default


def _lean_deployment(deployment: JSONObject) -> Deployment | None:
    """A deployment of the setting as the plugin routes it, or None when litellm must."""
    params = deployment.get("litellm_params") or {}
    model = str(params.get("model") or "")
    name = str(deployment.get("model_name") or "")
    patterns = litellm_patterns()
    if any(fnmatch.fnmatchcase(n, p) for p in patterns for n in (model, name)):
        return None
    if not params.get("api_base"):
        return None  # a provider's own service: litellm's Router, as before
    endpoint = lean_endpoint(model, params.get("api_base"), params.get("api_key") or "not-needed")
    if endpoint is None:
        return None
    bound = params.get("max_parallel_requests")
    timeout = params.get("timeout")
    return Deployment(
        name=name,
        endpoint=endpoint,
        model=model,
        max_parallel=max(1, int(bound)) if isinstance(bound, (int, float)) and bound else None,
        timeout=float(timeout) if isinstance(timeout, (int, float)) else None,
        weight=float(_number(params.get("weight"), 1.0)) or 1.0,
    )


def lean_router() -> LeanRouter | None:
    """The plugin's routing of ``EVENNIA_AI_ROUTER`` (None when unset or nothing is lean).

    Built once per setting value; the options and parameters it does not honour are named
    in one warning then.
    """
    config = conf.get_optional_dict("EVENNIA_AI_ROUTER")
    if not config or not isinstance(config.get("model_list"), list):
        return None
    key = _fingerprint(config) + "|" + ",".join(litellm_patterns())
    with _LOCK:
        if _LEAN["key"] == key:
            if _LEAN.get("error"):
                raise RouterConfigError(_LEAN["error"])
            return _LEAN["router"]  # type: ignore[no-any-return]
        try:
            check_config(config, _router_class())
        except RouterConfigError as err:
            _LEAN.update(key=key, router=None, error=str(err))
            raise
        _LEAN["error"] = ""
        groups: dict[str, list[Deployment]] = {}
        litellm_names: set[str] = set()
        for deployment in config["model_list"]:
            if not isinstance(deployment, dict) or not deployment.get("model_name"):
                continue
            name = str(deployment["model_name"])
            lean = _lean_deployment(deployment)
            if lean is None:
                litellm_names.add(name)
            else:
                groups.setdefault(name, []).append(lean)
        for name in litellm_names:
            groups.pop(name, None)
        default_bound = config.get("default_max_parallel_requests")
        if isinstance(default_bound, int) and default_bound > 0:
            for deployments in groups.values():
                for d in deployments:
                    d.max_parallel = d.max_parallel or default_bound
        built = LeanRouter(groups, config) if groups else None
        _LEAN.update(key=key, router=built)
    if built is not None:
        _warn_unused(config, sorted(groups))
    return built


def _warn_unused(config: JSONObject, names: list[str]) -> None:
    """Name, once per setting value, what the plugin's routing does not honour."""
    unused = sorted(set(config) - LEAN_OPTIONS - {"model_list"})
    strategy = config.get("routing_strategy")
    if strategy is not None and strategy not in LEAN_STRATEGIES:
        unused.insert(0, f"routing_strategy={strategy!r} (least-busy is used)")
    params = sorted(
        {
            key
            for d in config.get("model_list") or []
            if isinstance(d, dict) and str(d.get("model_name")) in names
            for key in (d.get("litellm_params") or {})
            if key not in LEAN_PARAMS
        }
    )
    unused += [f"litellm_params.{key}" for key in params]
    if unused:
        logger.warning(
            "%s: EVENNIA_AI_ROUTER: the plugin routes %s over their OpenAI-compatible servers "
            "itself and ignores %s; to keep litellm's Router for them, list them in "
            "EVENNIA_AI_LITELLM_MODELS.",
            LOG_PREFIX,
            ", ".join(names),
            ", ".join(unused),
        )


def check_at_start() -> None:
    """Build the plugin's routing once at server start, so the warning naming the
    ``EVENNIA_AI_ROUTER`` options it does not honour is logged then, not at the first call
    (a setting litellm refuses is logged too). Safe without a Router setting."""
    try:
        lean_router()
    except RouterConfigError as err:
        logger.error("%s: %s", LOG_PREFIX, err)


def lean_group(name: str) -> LeanRouter | None:
    """The plugin's router when it serves model name ``name``, else None."""
    built = lean_router()
    return built if built is not None and name in built.groups else None


def lean_group_limit(name: str, default_per_deployment: int) -> int:
    """Calls in flight allowed to lean Router name ``name`` (as :func:`group_limit`)."""
    built = lean_router()
    deployments = built.groups.get(name, []) if built else []
    total = sum(d.max_parallel or default_per_deployment for d in deployments)
    return max(1, total or default_per_deployment)

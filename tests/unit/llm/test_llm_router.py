"""The in-process litellm Router (``EVENNIA_AI_ROUTER``) against three loopback model servers.

The real client runs: litellm's Router on the model-call loop, over HTTP to three
``ModelServer``s. One server is stopped mid-run and later started again on its port: no call
fails for it, the load spreads over the others meanwhile, and the returned one gets traffic
again once its cooldown is over.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from django.test import override_settings

from evennia_ai.llm import aio, router
from evennia_ai.llm.client import UnifiedLLMClient
from evennia_ai.testing.model_server import ModelServer

MESSAGES = [
    {"role": "system", "content": "You are Mara, the innkeeper."},
    {"role": "user", "content": "Bob says: hello"},
]
GROUP = "tavern-llm"


def answer(body):
    return {"text": "Welcome!"}


def router_settings(servers, **options) -> dict:
    return {
        "model_list": [
            {
                "model_name": GROUP,
                "litellm_params": {"model": "openai/test-model", "api_base": s.url, "api_key": "x"},
            }
            for s in servers
        ],
        "routing_strategy": "simple-shuffle",
        "num_retries": 3,
        "allowed_fails": 0,
        "cooldown_time": 1,
        **options,
    }


def served(server) -> int:
    return sum(1 for r in server.requests if r.path.endswith("/chat/completions"))


@pytest.fixture
def servers():
    started = [ModelServer(responder=answer).start() for _ in range(3)]
    router.reset()
    yield started
    for server in started:
        server.stop()
    router.reset()


def calls(client, n: int, model: str = GROUP):
    async def many():
        return await asyncio.gather(*(client.acomplete(MESSAGES, model=model) for _ in range(n)))

    return aio.run_sync(many)


def test_a_router_model_spreads_over_its_servers(servers):
    client = UnifiedLLMClient(max_retries=0)
    with override_settings(EVENNIA_AI_ROUTER=router_settings(servers)):
        results = calls(client, 60)
    assert all(r.ok and r.text == "Welcome!" and r.model == GROUP for r in results)
    counts = [served(s) for s in servers]
    assert sum(counts) == 60 and min(counts) >= 8, counts  # shuffled over all three


def test_a_stopped_server_costs_no_call_and_gets_traffic_again(servers):
    client = UnifiedLLMClient(max_retries=1, base_delay=0.05, max_delay=0.2)
    settings = router_settings(servers)
    with override_settings(EVENNIA_AI_ROUTER=settings):
        assert all(r.ok for r in calls(client, 15))
        down = servers[1]
        port = down.port
        down.stop()
        before = [served(s) for s in (servers[0], servers[2])]
        results = calls(client, 30)
        assert all(r.ok for r in results), [r.error for r in results if not r.ok]
        after = [served(s) for s in (servers[0], servers[2])]
        assert all(a - b >= 5 for a, b in zip(after, before)), (before, after)  # both took load

        servers[1] = ModelServer(responder=answer, port=port).start()  # back, same address
        time.sleep(1.5)  # past the cooldown
        results = calls(client, 45)
        assert all(r.ok for r in results)
        assert served(servers[1]) >= 5  # traffic again


def test_router_fallbacks_and_ours_combine_router_first(servers):
    """The Router's own fallback group is tried before EVENNIA_AI_FALLBACK_MODELS."""
    dead = ModelServer(responder=answer)
    dead_url = dead.url
    dead.stop()
    settings = {
        "model_list": [
            {
                "model_name": "broken-llm",
                "litellm_params": {"model": "openai/m", "api_base": dead_url, "api_key": "x"},
            },
            {
                "model_name": GROUP,
                "litellm_params": {
                    "model": "openai/test-model",
                    "api_base": servers[0].url,
                    "api_key": "x",
                },
            },
        ],
        "fallbacks": [{"broken-llm": [GROUP]}],
        "num_retries": 0,
    }
    client = UnifiedLLMClient(max_retries=0, fallbacks=["evennia_ai/offline"])
    with override_settings(EVENNIA_AI_ROUTER=settings):
        result = client.complete_sync(MESSAGES, model="broken-llm")
    assert result.ok and result.text == "Welcome!" and not result.fallback_used
    assert served(servers[0]) == 1
    settings["fallbacks"] = []
    router.reset()
    with override_settings(EVENNIA_AI_ROUTER=settings):
        result = client.complete_sync(MESSAGES, model="broken-llm")
    assert result.ok and result.model == "evennia_ai/offline" and result.fallback_used


def test_concurrency_of_a_router_model_is_bounded_by_its_deployments(servers):
    for server in servers:
        server.latency = 0.2
    settings = router_settings(servers)
    for deployment in settings["model_list"]:
        deployment["litellm_params"]["max_parallel_requests"] = 2
    client = UnifiedLLMClient(max_retries=0)
    with override_settings(EVENNIA_AI_ROUTER=settings):
        calls(client, 12)
    snapshot = client.limits.snapshot()[f"router:{GROUP}"]
    assert snapshot["limit"] == 6 and snapshot["in_flight"] == 0


@pytest.mark.parametrize(
    "config, message",
    [
        ("tavern", "must be a dict"),
        ({"model_list": []}, "non-empty 'model_list'"),
        ({"model_list": [{"litellm_params": {"model": "x"}}]}, "has no 'model_name'"),
        ({"model_list": [{"model_name": "tavern-llm"}]}, "needs 'litellm_params'"),
        (
            {
                "model_list": [{"model_name": "tavern-llm", "litellm_params": {"model": "x"}}],
                "speed": 9,
            },
            "takes no option speed",
        ),
    ],
)
def test_a_bad_router_setting_is_a_clear_error_not_a_traceback(config, message):
    router.reset()
    client = UnifiedLLMClient(max_retries=0)
    with override_settings(EVENNIA_AI_ROUTER=config):
        result = client.complete_sync(MESSAGES, model="tavern-llm")
    if isinstance(config, dict) and config.get("model_list"):
        assert not result.ok and result.error_kind == "bad_request" and message in result.error
    else:  # no model names to route: the name is an unknown model, not a Router one
        assert not result.ok
    router.reset()

"""``EVENNIA_AI_ROUTER`` against three loopback model servers, on both routes.

The real client runs over HTTP to three ``ModelServer``s: the plugin's own routing of
OpenAI-compatible deployments (the default), and litellm's Router (the model names listed in
``EVENNIA_AI_LITELLM_MODELS``); every test of the setting's meaning runs on both. One server is stopped mid-run and later started again on its port: no call
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


@pytest.fixture(autouse=True, params=["lean", "litellm"])
def route(request):
    """The plugin's routing, then litellm's Router (the setting names every model)."""
    router.reset()
    with override_settings(EVENNIA_AI_LITELLM_MODELS=["*"] if request.param == "litellm" else []):
        yield request.param
    router.reset()


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
        # Calls in rounds until it has served five: a loaded machine may see one failure more
        # (which cools it down again); what matters is that it gets traffic again at all.
        deadline = time.monotonic() + 15
        while served(servers[1]) < 5 and time.monotonic() < deadline:
            results = calls(client, 15)
            assert all(r.ok for r in results), [r.error for r in results if not r.ok]
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


# -- the plugin's own routing ------------------------------------------------------------------------
def lean_only(route):
    if route != "lean":
        pytest.skip("the plugin's own routing")


def test_openai_compatible_deployments_are_not_sent_through_litellms_router(servers, route):
    lean_only(route)
    client = UnifiedLLMClient(max_retries=0)
    with override_settings(EVENNIA_AI_ROUTER=router_settings(servers)):
        assert all(r.ok for r in calls(client, 6))
    assert router._BUILT["router"] is None  # litellm's Router was never built
    requests = [r for s in servers for r in s.requests]
    assert len(requests) == 6
    assert all("litellm" not in r.headers.get("user-agent", "") for r in requests)


def test_least_busy_spreads_calls_in_flight_evenly(servers, route):
    lean_only(route)
    for server in servers:
        server.latency = 0.2
    client = UnifiedLLMClient(max_retries=0)
    settings = router_settings(servers, routing_strategy="least-busy")
    with override_settings(EVENNIA_AI_ROUTER=settings):
        assert all(r.ok for r in calls(client, 30))
    assert [served(s) for s in servers] == [10, 10, 10]


def test_a_failing_deployment_cools_down_and_retries_go_elsewhere(servers, route):
    lean_only(route)
    servers[0].enqueue(*[{"fault": "500"}] * 2)
    client = UnifiedLLMClient(max_retries=0)
    settings = router_settings(
        servers, routing_strategy="least-busy", allowed_fails=1, cooldown_time=30, num_retries=1
    )
    with override_settings(EVENNIA_AI_ROUTER=settings):
        first = [client.complete_sync(MESSAGES, model=GROUP) for _ in range(6)]
        assert all(r.ok for r in first), [r.error for r in first]
        before = served(servers[0])
        assert all(r.ok for r in calls(client, 12))
    assert before == 2  # two failures (more than allowed_fails=1): left out
    assert served(servers[0]) == 2  # nothing more while cooling down
    assert served(servers[1]) + served(servers[2]) == 6 + 12  # every answer came from them


def test_every_deployment_cooling_down_is_a_rate_limit_with_the_time_left(route):
    lean_only(route)
    dead = ModelServer()
    url = dead.url
    dead.stop()
    settings = {
        "model_list": [
            {"model_name": GROUP, "litellm_params": {"model": "openai/m", "api_base": url}}
        ],
        "allowed_fails": 0,
        "cooldown_time": 20,
        "num_retries": 0,
    }
    client = UnifiedLLMClient(max_retries=0)
    with override_settings(EVENNIA_AI_ROUTER=settings):
        first = client.complete_sync(MESSAGES, model=GROUP)
        second = client.complete_sync(MESSAGES, model=GROUP)
    assert first.error_kind == "connection"
    assert second.error_kind == "rate_limit" and "cooling down" in second.error


def test_max_parallel_requests_bounds_each_deployment(servers, route):
    lean_only(route)
    for server in servers:
        server.latency = 0.15
    settings = router_settings(servers, routing_strategy="least-busy")
    settings["model_list"][0]["litellm_params"]["max_parallel_requests"] = 1
    settings["default_max_parallel_requests"] = 4
    peak = {}
    built = {}

    async def watch():
        import asyncio as _asyncio

        lean = router.lean_router()
        built["router"] = lean
        while True:
            for d in lean.groups[GROUP]:
                peak[d.endpoint.url] = max(peak.get(d.endpoint.url, 0), d.in_flight)
            await _asyncio.sleep(0.01)

    client = UnifiedLLMClient(max_retries=0)
    with override_settings(EVENNIA_AI_ROUTER=settings):

        async def run():
            import asyncio as _asyncio

            watcher = _asyncio.ensure_future(watch())
            results = await _asyncio.gather(
                *(client.acomplete(MESSAGES, model=GROUP) for _ in range(18))
            )
            watcher.cancel()
            return results

        results = aio.run_sync(run)
    assert all(r.ok for r in results)
    assert client.limits.snapshot()[f"router:{GROUP}"]["limit"] == 1 + 4 + 4
    assert peak[servers[0].url + "/chat/completions"] == 1
    assert max(peak.values()) <= 4


def test_options_the_plugin_does_not_honour_are_named_once(servers, route, caplog):
    lean_only(route)
    settings = router_settings(servers, routing_strategy="latency-based-routing", retry_policy={})
    settings["model_list"][0]["litellm_params"]["rpm"] = 10
    client = UnifiedLLMClient(max_retries=0)
    with override_settings(EVENNIA_AI_ROUTER=settings), caplog.at_level("WARNING"):
        calls(client, 3)
    warnings = [r.getMessage() for r in caplog.records if "EVENNIA_AI_ROUTER" in r.getMessage()]
    assert len(warnings) == 1
    assert "routing_strategy='latency-based-routing'" in warnings[0]
    assert "retry_policy" in warnings[0] and "litellm_params.rpm" in warnings[0]
    assert "EVENNIA_AI_LITELLM_MODELS" in warnings[0]


def test_a_group_listed_in_the_setting_keeps_litellms_router(servers, route):
    lean_only(route)
    client = UnifiedLLMClient(max_retries=0)
    with override_settings(
        EVENNIA_AI_ROUTER=router_settings(servers), EVENNIA_AI_LITELLM_MODELS=[GROUP]
    ):
        assert all(r.ok for r in calls(client, 3))
    assert router._BUILT["router"] is not None


def test_a_router_name_streams_on_either_route(servers, route):
    pieces = []
    client = UnifiedLLMClient(max_retries=0)
    for server in servers:
        server.responder = lambda body: {"text": "Welcome in, sit by the fire."}
    with override_settings(EVENNIA_AI_ROUTER=router_settings(servers)):
        result = client.complete_sync(MESSAGES, model=GROUP, on_delta=pieces.append)
    assert result.ok and result.text == "Welcome in, sit by the fire."
    assert len(pieces) > 3 and "".join(p.content for p in pieces) == result.text
    assert result.usage.completion_tokens > 0  # the usage chunk was asked for and read


def test_the_warning_can_be_given_at_server_start(servers, route, caplog):
    lean_only(route)
    settings = router_settings(servers, cache_responses=True)
    with override_settings(EVENNIA_AI_ROUTER=settings), caplog.at_level("WARNING"):
        router.check_at_start()
        router.check_at_start()  # once per setting value
        calls(UnifiedLLMClient(max_retries=0), 2)
    warnings = [r.getMessage() for r in caplog.records if "EVENNIA_AI_ROUTER" in r.getMessage()]
    assert len(warnings) == 1 and "cache_responses" in warnings[0]
    with override_settings(EVENNIA_AI_ROUTER={"model_list": "none"}):
        router.check_at_start()  # not a list: nothing to route, nothing raised

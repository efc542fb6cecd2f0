"""Client overhead and reactor responsiveness of the LLM client (issue: thinking engine).

1. Overhead per call of ``UnifiedLLMClient.complete_sync`` against the loopback server at 0 ms
   model latency, p50/p95, beside a bare HTTP POST of the same payload (the floor).
2. The reactor's longest stall while 50 calls with 200 ms model latency run at once through
   ``client.complete()`` (threads), measured by a 1 ms LoopingCall's lateness. Target < 20 ms.

Run: ``.venv/bin/python -m bench.llm_client``
"""

from __future__ import annotations

import http.client
import json
import time
from urllib.parse import urlparse

from bench.common import summary_ms, table

MESSAGES = [
    {"role": "system", "content": "You are Innkeeper, a character in a text game. " * 20},
    {"role": "user", "content": 'Alice says, "Hello there, what is the stew today?"'},
]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "say",
            "description": "Say something.",
            "parameters": {
                "type": "object",
                "properties": {"message": {"type": "string"}},
                "required": ["message"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "look",
            "description": "Look around.",
            "parameters": {"type": "object", "properties": {}},
        },
    },
]


def bench_overhead(calls: int = 200) -> tuple[str, dict]:
    from evennia_ai.llm.client import UnifiedLLMClient
    from evennia_ai.testing.model_server import ModelServer

    with ModelServer(latency=0.0) as server:
        server.default_reply = {"tool_calls": [{"name": "say", "arguments": {"message": "Stew!"}}]}
        client = UnifiedLLMClient(
            model="openai/test-model", api_base=server.url, api_key="x", timeout=10, max_retries=0
        )
        for _ in range(10):  # warm-up (imports, connection pools)
            client.complete_sync(MESSAGES, TOOLS)
        ours = []
        for _ in range(calls):
            started = time.perf_counter()
            result = client.complete_sync(MESSAGES, TOOLS)
            ours.append(time.perf_counter() - started)
            assert result.ok, result.error
        url = urlparse(server.url)
        payload = json.dumps({"model": "test-model", "messages": MESSAGES, "tools": TOOLS}).encode()
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
        bare = []
        for index in range(calls + 10):
            started = time.perf_counter()
            conn.request(
                "POST",
                url.path + "/chat/completions",
                body=payload,
                headers={"Content-Type": "application/json", "Authorization": "Bearer x"},
            )
            body = conn.getresponse().read()
            if index >= 10:
                bare.append(time.perf_counter() - started)
            json.loads(body)
        conn.close()
    o, b = summary_ms(ours), summary_ms(bare)
    rows = [
        ["UnifiedLLMClient.complete_sync (default: lean route)", o["n"], o["p50"], o["p95"]],
        ["bare HTTP POST, same payload (floor)", b["n"], b["p50"], b["p95"]],
        ["client overhead over the floor", "", o["p50"] - b["p50"], o["p95"] - b["p95"]],
    ]
    return table(
        "LLM client overhead per call, 0 ms model latency (ms)",
        ["path", "calls", "p50", "p95"],
        rows,
    ), {"ours": o, "bare": b}


def bench_reactor_stall(
    concurrent: int = 50, latency: float = 0.2, pool: int = 10
) -> tuple[str, dict]:
    """``concurrent`` calls at once from the reactor; a 1 ms heartbeat measures its stalls.

    Model calls run on the model-call loop (bounded by ``EVENNIA_AI_MAX_CONCURRENT_CALLS`` per
    endpoint); ``pool`` sizes Twisted's own thread pool, as Evennia runs it (10).
    """
    from twisted.internet import defer, reactor, task

    from bench.common import ExternalModelServer
    from evennia_ai import conf
    from evennia_ai.llm.client import UnifiedLLMClient

    server = ExternalModelServer(latency=latency)
    client = UnifiedLLMClient(
        model="openai/test-model", api_base=server.url, api_key="x", timeout=30, max_retries=0
    )
    client.complete_sync(MESSAGES, TOOLS)  # warm-up outside the measurement
    reactor.suggestThreadPoolSize(pool)
    stalls: list[float] = []
    state = {"last": None}

    def beat():
        now = time.perf_counter()
        if state["last"] is not None:
            stalls.append(now - state["last"] - 0.001)
        state["last"] = now

    heartbeat = task.LoopingCall(beat)
    outcome = {}

    @defer.inlineCallbacks
    def run():
        # A running game's pool is warm: one unmeasured batch starts the threads.
        yield defer.gatherResults([client.complete(MESSAGES, TOOLS) for _ in range(pool)])
        heartbeat.start(0.001)
        yield task.deferLater(reactor, 0.2, lambda: None)
        started = time.perf_counter()
        results = yield defer.gatherResults(
            [client.complete(MESSAGES, TOOLS) for _ in range(concurrent)]
        )
        outcome["wall"] = time.perf_counter() - started
        outcome["ok"] = sum(1 for r in results if r.ok)
        yield task.deferLater(reactor, 0.1, lambda: None)
        heartbeat.stop()
        reactor.stop()

    reactor.callWhenRunning(run)
    reactor.run()
    server.stop()
    worst = max(stalls) * 1000 if stalls else float("nan")
    rows = [
        [
            concurrent,
            conf.get("EVENNIA_AI_MAX_CONCURRENT_CALLS"),
            f"{latency * 1000:.0f}",
            outcome.get("ok"),
            outcome.get("wall", 0) * 1000,
            worst,
            "< 20",
            "yes" if worst < 20 else "NO",
        ]
    ]
    return table(
        "Reactor stall while model calls are in flight (on the model-call loop)",
        [
            "concurrent calls",
            "bound in flight",
            "model latency ms",
            "ok",
            "wall ms",
            "worst stall ms",
            "target ms",
            "met",
        ],
        rows,
    ), {"worst_stall_ms": worst, **outcome}


def main() -> str:
    parts = [bench_overhead()[0], bench_reactor_stall()[0]]
    text = "\n".join(parts)
    print(text)
    return text


if __name__ == "__main__":
    main()

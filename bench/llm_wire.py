"""Client CPU per model call: the lean OpenAI-wire route against the litellm route (issue 33).

The loopback model server runs in its own process, so the process time measured here is the
client's alone (the model-call loop's thread, plus litellm's setup threads on its route). A
request the size of a real ``tick_event`` call (about 13 KB: a long system prompt, history,
eight tool schemas) answered with a ``say`` tool call, 0 ms model latency; ``calls`` calls per
row, with 1 and with 32 in flight; then streamed answers (a three-sentence ``say``, about 30
chunks) with a consumer that does nothing. Target: at most 0.5 ms of CPU per call on the lean
route.

Run: ``.venv/bin/python -m bench.llm_wire`` (``--calls N``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time

from bench.common import table

SYSTEM = (
    "You are Innkeeper Mara of the Prancing Pony, a character in a text game. Stay in "
    "character; answer in one to three sentences; use the tools to act. " * 60
)
HISTORY = [
    {"role": "user" if i % 2 == 0 else "assistant", "content": f"Line {i}: " + "words " * 30}
    for i in range(20)
]
MESSAGES = [{"role": "system", "content": SYSTEM}, *HISTORY]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name} something in the game world. " * 3,
            "parameters": {
                "type": "object",
                "properties": {
                    "message": {"type": "string", "description": "what to " + name},
                    "target": {"type": "string"},
                },
                "required": ["message"],
                "additionalProperties": False,
            },
        },
    }
    for name in ("say", "emote", "look", "give", "take", "move", "remember", "whisper")
]
SAY = "The stew is rabbit and leek tonight. The ale is cold and fresh. Sit anywhere you like."


def _cpu_per_call(client, calls: int, in_flight: int, on_delta=None) -> tuple[float, float]:
    """(CPU ms per call, wall ms per call) over ``calls`` calls, ``in_flight`` at a time.

    The request's tokens are passed as the engine passes them (it counts them for the trace).
    """
    from evennia_ai.llm import aio
    from evennia_ai.llm.request_gate import request_tokens

    counted = request_tokens("openai/test-model", MESSAGES, TOOLS)

    async def run() -> None:
        gate = asyncio.Semaphore(in_flight)

        async def one() -> None:
            async with gate:
                result = await client.acomplete(
                    MESSAGES, TOOLS, on_delta=on_delta, prompt_tokens=counted
                )
                assert result.ok, result.error

        await asyncio.gather(*(one() for _ in range(calls)))

    aio.run_sync(run)  # warm: imports, connection pools, caches
    cpu, wall = time.process_time(), time.perf_counter()
    aio.run_sync(run)
    return (
        (time.process_time() - cpu) * 1000 / calls,
        (time.perf_counter() - wall) * 1000 / calls,
    )


def _floor(url: str, calls: int) -> tuple[float, float]:
    """CPU and wall per call of a bare ``http.client`` POST of the same body (the floor)."""
    import http.client
    from urllib.parse import urlparse

    parts = urlparse(url)
    payload = json.dumps({"model": "test-model", "messages": MESSAGES, "tools": TOOLS}).encode()
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    headers = {"Content-Type": "application/json", "Authorization": "Bearer x"}
    for index in range(calls + 20):
        if index == 20:
            cpu, wall = time.process_time(), time.perf_counter()
        conn.request("POST", parts.path + "/chat/completions", body=payload, headers=headers)
        json.loads(conn.getresponse().read())
    conn.close()
    return (
        (time.process_time() - cpu) * 1000 / calls,
        (time.perf_counter() - wall) * 1000 / calls,
    )


def _router_rows(reply: str, calls: int, data: dict) -> list[list]:
    """The same calls to a Router name over three servers (least busy, cooldowns, retries)."""
    from django.test import override_settings

    from bench.common import ExternalModelServer
    from evennia_ai.llm import router
    from evennia_ai.llm.client import UnifiedLLMClient

    servers = [ExternalModelServer(extra_args=("--default-reply", reply)) for _ in range(3)]
    config = {
        "model_list": [
            {
                "model_name": "tavern-llm",
                "litellm_params": {
                    "model": "openai/test-model",
                    "api_base": server.url,
                    "api_key": "x",
                    "max_parallel_requests": 64,
                },
            }
            for server in servers
        ],
        "routing_strategy": "least-busy",
        "num_retries": 2,
        "allowed_fails": 3,
        "cooldown_time": 5,
    }
    rows = []
    try:
        client = UnifiedLLMClient(model="tavern-llm", timeout=30, max_retries=0)
        for route, patterns in (("lean", []), ("litellm", ["*"])):
            router.reset()
            with override_settings(EVENNIA_AI_ROUTER=config, EVENNIA_AI_LITELLM_MODELS=patterns):
                for in_flight in (1, 32):
                    cpu, wall = _cpu_per_call(client, calls, in_flight)
                    rows.append(
                        [f"{route}, Router name over 3 servers", "no", in_flight, calls, cpu, wall]
                    )
                    data[f"{route}-router/{in_flight}"] = cpu
    finally:
        for server in servers:
            server.stop()
        router.reset()
    return rows


def bench_cpu(calls: int = 600) -> tuple[str, dict]:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from django.test import override_settings

    from bench.common import ExternalModelServer
    from evennia_ai.llm.client import UnifiedLLMClient

    reply = json.dumps({"tool_calls": [{"name": "say", "arguments": {"message": SAY}}]})
    server = ExternalModelServer(extra_args=("--default-reply", reply))
    body_size = len(json.dumps({"messages": MESSAGES, "tools": TOOLS}))
    rows, data = [], {}
    try:
        client = UnifiedLLMClient(
            model="openai/test-model", api_base=server.url, api_key="x", timeout=30, max_retries=0
        )
        for route, patterns in (("lean", []), ("litellm", ["*"])):
            with override_settings(
                EVENNIA_AI_LITELLM_MODELS=patterns, EVENNIA_AI_MAX_CONCURRENT_CALLS=64
            ):
                for in_flight in (1, 32):
                    cpu, wall = _cpu_per_call(client, calls, in_flight)
                    rows.append([route, "no", in_flight, calls, cpu, wall])
                    data[f"{route}/{in_flight}"] = cpu
                streamed = max(100, calls // 3)
                cpu, wall = _cpu_per_call(client, streamed, 1, on_delta=lambda piece: None)
                rows.append([route, "yes", 1, streamed, cpu, wall])
                data[f"{route}/stream"] = cpu
        rows += _router_rows(reply, calls, data)
        cpu, wall = _floor(server.url, calls)
        rows.append(["bare http.client POST + json.loads (floor)", "no", 1, calls, cpu, wall])
        data["floor"] = cpu
    finally:
        server.stop()
    lean = max(data["lean/1"], data["lean/32"], data["lean-router/1"], data["lean-router/32"])
    rows.append(["target: lean route", "", "", "", "<= 0.5", "yes" if lean <= 0.5 else "NO"])
    return (
        table(
            f"Client CPU per model call, {body_size / 1024:.1f} KB request, "
            "0 ms model latency, server in its own process (ms)",
            ["route", "streamed", "in flight", "calls", "CPU ms/call", "wall ms/call"],
            rows,
        ),
        data,
    )


def _settings() -> None:
    """Django settings for a run outside a game (the client reads its settings at call time)."""
    import django
    from django.conf import settings

    if not settings.configured:
        settings.configure()
        django.setup()


def main(argv: list[str] | None = None) -> str:
    _settings()
    parser = argparse.ArgumentParser(prog="python -m bench.llm_wire")
    parser.add_argument("--calls", type=int, default=600)
    args = parser.parse_args([] if argv is None else argv)
    text = bench_cpu(args.calls)[0]
    print(text)
    return text


if __name__ == "__main__":
    main(sys.argv[1:])

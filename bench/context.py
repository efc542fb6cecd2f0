"""Context-window benchmarks (issue: memory and the context window).

1. Context build for a full ``tick_event`` (50 history messages, 20 semantic memories,
   10 entities, 15 goals, 5 memory blocks) with the sources already fetched: p50/p95 of
   ``ContextBuilder.finish`` (budget, assembly, exact counting per section), and its ratio to
   one tiktoken encode of the final prompt (target <= 3x). The pending event changes every run,
   as it does between real ticks.
2. The same end to end with the long-term search (keyword or hybrid, whatever this machine has).
3. Prefix-cache share over a 50-turn conversation: the share of each request's tokens that
   repeats the previous request's prefix, with the default order and the opt-in
   ``cache_friendly`` preset (target >= 70 % with the preset).
4. Long-term memory add and search p50/p95 at 1k and 10k memories (target search p95 <= 50 ms at
   10k), in a temporary folder.

Run: ``.venv/bin/python -m bench.context`` (``--quick`` for 1k only).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from types import SimpleNamespace

from bench.common import summary_ms, table

MODEL = "openai/gpt-4o-mini"


def _django():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evennia_ai_test_settings")
    sys.path.insert(
        0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests")
    )
    import django

    django.setup()


class FakeNPC:
    """Just enough of an NPC for ContextBuilder.finish (no database)."""

    key = "Innkeeper"

    def __init__(self):
        self.ndb = SimpleNamespace(ai_last_request=None)
        self.ai = SimpleNamespace(model=MODEL)


def scenario(turn: int = 0, history_messages: int = 50) -> dict:
    from evennia_ai.memory.entities import render_entities, update_observation
    from evennia_ai.memory.history import append_tick, to_chat_messages
    from evennia_ai.utils import fence, fence_section
    from evennia_ai.workspace.goals import add_goal, render_goals

    history: list = []
    tick = 0
    while len(history) < history_messages:
        tick += 1
        history = append_tick(
            history,
            tick,
            [
                {
                    "role": "user",
                    "content": f'Alice says to you: "Question {tick} about the stew and the road north?"',
                },
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": f"c{tick}",
                            "type": "function",
                            "function": {
                                "name": "say",
                                "arguments": '{"message": "The stew is mutton, and the road is safe by day."}',
                            },
                        }
                    ],
                },
                {
                    "role": "tool",
                    "tool_call_id": f"c{tick}",
                    "content": "You said: The stew is mutton.",
                },
            ],
            1000,
        )
    goals: list = []
    for i in range(15):
        goals, _ = add_goal(
            goals,
            f"Goal number {i}: prepare part {i} of the festival",
            tick=1,
            priority=("high", "medium", "low")[i % 3],
        )
    entities: dict = {}
    for i in range(10):
        entities, _ = update_observation(
            entities,
            f"#{100 + i}",
            f"Guest{i}",
            f"Guest{i} likes cider and tells tall tales about dragons",
        )
    memories = "## Things you remember\n" + "\n".join(
        f"- Memory {i}: a traveller mentioned the bridge at Ashford washed out in the spring flood"
        for i in range(20)
    )
    blocks = "\n\n".join(
        f'<block:notes{i} permission="ReadWrite">\nNote block {i}: supplies, prices, rumours about the mill.\n</block:notes{i}>'
        for i in range(5)
    )
    # model- and player-written text is fenced as the sources fence it (evennia_ai.utils.fence)
    return {
        "system_prompt": "You are Innkeeper, a character in a text game. " * 30,
        "character_context": "## Persona\nMarta Ashgrove, innkeeper for twenty years.\n\n"
        + fence_section("## Session memory\n- The cellar floods in spring", "your session memory"),
        "entity_context": fence_section(
            render_entities(list(entities.values())), "what you noted about them"
        ),
        "memory_blocks": fence(blocks, "memory blocks"),
        "semantic_memories": fence_section(memories, "long-term memory"),
        "context_buffer": "## Recently around you\n"
        + fence("- (1m ago) Bob lights the fire.", "the room"),
        "goals": "## Goals\n" + fence(render_goals(goals), "your goals"),
        "conversation_history": to_chat_messages(history),
        "pending_event": f'Alice says to you: "Turn {turn}: could I get a room for the night?"',
        "tool_result": "",
    }


def _builder(npc=None):
    from evennia_ai.prompt.builder import ContextBuilder
    from evennia_ai.prompt.contexts import get_context_config
    from evennia_ai.tools import load_builtin_tools
    from evennia_ai.tools.registry import TOOL_REGISTRY

    load_builtin_tools()
    return ContextBuilder(
        npc or FakeNPC(), get_context_config("tick_event"), tools=TOOL_REGISTRY.all(), model=MODEL
    )


def request_text(messages: list[dict], schemas: list[dict]) -> str:
    """The request serialised in the order a provider reads it (tools, then messages)."""
    parts = [json.dumps(schemas, sort_keys=True, separators=(",", ":"))] if schemas else []
    for message in messages:
        parts.append(json.dumps(message, sort_keys=True, separators=(",", ":"), default=str))
    return "\n".join(parts)


def bench_build(runs: int = 200) -> tuple[str, dict]:
    import tiktoken

    from evennia_ai.llm.tokens import TokenCounter
    from evennia_ai.prompt.components import get_static_components

    components = get_static_components()
    builder = _builder()
    builder.finish(scenario(-1), components)  # warm-up
    times, encodes = [], []
    enc = tiktoken.get_encoding(TokenCounter(MODEL).encoding_name)
    built = None
    for turn in range(runs):
        values = scenario(turn)
        started = time.perf_counter()
        built = builder.finish(values, components)
        times.append(time.perf_counter() - started)
        text = request_text(built.messages, built.tool_schemas)
        started = time.perf_counter()
        enc.encode(text + f" {turn}", disallowed_special=())
        encodes.append(time.perf_counter() - started)
    b, e = summary_ms(times), summary_ms(encodes)
    ratio = b["p50"] / e["p50"] if e["p50"] else float("nan")
    rows = [
        ["ContextBuilder.finish (budget+assembly+counts)", b["p50"], b["p95"], built.total_tokens],
        ["one tiktoken encode of the final prompt", e["p50"], e["p95"], ""],
        [
            "ratio build / encode (target <= 3)",
            ratio,
            b["p95"] / e["p95"],
            "met" if ratio <= 3 else "NOT met",
        ],
    ]
    return table(
        "Context build, full tick_event, sources fetched (ms)",
        ["step", "p50", "p95", "tokens"],
        rows,
    ), {"build": b, "encode": e, "ratio": ratio}


def bench_end_to_end(runs: int = 100) -> tuple[str, dict]:
    from evennia_ai.memory.longterm import LongTermMemory
    from evennia_ai.prompt.components import get_static_components

    components = get_static_components()
    with tempfile.TemporaryDirectory() as folder:
        memory = LongTermMemory(folder)
        memory.init_sync()
        for i in range(200):
            memory.store_sync(
                "#1",
                f"Memory {i}: traveller {i} talked about the bridge, the mill and stew number {i}",
            )
        builder = _builder()
        times = []
        for turn in range(runs):
            started = time.perf_counter()
            outcome = memory.search_sync("#1", f"what about the stew {turn}?", mode="auto")
            values = scenario(turn)
            values["semantic_memories"] = "## Things you remember\n" + "\n".join(
                f"- {h.text}" for h in getattr(outcome, "hits", [])[:20]
            )
            builder.finish(values, components)
            times.append(time.perf_counter() - started)
        mode = memory.mode
        memory.close()
    s = summary_ms(times)
    return table(
        "Context build end to end with the long-term search (ms)",
        ["memory mode", "p50", "p95"],
        [[mode, s["p50"], s["p95"]]],
    ), {"end_to_end": s, "mode": mode}


def bench_prefix_share(turns: int = 50) -> tuple[str, dict]:
    from django.test import override_settings

    from evennia_ai.prompt.components import get_static_components
    from evennia_ai.utils import fence, fence_section

    components = get_static_components()
    results = {}
    for preset in ("default", "cache_friendly"):
        with override_settings(EVENNIA_AI_COMPONENT_ORDER=preset):
            builder = _builder()
            shares, prompt_tokens, shared_tokens = [], 0, 0
            for turn in range(turns):
                values = scenario(turn, history_messages=min(50, 3 * (turn + 1)))
                values["semantic_memories"] = fence_section(
                    f"## Things you remember\n- recalled for turn {turn}", "long-term memory"
                )
                values["context_buffer"] = "## Recently around you\n" + fence(
                    f"- (now) something happened at turn {turn}", "the room"
                )
                built = builder.finish(values, components)
                builder.npc.ndb.ai_last_request = built.request_key  # as the tick does once sent
                if built.prefix_share is not None:
                    shares.append(built.prefix_share)
                    prompt_tokens += built.total_tokens
                    shared_tokens += built.prefix_share * built.total_tokens
            results[preset] = shared_tokens / prompt_tokens if prompt_tokens else float("nan")
    rows = [
        [
            preset,
            f"{share * 100:.1f}%",
            ">= 70% (preset)" if preset == "cache_friendly" else "reported",
        ]
        for preset, share in results.items()
    ]
    return (
        table(
            f"Prefix-cache share of prompt tokens over a {turns}-turn conversation",
            ["component order", "share", "target"],
            rows,
        ),
        results,
    )


def bench_memory_scale(sizes=(1000, 10000), searches: int = 200) -> tuple[str, dict]:
    from evennia_ai.memory.longterm import LongTermMemory

    rows, data = [], {}
    with tempfile.TemporaryDirectory() as folder:
        memory = LongTermMemory(folder)
        memory.init_sync()
        count = 0
        for size in sizes:
            adds = []
            while count < size:
                started = time.perf_counter()
                memory.store_sync(
                    f"#{count % 10}",
                    f"Fact {count}: guest {count % 97} said the {count % 13} bridge is out; "
                    f"price of ale {count % 7} coins",
                )
                adds.append(time.perf_counter() - started)
                count += 1
            found = []
            for i in range(searches):
                started = time.perf_counter()
                memory.search_sync(
                    f"#{i % 10}", f"is the {i % 13} bridge out? (asked {size}-{i})", mode="auto"
                )  # unique: no embedding cache hits
                found.append(time.perf_counter() - started)
            a, f = summary_ms(adds), summary_ms(found)
            rows.append(
                [
                    size,
                    memory.mode,
                    a["p50"],
                    a["p95"],
                    f["p50"],
                    f["p95"],
                    "met" if f["p95"] <= 50 or size < 10000 else "NOT met",
                ]
            )
            data[size] = {"add": a, "search": f}
        memory.close()
    return (
        table(
            "Long-term memory add and search (ms)",
            [
                "memories",
                "mode",
                "add p50",
                "add p95",
                "search p50",
                "search p95",
                "target (10k p95 <= 50)",
            ],
            rows,
        ),
        data,
    )


def main(quick: bool = False) -> str:
    _django()
    parts = [
        bench_build()[0],
        bench_end_to_end()[0],
        bench_prefix_share()[0],
        bench_memory_scale(sizes=(1000,) if quick else (1000, 10000))[0],
    ]
    text = "\n".join(parts)
    print(text)
    return text


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)

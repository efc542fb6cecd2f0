"""Archival search by meaning over entries held elsewhere, at 1,000 and 10,000 entries.

``python -m bench archival``. Goes through ``longterm.search_archival_hybrid`` with the real
local embedder (all-MiniLM-L6-v2, as the demo runs it), in ``hybrid`` mode: a throwaway FTS5
index plus cosine similarity of every entry to the query, fused by reciprocal rank.

- **first search**: the first search over entries never seen (every entry is embedded);
- **repeat p50/p95**: later searches with a new query each time (the query is embedded, the
  entries come from the embedding cache, when it holds them all).

Searches at one size stop after ``BUDGET_S`` seconds (at least three run), so a slow build
still finishes; the table says how many ran.
"""

from __future__ import annotations

import sys
import tempfile
import time

from bench.common import summary_ms, table
from bench.context import _django

BUDGET_S = 60.0


def _entries(count: int) -> list[dict]:
    return [
        {
            "id": f"a{i}",
            "content": (
                f"Day {i}: guest {i % 97} told me the {i % 13} bridge is out and ale costs "
                f"{i % 7} coins at the {('mill', 'docks', 'gate', 'market')[i % 4]}"
            ),
            "source": "observed",
        }
        for i in range(count)
    ]


def bench_archival(sizes=(1000, 10000)) -> tuple[str, dict]:
    from django.conf import settings

    from evennia_ai.memory import longterm

    rows, data = [], {}
    with tempfile.TemporaryDirectory() as folder:
        settings.EVENNIA_AI_DATA_DIR = folder
        memory = longterm.get_memory()
        memory.init_sync()
        if not memory.vector_ready:
            raise RuntimeError(f"the local embedder is not ready: {memory.status()}")
        for size in sizes:
            entries = _entries(size)
            started = time.perf_counter()
            first = longterm.search_archival_hybrid(entries, "is the bridge out?", 5, "hybrid")
            cold = time.perf_counter() - started
            assert first.mode == "hybrid", first
            durations: list[float] = []
            spent = time.perf_counter()
            while len(durations) < 3 or time.perf_counter() - spent < BUDGET_S:
                i = len(durations)
                started = time.perf_counter()
                longterm.search_archival_hybrid(
                    entries, f"what does ale cost at the {i % 13} bridge? ({size}-{i})", 5, "hybrid"
                )
                durations.append(time.perf_counter() - started)
                if len(durations) >= 200:
                    break
            repeat = summary_ms(durations)
            rows.append([size, cold, repeat["n"], repeat["p50"], repeat["p95"]])
            data[size] = {"first_s": cold, "repeat": repeat}
        longterm.close()
    return (
        table(
            "Archival search, hybrid (keyword + meaning), real local embedder",
            ["entries", "first search s", "repeats", "repeat p50 ms", "repeat p95 ms"],
            rows,
        ),
        data,
    )


def main(quick: bool = False) -> str:
    _django()
    text = bench_archival(sizes=(1000,) if quick else (1000, 10000))[0]
    print(text)
    return text


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)

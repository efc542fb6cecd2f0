"""Server memory (issue: proof under load): RSS with 100 NPCs, per added NPC, and drift.

One real game server with the embedded long-term memory loaded (Qdrant on disk and the local
all-MiniLM-L6-v2 embedder: the memory mode must read ``hybrid``), the loopback model server in
its own process with 0 ms latency (so ticks run as fast as the server can take them).

1. Server RSS (``/proc/<pid>/status`` VmRSS) with the memory loaded and no bench NPCs, then with
   100 AI NPCs that have each ticked a few times. Target: <= 1.2 GB with 100 NPCs.
2. RSS growth per added NPC: the difference divided by 100.
3. RSS drift over 10,000 ticks: RSS after the first 1,000 ticks of the 100 NPCs (warm), then
   10,000 ticks later (sampled every 1,000). Target: < 5 %. Bounded by ``max_seconds``; the
   table says how many ticks really ran.

Run: ``.venv/bin/python -m bench.memory_rss`` (about 5-10 minutes on 2 cores); to see where a
drift comes from, :func:`heap_growth`.
"""

from __future__ import annotations

import json
import time

from bench.common import ExternalModelServer, table
from bench.game import Player, game, probe, rss_of, server_pid
from bench.load import AUTONOMY_ON, SAY
from bench.load import settings as load_settings

NPCS = 100
DRIFT_TICKS = 10_000
WARM_TICKS = 1_000


def settings(url: str) -> str:
    return load_settings(url).replace(
        "EVENNIA_AI_MEMORY_INIT_DELAY = 3600", "EVENNIA_AI_MEMORY_INIT_DELAY = 1"
    )


def wait_ticks(player: Player, target: int, deadline: float) -> dict:
    while True:
        data = probe(player)
        if data["ticks"] >= target or time.monotonic() > deadline:
            return data
        time.sleep(2)


def run(npcs: int = NPCS, drift_ticks: int = DRIFT_TICKS, max_seconds: float = 540) -> dict:
    out: dict = {"npcs": npcs, "samples": []}
    with ExternalModelServer(latency=0.0, extra_args=("--default-reply", json.dumps(SAY))) as model:
        with game(settings(model.url)) as server:
            pid = server_pid(server)
            player = Player(server.telnet_port)
            try:
                player.login("admin", server.password)
                player.py(AUTONOMY_ON)
                deadline = time.monotonic() + 180
                data = probe(player)
                while data["memory_mode"] != "hybrid" and time.monotonic() < deadline:
                    time.sleep(2)
                    data = probe(player)
                out["memory_mode"] = data["memory_mode"]
                time.sleep(3)
                out["rss0"] = rss_of(pid)
                player.py(
                    f"import bench.server_probe as p; p.spawn({npcs}); p.start_driver(0.05)",
                    wait=2.0,
                )
                end = time.monotonic() + max_seconds
                warm = wait_ticks(player, WARM_TICKS, end)
                out["rss_npcs"] = rss_of(pid)
                out["warm_ticks"] = warm["ticks"]
                started = time.monotonic()
                target = warm["ticks"]
                while target < warm["ticks"] + drift_ticks and time.monotonic() < end:
                    target += 1000
                    sample = wait_ticks(player, target, end)
                    out["samples"].append((sample["ticks"] - warm["ticks"], rss_of(pid)))
                out["drift_seconds"] = time.monotonic() - started
                player.py("import bench.server_probe as p; p.stop_driver()")
            finally:
                player.close()
    return out


def render(r: dict) -> str:
    mb = 2**20
    rss0, rss_n = r["rss0"] / mb, r["rss_npcs"] / mb
    per_npc = (r["rss_npcs"] - r["rss0"]) / r["npcs"] / 1024
    ticks, last = r["samples"][-1] if r["samples"] else (0, r["rss_npcs"])
    drift = (last - r["rss_npcs"]) / r["rss_npcs"] * 100
    rows = [
        [f"memory loaded ({r['memory_mode']}), no bench NPCs", f"{rss0:.0f} MB", "", ""],
        [
            f"{r['npcs']} AI NPCs after {r['warm_ticks']} ticks",
            f"{rss_n:.0f} MB",
            "<= 1229 MB (1.2 GB)",
            "pass" if rss_n <= 1.2 * 1024 else "FAIL",
        ],
        ["growth per added NPC", f"{per_npc:.0f} KB", "reported", ""],
        [
            f"drift over {ticks} more ticks ({r['drift_seconds']:.0f} s)",
            f"{drift:+.1f}% ({last / mb:.0f} MB)",
            "< 5% over 10,000 ticks",
            ("pass" if drift < 5 else "FAIL")
            + ("" if ticks >= 10_000 else f" (only {ticks} ticks ran)"),
        ],
    ]
    curve = ", ".join(f"{t}: {v / mb:.0f}" for t, v in r["samples"])
    return (
        table(
            "Server RSS with the embedded long-term memory",
            ["measure", "value", "target", "result"],
            rows,
        )
        + f"\nRSS (MB) by ticks after the warm-up: {curve}\n"
    )


def main() -> str:
    text = render(run())
    print(text)
    return text


if __name__ == "__main__":
    main()


def heap_growth(
    start_ticks: int = 1_000, ticks: int = 2_000, path: str = "/tmp/evennia_ai_heap_growth.txt"
) -> str:
    """Where the server's memory grows while 100 NPCs tick (``tracemalloc``, slow: a diagnosis).

    Traces allocations from ``start_ticks`` ticks for ``ticks`` more and writes the sites that
    grew most and the object types by count to ``path``. Run:
    ``.venv/bin/python -c "from bench.memory_rss import heap_growth; heap_growth()"``.
    """
    with ExternalModelServer(latency=0.0, extra_args=("--default-reply", json.dumps(SAY))) as model:
        with game(settings(model.url)) as server:
            player = Player(server.telnet_port)
            try:
                player.login("admin", server.password)
                player.py(AUTONOMY_ON)
                deadline = time.monotonic() + 180
                while probe(player)["memory_mode"] != "hybrid" and time.monotonic() < deadline:
                    time.sleep(2)
                player.py(
                    f"import bench.server_probe as p; p.spawn({NPCS}); p.start_driver(0.05)",
                    wait=2.0,
                )
                end = time.monotonic() + 900
                first = wait_ticks(player, start_ticks, end)
                player.py("import bench.server_probe as p; p.heap_start()", wait=1.0)
                wait_ticks(player, first["ticks"] + ticks, end)
                player.py(f"import bench.server_probe as p; p.heap_diff({path!r})", wait=1.0)
                probe(player, timeout=300)  # answers once heap_diff is done
                player.py("import bench.server_probe as p; p.stop_driver()")
            finally:
                player.close()
    with open(path) as handle:
        return handle.read()

"""Scale (issue #19 item 5): 500 AI NPCs in 50 rooms, PostgreSQL, a Router over three servers.

One real game server (``bench/game.py``) whose database is a throwaway PostgreSQL server
(``tests/support/postgres.py``); ``EVENNIA_AI_ROUTER`` spreads the NPCs' model name over three
loopback model servers, each in its own process (``bench/counted_model_server.py``), answering
every request with a ``say`` tool call after 2 s and serving any number at once; each
deployment allows ``max_parallel_requests: 64``. The bound is 3 x 64 / 2 s = 96 model calls per
second. 500 AI NPCs, 10 to a room in 50 rooms, each with one active goal, are kept ticking back
to back (autonomous ticks, ``bench/server_probe.py``'s driver), and in every room a **telnet
player** (50 real sessions, logged in as 50 accounts) says a line every 5 s, which the room's
ten NPCs hear. Real sessions rather than server-side speakers: the players' input, the
broadcasts of every NPC line to a session and the output they cause are the reactor's work in
a real game; 50 sockets in one select loop cost the bench client little.

Reported, over a measured window after a warm-up:

1. Model calls per second, counted where they are answered (the model servers), against the
   bound. Target >= 85%.
2. The reactor's lag: how late a 10 ms LoopingCall in the server runs (p50, p99, max). Target
   p99 <= 20 ms.
3. A player's ``look`` round trip over telnet (the admin, in Limbo), idle and under the load.
   Target p99 <= 50 ms.
4. Reactor CPU milliseconds per tick (the reactor thread's CPU time over the window, divided by
   ticks completed), and where it goes (``pieces_start``: the scheduler's pieces of assistant
   work by where they resume, the parts of a tick, garbage collections).
5. Server RSS: idle, after spawning, at the end; growth per NPC.
6. The machine, and its load average (other work on it makes the figures noisy).

Long-term memory is on as users run it (issue 33): it loads at the default delay, the bench
waits until it is ready before spawning the NPCs, and every line the NPCs hear is embedded and
searched as in a game (``--no-memory`` keeps it from loading, as this bench did before).

Run: ``.venv/bin/python -m bench scale`` (about 10 minutes; writes ``bench/RESULTS.md``) or
``.venv/bin/python -m bench.scale --quick`` (100 NPCs in 10 rooms, a shorter window; prints only).
"""

from __future__ import annotations

import argparse
import json
import os
import select
import statistics
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path

from bench.common import ExternalModelServer, deadline_text, machine, percentile, table
from bench.game import Player, game, probe
from bench.load import AUTONOMY_ON, SAY, looks
from bench.load import settings as load_settings

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.postgres import PostgresServer, PostgresUnavailable  # noqa: E402

FULL = {"npcs": 500, "rooms": 50, "warmup": 20.0, "window": 60.0}
QUICK = {"npcs": 100, "rooms": 10, "warmup": 12.0, "window": 20.0}
SERVERS = 3
LATENCY = 2.0
PARALLEL = 64  # max_parallel_requests of each deployment
BOUND = SERVERS * PARALLEL / LATENCY
CONCURRENT_CALLS = 256  # EVENNIA_AI_MAX_CONCURRENT_CALLS: above the Router's 3 x 64
ROUTED = "tavern-llm"
TALK_GAP = 5.0  # seconds between two lines of one player
DRIVER_PERIOD = 0.2  # the driver re-triggers every NPC's tick this often
SPAWN_BATCH = 50
TALKER_PASSWORD = "bench-talker-pass-1"
LINES = (
    "Has anyone seen the harvest cart?",
    "The cider barrels need moving before the dance.",
    "Who is minding the lanterns tonight?",
    "I heard the miller lost his key again.",
)
#: litellm's Router refuses a call (HTTP 429) to a deployment whose slots are all in use.
FULL_DEPLOYMENT = "max_parallel_requests slots in use"
ENDPOINT = f"router:{ROUTED}"  # the plugin's bound on calls in flight to the Router's name
DRIVER_LABEL = "bench driver beat"  # the driver's own time, beside the plugin's pieces
#: The load bench's line keeping long-term memory from loading during a run.
MEMORY_DELAYED = "EVENNIA_AI_MEMORY_INIT_DELAY = 3600\n"
MEMORY_WAIT = 300.0  # seconds to wait for long-term memory to be ready before spawning
TARGETS = {"of_bound": 0.85, "lag_p99_ms": 20.0, "look_p99_ms": 50.0}


def router_config(urls: list[str]) -> dict:
    """``EVENNIA_AI_ROUTER``: one model name, a deployment on each server."""
    return {
        "model_list": [
            {
                "model_name": ROUTED,
                "litellm_params": {
                    "model": "openai/test-model",
                    "api_base": url,
                    "api_key": "x",
                    "max_parallel_requests": PARALLEL,
                },
                # Our own servers cost nothing: said so, litellm skips its search for a price
                # it lacks (its zero-cost diagnostic, ~1 ms of CPU a call; docs/scaling.md).
                "model_info": {"input_cost_per_token": 0.0, "output_cost_per_token": 0.0},
            }
            for url in urls
        ],
        # least-busy sends each call to the deployment with the fewest in flight: with the
        # plugin's bound at the deployments' sum (192), a deployment is rarely over its 64.
        "routing_strategy": "least-busy",
        "num_retries": 2,
        "allowed_fails": 3,
        "cooldown_time": 10,
    }


def settings(urls: list[str], database: str, memory: bool = True) -> str:
    """The load bench's settings, on PostgreSQL, with the Router as the NPCs' model.

    ``memory``: long-term memory loads at the default delay, as users run it (issue 33); False
    keeps it from loading in the run's time, as this bench did before.
    """
    base = load_settings(urls[0], CONCURRENT_CALLS)
    if memory:
        base = base.replace(MEMORY_DELAYED, "")
    return (
        base
        + "EVENNIA_AI_THREAD_POOL_SIZE = 10\n"
        + "EVENNIA_AI_MAX_RETRIES = 2\n"  # the default (the load bench counts failures with 0)
        + "EVENNIA_AI_SWITCH_INTERVAL = 0.001\n"  # docs/scaling.md: for hundreds of NPCs
        + f"EVENNIA_AI_MODEL = {ROUTED!r}\n"
        + f"EVENNIA_AI_ROUTER = {router_config(urls)!r}\n"
        # 50 players log in one after another: past Evennia's 2 new connections a second.
        + "MAX_CONNECTION_RATE = 1000\n"
        + database
    )


class ModelCounts:
    """Three counted model servers; :meth:`read` is their answers so far and the time."""

    def __init__(self, stack: ExitStack, folder: str):
        self.files = [os.path.join(folder, f"model_{n}.json") for n in range(SERVERS)]
        self.servers = [
            stack.enter_context(
                ExternalModelServer(
                    latency=LATENCY,
                    module="bench.counted_model_server",
                    extra_args=("--counts", path, "--default-reply", json.dumps(SAY)),
                )
            )
            for path in self.files
        ]

    @property
    def urls(self) -> list[str]:
        return [server.url for server in self.servers]

    def read(self) -> tuple[list[int], float]:
        counts, stamps = [], []
        for path in self.files:
            data = json.loads(Path(path).read_text())
            counts.append(data["answered"])
            stamps.append(data["time"])
        return counts, sum(stamps) / len(stamps)


class Talkers:
    """Telnet players, one per room, each saying a line every ``gap`` seconds (staggered);
    everything the server sends them is read and dropped."""

    def __init__(self, port: int, names: list[str], gap: float = TALK_GAP):
        self.players = []
        for name in names:
            player = Player(port)
            player.login(name, TALKER_PASSWORD)
            self.players.append(player)
        self.gap = gap
        self.said = 0
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._run, name="bench-talkers", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _run(self) -> None:
        step = self.gap / max(1, len(self.players))
        socks = {player.sock: player for player in self.players}
        next_line = time.monotonic()
        while not self.stop_event.is_set():
            wait = max(0.0, next_line - time.monotonic())
            ready, _, _ = select.select(list(socks), [], [], wait)
            for sock in ready:
                if not sock.recv(65536):
                    socks.pop(sock)
            if time.monotonic() >= next_line:
                player = self.players[self.said % len(self.players)]
                player.send(f"say {LINES[self.said % len(LINES)]}")
                self.said += 1
                next_line += step

    def close(self) -> None:
        self.stop_event.set()
        if self.thread.is_alive():
            self.thread.join(5)
        for player in self.players:
            player.close()


def server_py(player: Player, code: str, timeout: float = 600) -> dict:
    """Run ``code`` in the server and wait until it is done (the probe answers after it)."""
    player.py(code, wait=0.1)
    return probe(player, timeout=timeout)


def looks_for(player: Player, seconds: float, gap: float = 0.1) -> list[float]:
    """``look`` round trips, one every ``gap`` seconds, for ``seconds``."""
    times: list[float] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        times.extend(looks(player, 1, gap))
    return times


def wait_memory(player: Player, timeout: float = MEMORY_WAIT) -> dict:
    """Wait until long-term memory is ready (or ``timeout``); the last probe's figures."""
    deadline = time.monotonic() + timeout
    data = probe(player)
    while data.get("memory_state") != "ready" and time.monotonic() < deadline:
        time.sleep(2)
        data = probe(player)
    return data


def run(npcs: int, rooms: int, warmup: float, window: float, memory: bool = True) -> dict:
    per_room = npcs // rooms
    load_start = os.getloadavg()
    with ExitStack() as stack:
        folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="evennia_ai_scale_"))
        pg = stack.enter_context(PostgresServer())
        models = ModelCounts(stack, folder)
        server = stack.enter_context(game(settings(models.urls, pg.settings_block(), memory), 300))
        player = Player(server.telnet_port)
        stack.callback(player.close)
        player.login("admin", server.password)
        player.py(AUTONOMY_ON)
        time.sleep(5)  # the warm-up thread (litellm, tokenizer) runs 3 s after start
        memory_state = wait_memory(player) if memory else probe(player)
        player.drain(0.5)
        looks(player, 20)
        idle = looks(player, 100)
        idle_rss = probe(player)["rss"]
        started = time.monotonic()
        for _ in range(0, npcs, SPAWN_BATCH):
            server_py(
                player,
                "import bench.server_probe as p; "
                f"p.spawn({min(SPAWN_BATCH, npcs)}, per_room={per_room})",
            )
        spawn_seconds = time.monotonic() - started
        spawned = server_py(
            player,
            f"import bench.server_probe as p; p.make_talkers({rooms}, {TALKER_PASSWORD!r})",
        )
        talkers = Talkers(server.telnet_port, [f"Talker{n}" for n in range(rooms)])
        stack.callback(talkers.close)
        player.drain(0.2)
        player.py(
            "import bench.server_probe as p; p.count_writes(); p.lag_start(0.01); "
            f"p.start_driver({DRIVER_PERIOD})",
            wait=0.5,
        )
        stack.callback(player.py, "import bench.server_probe as p; p.stop_driver(); p.lag_stop()")
        talkers.start()
        time.sleep(warmup)
        player.drain(0.2)
        profile = os.environ.get("BENCH_PROFILE")  # a path: cProfile the reactor in the window
        start = "p.pieces_start()" + ("; p.profile_start()" if profile else "")
        player.py(f"import bench.server_probe as p; {start}", wait=0.05)
        first = probe(player)
        window_start = time.time()
        log_start = server.log_path.stat().st_size
        counts0, time0 = models.read()
        said0 = talkers.said
        loaded = looks_for(player, window)
        last = probe(player)
        if profile:
            server_py(player, f"import bench.server_probe as p; p.profile_stop({profile!r}, 120)")
        log_end = server.log_path.stat().st_size
        counts1, time1 = models.read()
        said1 = talkers.said
        pieces_path = os.path.join(folder, "pieces.json")
        server_py(player, f"import bench.server_probe as p; p.pieces_dump({pieces_path!r})")
        pieces = json.loads(Path(pieces_path).read_text())
        times_path = os.path.join(folder, "tick_times.json")
        server_py(
            player, f"import bench.server_probe as p; p.tick_times({times_path!r}, {window_start})"
        )
        tick_times = json.loads(Path(times_path).read_text())
        logs = sorted(server.log_path.parent.glob(server.log_path.name + "*"))  # rotated too
        log = "".join(path.read_bytes().decode("utf8", "replace") for path in logs)
        rotated = log_end < log_start  # then the window's lines are not all in this file
        in_window = server.log_path.read_bytes()[log_start:log_end].decode("utf8", "replace")
    calls = sum(counts1) - sum(counts0)
    seconds = time1 - time0
    ticks = last["ticks"] - first["ticks"]
    return {
        "npcs": last["npcs"],
        "rooms": rooms,
        "idle": idle,
        "loaded": loaded,
        "lags": last["lags"],
        "calls": calls,
        "per_server": [b - a for a, b in zip(counts0, counts1)],
        "seconds": seconds,
        "calls_per_s": calls / seconds if seconds else float("nan"),
        "ticks": ticks,
        "ticks_per_s": ticks / (last["time"] - first["time"]),
        "reactor_cpu": last["reactor_cpu"] - first["reactor_cpu"],
        "process_cpu": last["process_cpu"] - first["process_cpu"],
        "probe_seconds": last["time"] - first["time"],
        "writes_per_tick": (last["writes"] - first["writes"]) / ticks if ticks else float("nan"),
        "statements_per_tick": (
            (last["statements"] - first["statements"]) / ticks if ticks else float("nan")
        ),
        "failed_calls": log.count("got no answer from model"),
        "full_deployments": log.count(FULL_DEPLOYMENT),
        "failed_in_window": ("?" if rotated else in_window.count("got no answer from model")),
        "report_seconds": last["report_seconds"],
        "limits": [first["llm_limits"].get(ENDPOINT, {}), last["llm_limits"].get(ENDPOINT, {})],
        "in_flight": last["in_flight_samples"],
        "lines_said": said1 - said0,
        "rss_idle": idle_rss,
        "rss_spawned": spawned["rss"],
        "rss_end": last["rss"],
        "spawn_seconds": spawn_seconds,
        "pieces": pieces,
        "tick_times": tick_times,
        "load_start": load_start,
        "load_end": os.getloadavg(),
        "memory": (
            f"long-term memory {memory_state.get('memory_state')}, mode "
            f"{last.get('memory_mode') or '?'}"
            if memory
            else "long-term memory kept from loading (--no-memory)"
        ),
        "recall_deadline": last.get("recall_deadline"),
    }


def _verdict(ok: bool) -> str:
    return "pass" if ok else "FAIL"


def render(r: dict) -> str:
    mb = 2**20
    of_bound = r["calls_per_s"] / BOUND
    lag_ms = [x * 1000 for x in r["lags"]]
    l50, l99 = percentile(r["loaded"], 50) * 1000, percentile(r["loaded"], 99) * 1000
    i50, i99 = percentile(r["idle"], 50) * 1000, percentile(r["idle"], 99) * 1000
    lag99 = percentile(lag_ms, 99)
    cpu_per_tick = r["reactor_cpu"] / r["ticks"] * 1000 if r["ticks"] else float("nan")
    busy = r["reactor_cpu"] / r["probe_seconds"] if r["probe_seconds"] else float("nan")
    process = r["process_cpu"] / r["probe_seconds"] if r["probe_seconds"] else float("nan")
    demand = min(BOUND, r["npcs"] / LATENCY)  # each NPC has at most one call in flight
    load = lambda avg: ", ".join(f"{x:.1f}" for x in avg)  # noqa: E731
    setup = (
        f"{r['npcs']} AI NPCs in {r['rooms']} rooms, {r['rooms']} telnet players saying a line "
        f"every {TALK_GAP:.0f} s ({r['lines_said']} lines in the window), PostgreSQL (a "
        "throwaway cluster on this machine: fsync and synchronous_commit off), Router over "
        f"{SERVERS} loopback model servers ({LATENCY:.0f} s latency, "
        f"max_parallel_requests {PARALLEL} each); window {r['seconds']:.1f} s after a warm-up; "
        f"machine {machine()}, load average {load(r['load_start'])} at the start, "
        f"{load(r['load_end'])} at the end (the machine is shared: figures are noisy); "
        f"{r.get('memory', '?')}."
    )
    rows = [
        [
            "model calls per second (answered by the servers)",
            f"{r['calls_per_s']:.1f} of {BOUND:.0f} ({of_bound * 100:.0f}%); per server "
            + " / ".join(str(n) for n in r["per_server"])
            + (
                f"; {r['npcs']} NPCs can ask at most {demand:.0f}/s "
                f"({r['calls_per_s'] / demand * 100:.0f}% of that)"
                if demand < BOUND
                else ""
            ),
            f">= {TARGETS['of_bound'] * 100:.0f}%"
            + (" (of what the NPCs can ask)" if demand < BOUND else "")
            + f": {_verdict(r['calls_per_s'] / demand >= TARGETS['of_bound'])}",
        ],
        [
            "reactor lag of a 10 ms probe, ms",
            f"p50 {percentile(lag_ms, 50):.1f}, p99 {lag99:.1f}, max {max(lag_ms, default=0):.1f}"
            f" ({len(lag_ms)} beats)",
            f"p99 <= {TARGETS['lag_p99_ms']:.0f}: {_verdict(lag99 <= TARGETS['lag_p99_ms'])}",
        ],
        [
            "player `look` round trip, ms",
            f"p50 {l50:.1f}, p99 {l99:.1f} ({len(r['loaded'])} looks); idle p50 {i50:.1f}, "
            f"p99 {i99:.1f}",
            f"p99 <= {TARGETS['look_p99_ms']:.0f}: {_verdict(l99 <= TARGETS['look_p99_ms'])}",
        ],
        [
            "reactor CPU per tick, ms",
            f"{cpu_per_tick:.1f} ({r['ticks']} ticks, {r['ticks_per_s']:.1f}/s; the reactor "
            f"thread busy {busy * 100:.0f}% of the window; the whole server process "
            f"{process * 100:.0f}% of a core)",
            "reported",
        ],
        [
            "a tick's time, s: start to end / its model calls / from the previous tick's end",
            _tick_times(r.get("tick_times") or {}),
            "reported",
        ],
        [
            "the plugin's calls to the Router in flight / waiting (window start, end)",
            " and ".join(
                f"{limit.get('in_flight', '?')} / {limit.get('waiting', '?')}"
                for limit in r["limits"]
            )
            + f" (its bound {r['limits'][-1].get('limit', '?')}); sampled with the lag probe: "
            f"mean {statistics.fmean(r['in_flight'] or [0]):.0f}, max "
            f"{max(r['in_flight'], default=0)} ({len(r['in_flight'])} samples); the servers "
            f"answered {r['calls_per_s'] * LATENCY:.0f} at a time on average",
            "reported",
        ],
        [
            "model calls that failed (whole run, server log)",
            f"{r['failed_calls']} ticks got no answer ({r['failed_in_window']} in the window); "
            f"{r['full_deployments']} log lines of a Router 429 (every slot of the deployment "
            "it picked in use; the plugin retries those, up to 2 times)",
            "reported",
        ],
        [
            "recall searches that missed the deadline (went on with the keyword hits)",
            deadline_text(r.get("recall_deadline")),
            "reported",
        ],
        [
            "database writes / SQL statements per tick (PostgreSQL)",
            f"{r['writes_per_tick']:.2f} / {r['statements_per_tick']:.2f}",
            "reported",
        ],
        [
            "server RSS, MB",
            f"idle {r['rss_idle'] / mb:.0f}, after spawning {r['rss_spawned'] / mb:.0f} "
            f"(spawning took {r['spawn_seconds']:.0f} s), at the end {r['rss_end'] / mb:.0f}",
            "reported",
        ],
        [
            "RSS growth per NPC, KB",
            f"{(r['rss_spawned'] - r['rss_idle']) / r['npcs'] / 1024:.0f} spawned, "
            f"{(r['rss_end'] - r['rss_idle']) / r['npcs'] / 1024:.0f} after ticking",
            "reported",
        ],
    ]
    part1 = table("Scale (bench.scale)", ["figure", "measured", "target"], rows)
    return (
        setup + "\n\n" + part1 + "\n" + render_pieces(r["pieces"], r["ticks"], r["probe_seconds"])
    )


def _tick_times(times: dict) -> str:
    """p50 / p99 of each of the three lists of :func:`bench.server_probe.tick_times`."""
    parts = []
    for name in ("duration", "model", "gap"):
        values = times.get(name) or []
        if values:
            parts.append(
                f"{name} p50 {percentile(values, 50):.2f}, p99 {percentile(values, 99):.2f}"
            )
    return "; ".join(parts) + f" ({len(times.get('duration') or [])} ticks)"


def _inside(label: str) -> bool:
    """Whether a timed label is part of a piece (or a collection during one), not a piece."""
    return label.startswith(("part: ", "gc ")) or label.endswith("(cpu)")


def render_pieces(pieces: dict, ticks: int, seconds: float, top: int = 14) -> str:
    """Where the reactor's time goes per tick: every piece's sum, then the largest labels."""
    per_tick = lambda total: total * 1000 / ticks if ticks else float("nan")  # noqa: E731
    share = lambda total: f"{total / seconds * 100:.0f}%" if seconds else ""  # noqa: E731
    plugin = [
        t
        for label, times in pieces.items()
        if not _inside(label) and label != DRIVER_LABEL
        for t in times
    ]
    rows = [
        [
            "every piece of assistant work (sum)",
            len(plugin),
            per_tick(sum(plugin)),
            share(sum(plugin)),
            "",
            "",
            "",
        ]
    ]
    largest = sorted(((sum(times), label, times) for label, times in pieces.items()), reverse=True)
    longest = sorted(largest, key=lambda item: max(item[2]), reverse=True)[:3]
    shown = largest[:top] + [item for item in longest if item not in largest[:top]]
    for total, label, times in shown:
        rows.append(
            [
                label,
                len(times),
                per_tick(total),
                share(total),
                percentile(times, 50) * 1000,
                percentile(times, 99) * 1000,
                max(times) * 1000,
            ]
        )
    return table(
        "Scale (bench.scale): where the reactor's time goes (wall ms; the scheduler's pieces by "
        "where they resume, `bench/server_probe.py` pieces_start; `part:`, `(cpu)` and `gc` rows "
        "are inside the pieces; the largest by total, then the three longest single ones)",
        ["piece", "count", "ms per tick", "of the window", "p50", "p99", "max"],
        rows,
    )


def main(quick: bool = False, memory: bool = True) -> str:
    try:
        text = render(run(**(QUICK if quick else FULL), memory=memory))
    except PostgresUnavailable as err:
        text = f"Did not run: the bench's game database is PostgreSQL, and {err}\n"
    print(text)
    return text


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m bench.scale")
    parser.add_argument(
        "--quick", action="store_true", help="100 NPCs in 10 rooms, a shorter window"
    )
    parser.add_argument(
        "--no-memory",
        action="store_true",
        help="keep long-term memory from loading during the run (as this bench did before)",
    )
    options = parser.parse_args()
    main(quick=options.quick, memory=not options.no_memory)

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
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

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
    with _game_with_memory() as player:
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
    with open(path) as handle:
        return handle.read()


@contextmanager
def _game_with_memory() -> Iterator[Player]:
    """A game (model server, autonomy on) with long-term memory loaded; yields the admin."""
    with ExternalModelServer(latency=0.0, extra_args=("--default-reply", json.dumps(SAY))) as model:
        with game(settings(model.url)) as server:
            player = Player(server.telnet_port)
            try:
                player.login("admin", server.password)
                player.py(AUTONOMY_ON)
                deadline = time.monotonic() + 180
                while probe(player)["memory_mode"] != "hybrid" and time.monotonic() < deadline:
                    time.sleep(2)
                yield player
            finally:
                player.close()


# --- diagnosis: what the RSS is made of, sampled in the server --------------------------------


def _mallinfo() -> dict:
    """glibc's ``mallinfo2()``: the main arena's heap, mmapped chunks, bytes in use and free."""
    import ctypes

    class Mallinfo2(ctypes.Structure):
        _fields_ = [
            (name, ctypes.c_size_t)
            for name in (
                "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                "fsmblks", "uordblks", "fordblks", "keepcost",
            )
        ]  # fmt: skip

    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = Mallinfo2
        info = libc.mallinfo2()
    except (OSError, AttributeError):
        return {}
    return {name: getattr(info, name) for name, _ in Mallinfo2._fields_}


def _smaps() -> dict:
    """Resident bytes by kind of mapping (``/proc/self/smaps``): heap, anonymous, files, stacks."""
    out: dict = {}
    name = ""
    with open("/proc/self/smaps") as handle:
        for line in handle:
            head = line.split(None, 1)[0]
            if "-" in head and not head.endswith(":"):
                parts = line.split()
                name = parts[5] if len(parts) > 5 else "[anon]"
                if name.startswith("/"):
                    name = "file:" + name.rsplit("/", 1)[-1]
            elif head == "Rss:":
                out[name] = out.get(name, 0) + int(line.split()[1]) * 1024
    return out


def _deep_size(root, seen: set) -> int:
    """Bytes of ``root`` and everything it holds through dicts, lists, tuples, sets and
    objects' ``__dict__`` (each object counted once per ``seen``)."""
    import sys

    total = 0
    stack = [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        if isinstance(obj, dict):
            stack.extend(obj.keys())
            stack.extend(obj.values())
        elif isinstance(obj, (list, tuple, set, frozenset)):
            stack.extend(obj)
        elif not isinstance(obj, (str, bytes, int, float, type(None))) and hasattr(obj, "__dict__"):
            stack.append(vars(obj))
    return total


def attribute_sizes(top: int = 15) -> list:
    """The cached Attributes by kind (category and key, trace slots together): how many, the
    MB their values hold and the MB of the plugin's read caches beside them (the pickle
    :mod:`evennia_ai.npc.state` keeps), largest first."""
    from evennia.typeclasses.attributes import Attribute

    from evennia_ai.npc import state

    kinds: dict = {}
    for attr in Attribute.get_all_cached_instances():
        key = str(attr.db_key)
        if key.startswith("trace_"):
            key = "trace_*"
        kind = f"{attr.db_category or ''}:{key}"
        count, size, copies, seen = kinds.get(kind, (0, 0, 0, set()))
        size += _deep_size(attr.db_value, seen)
        copies += _deep_size(getattr(attr, state._CACHE, None), seen)
        kinds[kind] = (count + 1, size, copies, seen)
    ranked = sorted(kinds.items(), key=lambda item: -item[1][1] - item[1][2])
    return [
        (kind, count, round(size / 2**20, 2), round(copies / 2**20, 2))
        for kind, (count, size, copies, _) in ranked[:top]
    ]


def server_sample(path: str, trim: bool = False, types: int = 12) -> None:
    """Append one JSON line to ``path`` (runs in the server): RSS and what it is made of.

    The C allocator's view (``mallinfo2``: bytes in use and free in its arenas), Python's
    (``sys.getallocatedblocks``, the objects the collector tracks and those frozen, the most
    numerous types), the process's mappings by kind, its threads, and the sizes of the caches
    and indexes the plugin keeps (every ``functools.lru_cache`` of ``evennia_ai``, the query
    vectors, the embedding caches, the vector index, Evennia's idmapper cache). With ``trim``,
    ``malloc_trim(0)`` is called afterwards and the RSS it gave back is recorded: memory the
    allocator holds free (fragmentation) rather than live objects.
    """
    import collections
    import ctypes
    import functools
    import gc
    import sys
    import threading

    from bench.server_probe import rss_bytes, total_ticks

    gc.collect()  # the plugin's hook freezes the survivors: count them too
    frozen = gc.get_freeze_count()
    gc.unfreeze()
    objects = gc.get_objects()
    if frozen:
        gc.freeze()
    counts = collections.Counter(type(o).__name__ for o in objects)
    caches: dict = {}
    for obj in objects:
        module = getattr(obj, "__module__", "") or ""
        if isinstance(obj, functools._lru_cache_wrapper) and module.startswith("evennia_ai"):
            caches[f"lru {module}.{obj.__qualname__}"] = obj.cache_info().currsize
        kind = type(obj).__name__
        if kind == "QueryEmbeddings":
            caches["query vectors"] = len(obj._futures)
        elif kind == "EmbeddingCache":
            caches[f"embedding cache {id(obj)}"] = len(obj._cache)
        elif kind == "NpcVectorIndex":
            caches["vector index rows"] = len(obj)
            caches["vector index MB"] = round(obj.vector_bytes() / 2**20, 2)
    try:
        from evennia.utils.idmapper.models import cache_size

        caches["idmapper"] = cache_size()[0]
    except Exception as err:  # noqa: BLE001 - a probe reports, never raises
        caches["idmapper"] = str(err)
    del objects
    data = {
        "ticks": total_ticks(),
        "rss": rss_bytes(),
        "malloc": _mallinfo(),
        "smaps": _smaps(),
        "py_blocks": sys.getallocatedblocks(),
        "gc_tracked": sum(counts.values()),
        "gc_frozen": frozen,
        "gc_full_collections": gc.get_stats()[2]["collections"],
        "threads": threading.active_count(),
        "os_threads": len(os.listdir("/proc/self/task")),
        "types": counts.most_common(types),
        "caches": caches,
        "attributes": attribute_sizes(),
    }
    if trim:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
        data["rss_after_trim"] = rss_bytes()
    with open(path, "a") as handle:
        handle.write(json.dumps(data) + "\n")


def diagnose(
    path: str = "/tmp/evennia_ai_rss_samples.jsonl",
    drift_ticks: int = DRIFT_TICKS,
    every: int = 1000,
    trim: bool = False,
    max_seconds: float = 900,
    garbage_at: tuple = (),
    cache_costs: bool = False,
) -> list[dict]:
    """The bench's load with :func:`server_sample` taken every ``every`` ticks (a diagnosis).

    Run: ``.venv/bin/python -c "from bench.memory_rss import diagnose; diagnose()"``; the
    samples are JSON lines in ``path``. At the ticks in ``garbage_at`` the frozen set's dead
    cycles are listed in ``<path>.garbage`` (:func:`server_garbage`); every full collection is
    in ``<path>.gc`` (:func:`gc_watch_start`); with ``cache_costs`` what each ``lru_cache``
    held at the end is in ``<path>.caches`` (:func:`server_cache_costs`). Set
    ``MALLOC_ARENA_MAX`` (or other allocator variables) in the environment to try them: the
    game server inherits it.
    """
    for old in (path, path + ".garbage", path + ".caches"):
        if os.path.exists(old):
            os.unlink(old)
    take = f"import bench.memory_rss as m; m.server_sample({path!r}, trim={trim!r})"
    with _game_with_memory() as player:
        time.sleep(3)
        player.py(take, wait=2.0)
        player.py("import bench.memory_rss as m; m.gc_watch_start()", wait=0.5)
        player.py(
            f"import bench.server_probe as p; p.spawn({NPCS}); p.start_driver(0.05)",
            wait=2.0,
        )
        end = time.monotonic() + max_seconds
        target = 0
        while target < WARM_TICKS + drift_ticks and time.monotonic() < end:
            target += every
            wait_ticks(player, target, end)
            player.py(take, wait=1.0)
            if target in garbage_at:
                player.py(
                    f"import bench.memory_rss as m; m.server_garbage({path + '.garbage'!r})",
                    wait=3.0,
                )
        player.py("import bench.server_probe as p; p.stop_driver()")
        player.py(f"import bench.memory_rss as m; m.gc_watch_dump({path + '.gc'!r})")
        if cache_costs:
            player.py(
                f"import bench.memory_rss as m; m.server_cache_costs({path + '.caches'!r})",
                wait=2.0,
            )
        probe(player, timeout=120)
    with open(path) as handle:
        return [json.loads(line) for line in handle]


def _garbage_kind(obj) -> str:
    """What a piece of cyclic garbage is, by the code or class it comes from."""
    kind = type(obj).__name__
    code = getattr(obj, "gi_code", None) or getattr(obj, "cr_code", None)
    if code is None and kind == "frame":
        code = obj.f_code
    if code is not None:
        return f"{kind} {code.co_qualname} ({code.co_filename.rsplit('/', 1)[-1]})"
    if kind == "function":
        return f"function {obj.__qualname__}"
    if kind == "method":
        return f"method {getattr(obj.__func__, '__qualname__', '?')}"
    if kind in ("dict", "list", "tuple", "cell", "set"):
        return kind
    return f"{type(obj).__module__}.{type(obj).__qualname__}"


def server_garbage(path: str, top: int = 40) -> None:
    """Append to ``path`` (JSON line, runs in the server) what the frozen set holds that is
    garbage: thaws it, collects with ``DEBUG_SAVEALL`` to see the unreachable objects by kind,
    frees them, and records the Python blocks and C-allocator bytes that freed, and the live
    objects by type. The next full collection's survivors become the frozen set's new base.
    """
    import collections
    import gc
    import sys

    from bench.server_probe import total_ticks
    from evennia_ai import startstop

    hooked = startstop.freeze_survivors in gc.callbacks
    if hooked:
        gc.callbacks.remove(startstop.freeze_survivors)
    try:
        frozen = gc.get_freeze_count()
        blocks, used = sys.getallocatedblocks(), _mallinfo().get("uordblks", 0)
        gc.unfreeze()
        gc.set_debug(gc.DEBUG_SAVEALL)
        found = gc.collect()
        kinds = collections.Counter(_garbage_kind(obj) for obj in gc.garbage)
        gc.set_debug(0)
        del gc.garbage[:]
        gc.collect()
        live = collections.Counter(type(obj).__name__ for obj in gc.get_objects())
        data = {
            "ticks": total_ticks(),
            "frozen": frozen,
            "garbage": found,
            "blocks_freed": blocks - sys.getallocatedblocks(),
            "malloc_freed": used - _mallinfo().get("uordblks", 0),
            "kinds": kinds.most_common(top),
            "live": sum(live.values()),
            "live_types": live.most_common(top),
        }
    finally:
        if hooked:
            gc.callbacks.append(startstop.freeze_survivors)
        startstop._frozen["base"] = 0
    with open(path, "a") as handle:
        handle.write(json.dumps(data) + "\n")


_GC_WATCH: list = []


def gc_watch_start() -> None:
    """Record every full collection in the server (runs there): when, how long it paused,
    the objects it left unfrozen (its survivors) and the frozen count before and after the
    plugin's hook. See :func:`gc_watch_dump`."""
    import gc

    state: dict = {}

    def watch(phase: str, info: dict) -> None:
        if info.get("generation") != 2:
            return
        if phase == "start":
            state["t"] = time.perf_counter()
            state["frozen"] = gc.get_freeze_count()
        else:
            _GC_WATCH.append(
                {
                    "at": time.monotonic(),
                    "pause_ms": round((time.perf_counter() - state.get("t", 0)) * 1e3, 2),
                    "survivors": len(gc.get_objects(2)),
                    "frozen_before": state.get("frozen", 0),
                    "collected": info.get("collected", 0),
                }
            )

    gc.callbacks.insert(0, watch)  # before the plugin's hook, which may freeze the survivors


def gc_watch_dump(path: str) -> None:
    """Write the full collections recorded since :func:`gc_watch_start` to ``path`` (JSON)."""
    import gc

    with open(path, "w") as handle:
        json.dump({"collections": _GC_WATCH, "frozen_now": gc.get_freeze_count()}, handle)


def server_cache_costs(path: str) -> None:
    """Append to ``path`` (JSON line, runs in the server) what each ``functools.lru_cache`` of
    ``evennia_ai`` holds: its entries, and the Python blocks and C-allocator bytes clearing it
    gave back (it is cleared: take this at the end of a diagnosis)."""
    import functools
    import gc
    import sys

    frozen = gc.get_freeze_count()
    gc.unfreeze()
    caches = [
        obj
        for obj in gc.get_objects()
        if isinstance(obj, functools._lru_cache_wrapper)
        and (getattr(obj, "__module__", "") or "").startswith("evennia_ai")
    ]
    if frozen:
        gc.freeze()
    out = {}
    for cache in caches:
        entries = cache.cache_info().currsize
        blocks, used = sys.getallocatedblocks(), _mallinfo().get("uordblks", 0)
        cache.cache_clear()
        out[f"{cache.__module__}.{cache.__qualname__}"] = {
            "entries": entries,
            "blocks": blocks - sys.getallocatedblocks(),
            "malloc_bytes": used - _mallinfo().get("uordblks", 0),
        }
    with open(path, "a") as handle:
        handle.write(json.dumps(out) + "\n")

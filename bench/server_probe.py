"""Runs *inside* a benchmark's game server (imported through ``py`` over telnet).

The benchmark game's settings put the repository root on ``sys.path`` so that
``py import bench.server_probe as p; p.report("/tmp/x.json")`` works. Nothing here is imported
by the plugin itself.

- :func:`spawn`: N AI NPCs, each alone in a room of its own (so they never hear each other),
  or ``per_room`` to a room, each with one active goal, so every tick is an autonomous tick
  with one model call.
- :func:`make_talkers`: accounts with a character in each bench room, for telnet players.
- :func:`lag_start`: a 10 ms LoopingCall that records how late the reactor runs it (and, every
  tenth beat, the model calls in flight).
- :func:`start_driver` / :func:`stop_driver`: keep every bench NPC ticking back to back (a
  LoopingCall triggers each script; a busy script runs again as soon as its tick ends).
- :func:`count_writes`: counts SQL statements that write (INSERT/UPDATE/DELETE/REPLACE) on the
  reactor thread's database connection, through Django's ``execute_wrappers``.
- :func:`report`: ticks so far, writes so far, RSS, the reactor thread's and the whole
  process's CPU seconds, the reactor lags recorded since the last report, thread-pool state,
  the model calls in flight and waiting per endpoint, as a JSON file.
"""

from __future__ import annotations

import json
import os
import time

from evennia import CmdSet

BENCH_TAG = ("bench_npc", "evennia_ai_bench")
_STATE = {"writes": 0, "statements": 0, "driver": None, "installed": False, "lags": []}


class TalkCmdSet(CmdSet):
    """Evennia's LLM contrib ``talk`` command, for the A/B benchmark's player."""

    key = "bench_talk"

    def at_cmdset_creation(self):
        from evennia.contrib.rpg.llm.llm_npc import CmdLLMTalk

        self.add(CmdLLMTalk())


def _counter(execute, sql, params, many, context):
    _STATE["statements"] += 1
    head = sql.lstrip()[:8].upper()
    if head.startswith(("INSERT", "UPDATE", "DELETE", "REPLACE")):
        _STATE["writes"] += 1
    return execute(sql, params, many, context)


def count_writes() -> None:
    """Install the write counter on this thread's connection (the reactor thread). Idempotent."""
    from django.db import connection

    if not _STATE["installed"]:
        connection.execute_wrappers.append(_counter)
        _STATE["installed"] = True


def spawn(
    count: int, goal: str = "Keep the festival preparations going", per_room: int = 1
) -> list:
    """Create ``count`` AI NPCs, ``per_room`` to a new room, each with one active goal."""
    from evennia import create_object
    from evennia.objects.objects import DefaultRoom

    from evennia_ai.typeclasses import AIAssistantCharacter

    existing = len(bench_npcs())
    made = []
    room = None
    for index in range(existing, existing + count):
        if room is None or index % per_room == 0:
            room = create_object(
                DefaultRoom, key=f"Bench Room {index // per_room}", tags=[BENCH_TAG]
            )
        npc = create_object(
            AIAssistantCharacter, key=f"BenchNPC{index}", location=room, home=room, tags=[BENCH_TAG]
        )
        npc.ai.update_goals(
            lambda _old, i=index: [
                {
                    "id": f"goal_{i}_0",
                    "description": goal,
                    "priority": "medium",
                    "status": "active",
                    "progress": 0,
                    "created": "2026-01-01T00:00:00+00:00",
                    "parent_id": None,
                    "subtask_ids": [],
                    "auto_generated": False,
                }
            ]
        )
        made.append(npc)
    return made


def bench_rooms() -> list:
    """The bench's rooms, oldest first."""
    from evennia.utils.search import search_tag

    rooms = search_tag(BENCH_TAG[0], category=BENCH_TAG[1])
    return sorted((obj for obj in rooms if not hasattr(obj, "ai")), key=lambda obj: obj.id)


def make_talkers(
    count: int, password: str, prefix: str = "Talker", character_typeclass: str | None = None
) -> list:
    """Accounts ``<prefix>0..`` with a character each, one in each of the first ``count`` bench
    rooms (they log in over telnet and talk there). Returns their names.

    ``character_typeclass`` is the characters' typeclass (None: the game's own Character).
    """
    from evennia import DefaultAccount

    extra = {"character_typeclass": character_typeclass} if character_typeclass else {}
    names = []
    for index, room in enumerate(bench_rooms()[:count]):
        name = f"{prefix}{index}"
        account, errors = DefaultAccount.create(username=name, password=password, **extra)
        if errors or account is None:
            raise RuntimeError(f"cannot create {name}: {errors}")
        for character in account.characters:
            character.location = room
            character.home = room
            character.db.prelogout_location = room
        names.append(name)
    return names


def lag_start(period: float = 0.01) -> None:
    """Record how late (seconds) a ``period`` LoopingCall runs on the reactor, until stopped."""
    from twisted.internet import task

    from evennia_ai.llm.client import get_client

    lag_stop()
    _STATE["lag_period"] = period
    _STATE["lag_expected"] = time.perf_counter() + period
    _STATE["in_flight"] = []

    def beat():
        now = time.perf_counter()
        _STATE["lags"].append(max(0.0, now - _STATE["lag_expected"]))
        _STATE["lag_expected"] = now + period
        if len(_STATE["lags"]) % 10 == 0:  # the model calls in flight, sampled every 10 beats
            _STATE["in_flight"].append(sum(get_client().limits.in_flight.values()))

    loop = task.LoopingCall(beat)
    loop.start(period, now=False)
    _STATE["lag_loop"] = loop


def lag_stop() -> None:
    loop = _STATE.pop("lag_loop", None)
    if loop is not None and loop.running:
        loop.stop()


def bench_npcs() -> list:
    from evennia.utils.search import search_tag

    return [obj for obj in search_tag(BENCH_TAG[0], category=BENCH_TAG[1]) if hasattr(obj, "ai")]


def start_driver(period: float = 0.05) -> None:
    """Trigger every bench NPC's tick every ``period`` seconds (busy ones re-run at once)."""
    from twisted.internet import task

    stop_driver()
    scripts = [npc.ai.script for npc in bench_npcs()]
    scripts = [s for s in scripts if s is not None]

    def beat():
        started = time.perf_counter()
        for script in scripts:
            script.trigger_tick()
        if "pieces" in _STATE:  # its own cost, beside the plugin's (see pieces_start)
            _STATE["pieces"].setdefault("bench driver beat", []).append(
                time.perf_counter() - started
            )

    loop = task.LoopingCall(beat)
    loop.start(period, now=True)
    _STATE["driver"] = loop


def stop_driver() -> None:
    loop = _STATE.get("driver")
    if loop is not None and loop.running:
        loop.stop()
    _STATE["driver"] = None


def total_ticks() -> int:
    return sum(npc.ai.script.tick_count for npc in bench_npcs() if npc.ai.script)


def rss_bytes() -> int:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def memory_mode() -> str:
    """The long-term memory's mode in this server ("" when it is not loaded yet)."""
    try:
        from evennia_ai.memory import longterm

        store = getattr(longterm, "_MEMORY", None) or getattr(longterm, "_STORE", None)
        if store is None and hasattr(longterm, "get_memory"):
            store = longterm.get_memory()
        return str(getattr(store, "mode", "") or "")
    except Exception as err:  # noqa: BLE001 - a probe reports, never raises
        return f"error: {err}"


def memory_state() -> str:
    """The long-term memory's state: uninitialised, initialising or ready."""
    try:
        from evennia_ai.memory import longterm

        return str(longterm.get_memory().state)
    except Exception as err:  # noqa: BLE001 - a probe reports, never raises
        return f"error: {err}"


def report(path: str) -> None:
    """Write the figures to ``path`` as JSON (written whole, then renamed).

    The time the report itself holds the reactor (counting 500 NPCs' ticks takes a while) is
    left out of the reactor lags, which are the game's, not the probe's.
    """
    from evennia_ai.llm import threads
    from evennia_ai.llm.client import get_client

    started = time.perf_counter()
    data = {
        "time": time.monotonic(),
        "ticks": total_ticks(),
        "npcs": len(bench_npcs()),
        "writes": _STATE["writes"],
        "statements": _STATE["statements"],
        "rss": rss_bytes(),
        "reactor_cpu": time.thread_time(),
        "process_cpu": time.process_time(),
        "lags": _STATE["lags"],
        "in_flight_samples": _STATE.get("in_flight", []),
        "pool_in_flight": threads.in_flight(),
        "llm_limits": get_client().limits.snapshot(),
        "memory_mode": memory_mode(),
        "memory_state": memory_state(),
        "recall_deadline": recall_deadline_stats(),
        "pid": os.getpid(),
    }
    data["report_seconds"] = time.perf_counter() - started
    _STATE["lags"], _STATE["in_flight"] = [], []
    if "lag_loop" in _STATE:
        _STATE["lag_expected"] = time.perf_counter() + _STATE["lag_period"]
    tmp = path + ".tmp"
    with open(tmp, "w") as handle:
        json.dump(data, handle)
    os.replace(tmp, path)


def profile_start() -> None:
    """Profile the reactor thread (where ``py`` runs) until :func:`profile_stop`."""
    import cProfile

    _STATE["profile"] = cProfile.Profile()
    _STATE["profile"].enable()


def profile_stop(path: str, lines: int = 70) -> None:
    """Stop profiling; write the top ``lines`` by cumulative and by own time to ``path``."""
    import io
    import pstats

    prof = _STATE.pop("profile")
    prof.disable()
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out)
    stats.sort_stats("cumulative").print_stats(lines)
    stats.sort_stats("tottime").print_stats(30)
    stats.print_callers(r"\(add\)|\(deepcopy\)|\(update\)", 25)
    with open(path, "w") as handle:
        handle.write(out.getvalue())
    prof.dump_stats(path + ".pstats")


_TIMELINE: list = []


def timeline_start() -> None:
    """Time-stamp the stages of an assistant's reply (wrappers on the plugin's functions).

    Stages: ``heard`` (perception of a player's line), ``tick`` (run_tick starts), ``search0`` /
    ``search1`` (the long-term memory search in its thread), ``gathered`` (every source's text
    is in), ``built`` (context built), ``call`` / ``http0`` / ``http1`` / ``back`` (model call handed to the thread
    pool, litellm starts, litellm returns, result back on the reactor), ``said`` (the NPC's
    ``at_say`` ran: the reply is queued for the players' sessions).
    """
    import functools

    from evennia_ai.llm.client import UnifiedLLMClient
    from evennia_ai.npc import perception
    from evennia_ai.prompt.builder import ContextBuilder
    from evennia_ai.scripts import AssistantScript
    from evennia_ai.typeclasses import AIAssistantCharacter

    _TIMELINE.clear()
    stamp = lambda label: _TIMELINE.append((label, time.perf_counter()))  # noqa: E731

    def wrap(owner, name, before=None, after=None, deferred_label=None):
        original = getattr(owner, name)
        if getattr(original, "_bench_wrapped", False):
            return

        @functools.wraps(original)
        def wrapper(*args, **kwargs):
            if before:
                stamp(before)
            result = original(*args, **kwargs)
            if after:
                stamp(after)
            if deferred_label and hasattr(result, "addBoth"):
                result.addBoth(lambda r: (stamp(deferred_label), r)[1])
            return result

        wrapper._bench_wrapped = True
        setattr(owner, name, wrapper)

    original_perceive = perception.perceive_message

    def perceive(npc, text, from_obj, kwargs):
        if from_obj is not None and from_obj != npc and getattr(from_obj, "has_account", False):
            stamp("heard")
        return original_perceive(npc, text, from_obj, kwargs)

    if not getattr(perception.perceive_message, "_bench_wrapped", False):
        perceive._bench_wrapped = True
        perception.perceive_message = perceive
    wrap(AssistantScript, "run_tick", before="tick")
    from evennia_ai.memory.longterm import LongTermMemory

    wrap(LongTermMemory, "search_sync", before="search0", after="search1")
    wrap(ContextBuilder, "gather", deferred_label="gathered")
    wrap(ContextBuilder, "build", deferred_label="built")
    wrap(UnifiedLLMClient, "complete", before="call", deferred_label="back")
    wrap(UnifiedLLMClient, "_request", before="http0", after="http1")
    wrap(AIAssistantCharacter, "at_say", after="said")


def timeline_dump(path: str) -> None:
    """Write the stamps as JSON ``[[label, seconds], ...]``."""
    with open(path, "w") as handle:
        json.dump(list(_TIMELINE), handle)


def seed_state(key: str = "Innkeeper", memories: int = 200, history_ticks: int = 25) -> int:
    """Give the demo NPC a lived-in state: a history, a journal, known people and ``memories``
    long-term memories (stored through the real store, embedder included). Returns how many
    long-term memories it has now."""
    from evennia.utils.search import search_object

    from evennia_ai.memory import longterm
    from evennia_ai.memory.history import append_tick
    from evennia_ai.utils import iso_utc

    npc = [obj for obj in search_object(key) if hasattr(obj, "ai")][0]
    history: list = []
    for tick in range(1, history_ticks + 1):
        history = append_tick(
            history,
            tick,
            [
                {
                    "role": "user",
                    "content": f'Guest{tick % 7} says to you: "Is the ale fresh ({tick})?"',
                },
                {"role": "assistant", "content": f"Answer {tick}: the ale is fresh today."},
            ],
            200,
        )
    npc.ai.set("history", history)
    npc.ai.set(
        "journal",
        [
            {
                "content": f"Note {i}: guest {i} liked the stew.",
                "importance": 3 + i % 5,
                "timestamp": iso_utc(),
            }
            for i in range(20)
        ],
    )
    npc.ai.set(
        "entities",
        {
            f"#{900 + i}": {"name": f"Guest{i}", "observations": [f"drinks cider ({i})"]}
            for i in range(10)
        },
    )
    foods = ("mutton stew", "cider", "rye bread", "honey cake", "pickled eggs", "dark ale")
    places = ("the harbour", "the old mill", "the northern pass", "the market", "the chapel")
    memory = longterm.get_memory()
    for i in range(memories):
        memory.store_sync(
            npc.dbref,
            f"Guest{i % 30} likes {foods[i % len(foods)]} and talks about {places[i % len(places)]} "
            f"(evening {i}).",
            infer=False,
        )
    return memories


def pieces_start() -> None:
    """Time every piece of assistant work the scheduler runs, by where it resumes."""
    from evennia_ai.engine import scheduler

    if getattr(scheduler._run_one, "_bench_wrapped", False):
        _STATE["pieces"] = {}
        return
    original = scheduler._run_one
    _STATE["pieces"] = {}

    def where() -> str:
        if not scheduler._waiting:
            return "?"
        waiter = scheduler._waiting[0]
        for callback in getattr(waiter, "callbacks", []) or []:
            for arg in list(callback[0][1]) + list(callback[0][2].values()):
                code = getattr(arg, "gi_code", None)
                if code is not None:
                    frame = arg.gi_frame
                    return f"{code.co_name}:{frame.f_lineno if frame else '?'}"
            func = callback[0][0]
            return getattr(func, "__qualname__", str(func))
        return "?"

    def run_one():
        label = where()
        started = time.perf_counter()
        try:
            return original()
        finally:
            _STATE["pieces"].setdefault(label, []).append(time.perf_counter() - started)

    run_one._bench_wrapped = True
    scheduler._run_one = run_one
    _time_parts()

    import gc

    def collected(phase, info):
        if phase == "start":
            _STATE["gc_started"] = time.perf_counter()
        elif _STATE.get("gc_started"):
            label = f"gc generation {info.get('generation')}"
            took = time.perf_counter() - _STATE.pop("gc_started")
            _STATE["pieces"].setdefault(label, []).append(took)

    gc.callbacks.append(collected)


def _timed(label: str, function):
    """``function`` wrapped to add its durations to the pieces under ``label``."""

    def timed(*args, **kwargs):
        started, cpu = time.perf_counter(), time.thread_time()
        try:
            return function(*args, **kwargs)
        finally:
            _STATE["pieces"].setdefault(label, []).append(time.perf_counter() - started)
            _STATE["pieces"].setdefault(label + " (cpu)", []).append(time.thread_time() - cpu)

    return timed


def _time_parts() -> None:
    """Time the parts of a tick's pieces too: choosing, reading the state, building, each write."""
    from evennia_ai.engine import bookkeeping, tick
    from evennia_ai.prompt import builder

    runner = tick.TickRunner
    runner.choose = _timed("part: choose", runner.choose)
    tick.TickState.read = staticmethod(_timed("part: TickState.read", tick.TickState.read))
    builder.ContextBuilder.finish = _timed(
        "part: ContextBuilder.finish", builder.ContextBuilder.finish
    )
    books = bookkeeping.Bookkeeper
    steps = books.steps

    def record_steps(self, state, outcome, trace):
        names = ("queue", "history", "trace", "metrics", "follow_up")
        return [
            _timed(f"part: record {name}", step)
            for name, step in zip(names, steps(self, state, outcome, trace))
        ]

    books.steps = record_steps


def pieces_dump(path: str) -> None:
    """Write ``{where: [seconds, ...]}`` of :func:`pieces_start` as JSON."""
    with open(path, "w") as handle:
        json.dump(_STATE.get("pieces") or {}, handle)


def tick_times(path: str, since: float) -> None:
    """Where a bench NPC's time went between its ticks ending after ``since`` (a Unix time).

    Writes JSON lists (seconds): each tick's ``duration`` (start to end), the ``model`` part of
    it (its model calls' latency as the client saw it), and the ``gap`` from the NPC's previous
    tick's end to this one's start (waiting for a trigger and for its turn on the reactor).
    """
    from evennia_ai.utils import parse_iso

    out = {"duration": [], "model": [], "gap": []}
    for npc in bench_npcs():
        previous_end = None
        for trace in npc.ai.traces():
            started, ended = parse_iso(trace.get("started")), parse_iso(trace.get("ended"))
            if started is None or ended is None:
                continue
            if ended.timestamp() >= since:
                out["duration"].append(float(trace.get("duration") or 0.0))
                out["model"].append(
                    sum(float(it.get("latency") or 0.0) for it in trace.get("iterations") or [])
                )
                if previous_end is not None:
                    out["gap"].append((started - previous_end).total_seconds())
            previous_end = ended
    with open(path, "w") as handle:
        json.dump(out, handle)


def tick_ends_start(key: str, path: str) -> None:
    """Append a line to ``path`` each time the tick of the NPC named ``key`` ends.

    The line is ``<tick count> <seconds (perf_counter)>``: a benchmark outside the server reads
    the file to know a tick is over (CPU per answered line counts the work after the reply)
    without asking the server anything (a ``py`` command would cost the server CPU itself).
    Wraps :meth:`evennia_ai.scripts.AssistantScript._tick_done` once; later calls only change
    the NPC and the file.
    """
    from evennia_ai.scripts import AssistantScript

    _STATE["tick_ends"] = (key, path)
    open(path, "w").close()
    original = AssistantScript._tick_done
    if getattr(original, "_bench_wrapped", False):
        return

    def tick_done(self, result, runner=None):
        out = original(self, result, runner)
        watched = _STATE.get("tick_ends")
        npc = self.obj
        if watched and npc is not None and npc.key == watched[0]:
            with open(watched[1], "a") as handle:
                handle.write(f"{self.tick_count} {time.perf_counter():.6f}\n")
        return out

    tick_done._bench_wrapped = True
    AssistantScript._tick_done = tick_done


def recall_deadline_stats() -> dict | None:
    """The recall deadline's figures in this server (:func:`bench.common.recall_deadline_stats`)."""
    from bench.common import recall_deadline_stats as stats

    return stats()


def last_say(key: str, path: str) -> None:
    """Write the last line the NPC named ``key`` said, as its history keeps it, to ``path``
    (JSON ``{"text": ...}``, ``null`` when it said nothing yet): a ``say`` tool call's
    message, or the plain content of its last assistant message."""
    from evennia.utils.search import search_object

    npc = [obj for obj in search_object(key) if hasattr(obj, "ai")][0]
    said = None
    for message in reversed(npc.ai.get("history") or []):
        if message.get("role") != "assistant":
            continue
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            if function.get("name") == "say":
                arguments = function.get("arguments")
                if isinstance(arguments, str):
                    try:
                        arguments = json.loads(arguments)
                    except ValueError:
                        arguments = {}
                said = (arguments or {}).get("message")
                break
        if said is None and message.get("content"):
            said = message["content"]
        if said is not None:
            break
    tmp = path + ".tmp"
    with open(tmp, "w") as handle:
        json.dump({"text": said}, handle)
    os.replace(tmp, path)


def heap_start(frames: int = 8) -> None:
    """Start tracing Python allocations (``tracemalloc``) and keep a first snapshot, with a
    count of live objects by type, for :func:`heap_diff`."""
    import collections
    import gc
    import tracemalloc

    if not tracemalloc.is_tracing():
        tracemalloc.start(frames)
    gc.collect()
    _STATE["heap"] = tracemalloc.take_snapshot()
    _STATE["types"] = collections.Counter(type(o).__name__ for o in gc.get_objects())


def heap_diff(path: str, top: int = 25) -> None:
    """Write what grew since :func:`heap_start` to ``path``: the allocation sites by bytes
    (with their tracebacks) and the object types by count."""
    import collections
    import gc
    import tracemalloc

    gc.collect()
    now = tracemalloc.take_snapshot()
    lines = [
        f"RSS {rss_bytes() / 2**20:.0f} MB; traced {tracemalloc.get_traced_memory()[0] / 2**20:.0f} MB"
    ]
    stats = now.compare_to(_STATE["heap"], "traceback")
    for stat in stats[:top]:
        lines.append(f"\n{stat.size_diff / 2**20:+.2f} MB in {stat.count_diff:+d} blocks")
        lines.extend("    " + line for line in stat.traceback.format())
    types = collections.Counter(type(o).__name__ for o in gc.get_objects())
    grown = sorted(((n - _STATE["types"].get(t, 0), t) for t, n in types.items()), reverse=True)
    lines.append("\nobjects by type, growth: " + ", ".join(f"{t} {d:+d}" for d, t in grown[:top]))
    with open(path, "w") as handle:
        handle.write("\n".join(lines) + "\n")

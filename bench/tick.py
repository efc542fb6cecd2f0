"""One tick's reactor time and repeated work, on the demo's Innkeeper with its state loaded.

``python -m bench tick``. A test database (in memory) gets the demo's tavern Innkeeper with
its persona, operator prompt and goals, plus a 50-message history, 20 journal entries and 10
known people; a player says a line and the NPC ticks, 40 times, with the built-in offline
model (no network). Model calls and memory searches run in the calling thread here, and the
time spent inside them (what a real server runs in worker threads) is subtracted, so the
figure is the tick's time on the reactor thread: choosing, building the request, running the
loop's bookkeeping and tools, and writing the state.

The second table counts, per tick, the calls of the functions the "Tick state" issue found
repeated, from a cProfile run of 10 more ticks (kept apart from the timed ones: the profiler
slows what it sees).
"""

from __future__ import annotations

import cProfile
import os
import pstats
import sys
import time
from contextlib import contextmanager
from unittest import mock

from bench.common import summary_ms, table

TICKS = 40
COUNTED = (
    ("normalize_queue", "event queue normalised"),
    ("render_events", "event batch rendered"),
    ("to_schema", "tool schema built (per tool)"),
    ("validate_value", "JSON-Schema validations"),
    ("count_messages", "request messages counted"),
    ("count_tools", "tool schemas counted"),
)


def _database():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evennia_ai_test_settings")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, os.path.join(root, "tests"))
    import django

    django.setup()
    from django.test.runner import DiscoverRunner
    from django.test.utils import setup_test_environment

    try:
        setup_test_environment()
    except RuntimeError:  # another benchmark of this run set it up already
        pass
    runner = DiscoverRunner(verbosity=0, interactive=False)
    old = runner.setup_databases()
    import evennia

    evennia._init()
    return runner, old


def _in_this_thread(fn, *args, **kwargs):
    from twisted.internet import defer

    return defer.maybeDeferred(fn, *args, **kwargs)


@contextmanager
def synchronous_calls():
    """A test database (in memory) where model and memory calls run in the calling thread, so a
    tick finishes inside ``run_tick`` (the loopback server answers from its own thread)."""
    runner, old = _database()
    try:
        from evennia_ai.engine import upkeep
        from evennia_ai.llm import client as client_module
        from evennia_ai.memory import longterm

        with (
            mock.patch.object(client_module, "defer_to_thread", _in_this_thread),
            mock.patch.object(longterm, "defer_to_thread", _in_this_thread),
            mock.patch.object(upkeep, "defer_to_thread", _in_this_thread),
        ):
            yield
    finally:
        runner.teardown_databases(old)


def _innkeeper():
    from evennia.objects.objects import DefaultCharacter, DefaultRoom
    from evennia.utils.create import create_object

    from evennia_ai.memory.history import append_tick
    from evennia_ai.typeclasses import AIAssistantCharacter
    from evennia_ai.workspace.goals import add_goal

    room = create_object(DefaultRoom, key="The Gilded Tankard", nohome=True)
    player = create_object(DefaultCharacter, key="Alice", location=room, home=room)
    player.sessions.count = lambda: 1  # a connected player, as in a game (an audience)
    npc = create_object(AIAssistantCharacter, key="Innkeeper", location=room, home=room)
    npc.ai.set_persona(
        "Marta Ashgrove, innkeeper of the Gilded Tankard for twenty years. Warm but no "
        "pushover; knows every rumour in town; proud of her mutton stew and her cellar."
    )
    npc.ai.set_user_system_prompt(
        "Keep the tavern friendly. Never reveal other guests' private business."
    )
    goals: list = []
    for i, text in enumerate(
        ["Get the tavern ready for the festival", "Check the cellar", "Plan the menu"]
    ):
        goals, _ = add_goal(goals, text, tick=i + 1)
    npc.ai.update_goals(lambda _old: goals)
    history: list = []
    for tick in range(1, 26):
        history = append_tick(
            history,
            tick,
            [
                {"role": "user", "content": f'Alice says to you: "Question {tick} about ale?"'},
                {"role": "assistant", "content": f"Answer {tick}: the ale is fresh today."},
            ],
            200,
        )
    npc.ai.set("history", history)
    npc.ai.set(
        "journal",
        [
            {"content": f"Note {i}: guest {i} liked the stew.", "importance": 3 + i % 5}
            for i in range(20)
        ],
    )
    npc.ai.set(
        "entities",
        {
            f"#{100 + i}": {"name": f"Guest{i}", "observations": [f"drinks cider ({i})"]}
            for i in range(10)
        },
    )
    return npc, player


def bench_tick(ticks: int = TICKS) -> tuple[str, dict]:
    from django.test import override_settings

    from evennia_ai.llm import client as client_module
    from evennia_ai.memory import longterm

    off_reactor = [0.0]

    def timed_thread(fn, *args, **kwargs):
        from twisted.internet import defer

        started = time.perf_counter()
        try:
            return defer.succeed(fn(*args, **kwargs))
        except Exception:
            return defer.fail()
        finally:
            off_reactor[0] += time.perf_counter() - started

    runner, old = _database()
    try:
        with (
            override_settings(
                EVENNIA_AI_MODEL="",
                EVENNIA_AI_AUTONOMY=False,
                EVENNIA_AI_SPEAKER_EVENTS_PER_MINUTE=0,  # one scripted player talks fast
            ),
            mock.patch.object(client_module, "defer_to_thread", timed_thread),
            mock.patch.object(longterm, "defer_to_thread", timed_thread),
        ):
            npc, player = _innkeeper()
            script = npc.ai.script
            script.trigger_tick = lambda: None
            durations: list[float] = []
            profile = cProfile.Profile()
            profiled = 10
            for i in range(ticks + 5 + profiled):
                player.at_say(f"Innkeeper, what is good to eat tonight? ({i})")
                off_reactor[0] = 0.0
                counting = i >= ticks + 5  # a separate pass: the profiler slows what it sees
                if counting:
                    profile.enable()
                started = time.perf_counter()
                d = script.run_tick()
                total = time.perf_counter() - started
                if counting:
                    profile.disable()
                assert d is not None and d.called, "the tick did not finish synchronously"
                trace = d.result
                if i >= 5 and trace.context_type == "tick_event":  # it really answered
                    assert trace.error is None and any(
                        c.name == "say" and c.success for c in trace.tool_calls
                    ), f"tick {i} did not answer: {trace.stop_reason} {trace.error}"
                if 5 <= i < ticks + 5:  # the first ticks warm caches (tokenizer, registry)
                    durations.append(total - off_reactor[0])
        stats = pstats.Stats(profile)
        counts = {}
        for (_file, _line, name), (_cc, ncalls, *_rest) in stats.stats.items():
            counts[name] = counts.get(name, 0) + ncalls
    finally:
        runner.teardown_databases(old)
    reactor = summary_ms(durations)
    rows = [[label, f"{counts.get(name, 0) / profiled:.1f}"] for name, label in COUNTED]
    text = table(
        f"One tick on the reactor thread, demo Innkeeper with state, offline model ({ticks} ticks, ms)",
        ["p50", "p95", "mean"],
        [[reactor["p50"], reactor["p95"], reactor["mean"]]],
    )
    text += "\n\n" + table(
        "Repeated work per tick (calls, cProfile)", ["work", "calls per tick"], rows
    )
    return text, {
        "reactor": reactor,
        "counts": {n: counts.get(n, 0) / profiled for n, _ in COUNTED},
    }


def main(quick: bool = False) -> str:
    text = bench_tick(ticks=10 if quick else TICKS)[0]
    print(text)
    return text


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)

"""Cost and pace: what an hour of play and an idle hour cost, in tokens and dollars.

``python -m bench cost`` (about two minutes). A test database (in memory) gets the demo's tavern
with two AI NPCs (the Innkeeper with her state, and a Bard) and a player; every request goes
through litellm to the loopback model server, answered by the reading model
(:mod:`evennia_ai.testing.reading_model`), and is priced with a named model's litellm price
(:data:`PRICED_AS`). The game's clock is simulated (the plugin's time sources are replaced), so
an hour takes a couple of minutes; each 5-second step runs every NPC's interval tick and then
the ticks speech triggered at once, as the Script does. Default settings, except the model, its
window (:data:`WINDOW`, as the priced model's) and the per-speaker flood limit (the scripted
player talks faster than the real clock it runs on).

1. **A player-hour**: the player talks with the Innkeeper for 20 minutes (telling facts amid
   small talk, a line for the Bard now and then), leaves for 15, comes back and asks for every
   fact, leaves for the night; the NPCs sleep the last 10 minutes. Reported: tokens and dollars
   for the hour, per kind of tick, whether every line addressed to an NPC was answered, and
   whether each fact was in the request when the player asked for it.
2. **An idle NPC-hour**: ten AI NPCs with active goals in a room no player visits, for an hour.
   Reported: tokens in the first minute and after it, and per NPC-hour.
3. **A crowded room** (issue 34, :mod:`bench.crowded`): five AI NPCs and a player, 45 lines in
   half an hour (addressed to one NPC, naming nobody, to everyone, naming every NPC), then a
   chatty phase where the NPCs always name each other, and the same lines with one NPC; and
   the reactor CPU per line heard by 1 and by 10 AI NPCs. Reported against the issue's targets.
4. **A routine's game day** (issue 36, :mod:`bench.routine_day`): the demo's baker walks her
   day through the demo's town with nobody near: model tokens (the target is 0), moves, ticks
   in her slot's room, and the thread CPU of a tick.

"Before" figures come from ``bench/baselines/cost.json``: the player-hour and idle hour run on
the commit before the "Cost and pace" work, the crowded room (key ``crowded``) on the commit
before issue 34. ``python -m bench.cost --baseline`` writes every part it ran there,
``--baseline=crowded`` only the crowded room's key (the others are kept either way).
``--only=crowded`` runs the crowded room alone (under a minute).
"""

from __future__ import annotations

import datetime as _datetime
import json
import sys
import tempfile
import time as _time
import types
from contextlib import ExitStack, contextmanager
from pathlib import Path
from unittest import mock

from bench.common import table
from bench.tick import _innkeeper, synchronous_calls

MODEL = "openai/test-model"
CHAT = "/v1/chat/completions"
PRICED_AS = "gpt-4o-mini"
WINDOW = 128000
STEP = 5.0  # seconds of game time per step (the default tick interval)
HOUR = 3600.0
START = _datetime.datetime(2026, 11, 25, 20, 0, 0)  # server local time when the hour begins
SLEEP_SCHEDULE = ("20:50", "06:00")  # the NPCs sleep the hour's last 10 minutes
IDLE_NPCS = 10
BASELINE = Path(__file__).resolve().parent / "baselines" / "cost.json"
PARTS = ("player_hour", "idle_hour", "crowded", "routine_day")

FACTS = [
    ("horse", "Thunder"),
    ("home town", "Riverdale"),
    ("favourite drink", "cider"),
    ("dog", "Biscuit"),
    ("sword", "Dawnbreaker"),
    ("brother", "Tomas"),
    ("boat", "Gull"),
    ("guild", "Weavers"),
]


# -- the simulated clock --------------------------------------------------------------------------
class Clock:
    """Game time for the plugin: ``time.time()``, ``utcnow()`` and ``datetime.now()``."""

    def __init__(self, start: _datetime.datetime):
        self.start = start
        self.offset = 0.0
        self.base = start.timestamp()

    def advance(self, seconds: float) -> None:
        self.offset += seconds

    def time(self) -> float:
        return self.base + self.offset

    def local(self) -> _datetime.datetime:
        return self.start + _datetime.timedelta(seconds=self.offset)

    def utc(self) -> _datetime.datetime:
        return _datetime.datetime.fromtimestamp(self.time(), _datetime.timezone.utc)


@contextmanager
def simulated(clock: Clock):
    """Every evennia_ai module reads ``clock`` (whatever names it uses) while this is open."""
    with ExitStack() as stack:
        for patch in _clock_patches(clock):
            stack.enter_context(patch)
        yield clock


def _clock_patches(clock: Clock) -> list:
    """Patches giving every evennia_ai module the simulated clock (whatever names it uses)."""
    from evennia_ai import utils

    fake_time = types.SimpleNamespace(
        time=clock.time,
        monotonic=_time.monotonic,
        perf_counter=_time.perf_counter,
        sleep=_time.sleep,
        strftime=_time.strftime,
        gmtime=_time.gmtime,
        localtime=_time.localtime,
    )

    class FakeDatetime(_datetime.datetime):
        @classmethod
        def now(cls, tz=None):
            return clock.utc().astimezone(tz) if tz else clock.local()

    patches = []
    for name, module in list(sys.modules.items()):
        if not name.startswith("evennia_ai") or module is None:
            continue
        if getattr(module, "time", None) is _time:
            patches.append(mock.patch.object(module, "time", fake_time))
        if getattr(module, "datetime", None) is _datetime.datetime:
            patches.append(mock.patch.object(module, "datetime", FakeDatetime))
        if getattr(module, "utcnow", None) is utils.utcnow:
            patches.append(mock.patch.object(module, "utcnow", clock.utc))
    return patches


# -- driving the NPCs -----------------------------------------------------------------------------
class World:
    """The NPCs' scripts, run the way the Script runs them: an interval tick, then triggers."""

    def __init__(self, npcs):
        self.npcs = list(npcs)
        self.triggered: set[int] = set()
        self.traces: list = []
        for npc in self.npcs:
            script = npc.ai.script
            script.trigger_tick = lambda npc_id=npc.id: self.triggered.add(npc_id)

    def _tick(self, npc) -> None:
        d = npc.ai.script.run_tick()
        if d is None:
            return
        assert d.called, "the tick did not finish synchronously"
        if d.result is not None:
            self.traces.append((npc.key, d.result))

    def step(self) -> None:
        """One interval: every NPC's timer tick, then up to four rounds of triggered ticks."""
        self.triggered.clear()
        for npc in self.npcs:
            self._tick(npc)
        for _ in range(4):
            due = [n for n in self.npcs if n.id in self.triggered]
            self.triggered.clear()
            if not due:
                break
            for npc in due:
                self._tick(npc)


def _said(trace) -> str:
    for call in trace.tool_calls:
        if call.name == "say" and call.success:
            return str((call.arguments or {}).get("message", ""))
    return ""


def _player_script() -> dict[int, tuple]:
    """Second of the hour -> what the player does: ("say", text, npc, expected) or a move."""
    plan: dict[int, tuple] = {}
    lines = []
    facts = iter(FACTS)
    for i in range(30):  # 20 minutes, a line every 40 s
        fact = next(facts, None) if i % 3 == 0 else None
        if fact:
            lines.append((f"Innkeeper, my {fact[0]} is {fact[1]}.", "Innkeeper", None))
        elif i % 7 == 4:
            lines.append((f"Bard, play me a song about the harvest ({i}).", "Bard", None))
        else:
            lines.append(
                (f"Lovely evening, Innkeeper, the stew smells fine ({i}).", "Innkeeper", None)
            )
    for i, line in enumerate(lines):
        plan[10 + 40 * i] = ("say",) + line
    plan[1220] = ("leave",)
    plan[2120] = ("return",)
    for i, (thing, value) in enumerate(FACTS):  # 2140 .. 2700: a question every 70 s
        plan[2140 + 70 * i] = ("say", f"Innkeeper, what is my {thing}?", "Innkeeper", value)
    plan[2760] = ("leave",)
    return plan


def _kind(body: dict) -> str:
    """The kind of call a request is (its task heading; mem0's extraction; else an event)."""
    from evennia_ai.llm import contracts
    from evennia_ai.testing.reading_model import TASK_RE, read_memory_request

    if read_memory_request(body) is not None:
        return "memory_extraction"
    tasks = TASK_RE.findall(contracts.request_text(body.get("messages") or []))
    return tasks[-1] if tasks else "tick_event"


def _by_kind(server) -> dict[str, list[int]]:
    """Requests and prompt tokens (tools included, as the priced model counts them) per kind."""
    from evennia_ai.llm import tokens

    counter = tokens.TokenCounter(PRICED_AS)
    kinds: dict[str, list[int]] = {}
    for request in server.requests_to(CHAT):
        body = request.body or {}
        size = counter.count_messages(body.get("messages") or []) + counter.count_tools(
            body.get("tools") or []
        )
        row = kinds.setdefault(_kind(body), [0, 0, 0])
        row[0] += 1
        row[1] += size
        row[2] += counter.count_tools(body.get("tools") or [])
    return kinds


def _tokens(server) -> tuple[int, int]:
    """Prompt tokens of every request and the completion tokens the server reported."""
    prompt = sum(row[1] for row in _by_kind(server).values())
    return prompt, server.usage_totals().get("completion_tokens", 0)


def _price(prompt: int, completion: int) -> float:
    import litellm

    info = litellm.model_cost[PRICED_AS]
    return prompt * info["input_cost_per_token"] + completion * info["output_cost_per_token"]


def _settings(server, folder: str) -> dict:
    return {
        "EVENNIA_AI_MODEL": MODEL,
        "EVENNIA_AI_API_BASE": server.url,
        "EVENNIA_AI_API_KEY": "x",
        "EVENNIA_AI_MAX_RETRIES": 0,
        "EVENNIA_AI_CONTEXT_WINDOWS": {MODEL: WINDOW},
        "EVENNIA_AI_SPEAKER_EVENTS_PER_MINUTE": 0,
        "EVENNIA_AI_SLEEP_SCHEDULE": SLEEP_SCHEDULE,
        "EVENNIA_AI_DATA_DIR": folder,
    }


def _bard(room):
    from evennia.utils.create import create_object

    from evennia_ai.typeclasses import AIAssistantCharacter
    from evennia_ai.workspace.goals import add_goal

    bard = create_object(AIAssistantCharacter, key="Bard", location=room, home=room)
    bard.ai.set_persona("Pell the bard, who plays for coins by the hearth of the Gilded Tankard.")
    goals, _ = add_goal([], "Learn a new song for the festival", tick=1)
    bard.ai.update_goals(lambda _old: goals)
    return bard


def player_hour() -> dict:
    """The scripted hour with a player; its figures."""
    from django.test import override_settings
    from evennia.objects.objects import DefaultRoom
    from evennia.utils.create import create_object

    from evennia_ai.memory import longterm
    from evennia_ai.testing.model_server import ModelServer
    from evennia_ai.testing.reading_model import read_and_answer

    clock = Clock(START)
    with (
        ModelServer(responder=read_and_answer, window_of=lambda _m: WINDOW) as server,
        tempfile.TemporaryDirectory() as folder,
        override_settings(**_settings(server, folder)),
    ):
        longterm.close()
        longterm.get_memory().init_sync()  # start-up work done before the hour is counted
        npc, player = _innkeeper()  # a connected player
        room = npc.location
        street = create_object(DefaultRoom, key="The Street", nohome=True)
        bard = _bard(room)
        world = World([npc, bard])
        plan = _player_script()
        addressed = answered = asked = in_request = right = 0
        pending: list[tuple] = []  # (npc key, line, expected, requests before)
        with simulated(clock):
            second = 0
            while second < HOUR:
                for at in range(second, second + int(STEP)):
                    action = plan.get(at)
                    if not action:
                        continue
                    if action[0] == "leave":
                        player.move_to(street)
                    elif action[0] == "return":
                        player.move_to(room)
                    else:
                        _, text, to, expected = action
                        pending.append((to, text, expected, len(server.requests_to(CHAT))))
                        player.at_say(text)
                traces_before = len(world.traces)
                world.step()
                for to, text, expected, before in pending:
                    replies = [
                        t
                        for key, t in world.traces[traces_before:]
                        if key == to and t.context_type == "tick_event" and text in t.event_text
                    ]
                    said = " ".join(_said(t) for t in replies)
                    addressed += 1
                    answered += bool(said)
                    if expected:
                        asked += 1
                        right += expected in said
                        bodies = [r.body for r in server.requests_to(CHAT)[before:]]
                        in_request += any(expected in json.dumps(b) for b in bodies)
                pending = []
                clock.advance(STEP)
                second += int(STEP)
        kinds = _by_kind(server)
        ticks: dict[str, int] = {}
        for _key, trace in world.traces:
            ticks[trace.context_type] = ticks.get(trace.context_type, 0) + 1
        prompt, completion = _tokens(server)
        requests = len(server.requests_to(CHAT))
        for obj in (npc, bard, player, street, room):
            obj.delete()
        longterm.close()
    return {
        "tokens": prompt + completion,
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "dollars": _price(prompt, completion),
        "requests": requests,
        "kinds": kinds,
        "ticks": ticks,
        "lines": addressed,
        "answered": answered,
        "asked": asked,
        "right": right,
        "in_request": in_request,
    }


def idle_hour() -> dict:
    """Ten AI NPCs with active goals and nobody to see them, for an hour."""
    from django.test import override_settings
    from evennia.objects.objects import DefaultRoom
    from evennia.utils.create import create_object

    from evennia_ai.memory import longterm
    from evennia_ai.testing.model_server import ModelServer
    from evennia_ai.testing.reading_model import read_and_answer
    from evennia_ai.typeclasses import AIAssistantCharacter
    from evennia_ai.workspace.goals import add_goal

    clock = Clock(START.replace(hour=9))  # a day hour: nobody sleeps
    with (
        ModelServer(responder=read_and_answer, window_of=lambda _m: WINDOW) as server,
        tempfile.TemporaryDirectory() as folder,
        override_settings(**_settings(server, folder)),
    ):
        longterm.close()
        longterm.get_memory().init_sync()
        room = create_object(DefaultRoom, key="The Empty Hall", nohome=True)
        npcs = []
        for i in range(IDLE_NPCS):
            npc = create_object(AIAssistantCharacter, key=f"Keeper{i}", location=room, home=room)
            npc.ai.set_persona(f"Keeper {i}, who looks after the hall.")
            goals, _ = add_goal([], f"Polish the hall's {i}th lamp", tick=1)
            npc.ai.update_goals(lambda _old, goals=goals: goals)
            npcs.append(npc)
        world = World(npcs)
        first_minute = 0
        with simulated(clock):
            second = 0
            while second < HOUR:
                world.step()
                clock.advance(STEP)
                second += int(STEP)
                if second == 60:
                    first_minute = sum(_tokens(server))
        prompt, completion = _tokens(server)
        for obj in npcs + [room]:
            obj.delete()
        longterm.close()
    total = prompt + completion
    return {
        "first_minute": first_minute,
        "after_first_minute": total - first_minute,
        "tokens": total,
        "per_npc_hour": total / IDLE_NPCS,
        "dollars_per_npc_hour": _price(prompt, completion) / IDLE_NPCS,
        "ticks": len(world.traces),
    }


def measure(parts: tuple[str, ...] = PARTS) -> dict:
    """Run ``parts`` (of :data:`PARTS`) in one test database; their figures by name."""
    from bench import crowded, routine_day

    runs = {
        "player_hour": player_hour,
        "idle_hour": idle_hour,
        "crowded": crowded.crowded,
        "routine_day": routine_day.routine_day,
    }
    with synchronous_calls():
        return {name: runs[name]() for name in parts}


def _commit() -> str:
    import subprocess

    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            cwd=Path(__file__).resolve().parent,
        ).stdout.strip()
    except OSError:
        return "?"


def report(now: dict, before: dict | None) -> str:
    """The tables of the parts ``now`` holds, each against its "before" figures."""
    from bench import crowded, routine_day

    text = ""
    if "player_hour" in now and "idle_hour" in now:
        text = _hour_report(now, before)
    if "crowded" in now:
        was = (before or {}).get("crowded")
        label = f"before issue 34 ({was.get('commit', '?')})" if was else "before issue 34"
        text += ("\n\n" if text else "") + crowded.report(
            now["crowded"], was, label, f"now ({_commit()})"
        )
    if "routine_day" in now:
        text += ("\n\n" if text else "") + routine_day.report(now["routine_day"])
    return text


def _hour_report(now: dict, before: dict | None) -> str:
    p, i = now["player_hour"], now["idle_hour"]
    bp = (before or {}).get("player_hour") or {}
    bi = (before or {}).get("idle_hour") or {}
    label = f"before ({before.get('commit', '?')})" if before else "before"

    def was(data: dict, key: str, fmt="{:,}") -> str:
        return fmt.format(data[key]) if key in data else "-"

    change = f"{(p['tokens'] - bp['tokens']) / bp['tokens']:+.0%}" if bp.get("tokens") else "-"
    rows = [
        ["tokens per player-hour", was(bp, "tokens"), f"{p['tokens']:,}", change],
        [
            f"dollars per player-hour ({PRICED_AS})",
            was(bp, "dollars", "${:.4f}"),
            f"${p['dollars']:.4f}",
            "",
        ],
        ["model requests in the hour", was(bp, "requests"), f"{p['requests']:,}", ""],
        [
            "player lines answered",
            f"{bp['answered']}/{bp['lines']}" if bp else "-",
            f"{p['answered']}/{p['lines']}",
            "",
        ],
        [
            "facts in the request when asked",
            f"{bp['in_request']}/{bp['asked']}" if bp else "-",
            f"{p['in_request']}/{p['asked']}",
            "",
        ],
        [
            "facts answered right",
            f"{bp['right']}/{bp['asked']}" if bp else "-",
            f"{p['right']}/{p['asked']}",
            "",
        ],
        ["idle: tokens in the first minute", was(bi, "first_minute"), f"{i['first_minute']:,}", ""],
        [
            "idle: tokens after the first minute",
            was(bi, "after_first_minute"),
            f"{i['after_first_minute']:,}",
            "",
        ],
        [
            "tokens per idle NPC-hour",
            was(bi, "per_npc_hour", "{:,.0f}"),
            f"{i['per_npc_hour']:,.0f}",
            "",
        ],
        [
            f"dollars per idle NPC-hour ({PRICED_AS})",
            was(bi, "dollars_per_npc_hour", "${:.4f}"),
            f"${i['dollars_per_npc_hour']:.4f}",
            "",
        ],
    ]
    text = table(
        f"An hour of play and an idle hour, priced as {PRICED_AS} (target: >= 40% fewer tokens "
        "per player-hour, every line answered, every fact in the request; idle: 0 tokens after "
        "the first minute)",
        ["figure", label, f"now ({_commit()})", "change"],
        rows,
    )
    kinds = sorted(set(p["kinds"]) | set(bp.get("kinds", {})))

    def cell(data: dict, kind: str) -> str:
        if kind not in data.get("kinds", {}):
            return "-"
        requests, prompt, schemas = data["kinds"][kind]
        return (
            f"{requests:,} requests, {prompt:,} prompt tokens ({schemas / prompt:.0%} tools, "
            f"{schemas / requests:,.0f} per request)"
        )

    text += "\n\n" + table(
        "The player-hour by kind of call (requests, prompt tokens, tool schemas: share and "
        "tokens per request; target for tick_event: <= 1,000 per request)",
        ["kind", label, "now"],
        [[k, cell(bp, k), cell(p, k)] for k in kinds],
    )
    text += "\n\n" + table(
        "The player-hour's ticks by context type",
        ["context", label, "now"],
        [
            [c, f"{bp.get('ticks', {}).get(c, '-')}", f"{p['ticks'].get(c, '-')}"]
            for c in sorted(set(p["ticks"]) | set(bp.get("ticks", {})))
        ],
    )
    return text


def write_baseline(now: dict, parts: tuple[str, ...]) -> None:
    """Keep the parts ``parts`` of ``now`` as the "before" figures, each with the commit it
    was measured on; the parts not named stay as they were."""
    BASELINE.parent.mkdir(exist_ok=True)
    kept = json.loads(BASELINE.read_text()) if BASELINE.exists() else {}
    for name in parts:
        kept[name] = dict(now[name], commit=now["commit"])
    if "player_hour" in parts:  # the hour's tables name the commit of the whole file
        kept["commit"] = now["commit"]
    BASELINE.write_text(json.dumps(kept, indent=1, sort_keys=True) + "\n")


def _option(argv: list[str], name: str) -> tuple[str, ...] | None:
    """The parts named by ``--name=a,b`` in ``argv`` (None when absent; all for a bare
    ``--name``)."""
    for arg in argv:
        if arg == f"--{name}":
            return PARTS
        if arg.startswith(f"--{name}="):
            parts = tuple(p for p in arg.split("=", 1)[1].split(",") if p)
            unknown = [p for p in parts if p not in PARTS]
            if unknown:
                raise SystemExit(f"unknown part(s) {unknown}; choose from {list(PARTS)}")
            return parts
    return None


def main(argv: list[str] | None = None) -> str:
    """Run the benchmark (``--only=crowded``: some parts), print and return its tables;
    ``--baseline`` (``--baseline=crowded``: those parts) keeps the run as "before"."""
    argv = list(argv or [])
    now = measure(_option(argv, "only") or PARTS)
    now["commit"] = _commit()
    keep = _option(argv, "baseline")
    if keep is not None:
        if "--baseline" in argv:  # a bare --baseline: every part that was run
            keep = tuple(name for name in PARTS if name in now)
        missing = [name for name in keep if name not in now]
        if missing:
            raise SystemExit(f"--baseline names part(s) {missing} that --only did not run")
        write_baseline(now, keep)
    before = json.loads(BASELINE.read_text()) if BASELINE.exists() else None
    text = report(now, before)
    print(text)
    return text


if __name__ == "__main__":
    main(sys.argv[1:])

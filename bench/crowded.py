"""Crowded rooms (issue 34): five AI NPCs and one player in a room, and the reactor per heard line.

Part of ``python -m bench cost`` (:mod:`bench.cost` runs and reports it). Same set-up as the
player-hour there: a test database in memory, every request through litellm to the loopback
model server answered by the reading model, the game's clock simulated, each 5-second step
running every NPC's interval tick and then the ticks speech triggered.

1. :func:`room_hour` talks for 30 minutes in "The Crowded Tankard": the Innkeeper (the room's
   host), Bard, Smith, Guard and Cook, and a connected player who says a line every 40 s, 45
   lines (:func:`room_lines`): lines addressed to one NPC (the name at the start, in the middle
   or at the end), facts told to the Innkeeper and later asked of another NPC, statements and
   questions that name nobody, lines to everyone and lines naming every NPC (bad input). The
   same lines are spoken in a room with the Innkeeper alone (the absent NPCs' names left in),
   the yardstick for tokens. With ``chatty``, five more player lines follow, each answered by
   NPCs that always name another NPC in what they say (the worst case for NPC talk that ends).
2. :func:`hearing_cpu` times the reactor thread's work for one line heard by 1 and by 10 AI
   NPCs (``player.at_say`` plus the flush of the turn's batched writes), with tick starts and
   recall embeddings stubbed and counted and the attribute writes counted by key.

The scenario uses only ``at_say`` and the host state key, so it runs on the code before issue
34 too (where every NPC in the room ticks on every line): that is the "before" column.
"""

from __future__ import annotations

import json
import tempfile
import time as _time
from contextlib import ExitStack
from dataclasses import dataclass, field
from unittest import mock

from bench.cost import (
    FACTS,
    PRICED_AS,
    START,
    STEP,
    WINDOW,
    Clock,
    World,
    _kind,
    _price,
    _said,
    _settings,
    simulated,
)

ROOM = "The Crowded Tankard"
NPC_NAMES = ("Innkeeper", "Bard", "Smith", "Guard", "Cook")
PERSONAS = {
    "Innkeeper": "Marta, who keeps the Crowded Tankard and knows every regular by name.",
    "Bard": "Pell the bard, who plays for coins by the hearth.",
    "Smith": "Hild the smith, who drinks here after a day at the forge.",
    "Guard": "Oswin of the town watch, off duty, with a mug of ale.",
    "Cook": "Bess the cook, who brings out the pies and hears every order.",
}
LINE_EVERY = 40  # seconds between the player's lines
CHATTY_EVERY = 60  # seconds between the chatty phase's player lines
TALK = 45 * LINE_EVERY  # the 45 lines' half hour
FACTS_TOLD = FACTS[:5]
ASKED_OF = ("Guard", "Bard", "Smith", "Cook", "Guard")  # who is asked each fact told earlier
ADDRESS_ORDER = ("Bard", "Smith", "Guard", "Cook", "Innkeeper")
BAD_INPUT = "Innkeeper, Bard, Smith, Guard, Cook, hello!"
EVERYONE = ("Good evening, everyone!", "Hello all, a round on me!")
# What comes after each block's seven lines (8 statements, 8 questions, 2 to everyone, 2 bad).
EXTRAS = (
    ("everyone", "statement"),
    ("question", "bad"),
    ("statement", "question"),
    ("everyone", "bad"),
    ("statement", "question"),
)
ONE_NPC = ("addressed", "fact", "asked")  # the kinds of line addressed to one NPC
NOBODY = ("statement", "question")  # the kinds that name nobody
HEAR_LINES = 200  # lines timed per room, kind of line and round in hearing_cpu
HEAR_ROUNDS = 3  # the median round is reported
HEAR_LISTENERS = (1, 10)
HEAR_TEXTS = (("addressed", "Npc0, how is the stew?"), ("unaddressed", "What a lovely evening."))


@dataclass
class Line:
    """One thing the player says.

    Attributes:
        text: What is said.
        kind: addressed, fact, statement, question, asked, everyone, bad or chatty.
        to: The NPC it names (addressed to one), else None.
        expected: For a question about a fact: the value a right answer holds.
    """

    text: str
    kind: str
    to: str | None = None
    expected: str | None = None


@dataclass
class Spoken:
    """What followed one player line: the requests and traces up to the next line."""

    line: Line
    first_request: int
    first_trace: int
    step_requests: list = field(default_factory=list)  # (npc key, kind, body) of its step
    step_traces: list = field(default_factory=list)  # (npc key, trace) of its step
    requests: list = field(default_factory=list)  # up to the next line
    traces: list = field(default_factory=list)


def _addressed(i: int) -> Line:
    name = ADDRESS_ORDER[i % len(ADDRESS_ORDER)]
    text = (
        f"{name}, a word with you please ({i}).",  # the name at the start
        f"Lovely evening, {name}, the fire is warm ({i}).",  # in the middle
        f"Is it busy today ({i}), {name}?",  # at the end
    )[i % 3]
    return Line(text, "addressed", name)


def room_lines() -> list[Line]:
    """The 45 lines, in order: five blocks of nine (a fact told, three addressed lines, a
    statement, a question about the fact, the fact asked of another NPC, two more)."""
    lines: list[Line] = []
    counts = {"addressed": 0, "statement": 0, "question": 0, "everyone": 0}
    for block, (thing, value) in enumerate(FACTS_TOLD):

        def addressed() -> Line:
            counts["addressed"] += 1
            return _addressed(counts["addressed"] - 1)

        def extra(kind: str, block=block) -> Line:
            if kind == "statement":
                counts["statement"] += 1
                return Line(f"What a lovely evening ({counts['statement']}).", "statement")
            if kind == "question":  # a fact told earlier
                earlier_thing, earlier_value = FACTS_TOLD[block // 2]
                return Line(f"What is my {earlier_thing}?", "question", None, earlier_value)
            if kind == "everyone":
                counts["everyone"] += 1
                return Line(EVERYONE[counts["everyone"] - 1], "everyone")
            return Line(BAD_INPUT, "bad")

        asked = ASKED_OF[block]
        lines += [
            Line(f"Innkeeper, my {thing} is {value}.", "fact", "Innkeeper"),
            addressed(),
            extra("statement"),
            addressed(),
            Line(f"What is my {thing}?", "question", None, value),
            Line(f"{asked}, what is my {thing}?", "asked", asked, value),
            addressed(),
        ]
        lines += [extra(kind) for kind in EXTRAS[block]]
    return lines


def chatty_lines() -> list[Line]:
    """The chatty phase's player lines, each to one NPC."""
    return [
        Line(f"{name}, what news from the road ({k})?", "chatty", name)
        for k, name in enumerate(ADDRESS_ORDER)
    ]


class RoomWorld(World):
    """:class:`bench.cost.World` that knows which NPC is ticking (for the responder)."""

    def __init__(self, npcs):
        super().__init__(npcs)
        self.current = ""

    def _tick(self, npc) -> None:
        self.current = npc.key
        try:
            super()._tick(npc)
        finally:
            self.current = ""


class Responder:
    """The reading model, logging each request with the NPC that made it; in the chatty phase
    every answer to a line names the next NPC of the room ("Smith, what do you think?")."""

    def __init__(self, names: list[str]):
        from evennia_ai.testing.reading_model import read_and_answer

        self.read_and_answer = read_and_answer
        self.names = names
        self.world: RoomWorld | None = None
        self.chatty = False
        self.log: list[tuple[str, str, dict]] = []

    def next_of(self, name: str) -> str:
        at = self.names.index(name) if name in self.names else -1
        return self.names[(at + 1) % len(self.names)]

    def __call__(self, body: dict) -> dict:
        npc = self.world.current if self.world else ""
        kind = _kind(body)
        self.log.append((npc, kind, body))
        messages = body.get("messages") or []
        if (
            self.chatty
            and kind == "tick_event"
            and messages
            and messages[-1].get("role") == "user"
            and len(self.names) > 1
        ):
            line = f"{self.next_of(npc)}, what do you think?"
            return {"tool_calls": [{"name": "say", "arguments": {"message": line}}]}
        return self.read_and_answer(body)


def _npc(room, name: str):
    from evennia.utils.create import create_object

    from evennia_ai.typeclasses import AIAssistantCharacter

    npc = create_object(AIAssistantCharacter, key=name, location=room, home=room)
    npc.ai.set_persona(PERSONAS[name])
    return npc


def _make_host(npc) -> None:
    """The room's host, in game terms where the code has them (``controls.set_host``), else by
    its state key (there since the issue's groundwork)."""
    from evennia_ai.npc import controls

    if hasattr(controls, "set_host"):
        controls.set_host(npc, "on")
    else:
        npc.ai.set("host", True)


def _prompt_tokens(bodies) -> int:
    from evennia_ai.llm import tokens

    counter = tokens.TokenCounter(PRICED_AS)
    return sum(
        counter.count_messages(b.get("messages") or []) + counter.count_tools(b.get("tools") or [])
        for b in bodies
    )


def _talk(player, world, clock, responder, server, chatty: bool) -> tuple[list[Spoken], dict]:
    """Run the half hour (and the chatty phase); what followed each line, and the totals."""
    plan = {10 + LINE_EVERY * n: line for n, line in enumerate(room_lines())}
    end = TALK
    if chatty:
        for k, line in enumerate(chatty_lines()):
            plan[TALK + 10 + CHATTY_EVERY * k] = line
        end = TALK + CHATTY_EVERY * len(chatty_lines())
    spoken: list[Spoken] = []
    half: dict = {}
    second = 0
    while second < end:
        if second == TALK:
            half = {
                "requests": len(responder.log),
                "completion": server.usage_totals().get("completion_tokens", 0),
            }
            responder.chatty = chatty
        line = next((plan[at] for at in range(second, second + int(STEP)) if at in plan), None)
        if line is not None:
            spoken.append(Spoken(line, len(responder.log), len(world.traces)))
            player.at_say(line.text)
        requests_before, traces_before = len(responder.log), len(world.traces)
        world.step()
        if line is not None:
            spoken[-1].step_requests = responder.log[requests_before:]
            spoken[-1].step_traces = world.traces[traces_before:]
        clock.advance(STEP)
        second += int(STEP)
    if not half:
        half = {
            "requests": len(responder.log),
            "completion": server.usage_totals().get("completion_tokens", 0),
        }
    for this, after in zip(spoken, spoken[1:] + [None]):
        last_request = after.first_request if after else len(responder.log)
        last_trace = after.first_trace if after else len(world.traces)
        this.requests = responder.log[this.first_request : last_request]
        this.traces = world.traces[this.first_trace : last_trace]
    return spoken, half


def _line_figures(s: Spoken, player_name: str) -> dict:
    """What one line caused: model calls, who woke, who answered, what the asked one saw."""
    text = s.line.text
    ticks = [(k, t) for k, t in s.traces if t.context_type == "tick_event"]
    woken = sorted({k for k, t in ticks if text in t.event_text})
    step = [(k, t) for k, t in s.step_traces if t.context_type == "tick_event"]
    answers = {k: _said(t) for k, t in step if text in t.event_text and _said(t)}
    npc_lines = [t for _k, t in ticks if player_name not in t.event_text and _said(t)]
    asked = [s.line.to] if s.line.to else list(answers) or woken
    bodies = [b for k, kind, b in s.step_requests if k in asked and kind == "tick_event"]
    said = " ".join(answers.get(k, "") for k in asked)
    return {
        "kind": s.line.kind,
        "calls": sum(1 for _k, kind, _b in s.requests if kind == "tick_event"),
        "woken": woken,
        "answered": bool(answers),
        "by_addressee": bool(s.line.to and s.line.to in answers),
        "addressee_here": s.line.to is not None,
        "in_request": bool(
            s.line.expected and any(s.line.expected in json.dumps(b) for b in bodies)
        ),
        "right": bool(s.line.expected and s.line.expected in said),
        "npc_lines": len(npc_lines),
    }


def room_hour(npcs: int = 5, chatty: bool = False) -> dict:
    """The crowded room (``npcs`` AI NPCs, 1: the Innkeeper alone) and its figures."""
    from django.test import override_settings
    from evennia.objects.objects import DefaultCharacter, DefaultRoom
    from evennia.utils.create import create_object

    from evennia_ai.memory import longterm
    from evennia_ai.testing.model_server import ModelServer

    names = list(NPC_NAMES[:npcs])
    responder = Responder(names)
    clock = Clock(START)
    with (
        ModelServer(responder=responder, window_of=lambda _m: WINDOW) as server,
        tempfile.TemporaryDirectory() as folder,
        override_settings(**_settings(server, folder)),
    ):
        longterm.close()
        longterm.get_memory().init_sync()  # start-up work done before the half hour
        room = create_object(DefaultRoom, key=ROOM, nohome=True)
        player = create_object(DefaultCharacter, key="Alice", location=room, home=room)
        player.sessions.count = lambda: 1  # a connected player
        cast = [_npc(room, name) for name in names]
        _make_host(cast[0])
        world = RoomWorld(cast)
        responder.world = world
        with simulated(clock):
            spoken, half = _talk(player, world, clock, responder, server, chatty)
        lines = [dict(_line_figures(s, player.key), line=s.line.text) for s in spoken]
        bodies = [b for _k, _kind, b in responder.log[: half["requests"]]]
        prompt = _prompt_tokens(bodies)
        completion = half["completion"]
        chatty_tokens = 0
        if chatty:
            later = [b for _k, _kind, b in responder.log[half["requests"] :]]
            chatty_tokens = _prompt_tokens(later) + (
                server.usage_totals().get("completion_tokens", 0) - completion
            )
        kinds: dict[str, int] = {}
        for _k, kind, _b in responder.log[: half["requests"]]:
            kinds[kind] = kinds.get(kind, 0) + 1
        for obj in cast + [player, room]:
            obj.delete()
        longterm.close()
    scale = 3600.0 / TALK
    return {
        "npcs": npcs,
        "lines": lines,
        "tokens_per_player_hour": round((prompt + completion) * scale),
        "dollars_per_player_hour": _price(prompt, completion) * scale,
        "requests_by_kind": kinds,
        "chatty_tokens": chatty_tokens,
    }


def summary(room: dict) -> dict:
    """The figures the report's tables show, from :func:`room_hour`'s lines."""
    lines = room["lines"]

    def of(*kinds) -> list[dict]:
        return [line for line in lines if line["kind"] in kinds]

    def mean(values) -> float:
        values = list(values)
        return sum(values) / len(values) if values else 0.0

    one, nobody, chatty = of(*ONE_NPC), of(*NOBODY), of("chatty")
    return {
        "calls_all": mean(line["calls"] for line in lines if line["kind"] != "chatty"),
        "calls_addressed": mean(line["calls"] for line in one),
        "calls_unaddressed": mean(line["calls"] for line in nobody),
        "calls_everyone": mean(line["calls"] for line in of("everyone")),
        "calls_bad": mean(line["calls"] for line in of("bad")),
        "woken_bad_max": max((len(line["woken"]) for line in of("bad")), default=0),
        "woken_everyone_max": max((len(line["woken"]) for line in of("everyone")), default=0),
        "by_addressee": sum(line["by_addressee"] for line in one),
        "addressed": len(one),
        "answered_addressed": sum(line["answered"] for line in one),
        "questions_answered": sum(line["answered"] for line in of("question")),
        "questions_right": sum(line["right"] for line in of("question")),
        "questions": len(of("question")),
        "facts_in_request": sum(line["in_request"] for line in of("asked")),
        "facts_right": sum(line["right"] for line in of("asked")),
        "facts_asked": len(of("asked")),
        "npc_lines_in_talk": sum(line["npc_lines"] for line in lines if line["kind"] != "chatty"),
        "npc_lines_max": max((line["npc_lines"] for line in chatty), default=0),
        "npc_lines_mean": mean(line["npc_lines"] for line in chatty),
        "tokens_per_player_hour": room["tokens_per_player_hour"],
        "dollars_per_player_hour": room["dollars_per_player_hour"],
        "chatty_tokens": room["chatty_tokens"],
        "requests_by_kind": room["requests_by_kind"],
    }


def crowded() -> dict:
    """Both rooms and the hearing figures (what :mod:`bench.cost` stores and reports)."""
    five = summary(room_hour(5, chatty=True))
    one = summary(room_hour(1, chatty=False))
    five["token_ratio"] = five["tokens_per_player_hour"] / max(1, one["tokens_per_player_hour"])
    return {"five": five, "one": one, "hearing": hearing_cpu()}


# -- the reactor per heard line -------------------------------------------------------------------
def _empty_queues(npcs) -> None:
    from evennia_ai import attribute_writes

    for npc in npcs:  # so the queue's size (and a push's cost) stays level
        npc.ai.set("event_queue", {"events": [], "in_flight": [], "dropped": 0, "failed": 0})
    attribute_writes.flush()


def _time_lines(player, npcs, text: str, count: dict, lines: int) -> dict:
    """Reactor CPU (this thread) per line of ``text`` and what each line started or wrote."""
    from evennia_ai import attribute_writes

    for k in range(5):  # warm up
        player.at_say(f"{text} (warm {k})")
        attribute_writes.flush()
    _empty_queues(npcs)
    count.update(starts=0, embeds=0, writes={})
    writes = count["writes"]
    spent = 0.0
    for k in range(lines):
        started = _time.thread_time()
        player.at_say(f"{text} ({k})")
        attribute_writes.flush()
        spent += _time.thread_time() - started
        if k % 20 == 19:
            count["writes"] = {}  # the emptying's writes are not the lines'
            _empty_queues(npcs)
            count["writes"] = writes
    return {
        "ms": 1000 * spent / lines,
        "tick_starts": count["starts"] / lines,
        "embeds": count["embeds"] / lines,
        "queue_writes": writes.get("event_queue", 0) / lines,
        "writes": {key: n / lines for key, n in sorted(writes.items()) if n},
    }


def hearing_cpu(lines: int = HEAR_LINES) -> dict:
    """Reactor CPU for one line heard by 1 and by 10 AI NPCs, addressed to one and to nobody.

    The median of :data:`HEAR_ROUNDS` rounds of ``lines`` lines: ``time.thread_time()`` around ``player.at_say(line)`` and the flush of the turn's batched
    writes (batching on, as on a running server); tick starts and recall embeddings stubbed and
    counted (their own reactor cost is the tick's: ``bench tick``), attribute writes counted by
    key.
    """
    from django.test import override_settings
    from evennia.objects.objects import DefaultCharacter, DefaultRoom
    from evennia.utils.create import create_object

    from evennia_ai import attribute_writes
    from evennia_ai.memory import longterm
    from evennia_ai.npc import perception, state
    from evennia_ai.typeclasses import AIAssistantCharacter

    count: dict = {"starts": 0, "embeds": 0, "writes": {}}
    real_write = state.write_attribute

    def counted_write(obj, key, *args, **kwargs):
        writes = count["writes"]
        writes[key] = writes.get(key, 0) + 1
        return real_write(obj, key, *args, **kwargs)

    def embed(*_args, **_kwargs):
        count["embeds"] += 1
        return True

    def start() -> None:
        count["starts"] += 1

    patches = [
        override_settings(EVENNIA_AI_SPEAKER_EVENTS_PER_MINUTE=0, EVENNIA_AI_MODEL="openai/x"),
        mock.patch.object(attribute_writes, "batching", lambda: True),
        mock.patch.object(
            attribute_writes.reactor, "callLater", lambda *a, **k: mock.Mock(active=lambda: False)
        ),
        mock.patch.object(attribute_writes.reactor, "addSystemEventTrigger", lambda *a, **k: None),
        mock.patch.object(state, "write_attribute", counted_write),
        mock.patch.object(longterm, "embed_ahead", embed),
    ]
    if hasattr(perception, "embed_for_recall"):
        patches.append(mock.patch.object(perception, "embed_for_recall", embed))
    results: dict = {}
    rooms = []
    with ExitStack() as stack:
        for patch in patches:
            stack.enter_context(patch)
        for listeners in HEAR_LISTENERS:
            room = create_object(DefaultRoom, key=f"Hall of {listeners}", nohome=True)
            player = create_object(DefaultCharacter, key="Alice", location=room, home=room)
            player.sessions.count = lambda: 1
            npcs = []
            for i in range(listeners):
                npc = create_object(AIAssistantCharacter, key=f"Npc{i}", location=room, home=room)
                npc.ai.script.trigger_tick = start
                npcs.append(npc)
            rooms.append((listeners, player, npcs, room))
        attribute_writes.flush()
        rounds: dict[str, list[dict]] = {}
        for _round in range(HEAR_ROUNDS):  # the rooms in turn, so a busy moment hits both
            for listeners, player, npcs, _room in rooms:
                for label, text in HEAR_TEXTS:
                    timed = _time_lines(player, npcs, text, count, lines)
                    rounds.setdefault(f"{listeners}/{label}", []).append(timed)
        for _listeners, player, npcs, room in rooms:
            for obj in npcs + [player, room]:
                obj.delete()
        attribute_writes.flush()
    for key, timed in rounds.items():  # the median round
        results[key] = sorted(timed, key=lambda t: t["ms"])[len(timed) // 2]
    for label, _text in HEAR_TEXTS:
        one, ten = results[f"1/{label}"]["ms"], results[f"10/{label}"]["ms"]
        results[f"ratio/{label}"] = ten / one if one else 0.0
    results["lines"] = lines
    results["rounds"] = HEAR_ROUNDS
    return results


# -- the report -----------------------------------------------------------------------------------
def _cell(data: dict | None, key: str, fmt: str = "{}") -> str:
    if not data or key not in data:
        return "-"
    return fmt.format(data[key])


def _of(data: dict | None, have: str, total: str) -> str:
    if not data or have not in data:
        return "-"
    return f"{data[have]}/{data[total]}"


def _meets(ok: bool) -> str:
    return "yes" if ok else "no"


def report(now: dict, before: dict | None, label: str, now_label: str) -> str:
    """The crowded-room tables: the figures against their targets, before and now."""
    from bench.common import table

    f, o, h = now["five"], now["one"], now["hearing"]
    bf = (before or {}).get("five")
    bo = (before or {}).get("one")
    bh = (before or {}).get("hearing")
    rows = [
        [
            "model calls per player line addressed to one NPC (target <= 1.2)",
            _cell(bf, "calls_addressed", "{:.2f}"),
            f"{f['calls_addressed']:.2f}",
            _meets(f["calls_addressed"] <= 1.2),
        ],
        [
            "model calls per player line naming nobody (target <= 2)",
            _cell(bf, "calls_unaddressed", "{:.2f}"),
            f"{f['calls_unaddressed']:.2f}",
            _meets(f["calls_unaddressed"] <= 2),
        ],
        [
            "model calls per line to everyone (answerers + 1: <= 2)",
            _cell(bf, "calls_everyone", "{:.2f}"),
            f"{f['calls_everyone']:.2f}",
            _meets(f["woken_everyone_max"] <= 2),
        ],
        [
            "NPCs woken by a line naming all five (bad input; target <= 2)",
            _cell(bf, "woken_bad_max"),
            f"{f['woken_bad_max']}",
            _meets(f["woken_bad_max"] <= 2),
        ],
        [
            "model calls per player line, the Innkeeper alone (all 45 lines)",
            _cell(bo, "calls_all", "{:.2f}"),
            f"{o['calls_all']:.2f}",
            "",
        ],
        [
            "tokens per player-hour, 5 NPCs (the half hour x 2)",
            _cell(bf, "tokens_per_player_hour", "{:,}"),
            f"{f['tokens_per_player_hour']:,}",
            "",
        ],
        [
            "tokens per player-hour, the Innkeeper alone, same lines",
            _cell(bo, "tokens_per_player_hour", "{:,}"),
            f"{o['tokens_per_player_hour']:,}",
            "",
        ],
        [
            "tokens, 5-NPC room vs 1-NPC room (target <= 1.3x)",
            _cell(bf, "token_ratio", "{:.2f}x"),
            f"{f['token_ratio']:.2f}x",
            _meets(f["token_ratio"] <= 1.3),
        ],
        [
            "lines addressed to one NPC answered by that NPC in the same step (target: all)",
            _of(bf, "by_addressee", "addressed"),
            _of(f, "by_addressee", "addressed"),
            _meets(f["by_addressee"] == f["addressed"]),
        ],
        [
            "questions naming nobody answered by some NPC (target: all)",
            _of(bf, "questions_answered", "questions"),
            _of(f, "questions_answered", "questions"),
            _meets(f["questions_answered"] == f["questions"]),
        ],
        [
            "... answered right",
            _of(bf, "questions_right", "questions"),
            _of(f, "questions_right", "questions"),
            "",
        ],
        [
            "a fact told to the Innkeeper, in the request of the NPC asked later (target: all)",
            _of(bf, "facts_in_request", "facts_asked"),
            _of(f, "facts_in_request", "facts_asked"),
            _meets(f["facts_in_request"] == f["facts_asked"]),
        ],
        [
            "... answered right",
            _of(bf, "facts_right", "facts_asked"),
            _of(f, "facts_right", "facts_asked"),
            "",
        ],
        [
            "NPC-to-NPC lines in the half hour (the NPCs name nobody there)",
            _cell(bf, "npc_lines_in_talk"),
            f"{f['npc_lines_in_talk']}",
            "",
        ],
        [
            "NPC-to-NPC lines after a chatty player line, most (target <= 4)",
            _cell(bf, "npc_lines_max"),
            f"{f['npc_lines_max']}",
            _meets(f["npc_lines_max"] <= 4),
        ],
        [
            "NPC-to-NPC lines after a chatty player line, mean",
            _cell(bf, "npc_lines_mean", "{:.1f}"),
            f"{f['npc_lines_mean']:.1f}",
            "",
        ],
        [
            "tokens of the chatty phase (5 player lines; not in the player-hour)",
            _cell(bf, "chatty_tokens", "{:,}"),
            f"{f['chatty_tokens']:,}",
            "",
        ],
    ]
    text = table(
        f"A crowded room: 5 AI NPCs and a player in {ROOM}, 45 lines in 30 minutes (targets: "
        "<= 1.2 model calls per line addressed to one NPC, <= 2 per line naming nobody, tokens "
        "<= 1.3x the Innkeeper alone, every addressed line answered by its NPC, every question "
        "answered, every fact heard in the asked NPC's request, <= 4 NPC-to-NPC lines per chatty "
        "player line, <= 2 NPCs woken by bad input; the chatty phase's tokens are counted apart)",
        ["figure", label, now_label, "meets target"],
        rows,
    )
    hear_rows = []
    for kind in ("addressed", "unaddressed"):
        for n in HEAR_LISTENERS:
            key = f"{n}/{kind}"
            b = (bh or {}).get(key)
            r = h[key]
            hear_rows.append(
                [
                    f"{n} listener{'s' if n > 1 else ''}, {kind}",
                    f"{b['ms']:.2f} ms" if b else "-",
                    f"{r['ms']:.2f} ms",
                    f"{r['tick_starts']:.2f} / {r['queue_writes']:.2f} / {r['embeds']:.2f}",
                    "",
                ]
            )
        ratio = h[f"ratio/{kind}"]
        was = (bh or {}).get(f"ratio/{kind}")
        hear_rows.append(
            [
                f"10 vs 1 listeners, {kind} (target <= 2x)",
                f"{was:.1f}x" if was else "-",
                f"{ratio:.1f}x",
                "",
                _meets(ratio <= 2),
            ]
        )
    text += "\n\n" + table(
        f"Reactor CPU per heard line (thread CPU of at_say + the batched writes' flush, the "
        f"median of {h.get('rounds', 1)} rounds of {h['lines']} lines; target: 10 listeners "
        "<= 2x one)",
        [
            "room and line",
            label,
            now_label,
            "now: tick starts / queue writes / embeds per line",
            "meets target",
        ],
        hear_rows,
    )
    return text

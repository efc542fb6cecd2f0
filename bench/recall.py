"""Recall: does what a question needs reach the request the NPC sends? (no language model)

``python -m bench recall`` (``python -m bench.recall --quick`` for a small scenario, under two
minutes). A seeded generator (:func:`generate`) writes a multi-session life: several players
talk with the Innkeeper over many sessions, days of game time apart, telling facts amid small
talk; some facts are updated later, some change around a storm, some only make sense together.
Everything goes through the NPC's real paths in a test database (in memory): players' lines
heard by the NPC (``at_say``), its ticks, a night's sleep after every session (consolidation
storing memories with ``store_memory``, history compaction with entity observations), with
every model call answered by the reading model (:mod:`evennia_ai.testing.reading_model`)
through litellm and the loopback model server, on a simulated clock.

Then every question is asked as a player line, from the same state each time, once per search
mode of the per-tick recall (keyword, vector, hybrid, auto), and the ``tick_event`` request the
NPC sends is inspected (:func:`score`): is every needed fact in it, is a superseded value
absent or marked old, does anything in it assert an answer to a question never answered, and
its tokens (tool schemas excluded). Two baselines get the same questions: the last 25 lines of
the asking player's conversation (Evennia's ``LLMNPC`` and its ``max_chat_memory_size``), and the
whole history up to the window.

Targets: >= 95 % of needed facts in the request on single facts, >= 85 % on updated and
two-memory questions, with a median request no larger than the median ``tick_event`` request of
``python -m bench context`` (tool schemas excluded; computed here from that bench's code).
A missed fact is traced to where it was lost (:func:`where_lost`).
"""

from __future__ import annotations

import copy
import datetime
import json
import random
import re
import statistics
import sys
import tempfile
from dataclasses import dataclass, field
from unittest import mock

from bench.common import deadline_text, percentile, recall_deadline_stats, table
from evennia_ai.testing.reading_model import facts_in
from evennia_ai.utils import unfence

MODEL = "openai/test-model"
CHAT = "/v1/chat/completions"
WINDOW = 128000
MODES = ("keyword", "vector", "hybrid", "auto")
LAST_LINES = "last 25 lines"
FULL_HISTORY = "full history"
LLMNPC_MEMORY = 25  # evennia.contrib.rpg.llm.LLMNPC.max_chat_memory_size
CONDITIONS = MODES + (LAST_LINES, FULL_HISTORY)
KINDS = ("single", "updated", "temporal", "two_memory", "unanswerable")
TARGETS = {"single": 0.95, "updated": 0.85, "two_memory": 0.85}
NPC_KEY = "Innkeeper"
PERSONA = (
    "Marta Ashgrove, innkeeper of the Gilded Tankard for twenty years. Warm but no pushover; "
    "knows every rumour in town; proud of her mutton stew and her cellar."
)
STORM = "A storm breaks over the town: rain lashes the shutters and the lanterns gutter."
OLD_MARKERS = (
    "superseded",
    "outdated",
    "no longer",
    "formerly",
    "previously",
    "used to",
    "replaced by",
    "(old",
    "old value",
)
"""Words that mark a line's value as replaced, in a request."""
START = datetime.datetime(2026, 3, 2, 19, 0, 0)  # the first session, server local time
NIGHT_TICKS = 12  # most ticks a night's sleep phases may take
STATE_KEYS = (
    "history",
    "context_buffer",
    "event_queue",
    "entities",
    "session_memory",
    "journal",
    "compaction",
    "sleep",
    "reflection",
)
"""The NPC's state a question may change; restored before each question."""

PLAYERS = ("Alice", "Bram", "Cora", "Dunstan", "Edda")
SINGLE_THINGS = (
    "horse",
    "dog",
    "home town",
    "lucky number",
    "favourite drink",
    "sword",
    "boat",
    "guild",
    "cat",
    "mentor",
    "ring",
    "cloak",
)
UPDATED_THINGS = ("room", "favourite song", "trade", "saddle")
TEMPORAL_THINGS = ("lodging", "watch post", "errand")
RELATIONS = ("sister", "brother", "cousin", "friend")
ATTRIBUTES = ("village", "craft", "pony")
VALUES = (
    "Amberly Bellweather Cobalt Dapple Emberlyn Fennick Gorse Hollin Ivel Jasper Kestrel "
    "Larkspur Marlow Nettle Orrin Pimm Quill Rowan Sorrel Tamsin Umber Vesper Wren Yarrow "
    "Zephyr Alder Bracken Cinder Dunmore Elmsworth Foxglove Gannet Heron Inkwell Juniper "
    "Kelp Linden Moss Nimble Oriel Piper Quarry Rushmere Saffron Thistle Upton Vale Willow "
    "Yewdale Zinnia Ashby Burdock Clover Dewberry Eskdale Fallow Glimmer Hazel Ibbot Jessop"
).split()
KIN = "Carol Hugo Isolde Leofric Maud Piers Rosalind Tobias Winifred Osric".split()
SMALL_TALK = (
    "Innkeeper, the market was busy today.",
    "Innkeeper, is there any of the mutton stew left?",
    "Innkeeper, the road from the mill was muddy again.",
    "Innkeeper, the fire is warm tonight, thank you.",
    "Innkeeper, I heard the ferry runs late this week.",
    "Innkeeper, the bread smells wonderful.",
    "Innkeeper, a tankard of the dark ale, please.",
    "Innkeeper, did the minstrels come by yesterday?",
    "Innkeeper, the guards were grumbling at the gate.",
    "Innkeeper, the well water tastes of iron lately.",
    "Innkeeper, the blacksmith was hammering all morning.",
    "Innkeeper, such a quiet evening for once.",
)
AFTER_STORM = "Innkeeper, what a storm that was; half the roofs lost their tiles."


# -- the scenario -----------------------------------------------------------------------------------
@dataclass
class Question:
    """One question and what its request must (not) carry.

    Attributes:
        kind: One of :data:`KINDS`.
        asker: The player asking.
        text: The line the player says.
        needed: Fact phrases (``horse is Thunder``) the request must carry.
        superseded: Fact phrases a later session replaced: absent, or marked old.
        thing: What is asked about (an unanswerable question's: nothing may assert it).
    """

    kind: str
    asker: str
    text: str
    needed: tuple[str, ...] = ()
    superseded: tuple[str, ...] = ()
    thing: str = ""


@dataclass
class Session:
    """One evening at the inn: ``day`` of game time, an optional narrated event, the lines."""

    day: int
    lines: list[tuple[str, str]] = field(default_factory=list)
    event: str = ""


@dataclass
class Scenario:
    """A generated life: its players, sessions and the questions asked after them."""

    players: list[str]
    sessions: list[Session]
    questions: list[Question]

    @property
    def lines(self) -> int:
        return sum(len(s.lines) for s in self.sessions)


def generate(seed: int = 20, players: int = 3, sessions: int = 8, small_talk: int = 4) -> Scenario:
    """A deterministic scenario (same arguments, same scenario).

    Each player comes to most sessions (always to the first, the last and the two around the
    storm, which breaks at the start of the middle session) and tells, each in a session of its
    own: three single facts; one fact updated in a later session; one fact before the storm and
    its new value after it; a relative's name and, later, something about that relative.
    Values are unique across the scenario, so a value found in a request is the one told.

    Args:
        seed: The random seed.
        players: How many players (at most ``len(PLAYERS)``).
        sessions: How many sessions (at least 4).
        small_talk: Lines of small talk per player and session.
    """
    rng = random.Random(seed)
    names = list(PLAYERS[: max(1, min(players, len(PLAYERS)))])
    sessions = max(4, sessions)
    storm = sessions // 2
    values = iter(rng.sample(VALUES, len(VALUES)))
    kin = iter(rng.sample(KIN, len(KIN)))
    days, day = [], 1
    for _ in range(sessions):
        days.append(day)
        day += rng.randint(1, 3)
    told: dict[tuple[str, int], list[str]] = {}
    questions: list[Question] = []

    def tell(player: str, session: int, text: str) -> None:
        told.setdefault((player, session), []).append(f"Innkeeper, {text}")

    for player in names:
        attends = sorted(
            {s for s in range(sessions) if rng.random() < 0.75}
            | {0, storm - 1, storm, sessions - 1}
        )
        before = [s for s in attends if s < storm]
        after = [s for s in attends if s >= storm]
        things = rng.sample(SINGLE_THINGS, 4)
        for thing in things[:3]:
            value = next(values)
            tell(player, rng.choice(attends), f"my {thing} is {value}.")
            questions.append(
                Question(
                    "single", player, f"Innkeeper, what is my {thing}?", (f"{thing} is {value}",)
                )
            )
        thing, old, new = rng.choice(UPDATED_THINGS), next(values), next(values)
        first = rng.choice(attends[:-1])
        tell(player, first, f"my {thing} is {old}.")
        tell(
            player, rng.choice([s for s in attends if s > first]), f"news: my {thing} is {new} now."
        )
        questions.append(
            Question(
                "updated",
                player,
                f"Innkeeper, what is my {thing}?",
                (f"{thing} is {new}",),
                (f"{thing} is {old}",),
            )
        )
        thing, old, new = rng.choice(TEMPORAL_THINGS), next(values), next(values)
        tell(player, rng.choice(before), f"my {thing} is {old}.")
        tell(player, rng.choice(after), f"since the storm my {thing} is {new}.")
        questions.append(
            Question(
                "temporal",
                player,
                f"Innkeeper, what was my {thing} before the storm?",
                (f"{thing} is {old}",),
            )
        )
        relation, person, attribute = rng.choice(RELATIONS), next(kin), rng.choice(ATTRIBUTES)
        value = next(values)
        first = rng.choice(attends[:-1])
        tell(player, first, f"my {relation} is {person}.")
        tell(
            player,
            rng.choice([s for s in attends if s > first]),
            f"{person}'s {attribute} is {value}.",
        )
        questions.append(
            Question(
                "two_memory",
                player,
                f"Innkeeper, what is my {relation}'s {attribute}?",
                (f"{relation} is {person}", f"{attribute} is {value}"),
            )
        )
        questions.append(
            Question(
                "unanswerable",
                player,
                f"Innkeeper, what is my {things[3]}?",
                thing=things[3],
            )
        )
    return Scenario(names, _sessions(rng, names, days, storm, told, small_talk), questions)


def _sessions(rng, names, days, storm, told, small_talk) -> list[Session]:
    """The sessions' lines: each attending player's facts amid small talk, interleaved."""
    out = []
    for index, day in enumerate(days):
        queues = []
        for player in names:
            facts = told.get((player, index), [])
            if not facts and rng.random() >= 0.75 and index not in (0, storm - 1, storm):
                continue
            chatter = rng.sample(SMALL_TALK, min(small_talk, len(SMALL_TALK)))
            if index == storm:
                chatter[0] = AFTER_STORM
            lines = chatter[:]
            for fact in facts:
                lines.insert(rng.randint(1 if index == storm else 0, len(lines)), fact)
            queues.append([(player, line) for line in lines])
        session = Session(day, event=STORM if index == storm else "")
        while any(queues):
            queue = rng.choice([q for q in queues if q])
            session.lines.append(queue.pop(0))
        out.append(session)
    return out


# -- scoring (pure) ---------------------------------------------------------------------------------
@dataclass
class Score:
    """How one request serves one question.

    Attributes:
        found: Needed facts the request carries.
        needed: Needed facts.
        old: For a superseded value: ``absent``, ``marked`` or ``unmarked``; "" when none.
        asserted: For an unanswerable question: whether the request asserts an answer.
        tokens: The request's tokens, tool schemas excluded.
        missing: The needed facts it lacks.
    """

    found: int
    needed: int
    old: str = ""
    asserted: bool | None = None
    tokens: int = 0
    missing: tuple[str, ...] = ()


def request_text(messages: list[dict]) -> str:
    """Every text of a request: contents and tool-call arguments, fences removed."""
    parts = []
    for message in messages or []:
        content = message.get("content")
        if isinstance(content, list):
            content = "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        if isinstance(content, str):
            parts.append(content)
        for call in message.get("tool_calls") or []:
            parts.append(str((call.get("function") or {}).get("arguments") or ""))
    return unfence("\n".join(parts))


def carries(text: str, phrase: str) -> bool:
    """Whether ``text`` states the fact ``phrase`` (``horse is Thunder``)."""
    return re.search(rf"\b{re.escape(phrase)}\b", text, re.I) is not None


def old_value_state(text: str, phrase: str) -> str:
    """``absent``, ``marked`` (every line stating it marks it old) or ``unmarked``."""
    lines = [line for line in text.splitlines() if carries(line, phrase)]
    if not lines:
        return "absent"
    marked = all(any(m in line.lower() for m in OLD_MARKERS) for line in lines)
    return "marked" if marked else "unmarked"


def asserts_answer(text: str, asker: str, thing: str) -> bool:
    """Whether ``text`` states ``thing`` for ``asker``, or for nobody named (``The boat is
    Gull``, ``Your boat is Gull``: it could be theirs)."""
    if any(t == thing and who in (asker, "") for who, t, _value in facts_in(text)):
        return True
    return re.search(rf"\b(?:the|your) {re.escape(thing)} is \w", text, re.I) is not None


def score(question: Question, messages: list[dict], counter) -> Score:
    """Score one request (its messages) for one question."""
    asked = question.text
    text = request_text(messages).replace(asked, "")  # the question itself is no answer
    missing = tuple(p for p in question.needed if not carries(text, p))
    old = ""
    if question.superseded:
        states = [old_value_state(text, p) for p in question.superseded]
        old = "unmarked" if "unmarked" in states else "marked" if "marked" in states else "absent"
    return Score(
        found=len(question.needed) - len(missing),
        needed=len(question.needed),
        old=old,
        asserted=(
            asserts_answer(text, question.asker, question.thing)
            if question.kind == "unanswerable"
            else None
        ),
        tokens=counter.count_messages(messages),
        missing=missing,
    )


# -- the baselines ----------------------------------------------------------------------------------
def last_lines_request(transcript: list[tuple], question: Question) -> list[dict]:
    """What Evennia's LLMNPC sends: its prompt, the last 25 lines of this player's talk with it
    (``Name: speech``, both sides), the question."""
    memory = []
    for speaker, line, reply in transcript:
        if speaker == question.asker:
            memory.append(f"{speaker}: {line}")
            if reply:
                memory.append(f"{NPC_KEY}: {reply}")
    memory = memory[-LLMNPC_MEMORY:] + [f"{question.asker}: {question.text}"]
    return [{"role": "system", "content": PERSONA}, {"role": "user", "content": "\n".join(memory)}]


def full_history_request(
    transcript: list[tuple], question: Question, counter, budget: int
) -> list[dict]:
    """Every line the NPC heard and said, the oldest left out only past ``budget`` tokens."""
    turns = []
    for speaker, line, reply in transcript:
        turns.append({"role": "user", "content": f'{speaker} says to you: "{line}"'})
        if reply:
            turns.append({"role": "assistant", "content": reply})
    head = [{"role": "system", "content": PERSONA}]
    tail = [{"role": "user", "content": f'{question.asker} says to you: "{question.text}"'}]
    room = budget - counter.count_messages(head + tail)
    kept: list[dict] = []
    for message in reversed(turns):
        size = counter.count_messages([message])
        if size > room:
            break
        room -= size
        kept.insert(0, message)
    return head + kept + tail


# -- the life, through the NPC's real paths ---------------------------------------------------------
class Inn:
    """The Innkeeper and the players in the test database, driven as the Script drives them."""

    def __init__(self, server, players: list[str]):
        from evennia.objects.objects import DefaultCharacter, DefaultRoom
        from evennia.utils.create import create_object

        from evennia_ai.typeclasses import AIAssistantCharacter

        self.server = server
        self.room = create_object(DefaultRoom, key="The Gilded Tankard", nohome=True)
        self.npc = create_object(
            AIAssistantCharacter, key=NPC_KEY, location=self.room, home=self.room
        )
        self.npc.ai.set_persona(PERSONA)
        self.npc.ai.script.trigger_tick = lambda: None
        self.players = {}
        for name in players:
            player = create_object(DefaultCharacter, key=name, location=self.room, home=self.room)
            player.sessions.count = lambda: 1  # a connected player (an audience)
            self.players[name] = player
        self.transcript: list[tuple[str, str, str]] = []  # (speaker, line, the NPC's reply)

    def ticks(self, limit: int = 6) -> list:
        from bench.calls import _run_until_idle

        return _run_until_idle(self.npc.ai.script, limit)

    def say(self, speaker: str, line: str) -> str:
        """``speaker`` says ``line``; the NPC's ticks run; what it said back."""
        from bench.calls import _said

        self.players[speaker].at_say(line)
        reply = " ".join(
            _said(t) for t in self.ticks() if t.context_type == "tick_event" and _said(t)
        )
        self.transcript.append((speaker, line, reply))
        return reply

    def night(self) -> None:
        """The NPC sleeps (its sleep phases run) and wakes."""
        from evennia_ai.workspace.sleep import go_to_sleep, wake_up

        go_to_sleep(self.npc, "night")
        self.ticks(NIGHT_TICKS)
        wake_up(self.npc, "morning")

    def live(self, scenario: Scenario, clock=None) -> None:
        """Every session of ``scenario``, a night after each, on ``clock`` if given."""
        day = 1
        for session in scenario.sessions:
            if clock is not None:
                clock.advance((session.day - day) * 86400)
                day = session.day
            if session.event:
                self.room.msg_contents(session.event)
            for speaker, line in session.lines:
                self.say(speaker, line)
            if clock is not None:
                clock.advance(4 * 3600)  # to the night
            self.night()
            if clock is not None:
                clock.advance(-4 * 3600)
        if clock is not None:
            clock.advance(86400)

    def snapshot(self) -> dict:
        return {key: copy.deepcopy(self.npc.ai.get(key)) for key in STATE_KEYS}

    def restore(self, state: dict) -> None:
        for key, value in state.items():
            self.npc.ai.set(key, copy.deepcopy(value))

    def ask(self, question: Question, mode: str) -> tuple[list[dict], list]:
        """The ``tick_event`` request's messages for ``question`` (recall in ``mode``) and the
        memories the recall found."""
        from django.test import override_settings

        from bench.cost import _kind
        from evennia_ai.memory import longterm

        found: list = []
        real = longterm.recall

        def recall(npc_id, query, **kwargs):
            return real(npc_id, query, **kwargs).addCallback(
                lambda outcome: found.extend(outcome.hits) or outcome
            )

        before = len(self.server.requests_to(CHAT))
        with (
            mock.patch.object(longterm, "recall", recall),
            override_settings(EVENNIA_AI_RECALL_MODE=mode),
        ):
            self.players[question.asker].at_say(question.text)
            self.ticks(3)
        bodies = [r.body or {} for r in self.server.requests_to(CHAT)[before:]]
        events = [b for b in bodies if _kind(b) == "tick_event"]
        return (events[0].get("messages") or []) if events else [], found

    def memories(self) -> list[str]:
        """Every long-term memory the NPC holds (the keyword index holds them all)."""
        from evennia_ai.memory import longterm

        return [hit.text for hit in longterm.get_memory().recent_sync(self.npc.dbref, 100000)]

    def delete(self) -> None:
        for obj in [self.npc, *self.players.values(), self.room]:
            obj.delete()


def where_lost(phrase: str, hits: list, memories: list[str], state: dict) -> str:
    """Why a needed fact missed the request: retrieved but cut, stored but not retrieved,
    only in the history or notes (and cut), or never stored."""
    if any(carries(str(hit.text), phrase) for hit in hits):
        return "retrieved, cut from the request"
    if any(carries(text, phrase) for text in memories):
        return "stored, not retrieved"
    if carries(json.dumps(state, default=str), phrase):
        return "in history or notes only, cut"
    return "not stored"


@dataclass
class Results:
    """Scores per condition (a mode or a baseline), one per question, and the misses' causes."""

    scenario: Scenario
    scores: dict[str, list[Score]] = field(default_factory=dict)
    lost: dict[str, dict[str, int]] = field(default_factory=dict)
    modes_used: dict[str, str] = field(default_factory=dict)
    memories: int = 0
    vector: bool = False
    #: Per mode, the recall deadline's figures over its questions (None: not exposed).
    deadline: dict[str, dict | None] = field(default_factory=dict)


def _deadline_delta(before: dict | None, after: dict | None) -> dict | None:
    """``after`` minus ``before`` of :func:`bench.common.recall_deadline_stats` (or None)."""
    if not isinstance(before, dict) or not isinstance(after, dict):
        return after if isinstance(after, dict) else None
    if "error" in after:
        return after
    delta = {k: after.get(k, 0) - before.get(k, 0) for k in ("waited", "missed")}
    return {**delta, "deadline_ms": after.get("deadline_ms")}


def run(scenario: Scenario, server, clock=None, modes=MODES) -> Results:
    """Live ``scenario`` through the NPC, then ask every question in each mode and baseline.

    Needs the test database, synchronous model and memory calls, the reading model behind
    ``server`` and settings pointing the NPC at it (see :func:`main`).
    """
    from evennia_ai.llm import tokens
    from evennia_ai.memory import longterm
    from evennia_ai.memory.search import resolve_mode

    counter = tokens.TokenCounter(MODEL)
    inn = Inn(server, scenario.players)
    results = Results(scenario, vector=longterm.get_memory().vector_ready)
    try:
        inn.live(scenario, clock)
        state = inn.snapshot()
        memories = inn.memories()
        results.memories = len(memories)
        for mode in modes:
            results.modes_used[mode] = resolve_mode(mode, results.vector)[0]
            lost = results.lost.setdefault(mode, {})
            deadline_before = recall_deadline_stats()
            for question in scenario.questions:
                inn.restore(state)
                messages, hits = inn.ask(question, mode)
                result = score(question, messages, counter)
                results.scores.setdefault(mode, []).append(result)
                for phrase in result.missing:
                    cause = where_lost(phrase, hits, memories, state)
                    lost[cause] = lost.get(cause, 0) + 1
            results.deadline[mode] = _deadline_delta(deadline_before, recall_deadline_stats())
        budget = tokens.get_model_limits(MODEL).prompt_budget
        for question in scenario.questions:
            results.scores.setdefault(LAST_LINES, []).append(
                score(question, last_lines_request(inn.transcript, question), counter)
            )
            results.scores.setdefault(FULL_HISTORY, []).append(
                score(
                    question,
                    full_history_request(inn.transcript, question, counter, budget),
                    counter,
                )
            )
    finally:
        inn.delete()
    return results


# -- the report -------------------------------------------------------------------------------------
def share(scores: list[Score], questions: list[Question], kind: str) -> float | None:
    """Share of the needed facts of ``kind``'s questions that the requests carried."""
    picked = [s for s, q in zip(scores, questions) if q.kind == kind]
    needed = sum(s.needed for s in picked)
    return sum(s.found for s in picked) / needed if needed else None


def clean_share(scores: list[Score], questions: list[Question], kind: str) -> float | None:
    """Updated: share with the old value absent or marked; unanswerable: share asserting none."""
    picked = [s for s, q in zip(scores, questions) if q.kind == kind]
    if not picked:
        return None
    if kind == "updated":
        return sum(s.old in ("absent", "marked") for s in picked) / len(picked)
    return sum(not s.asserted for s in picked) / len(picked)


def context_median_tokens(turns: int = 21) -> int:
    """The median ``tick_event`` request of ``python -m bench context``, tool schemas excluded
    (that bench's own scenario and builder)."""
    from bench.context import MODEL as CONTEXT_MODEL
    from bench.context import _builder, scenario
    from evennia_ai.llm import tokens
    from evennia_ai.prompt.components import get_static_components

    builder, components = _builder(), get_static_components()
    counter = tokens.TokenCounter(CONTEXT_MODEL)
    sizes = [
        counter.count_messages(builder.finish(scenario(turn), components).messages)
        for turn in range(turns)
    ]
    return int(statistics.median(sizes))


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def render(results: Results, target_tokens: int) -> str:
    """The Markdown tables of ``results``."""
    scenario, questions = results.scenario, results.scenario.questions
    conditions = [c for c in CONDITIONS if c in results.scores]
    heads = [
        f"{c} ({results.modes_used[c]})" if results.modes_used.get(c, c) != c else c
        for c in conditions
    ]
    counts = {k: sum(q.kind == k for q in questions) for k in KINDS}
    rows = []
    for kind in KINDS[:-1]:
        target = f">= {TARGETS[kind]:.0%}" if kind in TARGETS else "reported"
        rows.append(
            [f"{kind} ({counts[kind]}): needed facts in the request"]
            + [_pct(share(results.scores[c], questions, kind)) for c in conditions]
            + [target]
        )
    rows.append(
        [f"updated ({counts['updated']}): old value absent or marked old"]
        + [_pct(clean_share(results.scores[c], questions, "updated")) for c in conditions]
        + ["reported"]
    )
    rows.append(
        [f"unanswerable ({counts['unanswerable']}): no answer asserted"]
        + [_pct(clean_share(results.scores[c], questions, "unanswerable")) for c in conditions]
        + ["reported"]
    )
    sizes = {c: [s.tokens for s in results.scores[c]] for c in conditions}
    rows.append(
        ["request tokens, tools excluded: median"]
        + [f"{int(statistics.median(sizes[c])):,}" for c in conditions]
        + [f"<= {target_tokens:,}"]
    )
    rows.append(
        ["request tokens, tools excluded: p95"]
        + [f"{int(percentile(sizes[c], 95)):,}" for c in conditions]
        + ["reported"]
    )
    days = scenario.sessions[-1].day - scenario.sessions[0].day
    text = (
        "### Memory quality: recall\n\n"
        f"{len(scenario.players)} players, {len(scenario.sessions)} sessions over {days} days "
        f"of game time, {scenario.lines} lines, {len(questions)} questions; "
        f"{results.memories} long-term memories stored through the NPC; embedder "
        f"{'loaded' if results.vector else 'not installed (vector and hybrid ran as keyword)'}. "
        f"Target request size: the median tick_event request of `bench context`, tools "
        f"excluded ({target_tokens:,} tokens).\n\n"
    )
    text += table(
        "Recall by kind of question and search mode (reading model, no language model)",
        ["figure"] + heads + ["target"],
        rows,
    )
    if results.deadline:
        text += (
            "\nRecall deadline (the vector hits waited for up to the deadline): "
            + "; ".join(
                f"{mode}: {deadline_text(stats)}" for mode, stats in results.deadline.items()
            )
            + ".\n"
        )
    verdicts = []
    for c in conditions:
        checks = [
            (share(results.scores[c], questions, k) or 0.0) >= t
            for k, t in TARGETS.items()
            if counts[k]
        ]
        small = statistics.median(sizes[c]) <= target_tokens
        verdicts.append([c, "met" if all(checks) else "NOT met", "met" if small else "NOT met"])
    text += "\n" + table(
        "Targets per condition", ["condition", "recall targets", "request size"], verdicts
    )
    causes = sorted({cause for lost in results.lost.values() for cause in lost})
    if causes:
        text += "\n" + table(
            "Where the needed facts the NPC's requests lacked were lost",
            ["mode"] + causes,
            [[m] + [results.lost[m].get(c, 0) for c in causes] for m in results.lost],
        )
    return text


def settings(url: str, folder: str) -> dict:
    """The settings of a run: the loopback model at ``url``, memory in ``folder``, defaults
    otherwise (no autonomy or reflection: only what players say and the nights)."""
    return {
        "EVENNIA_AI_MODEL": MODEL,
        "EVENNIA_AI_API_BASE": url,
        "EVENNIA_AI_API_KEY": "x",
        "EVENNIA_AI_MAX_RETRIES": 0,
        "EVENNIA_AI_CONTEXT_WINDOWS": {MODEL: WINDOW},
        "EVENNIA_AI_AUTONOMY": False,
        "EVENNIA_AI_SPEAKER_EVENTS_PER_MINUTE": 0,  # scripted players talk fast
        "EVENNIA_AI_REFLECTION_INTERVAL": 0,
        "EVENNIA_AI_REFLECTION_IMPORTANCE_THRESHOLD": 0,
        "EVENNIA_AI_DATA_DIR": folder,
    }


def main(quick: bool = False) -> str:
    from django.test import override_settings

    from bench.cost import Clock, simulated
    from bench.tick import synchronous_calls
    from evennia_ai.memory import longterm
    from evennia_ai.testing.model_server import ModelServer
    from evennia_ai.testing.reading_model import read_and_answer

    scenario = (
        generate(players=2, sessions=5, small_talk=3)
        if quick
        else generate(players=4, sessions=12, small_talk=5)
    )
    clock = Clock(START)
    with (
        synchronous_calls(),
        ModelServer(responder=read_and_answer, window_of=lambda _m: WINDOW) as server,
        tempfile.TemporaryDirectory() as folder,
        override_settings(**settings(server.url, folder)),
    ):
        target_tokens = context_median_tokens()
        longterm.close()
        longterm.get_memory().init_sync()
        with simulated(clock):
            results = run(scenario, server, clock)
        longterm.close()
    text = render(results, target_tokens)
    print(text)
    return text


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)

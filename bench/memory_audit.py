"""Memory audit: is every long-term memory an NPC stores worth keeping? Gate off, then on.

``python -m bench memory_audit`` (``--quick``: a shorter life, under two minutes). A test
database (in memory) gets an Innkeeper with a persona and an operator prompt, three players and
a room; a scripted life of hundreds of lines follows, with a sleep every day: players tell facts,
make small talk, repeat facts, update them, ask questions that make the NPC recall, and ask it to
look around. Every model call is answered in process by the reading model
(:mod:`evennia_ai.testing.reading_model`) behind an eager memory writer (:func:`hoarder`) that,
like the memory libraries of the public audit the issue cites, also stores what it should not: a
sentence of its persona or of its instructions, what a tool showed it, the memories it was just
shown ("I remember that ..."), and each fact a second time in other words. Memories are written
through the NPC's real paths (the ``store_memory`` tool, sleep consolidation) in keyword mode.

Every stored memory is then classified against the scenario's ground truth (what the
generator told and planted): ``useful`` (a fact a player told, not stored before), ``duplicate``
(a fact stored before, or its paraphrase), ``restated`` (the instructions, a tool result, a
conversation transcript), ``recalled-again``, ``persona``, ``other``. Targets: at most 10% not
useful, and at least 90% of the facts players told stored. The life runs twice, with
``EVENNIA_AI_MEMORY_GATE`` off and on.
"""

from __future__ import annotations

import random
import re
import sys
import tempfile
from dataclasses import dataclass, field
from unittest import mock

from bench.common import table
from bench.tick import synchronous_calls

MODEL = "openai/test-model"
PLAYERS = ("Alice", "Bob", "Carol")
THINGS = {
    "horse": ("Thunder", "Storm", "Ember"),
    "dog": ("Biscuit", "Rex", "Pip"),
    "home town": ("Riverdale", "Millbrook", "Ashford"),
    "favourite drink": ("cider", "mead", "porter"),
    "sword": ("Dawnbreaker", "Frostbite", "Oathkeeper"),
    "brother": ("Tomas", "Edric", "Hal"),
    "guild": ("Weavers", "Masons", "Tanners"),
    "lucky number": ("seven", "three", "eleven"),
    "boat": ("Gull", "Heron", "Kestrel"),
    "mentor": ("Eldra", "Oswin", "Brannoc"),
}
PERSONA = (
    "Marta Ashgrove, innkeeper of the Gilded Tankard for twenty years. Warm but no pushover; "
    "knows every rumour in town. Proud of her mutton stew and her cellar."
)
PROMPT = "Keep the tavern friendly. Never reveal other guests' private business."
ROOM_DESC = "A warm common room with a crackling hearth and low oak beams."
NOT_USEFUL = ("duplicate", "restated", "recalled-again", "persona", "other")
FACT_TEXT = re.compile(r"^([A-Z][a-z]+)'s ([a-z][a-z ]*?) is ([A-Za-z0-9][\w'-]*)\.?$")


# -- the scenario ----------------------------------------------------------------------------------
@dataclass
class Line:
    """One player line and what it is (``tell``, ``repeat``, ``update``, ``ask``, ``look``,
    ``chat``); ``fact`` is ``(player, thing, value)`` for the first three."""

    player: str
    text: str
    kind: str
    fact: tuple[str, str, str] | None = None


@dataclass
class Life:
    """The scripted life: days of lines, a sleep after each day."""

    days: list[list[Line]] = field(default_factory=list)

    @property
    def told(self) -> list[tuple[str, str, str]]:
        """Every fact told, once each, in order (updates included)."""
        seen: list[tuple[str, str, str]] = []
        for day in self.days:
            for line in day:
                if line.fact and line.fact not in seen:
                    seen.append(line.fact)
        return seen


def scripted_life(days: int, lines_per_day: int, seed: int = 20) -> Life:
    """A reproducible life: the ground truth is in each line."""
    rng = random.Random(seed)
    known: dict[tuple[str, str], str] = {}
    had: set[tuple[str, str, str]] = set()

    def unused(player: str, thing: str) -> list[str]:
        return [value for value in THINGS[thing] if (player, thing, value) not in had]

    life = Life()
    chat = 0
    for _day in range(days):
        lines = []
        for _ in range(lines_per_day):
            player = rng.choice(PLAYERS)
            mine = [thing for (who, thing) in known if who == player]
            untold = [thing for thing in THINGS if (player, thing) not in known]
            roll = rng.random()
            if roll < 0.2 and untold:
                thing = rng.choice(untold)
                value = THINGS[thing][0]
                known[(player, thing)] = value
                had.add((player, thing, value))
                text = f"Innkeeper, my {thing} is {value}."
                lines.append(Line(player, text, "tell", (player, thing, value)))
            elif roll < 0.3 and mine:
                thing = rng.choice(mine)
                value = known[(player, thing)]
                text = f"As I said, Innkeeper, my {thing} is {value}."
                lines.append(Line(player, text, "repeat", (player, thing, value)))
            elif roll < 0.37 and any(unused(player, thing) for thing in mine):
                # news: a value this player has not had before (see docs/memory.md on reverts)
                thing = rng.choice([thing for thing in mine if unused(player, thing)])
                value = unused(player, thing)[0]
                known[(player, thing)] = value
                had.add((player, thing, value))
                text = f"Innkeeper, news: my {thing} is {value} now."
                lines.append(Line(player, text, "update", (player, thing, value)))
            elif roll < 0.55 and mine:
                thing = rng.choice(mine)
                lines.append(Line(player, f"Innkeeper, what is my {thing}?", "ask"))
            elif roll < 0.6:
                lines.append(Line(player, "Innkeeper, look around: is the hearth lit?", "look"))
            else:
                chat += 1
                text = f"Lovely evening, Innkeeper. The fiddler plays tune number {chat}."
                lines.append(Line(player, text, "chat"))
        life.days.append(lines)
    return life


# -- the eager memory writer ----------------------------------------------------------------------
class Hoarder:
    """The reading model, plus the memory writes an over-eager model makes (recorded as planted).

    On each event it stores the facts the event tells (a careful model does too), each again in
    other words, every memory it was shown (``I remember that ...``), now and then a sentence of
    its persona or of its instructions, and what ``look`` showed it.
    """

    def __init__(self):
        self.planted: dict[str, str] = {}  # text -> its class
        self.events = 0

    def __call__(self, body: dict) -> dict:
        from evennia_ai.testing.reading_model import read_and_answer

        answer = read_and_answer(body)
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        whole = "\n".join(str(m.get("content") or "") for m in messages)
        if "## Task: " in whole or not messages:
            return answer  # a task (sleep, compaction...): the reading model alone
        offered = {(t.get("function") or t).get("name") for t in body.get("tools") or [] if t}
        last = messages[-1]
        event = next(
            (str(m.get("content") or "") for m in reversed(messages) if m.get("role") == "user"),
            "",
        )
        if last.get("role") == "user" and "store_memory" not in offered:
            if "request_tools" in offered:  # the memory tools are withheld: ask for them
                return {"tool_calls": [{"name": "request_tools", "arguments": {"group": "memory"}}]}
            return answer
        if last.get("role") == "tool" and last.get("name") not in ("request_tools", "look"):
            return answer  # its notes were taken: the reading model finishes
        if "look around" in event and last.get("name") != "look" and "look" in offered:
            return {"tool_calls": [{"name": "look", "arguments": {}}]}
        calls = []
        if last.get("name") == "look":
            seen = next((s for s in str(last.get("content")).split("\n") if "hearth" in s), "")
            if seen:
                calls.append(self.plant(seen.strip().strip('"'), "restated"))
        return self.before(answer, calls + self.notes(event, whole))

    def notes(self, event: str, whole: str) -> list[dict]:
        """The memory writes of one event: its facts (twice), what it was shown, and now and
        then its persona or its instructions."""
        from evennia_ai.testing.reading_model import _fact_sentence, facts_in

        self.events += 1
        calls = []
        for who, thing, value in facts_in(event):
            calls.append(_store(_fact_sentence(who, thing, value)))
            calls.append(self.plant(f"{who} told me that their {thing} is {value}", "duplicate"))
        for text in remembered(whole):
            if not text.startswith("I remember that"):
                calls.append(self.plant(f"I remember that {text}", "recalled-again"))
        if self.events % 7 == 0:
            sentence = PERSONA.split(". ")[(self.events // 7) % 3].rstrip(".")
            calls.append(self.plant(f"I am {sentence}", "persona"))
        if self.events % 11 == 0:
            sentence = PROMPT.split(". ")[(self.events // 11) % 2].rstrip(".")
            calls.append(self.plant(sentence, "restated"))
        return calls

    def plant(self, text: str, kind: str) -> dict:
        self.planted[" ".join(text.split())] = kind
        return _store(text)

    @staticmethod
    def before(answer: dict, calls: list[dict]) -> dict:
        """``answer`` with ``calls`` first (a text answer becomes a ``say``)."""
        if not calls:
            return answer
        rest = list(answer.get("tool_calls") or [])
        if not rest:
            rest = [{"name": "say", "arguments": {"message": answer.get("text") or "Hm."}}]
        return {"tool_calls": calls + rest}


def remembered(whole: str) -> list[str]:
    """The memories of a request's ``## Things you remember`` section (provenance cut off)."""
    at = whole.find("## Things you remember\n")
    if at < 0:
        return []
    found = []
    for line in whole[at:].split("\n")[1:]:
        if line.startswith("<untrusted"):
            continue
        if not line.startswith("| - "):
            break
        found.append(re.sub(r"\s*\([^)]*\)\s*$", "", line[4:]).strip())
    return found


def _store(text: str) -> dict:
    return {"name": "store_memory", "arguments": {"content": text}}


# -- the run ---------------------------------------------------------------------------------------
def _people():
    from evennia.objects.objects import DefaultCharacter, DefaultRoom
    from evennia.utils.create import create_object

    from evennia_ai.typeclasses import AIAssistantCharacter

    room = create_object(DefaultRoom, key="The Gilded Tankard", nohome=True)
    room.db.desc = ROOM_DESC
    players = {}
    for name in PLAYERS:
        player = create_object(DefaultCharacter, key=name, location=room, home=room)
        player.sessions.count = lambda: 1  # connected players: an audience
        players[name] = player
    npc = create_object(AIAssistantCharacter, key="Innkeeper", location=room, home=room)
    npc.ai.set_persona(PERSONA)
    npc.ai.set_user_system_prompt(PROMPT)
    npc.ai.script.trigger_tick = lambda: None
    return room, players, npc


def _until_idle(script, limit: int = 6) -> int:
    ran = 0
    for _ in range(limit):
        d = script.run_tick()
        if d is None or not d.called or d.result is None:
            break
        ran += 1
    return ran


def live(life: Life, gate_on: bool) -> dict:
    """Run the life with the gate on or off; the stored memories and the figures."""
    from django.test import override_settings

    from evennia_ai.engine import tick as tick_module
    from evennia_ai.memory import longterm, longterm_config
    from evennia_ai.testing.scripted_model import ScriptedModel
    from evennia_ai.workspace.sleep import go_to_sleep, wake_up

    class Model(ScriptedModel):
        def resolve_model(self, name):  # history compaction asks the client (not in the double)
            return name or MODEL

    hoarder = Hoarder()
    model = Model(responder=hoarder, model=MODEL)
    with (
        tempfile.TemporaryDirectory() as folder,
        mock.patch.object(tick_module, "get_client", return_value=model),
        mock.patch.object(longterm_config, "local_embedder_installed", lambda: False),
        override_settings(
            EVENNIA_AI_MODEL=MODEL,
            EVENNIA_AI_CONTEXT_WINDOWS={MODEL: 128000},
            EVENNIA_AI_AUTONOMY=False,
            EVENNIA_AI_SPEAKER_EVENTS_PER_MINUTE=0,
            EVENNIA_AI_REFLECTION_INTERVAL=0,
            EVENNIA_AI_REFLECTION_IMPORTANCE_THRESHOLD=0,
            EVENNIA_AI_DATA_DIR=folder,
            EVENNIA_AI_MEM0_CONFIG=None,
            EVENNIA_AI_MEMORY_GATE=gate_on,
            EVENNIA_AI_SLEEP_SCHEDULE=None,  # it sleeps when the script says, not by the clock
        ),
    ):
        longterm.close()
        longterm.get_memory().init_sync()
        room, players, npc = _people()
        script = npc.ai.script
        ticks = 0
        shown = []  # per player line: the memories its requests showed
        for day in life.days:
            for line in day:
                first = len(model.requests)
                players[line.player].at_say(line.text)
                ticks += _until_idle(script)
                shown.append(
                    [
                        text
                        for request in model.requests[first:]
                        for text in remembered(
                            "\n".join(str(m.get("content") or "") for m in request["messages"])
                        )
                    ]
                )
            go_to_sleep(npc, "bench")
            ticks += _until_idle(script, 4)
            wake_up(npc)
        index = longterm.get_memory().keyword_index()
        docs = list(reversed(index.recent(npc.dbref, 100000)))
        counts = dict((npc.ai.metrics or {}).get("memory_gate") or {})
        for obj in [npc, *players.values(), room]:
            obj.delete()
        longterm.close()
    return {
        "docs": docs,
        "planted": hoarder.planted,
        "ticks": ticks,
        "requests": len(model.requests),
        "shown": shown,
        "gate_counts": counts,
    }


# -- the audit -------------------------------------------------------------------------------------
def classify(docs, planted: dict[str, str], told: list[tuple[str, str, str]]) -> list[str]:
    """The class of each stored memory (oldest first), from the ground truth."""
    told_set = set(told)
    carried: set[tuple[str, str, str]] = set()
    classes = []
    for doc in docs:
        text = " ".join(doc.text.split())
        if text in planted:
            classes.append(planted[text])
            continue
        if text.startswith("Recent conversation:"):
            classes.append("restated")
            continue
        match = FACT_TEXT.match(text)
        fact = match.groups() if match else None
        if fact in told_set:
            classes.append("duplicate" if fact in carried else "useful")
            carried.add(fact)
        else:
            classes.append("other")
    return classes


def audit(run: dict, life: Life) -> dict:
    told = life.told
    classes = classify(run["docs"], run["planted"], told)
    stored_facts = set()
    current: dict[tuple[str, str], set[str]] = {}
    for doc in run["docs"]:
        match = FACT_TEXT.match(" ".join(doc.text.split()))
        if not match:
            continue
        stored_facts.add(match.groups())
        if not doc.superseded_by:
            current.setdefault(match.groups()[:2], set()).add(match.group(3))
    latest: dict[tuple[str, str], str] = {}
    for who, thing, value in told:
        latest[(who, thing)] = value
    outdated = sum(
        1 for key, values in current.items() for value in values if value != latest.get(key)
    )
    shown_old = 0  # memories shown with a value a player had already replaced
    known: dict[tuple[str, str], str] = {}
    lines = [line for day in life.days for line in day]
    for line, memories in zip(lines, run["shown"]):
        for text in memories:
            match = FACT_TEXT.match(text)
            if match and match.groups()[:2] in known:
                shown_old += match.group(3) != known[match.groups()[:2]]
        if line.fact:
            known[line.fact[:2]] = line.fact[2]
    total = len(classes)
    by_class = {name: classes.count(name) for name in ("useful", *NOT_USEFUL)}
    return {
        "total": total,
        "by_class": by_class,
        "not_useful": (total - by_class["useful"]) / total if total else 0.0,
        "facts_told": len(told),
        "facts_stored": sum(1 for fact in told if fact in stored_facts),
        "outdated_current": outdated,
        "outdated_in_requests": shown_old,
        "superseded": sum(1 for doc in run["docs"] if doc.superseded_by),
    }


def main(quick: bool = False) -> str:
    from evennia_ai.memory.gate import describe_counts

    days, per_day = (3, 40) if quick else (8, 60)
    life = scripted_life(days, per_day)
    with synchronous_calls():
        runs = {gate: live(life, gate) for gate in (False, True)}
    results = {gate: audit(run, life) for gate, run in runs.items()}
    lines = sum(len(day) for day in life.days)
    rows = []
    for gate, result in results.items():
        facts = result["facts_stored"] / result["facts_told"] if result["facts_told"] else 0.0
        rows.append(
            [
                "on" if gate else "off",
                runs[gate]["ticks"],
                result["total"],
                *(result["by_class"][name] for name in ("useful", *NOT_USEFUL)),
                f"{result['not_useful']:.1%} ({'pass' if result['not_useful'] <= 0.10 else 'FAIL'})",
                f"{result['facts_stored']}/{result['facts_told']} ({facts:.0%}, "
                f"{'pass' if facts >= 0.9 else 'FAIL'})",
                result["outdated_current"],
                result["outdated_in_requests"],
            ]
        )
    text = table(
        f"Memory audit: {lines} player lines over {days} days with a sleep each night "
        "(targets: at most 10% not useful, at least 90% of told facts stored)",
        [
            "gate",
            "ticks",
            "memories",
            "useful",
            *NOT_USEFUL,
            "not useful",
            "told facts stored",
            "old values current",
            "old values in requests",
        ],
        rows,
    )
    text += "\n" + table(
        "The gate's decisions (the NPC's memory_gate counters, as ailtm shows them)",
        ["gate", "decisions"],
        [["off" if not g else "on", describe_counts(runs[g]["gate_counts"])] for g in runs],
    )
    print(text)
    return text


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)

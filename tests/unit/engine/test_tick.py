"""engine/tick and the modules it was split into: sizes a reader can hold, and no writes on the
Script (the Script keeps its own flags from the agenda's decision); in a room of several AI NPCs,
players answered before any NPC-to-NPC line, and the trace saying why the NPC woke and what it
heard without being woken."""

from __future__ import annotations

import ast
import time
from pathlib import Path
from unittest import mock

import pytest
from django.test import Client, modify_settings, override_settings
from unit.engine.test_assistant_cycles import call
from unit.engine.test_cost_and_pace import PlayerBase

from evennia_ai.commands.runtime import trace_detail
from evennia_ai.engine import floor, outages
from evennia_ai.engine import tick as tick_module
from evennia_ai.engine.tick import TickState
from evennia_ai.engine.trace import TickTrace
from evennia_ai.memory import events as ev
from evennia_ai.memory.events import Event

ENGINE = Path(__file__).resolve().parents[3] / "evennia_ai" / "engine"
#: The tick and the modules that hold its jobs.
TICK_MODULES = sorted(ENGINE.glob("tick*.py")) + [
    ENGINE / "agenda.py",
    ENGINE / "upkeep.py",
    ENGINE / "accounting.py",
    ENGINE / "bookkeeping.py",
]


def functions(path: Path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def script_ndb_writes(path: Path) -> list[str]:
    """``x.script.ndb.<name> = ...`` or ``script.ndb.<name> = ...`` (or setattr on it)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        targets = []
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        elif isinstance(node, ast.Call) and getattr(node.func, "id", "") == "setattr":
            targets = node.args[:1]
        for target in targets:
            holder = target.value if isinstance(target, ast.Attribute) else target
            text = ast.unparse(holder)
            if text == "script.ndb" or text.endswith(".script.ndb"):
                found.append(f"{path.name}:{node.lineno}: {ast.unparse(target)}")
    return found


@pytest.mark.parametrize("path", TICK_MODULES, ids=lambda p: p.name)
def test_the_tick_writes_nothing_on_its_script(path):
    assert script_ndb_writes(path) == []


def test_the_check_finds_a_write_on_the_script(tmp_path):
    old = tmp_path / "old_tick.py"
    old.write_text(
        "class T:\n"
        "    def choose(self):\n"
        "        self.script.ndb.again = True\n"
        "        script.ndb.last_autonomous = 1\n"
    )
    assert len(script_ndb_writes(old)) == 2


@pytest.mark.parametrize("path", TICK_MODULES, ids=lambda p: p.name)
def test_no_function_over_60_lines(path):
    long = [
        f"{node.name}: {node.end_lineno - node.lineno + 1} lines"
        for node in functions(path)
        if node.end_lineno - node.lineno + 1 > 60
    ]
    assert long == []


def test_the_tick_reads_top_to_bottom_in_one_short_function():
    (run,) = [
        node
        for node in functions(ENGINE / "tick.py")
        if node.name == "run" and node.col_offset == 4
    ]
    assert run.end_lineno - run.lineno + 1 < 30
    calls = [ast.unparse(n.func) for n in ast.walk(run) if isinstance(n, ast.Call)]
    for step in ("self.choose", "self._read", "prepare", "self._think", "self.upkeep.run"):
        assert step in calls, f"the tick's top function does not call {step}"


# -- a room of several AI NPCs (issue 34) ----------------------------------------------------------
def player_line(text: str, speaker, why: str = "named") -> Event:
    """A player's line as perception queues it for the NPC it woke (``why``: the floor's
    reason)."""
    return Event.create(
        "say",
        text,
        source=speaker.dbref,
        source_name=speaker.key,
        addressed=why in floor.ADDRESSING_REASONS,
        data={"raw": text, "from_assistant": False, "floor": why},
    )


def npc_line(text: str, speaker) -> Event:
    """Another AI NPC's line naming the NPC, as perception queues it."""
    return Event.create(
        "say",
        text,
        source=speaker.dbref,
        source_name=speaker.key,
        addressed=True,
        priority=ev.PRIORITY_ADDRESSED_BY_NPC,
        data={"raw": text, "from_assistant": True, "floor": f"named by {speaker.key}"},
    )


class FloorBase(PlayerBase):
    """The Innkeeper and the Bard in room1 with the player; the floor's state set directly."""

    def setUp(self):
        super().setUp()
        self.bard = self.second_npc()
        self.server.default_reply = {"tool_calls": [call("say", message="Right away.")]}
        floor.forget(self.room1)
        self.addCleanup(floor.forget, self.room1)

    def wait_for(self, npc, seconds_ago: float = 0.0) -> None:
        """``npc`` was woken for a player's line ``seconds_ago`` and has not answered yet."""
        floor.room_floor(self.room1).waiting = {npc.id: time.monotonic() - seconds_ago}

    def chat_requests(self) -> int:
        return len(self.server.requests_to("/v1/chat/completions"))


class TestPlayersFirst(FloorBase):
    def test_players_are_answered_before_npc_lines(self):
        """The Innkeeper owes the player an answer: the Bard's line from another NPC waits,
        unwritten, for the Innkeeper's tick to end, then is taken at the Bard's next tick."""
        self.wait_for(self.npc)
        self.npc.ai.perceive(player_line("Innkeeper, an ale please.", self.char1))
        self.bard.ai.perceive(npc_line("Bard, play us a tune.", self.npc))
        queue_before = self.bard.ai.event_queue
        assert self.tick_of(self.bard) is None  # idle: no model call, no trace
        assert self.chat_requests() == 0
        assert self.bard.ai.event_queue == queue_before  # still pending, not in flight
        assert not self.bard.ai.traces()

        trace = self.tick_of(self.npc)
        assert trace.context_type == "tick_event" and "an ale" in trace.event_text
        assert self.npc.id not in floor.room_floor(self.room1).waiting  # its tick ended
        assert not floor.player_waiting(self.bard)

        trace = self.tick_of(self.bard)
        assert trace.context_type == "tick_event" and "play us a tune" in trace.event_text
        assert self.chat_requests() == 2
        assert not ev.pending_events(self.bard.ai.event_queue)

    def test_the_gate_expires(self):
        """A player's line the woken NPC never answers (its tick never ran) holds the room's
        NPC talk back for EVENNIA_AI_TIMEOUT + 10 s at most."""
        self.bard.ai.perceive(npc_line("Bard, play us a tune.", self.npc))
        timeout = 3  # EVENNIA_AI_TIMEOUT in these tests (answer_from_loopback)
        self.wait_for(self.npc, seconds_ago=timeout + 8)
        assert self.tick_of(self.bard) is None  # still within the time it may take
        self.wait_for(self.npc, seconds_ago=timeout + 12)
        trace = self.tick_of(self.bard)
        assert trace.context_type == "tick_event" and "play us a tune" in trace.event_text

    def test_an_npcs_own_player_is_not_a_reason_to_wait(self):
        """Only another NPC's unanswered player holds a batch back; a player's line in the
        batch itself is answered at once, the NPC lines with it."""
        self.wait_for(self.bard)
        self.bard.ai.perceive(npc_line("Bard, play us a tune.", self.npc))
        assert self.tick_of(self.bard).context_type == "tick_event"
        self.wait_for(self.npc)
        self.bard.ai.perceive(npc_line("Bard, another one.", self.npc))
        self.bard.ai.perceive(player_line("Bard, sing!", self.char1))
        trace = self.tick_of(self.bard)
        assert "Bard, sing!" in trace.event_text and "another one" in trace.event_text

    def test_every_ending_of_the_tick_tells_the_floor(self):
        """Answered, silent, held back or failed: each tick tells the floor it ended."""
        ended = []
        with mock.patch.object(
            floor, "tick_ended", side_effect=lambda npc, batch: ended.append(list(batch))
        ):
            self.npc.ai.perceive(player_line("An ale?", self.char1))
            assert self.tick_of(self.npc).stop_reason  # answered
            self.npc.ai.perceive(player_line("Another ale?", self.char1))
            silenced = mock.patch.object(TickState, "silenced", property(lambda state: True))
            with silenced:
                assert self.tick_of(self.npc).stop_reason == "budget"  # silent
            self.npc.ai.perceive(player_line("A third ale?", self.char1))
            with mock.patch.object(outages.BOARD, "admits", return_value=False):
                assert self.tick_of(self.npc) is None  # held back while the model is down
            with mock.patch.object(tick_module, "prepare", side_effect=RuntimeError("broken")):
                assert self.tick_of(self.npc) is None  # failed
        texts = [[event.text for event in batch] for batch in ended]
        assert texts == [["An ale?"], ["Another ale?"], ["A third ale?"], ["A third ale?"]]

    def test_a_floor_that_fails_does_not_fail_the_tick(self):
        self.npc.ai.perceive(player_line("An ale?", self.char1))
        with mock.patch.object(floor, "tick_ended", side_effect=RuntimeError("floor")):
            trace = self.tick_of(self.npc)
        assert trace.context_type == "tick_event" and not trace.error


@override_settings(ROOT_URLCONF="web_test_urls")
@modify_settings(INSTALLED_APPS={"append": "evennia_ai.web"})
class TestTraceNotes(FloorBase):
    def shown(self, npc, trace: TickTrace) -> tuple[str, str]:
        """The trace as ``aitrace/show`` and the dashboard's trace page show it."""
        self.account.is_staff = False
        client = Client()
        client.force_login(self.account)
        page = client.get(f"/ai/npc/{npc.id}/trace/{trace.tick_id}/")
        assert page.status_code == 200
        stored = TickTrace.from_dict(npc.ai.trace(trace.tick_id))
        return trace_detail(stored), page.content.decode()

    def test_trace_notes_heard_not_addressed_and_why_woken(self):
        for _ in range(3):
            floor.note_heard(self.bard, "Alice", "not addressed")
        self.bard.ai.perceive(player_line("What a night.", self.char1, "talked with Char last"))
        trace = self.tick_of(self.bard)
        heard = [n for n in trace.notes if "Alice" in n]
        assert len(heard) == 1 and "heard 3" in heard[0] and "not addressed" in heard[0]
        assert any("woken" in n and "talked with Char last" in n for n in trace.notes)
        text, page = self.shown(self.bard, trace)
        notes = page.split('id="ai-trace-notes"')[1].split("</ul>")[0]
        for note in trace.notes:
            assert note in text
            assert note in notes
        # noted once: the next trace has only what was heard since
        self.bard.ai.perceive(player_line("Bard, a song?", self.char1))
        trace = self.tick_of(self.bard)
        assert not [n for n in trace.notes if "Alice" in n]
        assert any("woken" in n and "named" in n for n in trace.notes)

    def test_the_floor_notes_reach_the_trace_aitrace_and_the_dashboard(self):
        """Whatever words the floor uses, the tick puts them in its trace, before the floods
        and what the agenda gave up, and both views show them."""
        self.bard.ndb.ai_floods = {"Alice": 4}
        woken = mock.patch.object(floor, "woken_notes", return_value=["woken: named (Char)"])
        heard = mock.patch.object(
            floor, "heard_notes", return_value=["heard 2 lines of Tom; not addressed"]
        )
        self.bard.ai.perceive(player_line("Bard, a song?", self.char1))
        with woken as woken_notes, heard as heard_notes:
            trace = self.tick_of(self.bard)
        assert [e.text for e in woken_notes.call_args.args[0]] == ["Bard, a song?"]
        assert heard_notes.call_args.args[0] == self.bard
        assert trace.notes == [
            "woken: named (Char)",
            "heard 2 lines of Tom; not addressed",
            "dropped 4 event(s) from Alice: too many in a minute",
        ]
        text, page = self.shown(self.bard, trace)
        assert "Notes\n  woken: named (Char)\n  heard 2 lines of Tom; not addressed" in (
            text.replace("|w", "").replace("|n", "")
        )
        notes = page.split('id="ai-trace-notes"')[1].split("</ul>")[0]
        assert "<li>woken: named (Char)</li>" in notes
        assert "<li>heard 2 lines of Tom; not addressed</li>" in notes

    def test_a_tick_that_calls_no_model_notes_them_too(self):
        self.bard.ai.perceive(player_line("Bard, a song?", self.char1))
        woken = mock.patch.object(floor, "woken_notes", return_value=["woken: named (Char)"])
        silenced = mock.patch.object(TickState, "silenced", property(lambda state: True))
        with woken, silenced:
            trace = self.tick_of(self.bard)
        assert trace.stop_reason == "budget" and trace.notes == ["woken: named (Char)"]

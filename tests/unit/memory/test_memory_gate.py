"""The write-side quality gate of long-term memory (issue 20, item 2), on the keyword path.

The rules are tested pure (:func:`evennia_ai.memory.gate.decide`), then through the store in
keyword mode (a temporary folder, thread hops made synchronous), then through the
``store_memory`` tool and ``ailtm`` on a real NPC: duplicates skipped or merged, restatements of
the prompt, a tool result or a recalled memory skipped, the persona skipped, an update
superseding what it replaces (kept, marked, left out of searches and of the request), and every
decision counted.
"""

import sqlite3
from types import SimpleNamespace

import pytest
from django.test import override_settings
from support.commands import AICommandTestBase, words
from support.memory import keyword_only_memory, use_keyword_memory

import evennia_ai.tools.blocks  # noqa: F401  (registers the tools)
import evennia_ai.tools.longterm  # noqa: F401
from evennia_ai.commands import memory as cmds
from evennia_ai.memory import gate, longterm
from evennia_ai.memory.events import Event
from evennia_ai.memory.gate import GateContext, decide
from evennia_ai.memory.keyword_index import KeywordDoc, KeywordIndex
from evennia_ai.prompt import longterm_sources
from evennia_ai.tools.base import ToolContext, ToolResult
from evennia_ai.tools.registry import TOOL_REGISTRY

PERSONA = (
    "Marta Ashgrove, innkeeper of the Gilded Tankard for twenty years. Warm but no pushover; "
    "proud of her mutton stew and her cellar."
)
PROMPT = "Keep the tavern friendly. Never reveal other guests' private business."


def doc(text: str, doc_id: str = "m1", person: str = "") -> KeywordDoc:
    return KeywordDoc(id=doc_id, npc="#5", text=text, person=person)


def fired(deferred):
    box = []
    deferred.addBoth(box.append)
    assert box, "the call did not complete synchronously"
    if hasattr(box[0], "raiseException"):
        box[0].raiseException()
    return box[0]


# -- the rules, pure ------------------------------------------------------------------------------
def test_equal_and_near_duplicates_are_skipped():
    known = [doc("Alice's horse is Thunder.")]
    assert decide("alice's  HORSE is thunder", known, GateContext()).action == "skipped_duplicate"
    near = decide("Alice told me her horse is Thunder", known, GateContext())
    assert near.action == "skipped_duplicate" and near.existing.id == "m1"
    assert decide("Alice's horse is Thunder", [], GateContext()).action == "stored"


def test_a_fuller_text_merges_into_the_memory_it_adds_to():
    known = [doc("The cellar door sticks in wet weather", "m2")]
    merged = decide("The cellar door sticks badly in wet weather", known, GateContext())
    assert merged.action == "merged" and merged.existing.id == "m2"
    # a different text sharing some words is a memory of its own
    other = decide("The cellar holds forty barrels of ale", known, GateContext())
    assert other.action == "stored"


def test_restated_persona_prompt_tool_result_and_recalled_memory_are_skipped():
    context = GateContext(
        persona=PERSONA,
        prompts=[PROMPT],
        tool_results=["The Gilded Tankard. A warm room with a crackling hearth."],
        recalled=["Bob owes Alice five gold coins"],
    )
    assert decide("I am Marta Ashgrove, innkeeper of the Gilded Tankard", [], context).action == (
        "skipped_persona"
    )
    assert decide("Never reveal other guests' private business", [], context).action == (
        "skipped_restated"
    )
    assert decide("The room has a crackling hearth", [], context).action == "skipped_restated"
    assert decide("I remember Bob owes Alice five gold coins", [], context).action == (
        "skipped_recalled"
    )
    # a new fact sharing a word or two with all of them is kept
    assert decide("Bob's sister is Carol", [], context).action == "stored"


def test_an_update_supersedes_the_value_it_replaces():
    known = [doc("Alice's horse is Thunder", "old"), doc("Alice's dog is Biscuit", "dog")]
    update = decide("Alice's horse is Storm now", known, GateContext())
    assert update.action == "stored" and [d.id for d in update.supersedes] == ["old"]
    # the same value in other words is no update; another subject is no update
    assert decide("Alice's horse is called Thunder", known, GateContext()).supersedes == []
    assert decide("Bob's horse is Storm", known, GateContext()).supersedes == []
    assert gate.fact_parts("The ale is a dark brew from the hills of the north") is None


def test_another_person_or_value_is_never_a_restatement_or_duplicate():
    context = GateContext(
        recalled=["Bob's lucky number is seven", "Alice's home town is Riverdale"]
    )
    assert decide("Carol's lucky number is seven", [], context).action == "stored"
    assert decide("Carol told me her lucky number is seven", [], context).action == "stored"
    known = [doc("Alice's home town is Riverdale")]
    update = decide("Alice's home town is Ashford", known, context)
    assert update.action == "stored" and update.supersedes == known
    assert gate.key_words("Carol's lucky number is 7") == {"carol", "lucky", "number", "7"}


def test_short_texts_are_only_judged_equal():
    context = GateContext(prompts=["Stew is served at noon."])
    assert decide("Stew", [], context).action == "stored"  # one word: too little to compare


def test_counts_and_their_line():
    metrics = gate.count_decisions({}, ["stored", "stored", "superseded", "skipped_persona"])
    metrics = gate.count_decisions(metrics, ["merged", "unknown"])
    assert metrics["memory_gate"] == {
        "stored": 2,
        "superseded": 1,
        "skipped_persona": 1,
        "merged": 1,
    }
    assert gate.describe_counts(metrics["memory_gate"]) == (
        "stored 2, merged 1, skipped persona 1, superseded 1"
    )
    assert gate.describe_counts(None) == "nothing yet"


def test_recalled_memories_are_short_lived_and_never_in_the_database():
    npc = SimpleNamespace(ndb=SimpleNamespace(ai_recalled=None))
    gate.note_recalled(npc, ["Bob owes Alice five gold coins", "  "], now=1000.0)
    assert gate.recalled_texts(npc, now=1000.0 + 10) == ["Bob owes Alice five gold coins"]
    assert gate.recalled_texts(npc, now=1000.0 + gate.RECALLED_SECONDS + 1) == []
    gate.note_recalled(npc, [f"memory {n}" for n in range(80)], now=2000.0)
    assert len(gate.recalled_texts(npc, now=2000.0)) == gate.RECALLED_MAX


# -- through the store (keyword mode) -----------------------------------------------------------
@pytest.fixture
def memory(tmp_path):
    with keyword_only_memory(str(tmp_path)) as memory:
        yield memory


def store(text, **kwargs):
    return fired(longterm.store("#5", text, **kwargs))


def test_store_skips_merges_and_supersedes(memory):
    first = store("Alice's horse is Thunder", person="#7")
    assert first.decision == "stored" and first.written
    again = store("Alice said her horse is Thunder", person="#7")
    assert again.decision == "skipped_duplicate" and again.duplicate and again.id == first.id
    assert store("Alice's horse is Thunder").decision == "stored"  # about no one: another scope

    door = store("The cellar door sticks")
    fuller = store("The cellar door sticks in the rain")
    assert fuller.decision == "merged" and fuller.id == door.id
    assert fired(longterm.get("#5", door.id)).text == "The cellar door sticks in the rain"

    update = store("Alice's horse is Storm", person="#7")
    assert update.decision == "stored" and update.superseded == (first.id,)
    assert update.decisions == ["stored", "superseded"]
    old = fired(longterm.get("#5", first.id))
    assert old.text == "Alice's horse is Thunder"  # kept
    assert old.superseded_by == update.id and old.superseded_at
    found = fired(longterm.recall("#5", "Alice horse", person="#7")).hits
    assert [hit.text for hit in found] == ["Alice's horse is Storm"]
    listed = fired(longterm.recent("#5", 10))
    assert any(hit.id == first.id and hit.superseded_by for hit in listed)
    # sleep re-reading the old statement does not bring the old value back
    replay = store("Alice's horse is Thunder.", person="#7")
    assert replay.decision == "skipped_duplicate" and "newer news" in replay.note
    assert [hit.text for hit in fired(longterm.recall("#5", "horse", person="#7")).hits] == [
        "Alice's horse is Storm"
    ]


def test_store_skips_what_the_context_restates(memory):
    context = GateContext(persona=PERSONA, prompts=[PROMPT], recalled=["Bob owes Alice a coin"])
    persona = store("I am Marta Ashgrove, innkeeper of the Gilded Tankard", context=context)
    assert persona.decision == "skipped_persona" and not persona.written and not persona.id
    assert "persona" in persona.note
    assert store("Keep the tavern friendly", context=context).decision == "skipped_restated"
    assert store("Bob owes Alice a coin.", context=context).decision == "skipped_recalled"
    assert memory.keyword_index().count(npc="#5") == 0


def test_gate_off_stores_all_but_exact_duplicates(memory):
    with override_settings(EVENNIA_AI_MEMORY_GATE=False):
        store("Alice's horse is Thunder")
        assert store("Alice's horse is Thunder").decision == "skipped_duplicate"
        assert store("Alice said her horse is Thunder").decision == "stored"
        context = GateContext(persona=PERSONA)
        assert store("I am Marta Ashgrove of the Gilded Tankard", context=context).written
        result = memory.consolidate_sync(
            "#5", [{"content": "Recent conversation:\nhi", "kind": "transcript"}], infer=False
        )
    assert result.decisions == ["stored"] and len(result.stored) == 1


def test_consolidation_goes_through_the_gate_and_counts(memory):
    store("Bob's sister is Carol")
    texts = [
        {"content": "Bob's sister is Carol.", "source": "told_directly"},
        {"content": "Bob's sister is Dana", "source": "told_directly"},
        {"content": "I am Marta Ashgrove, innkeeper", "source": "observed"},
        {"content": "Recent conversation:\nBob says: my sister is Dana", "kind": "transcript"},
    ]
    context = GateContext(persona=PERSONA)
    result = memory.consolidate_sync("#5", texts, infer=False, context=context)
    assert sorted(result.decisions) == sorted(
        ["skipped_duplicate", "stored", "superseded", "skipped_persona", "skipped_restated"]
    )
    assert [m.text for m in result.stored if m.written] == ["Bob's sister is Dana"]
    assert not result.unstored and not result.errors


def test_the_request_leaves_superseded_memories_out(memory):
    store("Alice's horse is Thunder")
    store("Alice's horse is Storm")
    npc = SimpleNamespace(dbref="#5", key="Innkeeper", ndb=SimpleNamespace(ai_recalled=None))
    event = Event(kind="say", text="What is Alice's horse?", source="#7", source_name="Alice")
    builder = SimpleNamespace(
        npc=npc, batch=[event], batch_text=event.text, extra={"pending_event": event.text}
    )
    text = fired(longterm_sources.semantic_memories(builder))
    assert "Storm" in text and "Thunder" not in text
    assert gate.recalled_texts(npc) == ["Alice's horse is Storm"]  # noted as recalled


def test_an_older_index_file_gains_the_new_columns(tmp_path):
    path = str(tmp_path / "keyword.db")
    index = KeywordIndex(path)
    index.upsert(KeywordDoc(id="a", npc="#5", text="The old well is dry"))
    index.close()
    conn = sqlite3.connect(path)  # as the first release wrote it
    conn.execute("ALTER TABLE docs DROP COLUMN superseded_by")
    conn.execute("ALTER TABLE docs DROP COLUMN superseded_at")
    conn.commit()
    conn.close()
    index = KeywordIndex(path)
    try:
        assert index.get("a").superseded_by == ""
        assert index.mark_superseded(["a"], "b", "2026-01-01T00:00:00Z") == 1
        assert index.superseded_among(["a", "zz"]) == {"a"}
        assert index.search("#5", "well") == []
        assert [hit.doc.id for hit in index.search("#5", "well", superseded=True)] == ["a"]
    finally:
        index.close()


# -- through the tool and the command -------------------------------------------------------------
class TestGateInGame(AICommandTestBase):
    def setUp(self):
        super().setUp()
        use_keyword_memory(self)
        self.npc.ai.set_persona(PERSONA)
        self.npc.ai.set_user_system_prompt(PROMPT)
        self.ctx = ToolContext(npc=self.npc, tick_id=1, event={"trust_source": "told_directly"})

    def run_tool(self, name, **arguments) -> ToolResult:
        outcome = TOOL_REGISTRY.get(name).safe_run(self.ctx, arguments)
        return outcome if isinstance(outcome, ToolResult) else fired(outcome)

    def test_store_memory_tool_applies_the_gate_and_counts(self):
        assert self.run_tool("store_memory", content="Char2's horse is Thunder").content["id"]
        persona = self.run_tool("store_memory", content="I am Marta Ashgrove of the Gilded Tankard")
        assert persona.success and persona.content["stored"] is False
        assert "persona" in persona.content["note"]
        self.ctx.state.world_results.append("A sign: the stew costs three coins today.")
        assert (
            self.run_tool("store_memory", content="The stew costs three coins today")
            .content["note"]
            .startswith("Not stored: it restates a tool result")
        )
        assert self.run_tool("recall_memories", query="horse").content["memories"]
        recalled = self.run_tool("store_memory", content="I recall Char2's horse is Thunder")
        assert "just recalled" in recalled.content["note"]
        update = self.run_tool("store_memory", content="Char2's horse is Storm")
        assert update.content["note"] == "This replaces what you remembered before."
        assert self.npc.ai.metrics["memory_gate"] == {
            "stored": 2,
            "skipped_persona": 1,
            "skipped_restated": 1,
            "skipped_recalled": 1,
            "superseded": 1,
        }
        self.call(
            cmds.CmdAILongTerm(),
            "Innkeeper",
            "Innkeeper: Long-term memory:",
        )
        out = words(self.call(cmds.CmdAILongTerm(), "Innkeeper", None))  # lines wrapped
        assert (
            "Quality gate: stored 2, skipped restated 1, skipped recalled 1, skipped persona 1, "
            "superseded 1." in out
        )
        self.session.protocol_flags["SCREENWIDTH"] = {0: 120}
        listed = self.call(cmds.CmdAILongTerm(), "/list Innkeeper", None)
        assert "(superseded): Char2's horse is Thunder" in listed
        with override_settings(EVENNIA_AI_MEMORY_GATE=False):
            assert "Quality gate (off):" in self.call(cmds.CmdAILongTerm(), "Innkeeper", None)

    def test_archival_insert_skips_restatements_and_near_duplicates(self):
        first = self.run_tool("archival_insert", content="The mill burned down last winter.")
        assert first.success and first.content.get("archived") is not False
        again = self.run_tool("archival_insert", content="the mill burned down last winter.")
        assert again.content["duplicate"]  # an equal entry: "Already archived." as before
        near = self.run_tool("archival_insert", content="The mill burned down, last winter")
        assert near.success and near.content["archived"] is False
        persona = self.run_tool("archival_insert", content="I am Marta Ashgrove of the Tankard")
        assert "persona" in persona.content["note"]
        assert len(self.npc.ai.archival) == 1
        assert self.npc.ai.metrics["memory_gate"] == {
            "stored": 1,
            "skipped_duplicate": 2,
            "skipped_persona": 1,
        }
        with override_settings(EVENNIA_AI_MEMORY_GATE=False):
            self.run_tool("archival_insert", content="The mill burned down, last winter")
        assert len(self.npc.ai.archival) == 2

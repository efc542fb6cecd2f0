"""Session memory: adding with persona protection and deduplication, compaction, rendering."""

import copy
from datetime import datetime, timezone

import pytest

from evennia_ai.workspace import session_memory as S

NOW = datetime(2025, 12, 6, 10, 0, tzinfo=timezone.utc)

SPEC_ERROR = {
    "success": False,
    "error": "Content appears to reference assistant actions or identity",
    "suggestion": "Session memory should contain facts about the WORLD, PLAYERS, "
    "or EVENTS - not what you did. Rephrase in third-person.",
}


def _add(mem, kind, content, **kw):
    kw.setdefault("now", NOW)
    return S.add_session_memory(mem, kind, content, **kw)


# -- persona protection -------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text",
    [
        "Player Alice completed the quest",
        "The tavern has 5 rooms",
        "Players prefer concise responses",
        "Player Alice prefers formal address",
        "The north gate closes at midnight",
        "Players tend to explore before asking for help",
        'Alice said "I love stew"',
        "Alice said “I love stew”",
        "Alice said 'I'm hungry' before leaving",
        "Bob shouted ‘my sword!’ and ran",
        "Players' homes are in the north",
        "Innkeeper's stew is famous",
        "Alice thanked the innkeeper",
        "Images of the king hang in the hall",  # "I" only as a whole word
        "The blacksmith's assistant is called Tom",
    ],
)
def test_accepted_contents(text):
    assert not S.is_self_referential(text, self_names=["Innkeeper"])
    _, result = _add(None, "fact", text, self_names=["Innkeeper"])
    assert result.success, result.message


@pytest.mark.parametrize(
    "text",
    [
        "I helped the player",
        "I should be more formal",
        "The assistant suggested a quest",
        "Alice likes me",
        "My tavern is busy",
        "I'm the innkeeper",
        "i've noticed Alice is rude",
        "Alice asked us for directions",
        "We agreed on a price",
        "Remember this about myself",
        "As an AI, honesty matters",
        "This assistant is helpful",
        "Players like the AI",
        "Being a language model has limits",
        "Alice is nice. I told her so",
        'Alice said "hi" and I waved',
        '"I helped the player"',  # nothing outside the quotes: the whole text is checked
        "I’m tired",  # curly apostrophe
    ],
)
def test_rejected_contents(text):
    assert S.is_self_referential(text)
    mem = S.empty_session_memory()
    new, result = _add(mem, "fact", text)
    assert result.to_dict() == SPEC_ERROR
    assert new == S.empty_session_memory()


@pytest.mark.parametrize(
    "text",
    [
        "Innkeeper helped Alice",
        "The innkeeper is tired",
        "Alice left. Innkeeper closed the door",
        "Bob the Innkeeper, ever generous, gave a discount",
        "innkeeper",
    ],
)
def test_own_name_as_subject_rejected(text):
    assert S.is_self_referential(text, self_names=["Innkeeper", "Bob the Innkeeper", " "])
    assert not S.is_self_referential(text)  # without self names only pronouns count


def test_persona_applies_to_every_kind():
    for kind in ("fact", "pattern", "completed_task"):
        _, result = _add(None, kind, "I built the bar")
        assert result.to_dict() == SPEC_ERROR
    assert S.persona_error().to_dict() == SPEC_ERROR


# -- adding -------------------------------------------------------------------------------------
def test_add_each_kind_layout_and_input_untouched():
    mem = S.empty_session_memory()
    mem1, r1 = _add(mem, "fact", "  The north gate   closes at midnight ")
    mem2, r2 = _add(mem1, "pattern", "Players explore before asking")
    mem3, r3 = _add(mem2, "completed_task", "Built the bar")
    assert mem == S.empty_session_memory() and mem1["learned_patterns"] == []
    assert all(r.success for r in (r1, r2, r3))
    assert mem3 == {
        "key_facts": ["The north gate closes at midnight"],
        "learned_patterns": ["Players explore before asking"],
        "completed_tasks": [{"description": "Built the bar", "timestamp": "2025-12-06T10:00:00Z"}],
        "last_compacted": None,
    }
    assert r1.data == {"kind": "key_facts", "duplicate": False, "dropped": 0}


@pytest.mark.parametrize(
    "kind", ["FACT", "key_fact", "pattern", "learned_patterns", "task", "completed_task"]
)
def test_kind_aliases(kind):
    _, result = _add(None, kind, "The well is deep")
    assert result.success


@pytest.mark.parametrize(
    "kind, content, fragment",
    [
        ("rumour", "x", "Kind must be"),
        (None, "x", "Kind must be"),
        ("fact", "", "non-empty"),
        ("fact", "   ", "non-empty"),
        ("fact", None, "non-empty"),
        ("fact", 12, "non-empty"),
        ("fact", "x" * (S.MAX_CONTENT + 1), "too long"),
    ],
)
def test_add_errors(kind, content, fragment):
    _, result = _add(None, kind, content)
    assert not result.success and fragment in result.message


def test_duplicate_is_not_added():
    mem, _ = _add(None, "fact", "The tavern has 5 rooms")
    again, result = _add(mem, "fact", "the TAVERN has 5 rooms!!")
    assert (
        result.success
        and result.data["duplicate"] is True
        and "Already remembered" in result.message
    )
    assert again["key_facts"] == ["The tavern has 5 rooms"]
    mem, _ = _add(mem, "completed_task", "Built the bar")
    again, result = _add(mem, "task", "built the bar.")
    assert result.data["duplicate"] and len(again["completed_tasks"]) == 1
    _, result = _add(mem, "pattern", "The tavern has 5 rooms")  # other list: not a duplicate
    assert result.data["duplicate"] is False


def test_cap_drops_oldest(monkeypatch):
    monkeypatch.setitem(S.CAPS, "key_facts", 3)
    mem = None
    for i in range(4):
        mem, result = _add(mem, "fact", f"Fact number {i}")
    assert mem["key_facts"] == ["Fact number 1", "Fact number 2", "Fact number 3"]
    assert result.data["dropped"] == 1 and "oldest entry was dropped" in result.message


def test_default_caps():
    assert S.CAPS == {"key_facts": 50, "learned_patterns": 30, "completed_tasks": 50}


def test_corrupt_memory_is_repaired():
    mem, result = _add({"key_facts": "oops"}, "fact", "The well is deep")
    assert result.success and mem["key_facts"] == ["The well is deep"]
    assert mem["learned_patterns"] == [] and mem["last_compacted"] is None


# -- compaction ---------------------------------------------------------------------------------
def test_compact_removes_duplicates_empties_and_trims(monkeypatch):
    monkeypatch.setitem(S.CAPS, "learned_patterns", 2)
    mem = {
        "key_facts": ["Gate closes at midnight", "gate closes at MIDNIGHT.", "", 5, "Well is deep"],
        "learned_patterns": ["p1", "p2", "p3"],
        "completed_tasks": [
            {"description": "Built bar", "timestamp": "2025-01-01T00:00:00Z"},
            {"description": "built bar", "timestamp": "2025-01-02T00:00:00Z"},
            {"nothing": True},
        ],
        "last_compacted": None,
    }
    before = copy.deepcopy(mem)
    new, result = S.compact_session_memory(mem, now=NOW)
    assert mem == before
    assert new["key_facts"] == ["Gate closes at midnight", "Well is deep"]
    assert new["learned_patterns"] == ["p2", "p3"]
    assert new["completed_tasks"] == [
        {"description": "Built bar", "timestamp": "2025-01-01T00:00:00Z"}
    ]
    assert new["last_compacted"] == "2025-12-06T10:00:00Z"
    assert result.data["removed"] == {"key_facts": 3, "learned_patterns": 1, "completed_tasks": 2}
    assert result.data["removed_total"] == 6 and "removed 6 entries" in result.message


def test_compact_empty():
    new, result = S.compact_session_memory(None, now=NOW)
    assert result.success and result.data["removed_total"] == 0
    assert result.message == "Compacted session memory: removed 0 entries."
    assert new["last_compacted"] == "2025-12-06T10:00:00Z"


# -- rendering ----------------------------------------------------------------------------------
def test_render_session_memory():
    assert S.render_session_memory(None) == ""
    assert S.render_session_memory(S.empty_session_memory()) == ""
    mem = None
    mem, _ = _add(mem, "fact", "Alice prefers formal address")
    mem, _ = _add(mem, "pattern", "Players explore first")
    for i in range(7):
        mem, _ = _add(mem, "completed_task", f"Task {i}")
    text = S.render_session_memory(mem)
    assert text.startswith("## Session memory\nKey facts:\n- Alice prefers formal address\n")
    assert "Learned patterns:\n- Players explore first" in text
    assert "Recently completed tasks:\n- Task 6 (2025-12-06)" in text
    assert "Task 1" not in text and "Task 2" in text  # only the newest five


def test_render_only_tasks():
    mem, _ = _add(None, "task", "Swept the floor")
    assert S.render_session_memory(mem) == (
        "## Session memory\nRecently completed tasks:\n- Swept the floor (2025-12-06)"
    )

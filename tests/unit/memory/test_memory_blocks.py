"""Memory blocks and archival entries: schemas, operations, permissions, rendering (pure)."""

import copy
from datetime import datetime, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evennia_ai.memory import blocks as b
from evennia_ai.memory.blocks import BlockError

NOW = datetime(2025, 1, 1, tzinfo=timezone.utc)
LATER = datetime(2025, 1, 2, 8, 30, tzinfo=timezone.utc)

PROFILE_SCHEMA = {
    "kind": "map",
    "fields": [
        {"name": "status", "read_only": True},
        {"name": "mood", "type": "text"},
        {"name": "score", "type": "counter"},
        {"name": "gold", "type": "number"},
        {"name": "tags", "type": "list"},
        {"name": "open", "type": "boolean"},
    ],
}
COMPOSITE_SCHEMA = {
    "kind": "composite",
    "sections": [
        {"name": "notes"},
        {"name": "stats", "schema": {"kind": "map"}},
        {"name": "diagnostics", "schema": "map", "read_only": True},
    ],
}


def block(schema=None, permission="ReadWrite", content=None, **kw):
    blocks = b.create_block(
        {}, "x", schema=schema, permission=permission, content=content, now=NOW, **kw
    )
    return blocks["x"]


def run(blk, op, is_system=False, **args):
    return b.apply_op(blk, op, args, is_system=is_system, now=LATER)


# -- schemas and creation ----------------------------------------------------------------------
def test_schema_shorthands_and_defaults():
    assert b.normalise_schema(None) == {"kind": "text", "viewport": None}
    assert b.normalise_schema("MAP") == {"kind": "map", "fields": []}
    assert b.normalise_schema({"kind": "list", "max_items": 3}) == {
        "kind": "list",
        "max_items": 3,
        "item_type": "any",
        "style": "numbered",
    }
    assert b.normalise_schema("log") == {"kind": "log", "display_limit": 10, "max_entries": 200}
    assert b.normalise_schema({"kind": "text", "viewport": {"lines": 5}})["viewport"] == {
        "start": 0,
        "lines": 5,
    }
    fields = b.normalise_schema({"kind": "map", "fields": ["a", {"name": "b", "type": "Counter"}]})
    assert fields["fields"][1] == {
        "name": "b",
        "type": "counter",
        "read_only": False,
        "description": "",
    }
    composite = b.normalise_schema(COMPOSITE_SCHEMA)
    assert [s["schema"]["kind"] for s in composite["sections"]] == ["text", "map", "map"]


@pytest.mark.parametrize(
    "schema, words",
    [
        ("table", "Unknown schema kind 'table'"),
        ({"kind": "map", "fields": ["a", "a"]}, "distinct names"),
        ({"kind": "map", "fields": [{"type": "text"}]}, "needs a name"),
        ({"kind": "map", "fields": [{"name": "a", "type": "date"}]}, "Unknown field type"),
        ({"kind": "list", "max_items": 0}, "max_items must be a whole number >= 1"),
        ({"kind": "text", "viewport": "all"}, "viewport"),
        ({"kind": "composite", "sections": []}, "at least one section"),
        (
            {"kind": "composite", "sections": [{"name": "a", "schema": "composite"}]},
            "cannot itself",
        ),
        (42, "kind name or a dict"),
    ],
)
def test_bad_schemas_say_what_is_wrong(schema, words):
    with pytest.raises(BlockError, match=words):
        b.normalise_schema(schema)


def test_create_block_layout_and_defaults():
    blocks = b.create_block(
        {}, "persona", type="core", description=" Who I am ", now=NOW, content="A gruff innkeeper."
    )
    assert blocks["persona"] == {
        "label": "persona",
        "type": "Core",
        "permission": "ReadWrite",
        "schema": {"kind": "text", "viewport": None},
        "description": "Who I am",
        "pinned": False,
        "content": "A gruff innkeeper.",
        "shared_with": {},
        "created": "2025-01-01T00:00:00Z",
        "updated": "2025-01-01T00:00:00Z",
    }
    log = b.create_block(blocks, "events", type="Log", permission="append")["events"]
    assert log["schema"]["kind"] == "log" and log["permission"] == "Append"
    profile = block(PROFILE_SCHEMA, content={"status": "active"})
    assert profile["content"] == {
        "status": "active",
        "mood": "",
        "score": 0,
        "gold": 0,
        "tags": [],
        "open": False,
    }
    assert "persona" not in b.create_block({}, "other")  # the input is never modified


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"label": "bad label"}, "not a valid block label"),
        ({"label": ""}, "needs a label"),
        (
            {"label": "x", "permission": "sudo"},
            "Unknown permission 'sudo'. Choose one of: ReadOnly",
        ),
        ({"label": "x", "type": "Short"}, "Unknown block type"),
        ({"label": "x", "schema": "map", "content": {"a": object()}}, "must be text"),
        (
            {"label": "x", "schema": PROFILE_SCHEMA, "content": {"colour": "red"}},
            "Unknown field 'colour'",
        ),
        ({"label": "x", "schema": PROFILE_SCHEMA, "content": {"score": "ten"}}, "holds a number"),
        (
            {"label": "x", "schema": {"kind": "list", "max_items": 1}, "content": [1, 2]},
            "at most 1",
        ),
        ({"label": "x", "content": 5}, "content is a string"),
    ],
)
def test_create_block_errors(kwargs, words):
    with pytest.raises(BlockError, match=words):
        b.create_block({}, **kwargs)


def test_duplicate_labels_and_missing_blocks():
    blocks = b.create_block({}, "notes")
    with pytest.raises(BlockError, match="already exists"):
        b.create_block(blocks, "notes")
    with pytest.raises(BlockError, match="No memory block called 'nope'. Blocks: notes."):
        b.get_block(blocks, "nope")
    assert b.delete_block(blocks, "notes") == {}


def test_configure_and_share():
    blocks = b.create_block({}, "notes", content="hello")
    out = b.configure_block(
        blocks, "notes", permission="read_only", pinned=True, type="working", description="d"
    )
    assert (out["notes"]["permission"], out["notes"]["pinned"]) == ("ReadOnly", True)
    with pytest.raises(BlockError, match="Unknown block setting 'colour'"):
        b.configure_block(blocks, "notes", colour="red")
    with pytest.raises(BlockError, match="content is a dict"):
        b.configure_block(blocks, "notes", schema="map")  # the text does not fit a map
    shared = b.share_block(blocks, "notes", 12, "Append")
    assert shared["notes"]["shared_with"] == {"12": "append"}
    assert b.share_block(shared, "notes", 12, None)["notes"]["shared_with"] == {}
    with pytest.raises(BlockError, match="Unknown share mode"):
        b.share_block(blocks, "notes", 12, "write")


# -- text operations -----------------------------------------------------------------------------
def test_text_ops():
    blk = block()
    blk, r = run(blk, "set_text", text="Met Alice.")
    assert r.success and blk["content"] == "Met Alice." and blk["updated"] == "2025-01-02T08:30:00Z"
    blk, r = run(blk, "append_text", text="Met Bob.")
    assert blk["content"] == "Met Alice.\nMet Bob."
    blk, _ = run(blk, "append_text", text=" Twice.")  # brings its own whitespace
    assert blk["content"] == "Met Alice.\nMet Bob. Twice."
    blk, r = run(blk, "replace_text", old="Met", new="Saw")
    assert r.data["replaced"] == 2 and blk["content"] == "Saw Alice.\nSaw Bob. Twice."
    same, r = run(blk, "replace_text", old="Carol", new="x")
    assert r.status == b.INVALID and "does not contain 'Carol'" in r.message and same == blk
    _, r = run(blk, "append_text", text="   ")
    assert "nothing to append" in r.message
    _, r = run(blk, "set_text", text="x" * (b.MAX_TEXT + 1))
    assert "too long" in r.message
    _, r = run(blk, "set_text")
    assert r.message == "Missing argument 'text'."
    _, r = run(blk, "push_item", item=1)
    assert "'push_item' does not apply to a text block" in r.message
    assert "set_text, append_text, replace_text" in r.suggestion


# -- map operations ------------------------------------------------------------------------------
def test_map_ops_typed_fields():
    blk = block(PROFILE_SCHEMA, content={"status": "active"})
    blk, r = run(blk, "set_text_field", field="mood", text="cheerful")
    assert r.success and blk["content"]["mood"] == "cheerful"
    blk, r = run(blk, "set_field", field="gold", value=2.5)
    assert blk["content"]["gold"] == 2.5
    blk, r = run(blk, "increment_counter", field="score", by=5)
    blk, r = run(blk, "increment_counter", field="score")
    assert blk["content"]["score"] == 6 and r.message == "Field 'score' is now 6."
    blk, _ = run(blk, "append_to_list_field", field="tags", item="important")
    blk, _ = run(blk, "append_to_list_field", field="tags", item="urgent")
    assert blk["content"]["tags"] == ["important", "urgent"]
    blk, _ = run(blk, "set_field", field="open", value=True)
    checks = [
        (("set_field", {"field": "mood", "value": 3}), "holds text"),
        (("set_field", {"field": "score", "value": 1.5}), "give a whole number"),
        (("set_field", {"field": "open", "value": "yes"}), "true or false"),
        (("set_field", {"field": "tags", "value": "x"}), "holds a list"),
        (("set_text_field", {"field": "score", "text": "many"}), "holds counter values"),
        (("increment_counter", {"field": "score", "by": 0.5}), "whole number"),
        (("increment_counter", {"field": "mood"}), "holds text values"),
        (("append_to_list_field", {"field": "mood", "item": "x"}), "not a list"),
        (("set_field", {"field": "colour", "value": "red"}), "There is no field 'colour'"),
        (("set_field", {"field": "mood"}), "Missing argument 'value'"),
        (("set_field", {"field": "gold", "value": float("nan")}), "finite"),
    ]
    for (op, args), words in checks:
        same, r = b.apply_op(blk, op, args, is_system=False)
        assert r.status == b.INVALID and words in r.message + (r.suggestion or ""), (op, r)
        assert same == blk


def test_free_form_map_and_delete_field():
    blk = block("map", permission="Admin")
    blk, _ = run(blk, "set_field", field="weather", value="rain")
    blk, _ = run(blk, "increment_counter", field="visits", by=2)
    blk, _ = run(blk, "append_to_list_field", field="guests", item={"name": "Bob"})
    assert blk["content"] == {"weather": "rain", "visits": 2, "guests": [{"name": "Bob"}]}
    blk, r = run(blk, "delete_field", field="weather")
    assert r.success and "weather" not in blk["content"]
    _, r = run(blk, "delete_field", field="weather")
    assert "There is no field 'weather'" in r.message
    typed = block(PROFILE_SCHEMA, permission="Admin", content={"mood": "sad", "score": 3})
    typed, _ = run(typed, "delete_field", field="score")
    assert typed["content"]["score"] == 0  # a declared field stays, back to its default


def test_read_only_field_denied_to_model_but_not_system():
    blk = block(PROFILE_SCHEMA, content={"status": "active"})
    same, r = run(blk, "set_field", field="status", value="gone")
    assert r.status == b.DENIED and r.message == "Field 'status' is read-only in memory block 'x'."
    assert same == blk
    new, r = run(blk, "set_field", is_system=True, field="status", value="gone")
    assert r.success and new["content"]["status"] == "gone"


# -- list operations -----------------------------------------------------------------------------
def test_list_ops_positions_and_limits():
    blk = block({"kind": "list", "max_items": 3}, permission="Admin")
    blk, r = run(blk, "push_item", item={"task": "Review PR"})
    assert r.data["position"] == 1
    blk, _ = run(blk, "insert_item", index=0, item={"task": "Urgent"})
    blk, _ = run(blk, "insert_item", position=3, item="last")
    assert blk["content"] == [{"task": "Urgent"}, {"task": "Review PR"}, "last"]
    _, r = run(blk, "push_item", item="more")
    assert r.status == b.INVALID and "full (3 items)" in r.message
    blk, r = run(blk, "delete_item", index=1)
    assert r.data["removed"] == {"task": "Review PR"}
    blk, _ = run(blk, "delete_item", position=2)
    blk, _ = run(blk, "delete_item", index=-1)
    assert blk["content"] == []
    _, r = run(blk, "delete_item", position=1)
    assert r.message == "There is no item 1: the list is empty."
    blk, _ = run(blk, "push_item", item="a")
    _, r = run(blk, "insert_item", position=5, item="b")
    assert r.message == "Position 5 is out of range; valid: 1-2."
    _, r = run(blk, "delete_item", index=3)
    assert r.message == "Index 3 is out of range; valid: 0-0."
    _, r = run(blk, "delete_item", index="one")
    assert "whole number" in r.message


def test_list_item_types():
    blk = block({"kind": "list", "item_type": "text"})
    _, r = run(blk, "push_item", item=5)
    assert "Items of this list are text" in r.message
    blk = block({"kind": "list", "item_type": "object"})
    _, r = run(blk, "push_item", item="x")
    assert "objects" in r.message


# -- log and composite ---------------------------------------------------------------------------
def test_log_entries_timestamped_and_bounded():
    blk = block({"kind": "log", "display_limit": 2, "max_entries": 3})
    blk, r = run(
        blk,
        "append_log_entry",
        entry={"timestamp": "2025-01-01T00:00:00Z", "message": "User logged in"},
    )
    assert blk["content"] == [{"timestamp": "2025-01-01T00:00:00Z", "message": "User logged in"}]
    blk, _ = run(blk, "append_log_entry", entry="Second")
    assert blk["content"][1] == {"timestamp": "2025-01-02T08:30:00Z", "message": "Second"}
    blk, _ = run(blk, "append_log_entry", message="Third", level="info")
    blk, _ = run(blk, "append_log_entry", entry={"message": "Fourth"})
    assert [e["message"] for e in blk["content"]] == ["Second", "Third", "Fourth"]
    _, r = run(blk, "append_log_entry", entry={"level": "x"})
    assert "needs a non-empty 'message'" in r.message
    _, r = run(blk, "append_log_entry")
    assert "Missing argument 'entry'" in r.message


def test_composite_section_edits():
    blk = block(COMPOSITE_SCHEMA)
    blk, r = run(blk, "set_text", text="notes here", section="notes")
    assert r.success and r.data["section"] == "notes"
    blk, _ = run(blk, "set_field", field="count", value=42, section="stats")
    assert blk["content"] == {"notes": "notes here", "stats": {"count": 42}, "diagnostics": {}}
    _, r = run(blk, "set_text", text="x")
    assert r.status == b.INVALID and "has sections; say which one" in r.message
    assert "notes, stats, diagnostics" in r.suggestion
    _, r = run(blk, "set_text", text="x", section="misc")
    assert "no section 'misc'" in r.message
    _, r = run(blk, "set_field", field="a", value=1, section="notes")
    assert "does not apply to a text block" in r.message
    same, r = run(blk, "set_field", field="cpu", value=5, section="diagnostics")
    assert r.status == b.DENIED and "read-only" in r.message and same == blk
    new, r = run(blk, "set_field", is_system=True, field="cpu", value=5, section="diagnostics")
    assert new["content"]["diagnostics"] == {"cpu": 5}
    _, r = run(block(), "set_text", text="x", section="notes")
    assert "has no sections" in r.message


# -- permissions ---------------------------------------------------------------------------------
EXPECTED = {
    "ReadOnly": {op: b.DENY for op in b.OPS},
    "Append": {op: (b.ALLOW if op in b.APPEND_OPS else b.DENY) for op in b.OPS},
    "ReadWrite": {op: (b.DENY if op in b.DELETE_OPS else b.ALLOW) for op in b.OPS},
    "Admin": {op: b.ALLOW for op in b.OPS},
    "Partner": {op: (b.DENY if op in b.DELETE_OPS else b.CONFIRM) for op in b.OPS},
    "Human": {op: (b.DENY if op in b.DELETE_OPS else b.CONFIRM) for op in b.OPS},
}


def test_permission_matrix():
    for permission, ops in EXPECTED.items():
        for op, outcome in ops.items():
            assert b.decide(permission, op) == outcome, (permission, op)
    assert b.decide("Root", "set_text") == b.DENY  # unknown permissions fail closed
    assert b.allowed_ops("Append", "text") == ["append_text"]
    assert b.allowed_ops("ReadOnly") == []


def test_permissions_applied():
    text = {"schema": None, "content": "hi"}
    _, r = run(block(permission="ReadOnly", **text), "append_text", text="x")
    assert (
        r.status == b.DENIED and r.message == "Memory block 'x' is read-only; you cannot change it."
    )
    new, r = run(block(permission="Append", **text), "append_text", text="there")
    assert r.success and new["content"] == "hi\nthere"
    _, r = run(block(permission="Append", **text), "set_text", text="x")
    assert (
        r.status == b.DENIED
        and r.suggestion == "Allowed here: append_text, "
        "append_to_list_field, push_item, append_log_entry."
    )
    _, r = run(block("list", content=[1]), "delete_item", index=0)
    assert r.status == b.DENIED and "needs Admin permission (it has ReadWrite)" in r.message
    new, r = run(block("list", permission="Admin", content=[1]), "delete_item", index=0)
    assert r.success and new["content"] == []
    # System writes bypass every permission.
    new, r = run(block(permission="ReadOnly", **text), "set_text", is_system=True, text="new")
    assert r.success and new["content"] == "new"


@pytest.mark.parametrize("permission", ["Partner", "Human"])
def test_partner_and_human_writes_wait_for_confirmation(permission):
    blk = block(permission=permission, content="hi")
    same, r = run(blk, "append_text", text="there")
    assert r.status == b.PENDING and same == blk and not r.success
    assert f"has {permission} permission" in r.message
    _, r = run(blk, "replace_text", old="absent", new="x")  # invalid ops are never queued
    assert r.status == b.INVALID
    _, r = run(block("list", permission=permission, content=[1]), "delete_item", index=0)
    assert r.status == b.DENIED


def test_effective_permission_of_shares():
    rw = block()
    assert b.effective_permission(rw) == "ReadWrite"
    assert b.effective_permission(rw, "read") == "ReadOnly"
    assert b.effective_permission(rw, "append") == "Append"
    assert b.effective_permission(block(permission="Admin"), "append") == "Append"
    assert b.effective_permission(block(permission="ReadOnly"), "append") == "ReadOnly"
    assert b.effective_permission(block(permission="Human"), "append") == "Human"
    assert b.effective_permission(block(permission="Human"), "read") == "ReadOnly"


def test_shared_appends_are_attributed():
    blk = block(content="start")
    new, _ = b.apply_op(
        blk, "append_text", {"text": "hello"}, is_system=False, permission="Append", author="Keeper"
    )
    assert new["content"] == "start\n[Keeper] hello"
    lst, _ = b.apply_op(
        block("list"),
        "push_item",
        {"item": {"task": "t"}},
        is_system=False,
        permission="Append",
        author="Keeper",
    )
    assert lst["content"] == [{"task": "t", "by": "Keeper"}]
    log, _ = b.apply_op(
        block("log"),
        "append_log_entry",
        {"entry": "seen"},
        is_system=False,
        permission="Append",
        author="Keeper",
        now=NOW,
    )
    assert log["content"] == [
        {"timestamp": "2025-01-01T00:00:00Z", "message": "seen", "by": "Keeper"}
    ]
    _, r = b.apply_op(
        blk, "set_text", {"text": "x"}, is_system=False, permission="Append", author="Keeper"
    )
    assert r.status == b.DENIED


def test_unknown_op():
    blk = block()
    same, r = run(blk, "drop_table")
    assert r.status == b.INVALID and "Unknown block operation 'drop_table'" in r.message
    assert same == blk


# -- properties ----------------------------------------------------------------------------------
SCHEMAS = [
    None,
    "map",
    PROFILE_SCHEMA,
    {"kind": "list", "max_items": 5},
    "log",
    COMPOSITE_SCHEMA,
    {"kind": "text", "viewport": {"lines": 2}},
]
plain = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**6), 10**6)
    | st.floats(allow_nan=True)
    | st.text(max_size=30),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=10,
)
arg_names = st.sampled_from(
    [
        "text",
        "old",
        "new",
        "field",
        "value",
        "item",
        "index",
        "position",
        "by",
        "entry",
        "message",
        "section",
        "score",
        "status",
    ]
)
op_names = st.sampled_from(list(b.OPS) + ["drop", ""])


@settings(max_examples=200, deadline=None)
@given(
    schema=st.sampled_from(SCHEMAS),
    op=op_names,
    args=st.dictionaries(
        arg_names,
        plain
        | st.sampled_from(["notes", "stats", "diagnostics", "status", "mood", "score", "tags"]),
        max_size=5,
    ),
    author=st.none() | st.just("Keeper"),
)
def test_no_model_op_ever_changes_a_read_only_block(schema, op, args, author):
    blk = block(schema, permission="ReadOnly")
    before = copy.deepcopy(blk)
    new, result = b.apply_op(blk, op, args, is_system=False, author=author)
    assert new == before and blk == before
    assert result.status in (b.DENIED, b.INVALID)


@settings(max_examples=200, deadline=None)
@given(
    schema=st.sampled_from(SCHEMAS),
    op=op_names,
    permission=st.sampled_from(b.PERMISSIONS),
    args=st.dictionaries(
        arg_names,
        plain
        | st.sampled_from(["notes", "stats", "diagnostics", "status", "mood", "score", "tags"]),
        max_size=5,
    ),
    is_system=st.booleans(),
)
def test_apply_op_never_raises_nor_mutates_its_input(schema, op, permission, args, is_system):
    blk = block(schema, permission=permission)
    before = copy.deepcopy(blk)
    new, result = b.apply_op(blk, op, args, is_system=is_system)
    assert blk == before
    if result.status != b.APPLIED:
        assert new == before
    else:
        assert b.decide(permission, op) == b.ALLOW or is_system
        # whatever the model wrote, the block still renders and still validates
        b.render_block(new)
        b.validate_content(new["schema"], new["content"])
    assert result.message


# -- rendering -----------------------------------------------------------------------------------
def test_render_block_format_with_description():
    blk = block(content="Hello, world!", description="Things to remember")
    assert b.render_block(blk) == (
        '<block:x permission="ReadWrite">\n' "Things to remember\n\n" "Hello, world!\n" "</block:x>"
    )
    assert b.render_block(blk, include_description=False) == (
        '<block:x permission="ReadWrite">\nHello, world!\n</block:x>'
    )


def test_render_shared_block_attribution():
    blocks = b.create_block({}, "shared_notes", content="Content shared from another agent")
    text = b.render_block(blocks["shared_notes"], shared_from="Archive", permission="Append")
    assert text == (
        '<block:shared_notes permission="Append" shared_from="Archive">\n'
        "Content shared from another agent\n"
        "</block:shared_notes>"
    )


def test_render_map_with_read_only_marker():
    blk = block(
        PROFILE_SCHEMA,
        content={"status": "active", "mood": "calm", "tags": ["a", "b"], "open": True},
    )
    _, r = run(blk, "set_field", field="extra", value=1, is_system=True)
    assert r.status == b.INVALID  # schemas bind system writes too; only permissions are bypassed
    assert b.render_content(blk["schema"], blk["content"]) == (
        "status [read-only]: active\n"
        "mood: calm\n"
        "score: 0\n"
        "gold: 0\n"
        "tags: a, b\n"
        "open: true"
    )
    free = block("map", content={"extra": {"k": 1}, "none": None})
    assert b.render_content(free["schema"], free["content"]) == "extra: k: 1\nnone:"
    assert b.render_content(b.normalise_schema("map"), {}) == "(empty)"


def test_render_composite_sections():
    blk = block(COMPOSITE_SCHEMA, content={"notes": "n", "diagnostics": {"cpu": 5}})
    assert b.render_content(blk["schema"], blk["content"]) == (
        "=== notes ===\nn\n\n"
        "=== stats ===\n(empty)\n\n"
        "=== diagnostics [read-only] ===\ncpu: 5"
    )


def test_render_lists():
    numbered = b.normalise_schema("list")
    assert b.render_content(numbered, ["a", {"task": "b", "due": 3}]) == "1. a\n2. task: b; due: 3"
    assert b.render_content(numbered, []) == "(empty)"
    checkbox = b.normalise_schema({"kind": "list", "style": "checkbox"})
    assert b.render_content(
        checkbox, [{"task": "Review PR", "done": True}, {"task": "Ship"}, "plain"]
    ) == ("1. [x] task: Review PR\n2. [ ] task: Ship\n3. [ ] plain")


def test_render_log_newest_first_with_limit():
    schema = b.normalise_schema({"kind": "log", "display_limit": 2})
    entries = [{"timestamp": f"2025-01-0{i}T00:00:00Z", "message": f"m{i}"} for i in (1, 2, 3)]
    entries[2]["by"] = "Keeper"
    assert b.render_content(schema, entries) == (
        "[2025-01-03T00:00:00Z] m3 (by: Keeper)\n"
        "[2025-01-02T00:00:00Z] m2\n"
        "(2 newest of 3 entries)"
    )


def test_render_text_viewport():
    schema = b.normalise_schema({"kind": "text", "viewport": {"start": 1, "lines": 2}})
    text = "l1\nl2\nl3\nl4"
    assert b.render_content(schema, text) == "l2\nl3\n[lines 2-3 of 4]"
    assert b.render_content(schema, text, start=3) == "l4\n[lines 4-4 of 4]"
    assert b.render_content(b.normalise_schema(None), "short") == "short"
    assert b.render_content(b.normalise_schema(None), "") == "(empty)"
    short = b.normalise_schema({"kind": "text", "viewport": {"lines": 10}})
    assert b.render_content(short, "a\nb") == "a\nb"


def test_render_escapes_attribute_quotes():
    blk = block()
    assert "shared_from=\"The 'Old' Archive\"" in b.render_block(
        blk, shared_from='The "Old" Archive'
    )


# -- context selection ---------------------------------------------------------------------------
def test_blocks_for_context_pinned_core_and_mentioned():
    blocks = {}
    blocks = b.create_block(blocks, "scratch")  # ephemeral Working
    blocks = b.create_block(blocks, "quest_log", type="Log")  # ephemeral Log
    blocks = b.create_block(blocks, "todo", pinned=True)  # pinned Working
    blocks = b.create_block(blocks, "persona", type="Core")  # Core
    blocks = b.create_block(blocks, "lore", type="Archival")
    labels = lambda text: [
        x["label"] for x in b.blocks_for_context(blocks, mentioned_text=text)
    ]  # noqa: E731
    assert labels("") == ["persona", "todo"]
    assert labels("Alice asks: what is in your quest log?") == ["persona", "todo", "quest_log"]
    # always-present blocks first (a stable prompt prefix), then the ephemeral ones
    assert labels("check LORE and scratch") == ["persona", "todo", "scratch", "lore"]
    assert labels("scratchpad quest") == ["persona", "todo"]  # whole words only
    assert b.blocks_for_context(None, mentioned_text="x") == []
    assert b.is_mentioned("ephemeral-block-id", "see ephemeral block id")
    assert not b.is_mentioned("", "anything")


def test_describe_block():
    blk = block(COMPOSITE_SCHEMA, permission="Append")
    info = b.describe_block(blk, shared_from="Archive")
    assert info["sections"] == ["notes", "stats", "diagnostics"]
    assert info["allowed_ops"] == [
        "append_text",
        "append_to_list_field",
        "push_item",
        "append_log_entry",
    ]
    assert info["shared_from"] == "Archive" and info["schema"] == "composite"


# -- concurrency design --------------------------------------------------------------------------
def test_operator_and_model_edits_to_different_fields_both_survive():
    stored = {"blocks": b.create_block({}, "profile", schema="map", now=NOW)}
    model_view = copy.deepcopy(stored["blocks"])  # the model reads the block...
    # ...an operator writes field A...
    new, _ = b.apply_op(
        stored["blocks"]["profile"], "set_field", {"field": "a", "value": 1}, is_system=True
    )
    stored["blocks"] = {**stored["blocks"], "profile": new}
    # ...and the model's op is applied to a fresh read, then written once.
    fresh = copy.deepcopy(stored["blocks"])
    fresh["profile"], result = b.apply_op(
        fresh["profile"], "set_field", {"field": "b", "value": 2}, is_system=False
    )
    stored["blocks"] = fresh
    assert result.success and stored["blocks"]["profile"]["content"] == {"a": 1, "b": 2}
    # Applying it to the stale read instead would have lost the operator's field.
    stale, _ = b.apply_op(
        model_view["profile"], "set_field", {"field": "b", "value": 2}, is_system=False
    )
    assert stale["content"] == {"b": 2}


# -- archival ------------------------------------------------------------------------------------
def test_archival_insert_search_delete():
    entries, r = b.archival_insert(
        [], "The mill burned down in the great fire.", now=NOW, metadata={"tags": ["history"]}
    )
    assert r.success and r.data["id"].startswith("a_")
    assert entries[0]["created"] == "2025-01-01T00:00:00Z"
    assert entries[0]["metadata"] == {"tags": ["history"]}
    entries, _ = b.archival_insert(entries, "Wolves were seen near the mill.")
    entries, _ = b.archival_insert(entries, "The baker sells bread at dawn.")
    again, r = b.archival_insert(entries, "  the baker sells   BREAD at dawn. ")
    assert r.data["duplicate"] and again == entries
    hits = b.search_archival(entries, "What happened to the mill?", limit=5)
    assert [h["content"] for h in hits] == [
        "Wolves were seen near the mill.",
        "The mill burned down in the great fire.",
    ]
    assert hits[0]["score"] == 0.5  # shares "mill" of {"happened", "mill"}
    assert len(b.search_archival(entries, "MILLS", 5)) == 2  # case and plural folded
    assert b.search_archival(entries, "the of and", 5) == []
    assert b.search_archival(entries, "mill", 1)[0]["content"].startswith("Wolves")  # newer wins
    target = entries[0]["id"]
    entries, r = b.archival_delete(entries, target)
    assert r.success and all(e["id"] != target for e in entries)
    _, r = b.archival_delete(entries, target)
    assert r.status == b.INVALID and "No archival entry" in r.message
    text = b.render_archival_hits(b.search_archival(entries, "bread", 3))
    assert text.startswith("## From your archive\n- The baker sells bread at dawn. (id a_")
    assert b.render_archival_hits([]) == ""


def test_archival_validation_and_cap():
    _, r = b.archival_insert([], "   ")
    assert r.status == b.INVALID and "empty" in r.message
    _, r = b.archival_insert([], "x" * (b.MAX_ARCHIVAL_CHARS + 1))
    assert "too long" in r.message
    _, r = b.archival_insert([], "fine", metadata=["not", "a", "dict"])
    assert "metadata must be an object" in r.message
    entries = []
    for i in range(5):
        entries, r = b.archival_insert(entries, f"entry {i}", max_entries=3)
    assert [e["content"] for e in entries] == ["entry 2", "entry 3", "entry 4"]
    assert r.data["dropped_oldest"] == 1


def test_result_to_dict():
    blk = block()
    _, ok = run(blk, "set_text", text="hi")
    assert ok.to_dict() == {
        "success": True,
        "message": "Text set.",
        "label": "x",
        "op": "set_text",
        "length": 2,
    }
    _, bad = run(block(permission="Append"), "set_text", text="x")
    out = bad.to_dict()
    assert out["success"] is False and out["status"] == "denied" and "suggestion" in out

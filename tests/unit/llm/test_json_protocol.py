"""The JSON tool protocol: rendering tool schemas and reading tool calls out of reply text."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evennia_ai.llm.json_protocol import parse_tool_calls_from_text, render_tool_schemas
from evennia_ai.llm.types import ToolCall

SAY = {
    "type": "function",
    "function": {
        "name": "say",
        "description": "Say something aloud.",
        "parameters": {
            "type": "object",
            "properties": {"message": {"type": "string", "description": "What to say."}},
            "required": ["message"],
        },
    },
}
UPDATE_GOAL = {
    "type": "function",
    "function": {
        "name": "update_goal",
        "description": "Change a goal.",
        "parameters": {
            "type": "object",
            "properties": {
                "goal_id": {"type": "string"},
                "status": {"type": "string", "enum": ["active", "completed"]},
                "progress": {"type": "integer", "minimum": 0, "maximum": 100},
                "tags": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["goal_id"],
        },
    },
}
LOOK = {"type": "function", "function": {"name": "look", "description": "Look around."}}


# -- render_tool_schemas ---------------------------------------------------------------------
def test_render_is_compact_and_readable():
    text = render_tool_schemas([SAY, UPDATE_GOAL, LOOK])
    lines = text.splitlines()
    assert lines[0] == "- say(message: string) - Say something aloud."
    assert lines[1] == "    message: What to say."
    assert lines[2] == (
        '- update_goal(goal_id: string, status?: "active"|"completed", progress?: integer 0-100, '
        "tags?: array of string) - Change a goal."
    )
    assert lines[3] == "- look() - Look around."


def test_render_accepts_bare_functions_and_skips_junk():
    bare = {"name": "wave", "parameters": {"type": "object", "properties": {}}}
    assert render_tool_schemas([bare, "junk", {"function": {}}, None]) == "- wave()"


def test_render_nothing():
    assert render_tool_schemas(None) == "(no tools)"
    assert render_tool_schemas([]) == "(no tools)"


# -- parse_tool_calls_from_text ----------------------------------------------------------------
def names(calls):
    return [c.name for c in calls]


def test_single_tool_object():
    text, calls = parse_tool_calls_from_text('{"tool": "say", "arguments": {"message": "Hi"}}')
    assert text is None
    assert len(calls) == 1
    call = calls[0]
    assert isinstance(call, ToolCall)
    assert (call.name, call.arguments, call.error) == ("say", {"message": "Hi"}, None)
    assert json.loads(call.raw_arguments) == {"message": "Hi"}
    assert call.id.startswith("call_")


def test_code_fence_and_surrounding_prose_become_the_thought():
    reply = (
        'I should greet her.\n```json\n{"tool": "say", "arguments": {"message": "Hi"}}\n```\nDone.'
    )
    text, calls = parse_tool_calls_from_text(reply)
    assert names(calls) == ["say"]
    assert "```" not in text
    assert text.startswith("I should greet her.") and text.endswith("Done.")


def test_name_arguments_shape_and_tool_calls_list():
    _, calls = parse_tool_calls_from_text('{"name": "look", "arguments": {}}')
    assert names(calls) == ["look"]
    reply = (
        '{"tool_calls": [{"tool": "look", "arguments": {}},'
        ' {"name": "say", "arguments": {"message": "x"}}]}'
    )
    _, calls = parse_tool_calls_from_text(reply)
    assert names(calls) == ["look", "say"]
    assert calls[0].id != calls[1].id


def test_openai_function_shape_with_string_arguments():
    function = {"name": "say", "arguments": json.dumps({"message": "yo"})}
    reply = json.dumps({"tool_calls": [{"id": "c1", "type": "function", "function": function}]})
    _, calls = parse_tool_calls_from_text(reply)
    assert names(calls) == ["say"] and calls[0].arguments == {"message": "yo"}


def test_several_objects_in_a_row_and_a_list():
    reply = (
        'First {"tool": "look", "arguments": {}} '
        'then {"tool": "say", "arguments": {"message": "a"}}'
    )
    text, calls = parse_tool_calls_from_text(reply)
    assert names(calls) == ["look", "say"]
    assert text == "First  then"
    reply = '[{"tool": "look"}, {"tool": "say", "arguments": {"message": "b"}}]'
    _, calls = parse_tool_calls_from_text(reply)
    assert names(calls) == ["look", "say"]


def test_braces_inside_strings():
    reply = '{"tool": "say", "arguments": {"message": "a {curly} }} thing {"}} trailing'
    text, calls = parse_tool_calls_from_text(reply)
    assert calls[0].arguments == {"message": "a {curly} }} thing {"}
    assert text == "trailing"


def test_arguments_beside_the_tool_name():
    _, calls = parse_tool_calls_from_text('{"tool": "say", "message": "hi"}')
    assert calls[0].arguments == {"message": "hi"}


def test_wrapped_action_object():
    reply = '{"thought": "hm", "action": {"tool": "look", "arguments": {}}}'
    _, calls = parse_tool_calls_from_text(reply)
    assert names(calls) == ["look"]
    _, calls = parse_tool_calls_from_text('{"action": "say", "action_input": {"message": "x"}}')
    assert names(calls) == ["say"] and calls[0].arguments == {"message": "x"}


def test_bare_name_counts_only_for_known_tools():
    assert parse_tool_calls_from_text('{"name": "Bob", "age": 3}', ["look"])[1] == []
    _, calls = parse_tool_calls_from_text('{"name": "look"}', ["look"])
    assert names(calls) == ["look"] and calls[0].arguments == {}


def test_unknown_tool_names_are_still_returned():
    # the ReAct loop tells the model the tool does not exist
    _, calls = parse_tool_calls_from_text('{"tool": "fly", "arguments": {}}', ["say"])
    assert names(calls) == ["fly"]


def test_invalid_arguments_set_the_error():
    _, calls = parse_tool_calls_from_text('{"tool": "say", "arguments": "{broken"}')
    assert calls[0].error and "not valid JSON" in calls[0].error
    assert calls[0].raw_arguments == "{broken" and calls[0].arguments == {}
    _, calls = parse_tool_calls_from_text('{"tool": "say", "arguments": [1, 2]}')
    assert "must be a JSON object" in calls[0].error


@pytest.mark.parametrize(
    "reply",
    [
        "Welcome to the inn, traveller!",
        "{'tool': 'say', 'arguments': {'message': 'single quotes are not JSON'}}",
        '{"tool": "say", "arguments": {"message": "unterminated"',
        '{"mood": "cheerful"}',
        "Here is a list: [1, 2, 3].",
        "```\nsome code\n```",
    ],
)
def test_plain_text_is_kept_whole(reply):
    assert parse_tool_calls_from_text(reply) == (reply, [])


def test_empty_and_none():
    assert parse_tool_calls_from_text(None) == (None, [])
    assert parse_tool_calls_from_text("") == ("", [])
    assert parse_tool_calls_from_text("   ") == ("   ", [])


def test_ids_are_deterministic():
    reply = '{"tool": "look", "arguments": {}}'
    assert parse_tool_calls_from_text(reply)[1][0].id == parse_tool_calls_from_text(reply)[1][0].id


def test_pathological_nesting_is_fast_and_harmless():
    assert parse_tool_calls_from_text("[" * 20000)[1] == []
    assert parse_tool_calls_from_text("{" * 20000)[1] == []
    deep = '{"a": ' * 50 + '{"tool": "look"}' + "}" * 50
    assert parse_tool_calls_from_text(deep)[1] == []  # buried too deep to be a tool call


JSONISH = st.text(alphabet=st.sampled_from(list("{}[]\":,\\ abtoolnamesy0123`\n'")), max_size=200)


@settings(max_examples=200, deadline=None)
@given(
    st.one_of(st.text(max_size=300), JSONISH, st.none()), st.lists(st.text(max_size=10), max_size=3)
)
def test_never_raises(text, known):
    reply, calls = parse_tool_calls_from_text(text, known)
    assert reply is None or isinstance(reply, str)
    for call in calls:
        assert isinstance(call.name, str) and isinstance(call.arguments, dict)
        assert isinstance(call.raw_arguments, str)
        assert call.error is None or call.arguments == {}
    if not calls:
        assert reply == text


@settings(max_examples=100, deadline=None)
@given(
    st.text(
        alphabet=st.characters(blacklist_characters="{}[]`", blacklist_categories=("Cc", "Cs")),
        max_size=60,
    ),
    st.dictionaries(
        st.text(min_size=1, max_size=8),
        st.one_of(st.text(max_size=20), st.integers(), st.booleans()),
        max_size=4,
    ),
)
def test_round_trip_inside_prose(prose, arguments):
    body = json.dumps({"tool": "say", "arguments": arguments})
    text, calls = parse_tool_calls_from_text(f"{prose}\n```json\n{body}\n```")
    assert names(calls) == ["say"] and calls[0].arguments == arguments
    assert text == (prose.strip() or None)

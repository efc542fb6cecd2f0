"""Runtime assembly of prompt components into a valid chat-completions request (pure)."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evennia_ai.prompt.assembly import (
    DEFAULT_SYSTEM_FALLBACK,
    DEFAULT_USER_TURN,
    EMPTY_TOOL_OUTPUT,
    SECTION_FALLBACK_SYSTEM,
    SECTION_USER_TURN,
    AssembledPrompt,
    assemble_messages,
    is_component_enabled,
    select_components,
    validate_chat_messages,
)
from evennia_ai.prompt.components import PromptComponent, get_static_components
from evennia_ai.prompt.contexts import (
    REFLECTION_PROMPT,
    apply_context_customization,
    get_context_config,
)

FULL_VALUES = {
    "system_prompt": "You are Bob, the innkeeper.",
    "character_context": "You run the Red Lion.",
    "entity_context": "Alice is a regular.",
    "semantic_memories": "Alice likes cider.",
    "context_buffer": "Rain patters on the windows.",
    "goals": "## Goals\n- keep the fire going",
    "conversation_history": [],
    "pending_event": 'Alice says to you: "Hello!"',
    "tool_result": "",
}


def component(cid, key, content, role="system", enabled=True, after_static=None):
    return PromptComponent(
        id=cid,
        key=key,
        name=key,
        description="",
        content=content,
        is_static=False,
        enabled=enabled,
        role=role,
        after_static=after_static,
    )


def call(call_id, name="look", arguments="{}"):
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def assemble(context="tick_event", extra_components=(), **values):
    merged = {**FULL_VALUES, **values}
    prompt = assemble_messages(
        get_static_components() + list(extra_components), get_context_config(context), merged
    )
    assert validate_chat_messages(prompt.messages) == []
    return prompt


# -- the common case -------------------------------------------------------------------------------
def test_tick_event_merges_system_parts_and_keeps_id_order():
    prompt = assemble()
    assert isinstance(prompt, AssembledPrompt)
    assert [m["role"] for m in prompt.messages] == ["system", "user"]
    system = prompt.messages[0]["content"]
    assert system == "\n\n".join(
        FULL_VALUES[k]
        for k in (
            "system_prompt",
            "character_context",
            "entity_context",
            "semantic_memories",
            "context_buffer",
            "goals",
        )
    )
    assert prompt.messages[1]["content"] == FULL_VALUES["pending_event"]
    assert [(s.key, s.role, s.message_index) for s in prompt.sections] == [
        ("system_prompt", "system", 0),
        ("character_context", "system", 0),
        ("entity_context", "system", 0),
        ("semantic_memories", "system", 0),
        ("context_buffer", "system", 0),
        ("goals", "system", 0),
        ("pending_event", "user", 1),
    ]
    assert ("conversation_history", "empty") in prompt.skipped
    assert ("tool_result", "empty") in prompt.skipped
    assert "\n\n".join(s.text for s in prompt.sections if s.key == "goals") == FULL_VALUES["goals"]


def test_reflection_uses_its_override_and_only_its_components():
    prompt = assemble("reflection", pending_event="Time to reflect.")
    assert prompt.messages[0] == {"role": "system", "content": REFLECTION_PROMPT}
    assert prompt.messages[1] == {"role": "user", "content": "Time to reflect."}
    keys = {s.key for s in prompt.sections}
    assert keys == {"system_prompt", "pending_event"}
    assert ("goals", "not in context") in prompt.skipped


def test_overrides_can_be_left_out():
    prompt = assemble_messages(
        get_static_components(),
        get_context_config("reflection"),
        FULL_VALUES,
        apply_overrides=False,
    )
    assert prompt.messages[0]["content"] == FULL_VALUES["system_prompt"]


def test_override_placeholders_are_filled():
    config = apply_context_customization(
        get_context_config("tick_event"),
        {"component_overrides": {"pending_event": {"content": "Now: {pending_event} ({npc})"}}},
    )
    prompt = assemble_messages(get_static_components(), config, {**FULL_VALUES, "npc": "Bob"})
    assert prompt.messages[-1]["content"] == f"Now: {FULL_VALUES['pending_event']} (Bob)"


def test_no_config_means_every_component():
    prompt = assemble_messages(get_static_components(), None, FULL_VALUES)
    assert [m["role"] for m in prompt.messages] == ["system", "user"]


# -- selection -------------------------------------------------------------------------------------
def test_pluggable_components_follow_their_static_component():
    rules = component(1001, "house_rules", "No brawling.", after_static=1000)
    late = component(2001, "weather", "It rains.")  # anchor by ID: 2000
    early = component(1, "preamble", "Preamble.", after_static=0)
    off = component(4001, "ledger", "Prices.", enabled=False)
    config = get_context_config("reflection")  # 0, 6000, 7000
    chosen = select_components([late, rules, off, early] + get_static_components(), config)
    assert [c.key for c in chosen] == ["system_prompt", "preamble", "pending_event", "tool_result"]
    assert chosen[0].content == REFLECTION_PROMPT
    assert is_component_enabled(rules, [1000]) and not is_component_enabled(rules, [0, 2000])
    assert is_component_enabled(late, [2000]) and not is_component_enabled(late, [1000])
    # after_static wins over the ID range when it names a static ID
    moved = component(1001, "moved", "x", after_static=4000)
    assert is_component_enabled(moved, [4000]) and not is_component_enabled(moved, [1000])


def test_a_pluggable_component_may_be_enabled_by_its_own_id():
    rules = component(1001, "house_rules", "No brawling.", after_static=1000)
    config = apply_context_customization(
        get_context_config("reflection"), {"enabled_components": [0, 1001, 6000]}
    )
    prompt = assemble_messages(
        [rules] + get_static_components(), config, {"system_prompt": "S", "pending_event": "E"}
    )
    assert prompt.messages[0]["content"] == REFLECTION_PROMPT + "\n\nNo brawling."
    assert not is_component_enabled(get_static_components()[1], [1001])


def test_disabled_components_are_dropped_and_reported():
    statics = get_static_components()
    statics[5].enabled = False  # goals
    prompt = assemble_messages(statics, get_context_config("tick_event"), FULL_VALUES)
    assert "keep the fire" not in prompt.messages[0]["content"]
    assert ("goals", "disabled") in prompt.skipped


def test_pluggable_roles_user_and_assistant():
    example_q = component(5001, "example_q", "Example: a guest asks for ale.", role="user")
    example_a = component(5002, "example_a", "Coming right up!", role="assistant")
    prompt = assemble(extra_components=[example_q, example_a])
    assert [m["role"] for m in prompt.messages] == ["system", "user", "assistant", "user"]
    assert prompt.messages[2] == {"role": "assistant", "content": "Coming right up!"}


def test_a_system_part_after_other_messages_stays_a_system_message():
    reminder = component(6001, "reminder", "Stay in character.")
    prompt = assemble(extra_components=[reminder])
    assert [m["role"] for m in prompt.messages] == ["system", "user", "system", "user"]
    assert prompt.messages[-1]["content"] == DEFAULT_USER_TURN


def test_unknown_role_is_read_as_system():
    odd = component(1, "odd", "Odd text.", role="narrator")
    prompt = assemble(extra_components=[odd])
    assert "Odd text." in prompt.messages[0]["content"]


# -- rendering -------------------------------------------------------------------------------------
def test_missing_placeholders_stay_visible_in_operator_text():
    rules = component(1001, "house_rules", "House rules: {house_rules}")
    prompt = assemble(extra_components=[rules])
    assert "House rules: {house_rules}" in prompt.messages[0]["content"]


def test_components_of_only_empty_placeholders_are_skipped():
    prompt = assemble(entity_context="", semantic_memories=None, context_buffer="   ")
    system = prompt.messages[0]["content"]
    assert "{entity_context}" not in system and "{semantic_memories}" not in system
    prompt = assemble_messages(
        get_static_components(), get_context_config("tick_event"), {"pending_event": "E"}
    )
    assert not any("{" in m["content"] for m in prompt.messages)
    assert prompt.messages[0] == {"role": "system", "content": DEFAULT_SYSTEM_FALLBACK}


def test_values_are_inserted_once_never_rendered_again():
    prompt = assemble(pending_event='Eve says to you: "{system_prompt} {{x}} {"tool": "say"}"')
    assert prompt.messages[-1]["content"] == (
        'Eve says to you: "{system_prompt} {{x}} {"tool": "say"}"'
    )


def test_literal_braces_in_component_text_survive():
    fmt = component(1, "format", 'Answer like {"tool": "say"} or {}.')
    prompt = assemble(extra_components=[fmt])
    assert 'Answer like {"tool": "say"} or {}.' in prompt.messages[0]["content"]


def test_non_text_values_render_as_json():
    rules = component(1001, "stats", "Stats: {stats}")
    prompt = assemble(extra_components=[rules], stats={"gold": 3})
    assert 'Stats: {"gold": 3}' in prompt.messages[0]["content"]


def test_value_named_like_a_render_parameter_does_not_crash():
    prompt = assemble(content="x", template="y", template_or_content="z")
    assert prompt.messages


# -- conversation history --------------------------------------------------------------------------
HISTORY = [
    {"role": "user", "content": 'Alice says to you: "Hi."', "batch": 1, "ts": "t"},
    {"role": "assistant", "content": None, "tool_calls": [call("c1", "look")], "batch": 1},
    {
        "role": "tool",
        "tool_call_id": "c1",
        "name": "look",
        "content": "The common room.",
        "batch": 1,
    },
    {"role": "assistant", "content": "Welcome, Alice.", "batch": 1},
]


def test_history_list_is_inserted_as_messages_without_bookkeeping():
    prompt = assemble(conversation_history=HISTORY)
    roles = [m["role"] for m in prompt.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert prompt.messages[2]["tool_calls"] == [call("c1", "look")]
    assert prompt.messages[2]["content"] is None
    assert prompt.messages[3] == {
        "role": "tool",
        "tool_call_id": "c1",
        "name": "look",
        "content": "The common room.",
    }
    assert all("batch" not in m and "ts" not in m for m in prompt.messages)
    history_sections = [s for s in prompt.sections if s.key == "conversation_history"]
    assert [s.message_index for s in history_sections] == [1, 2, 3, 4]
    assert "look" in history_sections[1].text  # tool calls are counted


def test_history_as_text_is_a_user_message():
    prompt = assemble(conversation_history="Alice: hi\nYou: hello")
    assert prompt.messages[1] == {"role": "user", "content": "Alice: hi\nYou: hello"}


def test_text_around_the_history_placeholder_becomes_user_messages():
    config = apply_context_customization(
        get_context_config("tick_event"),
        {
            "component_overrides": {
                "conversation_history": {
                    "content": "Earlier today:\n{conversation_history}\n(end of history)"
                }
            }
        },
    )
    prompt = assemble_messages(
        get_static_components(), config, {**FULL_VALUES, "conversation_history": HISTORY[:1]}
    )
    contents = [m["content"] for m in prompt.messages[1:4]]
    assert contents == ["Earlier today:", HISTORY[0]["content"], "(end of history)"]


def test_dangling_tool_call_becomes_text():
    history = HISTORY[:2]  # the call's result was trimmed away
    prompt = assemble(conversation_history=history)
    assert prompt.messages[2] == {
        "role": "assistant",
        "content": "[called look({}) - no result kept]",
    }


def test_partly_answered_calls_keep_only_the_answered_ones():
    history = [
        {
            "role": "assistant",
            "content": "Let me see.",
            "tool_calls": [call("a"), call("b", "say")],
        },
        {"role": "tool", "tool_call_id": "b", "content": "said"},
    ]
    prompt = assemble(conversation_history=history)
    assistant = prompt.messages[1]
    assert [c["id"] for c in assistant["tool_calls"]] == ["b"]
    assert assistant["content"] == "Let me see."


def test_orphan_and_duplicate_tool_results_become_user_text():
    history = [
        {"role": "tool", "tool_call_id": "zz", "name": "look", "content": "lost result"},
        {"role": "assistant", "content": None, "tool_calls": [call("a")]},
        {"role": "tool", "tool_call_id": "a", "content": "first"},
        {"role": "tool", "tool_call_id": "a", "content": "again"},
        {"role": "tool", "tool_call_id": "q", "content": ""},
    ]
    prompt = assemble(conversation_history=history)
    assert prompt.messages[1] == {"role": "user", "content": "[Tool result: look] lost result"}
    assert prompt.messages[3] == {"role": "tool", "tool_call_id": "a", "content": "first"}
    assert prompt.messages[4] == {"role": "user", "content": "[Tool result] again"}


def test_empty_tool_output_is_filled_in():
    history = [
        {"role": "assistant", "content": None, "tool_calls": [call("a")]},
        {"role": "tool", "tool_call_id": "a", "content": ""},
    ]
    prompt = assemble(conversation_history=history)
    assert prompt.messages[2]["content"] == EMPTY_TOOL_OUTPUT


def test_malformed_history_entries_are_dropped_or_repaired():
    history = [
        "a plain string",
        7,
        None,
        {"role": "robot", "content": "beep"},
        {"content": "no role"},
        {"role": "user", "content": ""},
        {"role": "user", "content": [{"type": "text", "text": "part one"}, "part two"]},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "", "function": {"name": "x"}}, {"id": "k", "function": "nope"}],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "d", "function": {"name": "dig", "arguments": {"dir": "n"}}},
                {"id": "d", "function": {"name": "dig"}},
            ],
        },
        {"role": "tool", "tool_call_id": "d", "content": {"ok": True}},
    ]
    prompt = assemble(conversation_history=history)
    assert prompt.messages[1] == {"role": "user", "content": "a plain string"}
    assert prompt.messages[2] == {"role": "user", "content": "part one\npart two"}
    assert prompt.messages[3]["tool_calls"] == [call("d", "dig", '{"dir": "n"}')]
    assert prompt.messages[4] == {"role": "tool", "tool_call_id": "d", "content": '{"ok": true}'}


# -- tool results ----------------------------------------------------------------------------------
def test_tool_result_answering_the_last_call_is_a_tool_message():
    history = HISTORY[:2]
    prompt = assemble(
        "pre_compaction",
        conversation_history=history,
        pending_event="",
        tool_result={"tool_call_id": "c1", "name": "look", "content": "A room."},
    )
    assert prompt.messages[-2]["tool_calls"][0]["id"] == "c1"
    assert prompt.messages[-1] == {
        "role": "tool",
        "tool_call_id": "c1",
        "name": "look",
        "content": "A room.",
    }


def test_tool_result_without_its_call_right_before_is_user_text():
    prompt = assemble(
        conversation_history=HISTORY[:2],
        tool_result={"tool_call_id": "c1", "name": "look", "content": "A room."},
    )
    assert prompt.messages[-1] == {"role": "user", "content": "[Tool result: look] A room."}
    # the call lost its answer (the pending event came between), so it became text
    assert prompt.messages[2]["content"] == "[called look({}) - no result kept]"


def test_text_tool_result_is_user_text():
    prompt = assemble("reflection_cont", tool_result="Journal entry saved.")
    assert prompt.messages[-1] == {"role": "user", "content": "[Tool result] Journal entry saved."}
    assert prompt.sections[-1].key == "tool_result"


def test_list_of_tool_results():
    history = [{"role": "assistant", "content": None, "tool_calls": [call("a"), call("b")]}]
    prompt = assemble(
        "pre_compaction",
        conversation_history=history,
        pending_event="",
        tool_result=[{"tool_call_id": "a", "content": "A"}, {"tool_call_id": "b", "content": "B"}],
    )
    assert [m.get("tool_call_id") for m in prompt.messages[-2:]] == ["a", "b"]


# -- framing ---------------------------------------------------------------------------------------
def test_request_without_a_user_turn_gets_one():
    prompt = assemble("sleep_consolidate")
    assert [m["role"] for m in prompt.messages] == ["system", "user"]
    assert prompt.messages[-1]["content"] == DEFAULT_USER_TURN
    assert prompt.sections[-1].key == SECTION_USER_TURN
    bare = assemble_messages(
        get_static_components(),
        get_context_config("sleep_consolidate"),
        FULL_VALUES,
        ensure_user_turn=False,
    )
    assert [m["role"] for m in bare.messages] == ["system"]
    assert validate_chat_messages(bare.messages) == []


def test_history_ending_on_the_assistant_gets_a_user_turn():
    prompt = assemble("tick_autonomous", conversation_history=HISTORY, pending_event="")
    assert prompt.messages[-1] == {"role": "user", "content": DEFAULT_USER_TURN}


def test_first_message_is_always_system():
    config = apply_context_customization(
        get_context_config("tick_event"), {"enabled_components": [6000]}
    )
    prompt = assemble_messages(
        get_static_components(), config, FULL_VALUES, fallback_system="You are a cat."
    )
    assert prompt.messages[0] == {"role": "system", "content": "You are a cat."}
    assert prompt.sections[0].key == SECTION_FALLBACK_SYSTEM
    empty = assemble_messages([], None, None)
    assert [m["role"] for m in empty.messages] == ["system", "user"]


def test_sections_cover_every_message():
    prompt = assemble(conversation_history=HISTORY, tool_result="done")
    assert {s.message_index for s in prompt.sections} == set(range(len(prompt.messages)))


# -- validate_chat_messages --------------------------------------------------------------------------
SYSTEM = {"role": "system", "content": "S"}


@pytest.mark.parametrize(
    "messages, fragment",
    [
        ([], "no messages"),
        ("nope", "no messages"),
        ([{"role": "user", "content": "hi"}], "first message is 'user'"),
        ([SYSTEM, {"role": "robot", "content": "x"}], "invalid role"),
        ([SYSTEM, "text"], "not an object"),
        ([SYSTEM, {"role": "user", "content": "  "}], "(user) is empty"),
        ([SYSTEM, {"role": "assistant", "content": None}], "(assistant) is empty"),
        (
            [SYSTEM, {"role": "tool", "tool_call_id": "a", "content": "x"}],
            "answers no open tool call",
        ),
        (
            [SYSTEM, {"role": "assistant", "content": None, "tool_calls": [call("a")]}],
            "never answered",
        ),
        (
            [
                SYSTEM,
                {"role": "assistant", "content": None, "tool_calls": [call("a")]},
                {"role": "user", "content": "hi"},
            ],
            "follows unanswered tool calls",
        ),
        (
            [
                SYSTEM,
                {"role": "assistant", "content": None, "tool_calls": [call("a")]},
                {"role": "user", "content": "hi"},
                {"role": "tool", "tool_call_id": "a", "content": "x"},
            ],
            "answers no open tool call",
        ),
        (
            [
                SYSTEM,
                {"role": "assistant", "content": None, "tool_calls": [call("a")]},
                {"role": "tool", "tool_call_id": "a", "content": "x"},
                {"role": "tool", "tool_call_id": "a", "content": "y"},
            ],
            "answers no open tool call",
        ),
        (
            [
                SYSTEM,
                {"role": "assistant", "content": None, "tool_calls": [call("a")]},
                {"role": "tool", "tool_call_id": "a", "content": ""},
            ],
            "(tool) is empty",
        ),
        ([SYSTEM, {"role": "assistant", "content": None, "tool_calls": []}], "non-empty list"),
        (
            [
                SYSTEM,
                {"role": "assistant", "content": None, "tool_calls": [call("a"), call("a")]},
                {"role": "tool", "tool_call_id": "a", "content": "x"},
            ],
            "repeats id",
        ),
        (
            [
                SYSTEM,
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{"id": "a", "function": {"name": "f", "arguments": {}}}],
                },
                {"role": "tool", "tool_call_id": "a", "content": "x"},
            ],
            "not a JSON string",
        ),
        (
            [
                SYSTEM,
                {"role": "assistant", "content": None, "tool_calls": [{"id": "a"}]},
                {"role": "tool", "tool_call_id": "a", "content": "x"},
            ],
            "no function name",
        ),
    ],
)
def test_validate_finds_problems(messages, fragment):
    problems = validate_chat_messages(messages)
    assert any(fragment in p for p in problems), problems


def test_validate_accepts_a_good_transcript():
    messages = [
        SYSTEM,
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [call("a"), call("b")]},
        {"role": "tool", "tool_call_id": "b", "content": "B"},
        {"role": "tool", "tool_call_id": "a", "content": "A"},
        {"role": "system", "content": "note"},
        {"role": "assistant", "content": "done"},
    ]
    assert validate_chat_messages(messages) == []


# -- property: whatever goes in, a valid request comes out ------------------------------------------
IDS = st.sampled_from(["a", "b", "c", "", None, 3])
TEXT = st.one_of(
    st.none(),
    st.just(""),
    st.just("  "),
    st.text(max_size=12),
    st.just("{pending_event}"),
    st.just("{missing}"),
)
CALL = st.one_of(
    st.builds(
        lambda i, n, a: {"id": i, "function": {"name": n, "arguments": a}},
        IDS,
        st.sampled_from(["look", "say", "", None]),
        st.one_of(st.just("{}"), st.just({"x": 1}), st.none()),
    ),
    st.none(),
    st.text(max_size=3),
)
MESSAGE = st.one_of(
    st.fixed_dictionaries({"role": st.sampled_from(["user", "system", "robot"]), "content": TEXT}),
    st.fixed_dictionaries(
        {"role": st.just("assistant"), "content": TEXT},
        optional={"tool_calls": st.one_of(st.lists(CALL, max_size=3), st.none(), st.just("x"))},
    ),
    st.fixed_dictionaries(
        {
            "role": st.just("tool"),
            "tool_call_id": IDS,
            "content": st.one_of(TEXT, st.just({"k": 1})),
        },
        optional={"name": st.sampled_from(["look", "", None])},
    ),
    st.text(max_size=5),
    st.none(),
    st.integers(),
)
CONTENTS = st.sampled_from(
    [
        "",
        "  ",
        "static text",
        "{system_prompt}",
        "{pending_event}",
        "{conversation_history}",
        "{tool_result}",
        "{missing}",
        "Before {conversation_history} after",
        "{goals} and {missing}",
        '{"json": 1}',
    ]
)
ROLES = st.sampled_from(["system", "user", "assistant", "tool", "mixed", "weird"])


@st.composite
def components_strategy(draw):
    comps = []
    for static in get_static_components():
        if draw(st.booleans()):
            static.role = draw(ROLES)
            static.content = draw(CONTENTS)
        static.enabled = draw(st.booleans()) or draw(st.booleans())
        comps.append(static)
    for n in range(draw(st.integers(0, 5))):
        cid = draw(st.integers(1, 7999).filter(lambda i: i % 1000 and i != 1500))
        comps.append(
            component(
                cid,
                f"plug{n}",
                draw(CONTENTS),
                role=draw(ROLES),
                enabled=draw(st.booleans()),
                after_static=draw(st.sampled_from([None, 0, 1000, 5000, 42])),
            )
        )
    return comps


@st.composite
def history_strategy(draw):
    """Realistic turns (calls followed by some of their results, in any order) plus noise."""
    messages = []
    for _turn in range(draw(st.integers(0, 4))):
        messages.append({"role": "user", "content": draw(TEXT)})
        ids = draw(st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=3))
        if ids:
            messages.append(
                {
                    "role": "assistant",
                    "content": draw(TEXT),
                    "tool_calls": [call(i, draw(st.sampled_from(["look", "say"]))) for i in ids],
                }
            )
            answers = draw(st.lists(st.sampled_from(ids + ["z"]), max_size=4))
            messages.extend(
                {"role": "tool", "tool_call_id": i, "content": draw(TEXT)} for i in answers
            )
        else:
            messages.append({"role": "assistant", "content": draw(TEXT)})
    for _ in range(draw(st.integers(0, 3))):  # noise anywhere
        messages.insert(draw(st.integers(0, len(messages))), draw(MESSAGE))
    if messages and draw(st.booleans()):  # trimmed from the front
        messages = messages[draw(st.integers(0, len(messages) - 1)) :]
    return messages


VALUE = st.one_of(
    TEXT,
    st.lists(MESSAGE, max_size=8),
    history_strategy(),
    st.fixed_dictionaries(
        {}, optional={"tool_call_id": IDS, "name": st.sampled_from(["look", None]), "content": TEXT}
    ),
    st.lists(st.fixed_dictionaries({"tool_call_id": IDS, "content": TEXT}), max_size=3),
    st.integers(),
)
VALUES = st.dictionaries(
    st.sampled_from(
        ["system_prompt", "character_context", "goals", "pending_event", "tool_result", "extra"]
    ),
    VALUE,
    max_size=6,
).flatmap(
    lambda v: st.fixed_dictionaries({"conversation_history": history_strategy()}).map(
        lambda h: {**h, **v}
    )
)


@settings(max_examples=200, deadline=None)
@given(
    components=components_strategy(),
    context=st.one_of(
        st.none(),
        st.sampled_from(
            [
                "tick_event",
                "reflection",
                "reflection_cont",
                "pre_compaction",
                "sleep_consolidate",
                "goal_decompose",
            ]
        ),
    ),
    values=VALUES,
    user_turn=st.booleans(),
)
def test_any_input_assembles_into_a_valid_request(components, context, values, user_turn):
    config = get_context_config(context) if context else None
    prompt = assemble_messages(components, config, values, ensure_user_turn=user_turn)
    assert validate_chat_messages(prompt.messages) == []
    json.dumps(prompt.messages)  # sendable as JSON
    indexes = [s.message_index for s in prompt.sections]
    assert indexes == sorted(indexes)
    assert set(indexes) == set(range(len(prompt.messages)))
    keys = {c.key for c in components} | {SECTION_FALLBACK_SYSTEM, SECTION_USER_TURN}
    assert {s.key for s in prompt.sections} <= keys
    if user_turn:
        assert prompt.messages[-1]["role"] in ("user", "tool")

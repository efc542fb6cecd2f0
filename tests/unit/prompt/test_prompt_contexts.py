"""Context types, their defaults, and operator customisation (pure)."""

import json
from collections.abc import MutableSequence

import pytest

from evennia_ai.prompt.components import (
    COMPONENT_CHARACTER_CONTEXT,
    COMPONENT_CONTEXT_BUFFER,
    COMPONENT_CONVERSATION_HISTORY,
    COMPONENT_ENTITY_CONTEXT,
    COMPONENT_GOALS,
    COMPONENT_PENDING_EVENT,
    COMPONENT_SEMANTIC_MEMORIES,
    COMPONENT_SYSTEM_PROMPT,
    COMPONENT_TOOL_RESULT,
    get_static_components,
)
from evennia_ai.prompt.contexts import (
    ALL_TOOL_CATEGORIES,
    ASYNC_REQUIRED,
    CONTEXT_GOAL_DECOMPOSE,
    CONTEXT_PRE_COMPACTION,
    CONTEXT_REFLECTION,
    CONTEXT_REFLECTION_CONT,
    CONTEXT_SLEEP_CONSOLIDATE,
    CONTEXT_TICK_AUTONOMOUS,
    CONTEXT_TICK_EVENT,
    CONTEXT_TYPES,
    CUSTOMIZABLE_FIELDS,
    DANGEROUS,
    DEFAULT_CONTEXT_CONFIGS,
    EXECUTION_MODES,
    MAX_COMPONENT_ID,
    PRE_COMPACTION_TOOLS,
    REFLECTION_TOOLS,
    SAFE_CHAIN,
    SLEEP_TOOLS,
    STATIC_COMPONENT_IDS,
    STATIC_COMPONENT_KEYS,
    TERMINAL,
    ContextConfig,
    UnknownContextTypeError,
    anchor_static_id,
    apply_context_customization,
    diff_context_config,
    get_context_config,
    is_component_id,
    select_execution_pattern,
    validate_context_customization,
)

FULL = [0, 1000, 1500, 2000, 3000, 4000, 5000, 6000, 7000]
SPEC_REFLECTION_TEXT = """You are an AI assistant performing periodic self-reflection.
Review your recent performance and journal entries. Consider:
1. What patterns am I observing in my work?
2. What strategies are working well?
3. What mistakes am I repeating?
4. What should I do differently?
Use the journal tools to record your insights."""


def test_constants():
    assert CONTEXT_TYPES == (
        "tick_event",
        "tick_autonomous",
        "reflection",
        "reflection_cont",
        "sleep_consolidate",
        "goal_decompose",
        "pre_compaction",
    )
    assert (
        CONTEXT_TICK_EVENT,
        CONTEXT_TICK_AUTONOMOUS,
        CONTEXT_REFLECTION,
        CONTEXT_REFLECTION_CONT,
        CONTEXT_SLEEP_CONSOLIDATE,
        CONTEXT_GOAL_DECOMPOSE,
        CONTEXT_PRE_COMPACTION,
    ) == CONTEXT_TYPES
    assert set(DEFAULT_CONTEXT_CONFIGS) == set(CONTEXT_TYPES)
    assert ALL_TOOL_CATEGORIES == (SAFE_CHAIN, ASYNC_REQUIRED, TERMINAL, DANGEROUS)
    assert ALL_TOOL_CATEGORIES == ("SAFE_CHAIN", "ASYNC_REQUIRED", "TERMINAL", "DANGEROUS")
    assert EXECUTION_MODES == ("single_action", "react_loop", "plan_execute")
    assert REFLECTION_TOOLS == ["noop", "add_journal_entry", "review_journal"]
    assert SLEEP_TOOLS == [
        "noop",
        "add_journal_entry",
        "review_journal",
        "recall_memories",
        "store_memory",
    ]
    assert PRE_COMPACTION_TOOLS == ["noop", "add_journal_entry", "update_entity_observation"]


def test_static_ids_and_keys_follow_the_components_module():
    statics = sorted(get_static_components(), key=lambda c: c.id)
    assert STATIC_COMPONENT_IDS == tuple(c.id for c in statics) == tuple(FULL)
    assert STATIC_COMPONENT_KEYS == tuple(c.key for c in statics)
    assert MAX_COMPONENT_ID == 7999


@pytest.mark.parametrize(
    "value, ok",
    [
        (0, True),
        (1, True),
        (999, True),
        (1000, True),
        (1499, True),
        (7999, True),
        (8000, False),
        (-1, False),
        (True, False),
        ("0", False),
        (1.0, False),
        (None, False),
    ],
)
def test_is_component_id(value, ok):
    assert is_component_id(value) is ok


@pytest.mark.parametrize(
    "component_id, anchor",
    [
        (0, 0),
        (1, 0),
        (999, 0),
        (1000, 1000),
        (1499, 1000),
        (1500, 1500),
        (1999, 1500),
        (2500, 2000),
        (7001, 7000),
        (7999, 7000),
    ],
)
def test_anchor_static_id(component_id, anchor):
    assert anchor_static_id(component_id) == anchor


# -- the defaults ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name, components",
    [
        ("tick_event", FULL),
        ("tick_autonomous", FULL),
        ("reflection", [COMPONENT_SYSTEM_PROMPT, COMPONENT_PENDING_EVENT, COMPONENT_TOOL_RESULT]),
        ("reflection_cont", [COMPONENT_SYSTEM_PROMPT, COMPONENT_TOOL_RESULT]),
        ("sleep_consolidate", [COMPONENT_SYSTEM_PROMPT, COMPONENT_SEMANTIC_MEMORIES]),
        ("goal_decompose", [COMPONENT_SYSTEM_PROMPT, COMPONENT_GOALS, COMPONENT_PENDING_EVENT]),
        (
            "pre_compaction",
            [
                COMPONENT_SYSTEM_PROMPT,
                COMPONENT_CONVERSATION_HISTORY,
                COMPONENT_PENDING_EVENT,
                COMPONENT_TOOL_RESULT,
            ],
        ),
    ],
)
def test_component_sets(name, components):
    assert get_context_config(name).enabled_components == components


def test_full_set_is_the_nine_static_components_in_order():
    assert FULL == [
        COMPONENT_SYSTEM_PROMPT,
        COMPONENT_CHARACTER_CONTEXT,
        COMPONENT_ENTITY_CONTEXT,
        COMPONENT_SEMANTIC_MEMORIES,
        COMPONENT_CONTEXT_BUFFER,
        COMPONENT_GOALS,
        COMPONENT_CONVERSATION_HISTORY,
        COMPONENT_PENDING_EVENT,
        COMPONENT_TOOL_RESULT,
    ]


@pytest.mark.parametrize(
    "name, tools",
    [
        ("tick_event", None),
        ("tick_autonomous", None),
        ("reflection", REFLECTION_TOOLS),
        ("reflection_cont", REFLECTION_TOOLS),
        ("sleep_consolidate", SLEEP_TOOLS),
        ("goal_decompose", []),
        ("pre_compaction", PRE_COMPACTION_TOOLS),
    ],
)
def test_tool_filters(name, tools):
    assert get_context_config(name).tool_filter == tools


def test_goal_decompose_offers_no_tools_while_none_means_all():
    assert get_context_config("goal_decompose").tool_filter == []
    assert get_context_config("tick_event").tool_filter is None
    assert "review_journal" in get_context_config("reflection").tool_filter
    assert "say" not in get_context_config("reflection").tool_filter


@pytest.mark.parametrize(
    "name, mode, iterations, multi, sub_agents",
    [
        # the context limits of the defaults (prompt/contexts.py)
        ("tick_event", "react_loop", 5, True, True),
        ("reflection", "react_loop", 3, True, False),
        ("sleep_consolidate", "react_loop", 10, True, False),
        ("goal_decompose", "single_action", 1, False, False),
        # the values the module docstring explains
        ("tick_autonomous", "react_loop", 5, True, True),
        ("reflection_cont", "react_loop", 2, True, False),
        ("pre_compaction", "react_loop", 5, True, False),
    ],
)
def test_execution_settings(name, mode, iterations, multi, sub_agents):
    config = get_context_config(name)
    assert (
        config.execution_mode,
        config.max_iterations,
        config.allows_multi_tool,
        config.allows_sub_agents,
    ) == (mode, iterations, multi, sub_agents)
    assert config.terminal_ends_loop is True
    assert config.dangerous_requires_confirm is True
    assert config.allowed_tool_categories is None
    assert config.token_budget is None
    assert config.context_type == name and config.name and config.description


def test_reflection_override_is_the_spec_text():
    config = get_context_config("reflection")
    assert config.component_overrides["system_prompt"]["content"] == SPEC_REFLECTION_TEXT
    assert config.system_prompt_override == SPEC_REFLECTION_TEXT
    assert config.get_component_content_override("system_prompt") == SPEC_REFLECTION_TEXT
    assert config.get_component_content_override("goals") is None
    assert get_context_config("tick_event").system_prompt_override is None


def test_content_override_ignores_malformed_entries():
    config = ContextConfig(
        context_type="tick_event",
        name="x",
        component_overrides={"goals": "text", "pending_event": {"content": 5}},
    )
    assert config.get_component_content_override("goals") is None
    assert config.get_component_content_override("pending_event") is None


# -- get_context_config -----------------------------------------------------------------------------
def test_get_context_config_returns_fresh_deep_copies():
    first = get_context_config("reflection")
    first.enabled_components.append(4000)
    first.component_overrides["system_prompt"]["content"] = "changed"
    first.tool_filter.append("say")
    second = get_context_config("reflection")
    assert second.enabled_components == [0, 6000, 7000]
    assert second.system_prompt_override == SPEC_REFLECTION_TEXT
    assert "say" not in second.tool_filter
    assert DEFAULT_CONTEXT_CONFIGS["reflection"].tool_filter == REFLECTION_TOOLS
    assert second is not get_context_config("reflection")


@pytest.mark.parametrize("name", ["tick", "", None, 3])
def test_get_context_config_unknown_name(name):
    with pytest.raises(KeyError) as info:
        get_context_config(name)
    assert isinstance(info.value, UnknownContextTypeError)
    message = str(info.value)
    assert "Unknown context type" in message and "tick_event" in message
    assert not message.startswith('"')  # not KeyError's quoted form


# -- to_dict / from_dict ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(DEFAULT_CONTEXT_CONFIGS))
def test_round_trip(name):
    config = get_context_config(name)
    data = config.to_dict()
    assert json.loads(json.dumps(data)) == data
    assert ContextConfig.from_dict(data) == config
    data["enabled_components"].append(1)
    assert config.enabled_components != data["enabled_components"]


class FakeAttributeList(MutableSequence):
    """Stands in for Evennia's _SaverList: list-like but not a list."""

    def __init__(self, items):
        self._items = list(items)

    def __getitem__(self, index):
        return self._items[index]

    def __setitem__(self, index, value):
        self._items[index] = value

    def __delitem__(self, index):
        del self._items[index]

    def __len__(self):
        return len(self._items)

    def insert(self, index, value):
        self._items.insert(index, value)


def test_from_dict_is_lenient_and_makes_plain_lists():
    config = ContextConfig.from_dict(
        {
            "context_type": "reflection",
            "enabled_components": FakeAttributeList([0, 7000]),
            "from_the_future": True,
        }
    )
    assert config.name == "reflection"
    assert type(config.enabled_components) is list and config.enabled_components == [0, 7000]
    assert config.max_iterations == 5  # dataclass default


@pytest.mark.parametrize("data", [{}, {"name": "x"}, "tick_event", None])
def test_from_dict_needs_a_context_type(data):
    with pytest.raises(ValueError):
        ContextConfig.from_dict(data)


# -- customisation ----------------------------------------------------------------------------------
def test_customisation_applies_and_leaves_base_alone():
    base = get_context_config("tick_event")
    custom = apply_context_customization(
        base,
        {
            "max_iterations": 3,
            "execution_mode": "plan_execute",
            "tool_filter": ["say", "look"],
            "allowed_tool_categories": ["SAFE_CHAIN", "TERMINAL"],
            "token_budget": 4000,
            "name": "Talk",
            "enabled_components": [0, 1000, 1001, 1000, 6000],
            "dangerous_requires_confirm": False,
            "context_type": "tick_event",
        },
        known_tools={"say", "look", "dig"},
    )
    assert custom.max_iterations == 3 and custom.execution_mode == "plan_execute"
    assert custom.tool_filter == ["say", "look"]
    assert custom.allowed_tool_categories == ["SAFE_CHAIN", "TERMINAL"]
    assert custom.token_budget == 4000 and custom.name == "Talk"
    assert custom.enabled_components == [0, 1000, 1001, 6000]  # duplicates dropped
    assert custom.dangerous_requires_confirm is False
    assert base == get_context_config("tick_event")


def test_customisation_accepts_tuples_and_attribute_lists():
    custom = apply_context_customization(
        get_context_config("tick_event"),
        {"tool_filter": ("say",), "enabled_components": FakeAttributeList([0, 6000])},
    )
    assert custom.tool_filter == ["say"] and custom.enabled_components == [0, 6000]


def test_component_overrides_merge_per_key():
    base = get_context_config("reflection")
    custom = apply_context_customization(
        base, {"component_overrides": {"pending_event": {"content": "Reflect on: {pending_event}"}}}
    )
    assert custom.system_prompt_override == SPEC_REFLECTION_TEXT
    assert custom.get_component_content_override("pending_event") == "Reflect on: {pending_event}"
    removed = apply_context_customization(base, {"component_overrides": {"system_prompt": None}})
    assert removed.system_prompt_override is None


def test_override_keys_may_include_pluggable_components_when_known():
    base = get_context_config("tick_event")
    with pytest.raises(ValueError, match="house_rules"):
        apply_context_customization(
            base, {"component_overrides": {"house_rules": {"content": "x"}}}
        )
    custom = apply_context_customization(
        base,
        {"component_overrides": {"house_rules": {"content": "x"}}},
        known_components=set(STATIC_COMPONENT_KEYS) | {"house_rules"},
    )
    assert custom.get_component_content_override("house_rules") == "x"


@pytest.mark.parametrize(
    "customization, fragment",
    [
        ({"colour": "red"}, "Unknown field 'colour'"),
        ({"max_iterations": "5"}, "max_iterations must be a whole number"),
        ({"max_iterations": True}, "max_iterations must be a whole number"),
        ({"max_iterations": 0}, "from 1 to 10, not 0"),
        ({"max_iterations": 11}, "from 1 to 10, not 11"),
        ({"execution_mode": "yolo"}, "execution_mode must be one of"),
        ({"token_budget": 0}, "token_budget must be a positive"),
        ({"token_budget": -5}, "token_budget must be a positive"),
        ({"token_budget": "lots"}, "token_budget must be a positive"),
        ({"enabled_components": [0, 8000]}, "unknown component IDs [8000]"),
        ({"enabled_components": [-1]}, "unknown component IDs [-1]"),
        ({"enabled_components": ["0"]}, "unknown component IDs ['0']"),
        ({"enabled_components": [True]}, "unknown component IDs [True]"),
        ({"enabled_components": []}, "at least one component"),
        ({"enabled_components": 0}, "must be a list of component IDs"),
        ({"allowed_tool_categories": ["SAFE_CHAIN", "FLYING"]}, "unknown categories ['FLYING']"),
        ({"allowed_tool_categories": "SAFE_CHAIN"}, "must be a list of categories"),
        ({"tool_filter": "say"}, "tool_filter must be a list of tool names"),
        ({"tool_filter": [1, 2]}, "tool_filter must be a list of tool names"),
        ({"allows_sub_agents": "yes"}, "allows_sub_agents must be true or false"),
        ({"name": ""}, "name must not be empty"),
        ({"name": 3}, "name must be text"),
        ({"context_type": "reflection"}, "context_type cannot be changed"),
        ({"component_overrides": {"goals": "text"}}, "must be {'content': text}"),
        (
            {"component_overrides": {"goals": {"content": "x", "extra": 1}}},
            "must be {'content': text}",
        ),
        ({"component_overrides": {"nope": {"content": "x"}}}, "unknown component 'nope'"),
        ({"component_overrides": ["goals"]}, "component_overrides must map"),
    ],
)
def test_customisation_errors_name_the_problem(customization, fragment):
    base = get_context_config("tick_event")
    with pytest.raises(ValueError) as info:
        apply_context_customization(base, customization)
    assert fragment in str(info.value)


def test_unknown_tools_are_checked_only_with_known_tools():
    base = get_context_config("tick_event")
    with pytest.raises(ValueError, match="unknown tools: fly"):
        apply_context_customization(base, {"tool_filter": ["say", "fly"]}, known_tools={"say"})
    assert apply_context_customization(base, {"tool_filter": ["say", "fly"]}).tool_filter == [
        "say",
        "fly",
    ]
    assert (
        apply_context_customization(base, {"tool_filter": []}, known_tools=set()).tool_filter == []
    )
    assert apply_context_customization(base, {"tool_filter": None}).tool_filter is None


def test_every_problem_is_reported():
    problems = validate_context_customization(
        "tick_event", {"max_iterations": 99, "execution_mode": "x", "colour": 1}
    )
    assert len(problems) == 3


def test_validate_accepts_valid_and_rejects_bad_shapes():
    assert validate_context_customization("tick_event", {"max_iterations": 10}) == []
    assert validate_context_customization(get_context_config("reflection"), {}) == []
    assert "Unknown context type" in validate_context_customization("nope", {})[0]
    assert "must map field names" in validate_context_customization("tick_event", ["x"])[0]


def test_every_field_but_context_type_is_customisable():
    assert "context_type" not in CUSTOMIZABLE_FIELDS
    assert set(CUSTOMIZABLE_FIELDS) == set(ContextConfig.__dataclass_fields__) - {"context_type"}


def test_diff_round_trips_through_apply():
    base = get_context_config("reflection")
    edited = apply_context_customization(
        base,
        {
            "max_iterations": 2,
            "component_overrides": {
                "system_prompt": None,
                "tool_result": {"content": "R: {tool_result}"},
            },
        },
    )
    diff = diff_context_config(base, edited)
    assert diff == {
        "max_iterations": 2,
        "component_overrides": {
            "system_prompt": None,
            "tool_result": {"content": "R: {tool_result}"},
        },
    }
    assert apply_context_customization(base, diff) == edited
    assert diff_context_config(base, base) == {}


def test_customisation_never_widens_the_npcs_layer_one():
    wide = apply_context_customization(
        get_context_config("reflection"),
        {
            "max_iterations": 10,
            "allows_sub_agents": True,
            "dangerous_requires_confirm": False,
            "execution_mode": "react_loop",
        },
    )
    static = {
        "multi_action_enabled": True,
        "max_iterations_per_tick": 3,
        "sub_agents_enabled": False,
    }
    pattern = select_execution_pattern(static, wide)
    assert pattern.max_iterations == 3
    assert pattern.sub_agents_enabled is False
    pattern = select_execution_pattern({"multi_action_enabled": False}, wide)
    assert pattern.mode == "single_action" and pattern.max_iterations == 1

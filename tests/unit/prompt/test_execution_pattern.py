"""The restrictive execution pattern: static limits, context limits, assessment advice, signals.

Pure; no database.
"""

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evennia_ai.prompt import contexts as prompt_contexts
from evennia_ai.prompt.contexts import ContextConfig, get_context_config
from evennia_ai.prompt.execution_pattern import (
    ALL_TOOL_CATEGORIES,
    DANGEROUS,
    DEFAULT_EXECUTION_CONFIG,
    MODE_PLAN_EXECUTE,
    MODE_REACT_LOOP,
    MODE_SINGLE_ACTION,
    MODE_WIDTH,
    SAFE_CHAIN,
    TERMINAL,
    ExecutionPattern,
    select_execution_pattern,
)

FULL = {
    "multi_action_enabled": True,
    "max_iterations_per_tick": 10,
    "sub_agents_enabled": True,
    "sub_agent_budget": 3,
}


def ctx(**changes) -> ContextConfig:
    """tick_event with some fields changed."""
    config = get_context_config("tick_event")
    for key, value in changes.items():
        setattr(config, key, value)
    return config


def test_spec_composition_example():
    pattern = select_execution_pattern(
        {"multi_action_enabled": True, "max_iterations_per_tick": 5},
        get_context_config("reflection"),
    )
    assert pattern.mode == "react_loop"
    assert pattern.max_iterations == 3
    assert pattern.multi_tool_enabled is True
    assert pattern.source_layers["mode"] == "context"
    assert pattern.source_layers["max_iterations"] == "context"
    assert pattern.source_layers["multi_tool_enabled"] == "allowed"
    assert pattern.notes == []


def test_names_are_reexported_from_prompt_contexts():
    assert prompt_contexts.select_execution_pattern is select_execution_pattern
    assert prompt_contexts.ExecutionPattern is ExecutionPattern
    assert prompt_contexts.MODE_SINGLE_ACTION == "single_action"
    assert prompt_contexts.ALL_TOOL_CATEGORIES == ALL_TOOL_CATEGORIES


def test_tool_categories_match_the_tool_base():
    from evennia_ai.tools.base import ALL_CATEGORIES, ToolCategory

    assert set(ALL_TOOL_CATEGORIES) == set(ALL_CATEGORIES)
    assert (SAFE_CHAIN, TERMINAL, DANGEROUS) == (
        ToolCategory.SAFE_CHAIN,
        ToolCategory.TERMINAL,
        ToolCategory.DANGEROUS,
    )


def test_defaults_with_empty_static_config():
    pattern = select_execution_pattern({}, get_context_config("tick_event"))
    assert pattern.mode == MODE_REACT_LOOP
    assert pattern.max_iterations == DEFAULT_EXECUTION_CONFIG["max_iterations_per_tick"] == 5
    assert pattern.sub_agents_enabled is False  # the static limits' default
    assert pattern.sub_agent_budget == 0
    assert pattern.dangerous_requires_confirm is True
    assert pattern.terminal_ends_loop is True
    assert pattern.allowed_categories is None


# -- the static limits ----------------------------------------------------------------------------
def test_multi_action_disabled_forces_single_action_with_one_iteration():
    pattern = select_execution_pattern(
        {"multi_action_enabled": False, "max_iterations_per_tick": 8},
        get_context_config("sleep_consolidate"),
    )
    assert (pattern.mode, pattern.max_iterations, pattern.multi_tool_enabled) == (
        MODE_SINGLE_ACTION,
        1,
        False,
    )
    assert pattern.source_layers["mode"] == "static"
    assert pattern.source_layers["max_iterations"] == "static"
    assert pattern.source_layers["multi_tool_enabled"] == "static"


@pytest.mark.parametrize(
    "raw, expected",
    [
        (0, 1),
        (-4, 1),
        (50, 10),
        (3, 3),
        ("3", 3),
        (" 7 ", 7),
        (4.9, 4),
        ("x", 1),
        (True, 1),
        ([], 1),
        (None, 5),
    ],
)
def test_static_iterations_are_clamped_and_read_defensively(raw, expected):
    pattern = select_execution_pattern({"max_iterations_per_tick": raw}, ctx(max_iterations=10))
    assert pattern.max_iterations == expected
    assert pattern.source_layers["max_iterations"] == "static"


def test_static_iterations_restrict_the_context():
    pattern = select_execution_pattern(
        {"max_iterations_per_tick": 2}, get_context_config("tick_event")
    )
    assert pattern.max_iterations == 2
    assert pattern.source_layers["max_iterations"] == "static"


@pytest.mark.parametrize(
    "raw, multi",
    [
        (True, True),
        (False, False),
        ("true", True),
        ("no", False),
        (1, True),
        (0, False),
        ("maybe", False),
        ([], False),
        (None, True),
    ],
)
def test_static_multi_action_flag_is_read_defensively(raw, multi):
    pattern = select_execution_pattern(
        {"multi_action_enabled": raw}, get_context_config("tick_event")
    )
    assert pattern.multi_tool_enabled is multi
    assert (pattern.mode == MODE_REACT_LOOP) is multi


def test_static_config_that_is_not_a_mapping_uses_defaults_and_notes_it():
    pattern = select_execution_pattern("junk", get_context_config("tick_event"))
    assert pattern.mode == MODE_REACT_LOOP and pattern.max_iterations == 5
    assert any("not a mapping" in note for note in pattern.notes)


def test_static_none_uses_defaults_quietly():
    pattern = select_execution_pattern(None, get_context_config("tick_event"))
    assert pattern.max_iterations == 5 and pattern.notes == []


# -- sub-agents -----------------------------------------------------------------------------------
def test_sub_agents_need_every_layer():
    pattern = select_execution_pattern(FULL, get_context_config("tick_event"))
    assert pattern.sub_agents_enabled is True and pattern.sub_agent_budget == 3
    assert pattern.source_layers["sub_agents_enabled"] == "allowed"

    pattern = select_execution_pattern(FULL, get_context_config("reflection"))
    assert pattern.sub_agents_enabled is False and pattern.sub_agent_budget == 0
    assert pattern.source_layers["sub_agents_enabled"] == "context"

    pattern = select_execution_pattern(
        {**FULL, "sub_agents_enabled": False}, get_context_config("tick_event")
    )
    assert pattern.sub_agents_enabled is False
    assert pattern.source_layers["sub_agents_enabled"] == "static"


@pytest.mark.parametrize(
    "budget, enabled, expected",
    [
        (0, False, 0),
        ("x", False, 0),
        (99, True, 10),
        ("2", True, 2),
        (-1, False, 0),
    ],
)
def test_sub_agent_budget_is_clamped(budget, enabled, expected):
    pattern = select_execution_pattern(
        {**FULL, "sub_agent_budget": budget}, get_context_config("tick_event")
    )
    assert pattern.sub_agents_enabled is enabled
    assert pattern.sub_agent_budget == expected


def test_single_action_turns_sub_agents_off():
    pattern = select_execution_pattern(
        FULL,
        get_context_config("tick_event"),
        {"context_signals": {"event_class": "communication"}},
    )
    assert pattern.mode == MODE_SINGLE_ACTION
    assert pattern.sub_agents_enabled is False
    assert pattern.source_layers["sub_agents_enabled"] == "signal:event_class"


# -- the context limits ---------------------------------------------------------------------------
def test_goal_decompose_is_single_action_from_the_context():
    pattern = select_execution_pattern(FULL, get_context_config("goal_decompose"))
    assert (pattern.mode, pattern.max_iterations, pattern.multi_tool_enabled) == (
        MODE_SINGLE_ACTION,
        1,
        False,
    )
    assert pattern.source_layers["mode"] == "context"
    assert pattern.source_layers["multi_tool_enabled"] == "context"


def test_context_without_multi_tool_forces_single_action():
    pattern = select_execution_pattern(FULL, ctx(allows_multi_tool=False))
    assert pattern.mode == MODE_SINGLE_ACTION and pattern.max_iterations == 1
    assert pattern.source_layers["multi_tool_enabled"] == "context"


def test_context_plan_execute_is_kept():
    pattern = select_execution_pattern(FULL, ctx(execution_mode=MODE_PLAN_EXECUTE))
    assert pattern.mode == MODE_PLAN_EXECUTE and pattern.multi_tool_enabled
    assert pattern.source_layers["mode"] == "context"


@pytest.mark.parametrize(
    "field_name, value, mode",
    [
        ("execution_mode", "yolo", MODE_SINGLE_ACTION),
        ("execution_mode", None, MODE_SINGLE_ACTION),
        ("allows_multi_tool", "perhaps", MODE_SINGLE_ACTION),
        ("max_iterations", "many", MODE_REACT_LOOP),
        ("max_iterations", None, MODE_REACT_LOOP),
    ],
)
def test_malformed_context_values_read_restrictively(field_name, value, mode):
    pattern = select_execution_pattern(FULL, ctx(**{field_name: value}))
    assert pattern.mode == mode
    assert pattern.max_iterations == 1
    assert pattern.notes


def test_context_iterations_below_one_mean_one():
    pattern = select_execution_pattern(FULL, ctx(max_iterations=0))
    assert pattern.max_iterations == 1


def test_malformed_context_flags_read_restrictively():
    pattern = select_execution_pattern(
        FULL,
        ctx(dangerous_requires_confirm="nah?", allows_sub_agents="sure?", terminal_ends_loop=7),
    )
    assert pattern.dangerous_requires_confirm is True
    assert pattern.sub_agents_enabled is False
    assert pattern.terminal_ends_loop is True


def test_missing_context_config_is_the_narrowest():
    pattern = select_execution_pattern(FULL, None)
    assert pattern.mode == MODE_SINGLE_ACTION and pattern.max_iterations == 1
    assert pattern.dangerous_requires_confirm is True
    assert pattern.sub_agents_enabled is False


def test_context_may_be_a_mapping():
    pattern = select_execution_pattern(FULL, get_context_config("reflection").to_dict())
    assert pattern.mode == MODE_REACT_LOOP and pattern.max_iterations == 3


def test_categories_are_intersected_across_layers():
    pattern = select_execution_pattern(
        {**FULL, "allowed_tool_categories": [TERMINAL, DANGEROUS]},
        ctx(allowed_tool_categories=[SAFE_CHAIN, TERMINAL]),
    )
    assert pattern.allowed_categories == [TERMINAL]
    assert pattern.source_layers["allowed_categories"] == "context"
    assert pattern.allows_category(TERMINAL) and not pattern.allows_category(DANGEROUS)


def test_categories_unknown_names_are_dropped_and_junk_means_none():
    pattern = select_execution_pattern(FULL, ctx(allowed_tool_categories=["SAFE_CHAIN", "FLYING"]))
    assert pattern.allowed_categories == [SAFE_CHAIN]
    pattern = select_execution_pattern(FULL, ctx(allowed_tool_categories=42))
    assert pattern.allowed_categories == []
    pattern = select_execution_pattern(FULL, ctx(allowed_tool_categories=list(ALL_TOOL_CATEGORIES)))
    assert pattern.allowed_categories is None  # all of them: no restriction in effect


def test_terminal_ends_loop_comes_from_the_context():
    pattern = select_execution_pattern(FULL, ctx(terminal_ends_loop=False))
    assert pattern.terminal_ends_loop is False
    assert pattern.source_layers["terminal_ends_loop"] == "context"


# -- the assessment advice ------------------------------------------------------------------------
def test_assessment_may_lower_iterations_but_not_raise_them():
    pattern = select_execution_pattern(
        FULL, get_context_config("tick_event"), {"recommended_iterations": 2}
    )
    assert pattern.max_iterations == 2 and pattern.source_layers["max_iterations"] == "assessment"
    pattern = select_execution_pattern(
        FULL, get_context_config("tick_event"), {"recommended_iterations": 9}
    )
    assert pattern.max_iterations == 5 and pattern.source_layers["max_iterations"] == "context"


def test_mode_order_single_below_plan_below_react():
    assert (
        MODE_WIDTH[MODE_SINGLE_ACTION] < MODE_WIDTH[MODE_PLAN_EXECUTE] < MODE_WIDTH[MODE_REACT_LOOP]
    )


@pytest.mark.parametrize(
    "context_mode, recommended, expected, source",
    [
        (MODE_REACT_LOOP, MODE_PLAN_EXECUTE, MODE_PLAN_EXECUTE, "assessment"),
        (MODE_REACT_LOOP, MODE_SINGLE_ACTION, MODE_SINGLE_ACTION, "assessment"),
        (MODE_PLAN_EXECUTE, MODE_REACT_LOOP, MODE_PLAN_EXECUTE, "context"),
        (MODE_PLAN_EXECUTE, MODE_SINGLE_ACTION, MODE_SINGLE_ACTION, "assessment"),
        (MODE_SINGLE_ACTION, MODE_REACT_LOOP, MODE_SINGLE_ACTION, "context"),
        (MODE_SINGLE_ACTION, MODE_PLAN_EXECUTE, MODE_SINGLE_ACTION, "context"),
    ],
)
def test_assessment_mode_only_narrows(context_mode, recommended, expected, source):
    pattern = select_execution_pattern(
        FULL, ctx(execution_mode=context_mode), {"recommended_mode": recommended}
    )
    assert pattern.mode == expected
    assert pattern.source_layers["mode"] == source


def test_assessment_can_ask_for_confirmation_but_not_remove_it():
    config = ctx(dangerous_requires_confirm=False)
    pattern = select_execution_pattern(FULL, config, {"recommend_confirm_dangerous": True})
    assert pattern.dangerous_requires_confirm is True
    assert pattern.source_layers["dangerous_requires_confirm"] == "assessment"
    pattern = select_execution_pattern(FULL, config, {})
    assert pattern.dangerous_requires_confirm is False
    assert pattern.source_layers["dangerous_requires_confirm"] == "allowed"
    pattern = select_execution_pattern(FULL, ctx(), {"recommend_confirm_dangerous": False})
    assert pattern.dangerous_requires_confirm is True


@pytest.mark.parametrize(
    "assessment",
    [
        {"recommended_iterations": "lots"},
        {"recommended_iterations": 0},
        {"recommended_iterations": -3},
        {"recommended_iterations": True},
        {"recommended_mode": "turbo"},
        {"recommended_mode": 3},
        {"recommend_confirm_dangerous": "hmm"},
        {"context_signals": "high"},
        {"context_signals": {"recent_errors": "several"}},
    ],
)
def test_invalid_assessment_entries_are_ignored_and_noted(assessment):
    baseline = select_execution_pattern(FULL, get_context_config("tick_event"))
    pattern = select_execution_pattern(FULL, get_context_config("tick_event"), assessment)
    assert (pattern.mode, pattern.max_iterations, pattern.dangerous_requires_confirm) == (
        baseline.mode,
        baseline.max_iterations,
        baseline.dangerous_requires_confirm,
    )
    assert pattern.notes


@pytest.mark.parametrize("assessment", ["junk", ["list"], 7])
def test_assessment_that_is_not_a_mapping_is_ignored(assessment):
    pattern = select_execution_pattern(FULL, get_context_config("tick_event"), assessment)
    assert pattern.mode == MODE_REACT_LOOP and pattern.max_iterations == 5


def test_numeric_strings_in_the_assessment_are_read():
    pattern = select_execution_pattern(
        FULL, get_context_config("tick_event"), {"recommended_iterations": "2"}
    )
    assert pattern.max_iterations == 2


# -- context signals -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "signals, mode, iterations, confirm, source_key, source",
    [
        (
            {"token_pressure": "critical"},
            MODE_SINGLE_ACTION,
            1,
            False,
            "mode",
            "signal:token_pressure",
        ),
        (
            {"token_pressure": "high"},
            MODE_REACT_LOOP,
            2,
            False,
            "max_iterations",
            "signal:token_pressure",
        ),
        ({"token_pressure": "normal"}, MODE_REACT_LOOP, 5, False, "mode", "context"),
        ({"recent_errors": 3}, MODE_SINGLE_ACTION, 1, True, "mode", "signal:recent_errors"),
        (
            {"recent_errors": 5},
            MODE_SINGLE_ACTION,
            1,
            True,
            "dangerous_requires_confirm",
            "signal:recent_errors",
        ),
        ({"recent_errors": 2}, MODE_REACT_LOOP, 2, False, "max_iterations", "signal:recent_errors"),
        (
            {"recent_errors": "2"},
            MODE_REACT_LOOP,
            2,
            False,
            "max_iterations",
            "signal:recent_errors",
        ),
        ({"recent_errors": 1}, MODE_REACT_LOOP, 5, False, "max_iterations", "context"),
        (
            {"event_class": "communication"},
            MODE_SINGLE_ACTION,
            1,
            False,
            "mode",
            "signal:event_class",
        ),
        (
            {"event_class": "building"},
            MODE_REACT_LOOP,
            5,
            True,
            "dangerous_requires_confirm",
            "signal:event_class",
        ),
        ({"event_class": "movement"}, MODE_REACT_LOOP, 5, False, "mode", "context"),
    ],
)
def test_context_signal_table(signals, mode, iterations, confirm, source_key, source):
    config = ctx(dangerous_requires_confirm=False)
    pattern = select_execution_pattern(FULL, config, {"context_signals": signals})
    assert pattern.mode == mode
    assert pattern.max_iterations == iterations
    assert pattern.dangerous_requires_confirm is confirm
    assert pattern.source_layers[source_key] == source
    assert pattern.signals == signals


def test_high_pressure_does_not_raise_a_lower_limit():
    pattern = select_execution_pattern(
        FULL, get_context_config("reflection_cont"), {"context_signals": {"token_pressure": "high"}}
    )
    assert pattern.max_iterations == 2
    assert pattern.source_layers["max_iterations"] == "context"


def test_goal_urgency_is_informational():
    baseline = select_execution_pattern(FULL, get_context_config("tick_event"))
    pattern = select_execution_pattern(
        FULL, get_context_config("tick_event"), {"context_signals": {"goal_urgency": "high"}}
    )
    assert pattern.signals["goal_urgency"] == "high"
    assert pattern.source_layers["goal_urgency"] == "signal:goal_urgency=high"
    for name in (
        "mode",
        "max_iterations",
        "dangerous_requires_confirm",
        "sub_agents_enabled",
        "multi_tool_enabled",
        "allowed_categories",
    ):
        assert getattr(pattern, name) == getattr(baseline, name)


def test_first_signal_to_restrict_is_named():
    pattern = select_execution_pattern(
        FULL,
        get_context_config("tick_event"),
        {
            "context_signals": {
                "token_pressure": "critical",
                "event_class": "communication",
                "recent_errors": 4,
            }
        },
    )
    assert pattern.source_layers["mode"] == "signal:token_pressure"
    assert pattern.source_layers["dangerous_requires_confirm"] == "context"


def test_pattern_to_dict_is_json_ready():
    pattern = select_execution_pattern(
        FULL, get_context_config("tick_event"), {"context_signals": {"goal_urgency": "low"}}
    )
    data = json.loads(json.dumps(pattern.to_dict()))
    assert data["mode"] == "react_loop" and data["source_layers"]["goal_urgency"]


# -- properties: never wider than any layer allows -------------------------------------------------
JUNK = st.one_of(
    st.none(),
    st.text(max_size=5),
    st.lists(st.integers(), max_size=2),
    st.floats(allow_nan=True),
    st.booleans(),
)
MODES = st.sampled_from([MODE_SINGLE_ACTION, MODE_REACT_LOOP, MODE_PLAN_EXECUTE])
CATS = st.one_of(st.none(), st.lists(st.sampled_from(ALL_TOOL_CATEGORIES), unique=True))

static_strategy = st.fixed_dictionaries(
    {},
    optional={
        "multi_action_enabled": st.one_of(st.booleans(), JUNK),
        "max_iterations_per_tick": st.one_of(st.integers(-5, 20), JUNK),
        "task_assessment_enabled": st.one_of(st.booleans(), JUNK),
        "sub_agents_enabled": st.one_of(st.booleans(), JUNK),
        "sub_agent_budget": st.one_of(st.integers(-2, 20), JUNK),
        "allowed_tool_categories": st.one_of(CATS, JUNK),
    },
)


@st.composite
def context_strategy(draw):
    config = get_context_config(draw(st.sampled_from(prompt_contexts.CONTEXT_TYPES)))
    if draw(st.booleans()):
        config.execution_mode = draw(st.one_of(MODES, JUNK))
        config.max_iterations = draw(st.one_of(st.integers(-3, 15), JUNK))
        config.allowed_tool_categories = draw(st.one_of(CATS, JUNK))
        config.dangerous_requires_confirm = draw(st.one_of(st.booleans(), JUNK))
        config.allows_multi_tool = draw(st.one_of(st.booleans(), JUNK))
        config.allows_sub_agents = draw(st.one_of(st.booleans(), JUNK))
    return config


signals_strategy = st.fixed_dictionaries(
    {},
    optional={
        "token_pressure": st.one_of(st.sampled_from(["normal", "high", "critical"]), JUNK),
        "recent_errors": st.one_of(st.integers(-1, 6), JUNK),
        "event_class": st.one_of(st.sampled_from(["communication", "building", "movement"]), JUNK),
        "goal_urgency": st.one_of(st.sampled_from(["high", "medium", "low"]), JUNK),
    },
)
assessment_strategy = st.one_of(
    st.none(),
    JUNK,
    st.fixed_dictionaries(
        {},
        optional={
            "recommended_iterations": st.one_of(st.integers(-3, 15), JUNK),
            "recommended_mode": st.one_of(MODES, JUNK),
            "recommend_confirm_dangerous": st.one_of(st.booleans(), JUNK),
            "context_signals": st.one_of(signals_strategy, JUNK),
        },
    ),
)


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _bounds(static, context, assessment):
    """What each well-formed layer allows, read independently of the implementation.

    Malformed values give no bound here (their restrictive reading is unit-tested above).
    """
    iteration_caps, mode_caps, category_caps = [10], [MODE_REACT_LOOP], []
    sub_agents_ok, confirm_required = True, False
    if static.get("multi_action_enabled") is False:
        mode_caps.append(MODE_SINGLE_ACTION)
    cap = static.get("max_iterations_per_tick")
    if _is_int(cap):
        iteration_caps.append(max(1, cap))
    if static.get("sub_agents_enabled") is not True:
        sub_agents_ok = False
    if isinstance(static.get("allowed_tool_categories"), list):
        category_caps.append(set(static["allowed_tool_categories"]))
    if isinstance(context.execution_mode, str) and context.execution_mode in MODE_WIDTH:
        mode_caps.append(context.execution_mode)
    if context.allows_multi_tool is False:
        mode_caps.append(MODE_SINGLE_ACTION)
    if _is_int(context.max_iterations):
        iteration_caps.append(max(1, context.max_iterations))
    if isinstance(context.allowed_tool_categories, list):
        category_caps.append(set(context.allowed_tool_categories))
    if context.dangerous_requires_confirm is True:
        confirm_required = True
    if context.allows_sub_agents is not True:
        sub_agents_ok = False
    if isinstance(assessment, dict):
        rec = assessment.get("recommended_iterations")
        if _is_int(rec) and rec >= 1:
            iteration_caps.append(rec)
        rec_mode = assessment.get("recommended_mode")
        if isinstance(rec_mode, str) and rec_mode in MODE_WIDTH:
            mode_caps.append(rec_mode)
        if assessment.get("recommend_confirm_dangerous") is True:
            confirm_required = True
        signals = assessment.get("context_signals")
        if isinstance(signals, dict):
            if signals.get("token_pressure") == "critical":
                mode_caps.append(MODE_SINGLE_ACTION)
            if signals.get("token_pressure") == "high":
                iteration_caps.append(2)
            errors = signals.get("recent_errors")
            if _is_int(errors) and errors >= 3:
                mode_caps.append(MODE_SINGLE_ACTION)
                confirm_required = True
            elif _is_int(errors) and errors >= 2:
                iteration_caps.append(2)
            if signals.get("event_class") == "communication":
                mode_caps.append(MODE_SINGLE_ACTION)
            if signals.get("event_class") == "building":
                confirm_required = True
    return iteration_caps, mode_caps, category_caps, sub_agents_ok, confirm_required


@settings(max_examples=200, deadline=None)
@given(static=static_strategy, context=context_strategy(), assessment=assessment_strategy)
def test_pattern_is_never_wider_than_any_layer(static, context, assessment):
    pattern = select_execution_pattern(static, context, assessment)
    iteration_caps, mode_caps, category_caps, sub_agents_ok, confirm_required = _bounds(
        static, context, assessment
    )

    assert 1 <= pattern.max_iterations <= min(iteration_caps)
    assert pattern.mode in MODE_WIDTH
    assert all(MODE_WIDTH[pattern.mode] <= MODE_WIDTH[cap] for cap in mode_caps)
    effective = set(
        ALL_TOOL_CATEGORIES if pattern.allowed_categories is None else pattern.allowed_categories
    )  # None means every category
    assert effective <= set(ALL_TOOL_CATEGORIES)
    for cap in category_caps:
        assert effective <= cap
    if pattern.sub_agents_enabled:
        assert sub_agents_ok and pattern.multi_tool_enabled and 1 <= pattern.sub_agent_budget <= 10
    else:
        assert pattern.sub_agent_budget == 0
    if confirm_required:
        assert pattern.dangerous_requires_confirm
    # Internal consistency.
    assert pattern.multi_tool_enabled == (pattern.mode != MODE_SINGLE_ACTION)
    if pattern.mode == MODE_SINGLE_ACTION:
        assert pattern.max_iterations == 1
    for value in pattern.source_layers.values():
        assert value in ("static", "context", "assessment", "allowed") or value.startswith(
            "signal:"
        )


@settings(max_examples=150, deadline=None)
@given(static=static_strategy, context=context_strategy(), assessment=assessment_strategy)
def test_adding_layer_three_never_widens(static, context, assessment):
    without = select_execution_pattern(static, context)
    with_advice = select_execution_pattern(static, context, assessment)
    assert with_advice.max_iterations <= without.max_iterations
    assert MODE_WIDTH[with_advice.mode] <= MODE_WIDTH[without.mode]
    assert with_advice.sub_agents_enabled <= without.sub_agents_enabled
    assert with_advice.dangerous_requires_confirm >= without.dangerous_requires_confirm
    if without.allowed_categories is not None:
        assert set(with_advice.allowed_categories) <= set(without.allowed_categories)


# -- names --------------------------------------------------------------------------------------
ROOT = Path(__file__).resolve().parents[3]


def test_the_sources_are_named_not_numbered_like_the_package_layers():
    """ "Layer 1/2/3" read like the package's layers (docs/architecture.md): the docstrings, the
    command help, the call contracts and the docs name the sources the way source_layers does."""
    numbered = re.compile(r"\bLayers?[- ]?[123]\b|\bL[123], L[123]\b", re.IGNORECASE)
    files = [*sorted((ROOT / "evennia_ai").rglob("*.py")), *sorted((ROOT / "docs").glob("*.md"))]
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in files
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if numbered.search(line)
    ]
    assert not found, found
    # The names stay the values stored in traces, which must still load.
    pattern = select_execution_pattern(FULL, get_context_config("reflection"))
    assert set(pattern.source_layers.values()) <= {"static", "context", "allowed"}
    assert pattern.source_layers["mode"] == "context"

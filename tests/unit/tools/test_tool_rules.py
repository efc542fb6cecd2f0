"""Tool rules: construction and validation, the prompt section, and enforcement over a tick."""

import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from evennia_ai.tools.rules import (
    RULE_FORMS,
    RULE_TYPES,
    ToolRule,
    ToolRuleState,
    parse_rules,
    render_tool_rules,
    rule_conflict,
)


# -- construction -------------------------------------------------------------------------------
def test_constructors():
    assert ToolRule.exit_loop("say") == ToolRule("exit_loop", "say", None)
    assert ToolRule.continue_loop("search") == ToolRule("continue_loop", "search", None)
    assert ToolRule.max_calls("api_request", 3) == ToolRule("max_calls", "api_request", 3)
    assert ToolRule.requires_prior("give", "look") == ToolRule("requires_prior", "give", "look")
    assert ToolRule.start_constraint("context") == ToolRule("start_constraint", "context", None)
    assert set(RULE_TYPES) == {
        "exit_loop",
        "continue_loop",
        "max_calls",
        "requires_prior",
        "start_constraint",
    }


def test_round_trip_through_plain_dicts():
    for rule in (
        ToolRule.exit_loop("say"),
        ToolRule.max_calls("look", 2),
        ToolRule.requires_prior("give", "look"),
        ToolRule.start_constraint("look"),
    ):
        data = rule.to_dict()
        assert data == {"type": rule.type, "tool": rule.tool, "value": rule.value}
        assert ToolRule.from_dict(data) == rule


def test_from_dict_is_forgiving_where_harmless():
    assert ToolRule.from_dict(
        {"type": "max_calls", "tool": " say ", "value": "2"}
    ) == ToolRule.max_calls("say", 2)
    assert (
        ToolRule.from_dict({"type": "exit_loop", "tool": "say", "value": 9, "note": "x"}).value
        is None
    )
    assert (
        ToolRule.from_dict({"type": "requires_prior", "tool": "give", "value": " look "}).value
        == "look"
    )


@pytest.mark.parametrize(
    "data, message",
    [
        ("exit_loop say", "must be a mapping"),
        (
            {"type": "explode", "tool": "say"},
            "Unknown tool rule type 'explode'; use one of: start_constraint",
        ),
        ({"tool": "say"}, "Unknown tool rule type None"),
        ({"type": "exit_loop"}, "A exit_loop rule needs the name of its tool"),
        ({"type": "exit_loop", "tool": "  "}, "needs the name of its tool"),
        ({"type": "max_calls", "tool": "say"}, "a whole number of calls >= 1, not None"),
        ({"type": "max_calls", "tool": "say", "value": 0}, "not 0"),
        ({"type": "max_calls", "tool": "say", "value": 2.5}, "not 2.5"),
        ({"type": "max_calls", "tool": "say", "value": True}, "not True"),
        ({"type": "max_calls", "tool": "say", "value": "many"}, "not 'many'"),
        (
            {"type": "requires_prior", "tool": "give"},
            "the name of the tool that must be called first",
        ),
        ({"type": "requires_prior", "tool": "give", "value": "give"}, "cannot require itself"),
    ],
)
def test_from_dict_rejects_with_clear_messages(data, message):
    with pytest.raises(ValueError) as err:
        ToolRule.from_dict(data)
    assert message in str(err.value)


def test_constructors_validate_too():
    with pytest.raises(ValueError):
        ToolRule.max_calls("say", 0)
    with pytest.raises(ValueError):
        ToolRule.exit_loop("")


def test_parse_rules_skips_bad_ones():
    rules, errors = parse_rules(
        [{"type": "exit_loop", "tool": "say"}, {"type": "nope"}, ToolRule.max_calls("look", 1)]
    )
    assert rules == [ToolRule.exit_loop("say"), ToolRule.max_calls("look", 1)]
    assert len(errors) == 1 and errors[0].startswith("rule 2: Unknown tool rule type")
    assert parse_rules(None) == ([], [])


# -- the prompt section -------------------------------------------------------------------------
def test_render_matches_the_spec():
    rules = [
        ToolRule.exit_loop("send_message"),
        ToolRule.continue_loop("search"),
        ToolRule.max_calls("api_request", 3),
        ToolRule.start_constraint("context"),
    ]
    assert render_tool_rules(rules) == (
        "# Tool Execution Rules\n"
        "\n"
        "- Call `context` first before any other tools\n"
        "- The conversation will end after calling `send_message`\n"
        "- The conversation will be continued after calling `search`\n"
        "- Call `api_request` at most 3 times"
    )


def test_render_other_rules_and_edge_cases():
    assert render_tool_rules([]) == "" and render_tool_rules(None) == ""
    text = render_tool_rules(
        [
            ToolRule.requires_prior("x", "y"),
            ToolRule.max_calls("look", 1),
            ToolRule.max_calls("look", 1),
            {"type": "exit_loop", "tool": "say"},
            {"type": "broken"},
        ]
    )
    assert text.splitlines()[2:] == [
        "- The conversation will end after calling `say`",
        "- Call `look` at most 1 time",
        "- Call `x` only after calling `y`",
    ]
    assert render_tool_rules([{"type": "broken"}]) == ""


# -- enforcement --------------------------------------------------------------------------------
def test_start_constraint():
    state = ToolRuleState([ToolRule.start_constraint("look")])
    assert state.check("say") == "Rule: call `look` first, before any other tool."
    assert state.check("look") is None
    state.record("look")
    assert state.check("say") is None
    assert state.check("look") is None  # may be called again later


def test_several_start_constraints_accept_any_of_them():
    state = ToolRuleState([ToolRule.start_constraint("look"), ToolRule.start_constraint("recall")])
    assert state.check("recall") is None and state.check("look") is None
    assert state.check("say") == "Rule: call `look` or `recall` first, before any other tool."


def test_start_constraint_on_an_unoffered_tool_is_dropped():
    state = ToolRuleState([ToolRule.start_constraint("context")], available={"say", "look"})
    assert state.check("say") is None
    assert ToolRuleState([ToolRule.start_constraint("context")]).check("say") is not None


def test_max_calls():
    state = ToolRuleState([ToolRule.max_calls("look", 2)])
    for _ in range(2):
        assert state.check("look") is None
        state.record("look", success=False)  # calls that ran count, failed or not
    refusal = state.check("look")
    assert refusal.startswith("Rule: `look` may be called at most 2 times per turn")
    assert state.check("say") is None
    once = ToolRuleState([ToolRule.max_calls("say", 1)])
    once.record("say")
    assert "at most 1 time per turn" in once.check("say")


def test_requires_prior_needs_a_success():
    state = ToolRuleState([ToolRule.requires_prior("give", "look")])
    assert state.check("give") == "Rule: call `look` successfully before `give`."
    state.record("look", success=False)
    assert state.check("give") is not None
    state.record("look")
    assert state.check("give") is None
    blocked = ToolRuleState([ToolRule.requires_prior("give", "look")], available={"give"})
    assert "which is not available now" in blocked.check("give")


def test_after_call():
    state = ToolRuleState(
        [
            ToolRule.exit_loop("say"),
            ToolRule.continue_loop("look"),
            ToolRule.continue_loop("say"),
            ToolRule.max_calls("emote", 2),
        ]
    )
    assert state.after_call("say") == "exit"  # exit wins over continue
    assert state.after_call("look") == "continue"
    assert state.after_call("emote") is None
    assert state.after_call("unknown") is None
    assert ToolRuleState().after_call("say") is None and ToolRuleState().check("say") is None


tool_names = st.sampled_from(["look", "say", "give", "recall"])
rules_strategy = st.lists(
    st.one_of(
        st.builds(ToolRule.exit_loop, tool_names),
        st.builds(ToolRule.continue_loop, tool_names),
        st.builds(ToolRule.max_calls, tool_names, st.integers(1, 3)),
        st.builds(ToolRule.start_constraint, tool_names),
        st.tuples(tool_names, tool_names)
        .filter(lambda p: p[0] != p[1])
        .map(lambda p: ToolRule.requires_prior(*p)),
    ),
    max_size=6,
)


@hsettings(max_examples=200, deadline=None)
@given(rules_strategy, st.lists(tool_names, max_size=12))
def test_accepted_calls_never_break_a_rule(rules, attempts):
    """Whatever the model tries, the calls the state lets through obey every rule."""
    state = ToolRuleState(rules)
    for name in attempts:
        if state.check(name) is None:
            state.record(name)
    made = state.calls
    for rule in rules:
        if rule.type == "max_calls":
            assert made.count(rule.tool) <= rule.value
        if rule.type == "requires_prior" and rule.tool in made:
            assert rule.value in made[: made.index(rule.tool)]
    starts = {r.tool for r in rules if r.type == "start_constraint"}
    if starts and made:
        assert made[0] in starts
    assert render_tool_rules(rules).count("\n- ") == len(set(rules))
    assert [ToolRule.from_dict(r.to_dict()) for r in rules] == rules


# -- typed by an operator (aitools/addrule) ---------------------------------------------------
def test_parse_reads_every_form():
    assert ToolRule.parse("start_constraint look") == ToolRule.start_constraint("look")
    assert ToolRule.parse("EXIT_LOOP say") == ToolRule.exit_loop("say")
    assert ToolRule.parse(" continue_loop  look ") == ToolRule.continue_loop("look")
    assert ToolRule.parse("max_calls look 2") == ToolRule.max_calls("look", 2)
    assert ToolRule.parse("requires_prior give look") == ToolRule.requires_prior("give", "look")
    assert set(RULE_FORMS) == set(RULE_TYPES)
    assert ToolRule.requires_prior("give", "look").tools == ("give", "look")
    assert ToolRule.max_calls("look", 2).tools == ("look",)


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "Give a rule. Rules are: start_constraint <tool>;"),
        ("cooldown say", "Unknown tool rule type 'cooldown'. Rules are:"),
        ("max_calls look", "A max_calls rule reads: max_calls <tool> <count>."),
        ("requires_prior give", "A requires_prior rule reads: requires_prior <tool> <tool"),
        ("exit_loop say now", "A exit_loop rule reads: exit_loop <tool>."),
        ("max_calls look -1", "a whole number of calls >= 1"),
    ],
)
def test_parse_refuses_with_the_expected_form(text, message):
    with pytest.raises(ValueError) as caught:
        ToolRule.parse(text)
    assert message in str(caught.value)


def test_rule_conflict():
    rules = [ToolRule.max_calls("look", 2), ToolRule.requires_prior("give", "look")]
    assert "already" in rule_conflict(rules, ToolRule.max_calls("look", 2))
    assert "is already limited" in rule_conflict(rules, ToolRule.max_calls("look", 5))
    assert rule_conflict(rules, ToolRule.max_calls("say", 5)) is None
    # a second prior for one tool is fine; a circle, however long, is not
    assert rule_conflict(rules, ToolRule.requires_prior("give", "say")) is None
    assert "neither could ever run" in rule_conflict(rules, ToolRule.requires_prior("look", "give"))
    chain = rules + [ToolRule.requires_prior("look", "say")]
    assert "neither" in rule_conflict(chain, ToolRule.requires_prior("say", "give"))
    assert rule_conflict(rules, ToolRule.exit_loop("give")) is None

"""Tool base class, results, argument validation, safe_run, caching, Deferreds and the registry."""

import json
import logging
import math
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import override_settings
from evennia import create_object
from evennia.objects.objects import DefaultCharacter
from evennia.utils.test_resources import BaseEvenniaTest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from twisted.internet import defer

from evennia_ai import tools as tools_package
from evennia_ai.tools.arguments import coerce_integers, schema_problems, validate_value
from evennia_ai.tools.base import (
    ALL_CATEGORIES,
    Tool,
    ToolCategory,
    ToolContext,
    ToolResult,
    normalise_result,
    object_schema,
)
from evennia_ai.tools.registry import TOOL_REGISTRY, ToolRegistry, passes_lock, register_tool


# -- fixtures -----------------------------------------------------------------------------------
class Echo(Tool):
    name = "echo"
    description = "Repeat a text."
    parameters = {
        "type": "object",
        "properties": {
            "text": {"type": "string", "minLength": 1, "maxLength": 20},
            "times": {"type": "integer", "minimum": 1, "maximum": 3},
        },
        "required": ["text"],
        "additionalProperties": False,
    }

    def __init__(self):
        self.calls = []

    def run(self, ctx, text, times=1):
        self.calls.append((text, times))
        return ToolResult.ok(" ".join([text] * times))


class Counter(Tool):
    name = "count_things"
    cacheable = True
    parameters = {"type": "object", "properties": {"what": {"type": "string"}}}

    def __init__(self):
        self.runs = 0

    def run(self, ctx, what="coins"):
        self.runs += 1
        if what == "nothing":
            return {"success": False, "error": "nothing to count", "suggestion": "count coins"}
        return {"what": what, "count": self.runs}


def make_tool(name="t", category=ToolCategory.SAFE_CHAIN, lock="", **attrs):
    cls = type(
        f"Tool_{name}",
        (Tool,),
        {
            "name": name,
            "category": category,
            "lock": lock,
            "run": lambda self, ctx, **kw: "done",
            **attrs,
        },
    )
    return cls()


# -- categories, results, schema ----------------------------------------------------------------
def test_categories_are_plain_strings():
    assert ALL_CATEGORIES == ("SAFE_CHAIN", "ASYNC_REQUIRED", "TERMINAL", "DANGEROUS")
    assert ToolCategory.DANGEROUS == "DANGEROUS" and ToolCategory.DANGEROUS in ["DANGEROUS"]
    assert (
        tools_package.ToolCategory is ToolCategory and tools_package.TOOL_REGISTRY is TOOL_REGISTRY
    )


def test_result_text_for_the_model():
    assert ToolResult.ok("You say hello.").to_text() == "You say hello."
    assert json.loads(ToolResult.ok({"room": "Tavern", "exits": ["north"]}).to_text()) == {
        "room": "Tavern",
        "exits": ["north"],
    }
    assert json.loads(ToolResult.ok().to_text()) == {"success": True}
    assert ToolResult.ok({"name": "Müller"}).to_text() == '{"name": "Müller"}'
    failure = ToolResult.fail(
        "No such exit.", suggestion="try 'north'", available=["north"], secret=1
    )
    assert json.loads(failure.to_text()) == {
        "success": False,
        "error": "No such exit.",
        "suggestion": "try 'north'",
        "available": ["north"],
    }
    assert failure.data["secret"] == 1 and not failure.success
    looped = {"a": 1}
    looped["self"] = looped
    assert isinstance(ToolResult.ok(looped).to_text(), str)  # never raises
    assert ToolResult.ok("x", terminal=True, pending=True).terminal


def test_normalise_result():
    assert normalise_result("hi") == ToolResult.ok("hi")
    assert normalise_result(None) == ToolResult.ok(None)
    assert normalise_result({"success": True, "n": 1}).content == {"success": True, "n": 1}
    failed = normalise_result({"success": False, "error": "nope", "suggestion": "other"})
    assert (failed.success, failed.error, failed.data) == (False, "nope", {"suggestion": "other"})
    assert normalise_result({"success": False}).error == "failed"
    same = ToolResult.fail("x")
    assert normalise_result(same) is same


def test_to_schema():
    schema = Echo().to_schema()
    assert schema == {
        "type": "function",
        "function": {
            "name": "echo",
            "description": "Repeat a text.",
            "parameters": Echo.parameters,
        },
    }
    bare = make_tool("bare", parameters=None)
    assert bare.to_schema()["function"]["parameters"] == {"type": "object", "properties": {}}


def test_timeouts():
    assert make_tool("slow", timeout=5).get_timeout() == 5.0
    assert make_tool("default").get_timeout() == 30.0
    with override_settings(EVENNIA_AI_TOOL_TIMEOUT=12):
        assert make_tool("default").get_timeout() == 12.0
    with override_settings(EVENNIA_AI_TOOL_TIMEOUT="soon"):
        assert make_tool("default").get_timeout() == 30.0


def test_pure_modules_import_no_framework():
    code = (
        "import sys\n"
        "import evennia_ai.llm.tokens, evennia_ai.tools, evennia_ai.tools.base, "
        "evennia_ai.tools.registry, evennia_ai.tools.rules\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('django', 'evennia', 'twisted', 'litellm')]\n"
        "print(bad)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[3],
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


# -- validation ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "args, problem",
    [
        ({"text": "hi"}, None),
        ({"text": "hi", "times": 3}, None),
        ({"text": "hi", "times": 2.0}, None),  # JSON cannot tell 2 from 2.0
        ({}, "missing required argument 'text'"),
        ({"text": 5}, "text must be a string, not integer"),
        ({"text": ""}, "text must be at least 1 characters long"),
        ({"text": "x" * 21}, "text must be at most 20 characters long"),
        ({"text": "hi", "times": 0}, "times must be >= 1 (got 0)"),
        ({"text": "hi", "times": 4}, "times must be <= 3 (got 4)"),
        ({"text": "hi", "times": 2.5}, "times must be an integer, not number"),
        ({"text": "hi", "times": True}, "times must be an integer, not boolean"),
        ({"text": "hi", "loud": True}, "unexpected argument 'loud' (accepted: text, times)"),
        (["hi"], "arguments must be an object, not array"),
        ("hi", "arguments must be an object, not string"),
    ],
)
def test_validate_arguments(args, problem):
    problems = Echo().validate_arguments(args)
    assert problems == ([] if problem is None else [problem])


def test_validation_keywords():
    schema = {
        "type": "object",
        "properties": {
            "mode": {"enum": ["fast", "slow", 1]},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2},
            "who": {"type": ["string", "null"]},
            "ratio": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
            "where": {
                "type": "object",
                "properties": {"x": {"type": "integer"}},
                "required": ["x"],
                "additionalProperties": {"type": "integer"},
            },
        },
    }

    def check(value):
        return validate_value(value, schema, "arguments")

    assert (
        check({"mode": "fast", "tags": ["a"], "who": None, "ratio": 0.5, "where": {"x": 1, "y": 2}})
        == []
    )
    assert check({"mode": 1.0}) == []
    assert check({"mode": True}) == ['mode must be one of: "fast", "slow", 1 (got true)']
    assert check({"tags": []}) == ["tags needs at least 1 items"]
    assert check({"tags": ["a", "b", "c"]}) == ["tags takes at most 2 items"]
    assert check({"tags": ["a", 3]}) == ["tags[1] must be a string, not integer"]
    assert check({"who": 3}) == ["who must be a string or null, not integer"]
    assert check({"ratio": 0}) == ["ratio must be > 0 (got 0)"]
    assert check({"ratio": 1}) == ["ratio must be < 1 (got 1)"]
    assert check({"ratio": math.nan}) == ["ratio must be a finite number (got NaN)"]
    assert check({"ratio": -math.inf}) == ["ratio must be a finite number (got -Infinity)"]
    assert check({"where": {}}) == ["where is missing required field 'x'"]
    assert check({"where": {"x": 1, "y": "far"}}) == ["where.y must be an integer, not string"]
    assert len(check({"mode": "x", "tags": [], "who": 1})) == 3  # every problem at once


def test_malformed_schemas_never_raise():
    weird = [
        {"type": "object", "enum": 5, "required": "text", "properties": ["x"]},
        {"type": "strnig", "minLength": "three", "maximum": None},
        {"type": ["integer", 7], "minimum": "low"},
        {"items": "everything", "minItems": {}},
        "not a schema",
        None,
    ]
    for schema in weird:
        for value in ({"x": 1}, "abc", 3, [1, 2], None, True):
            assert isinstance(validate_value(value, schema), list)


def test_deeply_nested_arguments_are_refused():
    schema = {"type": "array"}
    schema["items"] = schema  # self-referencing schema
    value = []
    for _ in range(100):
        value = [value]
    problems = validate_value(value, schema)
    assert problems and "nested too deeply" in problems[0]


def test_schema_problems():
    assert schema_problems(Echo.parameters) == []
    assert schema_problems({"type": "object", "properties": {"n": {"type": "int"}}}) == [
        "parameters.n: unknown type 'int' (known: string, integer, number, boolean, object, array, null)"
    ]
    assert schema_problems({"type": "string"}) == ['parameters must have "type": "object"']
    assert schema_problems([]) == ["parameters must be a JSON schema dict, not list"]
    assert (
        len(
            schema_problems(
                {
                    "type": "object",
                    "required": "x",
                    "enum": 1,
                    "minimum": "0",
                    "properties": {"a": 5},
                }
            )
        )
        == 4
    )


def check_args(schema, value):
    return validate_value(value, {"type": "object", "properties": schema}, "arguments")


@pytest.mark.parametrize(
    "schema, good, bad, problem",
    [
        # strings
        (
            {"type": "string", "pattern": "^[a-z]+$"},
            "inn",
            "Inn",
            'x must match the pattern "^[a-z]+$" (got "Inn")',
        ),
        (
            {"type": "string", "format": "date"},
            "2026-11-24",
            "tomorrow",
            'x must be a valid date (got "tomorrow")',
        ),
        (
            {"type": "string", "format": "email"},
            "a@b.c",
            "nobody",
            'x must be a valid email (got "nobody")',
        ),
        # numbers
        ({"type": "integer", "multipleOf": 5}, 10, 12, "x must be a multiple of 5 (got 12)"),
        ({"type": "number", "exclusiveMinimum": 0}, 0.1, 0, "x must be > 0 (got 0)"),
        # constants
        ({"const": "north"}, "north", "south", 'x must be "north" (got "south")'),
        ({"const": 1}, 1.0, True, "x must be 1 (got true)"),
        # arrays
        ({"type": "array", "uniqueItems": True}, [1, 2], [1, 1.0], "x must not repeat an item"),
        (
            {"type": "array", "contains": {"type": "string"}},
            [1, "a"],
            [1, 2],
            "x must contain an item that matches its item schema",
        ),
        (
            {"type": "array", "prefixItems": [{"type": "string"}], "items": False},
            ["a"],
            ["a", 2],
            "x takes at most 1 items",
        ),
        # objects
        ({"type": "object", "minProperties": 1}, {"a": 1}, {}, "x needs at least 1 fields"),
        (
            {"type": "object", "maxProperties": 1},
            {"a": 1},
            {"a": 1, "b": 2},
            "x takes at most 1 fields",
        ),
        (
            {"type": "object", "dependentRequired": {"a": ["b"]}},
            {"a": 1, "b": 2},
            {"a": 1},
            "x needs field 'b' when 'a' is given",
        ),
        (
            {"type": "object", "propertyNames": {"pattern": "^[a-z]+$"}},
            {"ok": 1},
            {"Bad": 1},
            'x has a field name that is not allowed: "Bad"',
        ),
        (
            {
                "type": "object",
                "patternProperties": {"^n_": {"type": "integer"}},
                "additionalProperties": False,
            },
            {"n_a": 1},
            {"m": 1},
            "unexpected field in x 'm' (accepted: none)",
        ),
        # combinators
        (
            {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            3,
            [3],
            "x matches none of the allowed forms; closest: x must be a string, not array",
        ),
        (
            {"oneOf": [{"type": "integer"}, {"type": "number"}]},
            2.5,
            2,
            "x matches more than one of the allowed forms",
        ),
        ({"not": {"type": "null"}}, 0, None, "x is not allowed in this form (got null)"),
        ({"allOf": [{"type": "integer"}, {"minimum": 2}]}, 2, 1, "x must be >= 2 (got 1)"),
        (
            {"if": {"type": "string"}, "then": {"minLength": 2}},
            "ab",
            "a",
            "x must be at least 2 characters long",
        ),
    ],
)
def test_every_keyword_class_is_enforced(schema, good, bad, problem):
    assert schema_problems({"type": "object", "properties": {"x": schema}}) == []
    assert check_args({"x": schema}, {"x": good}) == []
    assert check_args({"x": schema}, {"x": bad}) == [problem]


def test_references_resolve_inside_the_schema_only():
    schema = {
        "type": "object",
        "$defs": {"count": {"type": "integer", "minimum": 0}},
        "properties": {"n": {"$ref": "#/$defs/count"}},
    }
    assert schema_problems(schema) == []
    assert validate_value({"n": 2}, schema, "arguments") == []
    assert validate_value({"n": -1}, schema, "arguments") == ["n must be >= 0 (got -1)"]
    remote = {"type": "object", "properties": {"n": {"$ref": "https://example.com/n.json"}}}
    assert schema_problems(remote) == [
        'parameters.n: $ref "https://example.com/n.json" does not resolve inside the schema;'
        " remote schemas are never fetched"
    ]
    # Used anyway, it fails closed and offline (no network, no traceback).
    assert validate_value({"n": 1}, remote, "arguments")[0].startswith(
        "the tool's schema is invalid"
    )
    dangling = {"type": "object", "properties": {"n": {"$ref": "#/$defs/missing"}}}
    assert "does not resolve" in schema_problems(dangling)[0]


def test_the_declared_draft_decides():
    draft4 = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "object",
        "properties": {"n": {"type": "number", "minimum": 0, "exclusiveMinimum": True}},
    }
    assert schema_problems(draft4) == []
    assert validate_value({"n": 0}, draft4, "arguments") == ["n must be > 0 (got 0)"]
    assert validate_value({"n": 3.0}, draft4, "arguments") == []
    unknown = {"$schema": "https://example.com/my-draft", "type": "object"}
    assert "unknown $schema" in schema_problems(unknown)[0]


def test_non_finite_numbers_are_refused_anywhere():
    schema = {"type": "object"}  # no constraint on the values at all
    assert validate_value({"a": [1, math.nan]}, schema, "arguments") == [
        "a[1] must be a finite number (got NaN)"
    ]
    assert validate_value({"b": {"c": math.inf}}, schema, "arguments") == [
        "b.c must be a finite number (got Infinity)"
    ]


def test_an_invalid_schema_fails_closed():
    bad = {"type": "object", "properties": {"n": {"type": "integer", "minimum": "zero"}}}
    assert schema_problems(bad) == ["parameters.n: 'minimum' must be a number, not string"]
    assert validate_value({"n": 1}, bad, "arguments") == [
        "the tool's schema is invalid: schema.n: 'minimum' must be a number, not string"
    ]
    assert schema_problems({"type": "object", "properties": {"s": {"pattern": "("}}}) == [
        "parameters.s: 'pattern' must be a valid regex"
    ]


def test_a_tool_with_a_pattern_refuses_before_running():
    class Named(Tool):
        name = "named"
        parameters = object_schema({"tag": {"type": "string", "pattern": "^[a-z_]+$"}}, ["tag"])

        def run(self, ctx, tag):  # pragma: no cover - never reached
            raise AssertionError("ran with a refused argument")

    result = Named().safe_run(ToolContext(npc=None), {"tag": "Drop Tables"})
    assert not result.success
    assert result.error == (
        'Invalid arguments for \'named\': tag must match the pattern "^[a-z_]+$" (got "Drop Tables")'
    )


def test_coerce_integers():
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "integer"},
            "x": {"type": "number"},
            "both": {"type": ["integer", "number"]},
            "list": {"type": "array", "items": {"type": "integer"}},
        },
    }
    out = coerce_integers({"n": 3.0, "x": 3.0, "both": 2.0, "list": [1.0, 2], "other": 4.0}, schema)
    assert out == {"n": 3, "x": 3.0, "both": 2.0, "list": [1, 2], "other": 4.0}
    assert type(out["n"]) is int and type(out["x"]) is float and type(out["list"][0]) is int


# -- random schemas -----------------------------------------------------------------------------
json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(max_size=8),
)
json_values = st.recursive(
    json_leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=12,
)


@st.composite
def string_case(draw):
    schema, low, high = {"type": "string"}, 0, 12
    if draw(st.booleans()):
        low = schema["minLength"] = draw(st.integers(0, 4))
    if draw(st.booleans()):
        high = schema["maxLength"] = low + draw(st.integers(0, 8))
    return schema, draw(st.text(min_size=low, max_size=high))


@st.composite
def number_case(draw):
    kind = draw(st.sampled_from(["integer", "number"]))
    low = draw(st.integers(-1000, 1000))
    high = low + draw(st.integers(0, 1000))
    schema = {"type": kind}
    if draw(st.booleans()):
        schema["minimum"] = low
    if draw(st.booleans()):
        schema["maximum"] = high
    if kind == "integer":
        value = draw(st.integers(low, high))
        if draw(st.booleans()):
            value = float(value)  # an integral float is an integer
    else:
        value = draw(st.floats(low, high, allow_nan=False, allow_infinity=False))
    return schema, value


@st.composite
def enum_case(draw):
    options = draw(st.lists(json_leaf, min_size=1, max_size=5))
    return {"enum": options}, draw(st.sampled_from(options))


simple_cases = st.one_of(
    string_case(),
    number_case(),
    enum_case(),
    st.just(({"type": "boolean"}, True)),
    st.just(({"type": "null"}, None)),
    st.tuples(st.just({"type": ["string", "null"]}), st.one_of(st.none(), st.text(max_size=5))),
    st.tuples(st.just({}), json_values),  # no constraint at all
)


@st.composite
def array_case(draw, children):
    item_schema, item_value = draw(children)
    count = draw(st.integers(0, 4))
    schema = {"type": "array", "items": item_schema}
    if draw(st.booleans()):
        schema["minItems"] = draw(st.integers(0, count))
    if draw(st.booleans()):
        schema["maxItems"] = count + draw(st.integers(0, 3))
    return schema, [item_value] * count


@st.composite
def object_case(draw, children):
    fields = draw(
        st.dictionaries(st.from_regex(r"[a-z]{1,6}", fullmatch=True), children, max_size=4)
    )
    required = [name for name in fields if draw(st.booleans())]
    schema = {
        "type": "object",
        "properties": {n: s for n, (s, _) in fields.items()},
        "required": required,
    }
    if draw(st.booleans()):
        schema["additionalProperties"] = False
    value = {n: v for n, (_, v) in fields.items() if n in required or draw(st.booleans())}
    return schema, value


cases = st.recursive(
    simple_cases,
    lambda children: st.one_of(array_case(children), object_case(children)),
    max_leaves=8,
)


@hsettings(max_examples=200, deadline=None)
@given(cases)
def test_valid_by_construction_passes(case):
    schema, value = case
    assert validate_value(value, schema) == []
    coerced = coerce_integers(value, schema)
    assert validate_value(coerced, schema) == []
    assert coerced == value  # ints for integral floats, nothing else changed


@hsettings(max_examples=200, deadline=None)
@given(cases, json_values)
def test_any_value_against_any_schema_never_raises(case, value):
    problems = validate_value(value, case[0], "arguments")
    assert isinstance(problems, list) and all(isinstance(p, str) and p for p in problems)


garbage_schemas = st.recursive(
    st.dictionaries(
        st.sampled_from(
            [
                "type",
                "enum",
                "required",
                "properties",
                "items",
                "minimum",
                "maximum",
                "minLength",
                "maxLength",
                "minItems",
                "maxItems",
                "additionalProperties",
                "exclusiveMinimum",
            ]
        ),
        json_values,
        max_size=5,
    ),
    lambda inner: st.dictionaries(
        st.sampled_from(["properties", "items", "additionalProperties"]),
        st.one_of(inner, st.dictionaries(st.text(max_size=3), inner, max_size=3)),
        max_size=3,
    ),
    max_leaves=6,
)


@hsettings(max_examples=200, deadline=None)
@given(garbage_schemas, json_values)
def test_garbage_schemas_never_raise(schema, value):
    assert isinstance(validate_value(value, schema), list)
    assert isinstance(schema_problems(schema), list)
    coerce_integers(value, schema)


# -- safe_run -----------------------------------------------------------------------------------
def test_safe_run_validates_before_running():
    tool, ctx = Echo(), ToolContext()
    result = tool.safe_run(ctx, {"text": "hi", "times": 9})
    assert not result.success and tool.calls == []
    assert result.error == "Invalid arguments for 'echo': times must be <= 3 (got 9)"
    assert tool.safe_run(ctx, {"text": "hi", "times": 2.0}).content == "hi hi"
    assert tool.calls == [("hi", 2)] and type(tool.calls[0][1]) is int
    assert not tool.safe_run(ctx, None).success  # None means no arguments: 'text' is missing


def test_safe_run_explains_what_run_does_not_take():
    class Loose(Tool):
        name = "loose"
        parameters = {"type": "object", "properties": {}}

        def run(self, ctx, target, mood="calm"):
            return target

    result = Loose().safe_run(ToolContext(), {"target": "Bob", "volume": 3})
    assert result.error == (
        "Invalid arguments for 'loose': unexpected argument 'volume' " "(accepted: target, mood)"
    )
    result = Loose().safe_run(ToolContext(), {})
    assert result.error == "Invalid arguments for 'loose': missing required argument 'target'"
    assert make_tool("kw").safe_run(ToolContext(), {"anything": 1}).content == "done"


class ListHandler(logging.Handler):
    """Collects the messages of the plugin's logger."""

    def __init__(self):
        super().__init__()
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


@pytest.fixture
def plugin_log():
    handler = ListHandler()
    logging.getLogger("evennia_ai").addHandler(handler)
    yield handler.messages
    logging.getLogger("evennia_ai").removeHandler(handler)


def test_safe_run_turns_exceptions_into_results(plugin_log):
    logged = plugin_log

    class Broken(Tool):
        name = "broken"

        def run(self, ctx):
            raise KeyError("the cellar key " + "x" * 500)

    result = Broken().safe_run(ToolContext(), {})
    assert not result.success
    assert result.error.startswith("'broken' failed: 'the cellar key xxx")
    assert len(result.error) < 340 and result.error.endswith("...")
    assert "Traceback" not in result.to_text()
    assert logged == ["evennia_ai: tool 'broken' raised"]

    class Silent(Tool):
        name = "silent"

        def run(self, ctx):
            raise RuntimeError()

    assert Silent().safe_run(ToolContext(), {}).error == "'silent' failed: RuntimeError"


def test_cacheable_results_within_a_tick():
    tool, ctx = Counter(), ToolContext()
    first = tool.safe_run(ctx, {"what": "mugs"})
    assert tool.safe_run(ctx, {"what": "mugs"}) is first and tool.runs == 1
    assert tool.safe_run(ctx, {"what": "plates"}).content["count"] == 2
    assert not tool.safe_run(ctx, {"what": "nothing"}).success
    assert not tool.safe_run(ctx, {"what": "nothing"}).success and tool.runs == 4  # failures rerun
    assert tool.safe_run(ToolContext(), {"what": "mugs"}).content["count"] == 5  # a new tick
    assert ("count_things", '{"what": "mugs"}') in ctx.cache
    ctx.cache[("other", "{}")] = ToolResult.ok()
    ctx.invalidate("count_things")
    assert list(ctx.cache) == [("other", "{}")]
    ctx.invalidate()
    assert ctx.cache == {}
    assert tool.safe_run(ctx, {"what": "mugs"}).content["count"] == 6


def test_non_cacheable_tools_always_run():
    tool = Echo()
    ctx = ToolContext()
    tool.safe_run(ctx, {"text": "a"})
    tool.safe_run(ctx, {"text": "a"})
    assert len(tool.calls) == 2 and ctx.cache == {}


class Slow(Tool):
    name = "slow_lookup"
    category = ToolCategory.ASYNC_REQUIRED
    cacheable = True
    parameters = {"type": "object", "properties": {"fail": {"type": "boolean"}}}

    def __init__(self):
        self.pending = []

    def run(self, ctx, fail=False):
        d = defer.Deferred()
        self.pending.append((d, fail))
        return d


def test_deferred_results_are_normalised_and_cached():
    tool, ctx = Slow(), ToolContext()
    outcome = tool.safe_run(ctx, {})
    assert isinstance(outcome, defer.Deferred)
    got = []
    outcome.addCallback(got.append)
    tool.pending[0][0].callback({"found": 3})
    assert got == [ToolResult.ok({"found": 3})]
    assert tool.safe_run(ctx, {}) is got[0]  # served from the tick cache
    assert len(tool.pending) == 1


def test_failed_deferreds_become_results(monkeypatch):
    from evennia.utils import logger

    monkeypatch.setattr(logger, "log_err", lambda *a, **k: None)
    tool, ctx = Slow(), ToolContext()
    got = []
    tool.safe_run(ctx, {"fail": True}).addCallback(got.append)
    tool.pending[0][0].errback(ConnectionError("memory store down"))
    assert got[0] == ToolResult.fail("'slow_lookup' failed: memory store down")
    assert ctx.cache == {}


# -- registry -----------------------------------------------------------------------------------
def test_register_and_look_up():
    registry = ToolRegistry()

    @registry.register
    class Wave(Tool):
        name = "wave"

        def run(self, ctx):
            return "You wave."

    assert isinstance(Wave, type)  # the decorator hands the class back
    echo = Echo()
    assert registry.register(echo) is echo
    assert registry.names() == ["echo", "wave"]
    assert [t.name for t in registry.all()] == ["echo", "wave"]
    assert registry.get("echo") is echo and "echo" in registry and len(registry) == 2
    assert (
        registry.get("nope") is None and registry.get(None) is None and registry.get(["x"]) is None
    )
    assert [t.name for t in registry] == ["echo", "wave"]
    replacement = make_tool("echo")
    registry.register(replacement)  # the later registration wins
    assert registry.get("echo") is replacement
    assert registry.unregister("echo") and not registry.unregister("echo")


@pytest.mark.parametrize(
    "tool, message",
    [
        (make_tool("bad name"), "name 'bad name' must be 1-64 letters"),
        (make_tool("x" * 65), "must be 1-64 letters"),
        (make_tool(""), "name '' must be"),
        (make_tool("cat", category="SAFE"), "category 'SAFE' is not one of"),
        (
            make_tool("sch", parameters={"type": "object", "properties": {"a": {"type": "int"}}}),
            "unknown type 'int'",
        ),
        (make_tool("lk", lock=5), "lock must be an Evennia lock string"),
    ],
)
def test_register_refuses_malformed_tools(tool, message):
    with pytest.raises(ValueError, match="Cannot register tool") as err:
        ToolRegistry().register(tool)
    assert message in str(err.value)


def test_register_refuses_non_tools():
    with pytest.raises(TypeError, match="is not a Tool"):
        ToolRegistry().register(object())


def test_select_layers_only_restrict():
    registry = ToolRegistry(
        [
            make_tool("look"),
            make_tool("say", ToolCategory.TERMINAL),
            make_tool("recall", ToolCategory.ASYNC_REQUIRED),
            make_tool("execute", ToolCategory.DANGEROUS),
        ]
    )

    def names(**kwargs):
        return [t.name for t in registry.select(**kwargs)]

    assert names() == ["execute", "look", "recall", "say"]
    assert names(tool_filter=[]) == []
    assert names(tool_filter=["look", "say", "unknown"]) == ["look", "say"]
    assert names(tool_filter="say") == ["say"]  # one name, not its letters
    assert names(allowed_categories=["SAFE_CHAIN", "TERMINAL"]) == ["look", "say"]
    assert names(allowed_categories=[]) == []
    assert names(npc_allowed={"look", "execute"}) == ["execute", "look"]
    assert names(npc_allowed=set()) == []
    assert names(npc_denied={"execute"}) == ["look", "recall", "say"]
    assert names(
        tool_filter=["look", "say"],
        allowed_categories=["TERMINAL", "SAFE_CHAIN"],
        npc_allowed={"say", "look", "recall"},
        npc_denied={"look"},
    ) == ["say"]
    assert names(extra_filter=lambda t: t.name != "recall") == ["execute", "look", "say"]

    def explode(tool):
        raise RuntimeError("bad filter")

    assert names(extra_filter=explode) == []


def test_locked_tools_need_an_npc():
    locked = make_tool("build", lock="perm(Builder)")
    assert passes_lock(None, make_tool("free"))
    assert not passes_lock(None, locked)
    assert [t.name for t in ToolRegistry([locked, make_tool("free")]).select()] == ["free"]


def test_default_registry():
    tools_package.load_builtin_tools()
    assert "say" in TOOL_REGISTRY and TOOL_REGISTRY.get("say").category == ToolCategory.TERMINAL

    @register_tool
    class ScratchTool(Tool):
        name = "zz_scratch_test_tool"

        def run(self, ctx):
            return "ok"

    try:
        assert isinstance(TOOL_REGISTRY.get("zz_scratch_test_tool"), ScratchTool)
    finally:
        TOOL_REGISTRY.unregister("zz_scratch_test_tool")


class TestToolLocks(BaseEvenniaTest):
    def setUp(self):
        super().setUp()
        self.npc = create_object(
            DefaultCharacter, key="Innkeeper", location=self.room1, home=self.room1
        )

    def test_lock_checked_against_the_npc(self):
        registry = ToolRegistry(
            [
                make_tool("build", lock="perm(Builder)"),
                make_tool("typed", lock="use:perm(Builder)"),
                make_tool("broken", lock="perm(Builder"),
                make_tool("unknownfunc", lock="nosuchlockfunc()"),
                make_tool("free"),
            ]
        )
        self.assertEqual([t.name for t in registry.select(self.npc)], ["free"])
        self.npc.permissions.add("Builder")
        self.assertEqual([t.name for t in registry.select(self.npc)], ["build", "free", "typed"])
        self.assertEqual(
            [t.name for t in registry.select(self.npc, npc_denied={"build"})], ["free", "typed"]
        )

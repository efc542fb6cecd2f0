"""Prompt templates: built-ins, placeholder extraction, strict and safe rendering (pure)."""

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evennia_ai.prompt.templates import (
    PromptTemplate,
    TemplateRenderError,
    builtin_template_keys,
    extract_placeholders,
    get_default_template,
    get_fallback_template,
    get_template,
    list_builtin_templates,
    render_template,
    safe_render_template,
)

REFLECTION_METRICS = [
    "ticks_since_reflection",
    "tool_calls",
    "tool_failures",
    "journal_entries",
    "goals_completed",
    "recent_errors",
]


def test_builtin_templates():
    keys = [t.key for t in list_builtin_templates()]
    assert keys == ["default", "default_fallback", "reflection"] == builtin_template_keys()
    for template in list_builtin_templates():
        assert isinstance(template, PromptTemplate)
        assert template.is_builtin and template.name and template.description
        # The declared placeholders are exactly the ones the text uses.
        assert sorted(template.placeholders) == sorted(extract_placeholders(template.content))
        assert template.to_dict()["content"] == template.content


def test_default_template():
    template = get_default_template()
    assert (template.key, template.category) == ("default", "system_prompt")
    assert "tick_rate" in template.placeholders
    text = render_template(template, tick_rate=5)
    assert "every 5 seconds" in text and "{" not in text
    assert "tool" in text.lower()


def test_fallback_template_explains_the_json_protocol():
    template = get_fallback_template()
    assert (template.key, template.category) == ("default_fallback", "system_prompt")
    assert set(template.placeholders) == {"tick_rate", "tool_schemas"}
    text = render_template(template, tick_rate=3, tool_schemas="- say(message)")
    assert "- say(message)" in text and "every 3 seconds" in text
    # The literal JSON examples survive rendering and are valid JSON.
    examples = [line for line in text.splitlines() if line.startswith("{")]
    parsed = [json.loads(line) for line in examples]
    assert any("tool" in p and "arguments" in p for p in parsed)
    assert any("tool_calls" in p for p in parsed)
    assert "plain text" in text


def test_reflection_template():
    template = get_template("reflection")
    assert template.category == "reflection"
    assert template.placeholders == REFLECTION_METRICS
    text = render_template(template, **{m: i for i, m in enumerate(REFLECTION_METRICS)})
    assert "ticks: 0" in text and not extract_placeholders(text)


def test_get_template_unknown_and_copies():
    assert get_template("nope") is None
    template = get_template("default")
    template.content = "x"
    template.placeholders.append("y")
    assert get_template("default").content != "x"
    assert get_template("default").placeholders == ["tick_rate"]


def test_extract_placeholders():
    assert extract_placeholders("Hi {name}, {name} {mood_2}") == ["name", "mood_2"]
    assert extract_placeholders('{"tool": "say"} {} {{ }} {{escaped}} {1x} { sp }') == []
    assert extract_placeholders("") == []
    assert extract_placeholders(None) == []


def test_render_template_and_str_values():
    assert render_template("Hello {name}", name="Alice") == "Hello Alice"
    assert render_template("{n} + {n}", n=2) == "2 + 2"
    assert render_template("{x}", x=None) == "None"
    assert render_template(PromptTemplate("k", "K", "", "a {b}"), b=[1]) == "a [1]"
    assert render_template("no placeholders", unused=1) == "no placeholders"


def test_render_template_names_every_missing_placeholder():
    with pytest.raises(TemplateRenderError) as info:
        render_template("{a} {b} {c}", b=1)
    err = info.value
    assert isinstance(err, KeyError)
    assert err.missing == ["a", "c"]
    assert "a" in str(err) and "c" in str(err) and not str(err).startswith("'")


def test_safe_render_leaves_missing():
    assert safe_render_template("Hello {name}, {missing}", name="Alice") == "Hello Alice, {missing}"
    assert safe_render_template("{a}") == "{a}"


def test_literal_braces_survive_both_renders():
    text = 'Answer {"tool": "say", "arguments": {}} or {{ or }} or {} for {name}. {{name}}'
    expected = 'Answer {"tool": "say", "arguments": {}} or {{ or }} or {} for Bob. {{name}}'
    assert render_template(text, name="Bob") == expected
    assert safe_render_template(text, name="Bob") == expected
    assert safe_render_template(text) == text


def test_values_are_not_rendered_again():
    assert render_template("{a} {b}", a="{b}", b="x") == "{b} x"


_ident = st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True)
_literal = st.text(alphabet=st.characters(blacklist_characters="{}"), max_size=20)


@settings(max_examples=150, deadline=None)
@given(
    parts=st.lists(st.tuples(_literal, _ident), max_size=6),
    tail=_literal,
    values=st.dictionaries(_ident, st.text(max_size=10), max_size=6),
)
def test_render_properties(parts, tail, values):
    content = "".join(f"{lit}{{{name}}}" for lit, name in parts) + tail
    names = [name for _, name in parts]
    assert set(extract_placeholders(content)) == set(names)
    missing = sorted({n for n in names if n not in values})
    if missing:
        with pytest.raises(TemplateRenderError) as info:
            render_template(content, **values)
        assert sorted(info.value.missing) == missing
    else:
        expected = "".join(lit + str(values[name]) for lit, name in parts) + tail
        assert render_template(content, **values) == expected
    # safe render fills what it can and keeps the rest verbatim
    safe = safe_render_template(content, **values)
    expected = (
        "".join(
            lit + (str(values[name]) if name in values else "{" + name + "}") for lit, name in parts
        )
        + tail
    )
    assert safe == expected


@settings(max_examples=100, deadline=None)
@given(
    obj=st.recursive(
        st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=8)),
        lambda children: st.one_of(
            st.lists(children, max_size=3),
            st.dictionaries(st.text(max_size=6), children, max_size=3),
        ),
        max_leaves=8,
    )
)
def test_json_text_survives(obj):
    text = json.dumps(obj)
    if re.search(r"(?<!\{)\{[A-Za-z_][A-Za-z0-9_]*\}(?!\})", text):
        return  # a JSON string that happens to hold a placeholder-shaped text
    assert safe_render_template(text, x=1) == text
    assert render_template(text) == text

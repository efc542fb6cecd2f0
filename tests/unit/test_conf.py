"""Settings: defaults, settings.py, environment precedence, and the generated reference."""

import ast
from pathlib import Path
from unittest import mock

import pytest
from django.test import override_settings

from evennia_ai import conf
from evennia_ai.memory import search


def test_defaults():
    assert conf.get("EVENNIA_AI_TIMEOUT") == 30.0
    assert conf.get("EVENNIA_AI_TICK_INTERVAL") == 5


def test_settings_override():
    with override_settings(EVENNIA_AI_TICK_INTERVAL=2):
        assert conf.get("EVENNIA_AI_TICK_INTERVAL") == 2


def test_environment_wins_for_env_settings(monkeypatch):
    monkeypatch.setenv("EVENNIA_AI_MODEL", "openai/env-model")
    monkeypatch.setenv("EVENNIA_AI_FALLBACK_MODELS", "a/b, c/d")
    monkeypatch.setenv("EVENNIA_AI_TIMEOUT", "2.5")
    with override_settings(EVENNIA_AI_MODEL="openai/settings-model"):
        assert conf.get("EVENNIA_AI_MODEL") == "openai/env-model"
    assert conf.get("EVENNIA_AI_FALLBACK_MODELS") == ["a/b", "c/d"]
    assert conf.get("EVENNIA_AI_TIMEOUT") == 2.5


def test_environment_ignored_for_other_settings(monkeypatch):
    monkeypatch.setenv("EVENNIA_AI_TICK_INTERVAL", "99")
    assert conf.get("EVENNIA_AI_TICK_INTERVAL") == 5


def test_unknown_setting():
    with pytest.raises(KeyError):
        conf.get("EVENNIA_AI_NOPE")


def test_configuration_doc_is_current():
    doc = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
    assert (
        doc.read_text() == conf.render_settings_markdown()
    ), "docs/configuration.md is stale: run scripts/gen_config_docs.py"


# -- typed settings: each setting returns its declared type; a bad value is handled here -------
CONVERSIONS = {"int", "float", "bool", "str"}
PACKAGE = Path(__file__).resolve().parents[2] / "evennia_ai"


@pytest.fixture
def warned():
    """``conf``'s log, with the values logged so far forgotten."""
    conf.forget_unreadable()
    with mock.patch.object(conf._log, "warning") as warning:
        yield warning
    conf.forget_unreadable()


def test_an_int_given_a_word_is_its_default_and_logged_once(warned):
    with override_settings(EVENNIA_AI_TICK_INTERVAL="abc"):
        for _ in range(3):
            assert conf.get("EVENNIA_AI_TICK_INTERVAL") == 5
            assert conf.get_int("EVENNIA_AI_TICK_INTERVAL") == 5
        assert conf.lookup("EVENNIA_AI_TICK_INTERVAL") == (5, conf.FROM_DEFAULT_INSTEAD)
    assert warned.call_count == 1
    line = warned.call_args.args[0]
    assert line.startswith("evennia_ai: EVENNIA_AI_TICK_INTERVAL = 'abc' cannot be read")
    assert "does not read as a number" in line and "a whole number of at least 1" in line
    assert "its default 5 is used instead" in line
    with override_settings(EVENNIA_AI_TICK_INTERVAL="xyz"):  # another bad value: logged too
        assert conf.get("EVENNIA_AI_TICK_INTERVAL") == 5
    assert warned.call_count == 2


def test_a_number_as_text_is_read_as_the_number(warned):
    with override_settings(EVENNIA_AI_TICK_INTERVAL="7", EVENNIA_AI_TIMEOUT="2.5"):
        assert conf.get("EVENNIA_AI_TICK_INTERVAL") == 7
        assert type(conf.get("EVENNIA_AI_TICK_INTERVAL")) is int
        assert conf.get_float("EVENNIA_AI_TIMEOUT") == 2.5
    with override_settings(EVENNIA_AI_TIMEOUT=60, EVENNIA_AI_TICK_INTERVAL=3.0):
        assert type(conf.get("EVENNIA_AI_TIMEOUT")) is float  # an int for a float setting
        assert type(conf.get("EVENNIA_AI_TICK_INTERVAL")) is int  # a whole float for an int
    assert warned.call_count == 0


@pytest.mark.parametrize(
    "name, bad, default, problem",
    [
        ("EVENNIA_AI_NPC_EXCHANGE_TURNS", -1, 4, "below 0"),
        ("EVENNIA_AI_RESERVED_RESPONSE_TOKENS", -5, 1024, "below 0"),
        ("EVENNIA_AI_THINKING_DELAY", -0.5, 2.0, "below 0"),
        ("EVENNIA_AI_TICK_INTERVAL", 0, 5, "below 1"),
        ("EVENNIA_AI_TICK_INTERVAL", 2.5, 5, "not a whole number"),
        ("EVENNIA_AI_TIMEOUT", 0, 30.0, "not above 0"),
        ("EVENNIA_AI_TOOL_RESULT_SHARE", 3, 0.25, "above 1"),
        ("EVENNIA_AI_TIMEOUT", float("nan"), 30.0, "not a finite number"),
        ("EVENNIA_AI_TRACE_RING_SIZE", True, 50, "true or false, not a number"),
        ("EVENNIA_AI_MODEL", 42, "", "not a text"),
        ("EVENNIA_AI_MODEL_SETTINGS", ["openai/x"], {}, "not a dict"),
        ("EVENNIA_AI_CORE_TOOLS", ["say", 3], None, "not a text"),
        ("EVENNIA_AI_RECALL_MODE", "sideways", "auto", "not one of them"),
        ("EVENNIA_AI_SLEEP_SCHEDULE", ("25:00", "06:00"), None, "not a time of day"),
    ],
)
def test_a_bad_value_is_the_default_and_says_why(warned, name, bad, default, problem):
    if default is None and conf.SETTINGS[name].default is not None:
        default = conf.SETTINGS[name].default
    with override_settings(**{name: bad}):
        assert conf.get(name) == default
        assert conf.get(name) == default
    assert warned.call_count == 1
    line = warned.call_args.args[0]
    assert name in line and problem in line and f"its default {default!r}" in line


def test_a_bool_given_as_text_reads_as_it_says(warned):
    for text, value in (("false", False), ("False", False), ("off", False), ("0", False)):
        with override_settings(EVENNIA_AI_AUTONOMY=text):
            assert conf.get_bool("EVENNIA_AI_AUTONOMY") is value
    for text in ("true", "yes", "on", "1", 1):
        with override_settings(EVENNIA_AI_GC_FREEZE=False, EVENNIA_AI_MEMORY_GATE=text):
            assert conf.get_bool("EVENNIA_AI_MEMORY_GATE") is True
    assert warned.call_count == 0
    with override_settings(EVENNIA_AI_AUTONOMY="maybe"):
        assert conf.get_bool("EVENNIA_AI_AUTONOMY") is True  # the default
    with override_settings(EVENNIA_AI_AUTONOMY=2):
        assert conf.get_bool("EVENNIA_AI_AUTONOMY") is True
    assert warned.call_count == 2
    assert "none of true, false" in warned.call_args_list[0].args[0]


def test_a_bad_environment_value_is_the_default(warned, monkeypatch):
    monkeypatch.setenv("EVENNIA_AI_TIMEOUT", "soon")
    assert conf.lookup("EVENNIA_AI_TIMEOUT") == (30.0, conf.FROM_DEFAULT_INSTEAD)
    monkeypatch.setenv("EVENNIA_AI_TIMEOUT", "-3")
    assert conf.get("EVENNIA_AI_TIMEOUT") == 30.0
    assert warned.call_count == 2


@pytest.mark.parametrize(
    "name, garbage, strict",
    [
        ("EVENNIA_AI_DAILY_TOKEN_BUDGET_PER_NPC", "lots", 0),
        ("EVENNIA_AI_DAILY_TOKEN_BUDGET_SERVER", -1, 0),
        ("EVENNIA_AI_DAILY_TOKEN_BUDGET_SERVER", 2.5, 0),
        ("EVENNIA_AI_DAILY_COST_BUDGET_PER_NPC", "cheap", 0.0),
        ("EVENNIA_AI_DAILY_COST_BUDGET_SERVER", [5], 0.0),
        ("EVENNIA_AI_BUDGET_EXCEEDED_ACTION", "explode", "message"),
        ("EVENNIA_AI_HELPER_TOKEN_BUDGET", "abc", 20000),
        ("EVENNIA_AI_HELPER_TOOLS_UNRESTRICTED", "maybe", False),
        ("EVENNIA_AI_SPEAKER_EVENTS_PER_MINUTE", "off", 20),
    ],
)
def test_a_budget_or_security_setting_given_garbage_fails_closed(warned, name, garbage, strict):
    with override_settings(**{name: garbage}):
        assert conf.lookup(name) == (strict, conf.FROM_STRICT)
        assert name in conf.unreadable_settings()
        assert conf.get(name) == strict
    assert warned.call_count == 1
    assert f"its strictest value {strict!r} is used instead" in warned.call_args.args[0]


def test_a_budget_of_none_or_0_is_no_limit_and_a_number_is_read():
    for value in (None, "", 0, 0.0):
        with override_settings(EVENNIA_AI_DAILY_TOKEN_BUDGET_SERVER=value):
            assert conf.get_optional_int("EVENNIA_AI_DAILY_TOKEN_BUDGET_SERVER") is None
    with override_settings(EVENNIA_AI_DAILY_TOKEN_BUDGET_SERVER="1000"):
        assert conf.get_optional_int("EVENNIA_AI_DAILY_TOKEN_BUDGET_SERVER") == 1000
    with override_settings(EVENNIA_AI_DAILY_COST_BUDGET_SERVER=5):
        assert conf.get_optional_float("EVENNIA_AI_DAILY_COST_BUDGET_SERVER") == 5.0
    assert conf.unreadable_settings() == {}


def test_unreadable_secrets_hold_every_assistant(warned):
    with override_settings(EVENNIA_AI_SECRETS={"vault": 4711}):
        assert conf.get_texts("EVENNIA_AI_SECRETS") == []
        assert conf.holding_problems() == ["EVENNIA_AI_SECRETS cannot be read"]
    assert "every assistant's model calls stop" in warned.call_args.args[0]
    assert conf.holding_problems() == []


def _typed_reader(setting: conf.Setting):
    """The typed reader of ``setting``'s declared kind."""
    kind = setting.kind
    if kind.type is tuple:
        return conf.get_optional_pair
    if kind.type is object:  # passed on unread (a store's configuration)
        return conf.get
    name = {int: "int", float: "float", bool: "bool", str: "str", dict: "dict", list: "list"}
    reader = ("get_optional_" if kind.optional else "get_") + name[kind.type]
    if kind.label == "list[str]":
        reader = "get_texts"
    return getattr(conf, reader)


@pytest.mark.parametrize("name", list(conf.SETTINGS))
def test_every_setting_returns_its_declared_type(name):
    setting = conf.SETTINGS[name]
    kind = setting.kind
    assert isinstance(kind, conf.Kind), f"{name} declares no type"
    default = setting.default
    assert (default is None and kind.optional) or type(default) is kind.type
    assert setting.read(default) == default, f"{name}'s default is not of its own type"
    reader = _typed_reader(setting)
    with override_settings(**{name: default}):
        value = reader(name)
        assert value == default and type(value) is type(default)
        assert conf.lookup(name) == (default, conf.FROM_SETTINGS)
    if setting.fail_closed:  # the value used instead of an unreadable one: of the type too
        assert type(setting.strict) is kind.type
    assert kind.label in conf.render_settings_markdown()


def test_a_typed_reader_refuses_a_setting_of_another_type():
    with pytest.raises(TypeError, match="EVENNIA_AI_TIMEOUT is declared float > 0"):
        conf.get_int("EVENNIA_AI_TIMEOUT")
    with pytest.raises(TypeError):
        conf.get_int("EVENNIA_AI_DAILY_TOKEN_BUDGET_SERVER")  # int or None
    with pytest.raises(TypeError):
        conf.get_texts("EVENNIA_AI_LITELLM_CALLBACKS")  # a list of anything


def test_lists_read_from_one_text():
    with override_settings(EVENNIA_AI_LITELLM_CALLBACKS="langfuse, otel"):
        assert conf.get_list("EVENNIA_AI_LITELLM_CALLBACKS") == ["langfuse", "otel"]
    with override_settings(EVENNIA_AI_FALLBACK_MODELS="a/b,c/d"):
        assert conf.get_texts("EVENNIA_AI_FALLBACK_MODELS") == ["a/b", "c/d"]
    with override_settings(EVENNIA_AI_BUILDER_MODELS="openai/gpt-4o"):
        assert conf.get_texts("EVENNIA_AI_BUILDER_MODELS") == ["openai/gpt-4o"]


def test_the_recall_modes_are_the_search_modes():
    assert conf.SETTINGS["EVENNIA_AI_RECALL_MODE"].kind.choices == search.MODES


def test_the_reference_shows_each_setting_s_type():
    doc = conf.render_settings_markdown()
    assert "| setting | type | default | env | meaning |" in doc
    assert "| `EVENNIA_AI_TICK_INTERVAL` | int ≥ 1 | `5` |" in doc
    assert "| `EVENNIA_AI_DAILY_TOKEN_BUDGET_SERVER` | int ≥ 0 or None | `None` |" in doc


def _conversions(path: Path) -> list[str]:
    """``int(conf.get(...))``-like calls in ``path``: a conversion of a setting's value, also
    behind ``or`` (``int(conf.get(...) or 0)``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in CONVERSIONS
            and node.args
        ):
            continue
        inner = node.args[0]
        either = isinstance(inner, ast.BoolOp) and isinstance(inner.op, ast.Or)
        candidates = inner.values if either else [inner]
        for candidate in candidates:
            if (
                isinstance(candidate, ast.Call)
                and isinstance(candidate.func, ast.Attribute)
                and isinstance(candidate.func.value, ast.Name)
                and candidate.func.value.id == "conf"
                and (candidate.func.attr in ("get", "lookup") or candidate.func.attr[:4] == "get_")
            ):
                found.append(f"{path.relative_to(PACKAGE).as_posix()}:{node.lineno}")
    return found


def test_no_module_converts_a_setting_s_value_itself():
    """``conf`` returns the declared type and handles a bad value: a caller's own
    ``int(conf.get(...))`` would handle it its own way again."""
    found = [site for path in sorted(PACKAGE.rglob("*.py")) for site in _conversions(path)]
    assert not found, "read these settings with conf.get_int/get_float/...:\n" + "\n".join(found)


def test_a_setting_changed_at_run_time_is_seen_by_the_next_read():
    """``conf`` reads the settings object behind Django's lazy proxy: a value assigned
    directly, one ``override_settings`` puts in and takes out, and one deleted are each seen
    at once (no read is remembered)."""
    from django.conf import settings

    name = "EVENNIA_AI_CONTEXT_BUFFER_SIZE"
    assert conf.lookup(name) == (20, conf.FROM_DEFAULT)
    try:
        settings.EVENNIA_AI_CONTEXT_BUFFER_SIZE = 7
        assert conf.lookup(name) == (7, conf.FROM_SETTINGS)
        settings.EVENNIA_AI_CONTEXT_BUFFER_SIZE = 8
        assert conf.get_int(name) == 8
        with override_settings(EVENNIA_AI_CONTEXT_BUFFER_SIZE=3):
            assert conf.get_int(name) == 3
            with override_settings(EVENNIA_AI_CONTEXT_BUFFER_SIZE="many"):
                assert conf.lookup(name) == (20, conf.FROM_DEFAULT_INSTEAD)
            assert conf.get_int(name) == 3
        assert conf.get_int(name) == 8
    finally:
        del settings.EVENNIA_AI_CONTEXT_BUFFER_SIZE
    assert conf.lookup(name) == (20, conf.FROM_DEFAULT)


def test_settings_not_configured_read_as_defaults():
    """Before Django's settings are configured, a setting reads as its default (and the
    settings are not loaded by the read)."""
    from django.conf import settings
    from django.utils.functional import empty

    with mock.patch.object(settings, "_wrapped", empty):
        assert conf.lookup("EVENNIA_AI_TICK_INTERVAL") == (5, conf.FROM_DEFAULT)
        assert settings._wrapped is empty

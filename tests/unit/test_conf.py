"""Settings: defaults, settings.py, environment precedence, and the generated reference."""

from pathlib import Path

import pytest
from django.test import override_settings

from evennia_ai import conf


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

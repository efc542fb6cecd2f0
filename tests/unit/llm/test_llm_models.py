"""Which model answers: one rule (:mod:`evennia_ai.llm.models`), used by every caller."""

import ast
from pathlib import Path

import pytest
from django.test import override_settings

from evennia_ai import conf
from evennia_ai.llm import models, tokens
from evennia_ai.llm.client import UnifiedLLMClient
from evennia_ai.llm.models import OWN_MODEL, ModelChoice, choose_model, resolve_model
from evennia_ai.npc.setting_sources import FROM_NPC, model_origin

PACKAGE = Path(models.__file__).resolve().parent.parent

# Reads of EVENNIA_AI_MODEL allowed outside llm/models.py, each with its reason.
OTHER_READERS = {
    # the test double falls back to its own model name, not the offline model
    "testing/scripted_model.py",
}


class TestResolveModel:
    def test_the_npcs_own_model_wins_over_the_setting(self):
        with override_settings(EVENNIA_AI_MODEL="openai/server-default"):
            assert resolve_model("ollama/npc-own") == "ollama/npc-own"

    @pytest.mark.parametrize("npc_model", [None, ""])
    def test_no_own_model_means_the_setting(self, npc_model):
        with override_settings(EVENNIA_AI_MODEL="openai/server-default"):
            assert resolve_model(npc_model) == "openai/server-default"
            assert resolve_model() == "openai/server-default"

    @pytest.mark.parametrize("setting", [None, ""])
    def test_nothing_set_means_the_offline_model(self, setting):
        with override_settings(EVENNIA_AI_MODEL=setting):
            assert resolve_model() == conf.OFFLINE_MODEL
            assert resolve_model("") == conf.OFFLINE_MODEL
            assert resolve_model("ollama/npc-own") == "ollama/npc-own"

    def test_the_offline_model_named_by_the_npc_is_kept(self):
        # past a daily budget in "offline" mode the tick names the offline model itself
        with override_settings(EVENNIA_AI_MODEL="openai/server-default"):
            assert resolve_model(conf.OFFLINE_MODEL) == conf.OFFLINE_MODEL

    def test_a_name_is_used_as_given(self):
        # not stripped nor lowered: the request names the model exactly as before
        with override_settings(EVENNIA_AI_MODEL="openai/server-default"):
            assert resolve_model(" Ollama/Llama3 ") == " Ollama/Llama3 "

    def test_the_environment_wins_over_settings_py(self, monkeypatch):
        monkeypatch.setenv("EVENNIA_AI_MODEL", "openai/from-env")
        with override_settings(EVENNIA_AI_MODEL="openai/server-default"):
            assert choose_model() == ModelChoice("openai/from-env", conf.FROM_ENVIRONMENT)
            assert resolve_model("ollama/npc-own") == "ollama/npc-own"


class TestChooseModel:
    def test_sources(self):
        with override_settings(EVENNIA_AI_MODEL="openai/server-default"):
            assert choose_model("ollama/npc-own") == ModelChoice("ollama/npc-own", OWN_MODEL)
            assert choose_model("") == ModelChoice("openai/server-default", conf.FROM_SETTINGS)

    def test_the_offline_fallback_names_where_the_empty_setting_came_from(self):
        with override_settings(EVENNIA_AI_MODEL=""):
            assert choose_model() == ModelChoice(conf.OFFLINE_MODEL, conf.FROM_SETTINGS)

    def test_the_status_origin_reads_the_same_choice(self):
        with override_settings(EVENNIA_AI_MODEL="openai/server-default"):
            origin = model_origin(None)
            assert (origin.value, origin.source) == ("openai/server-default", conf.FROM_SETTINGS)
        with override_settings(EVENNIA_AI_MODEL=""):
            assert model_origin(None).value == conf.OFFLINE_MODEL
        assert FROM_NPC != OWN_MODEL  # the status says "ainpc/model", not the rule's own word


class TestCallersUseTheOneRule:
    def test_the_client_resolves_per_call_then_its_own_then_the_rule(self):
        with override_settings(EVENNIA_AI_MODEL="openai/server-default"):
            assert UnifiedLLMClient().resolve_model() == "openai/server-default"
            assert UnifiedLLMClient().resolve_model("") == "openai/server-default"
            assert UnifiedLLMClient(model="m/client").resolve_model() == "m/client"
            assert UnifiedLLMClient(model="m/client").resolve_model("m/call") == "m/call"
        with override_settings(EVENNIA_AI_MODEL=""):
            assert UnifiedLLMClient().resolve_model() == conf.OFFLINE_MODEL

    def test_the_request_counter_counts_for_the_model_that_answers(self, monkeypatch):
        seen = []
        monkeypatch.setattr(
            models, "choose_model", lambda m=None: seen.append(m) or ModelChoice("m/x", OWN_MODEL)
        )
        tokens.request_counter(None)
        assert seen == [None]

    def test_no_other_module_works_out_the_model_itself(self):
        """``EVENNIA_AI_MODEL`` is read in llm/models.py only (and by the listed exceptions):
        a caller that wrote ``model or conf.get("EVENNIA_AI_MODEL") or ...`` again would
        work out which model answers its own way."""
        readers = []
        for path in PACKAGE.rglob("*.py"):
            tree = ast.parse(path.read_text())
            for node in ast.walk(tree):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("get", "lookup")
                    and node.args
                    and isinstance(node.args[0], ast.Constant)
                    and node.args[0].value == "EVENNIA_AI_MODEL"
                ):
                    readers.append(path.relative_to(PACKAGE).as_posix())
        assert sorted(set(readers)) == sorted({"llm/models.py", *OTHER_READERS})

"""The installed litellm has every route and name the plugin relies on; a lack is said clearly."""

from importlib.metadata import requires, version

from packaging.requirements import Requirement

from evennia_ai.llm.client import (
    LITELLM_ATTRIBUTES,
    LITELLM_EXCEPTIONS,
    LITELLM_REQUIREMENT,
    get_litellm,
    litellm_contract_problems,
)


def test_installed_litellm_has_what_the_plugin_relies_on():
    problems = litellm_contract_problems()
    assert not problems, (
        f"the installed litellm {version('litellm')} lacks {', '.join(problems)}; evennia-ai "
        f"needs {LITELLM_REQUIREMENT} (see docs/troubleshooting.md)"
    )


def test_installed_litellm_is_in_the_pinned_range():
    wanted = Requirement(LITELLM_REQUIREMENT)
    assert wanted.specifier.contains(
        version("litellm")
    ), f"litellm {version('litellm')} is outside {wanted.specifier}, the range the suite passes with"
    declared = [Requirement(r) for r in requires("evennia-ai") or []]
    declared = [r for r in declared if r.name == "litellm" and not r.marker]
    assert [str(r.specifier) for r in declared] == [str(wanted.specifier)]
    assert declared[0].extras == {"mcp"}
    assert "mcp" not in {
        r.name for r in [Requirement(x) for x in requires("evennia-ai")] if not r.marker
    }


def test_a_litellm_without_them_is_named_clearly():
    class Stripped:
        pass

    stripped = Stripped()
    real = get_litellm()
    for name in LITELLM_ATTRIBUTES + LITELLM_EXCEPTIONS:
        if name not in ("cost_per_token", "ContextWindowExceededError"):
            setattr(stripped, name, getattr(real, name))
    stripped.provider_list = [
        p for p in real.provider_list if str(getattr(p, "value", p)) != "hosted_vllm"
    ]
    assert litellm_contract_problems(stripped) == [
        "litellm.cost_per_token",
        "the exception class litellm.ContextWindowExceededError",
        "the 'hosted_vllm/' route",
    ]

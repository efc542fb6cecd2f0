"""The type checker of the lint step: pyproject.toml's [tool.mypy], run by scripts/lint.sh.

The package ships ``py.typed``, so its annotations are a promise to the games that import it;
mypy holds the package to them in ``make test``, strictly for the model layer (``llm/``), the
prompt (``prompt/``) and the tools' base.
"""

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MYPY = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
STRICT_MODULES = ("evennia_ai.llm.*", "evennia_ai.prompt.*", "evennia_ai.tools.base")
# Options `--strict` turns on that apply to the whole run only (set in [tool.mypy] itself).
GLOBAL_ONLY = {"warn_redundant_casts"}


def _modules(override: dict) -> list[str]:
    module = override["module"]
    return [module] if isinstance(module, str) else list(module)


def _strict_options() -> dict[str, bool]:
    """What ``mypy --strict`` turns on, as config options (``--no-x`` is ``x = false``)."""
    pytest.importorskip("mypy")
    text = subprocess.run(
        [sys.executable, "-m", "mypy", "--help"], capture_output=True, text=True, check=True
    ).stdout
    paragraph = text.split("--strict ", 1)[1].split("\n  --", 1)[0]
    flags = re.findall(r"--([a-z-]+)", re.sub(r"-\n\s+", "-", paragraph))
    assert len(flags) >= 10, paragraph
    options = {}
    for flag in flags:
        name = flag.replace("-", "_")
        if name.startswith("no_"):
            options[name[3:]] = False
        else:
            options[name] = True
    return options


def test_the_whole_package_is_checked():
    assert MYPY["files"] == ["evennia_ai"]
    assert MYPY["python_version"] == "3.11"


def test_llm_prompt_and_the_tools_base_are_checked_with_every_strict_option():
    strict = [o for o in MYPY["overrides"] if set(STRICT_MODULES) <= set(_modules(o))]
    assert len(strict) == 1, "one override section holds the strict modules"
    options = strict[0]
    for name, value in _strict_options().items():
        # Set for these modules, or for the whole package; some options exist only globally.
        setting = MYPY.get(name) if name in GLOBAL_ONLY else options.get(name, MYPY.get(name))
        assert setting == value, f"{name} = {str(value).lower()} is not set"


def test_no_override_sets_strict_itself():
    # mypy applies `strict` from an override section to every module, not to the section's.
    assert all("strict" not in override for override in MYPY["overrides"])


def test_strict_is_relaxed_only_for_modules_named_as_temporary():
    relaxing = [o for o in MYPY["overrides"] if o.get("disallow_untyped_defs") is False]
    relaxed = {m for o in relaxing for m in _modules(o)}
    assert relaxed <= {
        "evennia_ai.prompt.builder",
        "evennia_ai.prompt.sources",
        "evennia_ai.prompt.tasks",
        "evennia_ai.prompt.assembly",
        "evennia_ai.prompt.contexts",
        "evennia_ai.prompt.execution_pattern",
        "evennia_ai.prompt.snapshot",
        "evennia_ai.llm.usage",
    }


def test_no_module_of_the_package_ignores_its_errors_wholesale():
    assert not [o for o in MYPY["overrides"] if o.get("ignore_errors")]
    missing = [o for o in MYPY["overrides"] if o.get("ignore_missing_imports")]
    assert all(not m.startswith("evennia_ai") for o in missing for m in _modules(o))


def test_the_lint_step_runs_mypy_with_its_cache_in_the_venv():
    script = (ROOT / "scripts" / "lint.sh").read_text()
    assert '"$VENV/bin/mypy" --cache-dir "$VENV/.mypy_cache"' in script
    makefile = (ROOT / "Makefile").read_text()
    assert "bash scripts/lint.sh $(VENV)" in makefile
    assert (
        'bash "$(dirname "$0")/lint.sh" "$VENV"' in (ROOT / "scripts" / "run_tests.sh").read_text()
    )


def test_mypy_is_a_test_dependency():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert any(
        re.match(r"mypy\b", requirement) for requirement in project["optional-dependencies"]["test"]
    )

"""Sizes a reader can hold: short functions in ``engine/`` and ``prompt/``, long modules named.

docs/architecture.md ("Modules over 700 lines, and why") lists every module of the package over
700 lines with the reason it stays one module; the list must be complete and current.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "evennia_ai"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
LONG_MODULE = 700
LONG_FUNCTION = 60


def functions(path: Path) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    tree = ast.parse(path.read_text())
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def length(node: ast.AST) -> int:
    return node.end_lineno - node.lineno + 1


def listed_long_modules() -> set[str]:
    text = ARCHITECTURE.read_text()
    match = re.search(r"<!-- large:begin -->(.*?)<!-- large:end -->", text, re.S)
    assert match, "docs/architecture.md has no <!-- large:begin --> ... <!-- large:end --> table"
    return set(re.findall(r"^\| `([\w/]+\.py)` \|", match.group(1), re.M))


def long_modules() -> set[str]:
    return {
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if len(path.read_text().splitlines()) > LONG_MODULE
    }


@pytest.mark.parametrize(
    "path",
    sorted((PACKAGE / "engine").glob("*.py")) + sorted((PACKAGE / "prompt").glob("*.py")),
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_no_function_over_60_lines_in_engine_and_prompt(path):
    long = [f"{n.name}: {length(n)} lines" for n in functions(path) if length(n) > LONG_FUNCTION]
    assert long == [], f"split these by meaning: {long}"


def test_the_ticks_top_function_is_under_30_lines():
    (run,) = [n for n in functions(PACKAGE / "engine" / "tick.py") if n.name == "run"]
    assert length(run) < 30


def test_every_module_over_700_lines_is_listed_with_its_reason():
    missing = sorted(long_modules() - listed_long_modules())
    assert not missing, (
        f"modules over {LONG_MODULE} lines not in docs/architecture.md's list (split them, or "
        f"say there why they stay one module): {missing}"
    )


def test_the_list_of_long_modules_is_current():
    stale = sorted(listed_long_modules() - long_modules())
    assert not stale, f"no longer over {LONG_MODULE} lines (remove from the list): {stale}"

"""engine/tick and the modules it was split into: sizes a reader can hold, and no writes on the
Script (the Script keeps its own flags from the agenda's decision)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ENGINE = Path(__file__).resolve().parents[3] / "evennia_ai" / "engine"
#: The tick and the modules that hold its jobs.
TICK_MODULES = sorted(ENGINE.glob("tick*.py")) + [
    ENGINE / "agenda.py",
    ENGINE / "upkeep.py",
    ENGINE / "accounting.py",
    ENGINE / "bookkeeping.py",
]


def functions(path: Path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def script_ndb_writes(path: Path) -> list[str]:
    """``x.script.ndb.<name> = ...`` or ``script.ndb.<name> = ...`` (or setattr on it)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        targets = []
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        elif isinstance(node, ast.Call) and getattr(node.func, "id", "") == "setattr":
            targets = node.args[:1]
        for target in targets:
            holder = target.value if isinstance(target, ast.Attribute) else target
            text = ast.unparse(holder)
            if text == "script.ndb" or text.endswith(".script.ndb"):
                found.append(f"{path.name}:{node.lineno}: {ast.unparse(target)}")
    return found


@pytest.mark.parametrize("path", TICK_MODULES, ids=lambda p: p.name)
def test_the_tick_writes_nothing_on_its_script(path):
    assert script_ndb_writes(path) == []


def test_the_check_finds_a_write_on_the_script(tmp_path):
    old = tmp_path / "old_tick.py"
    old.write_text(
        "class T:\n"
        "    def choose(self):\n"
        "        self.script.ndb.again = True\n"
        "        script.ndb.last_autonomous = 1\n"
    )
    assert len(script_ndb_writes(old)) == 2


@pytest.mark.parametrize("path", TICK_MODULES, ids=lambda p: p.name)
def test_no_function_over_60_lines(path):
    long = [
        f"{node.name}: {node.end_lineno - node.lineno + 1} lines"
        for node in functions(path)
        if node.end_lineno - node.lineno + 1 > 60
    ]
    assert long == []


def test_the_tick_reads_top_to_bottom_in_one_short_function():
    (run,) = [
        node
        for node in functions(ENGINE / "tick.py")
        if node.name == "run" and node.col_offset == 4
    ]
    assert run.end_lineno - run.lineno + 1 < 30
    calls = [ast.unparse(n.func) for n in ast.walk(run) if isinstance(n, ast.Call)]
    for step in ("self.choose", "self._read", "prepare", "self._think", "self.upkeep.run"):
        assert step in calls, f"the tick's top function does not call {step}"

"""The package as users get it: a wheel built from a copy of the checkout, and the guide's lines.

Shared by the fast packaging checks (``tests/system/test_packaging.py``) and the end-to-end
install test (``tests/system/test_install_wheel.py``).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from support.game_server import ROOT

INSTALLING = ROOT / "docs" / "installing.md"
# What a copy of the checkout leaves out: virtualenvs, build output, caches, the demo game.
NOT_COPIED = shutil.ignore_patterns(
    ".git",
    ".venv*",
    "build",
    "dist",
    "*.egg-info",
    "__pycache__",
    ".hypothesis",
    ".pytest_cache",
    "demo_game",
    ".demo",
    "node_modules",
)


def run(*args, cwd: Path | None = None, timeout: float = 300) -> str:
    """Run a command and return its output; raise with the output when it fails."""
    result = subprocess.run(
        [str(arg) for arg in args],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if result.returncode:
        raise RuntimeError(
            f"{' '.join(map(str, args))} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
        )
    return result.stdout


def build_wheel(workdir: Path) -> Path:
    """Build the wheel with ``pip wheel . --no-deps`` in a copy of the checkout; returns it.

    The checkout itself is left untouched (no ``build/`` or ``*.egg-info`` in it). The build
    backend comes from pip's configured package index, as for any install from source.
    """
    source = workdir / "source"
    shutil.copytree(ROOT, source, ignore=NOT_COPIED)
    run(
        sys.executable,
        "-m",
        "pip",
        "wheel",
        ".",
        "--no-deps",
        "-q",
        "-w",
        workdir / "dist",
        cwd=source,
    )
    (wheel,) = (workdir / "dist").glob("evennia_ai-*.whl")
    return wheel


def fenced_block(text: str, heading: str, language: str = "python") -> str:
    """The first fenced ``language`` block after ``heading`` in markdown ``text``, verbatim."""
    section = text[text.index(heading) :]
    match = re.search(rf"```{language}\n(.*?)```", section, re.S)
    if not match:
        raise ValueError(f"no ```{language} block after {heading!r}")
    return match.group(1)


def documented_settings() -> str:
    """The settings block of ``docs/installing.md`` ("2. Settings"), exactly as written."""
    return fenced_block(INSTALLING.read_text(), "## 2. Settings")

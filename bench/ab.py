"""Before/after A/B of benchmarks: two checkouts, interleaved rounds, a table of medians.

    python -m bench.ab --old /work/wt33-base --new /work/main --rounds 3 npc_ab load
    python -m bench.ab --old ../base --new . "scale --quick" "npc_ab --mode busy"
    python -m bench.ab --summarise /tmp/evennia_ai_ab_XXXX    # the table again, from the runs

Each benchmark is run as ``python -m bench.<name> <args>`` once per side per round, old and new
interleaved (the order swapped every round, so a drift of the machine's load falls on both),
its output kept in ``--out`` as ``<name>.<side>.<round>.txt``. Every Markdown table the runs
print is read (:func:`parse_tables`); each figure present on both sides is shown with its
median over the rounds, old and new, and the change in percent (:func:`summary`).

Which benchmark code runs: by default this checkout's ``bench/`` and ``tests/support/``, on
each side's own ``evennia_ai`` (and demo world, scripts, ...): the side's checkout is mirrored
in a temporary folder of symbolic links with ``bench/`` and ``tests/support/`` copied in from
here (:func:`overlay`), so the same instruments measure both (an old checkout's benchmarks may
lack a mode). ``--own-bench`` runs each side's own benchmark code instead.

Both sides use this interpreter (the shared virtualenv). The load average is written beside
each run; the machine should be otherwise quiet, or at least equally busy for both sides.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]  # the checkout whose bench/ runs by default
SIDES = ("old", "new")
NUMBER = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?")
LABELLED = re.compile(r"([A-Za-z_][\w/]*)\s+([-+]?\d[\d,]*(?:\.\d+)?)")


# -- reading the benchmarks' tables ------------------------------------------------------------


def _number(text: str) -> float | None:
    found = NUMBER.search(text)
    return float(found.group().replace(",", "")) if found else None


def cell_numbers(column: str, cell: str) -> dict[str, float]:
    """The figures in one table cell, by name.

    A cell that starts with a number gives ``column`` that number (``"12.5"``, ``"7%"``,
    ``"1,234 MB"``, ``"+3.1% (400 MB)"``); labelled numbers anywhere in it give
    ``"<column> <label>"`` (``"p50 1.2, p99 4.5"`` gives ``"<column> p50"`` and
    ``"<column> p99"``). Text without a number gives nothing.
    """
    out: dict[str, float] = {}
    cell = cell.strip()
    if NUMBER.match(cell):
        value = _number(cell)
        if value is not None:
            out[column] = value
    for label, value in LABELLED.findall(cell):
        out[f"{column} {label}"] = float(value.replace(",", ""))
    return out


def _stable(text: str) -> str:
    """A title or row name with its numbers replaced by ``#`` (they may change between runs)."""
    return NUMBER.sub("#", text).strip()


def parse_tables(text: str) -> dict[tuple[str, str, str], float]:
    """Every figure of every Markdown table in a benchmark's output.

    Keys are ``(table title, row name, column)``: the title is the ``### `` line above the
    table, the row name its first cell, both with their numbers replaced by ``#``; a row name
    seen twice in one table keeps its first row.
    """
    figures: dict[tuple[str, str, str], float] = {}
    title, headers, seen = "", None, set()
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("### "):
            title, headers, seen = _stable(line[4:]), None, set()
            continue
        if not line.startswith("|"):
            headers = None
            continue
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if headers is None:
            headers = cells
            continue
        if all(set(cell) <= set("-: ") for cell in cells):
            continue
        row = _stable(cells[0])
        if row in seen:
            continue
        seen.add(row)
        for column, cell in zip(headers[1:], cells[1:]):
            for name, value in cell_numbers(column, cell).items():
                figures[(title, row, name)] = value
    return figures


# -- the summary --------------------------------------------------------------------------------


@dataclass
class Figure:
    bench: str
    key: tuple[str, str, str]
    old: list[float]
    new: list[float]

    @property
    def old_median(self) -> float:
        return statistics.median(self.old)

    @property
    def new_median(self) -> float:
        return statistics.median(self.new)

    @property
    def change(self) -> float:
        """New against old, in percent (nan when old is 0)."""
        if self.old_median == 0:
            return float("nan")
        return (self.new_median - self.old_median) / abs(self.old_median) * 100


def collect(runs: dict[tuple[str, str], list[str]]) -> list[Figure]:
    """Figures present on both sides; ``runs`` maps ``(bench, side)`` to the runs' outputs."""
    figures: list[Figure] = []
    for bench in dict.fromkeys(bench for bench, _side in runs):
        parsed = {
            side: [parse_tables(text) for text in runs.get((bench, side), [])] for side in SIDES
        }
        keys = dict.fromkeys(key for tables in parsed["old"] for key in tables)
        for key in keys:
            old = [tables[key] for tables in parsed["old"] if key in tables]
            new = [tables[key] for tables in parsed["new"] if key in tables]
            if old and new:
                figures.append(Figure(bench, key, old, new))
    return figures


def _fmt(value: float) -> str:
    return f"{value:,.2f}" if abs(value) < 1000 else f"{value:,.0f}"


def summary(figures: list[Figure], match: str | None = None) -> str:
    """A Markdown table of the figures (those whose ``table / row / column`` match ``match``)."""
    pattern = re.compile(match, re.IGNORECASE) if match else None
    lines = [
        "| bench | table | row | figure | old (median) | new (median) | change | runs old / new |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for fig in figures:
        title, row, column = fig.key
        if pattern and not pattern.search(f"{title} / {row} / {column}"):
            continue
        change = "n/a" if fig.change != fig.change else f"{fig.change:+.1f}%"
        lines.append(
            f"| {fig.bench} | {title[:70]} | {row} | {column} | {_fmt(fig.old_median)} | "
            f"{_fmt(fig.new_median)} | {change} | {len(fig.old)} / {len(fig.new)} |"
        )
    return "\n".join(lines) + "\n"


RUN_FILE = re.compile(r"^(?P<bench>[\w-]+)\.(?P<side>old|new)\.(?P<round>\d+)\.txt$")


def read_runs(folder: Path) -> dict[tuple[str, str], list[str]]:
    """The outputs kept in ``folder`` (``<bench>.<side>.<round>.txt``), by bench and side."""
    runs: dict[tuple[str, str], list[str]] = {}
    for path in sorted(folder.iterdir()):
        found = RUN_FILE.match(path.name)
        if found:
            runs.setdefault((found["bench"], found["side"]), []).append(path.read_text())
    return runs


# -- running ------------------------------------------------------------------------------------


def overlay(tree: Path, bench_from: Path, folder: Path) -> Path:
    """``tree`` mirrored in ``folder`` by symbolic links, with ``bench/`` and
    ``tests/support/`` copied from ``bench_from``: the benchmarks of ``bench_from`` on the
    ``evennia_ai`` (and demo world, and the test settings files at ``tests/``) of ``tree``. Copies, not links, so that each benchmark's
    ``Path(__file__).resolve()`` finds the mirror and its game server imports the tree's
    package."""
    folder.mkdir(parents=True, exist_ok=True)
    for entry in tree.iterdir():
        if entry.name in ("bench", "tests", ".git"):
            continue
        (folder / entry.name).symlink_to(entry)
    ignore = shutil.ignore_patterns("__pycache__", "RESULTS.md")
    shutil.copytree(bench_from / "bench", folder / "bench", ignore=ignore)
    (folder / "tests").mkdir()
    for entry in (tree / "tests").iterdir():  # the tree's test settings (Django benchmarks)
        if entry.is_file():
            (folder / "tests" / entry.name).symlink_to(entry)
    if not (folder / "tests" / "__init__.py").exists():
        (folder / "tests" / "__init__.py").touch()
    shutil.copytree(bench_from / "tests" / "support", folder / "tests" / "support", ignore=ignore)
    return folder


@dataclass
class Spec:
    """One benchmark to run: ``name`` and its command-line arguments."""

    name: str
    args: list[str]

    @classmethod
    def parse(cls, text: str) -> "Spec":
        words = shlex.split(text)
        if not words:
            raise ValueError("an empty benchmark name")
        return cls(words[0].removeprefix("bench."), words[1:])

    @property
    def label(self) -> str:
        """The name with its arguments, fit for a file name (``npc_ab-mode-busy``)."""
        return re.sub(r"[^\w]+", "-", " ".join([self.name, *self.args])).strip("-")


def run_one(spec: Spec, where: Path, out: Path, timeout: float) -> int:
    """Run one benchmark in ``where``; its output (and the load average) goes to ``out``."""
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env.update(
        {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "MEM0_TELEMETRY": "False", "HF_HUB_OFFLINE": "1"}
    )
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    started = time.monotonic()
    with open(out, "w") as handle:
        handle.write(f"<!-- {where} {spec.name} {' '.join(spec.args)}; load average {load} -->\n")
        handle.flush()
        try:
            code = subprocess.run(
                [sys.executable, "-m", f"bench.{spec.name}", *spec.args],
                cwd=where,
                env=env,
                stdout=handle,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                timeout=timeout,
            ).returncode
        except subprocess.TimeoutExpired:
            code = -1
        handle.write(f"\n<!-- exit {code} after {time.monotonic() - started:.0f} s -->\n")
    return code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ab", description=__doc__.split("\n")[0])
    parser.add_argument(
        "benches", nargs="*", help='benchmarks, each with its arguments: "scale --quick"'
    )
    parser.add_argument("--old", type=Path, help="the checkout before")
    parser.add_argument("--new", type=Path, help="the checkout after")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each benchmark per side")
    parser.add_argument(
        "--out", type=Path, help="folder for the runs' outputs (default: a new one)"
    )
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per run")
    parser.add_argument("--own-bench", action="store_true", help="each side's own bench/ code")
    parser.add_argument("--match", help="only figures whose 'table / row / figure' match this")
    parser.add_argument("--summarise", type=Path, help="only print the table of a finished run")
    args = parser.parse_args(argv)
    if args.summarise:
        print(summary(collect(read_runs(args.summarise)), args.match))
        return 0
    if not (args.old and args.new and args.benches):
        parser.error("--old, --new and at least one benchmark are needed")
    specs = [Spec.parse(text) for text in args.benches]
    out = args.out or Path(tempfile.mkdtemp(prefix="evennia_ai_ab_"))
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="evennia_ai_ab_trees_") as trees:
        where = {}
        for side, tree in (("old", args.old.resolve()), ("new", args.new.resolve())):
            where[side] = tree if args.own_bench else overlay(tree, HERE, Path(trees) / side)
        failed = 0
        for n in range(1, args.rounds + 1):
            order = SIDES if n % 2 else SIDES[::-1]
            for spec in specs:
                for side in order:
                    path = out / f"{spec.label}.{side}.{n}.txt"
                    print(
                        f"== {time.strftime('%H:%M:%S')} round {n} {spec.label} {side}", flush=True
                    )
                    code = run_one(spec, where[side], path, args.timeout)
                    if code:
                        failed += 1
                        print(f"   exit {code}: see {path}", flush=True)
    print(f"\nOutputs in {out}\n")
    print(summary(collect(read_runs(out)), args.match))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

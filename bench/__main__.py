"""Run every benchmark and write bench/RESULTS.md (``make bench``).

``python -m bench`` runs them all, one after another (each server benchmark starts and stops
its own game server and model server); ``python -m bench load npc_ab`` runs only those (names
are the modules of this folder). Each benchmark's tables carry their target and pass/fail. A
benchmark that crashes is reported as such in RESULTS.md and the others still run.
"""

from __future__ import annotations

import datetime
import importlib
import platform
import sys
import time
import traceback
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from bench.common import machine

BENCHMARKS = [
    "llm_client",
    "llm_wire",
    "context",
    "recall",
    "archival",
    "ltm_store",
    "memory_audit",
    "tick",
    "calls",
    "state_fuzz",
    "guards",
    "cost",
    "fault_soak",
    "npc_ab",
    "first_line",
    "streaming",
    "load",
    "memory_rss",
    "scale",
]


def _version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


def header(names: list[str]) -> str:
    import os

    return (
        "# Benchmark results\n\n"
        f"- date: {datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}\n"
        f"- machine: {machine()}, {platform.platform()}, "
        f"load average {', '.join(f'{x:.1f}' for x in os.getloadavg())} at the end\n"
        f"- versions: Python {platform.python_version()}, evennia {_version('evennia')}, "
        f"litellm {_version('litellm')}, mem0ai {_version('mem0ai')}, "
        f"twisted {_version('twisted')}, django {_version('django')}\n"
        f"- command: `make bench` (`python -m bench {' '.join(names)}`)\n\n"
    )


def merge(path: Path, names: list[str], sections: list[str]) -> str:
    """RESULTS.md with the sections of ``names`` replaced, the other benchmarks' kept.

    Running one benchmark (``python -m bench load``) so updates its figures only; the header
    says when each section was measured.
    """
    stamp = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    new = {
        name: text.replace("\n", f"\n\nmeasured {stamp}\n", 1)
        for name, text in zip(names, sections)
    }
    old: dict[str, str] = {}
    if path.exists() and set(names) != set(BENCHMARKS):
        for chunk in path.read_text().split("\n## bench.")[1:]:
            name = chunk.split(" ", 1)[0].split("\n", 1)[0]
            old[name] = "## bench." + chunk.rstrip("\n") + "\n"
    ordered = [new.get(n) or old.get(n) for n in BENCHMARKS if new.get(n) or old.get(n)]
    return header(names) + "\n".join(ordered)


def main(argv: list[str]) -> int:
    names = [a.removeprefix("bench.") for a in argv] or BENCHMARKS
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        print(f"unknown benchmark(s) {unknown}; choose from {BENCHMARKS}", file=sys.stderr)
        return 2
    sections = []
    failed = 0
    for name in names:
        print(f"== bench.{name}", flush=True)
        started = time.monotonic()
        try:
            text = importlib.import_module(f"bench.{name}").main()
        except Exception:  # one broken benchmark must not hide the others' figures
            failed += 1
            text = f"### bench.{name}\n\nDid not run:\n```\n{traceback.format_exc()[-3000:]}```\n"
            print(text, file=sys.stderr)
        sections.append(f"## bench.{name} ({time.monotonic() - started:.0f} s)\n\n{text}")
    out = Path(__file__).resolve().parent / "RESULTS.md"
    out.write_text(merge(out, names, sections))
    print(f"wrote {out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Run every benchmark and write bench/RESULTS.md (``make bench``)."""

from __future__ import annotations

import datetime
import importlib
import sys
from pathlib import Path

from bench.common import machine

BENCHMARKS = ["bench.llm_client", "bench.context"]


def main(argv: list[str]) -> int:
    names = [f"bench.{a}" for a in argv] or BENCHMARKS
    sections = []
    for name in names:
        print(f"== {name}", flush=True)
        sections.append(importlib.import_module(name).main())
    import evennia
    import litellm  # noqa: F401  (version below)
    from importlib.metadata import version

    header = (
        "# Benchmark results\n\n"
        f"- date: {datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}\n"
        f"- machine: {machine()}\n"
        f"- evennia {version('evennia')}, litellm {version('litellm')}, twisted {version('twisted')}\n"
        "- command: `make bench`\n\n"
    )
    out = Path(__file__).resolve().parent / "RESULTS.md"
    out.write_text(header + "\n".join(sections))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

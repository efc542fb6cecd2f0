"""Shared helpers for the benchmarks: percentiles, tables, environment setup."""

from __future__ import annotations

import os
import platform
import statistics

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("MEM0_TELEMETRY", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def percentile(values: list[float], pct: float) -> float:
    """The ``pct`` percentile (nearest rank) of ``values``."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = max(0, min(len(ordered) - 1, int(round(pct / 100.0 * len(ordered) + 0.5)) - 1))
    return ordered[index]


def summary_ms(values: list[float]) -> dict:
    """p50/p95/mean in milliseconds of durations given in seconds."""
    return {
        "n": len(values),
        "p50": percentile(values, 50) * 1000,
        "p95": percentile(values, 95) * 1000,
        "mean": statistics.fmean(values) * 1000 if values else float("nan"),
    }


def table(title: str, headers: list[str], rows: list[list]) -> str:
    """A Markdown table."""

    def fmt(value):
        if isinstance(value, float):
            return f"{value:.2f}"
        return str(value)

    lines = [
        f"### {title}",
        "",
        "| " + " | ".join(headers) + " |",
        "|" + "|".join("---" for _ in headers) + "|",
    ]
    for row in rows:
        lines.append("| " + " | ".join(fmt(v) for v in row) + " |")
    return "\n".join(lines) + "\n"


def machine() -> str:
    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"


class ExternalModelServer:
    """The loopback model server in its own process, so it does not share our GIL.

    Args:
        latency: Seconds before every answer.
        extra_args: More command-line arguments (e.g. ``--default-reply``).
        module: The module run with ``python -m``; it takes ``--port`` and ``--latency``
            (``bench.counted_model_server`` also counts the answers in a file).
    """

    def __init__(
        self,
        latency: float = 0.0,
        extra_args: tuple = (),
        module: str = "evennia_ai.testing.model_server",
    ):
        import socket
        import subprocess
        import sys
        import time

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                module,
                "--port",
                str(self.port),
                "--latency",
                str(latency),
                *extra_args,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
        )
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        self.url = f"http://127.0.0.1:{self.port}/v1"

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except Exception:
            self.proc.kill()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def baseline(name: str) -> dict | None:
    """The "before" figures of a benchmark, kept in ``bench/baselines/<name>.json`` (or None)."""
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parent / "baselines" / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def recall_deadline_stats() -> dict | None:
    """How often the reply path's recall gave up waiting for the vector hits (issue 33).

    The hook every benchmark reads, in this process (a game server's through
    :func:`bench.server_probe.recall_deadline_stats`): the ``recall`` counts of
    ``evennia_ai.memory.longterm.status()`` (``searches`` that waited on the deadline,
    ``missed``: those that went on with the keyword hits only, ``deadline_ms``), counted since
    the process started, as ``{"waited", "missed", "deadline_ms"}``. None while the plugin does
    not count them; ``{"error": ...}`` when they cannot be read.
    """
    try:
        from evennia_ai.memory import longterm
    except Exception:  # noqa: BLE001 - a probe reports, never raises
        return None
    status = getattr(longterm, "status", None)
    if not callable(status):
        return None
    try:
        counts = status().get("recall")
    except Exception as err:  # noqa: BLE001 - a probe reports, never raises
        return {"error": str(err)}
    if not isinstance(counts, dict) or "missed" not in counts:
        return None
    return {
        "waited": counts.get("searches", 0),
        "missed": counts["missed"],
        "deadline_ms": counts.get("deadline_ms"),
    }


def deadline_text(stats: dict | None) -> str:
    """The recall deadline's figures in words, for a report."""
    if not isinstance(stats, dict):
        return "not exposed by this code (hook: bench.common.recall_deadline_stats)"
    if "error" in stats:
        return f"could not be read: {stats['error']}"
    limit = f" at {stats['deadline_ms']} ms" if stats.get("deadline_ms") is not None else ""
    return (
        f"{stats.get('missed', '?')} missed of {stats.get('waited', '?')} searches that waited"
        + limit
    )

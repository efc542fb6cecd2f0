"""Fault soak (issue: proof under load): ticks against a model server that fails 20 % of the time.

Every kind of fault the loopback server can produce (HTTP 500, 429 with Retry-After, hangs past
the client timeout, a body that is not JSON, a truncated body, a dropped connection, tool-call
arguments that are not JSON, a tool name that was not offered, empty choices) is drawn at
random from a seeded RNG for ``fault_rate`` of the requests, on the main model and on the
fallback model alike. Each tick answers one new line a player says to the Innkeeper.

Checked after the run (:func:`run_soak` returns the figures, :func:`failed_checks` the broken
promises):

- no Script dies: the NPC keeps the same, active AssistantScript and no tick raised;
- no event is lost: every event the player caused is answered, still queued for a retry, or
  counted as failed in ``npc.ai.status()`` (after a short fault-free drain, nothing is queued);
- every failure is visible: each tick whose model call failed has ``stop_reason == "error"``
  and the error text in its trace, and ``status()["errors"]`` counts exactly those ticks; each
  refused tool call (bad arguments, unknown tool) is in its tick's trace with the reason;
- the fallback model answers when the main model fails (with retries off, every transport
  fault on the main model leads to exactly one fallback request).

It runs in-process in a test database (pytest-django, like the unit tests) with the model call
made synchronous, so 1,000 ticks are exact and take about a minute:
``python -m bench fault_soak`` runs ``tests/system/test_fault_soak.py`` with ``SOAK_TICKS=1000``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

from bench.common import table

ROOT = Path(__file__).resolve().parents[1]
PRIMARY = "openai/test-model"
FALLBACK = "openai/fallback-model"
TRANSPORT_FAULTS = ("500", "429", "hang", "malformed", "truncated", "disconnect", "empty_choices")
TOOL_FAULTS = ("invalid_args", "unknown_tool")


def _sync_thread(fn, *args, **kwargs):
    from twisted.internet import defer

    return defer.maybeDeferred(fn, *args, **kwargs)


def _responder(body: dict) -> dict:
    """Answer with a ``say`` echoing the last quoted line the NPC heard."""
    import re

    last = ""
    for message in body.get("messages", []):
        if message.get("role") == "user":
            last = message.get("content") or ""
    quoted = re.findall(r'"([^"]+)"', last)
    heard = (quoted[-1] if quoted else last)[:60]
    return {"tool_calls": [{"name": "say", "arguments": {"message": f"You said: {heard}"}}]}


def _pending_ids(npc) -> set[str]:
    from evennia_ai.memory import events as ev

    queue = npc.ai.event_queue
    return {e.id for e in ev.pending_events(queue)} | {
        (e.get("id") if isinstance(e, dict) else e.id) for e in queue.get("in_flight", [])
    }


def run_soak(
    npc,
    speaker,
    ticks: int = 1000,
    fault_rate: float = 0.2,
    seed: int = 1,
    timeout: float = 0.3,
    hang_seconds: float = 1.0,
    fallback: bool = True,
    drain_ticks: int = 20,
) -> dict:
    """Run ``ticks`` ticks of ``npc`` (an AI assistant) against a faulty loopback model server.

    Needs a configured Evennia test database (pytest-django) with ``npc`` and ``speaker`` in
    the same room. Model calls are made synchronous (no reactor needed).

    Args:
        npc: The assistant; its script's own timer is switched off for the run.
        speaker: A character who says one new line to the NPC before every tick.
        ticks: Ticks under faults.
        fault_rate: Share of model requests answered with a random fault.
        seed: Seed of the fault RNG.
        timeout: Client timeout (``EVENNIA_AI_TIMEOUT``) for the run, shorter than the hangs.
        hang_seconds: How long a "hang" fault waits.
        fallback: Configure ``EVENNIA_AI_FALLBACK_MODELS`` with a second model.
        drain_ticks: Fault-free ticks at the end, to answer what was released for a retry.

    Returns:
        A dict of figures; see :func:`failed_checks`.
    """
    from django.test import override_settings

    from evennia_ai.engine import upkeep
    from evennia_ai.llm import client as client_module
    from evennia_ai.memory import longterm
    from evennia_ai.testing.model_server import ModelServer

    script = npc.ai.script
    script_id = script.id
    script.trigger_tick = lambda: None  # the soak drives every tick itself
    pushed: set[str] = set()
    answered: set[str] = set()
    stats = {
        "ticks": 0,
        "error_ticks": 0,
        "errors_with_text": 0,
        "crashed_ticks": 0,
        "skipped_ticks": 0,
        "refused_calls": 0,
        "refused_with_reason": 0,
        "fallback_iterations": 0,
        "iterations": 0,
        "last_trace_in_ring": 0,
    }
    with (
        ModelServer(
            fault_rate=0.0, seed=seed, hang_seconds=hang_seconds, responder=_responder
        ) as server,
        mock.patch.object(client_module, "defer_to_thread", _sync_thread),
        mock.patch.object(longterm, "defer_to_thread", _sync_thread),
        mock.patch.object(upkeep, "defer_to_thread", _sync_thread),
        override_settings(
            EVENNIA_AI_MODEL=PRIMARY,
            EVENNIA_AI_API_BASE=server.url,
            EVENNIA_AI_API_KEY="x",
            EVENNIA_AI_FALLBACK_MODELS=[FALLBACK] if fallback else [],
            EVENNIA_AI_MAX_RETRIES=0,
            EVENNIA_AI_TIMEOUT=timeout,
            EVENNIA_AI_RETRY_BASE_DELAY=0.0,
            EVENNIA_AI_RETRY_MAX_DELAY=0.0,
            EVENNIA_AI_AUTONOMY=False,
            EVENNIA_AI_SPEAKER_EVENTS_PER_MINUTE=0,  # one scripted player talks fast
            EVENNIA_AI_REFLECTION_INTERVAL=0,
            EVENNIA_AI_REFLECTION_IMPORTANCE_THRESHOLD=0,
        ),
    ):
        server.fault_rate = fault_rate
        started = time.monotonic()
        for index in range(ticks + drain_ticks):
            if index == ticks:
                server.fault_rate = 0.0
                faults_end = dict(server.counts())
            if index < ticks:
                before = _pending_ids(npc)
                speaker.at_say(f"Innkeeper, question {index}: any rooms left?")
                pushed |= _pending_ids(npc) - before
            elif not _pending_ids(npc):
                break
            d = script.run_tick()
            if d is None:
                stats["skipped_ticks"] += 1
                continue
            if not d.called:
                raise RuntimeError("a tick did not complete synchronously")
            trace = d.result
            if trace is None:  # the tick raised (logged, counted by _tick_failed)
                stats["crashed_ticks"] += 1
                continue
            stats["ticks"] += 1
            if npc.ai.trace(trace.tick_id) is not None:
                stats["last_trace_in_ring"] += 1
            if trace.stop_reason == "error":
                stats["error_ticks"] += 1
                stats["errors_with_text"] += 1 if trace.error else 0
            else:
                answered |= set(trace.event_ids)
            for it in trace.iterations:
                stats["iterations"] += 1
                if it.model == FALLBACK and not it.error:
                    stats["fallback_iterations"] += 1
                for call in it.tool_calls:
                    if call.status == "refused":
                        stats["refused_calls"] += 1
                        stats["refused_with_reason"] += 1 if call.error else 0
        stats["seconds"] = round(time.monotonic() - started, 1)
        requests = server.requests
        counts = faults_end if ticks else {}
    status = npc.ai.status()
    primary_transport = sum(
        1
        for r in requests
        if r.reply
        and r.reply.fault in TRANSPORT_FAULTS
        and isinstance(r.body, dict)
        and r.body.get("model") == PRIMARY.split("/", 1)[1]
    )
    fallback_requests = sum(
        1
        for r in requests
        if r.reply and isinstance(r.body, dict) and r.body.get("model") == FALLBACK.split("/", 1)[1]
    )
    # A streamed answer cut after some of it reached the player is neither retried nor sent to
    # a fallback (the player saw part of it: llm.client): those cuts owe no fallback request.
    streamed_cuts = sum(
        1
        for r in requests
        if r.reply
        and r.reply.fault == "truncated"
        and isinstance(r.body, dict)
        and r.body.get("stream")
        and r.body.get("model") == PRIMARY.split("/", 1)[1]
    )
    tool_faults = sum(1 for r in requests if r.reply and r.reply.fault in TOOL_FAULTS)
    script = npc.ai.script
    left = _pending_ids(npc)
    return {
        **stats,
        "requested_ticks": ticks,
        "fault_rate": fault_rate,
        "timeout": timeout,
        "fault_counts": counts,
        "requests": len(requests),
        "primary_transport_faults": primary_transport,
        "primary_streamed_cuts": streamed_cuts,
        "fallback_requests": fallback_requests,
        "tool_faults": tool_faults,
        "events_pushed": len(pushed),
        "events_answered": len(pushed & answered),
        "events_queued": len(pushed & left),
        "events_failed": int(status["failed_events"]),
        "events_lost": len(pushed - answered - left) - int(status["failed_events"]),
        "status_errors": int(status["errors"]),
        "status_last_error": status["last_error"],
        "script_alive": bool(script and script.id == script_id and script.is_active),
    }


def fallback_accounted(report: dict) -> bool:
    """Every main-model failure led to a fallback request, except streamed answers cut after
    a piece was shown (those end without a retry or a fallback, by design)."""
    primary = report["primary_transport_faults"]
    owed = primary - report.get("primary_streamed_cuts", 0)
    return owed <= report["fallback_requests"] <= primary


def failed_checks(report: dict, fallback: bool = True) -> list[str]:
    """The soak's promises that ``report`` breaks (empty when every one holds)."""
    problems = []
    if not report["script_alive"]:
        problems.append("the AssistantScript died or was replaced")
    if report["crashed_ticks"]:
        problems.append(f"{report['crashed_ticks']} tick(s) raised")
    if report["events_lost"] or report["events_queued"]:
        problems.append(
            f"events lost: {report['events_lost']}, still queued: {report['events_queued']}"
        )
    if report["events_answered"] + report["events_failed"] != report["events_pushed"]:
        problems.append("answered + failed events != events caused")
    if report["errors_with_text"] != report["error_ticks"]:
        problems.append("a failed tick has no error text in its trace")
    if report["status_errors"] != report["error_ticks"]:
        problems.append(
            f"status errors {report['status_errors']} != failed ticks {report['error_ticks']}"
        )
    if report["error_ticks"] and not report["status_last_error"]:
        problems.append("status shows no last_error")
    if report["last_trace_in_ring"] != report["ticks"]:
        problems.append("a tick's trace is missing from the trace ring")
    if report["refused_with_reason"] != report["refused_calls"]:
        problems.append("a refused tool call has no reason in its trace")
    if report["refused_calls"] < report["tool_faults"]:
        problems.append(
            f"{report['tool_faults']} bad tool calls sent, {report['refused_calls']} refused in traces"
        )
    if fallback:
        if not fallback_accounted(report):
            problems.append(
                f"{report['primary_transport_faults']} main-model failures, "
                f"{report['fallback_requests']} fallback requests"
            )
        if report["primary_transport_faults"] and not report["fallback_iterations"]:
            problems.append("the fallback model never answered")
    missing = [k for k in TRANSPORT_FAULTS + TOOL_FAULTS if k not in report["fault_counts"]]
    if report["requested_ticks"] >= 100 and missing:
        problems.append(f"fault kinds never drawn: {missing}")
    return problems


def render(report: dict) -> str:
    problems = failed_checks(report)
    rows = [
        ["ticks run (faulty + drain)", report["ticks"], "", ""],
        [
            "model requests / per fault kind",
            report["requests"],
            ", ".join(f"{k} {v}" for k, v in sorted(report["fault_counts"].items())),
            "",
        ],
        [
            "Script alive, ticks raised",
            report["script_alive"],
            report["crashed_ticks"],
            "pass" if report["script_alive"] and not report["crashed_ticks"] else "FAIL",
        ],
        [
            "events caused / answered / failed / lost",
            report["events_pushed"],
            f"{report['events_answered']} / {report['events_failed']} / {report['events_lost']}",
            "pass" if not report["events_lost"] and not report["events_queued"] else "FAIL",
        ],
        [
            "failed ticks / in status errors / with trace text",
            report["error_ticks"],
            f"{report['status_errors']} / {report['errors_with_text']}",
            (
                "pass"
                if report["status_errors"] == report["error_ticks"] == report["errors_with_text"]
                else "FAIL"
            ),
        ],
        [
            "bad tool calls sent / refused in traces",
            report["tool_faults"],
            report["refused_calls"],
            "pass" if report["refused_calls"] >= report["tool_faults"] else "FAIL",
        ],
        [
            "main-model failures / fallback requests / fallback answers",
            report["primary_transport_faults"],
            f"{report['fallback_requests']} / {report['fallback_iterations']}",
            "pass" if fallback_accounted(report) else "FAIL",
        ],
        ["wall time (s)", report["seconds"], "", ""],
    ]
    text = table(
        f"Fault soak: {report['requested_ticks']} ticks, {report['fault_rate'] * 100:.0f}% faults of "
        f"every kind, client timeout {report['timeout']} s",
        ["check", "value", "detail", "result"],
        rows,
    )
    if problems:
        text += "\nProblems: " + "; ".join(problems) + "\n"
    return text


def main(ticks: int = 1000) -> str:
    """Run the soak test with ``ticks`` ticks in a pytest subprocess; returns the Markdown."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "soak.json"
        env = dict(
            os.environ,
            SOAK_TICKS=str(ticks),
            SOAK_OUT=str(out),
            LITELLM_LOCAL_MODEL_COST_MAP="True",
            MEM0_TELEMETRY="False",
            HF_HUB_OFFLINE="1",
        )
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "tests/system/test_fault_soak.py",
                "-q",
                "-x",
                "-p",
                "no:cacheprovider",
                "-o",
                "timeout=1800",
            ],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=1900,
        )
        if not out.exists():
            text = f"### Fault soak\n\nDid not run:\n```\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}\n```\n"
        else:
            text = render(json.loads(out.read_text()))
    print(text)
    return text


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)

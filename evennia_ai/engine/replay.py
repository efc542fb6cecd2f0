"""``python -m evennia_ai.engine.replay FILE``: replay recorded ticks against the current build.

Each line of a tick recording (``EVENNIA_AI_RECORD_TICKS``, see
:mod:`evennia_ai.engine.recording`) is rebuilt with this build's prepare step and fed the
recorded replies; per tick it prints what changed in the requests (sections added, dropped,
grown or shrunk, in tokens; each model call's tokens) and marks the tick ``DIVERGED`` when the
build asks for a call the recording has no reply for. No database is used.

Run it from the game directory (its ``server/conf/settings.py`` is read, so the game's
``EVENNIA_AI_*`` settings apply), or anywhere with ``DJANGO_SETTINGS_MODULE`` set.

Exit status: 0 when no tick diverged, 1 when one did, 2 when the file or a line cannot be read.
``--json`` prints one JSON document instead of text.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import django
from django.conf import settings


def setup_django() -> None:
    """Configure Django (no database connection): the game's settings, else Evennia's defaults."""
    if "DJANGO_SETTINGS_MODULE" not in os.environ:
        if os.path.exists(os.path.join("server", "conf", "settings.py")):
            sys.path.insert(0, os.getcwd())
            os.environ["DJANGO_SETTINGS_MODULE"] = "server.conf.settings"
        else:
            os.environ["DJANGO_SETTINGS_MODULE"] = "evennia.settings_default"
    django.setup()


# The build step reads Evennia's settings when it is imported: configure Django first (a no-op
# inside a running game or a test run, where it already is).
if not settings.configured:
    setup_django()

from evennia_ai.engine.recording import (  # noqa: E402
    RecordingError,
    read_recording,
    replay_tick,
)
from evennia_ai.llm.errors import reason  # noqa: E402


def describe(number: int, replay) -> list[str]:
    """The text lines of one replayed tick."""
    head = f"tick {replay.tick_id} ({replay.context_type}, line {number}):"
    if replay.diverged:
        head += f" DIVERGED - {replay.diverged}"
    elif replay.changed:
        head += " changed"
    else:
        head += " unchanged"
    lines = [head]
    lines += [f"  {change}" for change in replay.section_changes]
    for index, call in enumerate(replay.calls, start=1):
        if call["same"]:
            continue
        if call["rebuilt"] is None:
            lines.append(f"  call {index} ({call['step']}): recorded, not asked for now")
        elif call["recorded"] is None:
            lines.append(f"  call {index} ({call['step']}): {call['rebuilt']} tokens, no reply")
        else:
            delta = call["rebuilt"] - call["recorded"]
            lines.append(
                f"  call {index} ({call['step']}): request {call['recorded']} -> "
                f"{call['rebuilt']} tokens ({delta:+d})"
            )
    if replay.unreplayed:
        lines.append(f"  not rebuilt (as recorded): {', '.join(replay.unreplayed)}")
    return lines


def main(argv: list[str] | None = None) -> int:
    """Replay the file named in ``argv``; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m evennia_ai.engine.replay",
        description="Replay recorded ticks (EVENNIA_AI_RECORD_TICKS) against this build.",
    )
    parser.add_argument("file", help="a recording: <data dir>/recordings/<npc>-<id>.jsonl")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    args = parser.parse_args(argv)
    ticks, problems = [], []
    try:
        for number, line in read_recording(args.file):
            if isinstance(line, RecordingError):
                problems.append(str(line))
                continue
            try:
                ticks.append((number, replay_tick(line)))
            except RecordingError as err:
                problems.append(f"line {number}: {err}")
            except Exception as err:  # a line this build cannot rebuild: say which and why
                problems.append(f"line {number}: cannot be replayed ({reason(err)})")
    except RecordingError as err:
        problems.append(str(err))
    diverged = [replay for _, replay in ticks if replay.diverged]
    changed = [replay for _, replay in ticks if replay.changed]
    if args.json:
        document = {
            "file": args.file,
            "ticks": [{"line": n, **replay.to_dict()} for n, replay in ticks],
            "summary": {"ticks": len(ticks), "changed": len(changed), "diverged": len(diverged)},
            "problems": problems,
        }
        print(json.dumps(document, indent=2, default=str))
    else:
        for number, replay in ticks:
            print("\n".join(describe(number, replay)))
        for problem in problems:
            print(f"problem: {problem}")
        print(
            f"{len(ticks)} tick(s) replayed: {len(changed)} changed, {len(diverged)} diverged"
            + (f", {len(problems)} problem(s)" if problems else "")
        )
    if problems:
        return 2
    return 1 if diverged else 0


if __name__ == "__main__":
    sys.exit(main())

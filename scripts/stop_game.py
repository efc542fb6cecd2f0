"""Stop an Evennia game's portal and server, also while the server is restarting (`make stop`).

``evennia stop`` asks the portal for the server's state: when the server is between two
processes (an ``evennia reload`` or a new game's first-start restart), the portal answers "not
running" and the launcher returns while the new server still comes up, leaving portal and
server running with their ports held. So this runs ``evennia stop`` and then checks the pid
files: while a process named there is alive it waits for a restarting server to settle (its pid
file naming a live process again) and runs ``evennia stop`` once more, up to ``--attempts``
times. What is still alive after that is ended by its pid (SIGTERM, then SIGKILL), and said so.

Usage::

    python scripts/stop_game.py demo_game --evennia .venv/bin/evennia

Exits 0 once no process of the game's pid files is alive (nothing running counts), 1 if one
survives even SIGKILL. Standard library only.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

PIDFILES = ("server.pid", "portal.pid")
POLL = 0.2
STOP_WAIT = 10.0  # seconds for the processes to end after `evennia stop`, or after a signal


def read_pid(path: Path) -> int | None:
    """The pid in ``path``, or None when the file is missing or unreadable."""
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def alive(pid: int | None) -> bool:
    """Whether process ``pid`` exists and is not a zombie."""
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def running(game: Path) -> dict[str, int]:
    """``{"server.pid": pid, ...}`` for each pid file naming a live process."""
    found = {name: read_pid(game / "server" / name) for name in PIDFILES}
    return {name: pid for name, pid in found.items() if pid and alive(pid)}


def wait_until(condition, timeout: float) -> bool:
    """Poll ``condition()`` until it is true or ``timeout`` seconds pass; returns the last
    answer."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(POLL)
    return bool(condition())


def settled(game: Path) -> bool:
    """Whether the game is not between two server processes: no portal, or a live server."""
    live = running(game)
    return "portal.pid" not in live or "server.pid" in live


def evennia_stop(game: Path, evennia: str, timeout: float) -> None:
    """Run ``evennia stop`` in ``game`` (its output passes through; a hang is cut short)."""
    try:
        subprocess.run(
            [evennia, "stop"], cwd=game, stdin=subprocess.DEVNULL, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        print(f"evennia stop did not return within {timeout:.0f} s.", flush=True)


def end_by_pid(game: Path, grace: float) -> list[str]:
    """SIGTERM each live process of the pid files, SIGKILL what is left after ``grace``
    seconds; returns the names of the pid files whose process still lives."""
    for pid in running(game).values():
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    if wait_until(lambda: not running(game), grace):
        return []
    for pid in running(game).values():
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    wait_until(lambda: not running(game), grace)
    return sorted(running(game))


def stop_game(
    game: Path, evennia: str, attempts: int = 3, settle: float = 60.0, timeout: float = 60.0
) -> bool:
    """Stop ``game``'s portal and server; returns whether nothing of it is left running.

    Args:
        game: The game directory (holding ``server/server.pid`` and ``server/portal.pid``).
        evennia: The ``evennia`` launcher to run.
        attempts: ``evennia stop`` runs at most this many times.
        settle: Seconds to wait for a restarting server before each attempt (a reload with
            the plugin's start-up work takes several).
        timeout: Seconds one ``evennia stop`` may take.
    """
    if not running(game):
        print(f"{game.name} is not running.", flush=True)
        return True
    for attempt in range(attempts):
        if not running(game):
            return True
        if attempt:
            print("The game is still running (it was restarting); stopping it again.", flush=True)
        wait_until(lambda: settled(game), settle)
        evennia_stop(game, evennia, timeout)
        wait_until(lambda: not running(game), STOP_WAIT)
    if not running(game):
        return True
    left = {name: pid for name, pid in running(game).items()}
    print(
        "evennia stop left "
        + ", ".join(f"{name.split('.')[0]} (pid {pid})" for name, pid in left.items())
        + " running; ending them by their pids.",
        flush=True,
    )
    survivors = end_by_pid(game, STOP_WAIT)
    if survivors:
        print(f"Could not stop: {', '.join(survivors)}.", file=sys.stderr)
    return not survivors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("game", type=Path, help="the game directory")
    parser.add_argument("--evennia", default="evennia", help="the evennia launcher to run")
    parser.add_argument("--attempts", type=int, default=3)
    parser.add_argument("--settle", type=float, default=60.0)
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args(argv)
    if not (args.game / "server").is_dir():
        print(f"{args.game} is not a game directory (no server/ folder).", file=sys.stderr)
        return 1
    done = stop_game(args.game, args.evennia, args.attempts, args.settle, args.timeout)
    return 0 if done else 1


if __name__ == "__main__":
    sys.exit(main())

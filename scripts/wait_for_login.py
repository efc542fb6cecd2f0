"""Wait until a player can log in to a starting Evennia game over telnet (used by demo.sh).

An open telnet port is not enough: the portal listens from the start, and on a new database
the first server runs the initial setup and then restarts once ("Initial setup complete.
Restarting Server once."); a login sent before that restart is lost. So this waits until the
server log, from where it stood before ``evennia start``, shows a server that is up with no
restart pending, and then until a real login as the superuser succeeds.

Usage::

    python scripts/wait_for_login.py --port 4000 --log server/logs/server.log --since BYTES

The account is read from ``EVENNIA_SUPERUSER_USERNAME`` and ``EVENNIA_SUPERUSER_PASSWORD`` (as
Evennia's own first start does), so the password never appears in a process list. Exits 0 once
logged in (the session then quits), 1 with the reason after ``--timeout`` seconds. Standard
library only.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import time
from pathlib import Path

# Lines of Evennia's server log (evennia/server/initial_setup.py, service.py).
SETUP_DONE = "Initial setup complete"  # the first server restarts after this line
RESTARTED = "successfully restarted in 'reset' mode"
UP = ("Evennia Server successfully started", "Server successfully reloaded", RESTARTED)
LOGGED_IN = "You become"
POLL = 0.5


def server_is_final(log: str, first_start: bool = False) -> bool:
    """Whether ``log`` (the server log since the start) shows a server up with no restart due.

    After "Initial setup complete" the first server may still report itself started before it
    restarts, so only the restart's own line clears a pending restart. On a new database
    (``first_start``) the server may also report itself started *before* it logs that the setup
    is complete, so there only the restart's line means the final server is up.
    """
    if first_start and RESTARTED not in log:
        return False
    up = pending_restart = False
    for line in log.splitlines():
        if SETUP_DONE in line:
            pending_restart = True
        if RESTARTED in line:
            pending_restart = False
        if any(marker in line for marker in UP):
            up = True
    return up and not pending_restart


def read_log(path: Path, since: int) -> str:
    """The log from byte ``since`` on (from the start if the file was rotated or is missing)."""
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    return data[since if since <= len(data) else 0 :].decode("utf8", "replace")


def try_login(host: str, port: int, user: str, password: str, wait: float = 5.0) -> str:
    """Send ``connect <user> <password>``; return what the game answered within ``wait`` s.

    The answer contains :data:`LOGGED_IN` when the login worked; the session then quits.
    Raises OSError when nothing listens on the port.
    """
    with socket.create_connection((host, port), timeout=wait) as sock:
        sock.settimeout(POLL)
        seen = b""
        _drain(sock)
        sock.sendall(f"connect {user} {password}\r\n".encode())
        deadline = time.monotonic() + wait
        while LOGGED_IN.encode() not in seen and time.monotonic() < deadline:
            chunk = _drain(sock)
            if chunk is None:
                break
            seen += chunk
        if LOGGED_IN.encode() in seen:
            sock.sendall(b"quit\r\n")
            _wait_closed(sock, wait)
        return seen.replace(b"\xff", b"").decode("utf8", "replace")


def _wait_closed(sock: socket.socket, wait: float) -> None:
    """Read until the game closes the connection (at most ``wait`` s).

    The check logs in as the same account the player (or a test) logs in with next: its quit
    must be done first, or a late quit unpuppets the character the next login just took over
    (on a busy machine the player then finds no character commands).
    """
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if _drain(sock) is None:
            return


def _drain(sock: socket.socket) -> bytes | None:
    """Whatever arrives within one poll interval; None when the other side closed."""
    try:
        data = sock.recv(65536)
    except socket.timeout:
        return b""
    return data or None


def wait_for_login(
    port: int,
    log: Path,
    since: int,
    user: str,
    password: str,
    timeout: float = 120.0,
    host: str = "127.0.0.1",
    first_start: bool = False,
) -> tuple[bool, str]:
    """Wait for the final server, then for a successful login.

    ``first_start``: the database is new (its server restarts once after the initial setup).

    Returns:
        ``(True, "")`` once logged in, or ``(False, reason)`` when ``timeout`` ran out.
    """
    deadline = time.monotonic() + timeout
    reason = "the server log never showed the server up"
    while time.monotonic() < deadline:
        if not server_is_final(read_log(log, since), first_start):
            time.sleep(POLL)
            continue
        try:
            answer = try_login(host, port, user, password)
        except OSError as err:
            reason = f"telnet {host}:{port}: {err}"
        else:
            if LOGGED_IN in answer:
                return True, ""
            last = answer.strip().splitlines()[-1:] or ["no answer"]
            reason = f"the login as {user!r} did not work: {last[0][:200]}"
        time.sleep(POLL)
    return False, reason


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--port", type=int, default=4000, help="telnet port (default 4000)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--log", type=Path, required=True, help="the game's server/logs/server.log")
    parser.add_argument(
        "--since", type=int, default=0, help="size in bytes of the log before `evennia start`"
    )
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds (default 120)")
    parser.add_argument(
        "--first-start",
        action="store_true",
        help="a new database: wait for the restart after the initial setup",
    )
    args = parser.parse_args(argv)
    user = os.environ.get("EVENNIA_SUPERUSER_USERNAME", "")
    password = os.environ.get("EVENNIA_SUPERUSER_PASSWORD", "")
    if not user or not password:
        print("Set EVENNIA_SUPERUSER_USERNAME and EVENNIA_SUPERUSER_PASSWORD.", file=sys.stderr)
        return 1
    ok, reason = wait_for_login(
        args.port, args.log, args.since, user, password, args.timeout, args.host, args.first_start
    )
    if not ok:
        print(f"No login possible after {args.timeout:.0f}s: {reason}", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

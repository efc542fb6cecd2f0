"""A real game server for the server benchmarks, and a telnet player that times round trips.

Builds on ``tests/support/game_server.py`` (a throwaway game from ``world_example/`` on free
loopback ports); adds the repository root to the game's ``sys.path`` so ``bench.server_probe``
can be imported in the server through ``py``, and reads the server's pid for RSS figures.
"""

from __future__ import annotations

import json
import os
import re
import select
import socket
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.game_server import GameServer  # noqa: E402

ANSI = re.compile(r"\x1b\[[0-9;]*m")


@contextmanager
def game(settings: str, timeout: float = 180):
    """A started game server with ``settings`` appended; always stopped afterwards."""
    extra = f"import sys\nsys.path.insert(0, {str(ROOT)!r})\n{settings}"
    for attempt in (1, 2):
        with tempfile.TemporaryDirectory(prefix="evennia_ai_bench_") as folder:
            server = GameServer(Path(folder), extra_settings=extra)
            try:
                try:
                    server.create()
                    server.start(timeout=timeout)
                except RuntimeError as err:
                    # A busy machine can make the first start's restart (after the initial
                    # setup) race the old process ("Another twistd server is running").
                    if attempt == 2:
                        raise
                    print(
                        f"game server did not start ({str(err)[:200]}); trying again",
                        file=sys.stderr,
                    )
                    continue
                yield server
                return
            finally:
                server.stop()


def server_pid(server: GameServer) -> int:
    return int((server.game / "server" / "server.pid").read_text().strip())


def rss_of(pid: int) -> int:
    """Resident set size of ``pid`` in bytes (Linux /proc)."""
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


class Player:
    """A telnet player that reads without waiting for silence, so round trips are exact."""

    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.seen = ""

    def send(self, line: str) -> None:
        self.sock.sendall(line.encode() + b"\r\n")

    def drain(self, quiet: float = 0.3) -> str:
        """Read until ``quiet`` seconds pass with nothing new."""
        out = ""
        while True:
            ready, _, _ = select.select([self.sock], [], [], quiet)
            if not ready:
                return out
            data = self.sock.recv(65536)
            if not data:
                return out
            out += ANSI.sub("", data.replace(b"\xff", b"").decode("utf8", "replace"))

    def until(self, needle: str, timeout: float = 30.0) -> str:
        """Read until ``needle`` appears; returns what was read (raises TimeoutError)."""
        deadline = time.monotonic() + timeout
        buffer = ""
        while needle not in buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{needle!r} not seen in {timeout}s; got {buffer[-500:]!r}")
            ready, _, _ = select.select([self.sock], [], [], left)
            if ready:
                data = self.sock.recv(65536)
                if not data:
                    raise ConnectionError("the server closed the connection")
                buffer += ANSI.sub("", data.replace(b"\xff", b"").decode("utf8", "replace"))
        return buffer

    def login(self, user: str, password: str) -> None:
        self.drain(0.5)
        self.send(f"connect {user} {password}")
        self.until("You become", 20)
        self.drain(0.5)

    def round_trip(self, line: str, needle: str, timeout: float = 30.0) -> float:
        """Seconds from sending ``line`` to ``needle`` appearing."""
        self.drain(0.0 if False else 0.05)
        started = time.perf_counter()
        self.send(line)
        self.until(needle, timeout)
        return time.perf_counter() - started

    def py(self, code: str, wait: float = 0.3) -> str:
        """Run ``py <code>`` in the server (the account must be a Developer)."""
        self.send(f"py {code}")
        return self.drain(wait)

    def close(self) -> None:
        try:
            self.send("quit")
        except OSError:
            pass
        self.sock.close()


def probe(player: Player, timeout: float = 30.0) -> dict:
    """Figures from ``bench.server_probe.report`` in the server."""
    path = os.path.join(
        tempfile.gettempdir(), f"evennia_ai_probe_{os.getpid()}_{time.monotonic_ns()}.json"
    )
    player.send(f"py import bench.server_probe as p; p.report({path!r})")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if os.path.exists(path):
            data = json.loads(Path(path).read_text())
            os.unlink(path)
            player.drain(0.05)
            return data
        time.sleep(0.05)
    raise TimeoutError("the server probe did not answer")

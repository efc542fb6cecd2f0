"""scripts/wait_for_login.py: `make demo` returns only when a player can log in.

A fake telnet game (a loopback socket server that answers ``connect``) and a server log the
test writes stand in for Evennia, so the waiting logic is checked without starting a game:
the first start's restart after the initial setup, a port that opens late, a refused login.
"""

import socket
import threading
import time

import pytest
from support.game_server import login_wait as wfl

FIRST_START = [
    "[..] Server started for the first time. Setting defaults.",
    "[..] Initial setup complete. Restarting Server once.",
    "[..] Evennia Server successfully started.",
    "[..] Evennia Server successfully restarted in 'reset' mode.",
]


class FakeGame:
    """A telnet port that logs ``admin``/``secret`` in ("You become Admin.") and refuses others."""

    def __init__(self, port: int = 0):
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen()
        self.port = self.sock.getsockname()[1]
        self.logins = []
        self.closed_at = None
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.sendall(b"\xff\xfb\x01Welcome to the fake game\r\n")
                line = conn.makefile("rb").readline().decode().strip()
                self.logins.append(line)
                if line == "connect admin secret":
                    conn.sendall(b"\x1b[1mYou become \x1b[1mAdmin\x1b[0m.\r\n")
                    conn.settimeout(2)
                    try:
                        self.logins.append(conn.makefile("rb").readline().decode().strip())
                    except OSError:
                        pass
                    time.sleep(0.3)  # a game busy logging the session out
                    self.closed_at = time.monotonic()
                else:
                    conn.sendall(b"Incorrect login information given.\r\n")

    def close(self):
        self.sock.close()


@pytest.fixture
def game():
    fake = FakeGame()
    yield fake
    fake.close()


@pytest.mark.parametrize(
    "lines, final",
    [
        ([], False),
        (FIRST_START[:1], False),
        (FIRST_START[:2], False),
        (FIRST_START[:3], False),  # the first server reports itself up just before it restarts
        (FIRST_START, True),
        (["[..] Evennia Server successfully started."], True),  # an existing game
        (["[..] Server successfully reloaded."], True),
    ],
)
def test_only_the_server_after_the_setup_restart_counts(lines, final):
    assert wfl.server_is_final("\n".join(lines)) is final


def test_a_new_game_waits_for_the_restart_even_when_started_is_logged_before_the_setup():
    started_first = ["[..] Evennia Server successfully started."]  # setup not logged yet
    assert wfl.server_is_final("\n".join(started_first)) is True  # an existing game: fine
    assert wfl.server_is_final("\n".join(started_first), first_start=True) is False
    assert wfl.server_is_final("\n".join(FIRST_START), first_start=True) is True


def test_the_log_is_read_from_the_start_of_this_run(tmp_path):
    log = tmp_path / "server.log"
    log.write_text("[old] Evennia Server successfully started.\n")
    since = log.stat().st_size
    assert wfl.read_log(log, since) == ""
    log.write_text("rotated\n")  # shorter than `since`: read from the start
    assert wfl.read_log(log, since) == "rotated\n"
    assert wfl.read_log(tmp_path / "missing.log", 0) == ""


def test_waits_through_the_restart_then_logs_in(tmp_path, game):
    log = tmp_path / "server.log"
    log.write_text("\n".join(FIRST_START[:3]) + "\n")

    def restart_later():
        time.sleep(1.0)
        with open(log, "a") as fh:
            fh.write(FIRST_START[3] + "\n")

    writer = threading.Thread(target=restart_later)
    started = time.monotonic()
    writer.start()
    ok, reason = wfl.wait_for_login(game.port, log, 0, "admin", "secret", timeout=10)
    writer.join()
    assert ok, reason
    assert time.monotonic() - started >= 1.0, "logged in before the restart"
    assert game.logins == ["connect admin secret", "quit"]
    # Returned only once the game had closed the check's session: a later login as the same
    # account cannot be undone by the check's quit.
    assert game.closed_at is not None and time.monotonic() >= game.closed_at


def test_waits_for_a_port_that_opens_late(tmp_path):
    log = tmp_path / "server.log"
    log.write_text(FIRST_START[2] + "\n")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    games = []
    opener = threading.Timer(1.0, lambda: games.append(FakeGame(port)))
    opener.start()
    try:
        ok, reason = wfl.wait_for_login(port, log, 0, "admin", "secret", timeout=10)
    finally:
        opener.join()
        for fake in games:
            fake.close()
    assert ok, reason


def test_a_refused_login_is_reported_when_time_runs_out(tmp_path, game):
    log = tmp_path / "server.log"
    log.write_text(FIRST_START[2] + "\n")
    ok, reason = wfl.wait_for_login(game.port, log, 0, "admin", "wrong", timeout=1.5)
    assert not ok
    assert "Incorrect login information given." in reason


def test_the_command_line_exits_0_when_logged_in_and_1_otherwise(tmp_path, game, monkeypatch):
    log = tmp_path / "server.log"
    log.write_text(FIRST_START[2] + "\n")
    args = ["--port", str(game.port), "--log", str(log), "--timeout", "2"]
    monkeypatch.setenv("EVENNIA_SUPERUSER_USERNAME", "admin")
    monkeypatch.setenv("EVENNIA_SUPERUSER_PASSWORD", "secret")
    assert wfl.main(args) == 0
    monkeypatch.setenv("EVENNIA_SUPERUSER_PASSWORD", "wrong")
    assert wfl.main(args) == 1
    monkeypatch.delenv("EVENNIA_SUPERUSER_PASSWORD")
    assert wfl.main(args) == 1

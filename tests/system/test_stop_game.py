"""scripts/stop_game.py: one `make stop` stops portal and server, also mid-reload.

The issue: `make stop` run while the demo server was coming back from a `reload` returned and
left the portal and server running (ports held); a second `make stop` stopped them. Evennia's
launcher asks the portal, which answers "server not running" between the two server processes.

The fast tests stand in for Evennia: two ``sleep`` processes named by the game's pid files and a
fake ``evennia`` launcher that, like the real one mid-reload, returns the first time without
stopping anything. The ``server`` test does it with a real game and ``evennia reload``.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import time

import pytest
from support.game_server import ROOT, GameServer, load_script, pid_alive, wait_gone

stop_game = load_script("stop_game")

# A launcher that leaves everything running on its first call (the portal said "Server already
# stopped" mid-reload) and ends both processes on the next.
FAKE_EVENNIA = """#!/bin/sh
echo call >> "$(pwd)/launcher_calls"
if [ "$(wc -l < "$(pwd)/launcher_calls")" -ge 2 ]; then
    kill "$(cat server/server.pid)" "$(cat server/portal.pid)"
    echo "Evennia shut down."
else
    echo "Server already stopped."
fi
"""


@pytest.fixture
def fake_game(tmp_path, monkeypatch):
    """A game directory whose pid files name two live processes; yields (game, processes,
    launcher). The script polls faster and waits 2 s, not 10, after each stop."""
    monkeypatch.setattr(stop_game, "POLL", 0.05)
    monkeypatch.setattr(stop_game, "STOP_WAIT", 2.0)
    game = tmp_path / "demo_game"
    (game / "server").mkdir(parents=True)
    processes = [subprocess.Popen(["sleep", "300"]) for _ in range(2)]
    for name, process in zip(("server.pid", "portal.pid"), processes):
        (game / "server" / name).write_text(str(process.pid))
    launcher = tmp_path / "evennia"
    launcher.write_text(FAKE_EVENNIA)
    launcher.chmod(launcher.stat().st_mode | stat.S_IXUSR)
    yield game, processes, launcher
    for process in processes:
        process.kill()
        process.wait()


def reap(processes) -> None:
    """Let the ended ``sleep`` children be reaped, as their parent would."""
    for process in processes:
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass


def test_a_launcher_that_returns_mid_reload_is_run_again(fake_game, capsys):
    game, processes, launcher = fake_game
    assert stop_game.running(game).keys() == {"server.pid", "portal.pid"}
    assert stop_game.stop_game(game, str(launcher), settle=1.0, timeout=10.0)
    reap(processes)
    assert (game / "launcher_calls").read_text().count("call") == 2
    assert not stop_game.running(game)
    assert "still running (it was restarting); stopping it again" in capsys.readouterr().out


def test_what_the_launcher_never_stops_is_ended_by_its_pid(fake_game, tmp_path, capsys):
    game, processes, _launcher = fake_game
    idle = tmp_path / "idle_evennia"
    idle.write_text("#!/bin/sh\necho 'Server already stopped.'\n")
    idle.chmod(idle.stat().st_mode | stat.S_IXUSR)
    started = time.monotonic()
    assert stop_game.stop_game(game, str(idle), attempts=2, settle=0.5, timeout=5.0)
    reap(processes)
    assert not stop_game.running(game) and time.monotonic() - started < 60
    assert "ending them by their pids" in capsys.readouterr().out


def test_nothing_running_is_already_stopped(tmp_path, capsys):
    game = tmp_path / "demo_game"
    (game / "server").mkdir(parents=True)
    (game / "server" / "server.pid").write_text("999999999")
    assert stop_game.stop_game(game, "/nonexistent/evennia")
    assert "demo_game is not running." in capsys.readouterr().out
    assert stop_game.main([str(tmp_path / "nowhere")]) == 1


def test_make_stop_stops_both_with_one_call(fake_game, tmp_path):
    """`make stop` itself, in a copy of the checkout's Makefile with the fake launcher."""
    game, processes, launcher = fake_game
    checkout = tmp_path / "checkout"
    (checkout / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "Makefile", checkout / "Makefile")
    for script in ("stop_game.py", "find_python312.sh"):
        shutil.copy(ROOT / "scripts" / script, checkout / "scripts" / script)
    shutil.move(str(game), checkout / "demo_game")
    venv_bin = checkout / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    os.symlink(sys.executable, venv_bin / "python")
    shutil.copy(launcher, venv_bin / "evennia")
    result = subprocess.run(
        ["make", "-s", "stop"], cwd=checkout, capture_output=True, text=True, timeout=120
    )
    reap(processes)
    assert result.returncode == 0, result.stdout + result.stderr
    assert not any(pid_alive(p.pid) for p in processes), result.stdout
    assert (checkout / "demo_game" / "launcher_calls").read_text().count("call") == 2


@pytest.mark.server
@pytest.mark.timeout(300)
def test_one_stop_during_a_reload_stops_a_real_game(tmp_path):
    settings = "EVENNIA_AI_MEMORY_INIT_DELAY = 600\n"  # the plugin's start as a game has it
    game = GameServer(tmp_path, extra_settings=settings)
    game.create()
    try:
        game.start()
        portal = game.pid("portal")
        reloading = subprocess.Popen(
            [str(game.bin / "evennia"), "reload"],
            cwd=game.game,
            env=game.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        # Until the old server has gone: the launcher then meets the server between processes.
        old = game.pid("server")
        wait_gone(old, 30.0)
        result = subprocess.run(
            [sys.executable, str(ROOT / "scripts" / "stop_game.py"), str(game.game)]
            + ["--evennia", str(game.bin / "evennia")],
            env=game.env,
            capture_output=True,
            text=True,
            timeout=240,
        )
        reloading.wait(timeout=120)
        assert result.returncode == 0, result.stdout + result.stderr
        assert not pid_alive(portal) and not stop_game.running(game.game), result.stdout
    finally:
        game.stop()

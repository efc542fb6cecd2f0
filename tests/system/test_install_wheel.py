"""The documented install, end to end: the wheel, a fresh virtualenv, a fresh game, an NPC.

A copy of the checkout is built into a wheel (``pip wheel . --no-deps``), which is installed
into a new virtualenv (no system site-packages) from pip's configured package index, the same
one ``make test`` installs from. ``evennia --init`` makes a plain game; the settings block of
``docs/installing.md`` is appended to its settings verbatim (parsed out of the doc, so the doc
and this test cannot drift), followed only by ports and the loopback model server. The game is
migrated and started with that virtualenv's ``evennia``; an admin logs in over telnet, creates
an NPC as step 6 of the guide does, speaks to it and hears its answer.

The fast checks of the same files (the wheel's contents and description, README agreeing with
the guide) are in ``tests/system/test_packaging.py``.
"""

import re
import shutil
import sys
import time
from pathlib import Path

import pytest
from support.game_server import GameServer, TelnetClient
from support.wheel import build_wheel, documented_settings, run
from system.test_crash_survival import responder  # answers what was said through ``say``

from evennia_ai.testing.model_server import ModelServer

pytestmark = [pytest.mark.server, pytest.mark.timeout(480)]

ANSI = re.compile(r"\x1b\[[0-9;]*m")
# Environment the plugin itself must provide (docs/installing.md, "Offline defaults"): the
# game server does not get them from the test run.
PLUGIN_DEFAULTS = ("LITELLM_LOCAL_MODEL_COST_MAP", "MEM0_TELEMETRY", "HF_HUB_OFFLINE")


def install_into_new_venv(wheel: Path, venv: Path) -> Path:
    """A new virtualenv with ``wheel`` installed as the guide's step 1 does; returns its bin."""
    run(sys.executable, "-m", "venv", venv, timeout=120)
    # --no-compile: Python compiles what the server imports; compiling all of litellm and
    # Django up front would double the install time.
    run(venv / "bin" / "python", "-m", "pip", "install", "-q", "--no-compile", wheel, timeout=420)
    return venv / "bin"


def test_the_documented_install_gives_an_npc_that_answers(tmp_path):
    venv = tmp_path / "venv"
    started = time.monotonic()
    try:
        bin_dir = install_into_new_venv(build_wheel(tmp_path), venv)
        installed = time.monotonic()
        with ModelServer(responder=responder) as model:
            settings = (
                "\n# --- docs/installing.md, step 2, verbatim ---\n"
                + documented_settings()
                + "\n# --- this test: the loopback model server ---\n"
                + 'EVENNIA_AI_MODEL = "openai/test-model"\n'
                + f'EVENNIA_AI_API_BASE = "{model.url}"\n'
                + 'EVENNIA_AI_API_KEY = "x"\n'
            )
            game = GameServer(
                tmp_path / "game", extra_settings=settings, bin_dir=bin_dir, overlay=None
            )
            for name in PLUGIN_DEFAULTS:
                game.env.pop(name, None)
            with game:
                with TelnetClient(game.telnet_port) as admin:
                    assert "You become" in admin.login("admin", game.password)
                    where = admin.py_json("__import__('evennia_ai').__file__")
                    assert where.startswith(str(venv)), f"the server imported {where}"
                    admin.send("create/drop Marta:evennia_ai.typeclasses.AIAssistantCharacter")
                    admin.read_until("Marta", timeout=15)
                    admin.send("say Hello, Marta!")
                    heard = ANSI.sub("", admin.read_until("You said: Hello, Marta!", timeout=60))
                    assert "Marta says" in heard
        print(
            f"\nwheel built and installed in {installed - started:.0f} s; game created, "
            f"started and answered in {time.monotonic() - installed:.0f} s"
        )
    finally:
        shutil.rmtree(venv, ignore_errors=True)

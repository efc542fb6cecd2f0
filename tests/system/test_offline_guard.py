"""The suite's test doubles cannot leak: no shell setting wins, no socket leaves loopback."""

import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import OUTSIDE_ATTEMPTS, is_loopback

from evennia_ai import conf


def test_environment_overridable_settings_are_cleared():
    names = [s.name for s in conf.SETTINGS.values() if s.env]
    assert "EVENNIA_AI_MODEL" in names and "EVENNIA_AI_API_KEY" in names
    assert not [name for name in names if name in os.environ]


def test_shell_model_does_not_win_over_the_suite():
    """A model exported in the shell is gone by the time a test runs (checked in a child run)."""
    tests_dir = Path(__file__).parent
    child = tests_dir / f"_child_env_{os.getpid()}.py"
    child.write_text(textwrap.dedent("""
            import os
            from django.test import override_settings
            from evennia_ai import conf

            def test_child():
                assert "EVENNIA_AI_MODEL" not in os.environ
                assert "EVENNIA_AI_API_KEY" not in os.environ
                with override_settings(EVENNIA_AI_MODEL="openai/test-model"):
                    assert conf.get("EVENNIA_AI_MODEL") == "openai/test-model"
            """))
    env = dict(os.environ, EVENNIA_AI_MODEL="anthropic/claude-real", EVENNIA_AI_API_KEY="sk-real")
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(child)],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            cwd=tests_dir.parent,
        )
    finally:
        child.unlink()
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


@pytest.mark.parametrize(
    "host, loopback",
    [
        ("127.0.0.1", True),
        ("127.5.0.1", True),
        ("::1", True),
        ("localhost", True),
        (None, True),
        ("0.0.0.0", True),
        ("api.openai.com", False),
        ("8.8.8.8", False),
        ("10.0.0.1", False),
    ],
)
def test_loopback_hosts(host, loopback):
    assert is_loopback(host) is loopback


def test_outside_connection_is_refused_and_recorded():
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("api.openai.com", 443), timeout=1)
    assert OUTSIDE_ATTEMPTS  # the autouse fixture would fail this test: clear for it
    OUTSIDE_ATTEMPTS.clear()


def test_swallowed_attempt_is_still_seen():
    try:
        socket.getaddrinfo("huggingface.co", 443)
    except OSError:
        pass  # a library that retries or ignores errors
    assert OUTSIDE_ATTEMPTS == ["name lookup of 'huggingface.co'"]
    OUTSIDE_ATTEMPTS.clear()


def test_loopback_still_works():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    client = socket.create_connection(server.getsockname(), timeout=2)
    client.close()
    server.close()
    assert not OUTSIDE_ATTEMPTS

"""Shared pytest setup: Evennia initialised once, and test doubles that cannot leak.

- Evennia is initialised inside pytest-django's database unblock.
- Every ``EVENNIA_AI_*`` setting an environment variable may override is removed from the
  environment first, so a model or key exported in the developer's shell never wins over the
  tests' ``override_settings`` (and never reaches a real provider).
- A socket guard refuses any connection or name lookup outside the loopback interface (mem0,
  litellm and Hugging Face included) and fails the test that tried, even where the library
  swallowed the error.
"""

import gc
import ipaddress
import os
import socket

import pytest
from support import postgres

from evennia_ai import conf

#: The ``pgvector_memory`` fixture (long-term memory on PostgreSQL) for any test module.
pytest_plugins = ["support.memory"]

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
for _setting in conf.SETTINGS.values():
    if _setting.env:
        os.environ.pop(_setting.name, None)

_LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", ""}
OUTSIDE_ATTEMPTS: list[str] = []


def is_loopback(host) -> bool:
    """Whether ``host`` (a name, an address or None) stays on this machine."""
    if host is None:
        return True
    if isinstance(host, bytes):
        host = host.decode(errors="replace")
    host = str(host).strip("[]").lower()
    if host in _LOOPBACK_NAMES:
        return True
    try:
        address = ipaddress.ip_address(host.split("%")[0])
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


def _refuse(what: str) -> None:
    OUTSIDE_ATTEMPTS.append(what)
    raise ConnectionRefusedError(f"test socket guard: {what} is outside 127.0.0.1")


_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex
_real_getaddrinfo = socket.getaddrinfo


def _guarded_connect(sock, address):
    if sock.family in (socket.AF_INET, socket.AF_INET6) and not is_loopback(address[0]):
        _refuse(f"connection to {address[0]}:{address[1]}")
    return _real_connect(sock, address)


def _guarded_connect_ex(sock, address):
    if sock.family in (socket.AF_INET, socket.AF_INET6) and not is_loopback(address[0]):
        _refuse(f"connection to {address[0]}:{address[1]}")
    return _real_connect_ex(sock, address)


def _guarded_getaddrinfo(host, *args, **kwargs):
    if not is_loopback(host):
        _refuse(f"name lookup of {host!r}")
    return _real_getaddrinfo(host, *args, **kwargs)


socket.socket.connect = _guarded_connect
socket.socket.connect_ex = _guarded_connect_ex
socket.getaddrinfo = _guarded_getaddrinfo


@pytest.fixture(scope="session")
def pgvector_dsn():
    """A connection string to a PostgreSQL database with pgvector, for the long-term memory
    tests on PostgreSQL: the server of ``make test``'s PostgreSQL run when it has pgvector,
    else a throwaway one started here (and removed after the session); skipped, saying why,
    where no installation has pgvector."""
    if os.environ.get(postgres.ENV_PGVECTOR):
        yield os.environ[postgres.ENV_PGVECTOR]
        return
    server = postgres.PostgresServer(extensions=("vector",))
    try:
        server.start()
    except postgres.PostgresUnavailable as why:
        pytest.skip(f"PostgreSQL with pgvector unavailable: {why}")
    try:
        yield server.dsn()
    finally:
        server.stop()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """Before each test, move every object alive to the collector's permanent generation.

    Evennia's test cases run a full garbage collection after each test (the idmapper's
    ``flush_cache``), which walks every object the run holds: Django, Evennia, litellm and the
    plugin, some 400,000 objects, 0.2-0.4 s a test. Frozen (:func:`gc.freeze`), those are
    skipped: what a collection walks is what the test made, and a test's own objects are made
    after the freeze and collected as before. What is frozen is what the run was keeping anyway
    (modules, classes, caches).
    """
    gc.freeze()


@pytest.fixture(autouse=True)
def _no_outside_network():
    """Fail a test that tried to reach beyond loopback, even if the attempt was swallowed."""
    OUTSIDE_ATTEMPTS.clear()
    yield
    if OUTSIDE_ATTEMPTS:
        tried = "; ".join(dict.fromkeys(OUTSIDE_ATTEMPTS))
        OUTSIDE_ATTEMPTS.clear()
        pytest.fail(f"the test tried to reach outside 127.0.0.1: {tried}")


@pytest.fixture(autouse=True)
def _fresh_model_health():
    """Every test starts with every model endpoint healthy (the board is process memory)."""
    from evennia_ai.engine import outages

    outages.BOARD.clear()
    yield
    outages.BOARD.clear()


@pytest.fixture(autouse=True)
def _contracts_hold():
    """Fail a test whose code sent a request that breaks its kind's contract.

    The gate raises in strict mode, but a raise inside a tick only ends that tick; counting
    here makes the test that caused it fail. Tests of a deliberate violation take theirs with
    ``contracts.take_violations()``.
    """
    from evennia_ai.llm import contracts
    from evennia_ai.testing import model_server

    contracts.take_violations()
    model_server.take_violations()
    yield
    refused = model_server.take_violations()
    if refused:
        pytest.fail("the loopback model server refused requests: " + " | ".join(refused[:5]))
    broken = contracts.take_violations()
    if broken:
        pytest.fail(
            "requests broke their contracts: "
            + "; ".join(f"{kind}: {', '.join(problems)}" for kind, problems in broken[:5])
        )


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    from pytest_django.plugin import blocking_manager_key

    manager = config.stash.get(blocking_manager_key, None)
    if manager is not None:
        with manager.unblock():
            import evennia

            evennia._init()
            _strict_contracts()
    else:  # pragma: no cover - pytest-django not active
        import evennia

        evennia._init()
        _strict_contracts()


def _strict_contracts() -> None:
    """Requests that break their contract raise in tests (EVENNIA_AI_STRICT_CONTRACTS), and the
    loopback model server checks every request against the window the project configures."""
    from django.conf import settings

    from evennia_ai.llm import tokens
    from evennia_ai.testing.model_server import ModelServer

    settings.EVENNIA_AI_STRICT_CONTRACTS = True
    # tests talk faster than players; the flood limit has tests of its own
    settings.EVENNIA_AI_SPEAKER_EVENTS_PER_MINUTE = 0

    def window_of(model: str) -> int:
        return tokens.get_context_window(model if "/" in model else f"openai/{model}")

    ModelServer.default_window_of = staticmethod(window_of)

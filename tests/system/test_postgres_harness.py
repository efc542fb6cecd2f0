"""The PostgreSQL harness itself (tests/support/postgres.py): it starts, connects, stops, cleans up.

These start real servers (a few seconds each) and are skipped, with the reason, where
PostgreSQL cannot be had (no server binaries, no psycopg, root without a ``postgres`` user).
"""

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from support import postgres
from support.postgres import PostgresServer, PostgresUnavailable, process_alive


def need_postgres() -> None:
    """Skip the test, with the reason, where PostgreSQL cannot be had."""
    try:
        postgres.find_bindir()
        postgres.require_driver()
        postgres.server_user()
    except PostgresUnavailable as why:
        pytest.skip(f"PostgreSQL unavailable: {why}")


def started(server: PostgresServer) -> PostgresServer:
    need_postgres()
    return server.start()


def alive(pid: int) -> bool:
    return process_alive(pid)


def test_a_throwaway_server_starts_serves_the_game_role_and_is_gone_after_stop():
    psycopg = pytest.importorskip("psycopg")
    server = started(PostgresServer(database="harness_check"))
    base, pid = server.base, server.pid()
    try:
        assert alive(pid)
        settings = server.django_database()
        assert settings["ENGINE"] == "django.db.backends.postgresql"
        assert (settings["HOST"], settings["PORT"]) == ("127.0.0.1", str(server.port))
        with server.connect("harness_check", superuser=False) as conn:
            user, database = conn.execute("SELECT current_user, current_database()").fetchone()
            conn.execute("CREATE TABLE written (n int)")
            conn.execute("INSERT INTO written VALUES (1)")
            assert conn.execute("SELECT n FROM written").fetchone() == (1,)
        assert (user, database) == ("evennia", "harness_check")
        with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
            psycopg.connect(
                host="127.0.0.1", port=server.port, user="evennia", password="x", dbname="postgres"
            )
    finally:
        server.stop()
    assert not alive(pid)
    assert not base.exists()
    server.stop()  # twice is harmless


@pytest.fixture
def reachable_dir():
    """A directory the server's user can enter (pytest's tmp_path is private to root)."""
    path = Path(tempfile.mkdtemp(prefix="evennia_ai_pg_kept_"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_a_kept_cluster_keeps_its_files_port_and_password_across_restarts(reachable_dir):
    data_dir = reachable_dir / "pg"
    first = started(PostgresServer(data_dir))
    try:
        with first.connect("evennia", superuser=False) as conn:
            conn.execute("CREATE TABLE kept (n int)")
            conn.execute("INSERT INTO kept VALUES (7)")
    finally:
        first.stop()
    assert not first.running() and (data_dir / "data" / "PG_VERSION").is_file()

    again = started(PostgresServer(data_dir))
    try:
        assert (again.port, again.password) == (first.port, first.password)
        with again.connect("evennia", superuser=False) as conn:
            assert conn.execute("SELECT n FROM kept").fetchone() == (7,)
    finally:
        again.stop()
    assert not again.running()


def test_a_kept_cluster_out_of_the_server_users_reach_is_refused_clearly(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("only root hands the server to another user")
    need_postgres()
    tmp_path.parent.chmod(0o700)  # pytest's own folder: root's alone
    with pytest.raises(PostgresUnavailable, match="cannot enter"):
        PostgresServer(tmp_path / "pg").start()


def test_the_test_run_skips_with_a_reason_where_postgres_cannot_be_had(monkeypatch, capsys):
    def missing(extensions=()):
        raise PostgresUnavailable("no PostgreSQL server binaries here")

    monkeypatch.setattr(postgres, "find_bindir", missing)
    assert postgres.run_tests([], timeout=60) == 0
    assert "PostgreSQL tests SKIPPED: no PostgreSQL server binaries here" in capsys.readouterr().out


def fake_install(root: Path, *extensions: str) -> Path:
    """A PostgreSQL installation's layout (empty files): bin/ with the tools, share/ with
    ``extensions``."""
    bindir = root / "bin"
    bindir.mkdir(parents=True)
    for tool in ("initdb", "pg_ctl", "postgres"):
        (bindir / tool).touch()
    shared = root / "share" / "postgresql" / "extension"
    shared.mkdir(parents=True)
    for name in extensions:
        (shared / f"{name}.control").touch()
    return bindir


def test_the_server_with_the_extensions_asked_for_is_preferred(tmp_path, monkeypatch):
    debian = fake_install(tmp_path / "debian", "plpgsql")
    wheel = fake_install(tmp_path / "pgserver", "plpgsql", "vector")
    monkeypatch.setattr(postgres, "_bindir_candidates", lambda: iter([debian, wheel]))
    assert postgres.find_bindir() == debian  # the first server, when nothing more is asked
    assert postgres.find_bindir(("vector",)) == wheel
    monkeypatch.setattr(postgres, "_bindir_candidates", lambda: iter([debian]))
    with pytest.raises(PostgresUnavailable, match="has the extension.s. vector.*pgserver"):
        postgres.find_bindir(("vector",))


def test_a_failed_start_stops_the_server_and_leaves_nothing_behind(monkeypatch):
    seen = {}

    def fails(self):
        seen.update(base=self.base, pid=self.pid())
        raise OSError("the database could not be created")

    monkeypatch.setattr(PostgresServer, "_create_game_database", fails)
    with pytest.raises(OSError, match="could not be created"):
        started(PostgresServer())
    assert alive(seen["pid"]) is False
    assert not seen["base"].exists()


def test_the_documented_settings_block_is_the_one_the_tests_and_the_demo_use():
    server = PostgresServer()
    server.password, server.port = "secret", 5432
    page = (Path(__file__).resolve().parents[2] / "docs" / "scaling.md").read_text()
    assert f"```python\n{server.settings_block()}```" in page

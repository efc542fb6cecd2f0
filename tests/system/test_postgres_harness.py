"""The PostgreSQL harness itself (tests/support/postgres.py): it starts, connects, stops, cleans up.

These start real servers (a few seconds each) and are skipped, with the reason, where
PostgreSQL cannot be had (no server binaries, no psycopg, root without a ``postgres`` user).
"""

import os
import pwd
import shutil
import stat
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


# -- an installation the server's user cannot reach (issue 35, item 8) -------------------------
def stranger(owner_of: Path, *, same_group: bool = False) -> pwd.struct_passwd:
    """A user who owns nothing under ``owner_of`` (and shares its group when asked)."""
    info = owner_of.stat()
    uid = 65534 if info.st_uid != 65534 else 65533
    gid = info.st_gid if same_group else (65534 if info.st_gid != 65534 else 65533)
    return pwd.struct_passwd(("evennia-ai-stranger", "x", uid, gid, "", "/", "/bin/sh"))


def test_the_first_folder_the_server_user_cannot_enter_is_named(reachable_dir):
    home = reachable_dir / "home"
    (home / "venv" / "bin").mkdir(parents=True)
    program = home / "venv" / "bin" / "postgres"
    program.touch()
    home.chmod(0o700)
    user = stranger(home)
    assert postgres.closed_dir(program, user) == home
    home.chmod(0o711)
    assert postgres.closed_dir(program, user) is None
    # a link from an open folder into the closed one does not open it
    home.chmod(0o700)
    (reachable_dir / "link").symlink_to(home / "venv")
    assert postgres.closed_dir(reachable_dir / "link" / "bin" / "postgres", user) == home
    # the owner's bits for the owner, the group's for its members, everyone's for the rest
    owner = home.stat()
    itself = pwd.struct_passwd(("owner", "x", owner.st_uid, owner.st_gid, "", "/", "/bin/sh"))
    if owner.st_uid != 0:
        assert postgres.closed_dir(program, itself) is None
    member = stranger(home, same_group=True)
    home.chmod(0o710)
    assert postgres.closed_dir(program, member) is None
    home.chmod(0o701)
    assert postgres.closed_dir(program, member) == home
    assert postgres.closed_dir(program, user) is None


def fake_wheel(site: Path) -> Path:
    """The ``pgserver`` wheel's layout with small real files: its installation under
    ``pgserver/pginstall`` and auditwheel's bundled libraries in ``pgserver.libs`` beside it."""
    root = site / "pgserver" / "pginstall"
    bindir = fake_install(root, "vector")
    (bindir / "postgres").write_text("the server")
    (root / "lib").mkdir()
    (root / "lib" / "vector.so.1").write_text("an extension")
    (root / "lib" / "vector.so").symlink_to("vector.so.1")
    (root / "include").mkdir()
    (root / "include" / "postgres.h").write_text("headers")
    (site / "pgserver.libs").mkdir()
    (site / "pgserver.libs" / "libpq-0123.so.5").write_text("bundled")
    return bindir


def test_an_installation_is_staged_with_hard_links_at_the_same_relative_places(reachable_dir):
    bindir = fake_wheel(reachable_dir / "site")
    target = reachable_dir / "cluster" / "pginstall"
    target.parent.mkdir()
    umask = os.umask(0o077)
    try:
        staged = postgres.stage_install(bindir, target)
    finally:
        os.umask(umask)
    assert staged == target / "pgserver" / "pginstall" / "bin"
    # the programs find the bundled libraries by the same relative path as in the wheel
    assert (staged / "../../../pgserver.libs/libpq-0123.so.5").read_text() == "bundled"
    assert (staged / "postgres").stat().st_ino == (bindir / "postgres").stat().st_ino
    assert (staged / "postgres").stat().st_mode == (bindir / "postgres").stat().st_mode
    lib = staged.parent / "lib"
    assert os.readlink(lib / "vector.so") == "vector.so.1"
    assert (staged.parent / "share" / "postgresql" / "extension" / "vector.control").is_file()
    assert not (staged.parent / "include").exists()  # the server needs no headers
    for folder in (target, target / "pgserver", staged.parent, staged.parent.parent.parent):
        assert stat.S_IMODE(folder.stat().st_mode) & 0o755 == 0o755, folder

    (target / "left-by-the-server").touch()
    assert postgres.stage_install(bindir, target) == staged
    assert (target / "left-by-the-server").exists()  # the same installation: reused
    (bindir / "postgres").write_text("an upgraded server")
    assert postgres.stage_install(bindir, target) == staged
    assert not (target / "left-by-the-server").exists()  # another one: staged again
    assert (staged / "postgres").read_text() == "an upgraded server"


def test_a_plain_installation_is_staged_whole_and_copied_across_file_systems(
    reachable_dir, monkeypatch
):
    bindir = fake_install(reachable_dir / "pg" / "16", "plpgsql")

    def no_links(source, destination):
        raise OSError(18, "Invalid cross-device link")

    monkeypatch.setattr(os, "link", no_links)
    staged = postgres.stage_install(bindir, reachable_dir / "copy")
    assert staged == reachable_dir / "copy" / "bin"
    assert (staged / "initdb").is_file()
    assert (staged / "initdb").stat().st_ino != (bindir / "initdb").stat().st_ino


def test_programs_the_server_user_cannot_reach_are_run_from_a_copy(reachable_dir):
    home = reachable_dir / "home"
    bindir = fake_wheel(home / "venv" / "site-packages")
    home.chmod(0o700)
    user = stranger(home)
    staging = reachable_dir / "pginstall"
    assert postgres.reachable_bindir(bindir, None, staging) == bindir  # run as ourselves
    staged = postgres.reachable_bindir(bindir, user, staging)
    assert staged == staging / "pgserver" / "pginstall" / "bin"
    assert postgres.closed_dir(staged / "postgres", user) is None
    home.chmod(0o755)
    assert postgres.reachable_bindir(bindir, user, reachable_dir / "unused") == bindir
    assert not (reachable_dir / "unused").exists()


def test_when_no_copy_can_be_made_one_message_says_what_to_do(reachable_dir):
    home = reachable_dir / "home"
    bindir = fake_wheel(home / "venv")
    home.chmod(0o700)
    nowhere = reachable_dir / "missing" / "pginstall"
    with pytest.raises(PostgresUnavailable) as caught:
        postgres.reachable_bindir(bindir, stranger(home), nowhere)
    message = str(caught.value)
    assert f"cannot enter {home}" in message
    assert f"run 'chmod o+x {home}'" in message and "PG_BINDIR" in message
    assert "Errno" not in message and "Error(" not in message


def test_a_throwaway_cluster_leaves_a_temporary_folder_the_server_user_cannot_enter(
    reachable_dir, monkeypatch
):
    private = reachable_dir / "private-tmp"
    private.mkdir(mode=0o700)
    private.chmod(0o700)
    monkeypatch.setattr(postgres, "server_user", lambda: stranger(private))
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    assert PostgresServer()._temp_parent() == "/tmp"
    monkeypatch.setattr(tempfile, "tempdir", str(reachable_dir))
    assert PostgresServer()._temp_parent() is None
    monkeypatch.setattr(postgres, "server_user", lambda: None)
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    assert PostgresServer()._temp_parent() is None  # our own folder: we can enter it


def test_a_program_that_cannot_be_run_fails_in_words(reachable_dir):
    server = PostgresServer()
    server.base, server.bindir = reachable_dir, reachable_dir / "no-such-bin"
    with pytest.raises(RuntimeError) as caught:
        server._run_tool("initdb", "-D", reachable_dir / "data", what="initdb")
    assert str(caught.value) == (
        f"PostgreSQL initdb failed: {reachable_dir / 'no-such-bin' / 'initdb'} could not be run"
        " (No such file or directory)"
    )


def test_the_test_run_fails_with_the_reason_when_the_server_does_not_start(monkeypatch, capsys):
    def fails(self):
        raise RuntimeError("PostgreSQL initdb failed: initdb could not be run (Permission denied)")

    monkeypatch.setattr(PostgresServer, "start", fails)
    assert postgres.run_tests([], timeout=60) == 1
    assert capsys.readouterr().out == (
        "PostgreSQL tests FAILED: the server did not start: PostgreSQL initdb failed: initdb "
        "could not be run (Permission denied)\n"
    )


@pytest.fixture
def private_wheel():
    """The ``pgserver`` wheel's installation inside a folder only root may enter (as a venv in
    a ``mktemp -d`` folder or a home of mode 700 is): its ``bin`` folder."""
    if os.geteuid() != 0:
        pytest.skip("only root hands the server to another user, who may not reach root's folders")
    need_postgres()
    try:
        import pgserver
    except ImportError:
        pytest.skip("the pgserver wheel (a relocatable PostgreSQL with pgvector) is not installed")
    wheel = Path(pgserver.__file__).parent
    private = Path(tempfile.mkdtemp(prefix="evennia_ai_private_"))
    assert stat.S_IMODE(private.stat().st_mode) == 0o700
    site = private / "venv" / "lib" / "site-packages"
    site.mkdir(parents=True)

    def link(source, destination):
        try:
            os.link(source, destination)
        except OSError:
            shutil.copy2(source, destination)

    skip = shutil.ignore_patterns("include", "__pycache__")
    shutil.copytree(wheel / "pginstall", site / "pgserver" / "pginstall", ignore=skip,
                    symlinks=True, copy_function=link)  # fmt: skip
    libs = wheel.parent / "pgserver.libs"
    if libs.is_dir():
        shutil.copytree(libs, site / "pgserver.libs", symlinks=True, copy_function=link)
    yield site / "pgserver" / "pginstall" / "bin"
    shutil.rmtree(private, ignore_errors=True)


def test_a_server_whose_installation_lies_in_a_private_folder_runs_from_a_copy(
    private_wheel, monkeypatch
):
    monkeypatch.setenv("PG_BINDIR", str(private_wheel))
    user = postgres.server_user()
    assert postgres.closed_dir(private_wheel / "initdb", user) is not None  # the layout
    server = PostgresServer(database="private_check", extensions=("vector",))
    server.start()
    base = server.base
    try:
        assert server.source_bindir == private_wheel
        assert server.bindir.is_relative_to(base)
        with server.connect("private_check", superuser=False) as conn:
            assert conn.execute("SELECT '[1,2,3]'::vector <-> '[1,2,4]'").fetchone() == (1.0,)
    finally:
        server.stop()
    assert not base.exists()


def test_a_kept_cluster_reuses_its_copy_and_stops_from_a_new_process(
    private_wheel, reachable_dir, monkeypatch
):
    monkeypatch.setenv("PG_BINDIR", str(private_wheel))
    data_dir = reachable_dir / "pg"
    first = started(PostgresServer(data_dir))
    try:
        staged = first.bindir / "postgres"
        inode = staged.stat().st_ino
        first.stop()
        again = started(PostgresServer(data_dir))
        assert again.bindir / "postgres" == staged and staged.stat().st_ino == inode
    finally:
        PostgresServer(data_dir).stop()  # as `make stop` does: a fresh object, no start
    assert not first.running()

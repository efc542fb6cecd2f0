"""A real PostgreSQL server that the tests, the demo and the benches start themselves.

:class:`PostgresServer` runs PostgreSQL's own ``initdb`` and ``pg_ctl`` from Debian's
``postgresql`` package (``/usr/lib/postgresql/<version>/bin``), from ``pg_config --bindir`` or
from the PyPI wheel ``pgserver`` (which ships the server binaries with pgvector). Each server
listens on 127.0.0.1 only, on a free port (or the one given), with no Unix socket, and asks for
a password (scram-sha-256) from everyone, its superuser included. The game connects as the role
``evennia``, which owns the database and may create others (Django's test database).

Used two ways:

- **Throwaway** (no ``data_dir``): the cluster lives in a new temporary directory, tuned for
  speed (``fsync`` off: nothing in it needs to survive a crash) and removed by :meth:`stop`::

      with PostgresServer() as server:
          DATABASES = {"default": server.django_database()}

- **Kept** (``data_dir`` given, as ``make demo`` does): the cluster is created once, durable,
  and :meth:`start` / :meth:`stop` leave its files in place; the password is kept beside it.

Initdb and the server refuse to run as root: as root they run as the ``postgres`` system user
(Debian's package creates it), which then owns the cluster's directory. That user may be unable
to reach the server's programs, as when the ``pgserver`` wheel lies in a venv under a directory
only root may enter (a ``mktemp -d`` folder, a home of mode 700): then the installation is
staged beside the cluster (hard links where the file system allows, else copies) and run from
there (:func:`reachable_bindir`).

``python tests/support/postgres.py`` is the command-line face (see :func:`main`), used by
``scripts/run_tests.sh`` and ``scripts/demo.sh``.
"""

from __future__ import annotations

import argparse
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: The role and database the game uses (the Django ``USER`` and ``NAME``).
GAME_ROLE = "evennia"
SUPERUSER = "postgres"
#: Where a throwaway server's settings reach the Django settings module of the test run.
ENV_DATABASE = "EVENNIA_AI_TEST_POSTGRES"
#: A pgvector database's connection string, when the ``tests`` run's server has pgvector: the
#: long-term memory tests on PostgreSQL use it instead of starting a server of their own.
ENV_PGVECTOR = "EVENNIA_AI_TEST_PGVECTOR"
#: The pytest marker of the tests that also run on PostgreSQL (``make test`` runs them).
MARKER = "postgres"
#: The Django settings of that run: the test settings with ``DATABASES`` from ``ENV_DATABASE``.
SETTINGS_MODULE = "evennia_ai_pg_test_settings"
TESTS_DIR = Path(__file__).resolve().parents[1]
#: What ``initdb`` or the server are run as when this process is root.
SYSTEM_USER = "postgres"
START_TIMEOUT = 60
STOP_TIMEOUT = 30
#: Throwaway servers only: durability is not needed, speed is.
FAST_OPTIONS = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}


class PostgresUnavailable(RuntimeError):
    """PostgreSQL cannot be had here; the message says what is missing and how to get it."""


def find_bindir(extensions: tuple[str, ...] = ()) -> Path:
    """The directory holding ``initdb``, ``pg_ctl`` and ``postgres`` (and ``extensions``).

    Tried in order: ``$PG_BINDIR``; ``pg_config --bindir`` when ``pg_config`` is on PATH; the
    newest ``/usr/lib/postgresql/<version>/bin``; the ``pgserver`` wheel's own binaries. With
    ``extensions``, the first installation that has all of them wins (Debian's packages have no
    pgvector, the ``pgserver`` wheel has).

    Raises:
        PostgresUnavailable: none of these has the server binaries (or the extensions).
    """
    servers = [
        candidate
        for candidate in _bindir_candidates()
        if all((candidate / tool).is_file() for tool in ("initdb", "pg_ctl", "postgres"))
    ]
    for candidate in servers:
        if all(has_extension(candidate, name) for name in extensions):
            return candidate
    if servers:
        raise PostgresUnavailable(
            f"no PostgreSQL installation here has the extension(s) {', '.join(extensions)} "
            f"(looked in {', '.join(map(str, servers))}): pip install pgserver (its server "
            "ships pgvector), or set PG_BINDIR to a server that has them"
        )
    raise PostgresUnavailable(
        "no PostgreSQL server binaries (initdb, pg_ctl, postgres) were found: install Debian's "
        "'postgresql' package (scripts/install_postgres.sh does) or the PyPI wheel 'pgserver', "
        "or set PG_BINDIR"
    )


def has_extension(bindir: Path, name: str) -> bool:
    """Whether the PostgreSQL installation of ``bindir`` can ``CREATE EXTENSION name``."""
    return any((share / "extension" / f"{name}.control").is_file() for share in _sharedirs(bindir))


def _sharedirs(bindir: Path):
    pg_config = bindir / "pg_config"
    if pg_config.is_file():
        result = subprocess.run([pg_config, "--sharedir"], capture_output=True, text=True)
        if result.returncode == 0:
            yield Path(result.stdout.strip())
    yield bindir.parent / "share" / "postgresql"
    yield Path("/usr/share/postgresql") / bindir.parent.name  # Debian: lib/postgresql/<v>/bin


def _bindir_candidates():
    if os.environ.get("PG_BINDIR"):
        yield Path(os.environ["PG_BINDIR"])
    pg_config = shutil.which("pg_config")
    if pg_config:
        result = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True)
        if result.returncode == 0:
            yield Path(result.stdout.strip())
    debian = Path("/usr/lib/postgresql")
    if debian.is_dir():
        versions = [p for p in debian.iterdir() if p.name.isdigit()]
        for version in sorted(versions, key=lambda p: int(p.name), reverse=True):
            yield version / "bin"
    try:
        import pgserver  # optional: the wheel with the server binaries and pgvector
    except ImportError:
        return
    yield Path(pgserver.__file__).parent / "pginstall" / "bin"


def require_driver() -> None:
    """Raise :class:`PostgresUnavailable` unless psycopg (3), Django's driver, is installed."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        raise PostgresUnavailable(
            "the PostgreSQL driver is missing: pip install 'psycopg[binary]' "
            "(the project's [test] extra installs it)"
        ) from None


def server_user() -> pwd.struct_passwd | None:
    """The system user that runs ``initdb`` and the server, or None to run them as ourselves.

    Raises:
        PostgresUnavailable: this process is root and there is no ``postgres`` user.
    """
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(SYSTEM_USER)
    except KeyError:
        raise PostgresUnavailable(
            f"running as root, and PostgreSQL refuses root: create a '{SYSTEM_USER}' system "
            "user for it to run as (Debian's postgresql package creates one)"
        ) from None


def closed_dir(path: Path, user: pwd.struct_passwd) -> Path | None:
    """The first directory on the way to ``path`` that ``user`` may not enter, or None.

    Every directory above ``path`` (and above the path its symbolic links lead to) must grant
    ``user`` search permission: the owner's bit when ``user`` owns it, else the group's when one
    of ``user``'s groups does, else everyone's. Access control lists are not read.
    """
    if user.pw_uid == 0:
        return None
    groups = set(os.getgrouplist(user.pw_name, user.pw_gid))
    absolute = Path(os.path.abspath(path))
    for route in dict.fromkeys((absolute, absolute.resolve())):
        for directory in reversed(route.parents):
            info = directory.stat()
            if info.st_uid == user.pw_uid:
                allowed = info.st_mode & stat.S_IXUSR
            elif info.st_gid in groups:
                allowed = info.st_mode & stat.S_IXGRP
            else:
                allowed = info.st_mode & stat.S_IXOTH
            if not allowed:
                return directory
    return None


#: A staged installation's record of what it was made from (see :func:`stage_install`).
STAGE_STAMP = ".evennia_ai_staged_from"
#: Left out of a staged installation: the server does not need its C headers.
STAGE_SKIP = ("include",)


def stage_install(bindir: Path, target: Path) -> Path:
    """A copy of ``bindir``'s installation at ``target``; the copy's ``bin`` folder is returned.

    The installation is the folder above ``bindir`` (``bin``, ``lib``, ``share``): PostgreSQL
    finds its libraries and share folder relative to its programs, so the copy runs as the
    original does. A wheel repaired by auditwheel (``pgserver``) keeps the libraries its
    programs load in ``<package>.libs`` beside the package, found from them by a relative path:
    that folder is copied too, at the same place relative to the installation. Files are hard
    links where the file system allows (no space taken), else copies; modes are kept. A
    ``target`` already staged from the same installation is reused; one staged from another,
    or left half made, is replaced.

    Raises:
        OSError: the copy could not be made (no space, no permission).
    """
    root = bindir.parent
    bundled = root.parent.parent / f"{root.parent.name}.libs"
    if bundled.is_dir():  # <site>/pgserver/pginstall/bin and <site>/pgserver.libs
        parts = {root: Path(root.parent.name, root.name), bundled: Path(bundled.name)}
    else:
        parts = {root: Path()}
    server = (bindir / "postgres").stat()
    stamp = json.dumps({"from": str(root), "postgres": [server.st_size, server.st_mtime_ns]})
    staged_bindir = target / parts[root] / bindir.name
    try:
        if (target / STAGE_STAMP).read_text() == stamp:
            return staged_bindir
    except OSError:
        pass
    if target.exists():
        shutil.rmtree(target)
    for source, place in parts.items():
        folder = target
        for name in ("", *place.parts):  # made traversable whatever the umask
            folder = folder / name
            folder.mkdir(exist_ok=True)
            folder.chmod(0o755)
        _copy_tree(source, folder)
    (target / STAGE_STAMP).write_text(stamp)
    return staged_bindir


def _copy_tree(source: Path, destination: Path) -> None:
    """``source``'s entries (but :data:`STAGE_SKIP`) in the folder ``destination``."""
    for entry in source.iterdir():
        if entry.name in STAGE_SKIP:
            continue
        if entry.is_symlink():
            os.symlink(os.readlink(entry), destination / entry.name)
        elif entry.is_dir():
            shutil.copytree(
                entry, destination / entry.name, symlinks=True, copy_function=_link_or_copy
            )
        else:
            _link_or_copy(entry, destination / entry.name)


def _link_or_copy(source, destination) -> None:
    try:
        os.link(source, destination)
    except OSError:  # another file system, or links refused there
        shutil.copy2(source, destination)


def reachable_bindir(bindir: Path, user: pwd.struct_passwd | None, staging: Path) -> Path:
    """``bindir``, or a staged copy of its installation at ``staging``, that ``user`` can run.

    Args:
        bindir: The installation's programs (from :func:`find_bindir`).
        user: Who runs them (:func:`server_user`); None for this process's own user.
        staging: Where a copy goes when ``user`` cannot reach ``bindir``: a directory ``user``
            can enter that lives as long as the server (beside its cluster).

    Raises:
        PostgresUnavailable: ``user`` cannot reach ``bindir`` and no copy could be made.
    """
    if user is None:
        return bindir
    closed = closed_dir(bindir / "postgres", user)
    if closed is None:
        return bindir
    try:
        staged = stage_install(bindir, staging)
        failure = None if closed_dir(staged / "postgres", user) is None else "still out of reach"
    except OSError as why:
        failure = why.strerror or str(why)
    if failure is None:
        return staged
    raise PostgresUnavailable(
        f"the '{user.pw_name}' user that runs PostgreSQL cannot enter {closed}, where its "
        f"programs are ({bindir}), and a copy of them in {staging} failed ({failure}): run "
        f"'chmod o+x {closed}', or set PG_BINDIR to a PostgreSQL installation that "
        f"'{user.pw_name}' can reach"
    )


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` runs. A zombie does not: ``pg_ctl`` daemonises the postmaster,
    so a stopped one is its init's to reap, and some inits (a container's, a VM's) never do."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's live process
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


class PostgresServer:
    """One PostgreSQL cluster: created on the first :meth:`start`, stopped by :meth:`stop`.

    Starting a running server again does nothing, so ``with server.start():`` is fine.

    Args:
        data_dir: Where a kept cluster lives (created if missing). None for a throwaway
            cluster in a temporary directory that :meth:`stop` removes.
        port: The TCP port on 127.0.0.1; None picks a free one (a kept cluster remembers the
            port it was created with).
        database: The game's database, owned by the role ``evennia``.
        extensions: Extensions to create in that database (``vector`` needs pgvector, which
            the ``pgserver`` wheel ships and Debian 12 does not).
    """

    def __init__(
        self,
        data_dir: str | Path | None = None,
        port: int | None = None,
        database: str = "evennia",
        extensions: tuple[str, ...] = (),
    ):
        self.throwaway = data_dir is None
        self.base: Path | None = None if self.throwaway else Path(data_dir).resolve()
        self.requested_port = port
        self.port: int | None = None
        self.database = database
        self.extensions = extensions
        self.password: str | None = None
        #: The programs the server runs from: the installation's, or a copy of it beside the
        #: cluster when the server's user cannot reach the installation.
        self.bindir: Path | None = None
        #: The installation's own programs (:func:`find_bindir`).
        self.source_bindir: Path | None = None
        self.user = None

    # -- paths -------------------------------------------------------------------------------
    @property
    def cluster(self) -> Path:
        return self.base / "data"

    @property
    def log_file(self) -> Path:
        return self.base / "server.log"

    @property
    def password_file(self) -> Path:
        return self.base / "password"

    @property
    def staged_install(self) -> Path:
        """Where the installation is copied when the server's user cannot reach it."""
        return self.base / "pginstall"

    # -- life cycle --------------------------------------------------------------------------
    def start(self) -> PostgresServer:
        """Create the cluster if needed, start the server and wait until it accepts logins.

        Raises:
            PostgresUnavailable: no binaries, no driver, or no user to run as.
            RuntimeError: the server did not start (the message holds its log's tail).
        """
        self.source_bindir = find_bindir(self.extensions)
        require_driver()
        self.user = server_user()
        if self.throwaway and self.base is None:
            self.base = Path(tempfile.mkdtemp(prefix="evennia_ai_pg_", dir=self._temp_parent()))
        try:
            self.base.mkdir(parents=True, exist_ok=True)
            self._own(self.base)
            self._check_reachable()
            self.bindir = reachable_bindir(self.source_bindir, self.user, self.staged_install)
            if not (self.cluster / "PG_VERSION").is_file():
                self._initdb()
            self.password = self.password_file.read_text().strip()
            self.port = self._configured_port()
            if not self.running():
                self._run_tool(
                    "pg_ctl",
                    "start",
                    "-w",
                    "-t",
                    str(START_TIMEOUT),
                    "-D",
                    self.cluster,
                    "-l",
                    self.log_file,
                    what="start",
                )
            self._create_game_database()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop the server (fast shutdown; killed if it hangs); a throwaway's files go too."""
        if self.base is None:
            return
        if self.running():
            self.user = self.user or server_user()
            if self.bindir is None:
                self.source_bindir = find_bindir(self.extensions)
                self.bindir = reachable_bindir(self.source_bindir, self.user, self.staged_install)
            try:
                self._run_tool(
                    "pg_ctl",
                    "stop",
                    "-w",
                    "-t",
                    str(STOP_TIMEOUT),
                    "-m",
                    "fast",
                    "-D",
                    self.cluster,
                    what="stop",
                )
            except RuntimeError:
                self._kill()
        if self.throwaway:
            shutil.rmtree(self.base, ignore_errors=True)
            self.base = None

    def running(self) -> bool:
        """Whether this cluster's postmaster is alive (its pid file names a live process)."""
        pid = self.pid()
        return pid is not None and process_alive(pid)

    def pid(self) -> int | None:
        """The postmaster's process id from its pid file, or None when it is not running."""
        if self.base is None:
            return None
        try:
            return int((self.cluster / "postmaster.pid").read_text().split("\n", 1)[0])
        except (FileNotFoundError, ValueError):
            return None

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- what clients need -------------------------------------------------------------------
    def django_database(self) -> dict:
        """The ``DATABASES["default"]`` entry that reaches this server's game database."""
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": self.database,
            "USER": GAME_ROLE,
            "PASSWORD": self.password,
            "HOST": "127.0.0.1",
            "PORT": str(self.port),
        }

    def settings_block(self) -> str:
        """:meth:`django_database` as the ``DATABASES`` block of a game's settings file."""
        entries = "".join(
            f'        "{key}": "{value}",\n' for key, value in self.django_database().items()
        )
        return 'DATABASES = {\n    "default": {\n' + entries + "    }\n}\n"

    def dsn(self) -> str:
        """A libpq connection string to the game's database as the game's role."""
        return (
            f"host=127.0.0.1 port={self.port} dbname={self.database} user={GAME_ROLE} "
            f"password={self.password}"
        )

    def connect(self, dbname: str = "postgres", superuser: bool = True):
        """A psycopg connection (autocommit) as the superuser, or as the game's role."""
        import psycopg

        return psycopg.connect(
            host="127.0.0.1",
            port=self.port,
            dbname=dbname,
            user=SUPERUSER if superuser else GAME_ROLE,
            password=self.password,
            autocommit=True,
            connect_timeout=10,
        )

    # -- internals ---------------------------------------------------------------------------
    def _initdb(self) -> None:
        password = secrets.token_urlsafe(18)
        self.password_file.write_text(password + "\n")
        self.password_file.chmod(0o600)
        self._own(self.password_file)
        self._run_tool(
            "initdb",
            "-D",
            self.cluster,
            "-U",
            SUPERUSER,
            "-E",
            "UTF8",
            "--locale=C",
            "--auth=scram-sha-256",
            "--pwfile",
            self.password_file,
            what="initdb",
        )
        options = {
            "listen_addresses": "'127.0.0.1'",
            "port": str(self.requested_port or free_port()),
            "unix_socket_directories": "''",
        }
        if self.throwaway:
            options.update(FAST_OPTIONS)
        with open(self.cluster / "postgresql.conf", "a") as conf:
            conf.write("\n# evennia-ai (tests/support/postgres.py)\n")
            conf.writelines(f"{key} = {value}\n" for key, value in options.items())

    def _configured_port(self) -> int:
        text = (self.cluster / "postgresql.conf").read_text()
        ports = re.findall(r"^port = (\d+)", text, flags=re.MULTILINE)
        return int(ports[-1])

    def _create_game_database(self) -> None:
        from psycopg import sql

        role, database = sql.Identifier(GAME_ROLE), sql.Identifier(self.database)
        with self.connect() as conn:
            if not conn.execute(
                "SELECT 1 FROM pg_roles WHERE rolname = %s", [GAME_ROLE]
            ).fetchone():
                conn.execute(
                    sql.SQL("CREATE ROLE {} LOGIN CREATEDB PASSWORD {}").format(
                        role, sql.Literal(self.password)
                    )
                )
            exists = "SELECT 1 FROM pg_database WHERE datname = %s"
            if not conn.execute(exists, [self.database]).fetchone():
                conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(database, role))
        # extensions are created by a superuser, in the game's database
        with self.connect(self.database) as conn:
            for extension in self.extensions:
                conn.execute(
                    sql.SQL("CREATE EXTENSION IF NOT EXISTS {}").format(sql.Identifier(extension))
                )

    def _check_reachable(self) -> None:
        """Raise a clear error when the server's user cannot reach the cluster's directory."""
        if self.user is None:
            return
        closed = closed_dir(self.base, self.user)
        if closed is not None:
            raise PostgresUnavailable(
                f"the '{self.user.pw_name}' user that runs PostgreSQL cannot enter {closed}: "
                f"keep the cluster elsewhere or run 'chmod o+x {closed}'"
            )

    def _temp_parent(self) -> str | None:
        """Where a throwaway cluster goes: the temporary folder ($TMPDIR), unless the server's
        user cannot enter it (a private $TMPDIR) and it can enter /tmp."""
        user = server_user()
        if user is None or closed_dir(Path(tempfile.gettempdir(), "cluster"), user) is None:
            return None
        fallback = Path("/tmp")
        if fallback.is_dir() and closed_dir(fallback / "cluster", user) is None:
            return str(fallback)
        return None

    def _own(self, path: Path) -> None:
        if self.user is not None:
            os.chown(path, self.user.pw_uid, self.user.pw_gid)

    def _run_tool(self, tool: str, *args, what: str) -> None:
        command = [str(self.bindir / tool), *map(str, args)]
        extra = {}
        if self.user is not None:
            extra = {"user": self.user.pw_uid, "group": self.user.pw_gid, "extra_groups": []}
        try:
            result = subprocess.run(
                command,
                capture_output=True,
                text=True,
                cwd=self.base,
                timeout=START_TIMEOUT + 30,
                env={**os.environ, "LC_ALL": "C"},
                **extra,
            )
        except OSError as why:
            runner = f" as '{self.user.pw_name}'" if self.user is not None else ""
            raise RuntimeError(
                f"PostgreSQL {what} failed: {command[0]} could not be run{runner} "
                f"({why.strerror or why})"
            ) from None
        if result.returncode != 0:
            raise RuntimeError(
                f"PostgreSQL {what} failed ({' '.join(command)}):\n"
                + (result.stdout + result.stderr).strip()
                + self._log_tail()
            )

    def _log_tail(self, lines: int = 20) -> str:
        try:
            tail = self.log_file.read_text(errors="replace").splitlines()[-lines:]
        except FileNotFoundError:
            return ""
        return "\n-- server log --\n" + "\n".join(tail)

    def _kill(self) -> None:
        pid = self.pid()
        if pid is None:
            return
        for sig in (signal.SIGQUIT, signal.SIGKILL):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                return
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and self.running():
                time.sleep(0.1)
            if not self.running():
                return


# -- the command line --------------------------------------------------------------------------
def run_tests(pytest_args: list[str], timeout: float) -> int:
    """Run the ``postgres``-marked tests on a throwaway server; 0 with a message if none can be had.

    The server is stopped and removed afterwards, also when the tests fail, time out or this
    process is asked to stop (SIGTERM, SIGINT, SIGHUP).
    """
    _stop_on_signals()
    started = time.monotonic()
    # pgvector when some installation has it (the long-term memory tests need it), else none
    reasons = []
    for extensions in (("vector",), ()):
        server = PostgresServer(database="evennia_ai", extensions=extensions)
        try:
            server.start()
            break
        except PostgresUnavailable as why:
            reasons.append(str(why))
        except RuntimeError as why:
            print(f"PostgreSQL tests FAILED: the server did not start: {why}")
            return 1
    else:
        print(f"PostgreSQL tests SKIPPED: {reasons[-1]}.")
        return 0
    try:
        staged = (
            f", run from a copy in {server.bindir}" if server.bindir != server.source_bindir else ""
        )
        print(
            f"== the '{MARKER}' tests on PostgreSQL ({server.source_bindir}{staged}, "
            f"127.0.0.1:{server.port}, started in {time.monotonic() - started:.1f} s, "
            f"{'with pgvector' if server.extensions else 'no pgvector: ' + reasons[0]}) =="
        )
        env = {
            **os.environ,
            ENV_DATABASE: json.dumps(server.django_database()),
            **({ENV_PGVECTOR: server.dsn()} if server.extensions else {}),
            "DJANGO_SETTINGS_MODULE": SETTINGS_MODULE,
            "PYTHONPATH": os.pathsep.join([str(TESTS_DIR), os.environ.get("PYTHONPATH", "")]),
        }
        # Evennia reads its ServerConfig table as it starts (before pytest-django makes the
        # test database): the game's database is migrated first, as a real game's is.
        migrate = [sys.executable, "-m", "django", "migrate", "--noinput", "--skip-checks", "-v0"]
        pytest = [
            sys.executable, "-m", "pytest", f"--ds={SETTINGS_MODULE}",
            "-m", f"{MARKER} and not server and not browser and not embedder",
            *pytest_args,
        ]  # fmt: skip
        deadline = time.monotonic() + timeout
        try:
            for command in (migrate, pytest):
                remaining = deadline - time.monotonic()
                result = subprocess.run(command, env=env, cwd=TESTS_DIR.parent, timeout=remaining)
                if result.returncode != 0:
                    return result.returncode
            return 0
        except subprocess.TimeoutExpired:
            print(f"PostgreSQL tests FAILED: still running after {timeout:.0f} s, stopped.")
            return 1
    finally:
        server.stop()


def _stop_on_signals() -> None:
    def leave(signum, frame):
        raise SystemExit(128 + signum)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, leave)


def main(argv: list[str] | None = None) -> int:
    """``tests`` runs the PostgreSQL subset; ``start``/``stop``/``settings`` manage a kept one."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="action", required=True)
    tests = sub.add_parser("tests", help="run the postgres-marked tests on a throwaway server")
    tests.add_argument("--timeout", type=float, default=900, help="seconds (default 900)")
    tests.add_argument("pytest_args", nargs=argparse.REMAINDER, help="more pytest arguments")
    for action, text in (
        ("start", "create (once) and start a kept cluster; print its DATABASES settings block"),
        ("stop", "stop a kept cluster"),
    ):
        kept = sub.add_parser(action, help=text)
        kept.add_argument("data_dir")
        kept.add_argument("--port", type=int, default=None)
        kept.add_argument("--database", default="evennia")
    args = parser.parse_args(argv)

    if args.action == "tests":
        return run_tests([a for a in args.pytest_args if a != "--"], args.timeout)
    server = PostgresServer(args.data_dir, port=args.port, database=args.database)
    try:
        if args.action == "start":
            server.start()
            print(server.settings_block(), end="")
        else:
            server.stop()
    except (PostgresUnavailable, RuntimeError) as why:
        print(f"PostgreSQL {args.action}: {why}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

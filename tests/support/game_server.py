"""A real Evennia game server for end-to-end tests, built from ``world_example/``.

Each server gets its own temporary game directory and free loopback ports, so tests never
collide with a running ``make demo``. Every process it starts is stopped in :meth:`stop`
(``evennia stop``, then SIGKILL of whatever pid files remain).
"""

from __future__ import annotations

import atexit
import importlib.util
import itertools
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def load_script(name: str):
    """The module ``scripts/<name>.py`` of the checkout (scripts/ is not a package)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: How ``make demo`` waits for a login; the test servers wait the same way.
login_wait = load_script("wait_for_login")


#: How ``make stop`` stops a game; the test servers check their processes the same way.
stop_script = load_script("stop_game")


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie (``make stop``'s check)."""
    return stop_script.alive(pid)


def wait_gone(pid: int, timeout: float) -> bool:
    """Wait up to ``timeout`` seconds for process ``pid`` to end; returns whether it did."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return True
        time.sleep(0.05)
    return not pid_alive(pid)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


#: Settings that can change a game's database schema: a game whose extra settings name one
#: migrates its own database instead of copying the template's.
SCHEMA_SETTINGS = ("INSTALLED_APPS", "DATABASES")

_TEMPLATES: dict[tuple[Path, Path | None], Path] = {}


def migrated_template(bin_dir: Path, overlay: Path | None, env: dict) -> Path:
    """A game folder made by ``bin_dir``'s ``evennia --init``, with ``overlay`` copied over it
    and its database migrated, made on first use and kept for the test run (removed at exit).

    Test servers copy it instead of migrating each their own database: the copy is what a
    migration of the same files would make, and a first start still runs the game's initial
    setup (the database holds no objects yet).
    """
    key = (Path(bin_dir), overlay)
    if key in _TEMPLATES:
        return _TEMPLATES[key]
    parent = Path(tempfile.mkdtemp(prefix="evennia_ai_game_template_"))
    atexit.register(shutil.rmtree, parent, ignore_errors=True)
    maker = GameServer(parent, env=env, bin_dir=bin_dir, overlay=overlay)
    maker._init(parent)
    result = maker.evennia("migrate")
    if result.returncode:
        raise RuntimeError(f"migrate failed:\n{result.stdout}\n{result.stderr}")
    _TEMPLATES[key] = parent / "game"
    return _TEMPLATES[key]


class GameServer:
    """Create, start and stop a throwaway Evennia game with the evennia-ai demo world.

    Args:
        workdir: Empty folder to create the game in.
        extra_settings: Python source appended to the game's settings.py.
        env: Extra environment variables for the server processes.
        password: Password of the ``admin`` superuser.
        bin_dir: Folder of the ``evennia`` launcher (and ``twistd``) to run: by default the
            test run's own virtualenv.
        overlay: Folder copied over the new game (the demo world); None for Evennia's plain
            game template.
    """

    def __init__(
        self,
        workdir: Path,
        extra_settings: str = "",
        env: dict | None = None,
        password: str = "test-password-1",
        bin_dir: Path = BIN,
        overlay: Path | None = ROOT / "world_example",
    ):
        self.workdir = Path(workdir)
        self.bin = Path(bin_dir)
        self.overlay = overlay
        self.game = self.workdir / "game"
        self.extra_settings = extra_settings
        self.password = password
        self.telnet_port = free_port()
        self.web_port = free_port()
        self.env = dict(os.environ)
        self.env.update(
            {
                "PATH": f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}",
                "EVENNIA_SUPERUSER_USERNAME": "admin",
                "EVENNIA_SUPERUSER_PASSWORD": password,
                "EVENNIA_SUPERUSER_EMAIL": "admin@localhost",
                "LITELLM_LOCAL_MODEL_COST_MAP": "True",
                "MEM0_TELEMETRY": "False",
                "HF_HUB_OFFLINE": "1",
            }
        )
        self.env.pop("DJANGO_SETTINGS_MODULE", None)
        self.env.pop("PYTHONPATH", None)
        self.env.update(env or {})

    # -- lifecycle -------------------------------------------------------------------------
    def evennia(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(self.bin / "evennia"), *args],
            cwd=self.game,
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def create(self) -> None:
        """Initialise the game dir, copy the overlay, migrate, set ports.

        The game is a copy of a migrated template made once per test run for this launcher and
        overlay (:func:`migrated_template`): migrating a new database costs 10-20 s of CPU, the
        same for every test server. Extra settings that name ``INSTALLED_APPS`` or
        ``DATABASES`` could change the schema, so such a game migrates its own.
        """
        self.workdir.mkdir(parents=True, exist_ok=True)
        own_schema = any(name in self.extra_settings for name in SCHEMA_SETTINGS)
        if own_schema:
            self._init(self.workdir)
        else:
            shutil.copytree(migrated_template(self.bin, self.overlay, self.env), self.game)
        self._write_settings()
        if own_schema:
            result = self.evennia("migrate")
            if result.returncode:
                raise RuntimeError(f"migrate failed:\n{result.stdout}\n{result.stderr}")

    def _init(self, where: Path) -> None:
        """``evennia --init game`` in ``where``, and the overlay copied over it."""
        subprocess.run(
            [str(self.bin / "evennia"), "--init", "game"],
            cwd=where,
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            check=True,
            timeout=60,
        )
        if self.overlay is not None:
            shutil.copytree(self.overlay, where / "game", dirs_exist_ok=True)

    def _write_settings(self) -> None:
        """The test's ports and extra settings, at the end of the game's settings.py."""
        amp, ws = free_port(), free_port()
        with open(self.game / "server" / "conf" / "settings.py", "a") as fh:
            fh.write(
                "\n# --- test server ports ---\n"
                f"TELNET_PORTS = [{self.telnet_port}]\n"
                f"WEBSERVER_PORTS = [({self.web_port}, {free_port()})]\n"
                f"WEBSOCKET_CLIENT_PORT = {ws}\n"
                f"AMP_PORT = {amp}\n"
                f"{self.extra_settings}\n"
            )

    def start(self, timeout: float = 90) -> None:
        """Start portal and server and wait until a login works."""
        result = self.evennia("start", timeout=timeout)
        if result.returncode:
            raise RuntimeError(f"start failed:\n{result.stdout}\n{result.stderr}")
        self.wait_ready(timeout)

    def wait_ready(self, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        last = None
        # A new database's first start restarts the server once after its initial setup;
        # logging in before that restart loses the session, so wait for it.
        while time.monotonic() < deadline:
            log = self.log_tail(400)
            if "Initial setup complete" not in log or "successfully restarted" in log:
                break
            time.sleep(0.25)
        while time.monotonic() < deadline:
            try:
                with TelnetClient(self.telnet_port) as client:
                    if "You become" in client.login("admin", self.password, wait=2.0):
                        return
            except OSError as err:
                last = err
            time.sleep(0.5)
        raise RuntimeError(f"server not ready after {timeout}s ({last}); log:\n{self.log_tail()}")

    def reload(self, timeout: float = 90) -> float:
        """``evennia reload`` (the launcher waits for the server to come back).

        Connected telnet sessions survive a reload (the portal keeps them), so this does not log
        in to check: a second login as the same account would disconnect the first.

        Returns:
            Seconds the ``evennia reload`` command took (the settle pause after it excluded).
        """
        started = time.monotonic()
        result = self.evennia("reload", timeout=timeout)
        elapsed = time.monotonic() - started
        if result.returncode:
            raise RuntimeError(f"reload failed:\n{result.stdout}\n{result.stderr}")
        time.sleep(1.0)
        return elapsed

    # -- processes ---------------------------------------------------------------------------
    def pid(self, which: str = "server") -> int | None:
        """The pid in ``server.pid`` or ``portal.pid`` (``which`` = "server"/"portal"), if any."""
        try:
            return int((self.game / "server" / f"{which}.pid").read_text().strip())
        except (OSError, ValueError):
            return None

    def kill(self, *which: str) -> list[int]:
        """SIGKILL the server and/or portal processes (default both); returns the pids killed.

        Waits until each is gone (reaped or a zombie), so a following :meth:`start` never meets
        the old process.
        """
        killed = []
        for name in which or ("server", "portal"):
            pid = self.pid(name)
            if pid is None:
                continue
            try:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            except OSError:
                pass
        for pid in killed:
            wait_gone(pid, 10.0)
        return killed

    def install_module(self, name: str, source: str) -> Path:
        """Write ``<name>.py`` into the game folder (importable by the server, e.g. from ``py``)."""
        path = self.game / f"{name}.py"
        path.write_text(source)
        return path

    def stop(self) -> None:
        """Stop the game, killing anything that does not stop by itself."""
        try:
            self.evennia("stop", timeout=30)
        except Exception:
            pass
        for pidfile in ("server.pid", "portal.pid"):
            path = self.game / "server" / pidfile
            try:
                pid = int(path.read_text().strip())
                os.kill(pid, signal.SIGKILL)
            except (OSError, ValueError):
                pass

    @property
    def log_path(self) -> Path:
        return self.game / "server" / "logs" / "server.log"

    def log_tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no server log)"

    def __enter__(self) -> "GameServer":
        self.create()
        try:
            self.start()
        except Exception:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


_PY_TAGS = itertools.count(1)


def tagged(tag: str, value) -> str:
    """``value`` as a message :meth:`TelnetClient.read_tagged` decodes (for server-side code)."""
    import base64
    import json

    payload = base64.b64encode(json.dumps(value, default=str).encode()).decode()
    return f"<{tag}:{payload}:{tag}>"


class TelnetClient:
    """A minimal line-based telnet client (Evennia needs no option negotiation from us)."""

    def __init__(self, port: int, host: str = "127.0.0.1", timeout: float = 10.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.buffer = ""

    def read(self, wait: float = 0.5) -> str:
        """Read whatever arrives within ``wait`` seconds of silence."""
        self.sock.settimeout(wait)
        chunks = []
        try:
            while True:
                data = self.sock.recv(65536)
                if not data:
                    break
                chunks.append(data)
        except (socket.timeout, BlockingIOError):
            pass
        text = b"".join(chunks).replace(b"\xff", b"").decode("utf8", "replace")
        self.buffer += text
        return text

    def read_until(self, needle: str, timeout: float = 10.0) -> str:
        """Read until ``needle`` shows up; return everything read (raises TimeoutError)."""
        deadline = time.monotonic() + timeout
        seen = ""
        while time.monotonic() < deadline:
            seen += self.read(0.2)
            if needle in seen:
                return seen
        raise TimeoutError(f"{needle!r} not seen within {timeout}s; got:\n{seen[-2000:]}")

    def send(self, line: str) -> None:
        self.sock.sendall(line.encode("utf8") + b"\r\n")

    def py_json(self, expression: str, timeout: float = 15.0):
        """Evaluate ``expression`` with the superuser's ``py`` command; returns its value via JSON.

        The value travels base64-encoded between markers, so Evennia's markup (``|``) and line
        handling never touch it. ``me`` is the caller, as in any ``py`` line.
        """
        tag = f"PYJSON{next(_PY_TAGS)}"
        self.send(
            f"py print('<{tag}:' + __import__('base64').b64encode(__import__('json').dumps("
            f"{expression}, default=str).encode()).decode() + ':{tag}>')"
        )
        return self.read_tagged(tag, timeout)

    def read_tagged(self, tag: str, timeout: float = 15.0):
        """Wait for a ``<tag:base64 json:tag>`` message (see :func:`tagged`) and decode it."""
        import base64
        import json
        import re

        pattern = re.compile(rf"<{re.escape(tag)}:([A-Za-z0-9+/=\s]*?):{re.escape(tag)}>")
        deadline = time.monotonic() + timeout
        while True:
            match = pattern.search(self.buffer)
            if match:
                self.buffer = self.buffer[match.end() :]
                return json.loads(base64.b64decode(re.sub(r"\s", "", match.group(1))))
            if time.monotonic() > deadline:
                raise TimeoutError(f"{tag} not seen within {timeout}s; got:\n{self.buffer[-2000:]}")
            self.read(0.2)

    def login(self, user: str, password: str, wait: float = 2.0) -> str:
        self.read(0.5)
        self.send(f"connect {user} {password}")
        try:
            return self.read_until("You become", timeout=wait + 3)
        except TimeoutError as err:
            return str(err)

    def close(self) -> None:
        try:
            self.send("quit")
        except OSError:
            pass
        self.sock.close()

    def __enter__(self) -> "TelnetClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

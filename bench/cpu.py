"""CPU time of a game server and the processes it starts, read from outside (Linux ``/proc``).

A benchmark reads the server's CPU from ``/proc`` rather than asking the server (a ``py``
command over telnet would cost the server CPU itself): every thread of the server process, and
every process below it (the plugin may start some), those still running and those already
reaped (their time is in their parent's ``cutime``/``cstime``).

Also here: :class:`BusyCore`, another process keeping one core busy (the "busy host" of
issue 33's targets).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass

TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class ProcStat:
    """The fields of one ``/proc/<pid>/stat`` line the CPU figures need (clock ticks)."""

    pid: int
    ppid: int
    utime: int
    stime: int
    cutime: int
    cstime: int

    @property
    def ticks(self) -> int:
        """Own CPU (all threads) plus that of reaped children."""
        return self.utime + self.stime + self.cutime + self.cstime


def parse_stat(line: str) -> ProcStat:
    """Parse a ``/proc/<pid>/stat`` line (the command name may hold spaces and parentheses)."""
    head, _, rest = line.rpartition(")")
    pid = int(head.split("(", 1)[0])
    fields = rest.split()
    # fields[0] is the state (field 3 of proc(5)); ppid is field 4, utime..cstime 14..17.
    return ProcStat(
        pid=pid,
        ppid=int(fields[1]),
        utime=int(fields[11]),
        stime=int(fields[12]),
        cutime=int(fields[13]),
        cstime=int(fields[14]),
    )


def _all_stats() -> list[ProcStat]:
    stats = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as handle:
                stats.append(parse_stat(handle.read()))
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile
    return stats


def tree_ticks(root: int, stats: list[ProcStat]) -> int:
    """Clock ticks of ``root`` and every live process below it in ``stats``.

    A live process's own time is in no one's ``cutime`` yet, and a reaped one's is in its
    parent's only: summing ``ticks`` over the live tree counts each CPU second once.
    """
    children: dict[int, list[ProcStat]] = {}
    by_pid = {}
    for stat in stats:
        children.setdefault(stat.ppid, []).append(stat)
        by_pid[stat.pid] = stat
    if root not in by_pid:
        return 0
    total, todo = 0, [by_pid[root]]
    while todo:
        stat = todo.pop()
        total += stat.ticks
        todo.extend(children.get(stat.pid, []))
    return total


def tree_cpu_seconds(root: int) -> float:
    """CPU seconds so far of process ``root``, its threads and every process it started."""
    return tree_ticks(root, _all_stats()) / TICKS


class CpuMeter:
    """Reads the CPU of a process tree, and waits for it to go quiet.

    Args:
        pid: The root process (the game server).
    """

    def __init__(self, pid: int):
        self.pid = pid
        self.idle_rate = 0.0  # CPU seconds per second with nothing to do (see measure_idle)

    def read(self) -> float:
        return tree_cpu_seconds(self.pid)

    def measure_idle(self, seconds: float = 4.0) -> float:
        """The tree's CPU seconds per wall second over ``seconds`` of doing nothing."""
        cpu0, wall0 = self.read(), time.monotonic()
        time.sleep(seconds)
        self.idle_rate = (self.read() - cpu0) / (time.monotonic() - wall0)
        return self.idle_rate

    def settle(self, step: float = 0.1, quiet_steps: int = 3, timeout: float = 15.0) -> bool:
        """Wait until ``quiet_steps`` steps in a row add no more CPU than idling would (plus one
        clock tick); returns whether it did before ``timeout``."""
        allowance = self.idle_rate * step + 1.5 / TICKS
        deadline = time.monotonic() + timeout
        quiet, last = 0, self.read()
        while time.monotonic() < deadline:
            time.sleep(step)
            now = self.read()
            quiet = quiet + 1 if now - last <= allowance else 0
            last = now
            if quiet >= quiet_steps:
                return True
        return False


@dataclass
class CpuPhase:
    """CPU of the tree over a phase of ``lines`` answered player lines."""

    lines: int = 0
    cpu: float = 0.0  # seconds, gross
    wall: float = 0.0  # seconds
    idle_rate: float = 0.0  # CPU seconds per second when nothing happens
    unsettled: int = 0  # lines after which the server never went quiet within the timeout

    @property
    def net(self) -> float:
        """CPU seconds minus what the server burns idling over the same wall time."""
        return max(0.0, self.cpu - self.idle_rate * self.wall)

    def per_line_ms(self, net: bool = True) -> float:
        if not self.lines:
            return float("nan")
        return (self.net if net else self.cpu) / self.lines * 1000


class BusyCore:
    """Another process keeping one core busy (a pure-Python loop at normal priority), until
    :meth:`stop` or the end of the ``with`` block; it never outlives the benchmark's process."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None

    def start(self) -> "BusyCore":
        self.proc = subprocess.Popen(
            [sys.executable, "-c", "while True: pass"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        return self

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.kill()
        self.proc.wait(10)
        self.proc = None

    def __enter__(self) -> "BusyCore":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def load_average() -> str:
    return ", ".join(f"{x:.1f}" for x in os.getloadavg())

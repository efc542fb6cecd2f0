"""The benchmarks' CPU readings (``bench/cpu.py``): ``/proc`` stat lines, a process tree's CPU
counted once, per-line figures with the idle CPU taken out, the busy-host process."""

import os
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench import cpu  # noqa: E402


def stat_line(pid, ppid, utime, stime, cutime=0, cstime=0, name="python"):
    rest = ["S", ppid] + [0] * 9 + [utime, stime, cutime, cstime] + [0] * 30
    return f"{pid} ({name}) " + " ".join(str(x) for x in rest)


def test_stat_line_with_spaces_and_parentheses_in_the_name():
    stat = cpu.parse_stat(stat_line(42, 7, 100, 20, 5, 1, name="twistd (server) x"))
    assert (stat.pid, stat.ppid, stat.utime, stat.stime, stat.cutime, stat.cstime) == (
        42,
        7,
        100,
        20,
        5,
        1,
    )
    assert stat.ticks == 126


def test_real_stat_line_of_this_process():
    with open(f"/proc/{os.getpid()}/stat") as handle:
        stat = cpu.parse_stat(handle.read())
    assert stat.pid == os.getpid() and stat.ppid == os.getppid()


def test_tree_counts_live_descendants_and_reaped_children_once():
    stats = [
        cpu.ProcStat(10, 1, 100, 50, 30, 0),  # the server: reaped children's 30 in cutime
        cpu.ProcStat(11, 10, 20, 0, 0, 0),  # a live child
        cpu.ProcStat(12, 11, 5, 5, 0, 0),  # its live child
        cpu.ProcStat(13, 1, 999, 0, 0, 0),  # not in the tree
    ]
    assert cpu.tree_ticks(10, stats) == 100 + 50 + 30 + 20 + 10
    assert cpu.tree_ticks(99, stats) == 0


def test_idle_cpu_is_taken_out_of_the_per_line_figure():
    phase = cpu.CpuPhase(lines=20, cpu=0.5, wall=30.0, idle_rate=0.002)
    assert phase.per_line_ms(net=False) == pytest.approx(25.0)
    assert phase.per_line_ms() == pytest.approx((0.5 - 0.06) / 20 * 1000)
    assert cpu.CpuPhase().per_line_ms() != cpu.CpuPhase().per_line_ms()  # nan without lines


def test_busy_core_burns_cpu_and_is_gone_after():
    with cpu.BusyCore() as busy:
        pid = busy.proc.pid
        before = cpu.tree_cpu_seconds(pid)
        time.sleep(0.5)
        assert cpu.tree_cpu_seconds(pid) > before
    assert busy.proc is None and not os.path.exists(f"/proc/{pid}/stat")

"""Processes by pid, read from /proc: the process tree under a worker, a process group's
survivors, resident memory, a process's start time; and the two calls the layer makes on a pid
(a pidfd that tells when it exits, a SIGKILL that tolerates it being gone).

Without cgroups (`WorkerProcess.accounting == "process"`) this is all the layer has: memory is
the resident set of the live process tree, and kills go by tree and process group. With them, a
kill still goes by tree and group after the cgroup's, and `start_time` (with the pid) names the
grader that owns a group (`cgroups`).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator

_table_lock = threading.Lock()
_table: tuple[float, dict[int, list[int]]] = (float("-inf"), {})


def _live_stats() -> Iterator[tuple[int, list[str]]]:
    """(pid, the fields of /proc/PID/stat after the command's name: state, ppid, pgrp, ...) of
    every live process (zombies and vanished ones skipped)."""
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields and fields[0] != "Z":
            yield int(entry), fields


def _children_table(max_age: float) -> dict[int, list[int]]:
    """Each live process's children (pid -> pids), from one pass over every process's stat,
    taken at most `max_age` seconds ago: every worker's memory watch shares one pass (a walk of
    each worker's threads' `children` files cost the grader's thread tens of thousands of reads a
    second with thirty JAX workers alive, each of dozens of threads, and slowed its timed windows)."""
    global _table
    with _table_lock:
        taken, table = _table
        if time.monotonic() - taken <= max_age:
            return table
        fresh: dict[int, list[int]] = {}
        for pid, fields in _live_stats():
            fresh.setdefault(int(fields[1]), []).append(pid)
        _table = (time.monotonic(), fresh)
        return fresh


def descendants(root: int, max_age: float = 0.0) -> list[int]:
    """Every live process under `root`, root included (from each process's parent in /proc;
    `max_age`: a table of parents that many seconds old will do)."""
    table = _children_table(max_age)
    found, stack = [], [root]
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(table.get(pid, ()))
    return found


def _group_alive(pgid: int) -> bool:
    """Whether any process of group `pgid` is alive (a zombie is not)."""
    return any(int(fields[2]) == pgid for _, fields in _live_stats())


def await_group_exit(pgid: int, timeout: float = 2.0) -> None:
    """Wait until no process of group `pgid` is left alive (they were sent SIGKILL)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _group_alive(pgid):
            return
        time.sleep(0.01)


def rss_bytes(pids: list[int]) -> int:
    """The resident memory of the processes `pids` (vanished ones count nothing)."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/statm") as f:
                total += int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, IndexError, ValueError):
            pass
    return total


def start_time(pid: int) -> int | None:
    """The process's start time (clock ticks since boot): with the pid, it names one process."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def pidfd(pid: int) -> int | None:
    """A descriptor that becomes readable when process `pid` exits (None if unsupported)."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def sigkill(pid: int) -> None:
    """SIGKILL `pid`, if it is still there and ours to kill."""
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass

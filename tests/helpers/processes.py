"""Helpers of the tests that look for processes a test started or left behind."""

from __future__ import annotations

import os


def descendants_of_this_process() -> list[int]:
    """Live processes below the test process (zombies excluded)."""
    from jaxlings.isolation.procfs import descendants as _descendants

    alive = []
    for pid in _descendants(os.getpid())[1:]:
        try:
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.append(pid)
    return alive


def command_lines() -> list[str]:
    """The command line of every process on the machine (to find one a test started)."""
    lines = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                lines.append(f.read().replace(b"\0", b" ").decode().strip())
        except OSError:
            pass
    return lines

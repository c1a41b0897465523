"""The clock gate: topics graded side by side, and timed checks alone where the clock needs it.

Grading several topics at once (`engine.grade(..., jobs=N)`) is safe for a verdict only where
nothing another topic does can move it. On a CPU with cgroups the timed checks read each
worker's own CPU time, which waiting for a busy core does not inflate: topics run fully side
by side. Where the clock is wall time (a GPU, whose device every topic would share, or a
machine without cgroups) a timed check (speed, the compilation stream, the VMC) takes the gate
exclusively: it runs alone while every other check, of any topic, waits; untimed checks share
the gate with one another.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator


class ClockGate:
    """A readers-writer lock with writer preference: `shared()` for untimed work, `exclusive()`
    for a timed check (no new shared holder enters while one waits, so it is never starved)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._writer = False
        self._waiting_writers = 0

    @contextlib.contextmanager
    def shared(self) -> Iterator[None]:
        with self._cond:
            self._cond.wait_for(lambda: not self._writer and not self._waiting_writers)
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                self._cond.notify_all()

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._cond:
            self._waiting_writers += 1
            self._cond.wait_for(lambda: not self._writer and not self._readers)
            self._waiting_writers -= 1
            self._writer = True
        try:
            yield
        finally:
            with self._cond:
                self._writer = False
                self._cond.notify_all()

"""Pieces of one grading run side by side, each under an outside deadline.

The engine grades topics (or parts of them, `engine.plan`) `jobs` at a time. Each runs under
its own time limit from inside (`TopicSession.deadline`, read before every worker request);
this is the backstop from outside, for what that cannot see: the grader's own code caught in a
loop on a student's data, a request that never returns. A piece still running `Piece.limit`
seconds after it started is abandoned: its `Watch` calls what the piece registered (stopping
its workers: a thread waiting on one wakes with the worker's death and winds down, cleaning
its files), the run records the piece's `fallback` (its tests failed with the reason) and
goes on without waiting for that thread again. The threads are daemons: one that never
returns does not keep the process alive once the run has returned.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")

GRACE = 120.0
"""Seconds a topic may run past its own time limit before it is abandoned: after its deadline
each of its remaining student requests is cut to a second, but a reference's request is not
(a topic's last checks wind down within this)."""


@dataclass
class Watch:
    """One running piece's outside deadline: what to stop when it expires."""

    started: float = field(default_factory=time.monotonic)
    expired: bool = False
    _stops: list[Callable[[], None]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def guard(self, stop: Callable[[], None]) -> None:
        """Call `stop` (from the run's thread) if this piece expires; at once if it has."""
        with self._lock:
            if not self.expired:
                self._stops.append(stop)
                return
        stop()

    def expire(self) -> None:
        """Stop what the piece registered; a stop that fails is logged, the others still run."""
        with self._lock:
            self.expired, stops, self._stops = True, self._stops, []
        for stop in stops:
            try:
                stop()
            except Exception:  # stopping is best effort: the run goes on regardless
                log.exception("stopping an abandoned piece failed")

    def elapsed(self) -> float:
        return time.monotonic() - self.started


@dataclass(frozen=True)
class Piece(Generic[T]):
    """One unit of a run: `work(watch)` gives its result; `fallback(seconds)` is its result when
    it is abandoned, `limit` seconds after it started."""

    key: Hashable
    work: Callable[[Watch], T]
    limit: float
    fallback: Callable[[float], T]


def run_all(pieces: list[Piece[T]], jobs: int, poll: float = 0.25) -> dict[Hashable, T]:
    """Each piece's result by key, `jobs` pieces at a time in the given order. An exception a
    piece raises stops the others' workers and is raised here (the grader's own failure:
    `GraderError`); an abandoned piece's slot goes to the next piece at once."""
    waiting = list(pieces)
    running: dict[Hashable, tuple[Piece[T], Watch]] = {}
    results: dict[Hashable, T] = {}
    done: queue.Queue[tuple[Hashable, bool, object]] = queue.Queue()
    while waiting or running:
        while waiting and len(running) < max(1, jobs):
            piece = waiting.pop(0)
            watch = Watch()
            running[piece.key] = (piece, watch)
            threading.Thread(target=_run, args=(piece, watch, done), name=f"grade-{piece.key}", daemon=True).start()
        with contextlib.suppress(queue.Empty):
            key, ok, value = done.get(timeout=poll)
            if key in running:  # else abandoned and come back late: its fallback stands
                del running[key]
                if not ok:
                    for _, watch in running.values():
                        watch.expire()
                    raise value  # type: ignore[misc]
                results[key] = value  # type: ignore[assignment]
        for key, (piece, watch) in list(running.items()):
            if watch.elapsed() > piece.limit:
                log.warning("abandoning %s after %.0f s", key, watch.elapsed())
                watch.expire()
                results[key] = piece.fallback(watch.elapsed())
                del running[key]
    return results


def _run(piece: Piece[T], watch: Watch, done: queue.Queue[tuple[Hashable, bool, object]]) -> None:
    """A piece's thread: its result, or the exception it raised, to the run."""
    try:
        done.put((piece.key, True, piece.work(watch)))
    except BaseException as exc:  # noqa: BLE001 - handed to the run's thread, which raises it
        done.put((piece.key, False, exc))

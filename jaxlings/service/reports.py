"""Similarity reports worked out off the request path, with a deadline for the view.

A report compares every pair of a topic's students per exercise: its cost grows with the
class (and, bounded, with what each student uploaded: `similarity`). A view should not hold a
server thread for as long as that takes, nor start the same work twice. So `Reports` works a
report out in a thread of its own, once per input (the students' counted submissions and their
programs' sketches: `key`), keeps the last `KEPT`, and a view waits at most `wait` seconds
(`JAXLINGS_SIMILARITY_WAIT`): past it, the page says the report is being worked out and reloads
itself, the API answers 202 with Retry-After; the work goes on, and the next view finds it done.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from jaxlings.service.similarity import Ranking

KEPT = 16
"""Reports kept (done or in progress), the least recently asked dropped first."""

RETRY_SECONDS = 5
"""What a view that timed out tells its client to wait before asking again."""


def key(
    topic: str,
    exercises: list[str],
    files: Mapping[str, tuple[int, str]],
    programs: Mapping[str, Mapping[str, frozenset[int]]],
) -> tuple[Any, ...]:
    """What a report is computed from: the topic, its exercises, each student's counted
    submission (an id names stored content that never changes) and their programs' sketches
    (a regrade may change them)."""
    sketches = hashlib.sha256()
    for login in sorted(programs):
        for exercise in sorted(programs[login]):
            sketches.update(f"{login}\0{exercise}\0{sorted(programs[login][exercise])}\n".encode())
    return topic, tuple(exercises), tuple(sorted((login, sid) for login, (sid, _) in files.items())), sketches.digest()


class Reports:
    """Reports worked out in one background thread, kept by `key` (see the module docstring)."""

    def __init__(self, wait: float) -> None:
        self.wait = wait
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="similarity")
        self._lock = threading.Lock()
        self._kept: OrderedDict[tuple[Any, ...], Future[list[Ranking]]] = OrderedDict()

    def get(self, report_key: tuple[Any, ...], compute: Callable[[], list[Ranking]]) -> list[Ranking] | None:
        """The report for `report_key`, computed by `compute` (in the background, once), or None
        where it is not done within `wait` seconds. A report whose work failed raises its error
        (and is worked out again next time)."""
        with self._lock:
            future = self._kept.get(report_key)
            if future is None:
                future = self._kept[report_key] = self._pool.submit(compute)
            self._kept.move_to_end(report_key)
            while len(self._kept) > KEPT:
                self._kept.popitem(last=False)
        try:
            return future.result(timeout=self.wait)
        except FutureTimeout:
            return None
        except Exception:
            with self._lock:
                if self._kept.get(report_key) is future:
                    del self._kept[report_key]
            raise

    def close(self) -> None:
        """Stop taking work; the report in progress is abandoned."""
        self._pool.shutdown(wait=False, cancel_futures=True)

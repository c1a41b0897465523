"""Student workers started ahead of the next save, for `grade watch`.

A check of a saved file starts a fresh worker for the student's module, so that no state of
the previous version survives; most of that start is importing libraries (JAX, and for ising
NetKet: about 2 s of a 3 s re-check). While the student edits, `grade watch` keeps one spare
worker per topic started, with the libraries the file imported last time already imported
(`Worker(preload=..., load_on_request=True)`) and its module file not yet written. The next
check of that topic copies the saved file in, asks the spare to import it, and grades as
usual; the spare is then used up, and `grade watch` prepares the next.

Only for public, unsandboxed runs (`grade watch` on the student's own machine): a sandboxed
worker stages its module when it starts. A spare that died, or whose settings differ from
what the session needs, is closed and a worker is started as before.
"""

from __future__ import annotations

import ast
import shutil
import sys
import tempfile
import threading
from concurrent.futures import Future, ThreadPoolExecutor, TimeoutError as FutureTimeout
from dataclasses import dataclass
from pathlib import Path

from autograder import compile_cache
from autograder.sandbox import Limits, Worker, WorkerDied
from autograder.spec import Topic


def imported_libraries(source: str) -> tuple[str, ...]:
    """The top-level packages `source` imports at module level, installed ones only (the
    standard library is loaded anyway; a name that is not installed is the module's error)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return ()
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            names.extend(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.append(node.module.split(".")[0])
    return tuple(dict.fromkeys(n for n in names if n not in sys.stdlib_module_names))


@dataclass(frozen=True)
class Settings:
    """What a student worker is started with; a spare serves only a session that asks the same."""

    env: tuple[tuple[str, str], ...]
    limits: Limits
    cache: compile_cache.Policy


def _close_started(future: Future[Worker]) -> None:
    """Stop a spare that finished starting after nobody wanted it any more."""
    if future.exception() is None:
        future.result().close()


class Spares:
    """One spare student worker per topic, started in the background (`prepare`), used once
    (`take`). Close it when done: the spares not taken are stopped."""

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(2, thread_name_prefix="spare")
        self._lock = threading.Lock()
        self._ready: dict[str, tuple[Settings, Path, Future[Worker]]] = {}

    def prepare(self, topic: Topic, source: str, *, limits: Limits, cache: compile_cache.Policy) -> None:
        """Start a spare for `topic` (unless one is waiting), preloading what `source` imports."""
        settings = Settings(tuple(sorted(topic.env.items())), limits, cache)
        with self._lock:
            if topic.name in self._ready:
                return
            folder = Path(tempfile.mkdtemp(prefix=f"jaxlings-spare-{topic.name}-"))
            future = self._pool.submit(Worker, folder / f"{topic.name}.py", topic.name, env=dict(topic.env),
                                       limits=limits, cache=cache, preload=imported_libraries(source),
                                       load_on_request=True, owned_dir=folder)
            self._ready[topic.name] = (settings, folder, future)

    def take(self, topic: Topic, module: Path, *, limits: Limits, cache: compile_cache.Policy,
             timeout: float) -> Worker | None:
        """The spare for `topic` with `module` copied in and imported (its `load_reply` says how
        that went), or None: no spare, other settings, or it died (then it is cleaned up)."""
        with self._lock:
            entry = self._ready.pop(topic.name, None)
        if entry is None:
            return None
        settings, folder, future = entry
        try:
            worker = future.result(timeout=timeout)
        except FutureTimeout:
            future.add_done_callback(_close_started)  # still starting: stop it once it has
            return None
        except Exception:  # noqa: BLE001 - a spare that failed to start is only a missed shortcut
            return None
        if settings != Settings(tuple(sorted(topic.env.items())), limits, cache) or not worker.alive:
            worker.close()
            return None
        shutil.copyfile(module, folder / f"{topic.name}.py")
        try:
            worker.load(timeout)
        except WorkerDied:
            worker.close()
            return None
        return worker

    def close(self) -> None:
        """Stop every spare not taken."""
        with self._lock:
            entries, self._ready = list(self._ready.values()), {}
        for _, folder, future in entries:
            try:
                future.result().close()
            except Exception:  # noqa: BLE001 - it never started: nothing to stop
                shutil.rmtree(folder, ignore_errors=True)
        self._pool.shutdown(wait=True)

"""Student workers started ahead of the next save, for `grade watch`.

A check of a saved file starts a fresh worker for the student's module, so that no state of
the previous version survives; most of that start is importing libraries (JAX, and for ising
NetKet: about 2 s of a 3 s re-check). While the student edits, `grade watch` keeps one spare
worker per topic started, with the libraries the file imported last time already imported
(`WorkerProcess(preload=..., load_on_request=True)`) and its module file not yet written. The
next check of that topic copies the saved file in, asks the spare to import it, and grades as
usual; the spare is then used up, and `grade watch` prepares the next.

A re-check of an exercise whose checks analyse programs (`jit`, `vmap`, `sharding`) also needs
the trusted worker that analyses the student's exported programs (an empty module, in a
public run: `TopicSession._start_reference`). Its start (JAX's import) and the first
compilation in its process (initialising XLA's compiler, which `program._warm_up` pays on the
first analysis) were about half of such a re-check; so a spare of that worker is kept too
(`take_trusted`), started and warmed up while the student edits. It is trusted code on an empty
module, used once, like the student's: no state of one check reaches the next.

Only for public, unsandboxed runs (`grade watch` on the student's own machine): a sandboxed
worker stages its module when it starts. A spare that died, or whose settings differ from
what the session needs, is closed and a worker is started as before.
"""

from __future__ import annotations

import ast
import functools
import shutil
import sys
import tempfile
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from pathlib import Path

from jaxlings.grading import compile_cache
from jaxlings.grading.source import parse
from jaxlings.grading.spec import Topic
from jaxlings.isolation import Limits, WorkerDied, WorkerProcess


def imported_libraries(source: str) -> tuple[str, ...]:
    """The top-level packages, other than the standard library's, that `source` imports before
    any of its own code runs: its leading import statements (after a docstring). Those are
    imported in the same order with nothing in between, preloaded or not; a package imported
    after a statement (`os.environ[...] = ...`, say) may depend on it, and is left to the module.
    The worker skips a name that does not import: the module's own import reports it."""
    tree = parse(source)
    if tree is None:
        return ()
    names: list[str] = []
    for i, node in enumerate(tree.body):
        if isinstance(node, ast.Import):
            names.extend(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.module and not node.level:
                names.append(node.module.split(".")[0])
        elif not (i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):
            break
    return tuple(dict.fromkeys(n for n in names if n not in sys.stdlib_module_names and n != "__future__"))


@dataclass(frozen=True)
class Settings:
    """What a student worker is started with; a spare serves only a session that asks the same."""

    env: tuple[tuple[str, str], ...]
    limits: Limits
    cache: compile_cache.Policy

    @classmethod
    def of(cls, topic: Topic, limits: Limits, cache: compile_cache.Policy) -> Settings:
        return cls(tuple(sorted(topic.env.items())), limits, cache)


TRUSTED_NAME = "jaxlings_analysis"
"""The module name of the trusted analysis worker of a public run (`TopicSession`'s own)."""

TRUSTED_MODULE = '''"""Nothing: this worker only analyses exported programs (a spare of `grade watch`: XLA's
compiler is started here, ahead of the first analysis)."""
from jaxlings.worker import program

program._warm_up()
'''


def analyses_programs(topic: Topic) -> bool:
    """Whether some check of `topic` sends programs to the trusted worker (`Check.analyses`)."""
    return any(check.analyses for ex in topic.exercises for check in ex.checks)


def _discard(folder: Path, future: Future[WorkerProcess]) -> None:
    """Stop a spare nobody wants any more (its worker removes its folder), or remove the folder
    of one that failed to start; waits until it has done starting."""
    if future.exception() is None:
        future.result().close()
    else:
        shutil.rmtree(folder, ignore_errors=True)


def _started(
    entry: tuple[Settings, Path, Future[WorkerProcess]] | None, wanted: Settings, timeout: float
) -> WorkerProcess | None:
    """The worker of a spare `entry` once it has started, if it was started with the `wanted`
    settings and is alive; else None, and the spare is stopped (or, still starting after
    `timeout`, stopped once it has started)."""
    if entry is None:
        return None
    settings, folder, future = entry
    try:
        worker = future.result(timeout=timeout)
    except FutureTimeout:
        future.add_done_callback(functools.partial(_discard, folder))
        return None
    except Exception:  # noqa: BLE001 - a spare that failed to start is only a missed shortcut
        _discard(folder, future)
        return None
    if settings != wanted or not worker.alive:
        worker.close()
        return None
    return worker


class Spares:
    """One spare student worker per topic, and for a topic whose checks analyse programs one
    spare trusted analysis worker, started in the background (`prepare`), each used once
    (`take`, `take_trusted`). Close it when done: the spares not taken are stopped."""

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(2, thread_name_prefix="spare")
        self._lock = threading.Lock()
        self._ready: dict[str, tuple[Settings, Path, Future[WorkerProcess]]] = {}
        self._trusted: dict[str, tuple[Settings, Path, Future[WorkerProcess]]] = {}

    def prepare(self, topic: Topic, source: str, *, limits: Limits, cache: compile_cache.Policy) -> None:
        """Start a spare for `topic` (unless one is waiting), preloading what `source` imports;
        and a spare trusted analysis worker where the topic's checks analyse programs."""
        settings = Settings.of(topic, limits, cache)
        with self._lock:
            if analyses_programs(topic) and topic.name not in self._trusted:
                self._trusted[topic.name] = self._start_trusted(topic, settings, limits, cache)
            if topic.name in self._ready:
                return
            folder = Path(tempfile.mkdtemp(prefix=f"jaxlings-spare-{topic.name}-"))
            future = self._pool.submit(
                WorkerProcess,
                folder / f"{topic.name}.py",
                topic.name,
                env=dict(topic.env),
                limits=limits,
                cache=cache,
                preload=imported_libraries(source),
                load_on_request=True,
                owned_dir=folder,
            )
            self._ready[topic.name] = (settings, folder, future)

    def _start_trusted(
        self, topic: Topic, settings: Settings, limits: Limits, cache: compile_cache.Policy
    ) -> tuple[Settings, Path, Future[WorkerProcess]]:
        """Start a spare trusted analysis worker for `topic` in the background (lock held)."""
        folder = Path(tempfile.mkdtemp(prefix=f"jaxlings-spare-analysis-{topic.name}-"))
        module = folder / f"{TRUSTED_NAME}.py"
        module.write_text(TRUSTED_MODULE)
        future = self._pool.submit(
            WorkerProcess, module, TRUSTED_NAME, env=dict(topic.env), limits=limits, cache=cache, owned_dir=folder
        )
        return settings, folder, future

    def take(
        self, topic: Topic, module: Path, *, limits: Limits, cache: compile_cache.Policy, timeout: float
    ) -> WorkerProcess | None:
        """The spare for `topic` with `module` copied in and imported (its `load_reply` says how
        that went), or None: no spare, other settings, or it died (then it is cleaned up)."""
        with self._lock:
            entry = self._ready.pop(topic.name, None)
        worker = _started(entry, Settings.of(topic, limits, cache), timeout)
        if worker is None or entry is None:
            return None
        shutil.copyfile(module, entry[1] / f"{topic.name}.py")
        try:
            worker.load(timeout)
        except WorkerDied:
            worker.close()
            return None
        return worker

    def take_trusted(
        self, topic: Topic, *, limits: Limits, cache: compile_cache.Policy, timeout: float
    ) -> WorkerProcess | None:
        """The spare trusted analysis worker for `topic`, started and warmed up (its empty
        module imported), or None: none waiting, other settings, or it failed or died."""
        with self._lock:
            entry = self._trusted.pop(topic.name, None)
        worker = _started(entry, Settings.of(topic, limits, cache), timeout)
        if worker is not None and not (worker.load_reply or {}).get("ok"):
            worker.close()
            return None
        return worker

    def close(self) -> None:
        """Stop every spare not taken."""
        with self._lock:
            entries, self._ready = list(self._ready.values()), {}
            entries += list(self._trusted.values())
            self._trusted = {}
        for _, folder, future in entries:
            _discard(folder, future)
        self._pool.shutdown(wait=True)

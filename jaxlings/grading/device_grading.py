"""Grading on an accelerator: one process on the device at a time, and as few as possible.

Where the grading machine has an accelerator (`jaxlings.grading.device`), the topics whose spec runs
there (`Topic.platform == "accelerator"`) are graded in two phases, each ONE process on the
device for every such topic:

1. the reference (trusted), hidden grading only: its modules imported in turn, it does every
   check's work that must run on the device ahead of the student (`Check.prefetch`: the timed
   rounds of `speed`, the timed stream of `compiles`), on inputs drawn from the run's secret,
   and the grader keeps its answers (times, input digests, a stream's outputs: small) until
   the student's phase asks for them in the same words (`answers.Prefetched`);
2. the student (untrusted, sandboxed where the sandbox runs): one process that imports each
   topic's module in turn (`SharedWorker`) and answers every check, topic after topic, while
   the reference answers live from a worker on the host's CPU and the student's exported
   programs are analysed on the CPU too. A death costs the topic it happened in; the next
   request starts a fresh process (a new lease, a new opening of the device).

Each phase holds the device's lease for as long as its process lives (`device.Lease`), so no
two processes ever hold the device at once; a result records each lease (`extra_data.device`).
Topics on the CPU (`platform="cpu"`) are graded beside the phases, as on any machine, their
workers kept off the device.

What stays as in docs/grading.md "What is trusted": every input is drawn by the grader from the
run's secret and reaches the student's process with the request that times it (a speed round's
inputs are made on the device from a key sent with it, `jaxlings.grading.workloads`); the clock is the
grader's; a round's outputs are committed to inside the window (`worker.commit`) and the best
round's are fetched and compared with the reference's after it (`checks.speed`).
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from jaxlings.grading import compile_cache, replies
from jaxlings.grading.answers import Prefetching
from jaxlings.grading.checks import Check, ordered
from jaxlings.grading.context import CheckContext
from jaxlings.grading.device import Device
from jaxlings.grading.gate import ClockGate
from jaxlings.grading.session import TopicSession, format_error
from jaxlings.grading.spec import Exercise, Topic
from jaxlings.isolation import Limits, WorkerDied, WorkerProcess

EMPTY_MODULE = '"""Nothing: this process imports each topic\'s module in turn (`jaxlings.grading.device_grading`)."""\n'
LOAD_TIMEOUT = 120.0
log = logging.getLogger(__name__)  # silent unless configured: the phases' steps and seconds, for an operator


class SharedWorker:
    """The one worker on the device for one side of a grading: started on an empty module under
    the device's lease, it imports each topic's module when asked (`worker_for`), and is started
    again, under a new lease, after a death. `modules` are the files it may import (staged with
    it in the sandbox); `who` names the side in the lease records."""

    def __init__(
        self,
        device: Device,
        who: str,
        modules: list[Path],
        *,
        isolate: bool = False,
        limits: Limits = Limits(),
        cache: compile_cache.Policy = compile_cache.NONE,
    ) -> None:
        self.device, self.who, self.modules = device, who, modules
        self.isolate, self.limits, self.cache = isolate, limits, cache
        self.worker: WorkerProcess | None = None
        self.current: str | None = None  # the module name the worker has imported last
        self.platform: dict[str, Any] = {}
        self._lease: contextlib.ExitStack | None = None
        self._folder = Path(tempfile.mkdtemp(prefix=f"jaxlings-{who}-"))
        self._empty = self._folder / "jaxlings_device.py"
        self._empty.write_text(EMPTY_MODULE)

    def worker_for(self, module: Path, name: str, timeout: float = LOAD_TIMEOUT) -> tuple[WorkerProcess, dict]:
        """The live worker with `module` imported as `name` (imported now unless it is the one
        imported last), and the import's reply (`{"ok": ..., "functions" | "error"}`). Raises
        WorkerDied where the process will not start or dies importing."""
        if self.worker is None or not self.worker.alive:
            self._start(min(timeout, LOAD_TIMEOUT))
        assert self.worker is not None
        if self.current == name:
            return self.worker, {"ok": True}
        reply = replies.check(
            "module", self.worker.request("module", timeout, path=self.worker.path_of(module), name=name)
        )
        self.current = name if reply["ok"] else None
        return self.worker, reply

    def _start(self, timeout: float) -> None:
        """A fresh worker on the empty module, the device leased to it for its lifetime."""
        self.close()
        lease = contextlib.ExitStack()
        lease.enter_context(self.device.lease.held(self.who))
        try:
            self.worker = WorkerProcess(
                self._empty,
                "jaxlings_device",
                env=self.device.env(on_device=True),
                isolate=self.isolate,
                limits=self.limits,
                start_timeout=timeout,
                cache=self.cache,
                companions=tuple(self.modules),
                device_lock=self.device.lock,
                on_device=True,
            )
        except BaseException:
            lease.close()
            raise
        log.info("%s's worker on the device: started", self.who)
        self.worker.shared = True  # type: ignore[attr-defined]  # a session never closes it (`TopicSession.close`)
        self._lease = lease
        self.platform = dict(self.worker.platform)
        self.current = None

    def close(self) -> None:
        """Stop the worker (if any) and give the device back."""
        if self.worker is not None:
            self.worker.close()
            self.worker = None
        if self._lease is not None:
            self._lease.close()
            self._lease = None

    def cleanup(self) -> None:
        self.close()
        shutil.rmtree(self._folder, ignore_errors=True)


class DeviceRun:
    """The device's side of one grading: the prefetched answers of the reference's phase, by
    topic, and the student's shared worker (see the module docstring)."""

    def __init__(self, device: Device, *, isolate: bool, limits: Limits, student_modules: list[Path]) -> None:
        self.device = device
        self.store: dict[str, dict[str, Any]] = {}  # topic -> request key -> answer
        self.reference_platform: dict[str, Any] = {}
        self.student = SharedWorker(
            device,
            "student",
            student_modules,
            isolate=isolate,
            limits=limits,
            cache=compile_cache.reference_view() if isolate else compile_cache.NONE,
        )

    @property
    def platform(self) -> dict[str, Any]:
        """The device as its trusted worker described it (the reference's phase), else as the
        student's worker did (a run without that phase decides nothing on its time), else its kind."""
        return self.reference_platform or self.student.platform or {"backend": self.device.backend}

    def student_worker(self, module: Path, name: str, timeout: float) -> tuple[WorkerProcess | None, str | None]:
        """The student's worker with `module` imported, or (None, why not) as a topic reports it."""
        try:
            worker, loaded = self.student.worker_for(module, name, timeout)
        except WorkerDied as exc:
            return None, f"importing {module.name} failed: {exc}"
        except replies.MalformedReply as exc:
            if self.student.worker is not None:
                self.student.worker.kill(f"sent a malformed reply ({exc})")
            return None, f"importing {module.name} failed: the worker's reply was malformed: {exc}"
        if not loaded["ok"]:
            return None, f"importing {module.name} failed: {format_error(loaded['error'])}"
        return worker, None

    def close(self) -> None:
        self.student.cleanup()


def prefetching(ex: Exercise) -> list[Check]:
    """The checks of `ex` that do work on the device ahead of the student (`Check.prefetch`)."""
    return [c for c in ordered(ex.checks) if type(c).prefetch is not Check.prefetch]


def reference_phase(
    run: DeviceRun,
    topics: list[tuple[Topic, Path, set[str]]],
    seed: int,
    *,
    limits: Limits,
    gate: ClockGate,
) -> None:
    """The first phase: the reference's work on the device for every topic, in ONE trusted
    process (`SharedWorker` "reference"), kept in `run.store` by topic. `topics` are (spec,
    reference module, exercises that are stubs in the submission: nothing of theirs is asked)."""
    work = [
        (t, ref, [ex for ex in t.exercises if ex.name not in stubs and prefetching(ex)]) for t, ref, stubs in topics
    ]
    work = [(t, ref, exercises) for t, ref, exercises in work if exercises]
    if not work:
        return
    trusted = SharedWorker(
        run.device, "reference", [ref for _, ref, _ in work], limits=limits, cache=compile_cache.reference_device()
    )
    try:
        for topic, ref, exercises in work:
            store = run.store.setdefault(topic.name, {})
            with TopicSession(
                topic,
                ref,
                ref,
                seed,
                public=False,
                isolate=False,
                limits=limits,
                answers=Prefetching(store),
                device=run,
                reference_worker=trusted,
            ) as session:
                for ex in exercises:
                    ctx = CheckContext(session, ex, [], [])
                    for check in prefetching(ex):
                        t0 = time.monotonic()
                        with gate.exclusive():  # timed: alone, as the student's rounds will be (`engine._gated`)
                            check.prefetch(ctx)
                        log.info(
                            "reference %s.%s: %s in %.2f s", topic.name, ex.name, check.name, time.monotonic() - t0
                        )
        run.reference_platform = dict(trusted.platform)
    finally:
        trusted.cleanup()

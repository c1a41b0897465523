"""The device's processes for one grading: one worker per side on the device, one at a time.

`SharedWorker` is the ONE process of one side on the device (the reference's, the student's):
started on an empty module under the device's lease, it imports each topic's module in turn and
is started again, under a new lease, after a death. `DeviceRun` is the device's side of one
grading: the reference's prefetched answers by topic, and the student's shared worker. How the
two phases use them is `jaxlings.grading.device_grading`; a topic's session takes its worker from
here (`TopicSession(device=..., reference_worker=...)`).
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from jaxlings.grading import compile_cache, replies
from jaxlings.grading.device import Device
from jaxlings.grading.replies import format_error
from jaxlings.isolation import Limits, WorkerDied, WorkerProcess

log = logging.getLogger(__name__)  # silent unless configured: each opening of the device, for an operator
EMPTY_MODULE = '"""Nothing: this process imports each topic\'s module in turn (`jaxlings.grading.device_grading`)."""\n'
LOAD_TIMEOUT = 120.0


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

    def worker_for(
        self, module: Path, name: str, timeout: float = LOAD_TIMEOUT
    ) -> tuple[WorkerProcess, dict[str, Any]]:
        """The live worker with `module` imported as `name` (imported now unless it is the one
        imported last), and the import's reply (`{"ok": ..., "functions" | "error"}`). Raises
        WorkerDied where the process will not start or dies importing. One caller at a time:
        topics graded side by side hold `DeviceRun.held` around it."""
        self.open(min(timeout, LOAD_TIMEOUT))
        assert self.worker is not None
        if self.current == name:
            return self.worker, {"ok": True}
        reply = replies.check(
            "module", self.worker.request("module", timeout, path=self.worker.path_of(module), name=name)
        )
        self.current = name if reply["ok"] else None
        return self.worker, reply

    def open(self, timeout: float = LOAD_TIMEOUT) -> None:
        """Start the process now, where it is not running (from a thread that outlives its use:
        a sandboxed process dies with the thread that started it). Raises WorkerDied."""
        if self.worker is None or not self.worker.alive:
            self._start(timeout)

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
        self._held = threading.Lock()
        self.begun: set[tuple[str, str]] = set()  # (topic, exercise) whose check has held the student's process
        self.student = SharedWorker(
            device,
            "student",
            student_modules,
            isolate=isolate,
            limits=limits,
            cache=compile_cache.grader_device(),
        )

    @property
    def platform(self) -> dict[str, Any]:
        """The device as its trusted worker described it (the reference's phase), else as the
        student's worker did (a run without that phase decides nothing on its time), else its kind."""
        return self.reference_platform or self.student.platform or {"backend": self.device.backend}

    @contextlib.contextmanager
    def held(self, by: tuple[str, str] | None = None) -> Iterator[None]:
        """The student's process on the device, for one check at a time: the topics graded side
        by side send it requests in turn, never interleaved. `by`: the (topic, exercise) whose
        check holds it, noted in `begun` (nothing left to compile ahead for it)."""
        with self._held:
            if by is not None:
                self.begun.add(by)
            yield

    def open_student(self) -> None:
        """Open the device for the student's process ahead of its first speed check, while the
        topics start on the host's CPU (opening a TPU v5e takes a process 10-14 s). Called
        from the grading's own thread, which outlives every topic's; a process that will not
        start is left for the first speed check to try again and report."""
        try:
            with self.held():  # a speed check that comes meanwhile waits for the process
                self.student.open()
        except WorkerDied as exc:
            log.warning("the student's process on the device did not start ahead: %s", exc)

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

"""A topic under grading: its two workers, its cases, and the reference's answers.

`TopicSession` owns the trusted reference worker and the untrusted student worker for one
topic. The student's requests go through `student()`, which turns a dead worker into a
failed check (with the reason) and starts a fresh worker for the next check, as long as the
topic's time budget lasts. Checks never see a session: `jaxlings.grading.context.CheckContext` gives
them what they may use of it, one exercise at a time.

What checks need of the reference goes through `answer()`, and every random input through
`draw()`, so that a public run can be replayed from recorded expectations with no reference
solution at all (`jaxlings.grading.answers`). Every draw has a generator of its own, seeded by a keyed
hash of the run's secret seed, the exercise, the kind of draw and its number (`jaxlings.grading.draws`):
what one check draws never depends on what another check did, and no draw the student's
process is shown lets it compute another.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from jaxlings.grading import compile_cache, draws, replies
from jaxlings.grading.answers import Live, MissingAnswer
from jaxlings.grading.spares import Spares
from jaxlings.grading.spec import Topic
from jaxlings.isolation import Limits, ReplyBound, WorkerDied, WorkerProcess
from jaxlings.worker import wire

if TYPE_CHECKING:
    from jaxlings.grading.device import Device
    from jaxlings.grading.device_workers import DeviceRun, SharedWorker

REFERENCE_TIMEOUT = 300.0
STATS_TIMEOUT = 2.0  # seconds a worker has to say what it compiled (`TopicSession.compile_stats`)


def compiled(worker: WorkerProcess) -> dict[str, float] | None:
    """What JAX compiled in `worker` so far, {"compilations", "seconds"}, for an operator's
    figures only (a student's process's own word: never a verdict); None where it does not
    answer well within `STATS_TIMEOUT` (a late worker is stopped, as any late one is)."""
    try:
        reply = replies.check("stats", worker.request("stats", STATS_TIMEOUT))
    except (WorkerDied, replies.MalformedReply):
        return None
    if not reply["ok"]:
        return None
    return {"compilations": reply["compilations"], "seconds": round(reply["compile_seconds"], 3)}


def compilations(worker: WorkerProcess) -> int | None:
    """How many compilations JAX reported in `worker` so far (`compiled`), None where it does not say."""
    stats = compiled(worker)
    return None if stats is None else int(stats["compilations"])


def compiled_between(before: int | None, after: int | None) -> str:
    """The compilations between two readings of `compilations`, for a log line: "?" where
    either is unknown."""
    return "?" if before is None or after is None else str(after - before)


REPLY_BOUND_OPS = ("call", "step", "timed")  # replies bounded by the reference's (`TopicSession.reply_bound`)
T = TypeVar("T")


class GraderError(Exception):
    """The grader itself cannot go on (the reference failed, a worker would not start)."""


class StudentError(Exception):
    """A student call did not return normally; the message is ready for the student."""


class TopicSession:
    """Workers and state for grading one topic of one submission.

    `deaths` counts the student worker's deaths during calls, so that the engine can skip
    the remaining checks of an exercise whose function takes its process down.
    `needs_reference=False` starts the trusted worker only if something asks for it: the engine
    says so when every exercise is a stub (`jaxlings.grading.stubs`), or, replaying expectations, when
    no exercise has a check that sends programs to it (a check whose `analyses` is set, `jaxlings.grading.check`).

    On a machine with an accelerator (`jaxlings.grading.device_grading`): `device` is the grading's
    device side. In hidden grading the student's worker runs on the host's CPU, as every other
    worker does (with `cpu_env`), and the device's shared worker (`device_student`) runs only
    the timed rounds that must be timed there; in a public run (a student's own machine) the
    shared worker is the student's process for the whole topic. With `reference_worker` (the
    device's trusted process) the session is the reference's phase on the device: no student,
    the reference's answers from that worker.
    """

    def __init__(
        self,
        topic: Topic,
        module: Path,
        reference: Path | None,
        seed: int,
        *,
        public: bool,
        isolate: bool,
        limits: Limits = Limits(),
        answers: Live | None = None,
        needs_reference: bool = True,
        spares: Spares | None = None,
        device: DeviceRun | None = None,
        reference_worker: SharedWorker | None = None,
        cpu_env: dict[str, str] | None = None,
    ) -> None:
        self.topic, self.module, self.reference = topic, module, reference
        self.device_run, self.cpu_env = device, dict(cpu_env or {})
        self._spares = spares if public and not isolate else None  # never in hidden grading, nor sandboxed
        self._trusted_spares = self._spares  # for the analysis worker, once (`_start_reference`)
        self.seed, self.public, self.isolate, self.limits = seed, public, isolate, limits
        self.answers = answers or Live()
        self.deadline = time.monotonic() + topic.time_limit
        self.deaths = 0
        self._draws: dict[tuple[str, str], int] = {}  # (exercise, kind) -> draws made so far
        self._answer_sizes: dict[tuple[str, Any], tuple[int, int]] = {}  # (op, fn) -> reference reply bytes
        self._analysis_dir: tempfile.TemporaryDirectory[str] | None = None
        self._own = []
        if reference is None and self.answers.mode != "replay":
            raise GraderError(f"grading {topic.name} live needs the reference solutions")
        self._ref: WorkerProcess | None = None
        if reference_worker is not None:  # the reference's phase on the device: no student
            self._stu, self.load_error = None, None
            self._ref = self._shared_reference(reference_worker)
            return
        if not needs_reference:
            self._stu, self.load_error = self._start_student()
            return
        # The two start side by side; the student's in this thread, which lives as long as the topic:
        # a sandboxed worker dies with the thread that started it (bubblewrap's --die-with-parent is
        # the thread's parent-death signal), and one started in a pool's thread died as the pool
        # closed, to be started again at the first request: a wasted start per topic.
        with ThreadPoolExecutor(1) as pool:  # replaying, the trusted worker only analyses programs
            ref_future = pool.submit(self._start_reference)
            self._stu, self.load_error = self._start_student()
            self._ref = ref_future.result()

    # -- workers -------------------------------------------------------------------------

    @property
    def device(self) -> Device | None:
        """The accelerator this topic's timed student functions run on, or None (the CPU)."""
        return self.device_run.device if self.device_run is not None else None

    @property
    def student_on_device(self) -> bool:
        """Whether the topic's student worker is the device's shared one (a public run on a
        machine with an accelerator); in hidden grading it is on the host's CPU."""
        return self.device_run is not None and self.public

    def device_held(self, exercise: str) -> contextlib.AbstractContextManager[None]:
        """The device's student process for one check of `exercise` alone (`DeviceRun.held`);
        nothing to hold where the topic's own worker is that process (a public run) or there is none."""
        if self.device_run is None or self.student_on_device:
            return contextlib.nullcontext()
        return self.device_run.held((self.topic.name, exercise))

    def device_student(self) -> WorkerProcess:
        """The student's process on the device with this topic's module imported: the topic's
        worker in a public run, else the device's shared worker (hidden grading: for the timed
        rounds only), started or importing the module now where need be. StudentError (counted
        as a death) where it does not start or import."""
        if self.device_run is None or self.student_on_device:
            return self.student()
        if self.abandoned:
            raise StudentError("not run: the topic was stopped past its time limit")
        worker, error = self.device_run.student_worker(self.module, self.topic.name, min(120.0, self.time_left()))
        if worker is None:
            self.deaths += 1
            raise StudentError(f"there {error}")
        worker.bound_for = self.reply_bound
        return worker

    def _shared_reference(self, shared: SharedWorker) -> WorkerProcess:
        """The device's trusted worker with this topic's reference imported."""
        if self.reference is None:
            raise GraderError(f"grading {self.topic.name} on the device needs the reference solutions")
        try:
            worker, loaded = shared.worker_for(self.reference, f"reference_{self.topic.name}")
        except (WorkerDied, replies.MalformedReply) as exc:
            raise GraderError(f"the reference for {self.topic.name} did not start on the device: {exc}") from None
        if not loaded["ok"]:
            raise GraderError(f"the reference for {self.topic.name} failed to import: {loaded['error']}")
        return worker

    def _start_reference(self) -> WorkerProcess:
        """The trusted worker: the reference module live, or, when replaying, an empty module
        that only analyses and runs the student's exported programs (the first time, the spare
        `grade watch` started and warmed up for this topic, if it has one: `jaxlings.grading.spares`)."""
        module, name, cache = self.reference, f"reference_{self.topic.name}", compile_cache.reference()
        if self.answers.mode == "replay":
            cache = compile_cache.student_public()
            spares, self._trusted_spares = self._trusted_spares, None
            if spares is not None:
                timeout = min(120.0, self.time_left())
                spare = spares.take_trusted(self.topic, limits=self.limits, cache=cache, timeout=timeout)
                if spare is not None:
                    return spare
            if self._analysis_dir is None:
                self._analysis_dir = tempfile.TemporaryDirectory(prefix="jaxlings-analysis-")
            module, name = Path(self._analysis_dir.name) / "analysis.py", "jaxlings_analysis"
            module.write_text('"""Nothing: this worker only analyses exported programs."""\n')
        if module is None:  # the constructor refuses a live session without one
            raise GraderError(f"grading {self.topic.name} live needs the reference solutions")
        return self._start_trusted(module, name, cache, f"the reference for {self.topic.name}")

    def _start_trusted(self, module: Path, name: str, cache: compile_cache.Policy, what: str) -> WorkerProcess:
        """A trusted worker on `module`; GraderError naming `what` when it does not start or import."""
        try:
            worker = WorkerProcess(
                module, name, env={**self.topic.env, **self.cpu_env}, limits=self.limits, cache=cache
            )
        except WorkerDied as exc:
            raise GraderError(f"{what} did not start: {exc}") from None
        loaded = worker.load_reply or {"ok": False, "error": "no reply"}
        if not loaded["ok"]:
            worker.close()
            raise GraderError(f"{what} failed to import: {loaded['error']}")
        return worker

    def _start_student(self) -> tuple[WorkerProcess | None, str | None]:
        """Start the student's worker (the first time, a spare's if `grade watch` has one for
        this topic); (None, reason) when the module cannot be imported."""
        spares, self._spares = self._spares, None
        timeout = min(120.0, self.time_left())
        if self.student_on_device:
            assert self.device_run is not None
            shared, error = self.device_run.student_worker(self.module, self.topic.name, timeout)
            if shared is not None:
                shared.bound_for = self.reply_bound
            return shared, error
        try:
            stu = spares and spares.take(
                self.topic, self.module, limits=self.limits, cache=self._student_cache(), timeout=timeout
            )
            stu = stu or WorkerProcess(
                self.module,
                self.topic.name,
                env={**self.topic.env, **self.cpu_env},
                isolate=self.isolate,
                limits=self.limits,
                start_timeout=timeout,
                cache=self._student_cache(),
            )
        except WorkerDied as exc:
            return None, f"importing {self.module.name} failed: {exc}"
        loaded = stu.load_reply or {"ok": False, "error": {"type": "WorkerDied", "message": "no reply"}}
        if not loaded["ok"]:
            stu.close()
            return None, f"importing {self.module.name} failed: {replies.format_error(loaded['error'])}"
        stu.bound_for = self.reply_bound
        return stu, None

    def reply_bound(self, op: str, fn: Any) -> ReplyBound | None:
        """How large the student's reply to `op` on `fn` may be: twice the largest reply the
        reference gave to the same kind of request (live, or as recorded) plus 1 MiB; None (the
        absolute cap) before the reference answered one. Every student request goes through it
        (`WorkerProcess.request`), so no check keeps more than that per reply it holds. Exported
        programs (`trace`) may rightly be much larger than the reference's (a loop unrolled):
        `ReplyBound.program`, 64 times plus 16 MiB (the reference's trace is live only: replaying,
        the recording holds its facts, not its programs, and the absolute cap holds)."""
        if op not in (*REPLY_BOUND_OPS, "trace"):
            return None
        sizes = [self._answer_sizes.get((op, fn)), self._ref.reply_sizes.get((op, fn)) if self._ref else None]
        seen = [s for s in sizes if s is not None]
        if not seen:
            return None
        bound = ReplyBound.program if op == "trace" else ReplyBound.after
        return bound(max(f for f, _ in seen), max(h for _, h in seen), self.limits)

    def _note_answer(self, kind: str, request: Any, value: Any) -> None:
        """Record the size of a reference's answer as its reply would weigh (`reply_bound`):
        replaying, the reference's replies come from recorded expectations, not its worker."""
        fn = request.get("fn") if isinstance(request, dict) else None
        if kind == "call":
            sized = [wire.sizes({"ok": True, "out": value})]
        elif kind == "steps" and isinstance(value, dict) and isinstance(value.get("outs"), list):
            sized = [wire.sizes({"ok": True, "out": out, "counts": [0, 0], "cache_hits": 0}) for out in value["outs"]]
        else:
            return
        op = "call" if kind == "call" else "step"
        self._answer_sizes[(op, fn)] = max([self._answer_sizes.get((op, fn), (0, 0)), *sized])

    def _student_cache(self) -> compile_cache.Policy:
        """A student's own cache in their public checks (offline, unsandboxed); in hidden
        grading, a read-only view of the reference's (`compile_cache.View`), sandboxed only:
        outside the sandbox nothing keeps a process from listing it."""
        if self.public:
            return compile_cache.NONE if self.isolate else compile_cache.student_public()
        return compile_cache.reference_view() if self.isolate else compile_cache.NONE

    @property
    def ref(self) -> WorkerProcess:
        """The trusted worker, started here if the session began without it."""
        if self._ref is None:
            self._ref = self._start_reference()
        return self._ref

    _analyser: WorkerProcess | None = None
    _own: list[WorkerProcess]  # the workers of `own_worker` in use, killed by `abandon`
    abandoned = False  # stopped from outside (`abandon`): no worker starts again

    @property
    def analyser(self) -> WorkerProcess:
        """The trusted worker that analyses and runs the STUDENT's exported programs: an empty
        module of its own, started on first use, so that a program that runs away or crashes
        there (`structure`: each analysis has a deadline) restarts only this worker, never the
        reference. Replaying expectations, the trusted worker already is such an empty module."""
        if self.answers.mode == "replay":
            return self.ref
        if self._analyser is None or not self._analyser.alive:
            if self.abandoned:
                raise StudentError("not run: the topic was stopped past its time limit")
            self._analyser = self._start_analyser()
        return self._analyser

    def _start_analyser(self) -> WorkerProcess:
        """Start the analysis worker (`analyser`): an empty module, the trusted side's cache."""
        if self._analysis_dir is None:
            self._analysis_dir = tempfile.TemporaryDirectory(prefix="jaxlings-analysis-")
        module = Path(self._analysis_dir.name) / "analyser.py"
        module.write_text('"""Nothing: this worker only analyses exported programs of a submission."""\n')
        return self._start_trusted(
            module, "jaxlings_analyser", compile_cache.reference(), f"the program analyser for {self.topic.name}"
        )

    def restart_analyser(self) -> None:
        """Stop the analysis worker after a student's program took it down or past its deadline;
        the next analysis starts a fresh one."""
        if self.answers.mode == "replay":
            self.restart_reference()
        elif self._analyser is not None:
            self._analyser.close()
            self._analyser = None

    def restart_reference(self) -> None:
        """A fresh reference worker, after a student's exported program took the old one down
        while it was being analysed (the reference worker is the trusted side's only process)."""
        sizes = self.ref.reply_sizes
        self.ref.close()
        self._ref = self._start_reference()
        self._ref.reply_sizes.update(sizes)

    @property
    def platform(self) -> dict[str, Any]:
        """The trusted worker's platform ({} if it never started: nothing was judged). Replaying
        expectations (a public run, which decides nothing), a topic whose checks analyse no
        program never starts that worker, and the student's worker, on the same machine, says.
        A topic graded on an accelerator: the device's (`DeviceRun.platform`)."""
        if self.device_run is not None:
            return self.device_run.platform
        if self._ref is None and self.answers.mode == "replay" and self._stu is not None:
            return self._stu.platform
        return self._ref.platform if self._ref is not None else {}

    def export_for(self) -> dict[str, Any]:
        """What the student's `trace` request adds: on an accelerator, its programs exported for
        the CPU, where the trusted side analyses and runs them (one process holds the device)."""
        return {"platforms": ["cpu"]} if self.device is not None and self.device.accelerator else {}

    @property
    def backend(self) -> str:
        """The backend the student's functions are timed on (the device's, where there is one)."""
        return self.device.backend if self.device is not None else self.platform["backend"]

    @property
    def wall_clock(self) -> bool:
        """Whether timed checks read wall time (a GPU, or no cgroups): then they must run alone
        (`jaxlings.grading.gate`); on a CPU with cgroups each worker's CPU time is its own."""
        if self.device is not None and self.device.accelerator:
            return True
        platform = self.platform or self.ref.platform
        workers = [w for w in (self._ref, self._stu) if w is not None]
        return platform.get("backend") != "cpu" or any(w.accounting != "cgroup" for w in workers)

    # -- the reference's side: answers and draws ---------------------------------------------

    def answer(self, kind: str, request: Any, compute: Callable[[], T]) -> T:
        """What the reference gives for `request` (computed by `compute`, or recorded)."""
        try:
            value = self.answers.answer(kind, request, compute)
        except MissingAnswer as exc:
            raise GraderError(str(exc)) from None
        self._note_answer(kind, request, value)
        return value

    def draw(self, exercise: str, kind: str, make: Callable[[np.random.Generator], T]) -> T:
        """Inputs for `exercise` of `kind` (e.g. "cases", "trace"), from a generator of their own:
        the n-th draw of this kind for this exercise (`jaxlings.grading.draws.generator`)."""
        n = self._draws.get((exercise, kind), 0)
        self._draws[(exercise, kind)] = n + 1
        rng = draws.generator(self.seed, self.topic.name, exercise, kind, n)
        try:
            return self.answers.draw(kind, rng, make)
        except MissingAnswer as exc:
            raise GraderError(str(exc)) from None

    def time_left(self) -> float:
        return max(0.0, self.deadline - time.monotonic())

    def student(self) -> WorkerProcess:
        """The live student worker, restarted after a death while time is left."""
        if self._stu is not None and self._stu.alive:
            return self._stu
        if self._stu is not None:
            self._stu.close()
        if self.time_left() < 5:
            raise StudentError(f"not run: the topic used up its {self.topic.time_limit:g} s time limit")
        self._stu, error = self._start_student()
        if self._stu is None:
            raise StudentError(error or "the module could not be started again")
        return self._stu

    @contextlib.contextmanager
    def own_worker(self, student: bool) -> Iterator[WorkerProcess]:
        """A worker of its own for one piece of work, started for it and closed after it: the
        student's module (sandboxed as the topic's worker is, never a spare) or the reference's,
        both on the host's CPU (`cpu_env`; a device's chip stays with its one process). Its
        cgroup counts everything it did from its start, its module's import and whatever that
        started included (`jaxlings.grading.checks.compiles`). A student's that does not start is
        a StudentError; the reference's, a GraderError."""
        if self.abandoned:
            raise StudentError("not run: the topic was stopped past its time limit")
        if student:
            try:
                worker = WorkerProcess(
                    self.module,
                    self.topic.name,
                    env={**self.topic.env, **self.cpu_env},
                    isolate=self.isolate,
                    limits=self.limits,
                    start_timeout=max(1.0, min(120.0, self.time_left())),
                    cache=self._student_cache(),
                )
            except WorkerDied as exc:
                raise StudentError(f"importing {self.module.name} again failed: {exc}") from None
            loaded = worker.load_reply or {"ok": False, "error": {"type": "WorkerDied", "message": "no reply"}}
            if not loaded["ok"]:
                worker.close()
                raise StudentError(
                    f"importing {self.module.name} again failed: {replies.format_error(loaded['error'])}"
                )
            worker.bound_for = self.reply_bound
        else:
            if self.reference is None:
                raise GraderError(f"grading {self.topic.name} live needs the reference solutions")
            worker = self._start_trusted(
                self.reference, f"reference_{self.topic.name}", compile_cache.reference(), "the reference"
            )
        self._own.append(worker)
        try:
            yield worker
        finally:
            self._own.remove(worker)
            worker.close()

    def student_paused(self) -> contextlib.AbstractContextManager[bool | None]:
        """The student's worker frozen (its whole cgroup), for timing the reference: nothing the
        student started can compete with the reference for cores, caches or memory bandwidth."""
        if self._stu is not None and self._stu.alive:
            return self._stu.paused()
        return contextlib.nullcontext()

    def compile_stats(self) -> dict[str, dict[str, float]]:
        """Per live worker ("reference", "student"), what its JAX compiled so far:
        {"compilations", "seconds"}. For `benchmarks/bench.py`'s table only: the student's
        figures are its own process's word, so they never reach a verdict; a worker that does
        not answer well within `STATS_TIMEOUT` is left out (and, being late, stopped)."""
        stats = {}
        for side, worker in (("reference", self._ref), ("student", self._stu)):
            if worker is not None and worker.alive and (figures := compiled(worker)) is not None:
                stats[side] = figures
        return stats

    def abandon(self) -> None:
        """Stop this topic from outside, from another thread (`jaxlings.grading.watchdog`): its time
        is up and its own workers are killed, so that a request waiting on one fails at once and the
        topic winds down (its thread then closes them, their cgroups and files with them); no
        worker starts again. A device's shared worker is left to its run."""
        self.deadline, self.abandoned = 0.0, True
        for w in (self._ref, self._stu, self._analyser, *self._own):
            if w is not None and not getattr(w, "shared", False):
                w.kill("the topic ran past its outside deadline")

    def close(self) -> None:
        for w in (self._ref, self._stu, self._analyser):
            if w is not None and not getattr(w, "shared", False):  # a device's shared worker outlives the topic
                w.close()
        if self._analysis_dir is not None:
            self._analysis_dir.cleanup()

    # -- calls ---------------------------------------------------------------------------

    def call_student(
        self, op: str, *, max_reply: ReplyBound | None = None, worker: WorkerProcess | None = None, **fields: Any
    ) -> dict[str, Any]:
        """One request to the student (to the topic's worker, or to `worker`, one of `own_worker`'s);
        StudentError carries a message when it did not return.

        The reply is checked against the schema of `op` first: a malformed one (the student's
        process can write any frame on its pipe) stops the worker, as a crash does. It is bounded
        by `max_reply`, else by `reply_bound(op, fn)`: a larger one stops the worker too.
        """
        worker = worker or self.student()
        try:
            timeout = min(self.limits.call_timeout, max(1.0, self.time_left()))
            reply = replies.check(op, worker.request(op, timeout, max_reply=max_reply, **fields))
        except WorkerDied as exc:
            self.deaths += 1
            raise StudentError(str(exc)) from None
        except replies.MalformedReply as exc:
            self.deaths += 1
            worker.kill(f"sent a malformed reply ({exc})")
            raise StudentError(f"the worker's reply was malformed: {exc}") from None
        if not reply["ok"]:
            raise StudentError(
                replies.format_error(reply["error"], f"{self.topic.name}.{fields['fn']}" if "fn" in fields else None)
            )
        return reply

    def attempt_student(self, op: str, **fields: Any) -> dict[str, Any] | None:
        """`call_student` for a call whose failure decides nothing: its reply, or None where it
        raised, sent a malformed reply or took the worker down (a death not counted in `deaths`:
        the next request starts a fresh worker, as after any death)."""
        deaths = self.deaths
        try:
            return self.call_student(op, **fields)
        except StudentError:
            self.deaths = deaths
            return None

    def call_reference(
        self, op: str, exercise: str | None = None, worker: WorkerProcess | None = None, **fields: Any
    ) -> dict[str, Any]:
        """One request to the reference's worker (or to `worker`, one of `own_worker`'s); any
        failure is the grader's, not the student's, and its message names `exercise` (else the
        request's function)."""
        name = f"{self.topic.name}.{exercise or fields.get('fn') or op}"
        if self.answers.mode == "replay":
            raise GraderError(f"the reference is not here to answer `{op}`: this run replays recorded expectations")
        try:
            reply = replies.check(op, (worker or self.ref).request(op, REFERENCE_TIMEOUT, **fields))
        except (WorkerDied, replies.MalformedReply) as exc:
            raise GraderError(f"the reference {name} failed `{op}`: {exc}") from None
        if not reply["ok"]:
            raise GraderError(f"the reference {name} failed `{op}`: {replies.format_error(reply['error'])}")
        return reply

    def __enter__(self) -> TopicSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

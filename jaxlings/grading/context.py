"""What a check sees of a grading run: `CheckContext`, one per exercise.

A check (`jaxlings.grading.checks`) never holds a worker process. It is given the exercise, this
run's cases and the reference's outputs on them, the draws (fresh inputs of its own), the
reference's answers (live, recorded or replayed: `answer` hides which), the two sides of the
run (`reference`, `student`: calls, timed calls, streams, what a call printed, each on the
grader's clock) and the trusted analysis of exported programs. Whatever one check hands a later
one is a declared field of `Findings`.

The topic's `jaxlings.grading.session.TopicSession` owns the processes and their restarts, budgets
and reply bounds; this module is the only way checks reach them.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from jaxlings.grading import structure
from jaxlings.grading.compare import mismatch
from jaxlings.grading.gate import ClockGate
from jaxlings.grading.replies import format_error
from jaxlings.grading.session import REFERENCE_TIMEOUT, GraderError, StudentError, compilations
from jaxlings.grading.spec import Case, Exercise
from jaxlings.grading.timing import CallFailed, Timed, committed_round, outputs, timed_call
from jaxlings.isolation import WorkerDied

if TYPE_CHECKING:
    from jaxlings.grading.device import Device
    from jaxlings.grading.session import TopicSession
    from jaxlings.isolation import WorkerProcess

__all__ = [
    "REFERENCE_TIMEOUT",
    "CallFailed",
    "CheckContext",
    "Findings",
    "GraderError",
    "KeyProbe",
    "Side",
    "StudentError",
    "Timed",
    "WorkerDied",
    "jit_first",
    "reference_call",
]

Output = dict[str, Any]
Facts = dict[str, Any]
T = TypeVar("T")


@dataclass(frozen=True)
class KeyProbe:
    """The first call under JAX's key-reuse checker that did not return: its message, and
    whether it is a reused key (a `KeyReuseError`)."""

    message: str
    reused: bool


@dataclass
class Findings:
    """What the checks of one exercise hand each other, as declared fields.

    `passed`: each check's verdict so far (the engine's: `requires` and `speed` read it).
    `traced`: the trusted facts of the student's and the reference's jitted function (`jit`'s,
    reused by `key_reuse`). `key_probe`: the calls under the key-reuse checker (`key_reuse`'s,
    made early by a failing `correct` to say why it fails); `probed` says they were made.
    `as_written`: the kinds of call that no longer try the grader's jit first
    (`CheckContext.student_output`).
    """

    passed: dict[str, bool] = field(default_factory=dict)
    traced: tuple[Facts, Facts] | None = None
    key_probe: KeyProbe | None = None
    probed: bool = False
    as_written: set[str] = field(default_factory=set)


class Side:
    """One side of the run, the reference's (trusted) or the student's: its calls, timed calls
    and streams, each timed on the grader's clock. Failures of the reference's are the
    grader's (`GraderError`); the student's raise `StudentError` with a message for them."""

    def __init__(
        self,
        session: TopicSession,
        student: bool,
        exercise: str,
        worker: WorkerProcess | None = None,
        *,
        on_device: bool = False,
    ) -> None:
        self._session, self.student, self.exercise = session, student, exercise
        self._own = worker  # a worker of this side's own (`CheckContext.own_sides`), else the topic's
        self._on_device = on_device  # the student's process on the device (`CheckContext.device_student`)

    def _worker(self) -> WorkerProcess:
        if self._own is not None:
            return self._own
        if self._on_device:
            return self._session.device_student()
        return self._session.student() if self.student else self._session.ref

    def call(self, op: str, **fields: Any) -> dict[str, Any]:
        """One request; its checked reply."""
        if self.student:
            worker = self._session.device_student() if self._on_device else self._own
            return self._session.call_student(op, worker=worker, **fields)
        return self._session.call_reference(op, exercise=self.exercise, worker=self._own, **fields)

    def ready(self) -> None:
        """This side's worker started, its module imported (the device's, for a side on it);
        a student's that will not: StudentError."""
        self._worker()

    def paused(self) -> contextlib.AbstractContextManager[bool]:
        """This side's worker frozen meanwhile (`WorkerProcess.paused`)."""
        return self._worker().paused()

    @property
    def own(self) -> bool:
        """Whether this side runs on a worker of its own (`CheckContext.own_sides`)."""
        return self._own is not None

    def lifetime_cpu(self) -> float | None:
        """The CPU time of everything this side's worker ran since it started (its module's
        import, whatever that started, threads that ended), read with it frozen; None where
        it has no cgroup, or where the worker is the topic's (shared by every check)."""
        return self._own.cpu_seconds(settled=True) if self._own is not None else None

    def attempt(self, op: str, **fields: Any) -> dict[str, Any] | None:
        """A student's call whose failure decides nothing: its reply, or None (see
        `TopicSession.attempt_student`)."""
        return self._session.attempt_student(op, **fields)

    def timed(
        self, fn: str, cases: list[Case], *, jit: bool, timeout: float, static_argnums: tuple[int, ...] = ()
    ) -> Timed:
        """`fn` on `cases`, inputs in to outputs held, on the grader's clock
        (`jaxlings.grading.timing.timed_call`); the reference's with the student's process frozen.
        Raises `WorkerDied` (the process went away or ran past `timeout`) or `CallFailed`."""
        with self.alone():
            return timed_call(self._worker(), fn, cases, jit=jit, static_argnums=static_argnums, timeout=timeout)

    def committed(
        self,
        fn: str,
        *,
        jit: bool,
        timeout: float,
        salt: int,
        static_argnums: tuple[int, ...] = (),
        cases: list[Case] | None = None,
        generate: dict[str, Any] | None = None,
    ) -> Timed:
        """One round on a device, timed to its outputs' digest (`jaxlings.grading.timing.committed_round`);
        the outputs stay in the worker (`fetched`). Raises `WorkerDied` or `CallFailed`."""
        with self.alone():
            return committed_round(
                self._worker(),
                fn,
                jit=jit,
                static_argnums=static_argnums,
                timeout=timeout,
                salt=salt,
                cases=cases,
                generate=generate,
            )

    def compilations(self) -> int | None:
        """How many compilations JAX reported in this side's worker so far (`session.compilations`),
        for an operator's log only; None where it does not say."""
        try:
            return compilations(self._worker())
        except StudentError:
            return None

    def keep(self) -> None:
        """Have the worker keep its last committed round's outputs (the best so far) for `fetched`."""
        self.call("keep")

    def fetched(self, timeout: float) -> list[Output]:
        """The outputs of this side's kept round, sent after its window."""
        return outputs(self._worker(), "fetch", timeout)["outs"]

    def round(self, timeout: float, **fields: Any) -> dict[str, Any]:
        """A round computed untimed (`op_round`): its outputs, and the digest of the inputs it
        made. The reference's failure here is the grader's."""
        try:
            return outputs(self._worker(), "round", timeout, **fields)
        except (WorkerDied, CallFailed) as exc:
            if self.student:
                raise
            raise GraderError(f"the reference {self._session.topic.name}.{self.exercise} failed: {exc}") from None

    def alone(self) -> contextlib.AbstractContextManager[bool | None]:
        """For the reference's timed work: the student's process frozen meanwhile (nothing it
        started competes for cores, caches or memory bandwidth). Nothing for the student's."""
        return contextlib.nullcontext() if self.student else self._session.student_paused()

    def step(self, fn: str, args: tuple[Any, ...]) -> tuple[dict[str, Any], float, str]:
        """One call of a prepared stream, its arguments sent with it, timed by the grader: (the
        reply, its seconds, "cpu" or "wall"). The window runs from sending the request to
        holding the reply, so the arguments' decoding and transfer to the device are inside it."""
        worker = self._worker()
        cpu0, t0 = worker.cpu_seconds(), time.perf_counter()
        reply = self.call("step", fn=fn, args=args)
        wall, cpu1 = time.perf_counter() - t0, worker.cpu_seconds()
        if cpu0 is None or cpu1 is None:
            return reply, wall, "wall"
        return reply, cpu1 - cpu0, "cpu"

    def printed_steps(self, setup: dict[str, Any], cases: list[Case]) -> Iterator[dict[str, Any]]:
        """Prepare a stream (`setup`: no arguments), then run it call by call, each call's
        arguments sent with it; yield each reply with what the call printed as its "printed",
        read from the process's stdout by the grader, between sending the call and holding
        its reply."""
        worker = self._worker()
        worker.capture_stdout()
        self.call("prepare", **setup)
        for case in cases:
            mark = worker.stdout_mark()
            reply = self.call("step", fn=setup["fn"], args=case.args)
            yield {**reply, "printed": worker.stdout_since(mark)}


class CheckContext:
    """One exercise of one grading run, as its checks see it (see the module docstring).

    `cases` and `expected` are this run's cases and the reference's outputs on them, which every
    check of the exercise judges alike; `findings` is what the checks hand each other."""

    def __init__(
        self,
        session: TopicSession,
        exercise: Exercise,
        cases: list[Case],
        expected: list[Output],
        gate: ClockGate | None = None,
    ) -> None:
        self._session, self._gate = session, gate or ClockGate()
        self.exercise, self.cases, self.expected = exercise, cases, expected
        self.findings = Findings()
        self.reference, self.student = (
            Side(session, student=False, exercise=exercise.name),
            Side(session, student=True, exercise=exercise.name),
        )
        self.device_student = Side(session, student=True, exercise=exercise.name, on_device=True)
        """The student's process on the device (`TopicSession.device_student`): in hidden
        grading, the one the timed rounds there run in; `student` is on the host's CPU."""

    @classmethod
    def start(cls, session: TopicSession, exercise: Exercise, gate: ClockGate | None = None) -> CheckContext:
        """An exercise's context: this run's cases drawn, and the reference's outputs on them.
        Where the student's worker runs on an accelerator (a public run there), the exercise's
        tolerances are at least the device's (`device.TOLERANCE`, and the exercise's own for
        that kind, `Exercise.accelerator_tolerance`): the student's outputs come from it, the
        reference's from the CPU (in hidden grading only the timed rounds run on the device,
        and `speed` compares them so: `CheckContext.on_device_tolerance`)."""
        if session.student_on_device:
            exercise = cls.on_device_tolerance(session, exercise)
        cases = session.draw(exercise.name, "cases", lambda rng: exercise.cases(rng, session.public))
        ctx = cls(session, exercise, cases, [], gate)
        ctx.expected = [ctx.reference_output(fn=exercise.name, args=c.args, **reference_call(exercise)) for c in cases]
        return ctx

    def gated(self, timed: bool) -> contextlib.AbstractContextManager[None]:
        """The clock gate of the topics graded side by side (`jaxlings.grading.gate`), for a check
        that takes it itself (`Check.gates_on_device`): alone for the work the clock times
        (`timed`), shared with every other topic's checks for the rest."""
        return self._gate.exclusive() if timed else self._gate.shared()

    def device_held(self) -> contextlib.AbstractContextManager[None]:
        """The student's process on the device held for this check's work alone (one request
        at a time: topics graded side by side take it in turn)."""
        return self._session.device_held(self.exercise.name)

    @staticmethod
    def on_device_tolerance(session: TopicSession, exercise: Exercise) -> Exercise:
        """`exercise` with its tolerances raised to the device's, where it is an accelerator."""
        device = session.device
        return exercise.on_accelerator(device.kind) if device is not None and device.accelerator else exercise

    def on_device(self) -> Exercise:
        """The exercise as outputs computed on this run's device are compared (`on_device_tolerance`)."""
        return self.on_device_tolerance(self._session, self.exercise)

    @contextlib.contextmanager
    def own_sides(self) -> Iterator[tuple[Side, Side]]:
        """(reference, student), each on a worker started for this piece of work alone
        (`TopicSession.own_worker`), closed after it: whatever the student's module does from
        its import on is counted to it (`Side.lifetime_cpu`). The two start side by side, the
        student's in this thread (a sandboxed worker dies with the thread that started it)."""
        with contextlib.ExitStack() as stack, ThreadPoolExecutor(1) as pool:
            ref_future = pool.submit(stack.enter_context, self._session.own_worker(student=False))
            try:
                student = stack.enter_context(self._session.own_worker(student=True))
            finally:
                reference = ref_future.result()
            yield (
                Side(self._session, student=False, exercise=self.exercise.name, worker=reference),
                Side(self._session, student=True, exercise=self.exercise.name, worker=student),
            )

    # -- the run -----------------------------------------------------------------------------

    @property
    def public(self) -> bool:
        """A public run (`grade check`): checks that need the grading machine are pending."""
        return self._session.public

    @property
    def backend(self) -> str:
        """The JAX backend the student's functions are timed on ("cpu", "tpu", "gpu"): the
        device's where the topic is graded on one, else the trusted worker's."""
        return self._session.backend

    @property
    def device(self) -> Device | None:
        """The accelerator (or the exclusive mode's CPU) the student's functions run on, or None:
        then every worker is on the CPU and the reference is timed beside the student."""
        return self._session.device

    @property
    def topic_name(self) -> str:
        return self._session.topic.name

    def time_left(self) -> float:
        """Seconds left of the topic's time budget."""
        return self._session.time_left()

    def draw(self, kind: str, make: Callable[[np.random.Generator], T]) -> T:
        """Fresh inputs of `kind` for this exercise (`TopicSession.draw`): a generator of their own."""
        return self._session.draw(self.exercise.name, kind, make)

    def answer(self, kind: str, request: Any, compute: Callable[[], T]) -> T:
        """What the reference gives for `request`: `compute()` live, or as recorded."""
        return self._session.answer(kind, request, compute)

    def error_text(self, error: dict[str, str]) -> str:
        """An exception the student's process reported, as one message for the student."""
        return format_error(error, f"{self.topic_name}.{self.exercise.name}")

    # -- outputs ---------------------------------------------------------------------------------

    def reference_output(self, **fields: Any) -> Output:
        """The reference's output for one `call` request (live or recorded)."""
        return self.answer("call", fields, lambda: self.reference.call("call", **fields)["out"])

    def student_output(
        self, kind: str, args: tuple[Any, ...], expected: Output, rtol: float, atol: float, **request: Any
    ) -> Output:
        """The student's output of one call (with `request`'s transforms), as written, or under
        the grader's `jax.jit` where that gives `expected`.

        Why: called as written, JAX compiles every operation it meets, once per shape, which is
        most of a hidden grading's time on a CPU; under `jax.jit` the call is one compilation
        (and the `jit` check's calls then find it compiled). So an exercise that asks for jit
        (it has a `jit` check) is first called under the grader's jit with its static arguments.
        When that call fails, takes its process down, or gives anything but `expected` (within
        `rtol`/`atol`), the function is called as written and that output is the one returned;
        from then on this exercise's calls of this `kind` ("correct", "grad", ...) go straight
        to as-written. A function that is right as written is therefore judged right, and a
        wrong one gets the message of its as-written call; one that is right only under jit
        (jit is how JAX code runs) is right too. Operator outputs are never jitted.
        StudentError propagates from the as-written call only.
        """
        ex = self.exercise
        if jit_first(ex) and kind not in self.findings.as_written:
            reply = self.student.attempt(
                "call", fn=ex.name, args=args, jit=True, static_argnums=ex.static_argnums, **request
            )
            if reply is not None and mismatch(expected, reply["out"], rtol, atol) is None:
                return reply["out"]
            self.findings.as_written.add(kind)
        return self.student.call("call", fn=ex.name, args=args, operators=ex.operator_outputs, **request)["out"]

    def compare_call(
        self, args: tuple[Any, ...], rtol: float, atol: float, names: tuple[str, ...] = (), **request: Any
    ) -> str | None:
        """One request on both sides with the same arguments; what differs, or None (a wrong
        leaf named with `names`). StudentError propagates; the reference's failure is a
        GraderError."""
        expected = self.reference_output(args=args, **request)
        got = self.student.call("call", args=args, **request)["out"]
        return mismatch(expected, got, rtol, atol, names)

    # -- trusted analysis of exported programs -------------------------------------------------

    def traced_facts(self, request: dict[str, Any], rtol: float, atol: float) -> tuple[Facts, Facts]:
        """Trusted facts of the student's and the reference's jitted call (`jaxlings.grading.structure`)."""
        return structure.traced_facts(self._session, request, rtol, atol)

    def program_layouts(
        self, fn: str, args: tuple[Any, ...], *, static_argnums: tuple[int, ...], rtol: float, atol: float
    ) -> tuple[Output, list[dict[str, Any]], list[dict[str, Any]]]:
        """The output layouts of the student's exported program, run on the trusted side
        (`jaxlings.grading.structure.program_layouts`)."""
        return structure.program_layouts(self._session, fn, args, static_argnums=static_argnums, rtol=rtol, atol=atol)


def jit_first(ex: Exercise) -> bool:
    """Whether `ex`'s outputs are asked for under the grader's `jax.jit` first: it has a `jit`
    check (it is meant to jit), and it returns no operators (never jitted)."""
    return ex.check("jit") is not None and not ex.operator_outputs


def reference_call(ex: Exercise) -> dict[str, Any]:
    """How the reference is called for its outputs: under the grader's `jax.jit` (with the
    exercise's static arguments) where the exercise asks for jit, else as written.

    The reference passes its own `jit` check (its jitted outputs are its outputs), and a jitted
    call is one compilation, or one load from the compilation cache, per shape, where an
    un-jitted one compiles or loads every operation it meets. Operators are never jitted.
    """
    if jit_first(ex):
        return {"jit": True, "static_argnums": ex.static_argnums}
    return {"operators": ex.operator_outputs}

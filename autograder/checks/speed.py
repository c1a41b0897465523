"""`speed`: time against the reference, measured in this run, interleaved, on fresh inputs.

One warm-up call each (compilation), then rounds (see `Speed` for how many); each round
draws a new workload of the exercise's speed size, times the reference (with the student's
worker frozen, so that nothing it started competes with it) and the student on it, alternating
who goes first, and verifies the student's timed output against the reference's.
A round is one request that carries the inputs and returns the outputs as arrays, both through
a shared-memory region of the worker's own, the inputs written there only once the clock runs;
the clock covers all of it (`autograder.timing`). The ratio is the student's best time over the
reference's best time: the minimum is the estimate least disturbed by other load. Past the
minimum number of rounds, they stop as soon as the ratio decides the band with room to spare
(`Speed.decided`). On the GPU
the clock is wall time (the device is the grader's alone); on a CPU it is the CPU time of the
worker's cgroup (every thread and process it ran, ended ones included), which waiting for a
busy core does not inflate, so the verdict does not hinge on how busy the machine is; without
cgroups, wall time. A student whose wall time is past the band's end still scores 0 (no idling
while work happens elsewhere). Points follow the exercise's band (`Speed.score`).
"""

from __future__ import annotations

from typing import Callable

from autograder.compare import mismatch
from autograder.results import Outcome
from autograder.sandbox import WorkerDied
from autograder.session import ExerciseRun, GraderError, StudentError, TopicSession
from autograder.spec import Speed
from autograder.timing import CallFailed, Timed, timed_call

WARMUP_TIMEOUT = 10.0
MIN_TIMEOUT = 5.0

SUMMARY = "as fast as the reference on a large workload: full points up to the band's start, none past its end."
"""What the check asks, in one line for students (notebooks, reports)."""


def describe(ex, ctx) -> str:
    """What the check asks of `ex`, for its docstring's Graded list (`autograder.course.graded`)."""
    speed = ex.speed
    how = ctx.jitted(speed.jit, note="as written if it fails `jit`" if "jit" in ex.checks else "")
    return (f"{how}, timed against the reference on {ctx.workload(speed)}: full points up to x{ctx.num(speed.full)} "
            f"the reference's time, none from x{ctx.num(speed.zero)}, log-linear between (on a CPU the clock is CPU "
            f"time, and a wall time past x{ctx.num(speed.zero)} scores 0 too).")


PUBLIC_ROUNDS = 5


def run(session: TopicSession, run: ExerciseRun) -> Outcome:
    if session.public:
        return own_time(session, run)
    ex, speed = run.exercise, run.exercise.speed
    backend = session.platform["backend"]
    size = speed.size_for(backend)
    jit = speed.jit and (run.passed.get("jit", False) or "jit" not in ex.checks)
    opts = {"static_argnums": ex.static_argnums}
    ref_times: list[Timed] = []
    stu_times: list[Timed] = []
    rep = 0
    while rep <= speed.min_reps or (rep <= speed.max_reps and sum(t.seconds for t in ref_times) < speed.budget):
        rep += 1
        cases = session.draw(ex.name, "speed", lambda rng: speed.stream(rng, size) if speed.stream
                             else [ex.sample(rng, size)])
        warm = rep == 1
        student_first = rep % 2 == 0 and bool(ref_times)
        if student_first:  # alternate who goes first: neither side always runs in the other's wake
            stu = _student_round(session, ex, cases, jit, opts, _limit(False, ref_times[-1], speed), size=size)
            if isinstance(stu, Outcome):
                return stu
        try:
            with session.student_paused():
                ref = timed_call(session.ref, ex.name, cases, jit=speed.jit, timeout=120.0, **opts)
        except (WorkerDied, CallFailed) as exc:
            raise GraderError(f"the reference {session.topic.name}.{ex.name} failed on the speed workload: {exc}") from None
        if not student_first:
            stu = _student_round(session, ex, cases, jit, opts, _limit(warm, ref, speed), size=size)
            if isinstance(stu, Outcome):
                return stu
        for expected, got in zip(ref.outs, stu.outs):
            if (problem := mismatch(expected, got, ex.rtol, ex.atol, ex.outputs)) is not None:
                return Outcome.fail(f"on the speed workload (size {size}) the timed output is wrong: {problem}")
        if not warm:  # the times only: a round's outputs are judged, then dropped (the grader's memory)
            ref_times.append(Timed(ref.seconds, ref.cpu_seconds, []))
            stu_times.append(Timed(stu.seconds, stu.cpu_seconds, []))
            if len(ref_times) >= speed.min_reps and speed.decided(*ratios(backend, ref_times, stu_times)):
                break
    return verdict(speed, ref_times, stu_times, size, backend)


def own_time(session: TopicSession, run: ExerciseRun) -> Outcome:
    """A public run: the speed check needs the reference timed on the grading machine, so it is
    judged on submission; the student sees their own time on the largest public case."""
    ex, speed = run.exercise, run.exercise.speed
    case = run.cases[-1]
    jit = speed.jit and (run.passed.get("jit", False) or "jit" not in ex.checks)
    times = []
    for _ in range(PUBLIC_ROUNDS + 1):
        stu = _student_round(session, ex, [case], jit, {"static_argnums": ex.static_argnums}, 60.0, workload=case.label)
        if isinstance(stu, Outcome):
            return stu
        times.append(stu.seconds)
    best = min(times[1:])
    return Outcome.pending(f"{best * 1e3:.3g} ms per call on this machine ({case.label}, wall time, best of "
                           f"{PUBLIC_ROUNDS}); the grader times it against the reference on a larger workload on the "
                           f"grading machine: full marks up to x{speed.full:g} the reference's time, none from "
                           f"x{speed.zero:g}", student_ms=round(best * 1e3, 4))


def _limit(warm: bool, ref: Timed, speed: Speed) -> float:
    """How long the student's round may take: generous for the warm-up (it compiles)."""
    return max(WARMUP_TIMEOUT, 20 * ref.seconds) if warm else max(MIN_TIMEOUT, 4 * speed.zero * ref.seconds)


def _student_round(session: TopicSession, ex, cases: list, jit: bool, opts: dict, limit: float, *,
                   size: int | None = None, workload: str | None = None) -> Timed | Outcome:
    """The student's timed round, or the failing Outcome when it did not complete; the speed
    workload of `size`, or the public case called `workload`."""
    try:
        return timed_call(session.student(), ex.name, cases, jit=jit, timeout=limit, **opts)
    except (WorkerDied, StudentError, CallFailed) as exc:
        what = workload or f"the speed workload (size {size})"
        return Outcome.fail(f"the timed call on {what} did not finish well within {limit:.0f} s: {exc}",
                            **({} if size is None else {"size": size}))


def clock_for(backend: str, times: list[Timed]) -> tuple[str, Callable[[Timed], float]]:
    """The clock that judges `times`, and how to read it: the CPU time of the worker's cgroup
    on a CPU backend (when every measurement has one), wall time otherwise."""
    if backend == "cpu" and all(t.cpu_seconds is not None for t in times):
        return "cpu", lambda t: t.cpu_seconds
    return "wall", lambda t: t.seconds


def ratios(backend: str, ref_times: list[Timed], stu_times: list[Timed]) -> tuple[float, float]:
    """The best-time ratio on the backend's clock, and the best-wall-time ratio."""
    _, pick = clock_for(backend, ref_times + stu_times)
    wall = min(t.seconds for t in stu_times) / min(t.seconds for t in ref_times)
    return min(map(pick, stu_times)) / min(map(pick, ref_times)), wall


def verdict(speed: Speed, ref_times: list[Timed], stu_times: list[Timed], size: int, backend: str) -> Outcome:
    """Band the best-time ratio on the backend's clock, with the guard against idling."""
    clock, pick = clock_for(backend, ref_times + stu_times)
    t_ref, t_stu = min(map(pick, ref_times)), min(map(pick, stu_times))
    ratio, wall_ratio = ratios(backend, ref_times, stu_times)
    data = {
        "ratio": round(ratio, 3), "clock": clock, "reference_ms": round(t_ref * 1e3, 4), "student_ms": round(t_stu * 1e3, 4),
        "wall_ratio": round(wall_ratio, 3), "size": size, "backend": backend, "reps": len(ref_times),
    }
    if wall_ratio >= speed.zero:
        return Outcome.fail(f"the timed call took x{wall_ratio:.1f} the reference's wall time (none from x{speed.zero:g})", **data)
    text = (f"{t_stu * 1e3:.3g} ms vs reference {t_ref * 1e3:.3g} ms ({clock} time on {backend}, inputs in to outputs "
            f"out; x{ratio:.2f}; full marks up to x{speed.full:g}, none from x{speed.zero:g})")
    return Outcome(round(speed.score(ratio), 3), text, data)

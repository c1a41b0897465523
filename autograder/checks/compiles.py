"""`compiles`: a stream of calls (`Stream.make`) gives the reference's outputs and compiles at
most `Stream.max_compiles` times: static arguments, padding to buckets and caching done right.

Two counts, one verdict. Each side's worker jits (or takes) the function once, puts every
call's arguments on the device and clears JAX's caches (`prepare`); the grader then sends the
calls one by one (`step`) and times each on its own clock (CPU time of the worker's cgroup;
wall time without one).
- The student's process reports the compilations each call caused (JAX's events): it names the
  problem, but a module can switch those events off, so this count is advisory.
- The trusted count is read off the grader's clock: a call that compiles costs tens of
  milliseconds where a call that reuses a compilation costs a fraction of one. Every call of
  the student's stream that took longer than `drop` (below) runs a second time, in order,
  after the stream, on its arguments put on the device anew (`restage`: a call may donate
  them): a right function compiles nothing then, so the replay's time is what the call
  itself costs. A call counts as a compilation when its first run took more
  than its replay by over `drop` (a compilation the replay did not repeat), or when its replay
  alone took over `steady` (a call that compiles every time). Both come from the reference's own calls,
  whose compilations it reports truthfully (measured here: compiling calls 35-40 ms, cached
  ones 0.1-0.3 ms, stray pauses up to ~3 ms): `drop` is the geometric mean of its cached
  calls' median and its cheapest compiling call, and at least a quarter of that call; `steady`
  is half that call, and at least `drop`. So a call that does far more work than the
  reference's, but the same work each time, is not taken for a compilation until the work
  alone costs half of one; and whatever the replay does, a first run of `drop + steady` or more
  (three quarters of a compilation) counts (`counted`). One (or a quarter of the allowance)
  is forgiven to this count, for a collection pause or a stray page fault.
Either count past the allowance fails the check.
"""

from __future__ import annotations

import statistics
import time
from typing import Callable

from autograder.compare import mismatch, shapes
from autograder.results import Outcome
from autograder.sandbox import Worker
from autograder.session import ExerciseRun, StudentError, TopicSession
from autograder.spec import Stream

SUMMARY = "a stream of calls gives the right outputs with no more compilations than allowed."
"""What the check asks, in one line for students (notebooks, reports)."""


def describe(ex, ctx) -> str:
    """What the check asks of `ex`, for its docstring's Graded list (`autograder.course.graded`)."""
    opts: Stream = ex.options["compiles"]
    forgiven = max(1, opts.max_compiles // 4)
    return (f"a stream of {opts.calls} calls, {ctx.jitted(opts.jit, stream=True)}, gives the reference's outputs "
            f"and compiles at most {opts.max_compiles} time{'s' if opts.max_compiles != 1 else ''} (counted by JAX's "
            f"compilation events and by the grader's clock: each slow call runs again after the stream, and a "
            f"call whose first run takes a compilation's time more than its replay, or whose replay alone takes "
            f"half a compilation's, counts as one; {forgiven} such call{'s' if forgiven != 1 else ''} forgiven).")

FALLBACK_THRESHOLD = 0.005  # seconds, where the reference gives no cached or no compiling call


def timed_calls(call: Callable[..., dict], worker: Worker, fn: str, indices: list[int]) -> dict:
    """Run the prepared stream's calls `indices` one by one, each timed by the grader:
    {"outs", "counts" (as the worker reports them), "seconds" (per call), "clock"}."""
    outs, counts, seconds, clocks = [], [], [], set()
    for i in indices:
        cpu0, t0 = worker.cpu_seconds(), time.perf_counter()
        reply = call("step", fn=fn, index=i)
        wall, cpu1 = time.perf_counter() - t0, worker.cpu_seconds()
        outs.append(reply["out"])
        counts.append(reply["counts"])
        if cpu0 is None or cpu1 is None:
            seconds.append(wall)
            clocks.add("wall")
        else:
            seconds.append(cpu1 - cpu0)
            clocks.add("cpu")
    return {"outs": outs, "counts": counts, "seconds": seconds, "clock": "wall" if "wall" in clocks else "cpu"}


def timed_steps(call: Callable[..., dict], worker: Worker, request: dict, calls: int) -> dict:
    """Prepare a stream on one side and run every call once, in order (`timed_calls`)."""
    call("prepare", **request)
    return timed_calls(call, worker, request["fn"], list(range(calls)))


def split(ref: dict) -> tuple[list[float], list[float]]:
    """The seconds of the reference's calls that compiled, and of those that did not."""
    compiling = [t for t, (c, _) in zip(ref["seconds"], ref["counts"]) if c > 0]
    cached = [t for t, (c, _) in zip(ref["seconds"], ref["counts"]) if c == 0]
    return compiling, cached


def thresholds(ref: dict) -> tuple[float, float]:
    """(`drop`, `steady`): how much longer than its replay a call's first run must take, and
    how long a replay alone, to count as a compilation; from the reference's calls."""
    compiling, cached = split(ref)
    if not compiling or not cached:
        return FALLBACK_THRESHOLD, 2 * FALLBACK_THRESHOLD
    drop = max((statistics.median(cached) * min(compiling)) ** 0.5, min(compiling) / 4)
    return drop, max(drop, min(compiling) / 2)


def counted(first: list[float], replay: dict[int, float], drop: float, steady: float) -> list[int]:
    """The calls (0-based) the grader's clock takes for compilations: a first run longer than
    the call's replay by over `drop`, or a replay over `steady`. Only calls whose first run
    took over `drop` need a replay (`replay` maps their index to its time); the others cannot
    count. A replay made slow on purpose cannot hide a first run of `drop + steady` or more:
    one of the two must exceed its bound."""
    return [i for i, t1 in enumerate(first) if t1 > drop and (t1 - replay[i] > drop or replay[i] > steady)]


def run(session: TopicSession, run: ExerciseRun) -> Outcome:
    ex = run.exercise
    opts: Stream = ex.options["compiles"]
    cases = session.draw(ex.name, "compiles", lambda rng: opts.make(rng, opts.calls))
    request = {"fn": ex.name, "cases": [c.args for c in cases], "jit": opts.jit, "static_argnums": ex.static_argnums}

    def reference_steps() -> dict:
        with session.student_paused():
            return timed_steps(session.call_reference, session.ref, request, len(cases))

    ref = session.answer("steps", request, reference_steps)
    drop, steady = thresholds(ref)
    student = session.student()
    try:
        got = timed_steps(session.call_student, student, request, len(cases))
        slow = [i for i, t in enumerate(got["seconds"]) if t > drop]
        session.call_student("restage", fn=ex.name, indices=slow)
        again = timed_calls(session.call_student, student, ex.name, slow)
    except StudentError as exc:
        return Outcome.fail(f"a stream of {len(cases)} calls: {exc}")
    outputs = [(i, out, "") for i, out in enumerate(got["outs"])]
    outputs += [(i, out, "replayed ") for i, out in zip(slow, again["outs"])]
    for i, out, replayed in outputs:
        if (problem := mismatch(ref["outs"][i], out, ex.rtol, ex.atol, ex.outputs)) is not None:
            return Outcome.fail(f"{replayed}call {i + 1} of the stream {shapes(cases[i].args)}: {problem}")
    replay = dict(zip(slow, again["seconds"]))
    compiling = counted(got["seconds"], replay, drop, steady)
    reported = sum(c for c, _ in got["counts"])
    forgiven = max(1, opts.max_compiles // 4)
    cached = split(ref)[1]
    clock = "wall" if "wall" in (got["clock"], again["clock"]) else "cpu"
    data = {"calls": len(cases), "compiles": len(compiling), "max_compiles": opts.max_compiles,
            "reference_compiles": sum(c for c, _ in ref["counts"]), "threshold_ms": round(drop * 1e3, 3),
            "steady_threshold_ms": round(steady * 1e3, 3), "clock": clock,
            "seconds": round(sum(got["seconds"]), 4), "reference_seconds": round(sum(ref["seconds"]), 4),
            "compiling_calls": [i + 1 for i in compiling],
            "reference_compiling_calls": [i + 1 for i, (c, _) in enumerate(ref["counts"]) if c > 0],
            "call_ms": [round(t * 1e3, 3) for t in got["seconds"]],
            "replay_ms": [round(replay[i] * 1e3, 3) if i in replay else None for i in range(len(cases))],
            "advisory": {"compiles": reported, "traces": sum(t for _, t in got["counts"]),
                         "replay_compiles": sum(c for c, _ in again["counts"])}}
    if reported > opts.max_compiles:
        return Outcome.fail(f"{len(cases)} calls compiled {reported} times; at most {opts.max_compiles} allowed", **data)
    if len(compiling) > opts.max_compiles + forgiven:
        typical = f"; the reference's cached calls take {statistics.median(cached) * 1e3:.2f} ms" if cached else ""
        return Outcome.fail(f"{len(compiling)} of the {len(cases)} calls took as long as a compilation (a first run "
                            f"over its replay by more than {drop * 1e3:.1f} ms of {clock} time, or a replay over "
                            f"{steady * 1e3:.1f} ms{typical}); at most {opts.max_compiles} compilations are allowed, "
                            "whether or not JAX's events count them", **data)
    return Outcome.ok(f"{len(cases)} calls, {reported} compilations (at most {opts.max_compiles}); "
                      f"{len(compiling)} calls took a compilation's time", **data)

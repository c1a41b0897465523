"""`compiles`: a stream of calls (`Stream.make`) gives the reference's outputs and compiles at
most `Stream.max_compiles` times: static arguments, padding to buckets and caching done right.

Two counts, one verdict. Each side's worker jits (or takes) the function once, puts every
call's arguments on the device and clears JAX's caches (`prepare`); the grader then sends the
calls one by one (`step`) and times each on its own clock (CPU time of the worker's cgroup;
wall time without one).
- The student's process reports the compilations each call caused (JAX's events): it names the
  problem, but a module can switch those events off, so this count is advisory.
- The trusted count is read off the grader's clock: a call that compiles costs tens of
  milliseconds where a call that reuses a compilation costs a fraction of one. The threshold
  sits between the two, from the reference's own calls (whose compilations the reference
  reports truthfully): the geometric mean of its cached calls' median and its cheapest
  compiling call, and at least a quarter of that compiling call (measured here: compiling
  calls 35-40 ms, cached ones 0.1-0.3 ms, stray pauses up to ~3 ms). The student's calls above
  it count as compilations. One (or a quarter of
  the allowance) is forgiven to this count, for a collection pause or a stray page fault.
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
            f"compilation events and by the grader's clock: a call as slow as a compilation counts as one, "
            f"{forgiven} such call{'s' if forgiven != 1 else ''} forgiven).")

FALLBACK_THRESHOLD = 0.005  # seconds, where the reference gives no cached or no compiling call


def timed_steps(call: Callable[..., dict], worker: Worker, request: dict, calls: int) -> dict:
    """Prepare a stream on one side and run it call by call, each timed by the grader:
    {"outs", "counts" (as the worker reports them), "seconds" (per call), "clock"}."""
    call("prepare", **request)
    outs, counts, seconds, clocks = [], [], [], set()
    for i in range(calls):
        cpu0, t0 = worker.cpu_seconds(), time.perf_counter()
        reply = call("step", fn=request["fn"], index=i)
        wall, cpu1 = time.perf_counter() - t0, worker.cpu_seconds()
        outs.append(reply["out"])
        counts.append(reply["counts"])
        if cpu0 is None or cpu1 is None:
            seconds.append(wall)
            clocks.add("wall")
        else:
            seconds.append(cpu1 - cpu0)
            clocks.add("cpu")
    return {"outs": outs, "counts": counts, "seconds": seconds, "clock": "cpu" if clocks == {"cpu"} else "wall"}


def threshold(ref: dict) -> float:
    """The time that tells a compiling call from a cached one, from the reference's calls."""
    compiling = [t for t, (c, _) in zip(ref["seconds"], ref["counts"]) if c > 0]
    cached = [t for t, (c, _) in zip(ref["seconds"], ref["counts"]) if c == 0]
    if not compiling or not cached:
        return FALLBACK_THRESHOLD
    return max((statistics.median(cached) * min(compiling)) ** 0.5, min(compiling) / 4)


def run(session: TopicSession, run: ExerciseRun) -> Outcome:
    ex = run.exercise
    opts: Stream = ex.options["compiles"]
    cases = session.draw(ex.name, "compiles", lambda rng: opts.make(rng, opts.calls))
    request = {"fn": ex.name, "cases": [c.args for c in cases], "jit": opts.jit, "static_argnums": ex.static_argnums}

    def reference_steps() -> dict:
        with session.student_paused():
            return timed_steps(session.call_reference, session.ref, request, len(cases))

    ref = session.answer("steps", request, reference_steps)
    try:
        got = timed_steps(session.call_student, session.student(), request, len(cases))
    except StudentError as exc:
        return Outcome.fail(f"a stream of {len(cases)} calls: {exc}")
    for i, (case, expected, out) in enumerate(zip(cases, ref["outs"], got["outs"])):
        if (problem := mismatch(expected, out, ex.rtol, ex.atol, ex.outputs)) is not None:
            return Outcome.fail(f"call {i + 1} of the stream {shapes(case.args)}: {problem}")
    limit = threshold(ref)
    reported = sum(c for c, _ in got["counts"])
    measured = sum(1 for t in got["seconds"] if t > limit)
    forgiven = max(1, opts.max_compiles // 4)
    cached = [t for t, (c, _) in zip(ref["seconds"], ref["counts"]) if c == 0]
    data = {"calls": len(cases), "compiles": measured, "max_compiles": opts.max_compiles,
            "reference_compiles": sum(c for c, _ in ref["counts"]), "threshold_ms": round(limit * 1e3, 3),
            "clock": got["clock"], "seconds": round(sum(got["seconds"]), 4),
            "reference_seconds": round(sum(ref["seconds"]), 4),
            "compiling_calls": [i + 1 for i, t in enumerate(got["seconds"]) if t > limit],
            "reference_compiling_calls": [i + 1 for i, (c, _) in enumerate(ref["counts"]) if c > 0],
            "call_ms": [round(t * 1e3, 3) for t in got["seconds"]],
            "advisory": {"compiles": reported, "traces": sum(t for _, t in got["counts"])}}
    if reported > opts.max_compiles:
        return Outcome.fail(f"{len(cases)} calls compiled {reported} times; at most {opts.max_compiles} allowed", **data)
    if measured > opts.max_compiles + forgiven:
        typical = f"; the reference's cached calls take {statistics.median(cached) * 1e3:.2f} ms" if cached else ""
        return Outcome.fail(f"{measured} of the {len(cases)} calls took as long as a compilation (over "
                            f"{limit * 1e3:.1f} ms of {got['clock']} time each{typical}); at most {opts.max_compiles} "
                            "compilations are allowed, whether or not JAX's events count them", **data)
    return Outcome.ok(f"{len(cases)} calls, {reported} compilations (at most {opts.max_compiles}); "
                      f"{measured} calls took a compilation's time", **data)

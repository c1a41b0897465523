"""`compiles`: a stream of calls (`Stream.make`) gives the reference's outputs and compiles at
most `Stream.max_compiles` times: static arguments, padding to buckets and caching done right.

Two measures, one verdict. The count comes from JAX's compilation events in the student's own
process: it names the problem ("24 calls compiled 24 times") but a module could switch the
events off, so it is advisory. The trusted measure is the cost: every compilation is work done
inside the worker's cgroup, so the grader's clock over the whole stream (CPU time on a CPU,
else wall time) must stay within `Stream.cost_factor` of the reference's stream (plus
`Stream.cost_slack` seconds). A module that hides its compilations still pays for them.
"""

from __future__ import annotations

from autograder.compare import mismatch, shapes
from autograder.results import Outcome
from autograder.sandbox import WorkerDied
from autograder.session import REFERENCE_TIMEOUT, ExerciseRun, GraderError, TopicSession, format_error
from autograder.spec import Stream
from autograder.timing import CallFailed, timed_request

SUMMARY = "a stream of calls gives the right outputs with no more compilations (and no more compile time) than allowed."
"""What the check asks, in one line for students (notebooks, reports)."""


def run(session: TopicSession, run: ExerciseRun) -> Outcome:
    ex = run.exercise
    opts: Stream = ex.options["compiles"]
    cases = opts.make(session.rng, opts.calls)
    request = {"fn": ex.name, "cases": [c.args for c in cases], "jit": opts.jit, "static_argnums": ex.static_argnums,
               "stage": opts.stage}
    try:
        with session.student_paused():
            ref, ref_wall, ref_cpu = timed_request(session.ref, "stream", REFERENCE_TIMEOUT, **request)
    except (WorkerDied, CallFailed) as exc:
        raise GraderError(f"the reference {session.topic.name}.{ex.name} failed on its stream: {exc}") from None
    try:
        got, wall, cpu = timed_request(session.student(), "stream",
                                       min(session.limits.call_timeout, max(1.0, session.time_left())), **request)
    except CallFailed as exc:
        reason = format_error(exc.error, f"{session.topic.name}.{ex.name}") if exc.error else str(exc)
        return Outcome.fail(f"a stream of {len(cases)} calls: {reason}")
    except WorkerDied as exc:
        return Outcome.fail(f"a stream of {len(cases)} calls: {exc}")
    if len(got["outs"]) != len(cases):
        return Outcome.fail(f"a stream of {len(cases)} calls: the reply holds {len(got['outs'])} outputs")
    for i, (case, expected, out) in enumerate(zip(cases, ref["outs"], got["outs"])):
        if (problem := mismatch(expected, out, ex.rtol, ex.atol)) is not None:
            return Outcome.fail(f"call {i + 1} of the stream {shapes(case.args)}: {problem}")
    clock, mine, theirs = ("cpu", cpu, ref_cpu) if cpu is not None and ref_cpu is not None else ("wall", wall, ref_wall)
    compiles = sum(c for c, _ in got["counts"])
    data = {"calls": len(cases), "compiles": compiles, "traces": sum(t for _, t in got["counts"]),
            "reference_compiles": sum(c for c, _ in ref["counts"]), "max_compiles": opts.max_compiles,
            "clock": clock, "seconds": round(mine, 4), "reference_seconds": round(theirs, 4),
            "cost_ratio": round(mine / theirs, 3) if theirs > 0 else None}
    if compiles > opts.max_compiles:
        return Outcome.fail(f"{len(cases)} calls compiled {compiles} times; at most {opts.max_compiles} allowed", **data)
    if mine > opts.cost_factor * theirs + opts.cost_slack:
        return Outcome.fail(f"{len(cases)} calls took {mine:.2f} s of {clock} time, the reference's {theirs:.2f} s (at most "
                            f"x{opts.cost_factor:g} + {opts.cost_slack:g} s): every compilation costs time, whether or not "
                            "it is counted", **data)
    return Outcome.ok(f"{len(cases)} calls, {compiles} compilations (at most {opts.max_compiles}), "
                      f"{mine:.2f} s of {clock} time (the reference's {theirs:.2f} s)", **data)

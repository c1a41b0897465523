"""`compiles`: a stream of calls (`Stream.make`) gives the reference's outputs and compiles at
most `Stream.max_compiles` times (counted from JAX's compilation events): static arguments,
padding to buckets and caching done right."""

from __future__ import annotations

from autograder.compare import mismatch, shapes
from autograder.results import Outcome
from autograder.session import ExerciseRun, StudentError, TopicSession
from autograder.spec import Stream

SUMMARY = "a stream of calls gives the right outputs with no more compilations than allowed."
"""What the check asks, in one line for students (notebooks, reports)."""


def run(session: TopicSession, run: ExerciseRun) -> Outcome:
    ex = run.exercise
    opts: Stream = ex.options["compiles"]
    cases = opts.make(session.rng, opts.calls)
    request = {"fn": ex.name, "cases": [c.args for c in cases], "jit": opts.jit, "static_argnums": ex.static_argnums,
               "stage": opts.stage}
    ref = session.call_reference("stream", **request)
    try:
        got = session.call_student("stream", **request)
    except StudentError as exc:
        return Outcome.fail(f"a stream of {len(cases)} calls: {exc}")
    for i, (case, expected, out) in enumerate(zip(cases, ref["outs"], got["outs"])):
        if (problem := mismatch(expected, out, ex.rtol, ex.atol)) is not None:
            return Outcome.fail(f"call {i + 1} of the stream {shapes(case.args)}: {problem}")
    compiles = sum(c for c, _ in got["counts"])
    data = {"calls": len(cases), "compiles": compiles, "traces": sum(t for _, t in got["counts"]),
            "reference_compiles": sum(c for c, _ in ref["counts"]), "max_compiles": opts.max_compiles}
    if compiles > opts.max_compiles:
        return Outcome.fail(f"{len(cases)} calls compiled {compiles} times; at most {opts.max_compiles} allowed", **data)
    return Outcome.ok(f"{len(cases)} calls, {compiles} compilations (at most {opts.max_compiles})", **data)

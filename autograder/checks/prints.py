"""`prints`: call by call, a once-jitted function prints what the reference prints.

A Python `print` inside a jitted function runs while JAX traces it: on the first call with each
new input shape (or dtype), and never on the calls that reuse the compiled program. The worker
jits the function once, clears JAX's caches, and stages a stream of inputs (`Prints.make`,
request `prepare`); the grader then sends the calls one by one (`step`) and reads what each
printed from the worker's stdout pipe itself, between sending the call and holding its reply
(`Worker.stdout_mark`/`stdout_since`): nothing the student's process says about its printing is
taken. The expected lines are the reference's on the same stream, so a topic prescribes them
in its docstring only (a reference that prints on calls that do not trace prints at run
time, with `jax.debug.print`, and the messages say so). Outputs are verified too; compile and trace counts are reported
(advisory), not judged.
"""

from __future__ import annotations

from typing import Callable

from autograder.compare import mismatch, shapes
from autograder.results import Outcome
from autograder.sandbox import Worker
from autograder.session import ExerciseRun, StudentError, TopicSession
from autograder.spec import Case, Prints

SUMMARY = "a jitted call prints what the reference prints, call by call."
"""What the check asks, in one line for students (notebooks, reports)."""


def describe(ex, ctx) -> str:
    """What the check asks of `ex`, for its docstring's Graded list (`autograder.course.graded`)."""
    opts: Prints = ex.options["prints"]
    return (f"{ctx.jitted(True, stream=True)} and called on a stream of {opts.calls} inputs from cold caches, every "
            "call prints exactly what the reference prints on that call (read from your process's stdout).")


def printed_stream(call: Callable[..., dict], worker: Worker, request: dict, calls: int) -> dict:
    """Prepare a stream on one side, then run it call by call, reading what each call printed
    from the worker's stdout in the grader (`Worker.stdout_since`): {"outs", "counts", "printed"}."""
    worker.capture_stdout()
    call("prepare", **request)
    outs, counts, printed = [], [], []
    for i in range(calls):
        mark = worker.stdout_mark()
        reply = call("step", fn=request["fn"], index=i)
        printed.append(worker.stdout_since(mark))
        outs.append(reply["out"])
        counts.append(reply["counts"])
    return {"outs": outs, "counts": counts, "printed": printed}


def run(session: TopicSession, run: ExerciseRun) -> Outcome:
    ex = run.exercise
    opts: Prints = ex.options["prints"]
    cases = session.draw(ex.name, "prints", lambda rng: opts.make(rng, opts.calls))
    request = {"fn": ex.name, "cases": [c.args for c in cases], "jit": True, "static_argnums": ex.static_argnums}
    ref = session.answer("printed", request,
                         lambda: printed_stream(session.call_reference, session.ref, request, len(cases)))
    try:
        got = printed_stream(session.call_student, session.student(), request, len(cases))
    except StudentError as exc:
        return Outcome.fail(f"a stream of {len(cases)} jitted calls: {exc}")
    for i, (case, expected, out) in enumerate(zip(cases, ref["outs"], got["outs"])):
        if (problem := mismatch(expected, out, ex.rtol, ex.atol, ex.outputs)) is not None:
            return Outcome.fail(f"call {i + 1} of the jitted stream {shapes(case.args)}: {problem}")
    want, have = [_lines(t) for t in ref["printed"]], [_lines(t) for t in got["printed"]]
    data = {
        "calls": len(cases),
        "tracing_calls": sum(1 for w in want if w),
        "printing_calls": sum(1 for h in have if h),
        "lines": sum(map(len, have)),
        "reference_lines": sum(map(len, want)),
        "traces": sum(t for _, t in got["counts"]),
        "compiles": sum(c for c, _ in got["counts"]),
        "reference_traces": sum(t for _, t in ref["counts"]),
        "reference_compiles": sum(c for c, _ in ref["counts"]),
    }
    # The reference prints at run time (jax.debug.print) if it printed on a call that did not trace.
    run_time = any(w and traces == 0 for w, (_, traces) in zip(want, ref["counts"]))
    for i, (w, h) in enumerate(zip(want, have)):
        if w != h:
            return Outcome.fail(_explain_run_time(cases, i, w, h) if run_time else _explain(cases, i, w, h), **data)
    quiet = len(cases) - data["tracing_calls"]
    if run_time:
        return Outcome.ok(f"{len(cases)} jitted calls printed as the reference's: on the {data['tracing_calls']} calls "
                          f"where it prints at run time, and not on the other {quiet}", **data)
    return Outcome.ok(f"{len(cases)} jitted calls printed as the reference's: on the {data['tracing_calls']} calls "
                      f"that traced (one per new shape), and not on the {quiet} that reused a compilation", **data)


def _lines(text: str) -> list[str]:
    """The non-blank lines of one call's output, without trailing white space."""
    return [line.rstrip() for line in text.splitlines() if line.strip()]


def _explain(cases: list[Case], i: int, want: list[str], have: list[str]) -> str:
    """Why call `i` printed the wrong thing, in terms of when JAX traces."""
    where = f"call {i + 1} of {len(cases)} {shapes(cases[i].args)}"
    if not want:
        first = next((j for j in range(i) if shapes(cases[j].args) == shapes(cases[i].args)), None)
        same = f"has the shapes of call {first + 1}" if first is not None else "has shapes seen before"
        return (f"{where} {same}: JAX reuses the compiled function, so a print that runs while tracing "
                f"stays silent, yet it printed {_quote(have)}. Print with Python's `print` inside the "
                "function (jax.debug.print prints on every call), and do not make it re-trace")
    if not have:
        return (f"{where} is the first with these shapes, so JAX traced the function, but it printed nothing; "
                f"expected {_quote(want)} (Python's `print`, inside the function)")
    return f"{where} printed {_quote(have)}; expected {_quote(want)}"


def _explain_run_time(cases: list[Case], i: int, want: list[str], have: list[str]) -> str:
    """Why call `i` printed the wrong thing, where the reference prints at run time (on every
    call that asks for it, traced or not)."""
    where = f"call {i + 1} of {len(cases)} {shapes(cases[i].args)}"
    if not have:
        return (f"{where} printed nothing; expected {_quote(want)} on this call. A Python `print` runs only while JAX "
                "traces; `jax.debug.print` runs in the compiled program, on every call")
    if not want:
        return f"{where} printed {_quote(have)}, but should print nothing on this call"
    return f"{where} printed {_quote(have)}; expected {_quote(want)}"


def _quote(lines: list[str], limit: int = 160) -> str:
    """Printed lines as one short quoted string, with their count when there are several."""
    text = " | ".join(lines)
    quoted = repr(text if len(text) <= limit else text[:limit] + "...")
    return quoted + (f" ({len(lines)} lines)" if len(lines) > 1 else "")

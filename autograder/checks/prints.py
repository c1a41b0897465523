"""`prints`: call by call, a once-jitted function prints what the reference prints.

A Python `print` inside a jitted function runs while JAX traces it: on the first call with each
new input shape (or dtype), and never on the calls that reuse the compiled program. The worker
jits the function once and clears JAX's caches (request `prepare`, which carries no input);
the grader then sends the calls of a stream (`Prints.make`) one by one, each with its own
arguments (`step`), so the student's process learns an input only with the call that uses it,
and reads what each printed from the worker's stdout pipe itself, between sending the call and
holding its reply (`Worker.stdout_mark`/`stdout_since`): nothing the student's process says
about its printing is taken. The expected lines are the reference's on the same stream, so a
topic prescribes them in its docstring only (a reference that prints on calls that do not
trace prints at run time, with `jax.debug.print`, and the messages say so). Outputs are
verified too; compile and trace counts are reported (advisory), not judged.

Each student call is judged as it arrives, against the reference's stream (kept whole: it is
the grader's own), and dropped: what is kept is counts and the first wrong print's message, so
the grader holds one reply at a time whatever the student prints or returns. An output that
differs fails the check at once; a wrong print is remembered and the stream goes on, so that
a wrong output later in the stream is still the reason given (as when outputs were compared
first).
"""

from __future__ import annotations

from typing import Callable, Iterator

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


def printed_steps(call: Callable[..., dict], worker: Worker, setup: dict, cases: list[Case]) -> Iterator[dict]:
    """Prepare a stream on one side (`setup`: no arguments), then run it call by call, each
    call's arguments sent with it; yield each reply, with what the call printed (read from the
    worker's stdout in the grader, `Worker.stdout_since`) as its "printed"."""
    worker.capture_stdout()
    call("prepare", **setup)
    for case in cases:
        mark = worker.stdout_mark()
        reply = call("step", fn=setup["fn"], args=case.args)
        yield {**reply, "printed": worker.stdout_since(mark)}


def reference_stream(call: Callable[..., dict], worker: Worker, setup: dict, cases: list[Case]) -> dict:
    """The reference's stream, kept whole (every student call is compared with it as it
    arrives): {"outs", "counts", "printed"}."""
    steps = list(printed_steps(call, worker, setup, cases))
    fields = (("outs", "out"), ("counts", "counts"), ("printed", "printed"))
    return {key: [step[k] for step in steps] for key, k in fields}


def run(session: TopicSession, run: ExerciseRun) -> Outcome:
    ex = run.exercise
    opts: Prints = ex.options["prints"]
    cases = session.draw(ex.name, "prints", lambda rng: opts.make(rng, opts.calls))
    setup = {"fn": ex.name, "jit": True, "static_argnums": ex.static_argnums}
    ref = session.answer("printed", {**setup, "cases": [c.args for c in cases]},
                         lambda: reference_stream(session.call_reference, session.ref, setup, cases))
    want = [_lines(t) for t in ref["printed"]]
    # The reference prints at run time (jax.debug.print) if it printed on a call that did not trace.
    run_time = any(w and traces == 0 for w, (_, traces) in zip(want, ref["counts"]))
    explain = _explain_run_time if run_time else _explain
    data = {"calls": len(cases), "tracing_calls": sum(1 for w in want if w), "printing_calls": 0, "lines": 0,
            "reference_lines": sum(map(len, want)), "traces": 0, "compiles": 0,
            "reference_traces": sum(t for _, t in ref["counts"]),
            "reference_compiles": sum(c for c, _ in ref["counts"])}
    wrong_print = None  # the first call that printed wrong: an output mismatch later still takes precedence
    try:
        steps = printed_steps(session.call_student, session.student(), setup, cases)
        for i, (case, step) in enumerate(zip(cases, steps)):
            if (problem := mismatch(ref["outs"][i], step["out"], ex.rtol, ex.atol, ex.outputs)) is not None:
                return Outcome.fail(f"call {i + 1} of the jitted stream {shapes(case.args)}: {problem}")
            have = _lines(step["printed"])
            data["printing_calls"] += bool(have)
            data["lines"] += len(have)
            data["compiles"] += step["counts"][0]
            data["traces"] += step["counts"][1]
            if wrong_print is None and have != want[i]:
                wrong_print = explain(cases, i, want[i], have)
    except StudentError as exc:
        return Outcome.fail(f"a stream of {len(cases)} jitted calls: {exc}")
    if wrong_print is not None:
        return Outcome.fail(wrong_print, **data)
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

"""`prints`: call by call, a once-jitted function prints what the reference prints.

A Python `print` inside a jitted function runs while JAX traces it: on the first call with each
new input shape (or dtype), and never on the calls that reuse the compiled program. The worker
jits the function once and clears JAX's caches (request `prepare`, which carries no input);
the grader then sends the calls of a stream (`Prints.make`) one by one, each with its own
arguments (`step`), so the student's process learns an input only with the call that uses it,
and reads what each printed from the worker's stdout pipe itself, between sending the call and
holding its reply (`Side.printed_steps`): nothing the student's process says
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

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from jaxlings.grading.check import Check
from jaxlings.grading.compare import mismatch, shapes
from jaxlings.grading.context import CheckContext, Side, StudentError
from jaxlings.grading.results import Outcome
from jaxlings.grading.spec import Case, Exercise, StreamSampler

if TYPE_CHECKING:
    from jaxlings.grading.checks.vocabulary import Words


@dataclass(frozen=True, kw_only=True)
class Prints(Check):
    """`Prints(points, make=..., calls=12)`: a stream of calls, `make(rng, calls)`, to the
    function jitted once, from cold caches. What each call prints must be what the reference
    prints on the same call: a Python `print` runs while JAX traces, so once per new input shape."""

    make: StreamSampler = field(compare=False)
    calls: int = 12

    name = "prints"
    summary = "a jitted call prints what the reference prints, call by call."
    requires = ("correct",)
    after = ("jit",)

    def describe(self, ex: Exercise, words: Words) -> str:
        return (
            "make every call print exactly what the reference prints on that call (read from your process's "
            f"stdout): {words.jitted(True, stream=True)} and called on a stream of {self.calls} inputs from cold caches."
        )

    def run(self, ctx: CheckContext) -> Outcome:
        ex = ctx.exercise
        cases = ctx.draw("prints", lambda rng: self.make(rng, self.calls))
        setup = {"fn": ex.name, "jit": True, "static_argnums": ex.static_argnums}
        ref = ctx.answer(
            "printed",
            {**setup, "cases": [c.args for c in cases]},
            lambda: reference_stream(ctx.reference, setup, cases),
        )
        want = [_lines(t) for t in ref["printed"]]
        # The reference prints at run time (jax.debug.print) if it printed on a call that did not trace.
        run_time = any(w and traces == 0 for w, (_, traces) in zip(want, ref["counts"]))
        explain = _explain_run_time if run_time else _explain
        data: dict[str, Any] = {
            "calls": len(cases),
            "tracing_calls": sum(1 for w in want if w),
            "printing_calls": 0,
            "lines": 0,
            "reference_lines": sum(map(len, want)),
            "traces": 0,
            "compiles": 0,
            "reference_traces": sum(t for _, t in ref["counts"]),
            "reference_compiles": sum(c for c, _ in ref["counts"]),
        }
        wrong_print = None  # the first call that printed wrong: an output mismatch later still takes precedence
        try:
            for i, (case, step) in enumerate(zip(cases, ctx.student.printed_steps(setup, cases))):
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
            return Outcome.ok(
                f"{len(cases)} jitted calls printed as the reference's: on the {data['tracing_calls']} "
                f"calls where it prints at run time, and not on the other {quiet}",
                **data,
            )
        return Outcome.ok(
            f"{len(cases)} jitted calls printed as the reference's: on the {data['tracing_calls']} "
            f"calls that traced (one per new shape), and not on the {quiet} that reused a compilation",
            **data,
        )


def reference_stream(side: Side, setup: dict[str, Any], cases: list[Case]) -> dict[str, list[Any]]:
    """The reference's stream, kept whole (every student call is compared with it as it
    arrives): {"outs", "counts", "printed"}."""
    steps = list(side.printed_steps(setup, cases))
    fields = (("outs", "out"), ("counts", "counts"), ("printed", "printed"))
    return {key: [step[k] for step in steps] for key, k in fields}


def _lines(text: str) -> list[str]:
    """The non-blank lines of one call's output, without trailing white space."""
    return [line.rstrip() for line in text.splitlines() if line.strip()]


def _explain(cases: list[Case], i: int, want: list[str], have: list[str]) -> str:
    """Why call `i` printed the wrong thing, in terms of when JAX traces."""
    where = f"call {i + 1} of {len(cases)} {shapes(cases[i].args)}"
    if not want:
        first = next((j for j in range(i) if shapes(cases[j].args) == shapes(cases[i].args)), None)
        same = f"has the shapes of call {first + 1}" if first is not None else "has shapes seen before"
        return (
            f"{where} {same}: JAX reuses the compiled function, so a print that runs while tracing "
            f"stays silent, yet it printed {_quote(have)}. Print with Python's `print` inside the "
            "function (jax.debug.print prints on every call), and do not make it re-trace"
        )
    if not have:
        return (
            f"{where} is the first with these shapes, so JAX traced the function, but it printed nothing; "
            f"expected {_quote(want)} (Python's `print`, inside the function)"
        )
    return f"{where} printed {_quote(have)}; expected {_quote(want)}"


def _explain_run_time(cases: list[Case], i: int, want: list[str], have: list[str]) -> str:
    """Why call `i` printed the wrong thing, where the reference prints at run time (on every
    call that asks for it, traced or not)."""
    where = f"call {i + 1} of {len(cases)} {shapes(cases[i].args)}"
    if not have:
        return (
            f"{where} printed nothing; expected {_quote(want)} on this call. A Python `print` runs only while JAX "
            "traces; `jax.debug.print` runs in the compiled program, on every call"
        )
    if not want:
        return f"{where} printed {_quote(have)}, but should print nothing on this call"
    return f"{where} printed {_quote(have)}; expected {_quote(want)}"


def _quote(lines: list[str], limit: int = 160) -> str:
    """Printed lines as one short quoted string, with their count when there are several."""
    text = " | ".join(lines)
    quoted = repr(text if len(text) <= limit else text[:limit] + "...")
    return quoted + (f" ({len(lines)} lines)" if len(lines) > 1 else "")

"""`jit`: the function runs under `jax.jit` (with the exercise's static arguments), gives what
it gives without jit, and has the structure the exercise requires.

Jitted outputs are compared with the reference's, or, where the function is wrong, with the
student's own un-jitted outputs: jit-ability is judged apart from correctness, so a wrong
answer costs `correct` and a jit failure costs `jit`. Structure is read from facts the worker
counts (see `autograder.requirements`): no host callbacks, no re-tracing when called again
with fresh same-shaped inputs, and the exercise's own requirements.
"""

from __future__ import annotations

from autograder.compare import mismatch, shapes
from autograder.requirements import DEFAULT_JIT_REQUIREMENTS, judge_all
from autograder.results import Outcome
from autograder.session import ExerciseRun, StudentError, TopicSession


MEASURED = ("n_eqns", "n_eqns_other", "hlo_lines", "compiles_again", "traces_again", "flops", "compile_seconds",
            "collectives", "primitives")

SUMMARY = "runs under jax.jit, gives the same values, and has the required structure (no host callbacks, no re-tracing, ...)."
"""What the check asks, in one line for students (notebooks, reports)."""


def trace_facts(session: TopicSession, run: ExerciseRun) -> tuple[dict, dict]:
    """Facts of the student's and the reference's jitted function on the same inputs (cached).

    The two calls use samples of the exercise's largest size (where an unrolled loop shows
    most), the second keeping the first's static arguments so that only array values change;
    equation counts are also taken at the smallest size.
    """
    if run.facts is None:
        ex = run.exercise
        first, again = ex.sample(session.rng, ex.sizes[-1]).args, list(ex.sample(session.rng, ex.sizes[-1]).args)
        for i in ex.static_argnums:
            again[i] = first[i]
        request = {"fn": ex.name, "args": first, "args_again": tuple(again), "static_argnums": ex.static_argnums,
                   "args_other": ex.sample(session.rng, ex.sizes[0]).args}
        run.ref_facts = session.call_reference("trace", **request)["facts"]
        run.facts = session.call_student("trace", **request)["facts"]
    return run.facts, run.ref_facts


def run(session: TopicSession, run: ExerciseRun) -> Outcome:
    ex = run.exercise
    for i, (case, expected) in enumerate(zip(run.cases, run.expected)):
        where = f"under jax.jit, {case.label} {shapes(case.args)}"
        try:
            got = session.call_student("call", fn=ex.name, args=case.args, jit=True, static_argnums=ex.static_argnums)["out"]
        except StudentError as exc:
            return Outcome.fail(f"{where}: {exc}")
        problem = mismatch(expected, got, ex.rtol, ex.atol)
        if problem is not None and i in run.eager:
            own = mismatch(run.eager[i], got, ex.rtol, ex.atol)
            problem = None if own is None else f"the jitted output differs from the un-jitted one: {own}"
        if problem is not None:
            return Outcome.fail(f"{where}: {problem}")
    try:
        facts, ref = trace_facts(session, run)
    except StudentError as exc:
        return Outcome.fail(f"under jax.jit: {exc}")
    measured = {k: facts[k] for k in MEASURED if k in facts}
    measured.update({f"reference_{k}": ref[k] for k in MEASURED if k in ref})
    problems = judge_all(DEFAULT_JIT_REQUIREMENTS + ex.requirements, facts, ref)
    if problems:
        return Outcome.fail("; ".join(problems), **measured)
    return Outcome.ok(f"jits, {facts['n_eqns']} jaxpr equations, no host callbacks, no re-tracing", **measured)

"""`jit`: the function runs under `jax.jit` (with the exercise's static arguments), still
matches the reference, and has the structure the exercise requires.

Structure is read from facts the worker counts (see `autograder.requirements`): no host
callbacks, no re-tracing when called again with fresh same-shaped inputs, and the
exercise's own requirements (a primitive that must appear, a bound on jaxpr size, ...).
"""

from __future__ import annotations

from autograder.checks.correct import compare_cases
from autograder.requirements import DEFAULT_JIT_REQUIREMENTS, judge_all
from autograder.results import Outcome
from autograder.session import ExerciseRun, StudentError, TopicSession


def trace_facts(session: TopicSession, run: ExerciseRun) -> dict:
    """Jit, call twice on fresh same-shaped samples, and return the counted facts (cached)."""
    if run.facts is None:
        ex = run.exercise
        size = ex.sizes[len(ex.sizes) // 2]
        first, again = ex.sample(session.rng, size), ex.sample(session.rng, size)
        reply = session.call_student("trace", fn=ex.name, args=first.args, args_again=again.args,
                                     static_argnums=ex.static_argnums)
        run.facts = reply["facts"]
    return run.facts


def run(session: TopicSession, run: ExerciseRun) -> Outcome:
    ex = run.exercise
    outcome = compare_cases(session, run, jit=True, static_argnums=ex.static_argnums)
    if outcome.fraction < 1:
        return Outcome.fail(f"under jax.jit: {outcome.message}")
    try:
        facts = trace_facts(session, run)
    except StudentError as exc:
        return Outcome.fail(f"under jax.jit: {exc}")
    measured = {k: facts[k] for k in ("n_eqns", "compiles_first", "compiles_again", "traces_again", "hlo_lines")}
    problems = judge_all(DEFAULT_JIT_REQUIREMENTS + ex.requirements, facts)
    if problems:
        return Outcome.fail("; ".join(problems), **measured)
    return Outcome.ok(f"jits, matches, {facts['n_eqns']} jaxpr equations, no re-tracing", **measured)

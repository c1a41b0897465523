"""`key_reuse`: no PRNG key is consumed twice, and no key is smuggled through legacy uint32s.

The function runs under `jax.debug_key_reuse(True)`, as written and under `jax.jit`, on the
run's cases (the grader hands it typed keys, which the checker tracks). A function that
unwraps its key into raw uint32 data (`key_data` / `wrap_key_data`, legacy `PRNGKey` style)
hides reuse from the checker, so the jaxpr must not contain `random_unwrap`/`random_wrap`.
"""

from __future__ import annotations

from autograder.checks.jit import trace_facts
from autograder.compare import shapes
from autograder.requirements import AvoidsPrimitives
from autograder.results import Outcome
from autograder.session import ExerciseRun, StudentError, TopicSession

LEGACY_KEYS = AvoidsPrimitives(
    ("random_unwrap", "random_wrap"),
    "raw uint32 keys hide reuse from JAX's checker; keep keys typed and use split / fold_in",
)

SUMMARY = "never uses a PRNG key twice (checked with jax.debug_key_reuse), and keeps keys typed."
"""What the check asks, in one line for students (notebooks, reports)."""


def run(session: TopicSession, run: ExerciseRun) -> Outcome:
    ex = run.exercise
    for jit in (False, True):
        for case in run.cases:
            try:
                session.call_student("call", fn=ex.name, args=case.args, key_reuse=True, jit=jit,
                                     static_argnums=ex.static_argnums)
            except StudentError as exc:
                mode = "under jax.jit" if jit else "called directly"
                return Outcome.fail(f"{mode}, {case.label} {shapes(case.args)}: {exc}")
    try:
        facts, ref = trace_facts(session, run)
    except StudentError as exc:
        return Outcome.fail(f"could not trace the function: {exc}")
    if (problem := LEGACY_KEYS.judge(facts, ref)) is not None:
        return Outcome.fail(problem)
    return Outcome.ok("every key is used once")

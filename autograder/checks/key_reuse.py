"""`key_reuse` (ADVISORY: worth no points): no PRNG key is consumed twice, and no key is
smuggled through legacy uint32s.

The function runs under `jax.debug_key_reuse(True)`, called directly on the run's first case
and traced under `jax.jit` on every case (the grader hands it typed keys, which the checker
tracks): under jit the checker analyses the whole traced program, once per input shape, at
trace time, so those programs are traced and never compiled (`op_check_keys`); the direct call
catches code that consumes keys differently when not traced. (Calling every case directly, as
this check did, cost `prng` more time than all its scored checks: eager calls dispatch and
compile op by op.) Its jaxpr must not contain `random_unwrap`/`random_wrap` (raw uint32 keys
hide reuse from the checker). Both facts come from the student's own process, where a module
can switch the checker off or patch the tracer, so the check teaches but does not score: the
points of a PRNG exercise rest on `correct`, whose exact comparison with the reference's random
draws already fails a function that reuses a key (its numbers are not the reference's).

Reuse is the usual reason such a function is wrong, so this check is not one of those that wait
for `correct` (`NEEDS_CORRECT`): on a wrong function it still makes its calls and reports a reused
key (a `correct` that fails on values makes them first, through `probe`, and names the reuse in
its own message); a wrong function that reuses nothing is "not judged until the function is
correct", as before.
"""

from __future__ import annotations

from autograder.checks.jit import trace_facts
from autograder.compare import shapes
from autograder.results import Outcome
from autograder.session import ExerciseRun, StudentError, TopicSession

ADVISORY = True
"""Reported, never scored: topic specs give this check 0 points (checked when a topic loads)."""

LEGACY_KEY_PRIMITIVES = ("random_unwrap", "random_wrap")

SUMMARY = "advice, no points: never use a PRNG key twice (jax.debug_key_reuse), and keep keys typed."
"""What the check asks, in one line for students (notebooks, reports)."""


def describe(ex, ctx) -> str:
    """What the check asks of `ex`, for its docstring's Graded list (`autograder.course.graded`)."""
    return ("called directly and under `jax.jit` with `jax.debug_key_reuse(True)`, no key is used twice, and keys "
            f"stay typed (no {' or '.join(f'`{p}`' for p in LEGACY_KEY_PRIMITIVES)} in the jaxpr).")


def probe(session: TopicSession, run: ExerciseRun) -> tuple[str, bool] | None:
    """The calls under the checker: None when all of them returned, else the first failure's
    message and whether it is a reused key (a `KeyReuseError`). Made once per run (`run.notes`)."""
    if "key_reuse" not in run.notes:
        ex = run.exercise
        run.notes["key_reuse"] = None
        for jit, case in [(False, case) for case in run.cases[:1]] + [(True, case) for case in run.cases]:
            try:
                if jit:
                    session.call_student("check_keys", fn=ex.name, args=case.args, static_argnums=ex.static_argnums)
                else:
                    session.call_student("call", fn=ex.name, args=case.args, key_reuse=True)
            except StudentError as exc:
                mode = "under jax.jit" if jit else "called directly"
                run.notes["key_reuse"] = (f"{mode}, {case.label} {shapes(case.args)}: {exc}",
                                          str(exc).startswith("KeyReuseError"))
                break
    return run.notes["key_reuse"]


def reuse_note(session: TopicSession, run: ExerciseRun) -> str:
    """For `correct`'s message when the values are wrong: a sentence naming a reused key, or ""."""
    if "key_reuse" not in run.exercise.checks:
        return ""
    found = probe(session, run)
    if not found or not found[1]:
        return ""
    return (". A likely cause: a PRNG key is used twice, and a reused key repeats its random numbers (see this "
            "exercise's key_reuse check, and \"Never use a key twice\" in the lesson)")


def run(session: TopicSession, run: ExerciseRun) -> Outcome:
    correct = run.passed.get("correct", False)
    if found := probe(session, run):
        message, reused = found
        if reused and not correct:
            message = ("a PRNG key is used twice, which is why the values are not the reference's (a reused key repeats "
                       f"its random numbers): {message}")
        return Outcome.fail(message, advisory=True)
    if not correct:
        return Outcome.fail("not judged until the function is correct", advisory=True)
    try:
        facts, _ = trace_facts(session, run)
    except StudentError as exc:
        return Outcome.fail(f"could not trace the function: {exc}", advisory=True)
    primitives = facts.get("advisory", {}).get("primitives", {})
    if found := sorted(p for p in LEGACY_KEY_PRIMITIVES if primitives.get(p)):
        return Outcome.fail(f"the jaxpr uses {', '.join(found)}: raw uint32 keys hide reuse from JAX's checker; keep "
                            "keys typed and use split / fold_in", advisory=True)
    return Outcome.ok("every key is used once", advisory=True)

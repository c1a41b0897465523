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
for `correct` (it does not `require` it): on a wrong function it still makes its calls and reports a reused
key (a `correct` that fails on values makes them first, through `probe`, and names the reuse in
its own message); a wrong function that reuses nothing is "not judged until the function is
correct", as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from autograder.checks.base import Check
from autograder.checks.jit import trace_facts
from autograder.compare import shapes
from autograder.context import CheckContext, KeyProbe, StudentError
from autograder.results import Outcome
from autograder.spec import Exercise

if TYPE_CHECKING:
    from autograder.course.graded import Context as Words

LEGACY_KEY_PRIMITIVES = ("random_unwrap", "random_wrap")


@dataclass(frozen=True)
class KeyReuse(Check):
    """`KeyReuse()`: advice, no points (it is `advisory`: a topic that gives it points fails to load)."""

    points: float = 0

    name = "key_reuse"
    summary = "advice, no points: never use a PRNG key twice (jax.debug_key_reuse), and keep keys typed."
    after = ("correct", "jit")
    advisory = True
    cost = 2

    def describe(self, ex: Exercise, words: Words) -> str:
        return (
            "called directly and under `jax.jit` with `jax.debug_key_reuse(True)`, no key is used twice, and keys "
            f"stay typed (no {' or '.join(f'`{p}`' for p in LEGACY_KEY_PRIMITIVES)} in the jaxpr)."
        )

    def run(self, ctx: CheckContext) -> Outcome:
        correct = ctx.findings.passed.get("correct", False)
        if found := probe(ctx):
            message = found.message
            if found.reused and not correct:
                message = (
                    "a PRNG key is used twice, which is why the values are not the reference's (a reused key "
                    f"repeats its random numbers): {message}"
                )
            return Outcome.fail(message, advisory=True)
        if not correct:
            return Outcome.fail("not judged until the function is correct", advisory=True)
        try:
            facts, _ = trace_facts(ctx)
        except StudentError as exc:
            return Outcome.fail(f"could not trace the function: {exc}", advisory=True)
        primitives = facts.get("advisory", {}).get("primitives", {})
        if found_legacy := sorted(p for p in LEGACY_KEY_PRIMITIVES if primitives.get(p)):
            return Outcome.fail(
                f"the jaxpr uses {', '.join(found_legacy)}: raw uint32 keys hide reuse from JAX's "
                "checker; keep keys typed and use split / fold_in",
                advisory=True,
            )
        return Outcome.ok("every key is used once", advisory=True)


def probe(ctx: CheckContext) -> KeyProbe | None:
    """The calls under the checker: None when all of them returned, else the first failure
    (`KeyProbe`). Made once per exercise (`Findings.key_probe`)."""
    findings = ctx.findings
    if not findings.probed:
        ex = ctx.exercise
        findings.probed = True
        for jit, case in [(False, case) for case in ctx.cases[:1]] + [(True, case) for case in ctx.cases]:
            try:
                if jit:
                    ctx.student.call("check_keys", fn=ex.name, args=case.args, static_argnums=ex.static_argnums)
                else:
                    ctx.student.call("call", fn=ex.name, args=case.args, key_reuse=True)
            except StudentError as exc:
                mode = "under jax.jit" if jit else "called directly"
                findings.key_probe = KeyProbe(
                    f"{mode}, {case.label} {shapes(case.args)}: {exc}", str(exc).startswith("KeyReuseError")
                )
                break
    return findings.key_probe


def reuse_note(ctx: CheckContext) -> str:
    """For `correct`'s message when the values are wrong: a sentence naming a reused key, or ""."""
    if ctx.exercise.check("key_reuse") is None:
        return ""
    found = probe(ctx)
    if not found or not found.reused:
        return ""
    return (
        ". A likely cause: a PRNG key is used twice, and a reused key repeats its random numbers (see this "
        'exercise\'s key_reuse check, and "Never use a key twice" in the lesson)'
    )

"""`correct`: the function, called as the student wrote it, matches the reference on every case.

Where the exercise asks for jit, each call is first made under the grader's `jax.jit`, and made
as written when that fails or differs (`CheckContext.student_output`): the same verdicts for
every function that is right as written, at one compilation per shape instead of one per
operation. The cases are the exercise's edge cases and fresh random cases drawn for this run; the
expected outputs come from the reference worker. A failure names the case (by its label and
argument shapes) and what differs, never the expected values. The student's outputs are kept
(`Findings.outputs`) for the `jit` check. Where the values are wrong and the exercise has a
`key_reuse` check, the message says so when a key is used twice (`key_reuse.reuse_note`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from jaxlings.grading.check import Check
from jaxlings.grading.checks import key_reuse
from jaxlings.grading.compare import mismatch, shapes
from jaxlings.grading.context import CheckContext, StudentError
from jaxlings.grading.results import Outcome
from jaxlings.grading.spec import Exercise

if TYPE_CHECKING:
    from jaxlings.grading.checks.vocabulary import Words


@dataclass(frozen=True)
class Correct(Check):
    """`Correct(points)`: the function's outputs are the reference's on this run's cases."""

    name = "correct"
    summary = "equals the reference's output (within the stated tolerance) on random cases and edge cases."

    def describe(self, ex: Exercise, words: Words) -> str:
        what = (
            "your operator's matrix (`to_sparse().toarray()`, in NetKet's basis order)"
            if ex.operator_outputs
            else words.outputs()
        )
        tolerance = words.tolerance(ex.rtol, ex.atol)
        return f"make {what} equal the reference's{tolerance}, called as written {words.cases()}."

    def run(self, ctx: CheckContext) -> Outcome:
        ex = ctx.exercise
        first_problem = None
        for case, expected in zip(ctx.cases, ctx.expected):
            try:
                got = ctx.student_output("correct", case.args, expected, ex.rtol, ex.atol)
            except StudentError as exc:
                return Outcome.fail(f"{case.label} {shapes(case.args)}: {exc}")
            if first_problem is None and (problem := mismatch(expected, got, ex.rtol, ex.atol, ex.outputs)) is not None:
                first_problem = f"{case.label} {shapes(case.args)}: {problem}"
        if first_problem:
            return Outcome.fail(first_problem + key_reuse.reuse_note(ctx))
        return Outcome.ok(f"{len(ctx.cases)} cases match", cases=len(ctx.cases))

"""`correct`: the function, called as the student wrote it, matches the reference on every case.

Where the exercise asks for jit, each call is first made under the grader's `jax.jit`, and made
as written when that fails or differs (`TopicSession.student_output`): the same verdicts for
every function that is right as written, at one compilation per shape instead of one per
operation. The cases are the exercise's edge cases and fresh random cases drawn for this run; the
expected outputs come from the reference worker. A failure names the case (by its label and
argument shapes) and what differs, never the expected values. The student's outputs are kept
(`ExerciseRun.eager`) for the `jit` check. Where the values are wrong and the exercise has a
`key_reuse` check, the message says so when a key is used twice (`key_reuse.reuse_note`).
"""

from __future__ import annotations

from autograder.checks import key_reuse
from autograder.compare import mismatch, shapes
from autograder.results import Outcome
from autograder.session import ExerciseRun, StudentError, TopicSession

SUMMARY = "equals the reference's output (within the stated tolerance) on random cases and edge cases."
"""What the check asks, in one line for students (notebooks, reports)."""


def describe(ex, ctx) -> str:
    """What the check asks of `ex`, for its docstring's Graded list (`autograder.course.graded`)."""
    what = ("your operator's matrix (`to_sparse().toarray()`, in NetKet's basis order) equals the reference's"
            if ex.operator_outputs else f"{ctx.equal()} the reference's")
    return f"called as written {ctx.cases()}, {what} ({ctx.tolerance(ex.rtol, ex.atol)})."


def run(session: TopicSession, run: ExerciseRun) -> Outcome:
    ex = run.exercise
    first_problem = None
    for i, (case, expected) in enumerate(zip(run.cases, run.expected)):
        try:
            got = session.student_output(run, "correct", case.args, expected, ex.rtol, ex.atol)
        except StudentError as exc:
            return Outcome.fail(f"{case.label} {shapes(case.args)}: {exc}")
        run.eager[i] = got
        if first_problem is None and (problem := mismatch(expected, got, ex.rtol, ex.atol, ex.outputs)) is not None:
            first_problem = f"{case.label} {shapes(case.args)}: {problem}"
    if first_problem:
        return Outcome.fail(first_problem + key_reuse.reuse_note(session, run))
    return Outcome.ok(f"{len(run.cases)} cases match", cases=len(run.cases))

"""`grad`: `jax.grad` of the function (w.r.t. `Grad.argnums`) matches the reference's gradient
on every case: the function is differentiable, and its custom rules (if any) are right.

The gradient is taken under the grader's `jax.jit` first, and as written where that fails or
differs (`TopicSession.student_output`): an un-jitted gradient compiles every operation of the
forward and backward pass one by one (`autodiff.pair_energy`: 6.0 s of CPU on its cases, 1.0 s
jitted)."""

from __future__ import annotations

from autograder.compare import mismatch, shapes
from autograder.results import Outcome
from autograder.session import ExerciseRun, StudentError, TopicSession, reference_call
from autograder.spec import Grad

SUMMARY = "jax.grad of your function equals the reference's gradient."
"""What the check asks, in one line for students (notebooks, reports)."""


def describe(ex, ctx) -> str:
    """What the check asks of `ex`, for its docstring's Graded list (`autograder.course.graded`)."""
    opts: Grad = ex.options.get("grad", Grad())
    return (f"`jax.grad` with respect to {ctx.args(opts.argnums)} equals the reference's gradient on every case "
            f"({ctx.tolerance(opts.rtol, opts.atol)}).")


def run(session: TopicSession, run: ExerciseRun) -> Outcome:
    ex = run.exercise
    opts: Grad = ex.options.get("grad", Grad())
    transforms = [["grad", {"argnums": list(opts.argnums)}]]
    for case in run.cases:
        expected = session.reference_output(args=case.args, fn=ex.name, transforms=transforms, **reference_call(ex))
        try:
            got = session.student_output(run, "grad", case.args, expected, opts.rtol, opts.atol, transforms=transforms)
            problem = mismatch(expected, got, opts.rtol, opts.atol)
        except StudentError as exc:
            return Outcome.fail(f"jax.grad, {case.label} {shapes(case.args)}: {exc}")
        if problem is not None:
            return Outcome.fail(f"the gradient, {case.label} {shapes(case.args)}: {problem}")
    return Outcome.ok(f"gradients match on {len(run.cases)} cases")

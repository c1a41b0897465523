"""`grad`: `jax.grad` of the function (w.r.t. `Grad.argnums`) matches the reference's gradient
on every case: the function is differentiable, and its custom rules (if any) are right.

The gradient is taken under the grader's `jax.jit` first, and as written where that fails or
differs (`CheckContext.student_output`): an un-jitted gradient compiles every operation of the
forward and backward pass one by one (`autodiff.pair_energy`: 6.0 s of CPU on its cases, 1.0 s
jitted)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from jaxlings.grading.check import Check
from jaxlings.grading.compare import mismatch, shapes
from jaxlings.grading.context import CheckContext, StudentError, reference_call
from jaxlings.grading.results import Outcome
from jaxlings.grading.spec import Exercise
from jaxlings.worker import messages

if TYPE_CHECKING:
    from jaxlings.grading.checks.vocabulary import Words


@dataclass(frozen=True, kw_only=True)
class Grad(Check):
    """`Grad(points, argnums=(0,), rtol=1e-5, atol=1e-5)`: differentiate w.r.t. `argnums` (the
    function's output must be a scalar) and compare with the reference's gradient."""

    argnums: tuple[int, ...] = (0,)
    rtol: float = 1e-5
    atol: float = 1e-5

    name = "grad"
    summary = "jax.grad of your function equals the reference's gradient."
    requires = ("correct",)
    after = ("jit",)

    def describe(self, ex: Exercise, words: Words) -> str:
        return (
            f"make `jax.grad` with respect to {words.args(self.argnums)} equal the reference's gradient"
            f"{words.tolerance(self.rtol, self.atol)} on every case."
        )

    def run(self, ctx: CheckContext) -> Outcome:
        ex = ctx.exercise
        transforms = [messages.grad(self.argnums)]
        for case in ctx.cases:
            expected = ctx.reference_output(args=case.args, fn=ex.name, transforms=transforms, **reference_call(ex))
            try:
                got = ctx.student_output("grad", case.args, expected, self.rtol, self.atol, transforms=transforms)
                problem = mismatch(expected, got, self.rtol, self.atol, root="gradient")
            except StudentError as exc:
                return Outcome.fail(f"jax.grad, {case.label} {shapes(case.args)}: {exc}")
            if problem is not None:
                return Outcome.fail(f"the gradient, {case.label} {shapes(case.args)}: {problem}")
        return Outcome.ok(f"gradients match on {len(ctx.cases)} cases")

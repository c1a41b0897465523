"""`vmap`: `jax.vmap` of the function over a stack of cases matches the reference's, and the
batched function meets `Vmap.requirements` (e.g. no Python loop over the batch), judged on the
jitted batched call exported as a program from the shapes of a batch (never its values) and
analysed and run on the trusted side on two fresh batches of those shapes, which its outputs
must match (`jaxlings.grading.structure`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from jaxlings.grading.check import Check, SpecError
from jaxlings.grading.checks.jit import judged, with_notes
from jaxlings.grading.context import CheckContext, StudentError
from jaxlings.grading.requirements import Requirement
from jaxlings.grading.results import Outcome
from jaxlings.grading.spec import Case, Exercise
from jaxlings.worker import messages

if TYPE_CHECKING:
    from jaxlings.grading.checks.vocabulary import Words


@dataclass(frozen=True, kw_only=True)
class Vmap(Check):
    """`Vmap(points, in_axes=(...), batch=5, size=None, requirements=())`: `in_axes` per argument
    (None: not batched, e.g. static), `batch` samples of size `size` (default: the exercise's
    middle size) stacked, and requirements on the batched function's exported program."""

    in_axes: tuple[int | None, ...]
    batch: int = 5
    size: int | None = None
    requirements: tuple[Requirement, ...] = ()

    name = "vmap"
    summary = "jax.vmap of your function equals the reference's, without a Python loop over the batch."
    requires = ("correct",)
    after = ("jit",)
    analyses = True

    def fits(self, exercise: Exercise) -> None:
        if self.batch < 1:
            raise SpecError(f"Vmap: option 'batch' must be at least 1, not {self.batch}")

    def describe(self, ex: Exercise, words: Words) -> str:
        axes = "(" + ", ".join(repr(a) for a in self.in_axes) + ("," if len(self.in_axes) == 1 else "") + ")"
        text = (
            f"make `jax.vmap({ex.name}, in_axes={axes})` over a batch of {self.batch} cases equal the reference's"
            f"{words.tolerance(ex.rtol, ex.atol)}"
        )
        if self.requirements:
            text += f"; the batched program, jitted: {words.requirements(self.requirements)}"
        return text + "."

    def batched_case(self, ctx: CheckContext, kind: str) -> Case:
        """`batch` samples of one size, stacked along each argument's axis."""
        ex = ctx.exercise
        size = self.size or ex.sizes[len(ex.sizes) // 2]
        samples = ctx.draw(kind, lambda rng: [ex.sample(rng, size).args for _ in range(self.batch)])
        args = tuple(
            samples[0][i] if axis is None else np.stack([s[i] for s in samples], axis=axis)
            for i, axis in enumerate(self.in_axes)
        )
        return Case(args, f"a batch of {self.batch} size-{size} cases")

    def run(self, ctx: CheckContext) -> Outcome:
        ex = ctx.exercise
        case = self.batched_case(ctx, "vmap")
        request = {"fn": ex.name, "transforms": [messages.vmap(self.in_axes)]}
        try:
            problem = ctx.compare_call(case.args, ex.rtol, ex.atol, ex.outputs, **request)
        except StudentError as exc:
            return Outcome.fail(f"jax.vmap over {case.label}: {exc}")
        if problem is not None:
            return Outcome.fail(f"jax.vmap over {case.label}: {problem}")
        if not self.requirements:
            return Outcome.ok(f"jax.vmap over {case.label} matches")
        # fresh batches for the program, never shown to the student's process (it exports from their shapes)
        first = self.batched_case(ctx, "vmap_trace")
        again = self.batched_case(ctx, "vmap_again")
        again_args = tuple(first.args[i] if i in ex.static_argnums else a for i, a in enumerate(again.args))
        trace = {**request, "args": first.args, "args_again": again_args, "static_argnums": ex.static_argnums}
        try:
            facts, ref = ctx.traced_facts(trace, ex.rtol, ex.atol)
        except StudentError as exc:
            return Outcome.fail(f"jax.jit(jax.vmap(...)) over {case.label}: {exc}")
        measured = {
            "n_ops": facts.get("n_ops"),
            "reference_n_ops": ref.get("n_ops"),
            "ops": facts.get("ops"),
            "reference_ops": ref.get("ops"),
            "advisory": facts.get("advisory", {}),
        }
        problems, notes = judged(self.requirements, facts, ref)
        if problems:
            return Outcome.fail(with_notes("batched: " + "; ".join(problems), notes), **measured)
        return Outcome.ok(
            with_notes(
                f"jax.vmap over {case.label} matches; the batched program has {facts.get('n_ops')} operations", notes
            ),
            **measured,
        )

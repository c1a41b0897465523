"""`jit`: the function runs under `jax.jit` (with the exercise's static arguments), gives what
it gives without jit, and has the structure the exercise requires.

`jit` is judged only once the function is `correct` (`requires`): a program that computes
the wrong thing earns nothing for its structure (a loop that only reverses its input, a
scatter of zeros). Its jitted outputs are compared with the reference's, on `correct`'s cases
and on the trusted samples its exported programs run on. Structure is judged from trusted facts
(`jaxlings.grading.structure`): the jitted call exported as a program from the arguments' shapes
only, analysed and run by a trusted worker on fresh samples, and shown there to compute the
function. Requirements (`Jit.requirements`, after the defaults) marked advisory
(`trusted = False`: jaxpr primitive names the student's process reports) add a note to the
message and never change the score.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from jaxlings.grading.check import Check, SpecError
from jaxlings.grading.compare import mismatch, shapes
from jaxlings.grading.context import CheckContext, Facts, StudentError
from jaxlings.grading.requirements import DEFAULT_JIT_REQUIREMENTS, Requirement, judge_all
from jaxlings.grading.results import Outcome
from jaxlings.grading.spec import Exercise, NotPublished

if TYPE_CHECKING:
    from jaxlings.grading.checks.vocabulary import Words

MEASURED = (
    "n_ops",
    "n_ops_other",
    "hlo_lines",
    "loops",
    "counted_loops",
    "flops",
    "temp_bytes",
    "compile_seconds",
    "collectives",
    "ops",
    "n_inputs",
    "donated_inputs",
    "program_shingles",
)
"""Facts the test's `extra_data` carries (the student's, and the reference's as `reference_<fact>`
where it has them). `program_shingles` (the student's program only: the trusted analysis worker's
normalised fingerprint of it, `jaxlings.worker.program.program_shingles`) is for the similarity
report and decides nothing."""


@dataclass(frozen=True, kw_only=True)
class Jit(Check):
    """`Jit(points, requirements=(...))`: under `jax.jit` the function gives its outputs, and its
    exported program meets `DEFAULT_JIT_REQUIREMENTS` and `requirements`
    (`jaxlings.grading.requirements`)."""

    requirements: tuple[Requirement, ...] = ()
    static_values: bool = False
    """The Graded list names the values of the static arguments the program is exported with
    (`trace_request`: those of the largest and the smallest random case), e.g. a debug flag that
    is off there; the sampler must fix them at those sizes (`fits` checks)."""

    name = "jit"
    summary = (
        "once correct, runs under jax.jit, gives the reference's values, and has the required structure (no "
        "host callbacks, no re-tracing, ...)."
    )
    requires = ("correct",)
    analyses = True

    def describe(self, ex: Exercise, words: Words) -> str:
        head = (
            "keep it right under its own `jax.jit` (the decorator the task gives it, as called for `correct`)"
            if words.decorated
            else f"make it work {words.jitted(True)} once it is correct: the reference's outputs on the same cases"
        )
        exported = "in its exported program"
        if self.static_values:
            named = [f"{words.arg(i)} = {v!r}" for i, v in zip(ex.static_argnums, _exported_static(ex))]
            exported = f"in its exported program (exported with {', '.join(named)})"
        return f"{head}; {exported}: {words.requirements(DEFAULT_JIT_REQUIREMENTS + self.requirements)}."

    def fits(self, exercise: Exercise) -> None:
        if self.static_values:
            try:
                _exported_static(exercise)
            except NotPublished:  # a public spec: its samplers are not published; the build checked them
                pass

    def run(self, ctx: CheckContext) -> Outcome:
        ex = ctx.exercise
        for case, expected in zip(ctx.cases, ctx.expected):
            where = f"under jax.jit, {case.label} {shapes(case.args)}"
            try:
                got = ctx.student.call("call", fn=ex.name, args=case.args, jit=True, static_argnums=ex.static_argnums)[
                    "out"
                ]
            except StudentError as exc:
                return Outcome.fail(f"{where}: {exc}")
            if (problem := mismatch(expected, got, ex.rtol, ex.atol, ex.outputs)) is not None:
                return Outcome.fail(f"{where}: {problem}")
        try:
            facts, ref = trace_facts(ctx)
        except StudentError as exc:
            return Outcome.fail(f"under jax.jit: {exc}")
        measured: dict[str, Any] = {k: facts[k] for k in MEASURED if k in facts}
        measured.update({f"reference_{k}": ref[k] for k in MEASURED if k in ref})
        measured["advisory"] = facts.get("advisory", {})
        problems, notes = judged(DEFAULT_JIT_REQUIREMENTS + self.requirements, facts, ref)
        if problems:
            return Outcome.fail(with_notes("; ".join(problems), notes), **measured)
        return Outcome.ok(
            with_notes(
                f"jits; the exported program has {facts.get('n_ops')} operations, no host callbacks, no re-tracing",
                notes,
            ),
            **measured,
        )


def _exported_static(ex: Exercise, draws: int = 4) -> tuple[Any, ...]:
    """The static arguments' values of the programs `trace_request` exports (the largest and the
    smallest random case's), which `Jit(static_values=True)` names: SpecError unless the sampler
    fixes them (the same in `draws` draws at both sizes)."""
    if not ex.static_argnums or not ex.sizes:
        raise SpecError("Jit: option 'static_values' needs static arguments and random cases to name their values")
    seen = {
        tuple(ex.sample(np.random.default_rng(seed), size).args[i] for i in ex.static_argnums)
        for seed in range(draws)
        for size in (ex.sizes[-1], ex.sizes[0])
    }
    if len(seen) != 1:
        raise SpecError(
            "Jit: option 'static_values' names the static arguments the program is exported with, but the sampler "
            f"draws several at the largest and smallest sizes: {sorted(map(repr, seen))[:4]}"
        )
    return seen.pop()


def trace_request(ctx: CheckContext) -> dict[str, Any]:
    """The trusted samples of an exercise's `trace` request: two of its largest size (where an
    unrolled loop shows most), the second keeping the first's static arguments so that only
    values change, and one of its smallest size. Drawn for this request and never shown to the
    student's process before its programs are in: it exports them from the samples' shapes
    (`jaxlings.grading.structure`)."""
    ex = ctx.exercise
    first, again, other = ctx.draw(
        "trace",
        lambda rng: [
            ex.sample(rng, ex.sizes[-1]).args,
            ex.sample(rng, ex.sizes[-1]).args,
            ex.sample(rng, ex.sizes[0]).args,
        ],
    )
    kept = list(again)
    for i in ex.static_argnums:
        kept[i] = first[i]
    return {
        "fn": ex.name,
        "args": first,
        "args_again": tuple(kept),
        "static_argnums": ex.static_argnums,
        "args_other": other,
    }


def trace_facts(ctx: CheckContext) -> tuple[Facts, Facts]:
    """Trusted facts of the student's and the reference's jitted function (once per exercise:
    `Findings.traced`)."""
    if ctx.findings.traced is None:
        ex = ctx.exercise
        ctx.findings.traced = ctx.traced_facts(trace_request(ctx), ex.rtol, ex.atol)
    return ctx.findings.traced


def judged(requirements: tuple[Requirement, ...], facts: Facts, ref: Facts) -> tuple[list[str], list[str]]:
    """(problems that cost the points, advisory notes): trusted requirements decide, the others
    (facts the student's process reports about itself) only advise."""
    trusted = tuple(r for r in requirements if getattr(r, "trusted", True))
    advisory = tuple(r for r in requirements if not getattr(r, "trusted", True))
    return judge_all(trusted, facts, ref), judge_all(advisory, facts, ref)


def with_notes(text: str, notes: list[str]) -> str:
    """A message with the advisory notes after it."""
    return text + "".join(f" (advice, no points: {n})" for n in notes)

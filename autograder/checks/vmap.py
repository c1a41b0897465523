"""`vmap`: `jax.vmap` of the function over a stack of cases matches the reference's, and the
batched function meets `Vmap.requirements` (e.g. no Python loop over the batch), judged on the
jitted batched call exported as a program from the shapes of a batch (never its values) and
analysed and run on the trusted side on two fresh batches of those shapes, which its outputs
must match (`autograder.structure`)."""

from __future__ import annotations

import numpy as np

from autograder.checks.jit import judged, with_notes
from autograder.results import Outcome
from autograder.session import ExerciseRun, StudentError, TopicSession
from autograder.spec import Case, Vmap
from autograder.structure import traced_facts

ANALYSES = True  # sends programs to the trusted worker (`autograder.checks.ANALYSING`)
SUMMARY = "jax.vmap of your function equals the reference's, without a Python loop over the batch."
"""What the check asks, in one line for students (notebooks, reports)."""


def describe(ex, ctx) -> str:
    """What the check asks of `ex`, for its docstring's Graded list (`autograder.course.graded`)."""
    opts: Vmap = ex.options["vmap"]
    axes = "(" + ", ".join(repr(a) for a in opts.in_axes) + ("," if len(opts.in_axes) == 1 else "") + ")"
    text = (f"`jax.vmap({ex.name}, in_axes={axes})` over a batch of {opts.batch} cases equals the reference's "
            f"({ctx.tolerance(ex.rtol, ex.atol)})")
    if opts.requirements:
        text += f"; the batched program, jitted: {ctx.requirements(opts.requirements)}"
    return text + "."


def batched_case(session: TopicSession, run: ExerciseRun, opts: Vmap, kind: str) -> Case:
    """`opts.batch` samples of one size, stacked along each argument's axis."""
    ex = run.exercise
    size = opts.size or ex.sizes[len(ex.sizes) // 2]
    samples = session.draw(ex.name, kind, lambda rng: [ex.sample(rng, size).args for _ in range(opts.batch)])
    args = tuple(samples[0][i] if axis is None else np.stack([s[i] for s in samples], axis=axis)
                 for i, axis in enumerate(opts.in_axes))
    return Case(args, f"a batch of {opts.batch} size-{size} cases")


def run(session: TopicSession, run: ExerciseRun) -> Outcome:
    ex = run.exercise
    opts: Vmap = ex.options["vmap"]
    case = batched_case(session, run, opts, "vmap")
    request = {"fn": ex.name, "transforms": [["vmap", {"in_axes": list(opts.in_axes)}]]}
    try:
        problem = session.compare_call(case.args, ex.rtol, ex.atol, ex.outputs, **request)
    except StudentError as exc:
        return Outcome.fail(f"jax.vmap over {case.label}: {exc}")
    if problem is not None:
        return Outcome.fail(f"jax.vmap over {case.label}: {problem}")
    if not opts.requirements:
        return Outcome.ok(f"jax.vmap over {case.label} matches")
    # fresh batches for the program, never shown to the student's process (it exports from their shapes)
    first = batched_case(session, run, opts, "vmap_trace")
    again = batched_case(session, run, opts, "vmap_again")
    again_args = tuple(first.args[i] if i in ex.static_argnums else a for i, a in enumerate(again.args))
    trace = {**request, "args": first.args, "args_again": again_args, "static_argnums": ex.static_argnums}
    try:
        facts, ref = traced_facts(session, trace, ex.rtol, ex.atol)
    except StudentError as exc:
        return Outcome.fail(f"jax.jit(jax.vmap(...)) over {case.label}: {exc}")
    measured = {"n_ops": facts.get("n_ops"), "reference_n_ops": ref.get("n_ops"), "ops": facts.get("ops"),
                "reference_ops": ref.get("ops"), "advisory": facts.get("advisory", {})}
    problems, notes = judged(opts.requirements, facts, ref)
    if problems:
        return Outcome.fail(with_notes("batched: " + "; ".join(problems), notes), **measured)
    return Outcome.ok(with_notes(f"jax.vmap over {case.label} matches; the batched program has {facts.get('n_ops')} "
                                 "operations", notes), **measured)

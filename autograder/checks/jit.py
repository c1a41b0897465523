"""`jit`: the function runs under `jax.jit` (with the exercise's static arguments), gives what
it gives without jit, and has the structure the exercise requires.

Jitted outputs are compared with the reference's, or, where the function is wrong, with the
student's own un-jitted outputs: jit-ability is judged apart from correctness, so a wrong
answer costs `correct` and a jit failure costs `jit`. Structure is judged from trusted facts
(`autograder.structure`): the jitted call exported as a program from the arguments' shapes
only, analysed and run by a trusted worker on fresh samples, and shown there to compute the
function. Requirements marked advisory
(`trusted = False`: jaxpr primitive names the student's process reports) add a note to the
message and never change the score.
"""

from __future__ import annotations

from autograder.compare import mismatch, shapes
from autograder.requirements import DEFAULT_JIT_REQUIREMENTS, judge_all
from autograder.results import Outcome
from autograder.session import ExerciseRun, StudentError, TopicSession
from autograder.structure import traced_facts


MEASURED = ("n_ops", "n_ops_other", "hlo_lines", "loops", "counted_loops", "flops", "compile_seconds",
            "collectives", "ops", "n_inputs", "donated_inputs")

ANALYSES = True  # sends programs to the trusted worker (`autograder.checks.ANALYSING`)
SUMMARY = "runs under jax.jit, gives the same values, and has the required structure (no host callbacks, no re-tracing, ...)."
"""What the check asks, in one line for students (notebooks, reports)."""


def describe(ex, ctx) -> str:
    """What the check asks of `ex`, for its docstring's Graded list (`autograder.course.graded`)."""
    head = ("as called for `correct` (under its own `jax.jit`, the decorator the task gives it)" if ctx.decorated
            else f"{ctx.jitted(True)}, it gives its un-jitted outputs on the same cases")
    return f"{head}; the exported program: {ctx.requirements(DEFAULT_JIT_REQUIREMENTS + ex.requirements)}."


def trace_request(session: TopicSession, run: ExerciseRun) -> dict:
    """The trusted samples of an exercise's `trace` request: two of its largest size (where an
    unrolled loop shows most), the second keeping the first's static arguments so that only
    values change, and one of its smallest size. Drawn for this request and never shown to the
    student's process before its programs are in: it exports them from the samples' shapes
    (`autograder.structure`)."""
    ex = run.exercise
    first, again, other = session.draw(ex.name, "trace", lambda rng: [ex.sample(rng, ex.sizes[-1]).args,
                                                                      ex.sample(rng, ex.sizes[-1]).args,
                                                                      ex.sample(rng, ex.sizes[0]).args])
    again = list(again)
    for i in ex.static_argnums:
        again[i] = first[i]
    return {"fn": ex.name, "args": first, "args_again": tuple(again), "static_argnums": ex.static_argnums,
            "args_other": other}


def trace_facts(session: TopicSession, run: ExerciseRun) -> tuple[dict, dict]:
    """Trusted facts of the student's and the reference's jitted function (cached per run)."""
    if run.facts is None:
        ex = run.exercise
        run.facts, run.ref_facts = traced_facts(session, trace_request(session, run), ex.rtol, ex.atol,
                                                verify_against_reference=run.passed.get("correct", True))
    return run.facts, run.ref_facts


def judged(requirements: tuple, facts: dict, ref: dict) -> tuple[list[str], list[str]]:
    """(problems that cost the points, advisory notes): trusted requirements decide, the others
    (facts the student's process reports about itself) only advise."""
    trusted = tuple(r for r in requirements if getattr(r, "trusted", True))
    advisory = tuple(r for r in requirements if not getattr(r, "trusted", True))
    return judge_all(trusted, facts, ref), judge_all(advisory, facts, ref)


def with_notes(text: str, notes: list[str]) -> str:
    """A message with the advisory notes after it."""
    return text + "".join(f" (advice, no points: {n})" for n in notes)


def run(session: TopicSession, run: ExerciseRun) -> Outcome:
    ex = run.exercise
    for i, (case, expected) in enumerate(zip(run.cases, run.expected)):
        where = f"under jax.jit, {case.label} {shapes(case.args)}"
        try:
            got = session.call_student("call", fn=ex.name, args=case.args, jit=True, static_argnums=ex.static_argnums)["out"]
        except StudentError as exc:
            return Outcome.fail(f"{where}: {exc}")
        problem = mismatch(expected, got, ex.rtol, ex.atol, ex.outputs)
        if problem is not None and i in run.eager:
            own = mismatch(run.eager[i], got, ex.rtol, ex.atol, ex.outputs)
            problem = None if own is None else f"the jitted output differs from the un-jitted one: {own}"
        if problem is not None:
            return Outcome.fail(f"{where}: {problem}")
    try:
        facts, ref = trace_facts(session, run)
    except StudentError as exc:
        return Outcome.fail(f"under jax.jit: {exc}")
    measured = {k: facts[k] for k in MEASURED if k in facts}
    measured.update({f"reference_{k}": ref[k] for k in MEASURED if k in ref})
    measured["advisory"] = facts.get("advisory", {})
    problems, notes = judged(DEFAULT_JIT_REQUIREMENTS + ex.requirements, facts, ref)
    if problems:
        return Outcome.fail(with_notes("; ".join(problems), notes), **measured)
    return Outcome.ok(with_notes(f"jits; the exported program has {facts.get('n_ops')} operations, no host callbacks, "
                                 "no re-tracing", notes), **measured)

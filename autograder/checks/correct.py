"""`correct`: the function, called as the student wrote it, matches the reference on every case.

The cases are the exercise's edge cases and fresh random cases drawn for this run; the
expected outputs come from the reference worker. A failure names the case (by its label and
argument shapes) and what differs, never the expected values.
"""

from __future__ import annotations

from autograder.compare import mismatch, shapes
from autograder.results import Outcome
from autograder.session import ExerciseRun, StudentError, TopicSession


def compare_cases(session: TopicSession, run: ExerciseRun, **call: object) -> Outcome:
    """Call the student on each case (with `call` options) and compare; shared with `jit`."""
    ex = run.exercise
    for case, expected in zip(run.cases, run.expected):
        try:
            got = session.call_student("call", fn=ex.name, args=case.args, **call)["out"]
        except StudentError as exc:
            return Outcome.fail(f"{case.label} {shapes(case.args)}: {exc}")
        if (problem := mismatch(expected, got, ex.rtol, ex.atol)) is not None:
            return Outcome.fail(f"{case.label} {shapes(case.args)}: {problem}")
    return Outcome.ok(f"{len(run.cases)} cases match", cases=len(run.cases))


def run(session: TopicSession, run: ExerciseRun) -> Outcome:
    return compare_cases(session, run)

"""`sharding`: every output leaf is laid out over the devices as the reference's is (same
mesh axes, same PartitionSpec, same replication), on every case.

The student's layouts are read on the trusted side: the jitted call is exported as a program,
which the reference's worker runs on the case (its outputs must be the reference's) and whose
outputs' shardings it describes (`structure.program_layouts`); nothing the student's process
says about its arrays is taken."""

from __future__ import annotations

from autograder.compare import shapes
from autograder.results import Outcome
from autograder.session import ExerciseRun, StudentError, TopicSession
from autograder.structure import program_layouts

SUMMARY = "every output is laid out over the devices as the reference's is."
"""What the check asks, in one line for students (notebooks, reports)."""


def run(session: TopicSession, run: ExerciseRun) -> Outcome:
    ex = run.exercise
    got: list[dict] = []
    for case in run.cases:
        out, expected = program_layouts(session, ex.name, case.args, student=False)
        try:
            _, got = program_layouts(session, ex.name, case.args, student=True, expected=out, rtol=ex.rtol, atol=ex.atol)
        except StudentError as exc:
            return Outcome.fail(f"{case.label} {shapes(case.args)}: {exc}")
        if len(got) != len(expected):
            return Outcome.fail(f"{case.label}: {len(got)} output layouts, the task has {len(expected)} outputs")
        for i, (e, g) in enumerate(zip(expected, got)):
            if e != g:
                return Outcome.fail(f"{case.label}: output leaf {i} is laid out as {_describe(g)}, "
                                    f"but the task asks for {_describe(e)}", expected=e, got=g)
    return Outcome.ok(f"outputs laid out as asked on {len(run.cases)} cases", shardings=got)


def _describe(s: dict) -> str:
    if s.get("spec") is None:
        return f"{s['kind']} ({'replicated' if s.get('replicated') else 'not replicated'}) on {s.get('devices')} devices"
    layout = f"PartitionSpec{s['spec']} over mesh {s['mesh']}"
    return layout + (" (replicated: every device holds all of it)" if s.get("replicated") else "")

"""`sharding`: every output leaf is laid out over the devices as the reference's is (same
mesh axes, same PartitionSpec, same replication), on every case."""

from __future__ import annotations

from autograder.compare import shapes
from autograder.results import Outcome
from autograder.session import ExerciseRun, StudentError, TopicSession

SUMMARY = "every output is laid out over the devices as the reference's is."
"""What the check asks, in one line for students (notebooks, reports)."""


def run(session: TopicSession, run: ExerciseRun) -> Outcome:
    ex = run.exercise
    got: list[dict] = []
    for case in run.cases:
        request = {"fn": ex.name, "args": case.args, "shardings": True}
        expected = session.call_reference("call", **request)["shardings"]
        try:
            got = session.call_student("call", **request)["shardings"]
        except StudentError as exc:
            return Outcome.fail(f"{case.label} {shapes(case.args)}: {exc}")
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

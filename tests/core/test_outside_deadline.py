"""Every topic runs under an outside deadline (`jaxlings.grading.watchdog`): a topic whose
grading hangs where its own time limit cannot see it (the grader's code, not a worker request)
fails alone, with the reason, its workers are stopped, and the run completes."""

from __future__ import annotations

import tempfile
import threading
from dataclasses import replace

import psutil
import pytest

from helpers.grading import SOLUTIONS, TEST_LIMITS, verdicts
from jaxlings.grading import engine, topics
from jaxlings.grading.checks.correct import Correct
from jaxlings.grading.watchdog import Piece, run_all


def test_a_piece_past_its_limit_is_abandoned_and_its_stops_called():
    release, stopped = threading.Event(), []

    def hangs(watch):
        watch.guard(lambda: stopped.append("hangs"))
        release.wait(60)
        return "late"

    def quick(watch):
        watch.guard(lambda: stopped.append("quick"))
        return "done"

    pieces = [
        Piece("hangs", hangs, 0.5, lambda seconds: f"abandoned after {seconds:.1f} s"),
        Piece("quick", quick, 60, lambda seconds: "never"),
    ]
    try:
        results = run_all(pieces, jobs=1)  # the hung piece's slot goes to the next one
    finally:
        release.set()
    assert results["quick"] == "done" and results["hangs"].startswith("abandoned after")
    assert stopped == ["hangs"]


def test_an_exception_in_one_piece_stops_the_others_and_is_raised():
    release, stopped = threading.Event(), []

    def waits(watch):
        watch.guard(lambda: (stopped.append("waits"), release.set()))
        release.wait(60)
        return "stopped"

    def breaks(watch):
        raise RuntimeError("the grader's own failure")

    pieces = [Piece("waits", waits, 60, lambda s: ""), Piece("breaks", breaks, 60, lambda s: "")]
    with pytest.raises(RuntimeError, match="own failure"):
        run_all(pieces, jobs=2)
    assert stopped == ["waits"]


def _workers() -> set[int]:
    return {
        p.pid
        for p in psutil.Process().children(recursive=True)
        if any("jaxlings.worker" in part for part in (p.cmdline() or []))
    }


@pytest.mark.slow  # two small topics graded: ~30 s on a 2-core CPU
def test_a_topic_hung_in_the_grader_fails_alone_and_leaves_no_worker(monkeypatch, tmp_path):
    release, seen = threading.Event(), []
    honest_run = Correct.run

    def hangs_on_prng(self, ctx):
        if ctx.topic_name == "prng":
            seen.append(ctx.exercise.name)
            release.wait(600)  # no worker request: nothing the topic's own deadline can see
        return honest_run(self, ctx)

    monkeypatch.setattr(Correct, "run", hangs_on_prng)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the topics' private copies go
    chosen = {t.name: t for t in topics.resolve(["prng.derive_keys", "at_updates.mask_fill"])}
    before = _workers()
    try:
        result = engine.grade(
            SOLUTIONS,
            [replace(chosen["prng"], time_limit=10.0), chosen["at_updates"]],
            reference_dir=SOLUTIONS,
            limits=TEST_LIMITS,
            jobs=2,
            grace=2.0,
        )
        left = _workers() - before
    finally:
        release.set()
    v = verdicts(result)
    assert seen == ["derive_keys"]
    hung = {name: row for name, row in v.items() if name.startswith("prng.")}
    assert hung and all(
        row[0] == 0 and "was stopped after" in row[2] and "10 s time limit" in row[2] for row in hung.values()
    )
    assert all(row[0] == row[1] for name, row in v.items() if name.startswith("at_updates.")), v
    assert not left, "the abandoned topic's workers were stopped"
    for thread in threading.enumerate():
        if thread.name.startswith("grade-"):
            thread.join(60)  # released, the hung topic winds down and removes its private copy
    assert not list(tmp_path.glob("jaxlings-*"))

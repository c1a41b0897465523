"""A check that fails in an unforeseen way costs that test only: the result stays complete."""

import pytest

from autograder import checks, engine
from conftest import SOLUTIONS, grade_dir, verdicts


@pytest.mark.slow
def test_a_check_that_raises_fails_its_test_and_the_run_goes_on(monkeypatch, capsys):
    def broken(session, run):
        raise KeyError("out")  # as a reply shaped as no schema foresaw would

    monkeypatch.setitem(checks.REGISTRY, "jit", broken)
    result = grade_dir(SOLUTIONS, ["at_updates.mask_fill"])
    got = verdicts(result)
    assert set(got) == {"at_updates.mask_fill:correct", "at_updates.mask_fill:jit"}
    assert got["at_updates.mask_fill:correct"][0] == 1
    score, _, message = got["at_updates.mask_fill:jit"]
    assert score == 0 and "could not judge this check (KeyError" in message
    assert "KeyError" in capsys.readouterr().err


def test_grader_errors_still_stop_the_run(monkeypatch):
    def reference_failed(session, run):
        raise engine.GraderError("the reference failed")

    monkeypatch.setitem(checks.REGISTRY, "correct", reference_failed)
    with pytest.raises(engine.GraderError):
        grade_dir(SOLUTIONS, ["at_updates.mask_fill"])

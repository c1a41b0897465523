"""A check that fails in an unforeseen way costs that test only: the result stays complete."""

import pytest

from helpers.grading import SOLUTIONS, grade_dir, verdicts, write_submission
from jaxlings.grading import checks, engine


@pytest.mark.slow
def test_a_check_that_raises_fails_its_test_and_the_run_goes_on(monkeypatch, capsys):
    def broken(self, ctx):
        raise KeyError("out")  # as a reply shaped as no schema foresaw would

    monkeypatch.setattr(checks.Jit, "run", broken)
    result = grade_dir(SOLUTIONS, ["at_updates.mask_fill"])
    got = verdicts(result)
    assert set(got) == {"at_updates.mask_fill:correct", "at_updates.mask_fill:jit"}
    assert got["at_updates.mask_fill:correct"][0] == 1
    score, _, message = got["at_updates.mask_fill:jit"]
    assert score == 0 and "could not judge this check (KeyError" in message
    assert "KeyError" in capsys.readouterr().err


def test_grader_errors_still_stop_the_run(monkeypatch):
    def reference_failed(self, ctx):
        raise engine.GraderError("the reference failed")

    monkeypatch.setattr(checks.Correct, "run", reference_failed)
    with pytest.raises(engine.GraderError):
        grade_dir(SOLUTIONS, ["at_updates.mask_fill"])


# Valid Python that the worker imports (a shallow call stack) but that `ast.parse` deeper in the
# grader refused with RecursionError: a sum of 2,900 terms.
DEAD_LINE = "if False:\n    unused = 1" + "+1" * 2900 + "\n"


@pytest.mark.slow
def test_a_line_that_breaks_the_parser_costs_nothing(tmp_path):
    """The grader reads every submitted file (which functions are stubs, what a save changed): a
    dead line nested too deeply for `ast.parse` used to raise out of the run, losing every
    topic. Now the file is read as one with nothing to find, and graded by running it."""
    source = (SOLUTIONS / "at_updates.py").read_text() + "\n" + DEAD_LINE
    folder = write_submission(tmp_path / "sub", {"at_updates": source})
    result = grade_dir(folder, ["at_updates.mask_fill"])
    assert {name: score for name, (score, _, _) in verdicts(result).items()} == {
        "at_updates.mask_fill:correct": 1,
        "at_updates.mask_fill:jit": 2,
    }


def test_trusted_work_that_fails_costs_its_topic_only(monkeypatch, tmp_path, capsys):
    """Any failure of the grader's own work on one topic's file fails that topic with the reason
    (and the traceback on stderr); the other topics are graded and the result is complete."""
    real = engine.grade_topic

    def failing(topic, module, *args, **kwargs):
        if topic.name == "at_updates":
            raise RecursionError("maximum recursion depth exceeded")
        return real(topic, module, *args, **kwargs)

    monkeypatch.setattr(engine, "grade_topic", failing)
    folder = write_submission(tmp_path / "sub", {"at_updates": "x = 1\n", "prng": "y = 2\n"})
    result = grade_dir(folder, ["at_updates.mask_fill", "prng.derive_keys"])
    got = verdicts(result)
    assert all(
        "could not grade at_updates.py (RecursionError" in got[name][2]
        for name in got
        if name.startswith("at_updates.")
    )
    assert all(score == 0 for score, _, _ in got.values()) and any(name.startswith("prng.") for name in got)
    assert "RecursionError" in capsys.readouterr().err

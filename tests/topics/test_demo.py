"""The bundled demo submission (what `make demo` grades) gets the verdicts its comments promise."""

from helpers.grading import ROOT, failing, grade_dir


def test_demo_at_updates_verdicts():
    result = grade_dir(ROOT / "demo" / "submission", ["at_updates"])
    assert failing(result) == {
        "at_updates.mask_fill:jit",
        "at_updates.lookup_and_clamp:correct",
        "at_updates.lookup_and_clamp:jit",
    }

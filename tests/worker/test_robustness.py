"""Whatever a submission does to its process costs that exercise (or, at import, that topic)
only; the result stays complete, and no process is left behind."""

import time

import pytest

from helpers.grading import (
    HANG_LIMITS,
    SOLUTIONS,
    failing,
    grade_dir,
    needs_bwrap,
    verdicts,
    write_submission,
)
from helpers.processes import command_lines, descendants_of_this_process
from jaxlings.isolation import Limits


@pytest.mark.slow
def test_hostile_functions_cost_only_themselves(crafted):
    folder = crafted(at_updates="hostile")
    (folder / "prng.py").write_text((SOLUTIONS / "prng.py").read_text())
    result = grade_dir(folder, ["at_updates", "prng.derive_keys"], limits=HANG_LIMITS)
    v = verdicts(result)
    assert "exited with status 7" in v["at_updates.scatter_ops:correct"][2]
    assert "did not finish in time" in v["at_updates.histogram:correct"][2]
    assert "memory" in v["at_updates.mask_fill:correct"][2]
    assert "output" in v["at_updates.lookup_and_clamp:correct"][2]
    assert {n for n in failing(result) if n.startswith("prng")} == set()
    assert result.score == 4  # derive_keys: correct 3 + jit 1 (key_reuse is advice, 0 points)
    assert len(result.tests) == 12
    assert descendants_of_this_process() == []


@pytest.mark.slow
def test_exit_at_import_costs_that_topic_only(crafted):
    folder = crafted(prng="exit_at_import")
    (folder / "at_updates.py").write_text((SOLUTIONS / "at_updates.py").read_text())
    result = grade_dir(folder, ["prng", "at_updates.mask_fill"])
    v = verdicts(result)
    assert all(score == 0 and "SystemExit" in msg for name, (score, _, msg) in v.items() if name.startswith("prng"))
    assert v["at_updates.mask_fill:correct"][0] == 1 and v["at_updates.mask_fill:jit"][0] == 2


def test_hard_exit_and_syntax_error_at_import(crafted):
    folder = crafted(at_updates="crash_at_import", prng="syntax_error")
    result = grade_dir(folder, ["at_updates.histogram", "prng.derive_keys"])
    v = verdicts(result)
    assert "exited with status 9 while importing" in v["at_updates.histogram:correct"][2]
    assert "SyntaxError" in v["prng.derive_keys:correct"][2]
    assert result.score == 0


def test_missing_topic_file_scores_zero_with_reason(tmp_path):
    result = grade_dir(write_submission(tmp_path, {}), ["at_updates.mask_fill"])
    assert result.score == 0
    assert all("no at_updates.py" in t.output for t in result.tests)


@pytest.mark.slow
def test_topic_time_limit_stops_a_slow_topic(tmp_path):
    folder = write_submission(
        tmp_path,
        {
            "at_updates": """
        import time
        def scatter_ops(x, idx, vals):
            time.sleep(100)
        def histogram(x, nbins):
            time.sleep(100)
    """
        },
    )
    import dataclasses

    from jaxlings.grading import engine, topics

    topic = dataclasses.replace(topics.resolve(["at_updates.scatter_ops", "at_updates.histogram"])[0], time_limit=12)
    t0 = time.monotonic()
    result = engine.grade(folder, [topic], reference_dir=SOLUTIONS, limits=Limits(call_timeout=60))
    assert time.monotonic() - t0 < 60
    assert result.score == 0 and len(result.tests) == 5
    assert any("time limit" in t.output for t in result.tests)


def test_children_are_killed(tmp_path):
    folder = write_submission(
        tmp_path,
        {
            "at_updates": """
        import subprocess, jax.numpy as jnp
        subprocess.Popen(["sleep", "1233"])
        def mask_fill(x, threshold, fill):
            return jnp.where(x > threshold, jnp.asarray(fill, x.dtype), x)
    """
        },
    )
    result = grade_dir(folder, ["at_updates.mask_fill"])
    assert result.score == result.max_score
    assert descendants_of_this_process() == []
    assert "sleep 1233" not in command_lines()


@pytest.mark.slow
@needs_bwrap
def test_sandbox_kills_even_daemonised_grandchildren(crafted):
    result = grade_dir(crafted(at_updates="forks"), ["at_updates.mask_fill"], isolate=True)
    assert result.score == result.max_score
    time.sleep(0.5)
    assert not {"sleep 1234", "sleep 1235"} & set(command_lines())

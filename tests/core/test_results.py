"""The result is Gradescope's results.json with our extras, and scoring bands behave."""

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jaxlings.grading.checks import Speed


@pytest.mark.slow  # graded_solutions grades every topic: ~230 s on a 2-core CPU
def test_results_json_shape(graded_solutions, tmp_path):
    path = tmp_path / "results.json"
    graded_solutions.write(path)
    data = json.loads(path.read_text())
    assert {"score", "max_score", "execution_time", "tests", "extra_data"} <= data.keys()
    assert data["score"] == pytest.approx(sum(t["score"] for t in data["tests"]))  # rounded per test
    platform = data["extra_data"]["platform"]
    assert {"backend", "device_kind", "jax_version"} <= platform.keys()
    assert data["extra_data"]["grader_version"]
    assert isinstance(data["extra_data"]["seed"], int)
    for t in data["tests"]:
        assert re.fullmatch(r"[a-z_]+\.[a-z_0-9]+:[a-z_]+", t["name"])
        assert t["tags"] == re.split(r"[.:]", t["name"])
        assert t["status"] in ("passed", "failed") and t["visibility"] == "visible"
        assert 0 <= t["score"] <= t["max_score"] and isinstance(t["output"], str)
        assert isinstance(t["extra_data"], dict)
    speed = [t for t in data["tests"] if t["tags"][2] == "speed"]
    assert speed and all({"ratio", "reference_ms", "student_ms", "size"} <= t["extra_data"].keys() for t in speed)


@given(st.floats(0.01, 1000), st.floats(0.01, 1000))
def test_speed_band_is_monotone_and_bounded(a, b):
    band = Speed(1, size={"cpu": 1})
    lo, hi = sorted((a, b))
    assert 0 <= band.score(hi) <= band.score(lo) <= 1


def test_speed_band_edges():
    band = Speed(1, size={"cpu": 1}, full=1.25, zero=10)
    assert band.score(1.25) == 1 and band.score(10) == 0 and 0 < band.score(3) < 1

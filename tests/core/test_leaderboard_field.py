"""The speed leaderboard's grading side (issue 31): which speed tests measured a time ratio
(`results.measured_ratio`, the one definition the service's board and Gradescope's field read),
Gradescope's top-level `leaderboard` in results.json (`grade grade --leaderboard`), the speed
check marking a verdict of its guard against idling, and course.toml's `[leaderboard]` table.
No server, no grading: results and timings built in memory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jaxlings.grading import rules
from jaxlings.grading.checks.speed import Speed, verdict
from jaxlings.grading.results import Outcome, Result, TestResult, leaderboard_entries, measured_ratio
from jaxlings.grading.timing import Timed


def speed_test(exercise: str, outcome: Outcome, check: str = "speed", topic: str = "prng") -> TestResult:
    return TestResult.of(topic, exercise, check, 2.0, outcome, "visible")


MEASURED = Outcome(0.8, "1.2 ms vs reference 1 ms", {"ratio": 1.42, "clock": "cpu", "wall_ratio": 1.5})


def test_only_a_speed_check_that_timed_both_sides_has_a_ratio():
    assert measured_ratio("speed", {"ratio": 0.93, "clock": "wall"}) == 0.93
    for check, data in (
        ("speed", {"pending": True, "student_ms": 1.2}),  # judged on submission (a public run)
        ("speed", {"waits": True}),  # not run: `correct` failed
        ("speed", {"size": 4096}),  # the timed call failed or its output was wrong: no ratio
        ("speed", {"ratio": float("nan")}),
        ("speed", {"ratio": 0}),
        ("speed", {"ratio": "0.5"}),
        ("speed", {"ratio": True}),
        ("vmc", {"ratio": 0.5}),  # another check's figures
    ):
        assert measured_ratio(check, data) is None, (check, data)


def test_results_json_carries_gradescopes_leaderboard_only_when_asked(tmp_path: Path):
    tests = [
        speed_test("dropout", MEASURED),
        speed_test("dropout", Outcome.ok(), check="correct"),
        speed_test("monte_carlo_pi", Outcome.pending("3 ms on this machine")),
        speed_test("noisy_walk", Outcome.fail("not run: `correct` failed", waits=True)),
        speed_test("histogram", Outcome(1.0, "x0.91", {"ratio": 0.91}), topic="at_updates"),
    ]
    result = Result(tests, 1.0, {})
    assert "leaderboard" not in result.to_json()  # the service's stored results.json stays as it was
    entries = [
        {"name": "prng.dropout time / reference", "value": 1.5, "order": "asc"},  # the slower clock
        {"name": "at_updates.histogram time / reference", "value": 0.91, "order": "asc"},
    ]
    assert result.to_json(leaderboard=True)["leaderboard"] == entries == leaderboard_entries(tests)
    path = tmp_path / "results.json"
    result.write(path, leaderboard=True)
    assert json.loads(path.read_text())["leaderboard"] == entries
    nothing_measured = Result(tests[1:4], 1.0, {})
    assert "leaderboard" not in nothing_measured.to_json(leaderboard=True)  # no empty list for Gradescope


def timed(wall_ms: float, cpu_ms: float) -> Timed:
    return Timed(wall_ms / 1e3, cpu_ms / 1e3, [])


def test_an_idling_submission_ranks_by_its_wall_time_not_its_cpu_clock():
    speed = Speed(points=2.0, size={"cpu": 64})
    refs = [timed(10, 10), timed(11, 11)]
    idled = verdict(speed, refs, [timed(200, 4), timed(210, 5)], 64, "cpu")  # CPU x0.4, wall x20
    assert idled.fraction == 0.0 and "wall time" in idled.message  # the check's own guard, unchanged
    assert measured_ratio("speed", idled.data) == idled.data["wall_ratio"] == 20.0  # the slower clock: x20
    honest = verdict(speed, refs, [timed(30, 30), timed(31, 31)], 64, "cpu")  # x3, slower but real
    assert 0 < honest.fraction < 1 and measured_ratio("speed", honest.data) == 3.0
    assert measured_ratio("speed", {"ratio": 0.5, "wall_ratio": 0.7}) == 0.7


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "course.toml"
    path.write_text(text)
    return path


def test_the_leaderboard_is_off_unless_course_toml_turns_it_on(tmp_path: Path):
    topics = ("prng",)
    assert rules.load(None, topics).leaderboard.enabled is False
    assert rules.load(write(tmp_path, 'timezone = "UTC"\n'), topics).leaderboard.enabled is False
    assert rules.load(write(tmp_path, "[leaderboard]\nenabled = true\n"), topics).leaderboard.enabled is True


@pytest.mark.parametrize(
    "text, named",
    [
        ("[leaderboard]\nenable = true\n", "leaderboard.enable: not a key of this table (misspelt?)"),
        ('[leaderboard]\nenabled = "yes"\n', "leaderboard.enabled: Input should be a valid boolean"),
        ("leaderboard = true\n", "leaderboard:"),
    ],
)
def test_a_faulty_leaderboard_table_is_refused_naming_its_key(tmp_path: Path, text: str, named: str):
    with pytest.raises(rules.RulesError) as refused:
        rules.load(write(tmp_path, text), ("prng",))
    assert named in str(refused.value) and "course.toml" in str(refused.value)

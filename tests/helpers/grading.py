"""Helpers of the tests that grade: paths, limits, grading a folder or a crafted submission, reading
a result, and the adversarial tests' "attack beside its honest twin" comparison.

Imported as `from helpers.grading import ...` from any folder of tests/ (pyproject.toml puts tests/ on
sys.path). The fixtures built on these (`graded_solutions`, `graded_stubs`, `crafted`) are in
tests/conftest.py.
"""

from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import json
import os
import re
import textwrap
from pathlib import Path

import pytest

from helpers.crafted import ROOT, SOLUTIONS, SUBMISSIONS, crafted_source, submission_source
from jaxlings import public
from jaxlings.grading import engine, results, topics
from jaxlings.grading.results import Result, TestResult
from jaxlings.isolation import Limits, bwrap_available

EXERCISES = ROOT / "exercises"

# Short limits keep the tests that hang or hog on purpose quick.
TEST_LIMITS = Limits(memory_bytes=3 << 30, output_bytes=256 << 10, call_timeout=60.0)
# For the tests that hang on purpose.
HANG_LIMITS = Limits(memory_bytes=3 << 30, output_bytes=256 << 10, call_timeout=15.0)

needs_bwrap = pytest.mark.skipif(
    not bwrap_available(), reason="bubblewrap is not installed (apt-get install bubblewrap)"
)


def grade_dir(
    folder: Path,
    names: list[str] | None = None,
    *,
    public: bool = False,
    isolate: bool = False,
    seed: int | None = None,
    limits: Limits = TEST_LIMITS,
    jobs: int = 1,
) -> Result:
    """Grade a folder of topic files against the reference solutions (`jobs` topics at a time)."""
    return engine.grade(
        folder,
        topics.resolve(names),
        reference_dir=SOLUTIONS,
        public=public,
        seed=seed,
        isolate=isolate,
        limits=limits,
        jobs=jobs,
    )


def check_dir(folder: Path, names: list[str] | None = None, limits: Limits = TEST_LIMITS, jobs: int = 1) -> Result:
    """Grade a folder as `grade check` does: public specs, answers replayed from the public
    expectations, no reference solution (`jobs` topics, or parts of one, at a time)."""
    return engine.grade(
        folder, topics.resolve(names, public=True), public=True, limits=limits, answers=public.replay, jobs=jobs
    )


def write_submission(folder: Path, files: dict[str, str]) -> Path:
    """A submission folder holding `files` (topic name -> source)."""
    folder.mkdir(parents=True, exist_ok=True)
    for topic, source in files.items():
        (folder / f"{topic}.py").write_text(textwrap.dedent(source))
    return folder


def grade_variant(
    tmp_path_factory, topic: str, variant: str, names: list[str] | None = None, limits: Limits = TEST_LIMITS
) -> Result:
    """Grade tests/submissions/<topic>__<variant>.py as a submission (all of `topic`, or `names`),
    in hidden mode, once per run whoever asks: the first test process to ask for a (file, names,
    limits) grades it and writes its results.json to a folder all the run's processes share (a
    lock per key), the others wait for it; every asker reads the file back, so all see the data
    a results.json holds (as `graded_solutions`). The topic tests and tests/student/test_messages
    ask for the same gradings."""
    from jaxlings.student.client import result_of

    names = names or [topic]
    key = hashlib.sha1(repr((sorted(names), dataclasses.astuple(limits))).encode()).hexdigest()[:12]
    shared = _run_folder(tmp_path_factory, "crafted_hidden") / f"{topic}__{variant}-{key}.json"
    with open(shared.with_suffix(".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not shared.exists():
            folder = tmp_path_factory.mktemp(f"{topic}_{variant}")
            (folder / f"{topic}.py").write_text(crafted_source(f"{topic}__{variant}"))
            grade_dir(folder, names, limits=limits).write(shared)
    return result_of(json.loads(shared.read_text()))


def _run_folder(tmp_path_factory, name: str) -> Path:
    """A folder every test process of this run shares (xdist workers' base temps are folders
    of the run's), made on first use."""
    base = tmp_path_factory.getbasetemp()
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    folder = (base.parent if worker else base) / f"{name}-{os.environ.get('PYTEST_XDIST_TESTRUNUID', 'master')}"
    folder.mkdir(exist_ok=True)
    return folder


def crafted_stems() -> list[str]:
    """Every crafted submission under tests/submissions/, as `topic__variant`."""
    return sorted(path.stem for path in SUBMISSIONS.glob("*__*.py"))


def grade_crafted_public(stem: str, folder: Path) -> Result:
    """tests/submissions/<stem>.py graded as its topic's submission in public mode, with the
    engine's live reference (the public checks `grade check` runs, the verdicts the student
    package must give): written to `folder/<stem>.json` once, read back from it after (the
    `crafted_public` fixture shares the folder between test processes)."""
    from jaxlings.student.client import result_of

    saved = folder / f"{stem}.json"
    with open(folder / f"{stem}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not saved.exists():
            topic = stem.split("__")[0]
            submission = folder / stem
            submission.mkdir(exist_ok=True)
            (submission / f"{topic}.py").write_text(crafted_source(stem))
            grade_dir(submission, [topic], public=True, jobs=engine.default_jobs()).write(saved)
    return result_of(json.loads(saved.read_text()))


def verdicts(result: Result) -> dict[str, tuple[float, float, str]]:
    """Test name -> (score, max_score, message)."""
    return {t.name: (t.score, t.max_score, t.output) for t in result.tests}


def failing(result: Result) -> set[str]:
    """Names of the tests that did not get full marks."""
    return {t.name for t in result.tests if t.score < t.max_score}


def synthetic_result(*tests: tuple[str, float, float, dict]) -> Result:
    """A Result made of `(topic.exercise:check, score, points, extra_data)` rows, for the tests
    of the suite's own comparisons."""
    return Result(
        [
            TestResult(
                name,
                score,
                points,
                "passed" if score >= points else "failed",
                f"{name} message",
                "visible",
                name.replace(":", ".").split("."),
                data,
            )
            for name, score, points, data in tests
        ],
        1.0,
        {},
    )


CLOCK_NOISE = 2.0
"""A right function timed against the reference reads up to about x1.6 on these shared machines
(the reference against itself: x1.54 on jit_basics.bce_fast and x1.59 on prng.noisy_walk, in CI
runs). Below this ratio a timed test short of full marks is the clock's noise, not a verdict on
a right function. Only for positives: the tests of slow versions assert ratios of 3 and more."""


def short_of_full_marks(result: Result) -> set[str]:
    """`failing(result)` less the timed tests whose shortfall is the clock's noise: a `speed`
    test whose ratio reads under `CLOCK_NOISE`, a `vmc` test with its accuracy half earned and
    every run's ratio under it. For "a right submission gets full marks"."""

    def noise(t: TestResult) -> bool:
        data = t.extra_data or {}
        if t.check == "speed":
            return data.get("ratio") is not None and data["ratio"] < CLOCK_NOISE
        if t.check == "vmc":
            return t.score >= t.max_score / 2 - 1e-9 and bool(data.get("ratios")) and max(data["ratios"]) < CLOCK_NOISE
        return False

    return {t.name for t in result.tests if t.score < t.max_score and not noise(t)}


def failing_in(result: Result, topic: str, exercise: str) -> set[str]:
    """Names of one exercise's tests that did not get full marks."""
    return {n for n in failing(result) if n.startswith(f"{topic}.{exercise}:")}


def extra_data(result: Result, name: str) -> dict:
    """The measured figures of the test called `name` (`topic.exercise:check`)."""
    return next(t.extra_data for t in result.tests if t.name == name)


@dataclasses.dataclass(frozen=True)
class TopicView:
    """One topic's tests of a result, read per exercise and check (for the topic test files)."""

    topic: str

    def failed(self, result: Result, exercise: str) -> set[str]:
        """The checks of one exercise that did not get full marks."""
        prefix = f"{self.topic}.{exercise}:"
        return {name.removeprefix(prefix) for name in failing(result) if name.startswith(prefix)}

    def message(self, result: Result, exercise: str, check: str) -> str:
        return verdicts(result)[f"{self.topic}.{exercise}:{check}"][2]

    def data(self, result: Result, exercise: str, check: str) -> dict:
        return extra_data(result, f"{self.topic}.{exercise}:{check}")


def reference_solutions(request: pytest.FixtureRequest, topic: str) -> Result:
    """The reference solutions graded on `topic`, for a topic module's `reference` fixture. Where
    this run grades the whole course anyway (a selected test uses `graded_solutions`), the
    topic's part of that one grading (its platform included), not one grading more per module;
    else the topic alone."""
    if not any("graded_solutions" in item.fixturenames for item in request.session.items):
        return grade_dir(SOLUTIONS, [topic])
    whole: Result = request.getfixturevalue("graded_solutions")
    entry = whole.extra_data["topics"][topic]
    return Result(
        [t for t in whole.tests if t.topic == topic],
        entry["seconds"],
        {**whole.extra_data, "platform": entry["platform"], "topics": {topic: entry}},
    )


def module_source(name: str, **settings: object) -> str:
    """tests/submissions/<name>.py as it grades (a `PATCH` file applied to the reference first),
    with module-level `NAME = value` lines replaced."""
    source = submission_source(SUBMISSIONS / f"{name}.py")
    for key, value in settings.items():
        source, n = re.subn(rf"^{key} = .*$", f"{key} = {value!r}", source, count=1, flags=re.M)
        assert n == 1, f"{name}.py has no `{key} = ...` line"
    return source


# -- a hostile submission beside its honest twin (test_trust, test_programs_from_shapes, test_stream_inputs) --

TIMED_SHARE = {"speed": 1.0, "vmc": 0.5}  # the share of a check's points that rests on a time
TIMING_TOLERANCE = 0.25  # of those points
OWN_TIME_SHARE = 0.5  # of the twin's clock reading, below which a timed gain is an attack's


def grade_source(folder: Path, topic: str, source: str, names: list[str], limits: Limits = TEST_LIMITS) -> Result:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{topic}.py").write_text(source)
    return grade_dir(folder, names, isolate=True, limits=limits)


def attack_and_twin(tmp_path: Path, name: str, names: list[str], **settings: object) -> tuple[Result, Result]:
    """Grade the attack (as written, with `settings`) and its honest twin (ATTACK = False)."""
    topic = name.split("__")[0]
    attack = grade_source(tmp_path / "attack", topic, module_source(name, **settings), names)
    honest = grade_source(tmp_path / "honest", topic, module_source(name, **settings, ATTACK=False), names)
    return attack, honest


def expected_tests(names: list[str]) -> set[str]:
    return {
        f"{t.name}.{ex.name}:{check}"
        for t in topics.resolve(names)
        for ex in t.exercises
        for check in (c.name for c in ex.checks)
    }


def table(result: Result) -> str:
    return "\n".join(f"  {t.name}: {t.score:g}/{t.max_score:g} {t.output[:160]!r}" for t in result.tests)


def assert_complete(result: Result, names: list[str]) -> None:
    """Every test of the graded exercises is present, once, each with a message."""
    got = [t.name for t in result.tests]
    assert sorted(got) == sorted(expected_tests(names)), f"incomplete result:\n{table(result)}"
    assert all(t.output.strip() for t in result.tests), f"a test without a message:\n{table(result)}"


def own_seconds(test: results.TestResult) -> float | None:
    """The time the grader's clock read for the student's side of a timed test (the slowest
    `vmc` run), or None where the test timed nothing."""
    data = test.extra_data or {}
    if "student_ms" in data:
        return data["student_ms"] / 1e3
    if data.get("student_seconds"):
        return max(data["student_seconds"])
    return None


def assert_gains_nothing(attack: Result, honest: Result, names: list[str]) -> None:
    """No test, and not the total, scores more for the attack than for its honest twin
    (beyond the timing tolerance on timed checks).

    A timed test's score is a ratio to the reference, timed anew in each of the two gradings, so
    the reference's own noise moves it (one run read 3.55 ms, the other 5.36 ms, for the same
    reference). A timed test that scored above the tolerance is therefore also judged by what
    the clock read for the student: an attack that moved its work out of the clock reads a
    fraction of its twin's time (the twins do several times the reference's work); one whose
    clock read at least `OWN_TIME_SHARE` of its twin's did its work inside the clock, and the
    surplus is the reference's noise."""
    assert_complete(attack, names)
    assert_complete(honest, names)
    report = f"attack:\n{table(attack)}\nhonest twin:\n{table(honest)}"
    slack = {t.name: TIMING_TOLERANCE * TIMED_SHARE.get(t.check, 0.0) * t.max_score for t in honest.tests}
    twin = {t.name: t for t in honest.tests}
    excused = 0.0
    for t in attack.tests:
        gain = t.score - twin[t.name].score - slack[t.name]
        if gain <= 1e-9:
            continue
        mine, theirs = own_seconds(t), own_seconds(twin[t.name])
        seen = TIMED_SHARE.get(t.check, 0.0) > 0 and mine is not None and theirs is not None
        assert seen and mine >= OWN_TIME_SHARE * theirs, f"{t.name} gained points\n{report}"
        excused += gain
    assert attack.score <= honest.score + sum(slack.values()) + excused + 1e-9, f"the attack gained points\n{report}"


def score_of(result: Result, name: str) -> float:
    return next(t.score for t in result.tests if t.name == name)

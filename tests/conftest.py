"""Shared fixtures: grading real submissions with real worker processes.

Grading is the slow part of the suite, so results that several tests read (the reference
solutions graded, the stubs graded) are computed once per session; the reference's once per
run, whatever the number of test processes (`graded_solutions`).
"""

from __future__ import annotations

import dataclasses
import fcntl
import json
import os
import re
import shutil
import textwrap
from pathlib import Path

import pytest

from autograder import engine, public, topics
from autograder.results import Result, TestResult
from autograder.sandbox import Limits, bwrap_available

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"
EXERCISES = ROOT / "exercises"
SUBMISSIONS = Path(__file__).resolve().parent / "submissions"

# Short limits keep the tests that hang or hog on purpose quick.
TEST_LIMITS = Limits(memory_bytes=3 << 30, output_bytes=256 << 10, call_timeout=60.0)
# For the tests that hang on purpose.
HANG_LIMITS = Limits(memory_bytes=3 << 30, output_bytes=256 << 10, call_timeout=15.0)

needs_bwrap = pytest.mark.skipif(not bwrap_available(), reason="bubblewrap is not installed (apt-get install bubblewrap)")


def grade_dir(folder: Path, names: list[str] | None = None, *, public: bool = False, isolate: bool = False,
              seed: int | None = None, limits: Limits = TEST_LIMITS, jobs: int = 1) -> Result:
    """Grade a folder of topic files against the reference solutions (`jobs` topics at a time)."""
    return engine.grade(folder, topics.resolve(names), reference_dir=SOLUTIONS, public=public, seed=seed,
                        isolate=isolate, limits=limits, jobs=jobs)


def check_dir(folder: Path, names: list[str] | None = None, limits: Limits = TEST_LIMITS, jobs: int = 1) -> Result:
    """Grade a folder as `grade check` does: public specs, answers replayed from the public
    expectations, no reference solution (`jobs` topics, or parts of one, at a time)."""
    return engine.grade(folder, topics.resolve(names, public=True), public=True, limits=limits, answers=public.replay,
                        jobs=jobs)


def write_submission(folder: Path, files: dict[str, str]) -> Path:
    """A submission folder holding `files` (topic name -> source)."""
    folder.mkdir(parents=True, exist_ok=True)
    for topic, source in files.items():
        (folder / f"{topic}.py").write_text(textwrap.dedent(source))
    return folder


def grade_variant(tmp_path_factory, topic: str, variant: str, names: list[str] | None = None,
                  limits: Limits = TEST_LIMITS) -> Result:
    """Grade tests/submissions/<topic>__<variant>.py as a submission (all of `topic`, or `names`)."""
    folder = tmp_path_factory.mktemp(f"{topic}_{variant}")
    shutil.copyfile(SUBMISSIONS / f"{topic}__{variant}.py", folder / f"{topic}.py")
    return grade_dir(folder, names or [topic], limits=limits)


def verdicts(result: Result) -> dict[str, tuple[float, float, str]]:
    """Test name -> (score, max_score, message)."""
    return {t.name: (t.score, t.max_score, t.output) for t in result.tests}


def failing(result: Result) -> set[str]:
    """Names of the tests that did not get full marks."""
    return {t.name for t in result.tests if t.score < t.max_score}


def synthetic_result(*tests: tuple[str, float, float, dict]) -> Result:
    """A Result made of `(topic.exercise:check, score, points, extra_data)` rows, for the tests
    of the suite's own comparisons."""
    return Result([TestResult(name, score, points, "passed" if score >= points else "failed", f"{name} message",
                              "visible", name.replace(":", ".").split("."), data)
                   for name, score, points, data in tests], 1.0, {})


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


@pytest.fixture(scope="session")
def graded_solutions(tmp_path_factory: pytest.TempPathFactory, worker_id: str, testrun_uid: str) -> Result:
    """Every topic of the reference, graded as the service grades (topics side by side), once per
    run: with several test processes (pytest-xdist) the first to need it grades and writes the
    results.json, the others wait for it and read it. Every process reads the file back, so all
    see the same data, as a results.json holds it."""
    from autograder.service.client import result_of

    folder = tmp_path_factory.getbasetemp()
    shared = (folder if worker_id == "master" else folder.parent) / f"graded_solutions-{testrun_uid}.json"
    with open(shared.with_suffix(".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not shared.exists():
            grade_dir(SOLUTIONS, jobs=engine.default_jobs()).write(shared)
    return result_of(json.loads(shared.read_text()))


def reference_solutions(request: pytest.FixtureRequest, topic: str) -> Result:
    """The reference solutions graded on `topic`, for a topic module's `reference` fixture. Where
    this run grades the whole course anyway (a selected test uses `graded_solutions`), the
    topic's part of that one grading (its platform included), not one grading more per module;
    else the topic alone."""
    if not any("graded_solutions" in item.fixturenames for item in request.session.items):
        return grade_dir(SOLUTIONS, [topic])
    whole: Result = request.getfixturevalue("graded_solutions")
    entry = whole.extra_data["topics"][topic]
    return Result([t for t in whole.tests if t.topic == topic], entry["seconds"],
                  {**whole.extra_data, "platform": entry["platform"], "topics": {topic: entry}})


@pytest.fixture(scope="session")
def graded_stubs() -> Result:
    return grade_dir(EXERCISES, jobs=engine.default_jobs())


@pytest.fixture
def crafted(tmp_path: Path):
    """Copy files from tests/submissions/ (named TOPIC__variant.py) into a submission folder."""

    def make(**variants: str) -> Path:
        folder = tmp_path / "submission"
        folder.mkdir(exist_ok=True)
        for topic, variant in variants.items():
            shutil.copyfile(SUBMISSIONS / f"{topic}__{variant}.py", folder / f"{topic}.py")
        return folder

    return make


def hub_on_loopback(tmp: Path, port: int) -> str:
    """JupyterHub config lines for a throwaway hub: loopback on `port`, its state in `tmp`."""
    from service_helpers import free_port

    return (f'c.JupyterHub.ip = "127.0.0.1"\nc.JupyterHub.port = {port}\nc.JupyterHub.hub_port = {free_port()}\n'
            f'c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{free_port()}"\n'
            f'c.JupyterHub.db_url = "sqlite:///{tmp}/hub.sqlite"\nc.JupyterHub.cookie_secret_file = "{tmp}/cookie_secret"\n')


def descendants_of_this_process() -> list[int]:
    """Live processes below the test process (zombies excluded)."""
    from autograder.sandbox import _descendants

    alive = []
    for pid in _descendants(os.getpid())[1:]:
        try:
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.append(pid)
    return alive


def command_lines() -> list[str]:
    """The command line of every process on the machine (to find one a test started)."""
    lines = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                lines.append(f.read().replace(b"\0", b" ").decode().strip())
        except OSError:
            pass
    return lines


def module_source(name: str, **settings: object) -> str:
    """tests/submissions/<name>.py with module-level `NAME = value` lines replaced."""
    source = (SUBMISSIONS / f"{name}.py").read_text()
    for key, value in settings.items():
        source, n = re.subn(rf"^{key} = .*$", f"{key} = {value!r}", source, count=1, flags=re.M)
        assert n == 1, f"{name}.py has no `{key} = ...` line"
    return source

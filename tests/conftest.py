"""Shared fixtures: grading real submissions with real worker processes, and the fast tier.

Grading is the slow part of the suite, so results that several tests read (the reference
solutions graded, the stubs graded) are computed once per session; the reference's once per
run, whatever the number of test processes (`graded_solutions`). The plain helpers these use,
and that test files import, are in tests/helpers/ (`from helpers.grading import ...`).
"""

from __future__ import annotations

import fcntl
import json
from pathlib import Path

import pytest

from helpers.grading import EXERCISES, SOLUTIONS, crafted_source, grade_crafted_public, grade_dir
from jaxlings.grading import engine
from jaxlings.grading.results import Result

TESTS = Path(__file__).resolve().parent


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test under tests/topics/ is `slow` (out of `make test-fast`): each topic file grades
    whole topics, the reference's and its crafted submissions', in module fixtures."""
    for item in items:
        if item.path.is_relative_to(TESTS / "topics"):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def graded_solutions(tmp_path_factory: pytest.TempPathFactory, worker_id: str, testrun_uid: str) -> Result:
    """Every topic of the reference, graded as the service grades (topics side by side), once per
    run: with several test processes (pytest-xdist) the first to need it grades and writes the
    results.json, the others wait for it and read it. Every process reads the file back, so all
    see the same data, as a results.json holds it."""
    from jaxlings.student.client import result_of

    folder = tmp_path_factory.getbasetemp()
    shared = (folder if worker_id == "master" else folder.parent) / f"graded_solutions-{testrun_uid}.json"
    with open(shared.with_suffix(".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not shared.exists():
            grade_dir(SOLUTIONS, jobs=engine.default_jobs()).write(shared)
    return result_of(json.loads(shared.read_text()))


@pytest.fixture(scope="session")
def crafted_public(tmp_path_factory: pytest.TempPathFactory, worker_id: str, testrun_uid: str):
    """`stem -> Result`: a crafted submission (tests/submissions/<stem>.py) graded in public
    mode, each once per run whoever asks (the student package's verdicts and the messages'
    wording are both judged on these), whatever the number of test processes: they share one
    folder, as `graded_solutions` does. Grading every crafted file takes about half an hour on
    two cores: the tests that ask for all of them are `slow`."""
    base = tmp_path_factory.getbasetemp()
    folder = (base if worker_id == "master" else base.parent) / f"crafted_public-{testrun_uid}"
    folder.mkdir(exist_ok=True)
    return lambda stem: grade_crafted_public(stem, folder)


@pytest.fixture(scope="session")
def graded_stubs() -> Result:
    return grade_dir(EXERCISES, jobs=engine.default_jobs())


@pytest.fixture
def crafted(tmp_path: Path):
    """Write crafted files from tests/submissions/ (named TOPIC__variant.py) into a submission
    folder, as submissions (a patch file as the reference with its definitions: `crafted_source`)."""

    def make(**variants: str) -> Path:
        folder = tmp_path / "submission"
        folder.mkdir(exist_ok=True)
        for topic, variant in variants.items():
            (folder / f"{topic}.py").write_text(crafted_source(f"{topic}__{variant}"))
        return folder

    return make

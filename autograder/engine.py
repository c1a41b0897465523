"""The grading engine: a submission and a list of topics in, a `Result` out.

One engine serves `grade check` (public cases, fixed seed), `grade grade` (hidden cases,
fresh seed), nbgrader and the service. Topics are graded one after another, each in its own
pair of workers (see `session.TopicSession`), so anything a topic does costs that topic
only. Every check of every exercise yields a test, failed or passed, so a result is always
complete.
"""

from __future__ import annotations

import secrets
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Callable

from autograder.answers import Live
from autograder.checks import NEEDS_CORRECT, REGISTRY
from autograder.results import Outcome, Result, TestResult
from autograder.sandbox import Limits
from autograder.session import GraderError, StudentError, TopicSession
from autograder.spec import Exercise, Topic

PUBLIC_SEED = 0
# Gradescope visibility of every test: no message ever carries an expected value, so all show.
VISIBILITY = "visible"
Listener = Callable[[TestResult], None]
AnswersFor = Callable[[str], Live]


def grade(submission: Path, topics: list[Topic], *, reference_dir: Path | None = None, public: bool = False,
          seed: int | None = None, isolate: bool = False, limits: Limits = Limits(), on_test: Listener | None = None,
          answers: AnswersFor | None = None) -> Result:
    """Grade the `<topic>.py` files found in `submission`.

    `reference_dir` holds the reference solutions (`<topic>.py`), run live in a trusted worker;
    `answers(topic_name)` instead gives each topic's `autograder.answers` object (e.g. a
    `Replay` of the public expectations, which needs no reference at all). `public` runs the
    public cases (seed 0, no hidden edge cases; checks that need the grading machine are
    "judged on submission"). `isolate` sandboxes the student's worker. `on_test` is called
    with every test as it finishes.
    """
    started = time.monotonic()
    seed = PUBLIC_SEED if public and seed is None else (seed if seed is not None else secrets.randbits(32))
    tests: list[TestResult] = []
    summary: dict[str, dict] = {}
    platform: dict = {}
    for topic in topics:
        t0 = time.monotonic()
        module = Path(submission) / f"{topic.name}.py"
        reference = Path(reference_dir) / f"{topic.name}.py" if reference_dir is not None else None
        timings: dict = {}
        if not module.is_file():
            topic_tests = failed_topic(topic, f"the submission has no {topic.name}.py")
        else:
            topic_tests, platform = grade_topic(topic, module, reference, seed, public=public, isolate=isolate,
                                                limits=limits, on_test=on_test,
                                                answers=answers(topic.name) if answers else None, timings=timings)
        tests += topic_tests
        summary[topic.name] = {
            "score": round(sum(t.score for t in topic_tests), 4),
            "max_score": round(sum(t.max_score for t in topic_tests), 4),
            "seconds": round(time.monotonic() - t0, 2),
            "timings": timings,
        }
    extra = {"seed": seed, "mode": "public" if public else "hidden", "platform": platform, "topics": summary,
             "sandbox": "on" if isolate else "off", "reference": "recorded" if answers else "live"}
    if not isolate and not public:
        extra["sandbox_warning"] = ("student code ran without the sandbox: it could read files and reach the "
                                    "network, and its verdicts are not protected against a hostile submission")
    return Result(tests, time.monotonic() - started, extra)


def grade_topic(topic: Topic, module: Path, reference: Path | None, seed: int, *, public: bool, isolate: bool,
                limits: Limits = Limits(), on_test: Listener | None = None,
                answers: Live | None = None, timings: dict | None = None) -> tuple[list[TestResult], dict]:
    """All tests of one topic, from a private copy of the student's module. `timings` (when
    given) receives where the time went: the workers' start, and per exercise the reference's
    outputs ("cases") and each check, in seconds (see `benchmarks/bench.py`)."""
    timings = {} if timings is None else timings
    with tempfile.TemporaryDirectory(prefix=f"jaxlings-{topic.name}-") as tmp:
        private = Path(tmp) / module.name
        shutil.copyfile(module, private)
        t0 = time.monotonic()
        with TopicSession(topic, private, reference, seed, public=public, isolate=isolate, limits=limits,
                          answers=answers) as session:
            timings["start"] = round(time.monotonic() - t0, 3)
            if session.load_error:
                return failed_topic(topic, session.load_error), session.platform
            tests = []
            for ex in topic.exercises:
                for test in grade_exercise(session, ex, timings.setdefault("exercises", {}).setdefault(ex.name, {})):
                    tests.append(test)
                    if on_test:
                        on_test(test)
            return tests, session.platform


def grade_exercise(session: TopicSession, ex: Exercise, timings: dict | None = None) -> list[TestResult]:
    """Run the exercise's checks in order: `correct`, `jit`, then the rest as declared; each
    one's seconds (and the cases') go into `timings`."""
    timings = {} if timings is None else timings
    t0 = time.monotonic()
    run = session.start_exercise(ex)
    timings["cases"] = round(time.monotonic() - t0, 3)
    tests = []
    died_in = None
    for check in ordered_checks(ex):
        t0 = time.monotonic()
        deaths = session.deaths
        if died_in:
            outcome = Outcome.fail(f"not run: the function took its process down in the `{died_in}` check")
        elif check in NEEDS_CORRECT and not run.passed.get("correct"):
            outcome = Outcome.fail("not judged until the function is correct")
        else:
            try:
                outcome = REGISTRY[check](session, run)
            except StudentError as exc:
                outcome = Outcome.fail(str(exc))
            except GraderError:
                raise
            except Exception as exc:  # noqa: BLE001 - one check's surprise must not lose the result
                outcome = internal_error(exc)
        if session.deaths > deaths:
            died_in = check
        run.passed[check] = outcome.fraction >= 1.0
        timings[check] = round(time.monotonic() - t0, 3)
        tests.append(TestResult.of(session.topic.name, ex.name, check, ex.checks[check], outcome, VISIBILITY))
    return tests


def internal_error(exc: Exception) -> Outcome:
    """A check that failed in an unforeseen way (a reply shaped as no schema foresaw, a grader
    bug): the test fails with the reason, the traceback goes to stderr and into the test's
    data, and the rest of the run goes on, so that the result stays complete."""
    trace = traceback.format_exc()
    print(trace, file=sys.stderr)
    return Outcome.fail(f"the grader could not judge this check ({type(exc).__name__}: {exc}); "
                        "please report it", internal_error=trace[-2000:])


def ordered_checks(ex: Exercise) -> list[str]:
    """`correct` and `jit` first (others depend on them), then the declared order."""
    first = [c for c in ("correct", "jit") if c in ex.checks]
    return first + [c for c in ex.checks if c not in first]


def failed_topic(topic: Topic, reason: str) -> list[TestResult]:
    """Every test of a topic at zero, each with the reason (a missing or unimportable module)."""
    return [
        TestResult.of(topic.name, ex.name, check, ex.checks[check], Outcome.fail(reason), VISIBILITY)
        for ex in topic.exercises
        for check in ordered_checks(ex)
    ]

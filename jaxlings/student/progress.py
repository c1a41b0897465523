"""Progress, defined once: what `grade list`, `grade check`, `grade watch` and the notebook count and show.

Every check of an exercise is in one of these states (`status`):

- "passed": judged here and passed;
- "failed": judged here and not fully passed (a check that waits for another one counts here);
- "pending": judged on submission only (speed in a public run): neither passed nor failed;
- "advisory": a 0-point check (key reuse) that left advice; "advisory-quiet": one that passed or
  was not judged (it waits, or the function is a stub); both kept apart, never in the pass/fail counts;
- not yet checked: no verdict known for it (absent from `known`).

`Counts` tallies these per exercise, topic or course (`counts`). `next_unfinished` names the first
exercise, in course order, with a check that failed or was never checked. `rows` turns a run's
tests into what a screen shows, one cause once: a topic that does not import is one row, a stub
exercise one row (a topic of stubs one row), and the checks that wait for another one a single
"waits for correct" row per exercise. results.json still keeps one test per (exercise, check).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from jaxlings.grading.results import TestResult
from jaxlings.grading.spec import Topic

Status = Literal["passed", "failed", "pending", "advisory", "advisory-quiet"]
Kind = Literal["pass", "fail", "partial", "pending", "advice", "waits"]
SYMBOLS: dict[str, str] = {"pass": "✓", "fail": "✗", "partial": "~", "pending": "…", "advice": "!", "waits": "·"}
"""How each `Kind` is marked wherever a verdict is shown (terminal, watch screen, notebook): ✓ passed,
✗ failed, ~ partial, … judged on submission, ! advice (a 0-point check), · waits for another check."""
STATUSES: tuple[str, ...] = ("passed", "failed", "pending", "advisory", "advisory-quiet")
WAITING_PREFIX = "not judged until"


# -- one test ----------------------------------------------------------------------------------


def is_advisory(test: TestResult) -> bool:
    """A 0-point check: it gives advice, never points (`Check.advisory`)."""
    return test.max_score == 0


def is_waiting(test: TestResult) -> bool:
    """Not judged because a check it requires did not pass ("not judged until ... is correct")."""
    return test.status != "passed" and (test.extra_data.get("waits") is True or test.output.startswith(WAITING_PREFIX))


def status(test: TestResult) -> Status:
    """The test's state in the progress counts (see the module's docstring)."""
    if is_advisory(test):
        quiet = test.status == "passed" or is_waiting(test) or _is_stub(test)
        return "advisory-quiet" if quiet else "advisory"
    if test.pending:
        return "pending"
    return "passed" if test.status == "passed" else "failed"


def kind(test: TestResult) -> Kind:
    """How a screen marks the test: pass, fail, partial (some points), pending, advice (a 0-point
    check with something to say) or waits (not judged until another check passes)."""
    if test.pending:
        return "pending"
    if test.status == "passed":
        return "pass"
    if is_waiting(test):
        return "waits"
    if is_advisory(test):
        return "advice"
    return "partial" if test.score > 0 else "fail"


def points_text(test: TestResult) -> str:
    """ "2/2", "0/3", "–/2" for a pending check, "" for a 0-point one."""
    if is_advisory(test):
        return ""
    if test.pending:
        return f"–/{test.max_score:g}"
    return f"{test.score:g}/{test.max_score:g}"


def statuses(tests: Iterable[TestResult]) -> dict[str, Status]:
    """Test name -> status: what `report.save_last_check` remembers and `counts` reads."""
    return {t.name: status(t) for t in tests}


# -- counting ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Counts:
    """Checks by state. `advisory` counts 0-point checks that left advice; they are never in
    `total`. `unchecked` counts pointed checks with no verdict known."""

    passed: int = 0
    failed: int = 0
    pending: int = 0
    advisory: int = 0
    unchecked: int = 0

    def __add__(self, other: Counts) -> Counts:
        return Counts(
            self.passed + other.passed,
            self.failed + other.failed,
            self.pending + other.pending,
            self.advisory + other.advisory,
            self.unchecked + other.unchecked,
        )

    @property
    def total(self) -> int:
        """The checks worth points: passed + failed + pending + unchecked."""
        return self.passed + self.failed + self.pending + self.unchecked

    @property
    def finished(self) -> bool:
        """Nothing left to do here: every pointed check checked, none failed (pending is fine)."""
        return self.total > 0 and self.failed == 0 and self.unchecked == 0

    @property
    def started(self) -> bool:
        """Some check has a verdict."""
        return self.unchecked < self.total


def counts(topic: Topic, known: Mapping[str, str], exercise: str | None = None) -> Counts:
    """The checks of `topic` (of its `exercise` only, when given) by state, from `known` (test
    name -> status, from `statuses` or the last-check memory)."""
    tally = {"passed": 0, "failed": 0, "pending": 0, "advisory": 0, "unchecked": 0}
    for ex in topic.exercises:
        if exercise is not None and ex.name != exercise:
            continue
        for check in ex.checks:
            state = known.get(f"{topic.name}.{ex.name}:{check.name}")
            if check.points == 0:
                tally["advisory"] += state == "advisory"
            elif state in ("passed", "failed", "pending"):
                tally[state] += 1
            else:
                tally["unchecked"] += 1
    return Counts(**tally)


def tally(tests: Iterable[TestResult]) -> Counts:
    """The checks of a run's `tests` by state (nothing is unchecked: only what ran is counted)."""
    tally = {"passed": 0, "failed": 0, "pending": 0, "advisory": 0, "advisory-quiet": 0}
    for t in tests:
        tally[status(t)] += 1
    return Counts(tally["passed"], tally["failed"], tally["pending"], tally["advisory"])


def course_counts(specs: Iterable[Topic], known: Mapping[str, str]) -> Counts:
    """`counts` summed over `specs` (the course: every topic's public spec)."""
    total = Counts()
    for spec in specs:
        total += counts(spec, known)
    return total


def next_unfinished(specs: Iterable[Topic], known: Mapping[str, str]) -> tuple[str, str] | None:
    """(topic, exercise) of the first exercise of `specs` (pass them in course order, topics.ORDER)
    with a failed or never-checked check; None when every one is finished."""
    for spec in specs:
        for ex in spec.exercises:
            if not counts(spec, known, ex.name).finished:
                return spec.name, ex.name
    return None


def describe(c: Counts) -> str:
    """The counts in words, the same everywhere: "5/8 checks pass, 2 judged on submission, 1 not
    checked yet, 1 advice"."""
    parts = [f"{c.passed}/{c.total} checks pass"]
    if c.failed:
        parts.append(f"{c.failed} to fix")
    if c.pending:
        parts.append(f"{c.pending} judged on submission")
    if c.unchecked:
        parts.append(f"{c.unchecked} not checked yet")
    if c.advisory:
        parts.append(f"{c.advisory} advice")
    return ", ".join(parts)


# -- rows: one cause, once ---------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One line of a results screen. `exercise` None: the row stands for the whole topic (it does
    not import, or none of it is written yet); `check` None: for every check of the exercise (a
    stub); a waits row names its checks joined by ", "."""

    topic: str
    exercise: str | None
    check: str | None
    kind: Kind
    points: str
    message: str


def rows(tests: list[TestResult]) -> list[Row]:
    """What a screen shows for `tests` (any topics, in their order), one cause once."""
    by_topic: dict[str, list[TestResult]] = {}
    for t in tests:
        by_topic.setdefault(t.topic, []).append(t)
    return [row for topic, mine in by_topic.items() for row in _topic_rows(topic, mine)]


def _sum_points(tests: list[TestResult]) -> str:
    return f"{sum(t.score for t in tests):g}/{sum(t.max_score for t in tests):g}"


def _is_stub(test: TestResult) -> bool:
    return bool(test.extra_data.get("stub"))


def _topic_rows(topic: str, tests: list[TestResult]) -> list[Row]:
    """A topic's rows: one for a cause every test shares (an import error), one for a topic of
    stubs, else per exercise."""
    exercises: dict[str, list[TestResult]] = {}
    for t in tests:
        exercises.setdefault(t.exercise, []).append(t)
    if len(tests) > 1 and all(t.status != "passed" and t.score == 0 and not t.pending for t in tests):
        if len({t.output for t in tests}) == 1 and not any(_is_stub(t) for t in tests):
            return [Row(topic, None, None, "fail", _sum_points(tests), tests[0].output)]
    if len(exercises) > 1 and all(_is_stub(t) for t in tests):
        first = next(iter(exercises))
        message = (
            f"none of the {len(exercises)} functions written yet: start with {first} "
            f"(stuck? `grade hint {topic}.{first}`)"
        )
        return [Row(topic, None, None, "fail", _sum_points(tests), message)]
    return [row for ex, mine in exercises.items() for row in _exercise_rows(topic, ex, mine)]


def _waits_message(test: TestResult) -> str:
    """ "waits for correct" from "not judged until the function is correct" (and `jit` alike)."""
    text = test.output
    if "is correct" in text:
        return "waits for correct"
    if "`" in text:
        return f"waits for {text.split('`')[1]}"
    return text


def _exercise_rows(topic: str, ex: str, tests: list[TestResult]) -> list[Row]:
    """An exercise's rows: one for a stub, else one per check, the checks that wait for the same
    one folded into a single row where the first of them stands."""
    if all(_is_stub(t) for t in tests):
        said = next((t.output for t in tests if not is_waiting(t)), tests[0].output)
        return [Row(topic, ex, None, "fail", _sum_points(tests), said)]
    waiting: dict[str, list[TestResult]] = {}
    for t in tests:
        if kind(t) == "waits":
            waiting.setdefault(_waits_message(t), []).append(t)
    out: list[Row] = []
    for t in tests:
        if kind(t) != "waits":
            out.append(Row(topic, ex, t.check, kind(t), points_text(t), t.output))
            continue
        message = _waits_message(t)
        group = waiting[message]
        if t is group[0]:
            out.append(Row(topic, ex, ", ".join(g.check for g in group), "waits", _sum_points(group), message))
    return out

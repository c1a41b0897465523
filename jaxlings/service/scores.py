"""Which score counts: the one definition the gradebook, its pages, the CSV and every export read.

- A submission's result is its **latest complete grading** (`Submission.result_json`, the newest
  of its `GradeResult` rows). A regrade queued, running or failed stores nothing, so the result
  before it stays shown and counted until the new one is stored; then the new one counts, even
  when it is lower (a regrade is how an instructor corrects a grade).
- A student's score for a topic is the **best topic score over their submissions' results**; on
  a tie, the earliest submission counts (its time is when the server received it). The
  per-exercise scores shown and exported for that topic are that one submission's, so they
  always add up to the topic's score.
- A topic a student never submitted counts 0 of its maximum; maxima come from the course's
  outline (`outline()`), not from whoever happened to submit.
- Dropped students (`Student.dropped_at`) are left out of the gradebook and its exports.
- A late submission counts its topic score times what the course's late policy keeps
  (`jaxlings.grading.rules`, the student's extension applied, the time the server received it); the
  best is taken after that, so an on-time 7 beats a late 8 that keeps 75%. The raw score and the
  factor stay beside the counted one. Worked out whenever a score counts, never stored, so a
  changed rule or a granted extension re-counts what is already stored.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from typing import TYPE_CHECKING, Any

from jaxlings.grading import rules
from jaxlings.grading.results import measured_ratio
from jaxlings.service import deadlines
from jaxlings.service.db import Student, Submission

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

Keeps = Callable[[str, dt.datetime], float]
"""(topic, time received) -> the fraction of its score a submission keeps under the late policy."""


@dataclass(frozen=True)
class ExerciseScore:
    """One exercise of one graded topic: points earned of its maximum, the checks short of full
    marks (`"jit"`, `"speed"`), those not judged yet (pending on the grading machine), and the
    time ratio its speed check measured on the grading machine (None: not measured;
    `results.measured_ratio`), which the speed leaderboard ranks."""

    score: float
    max_score: float
    failed: tuple[str, ...] = ()
    pending: tuple[str, ...] = ()
    ratio: float | None = None


@dataclass(frozen=True)
class TopicScore:
    """A topic's score in one submission's result: `score` is what counts (`raw_score` times the
    late policy's `factor`); the exercises' points are the raw ones, adding up to `raw_score`."""

    topic: str
    score: float
    max_score: float
    submission_id: int
    submitted_at: dt.datetime
    exercises: dict[str, ExerciseScore] = field(default_factory=dict)
    raw_score: float = -1.0  # set from `score` when not given
    factor: float = 1.0

    def __post_init__(self) -> None:
        if self.raw_score < 0:
            object.__setattr__(self, "raw_score", self.score)

    @property
    def late(self) -> bool:
        """Whether the late policy took something off."""
        return self.factor < 1.0

    def kept(self, factor: float) -> TopicScore:
        """This result as it counts when it keeps `factor` of its raw score."""
        return replace(self, score=round(self.raw_score * factor, 4), factor=factor)


@dataclass(frozen=True)
class Outline:
    """The course's topics in order, each topic's exercises in order with their points."""

    exercises: dict[str, dict[str, float]]

    @property
    def topics(self) -> list[str]:
        return list(self.exercises)

    def max_score(self, topic: str) -> float:
        return float(sum(self.exercises.get(topic, {}).values()))

    @property
    def total(self) -> float:
        return float(sum(self.max_score(t) for t in self.exercises))


@cache
def _topic_points(topic: str) -> dict[str, float]:
    """exercise -> points, read from the topic's public expectations (no JAX import needed)."""
    from jaxlings import public

    doc = json.loads(public.path_for(topic).read_text())
    return {
        e["name"]: float(sum(c.get("points", 0) for c in e["checks"]["$tuple"]))
        for e in doc["spec"]["exercises"]["$tuple"]
    }


def outline(topics: Sequence[str]) -> Outline:
    """The outline of these topics (the service's `AppState.topics`, in course order)."""
    return Outline({t: _topic_points(t) for t in topics})


def topic_results(sub: Submission) -> dict[str, TopicScore]:
    """topic -> its score in this submission's latest complete result ({} before the first)."""
    if not sub.result_json:
        return {}
    doc = json.loads(sub.result_json)
    topics = doc.get("extra_data", {}).get("topics", {})
    per_exercise = _exercises(doc.get("tests", []))
    return {
        t: TopicScore(
            topic=t,
            score=float(v["score"]),
            max_score=float(v["max_score"]),
            submission_id=sub.id,
            submitted_at=sub.created_at,
            exercises=per_exercise.get(t, {}),
        )
        for t, v in topics.items()
    }


def _exercises(tests: Iterable[dict[str, Any]]) -> dict[str, dict[str, ExerciseScore]]:
    """topic -> exercise -> its score, from results.json's tests (`topic.exercise:check`)."""
    sums: dict[str, dict[str, list[Any]]] = {}
    for test in tests:
        name = str(test.get("name", ""))
        where, _, check = name.partition(":")
        topic, _, exercise = where.partition(".")
        if not (topic and exercise and check):
            continue
        entry = sums.setdefault(topic, {}).setdefault(exercise, [0.0, 0.0, [], [], None])
        score, top = float(test.get("score") or 0), float(test.get("max_score") or 0)
        data = test.get("extra_data") or {}
        entry[0] += score
        entry[1] += top
        if data.get("pending"):
            entry[3].append(check)
        elif score < top or test.get("status") == "failed":
            entry[2].append(check)
        if (ratio := measured_ratio(check, data)) is not None:
            entry[4] = ratio
    return {
        t: {e: ExerciseScore(round(s, 4), round(m, 4), tuple(f), tuple(p), r) for e, (s, m, f, p, r) in ex.items()}
        for t, ex in sums.items()
    }


def counted(submissions: Iterable[Submission], keeps: Keeps | None = None) -> dict[str, TopicScore]:
    """topic -> the score that counts among one student's submissions: the best after the late
    policy (`keeps`; None: every submission keeps all), the earliest submission on a tie."""
    best: dict[str, TopicScore] = {}
    for sub in sorted(submissions, key=lambda s: (s.created_at, s.id)):
        for topic, result in topic_results(sub).items():
            if keeps is not None:
                result = result.kept(keeps(topic, sub.created_at))
            if topic not in best or result.score > best[topic].score:
                best[topic] = result
    return best


def keeps_for(course: rules.CourseRules, granted: deadlines.Extensions, student_id: int) -> Keeps:
    """What one student's submissions keep under the course's late policy, their extensions applied."""
    return lambda topic, at: deadlines.window(course, granted, student_id, topic).factor(deadlines.aware(at))


@dataclass(frozen=True)
class Counted:
    """One submission as it counts: its score after the late policy (`score`, None before its first
    result) beside the raw one, and the factor each late topic keeps (`late`: topic -> factor,
    only where it is under 1). Every view of one submission shows these (page, API, CLI)."""

    score: float | None
    raw_score: float | None
    late: dict[str, float]

    def late_words(self) -> str:
        """ "on time", or "late: prng keeps 75%, loops keeps 50%"."""
        if not self.late:
            return "on time"
        return "late: " + ", ".join(f"{t} keeps {factor:.0%}" for t, factor in self.late.items())


def counted_for(session: Session, course: rules.CourseRules, sub: Submission) -> Counted:
    """`sub` under the course's late policy, its student's extensions applied."""
    granted = deadlines.extensions(session, [sub.student_id])
    return counted_one(sub, keeps_for(course, granted, sub.student_id))


def counted_one(sub: Submission, keeps: Keeps) -> Counted:
    """`sub` under the late policy `keeps` (`keeps_for` its student), at the time it was received."""
    kept = {t: r.kept(keeps(t, sub.created_at)) for t, r in topic_results(sub).items()}
    if sub.score is None:
        return Counted(None, None, {})
    taken = sum(r.raw_score - r.score for r in kept.values())
    return Counted(round(sub.score - taken, 4), sub.score, {t: r.factor for t, r in kept.items() if r.late})


@dataclass
class Standing:
    """One student's line of the gradebook: the counted score per topic, and their activity."""

    student: Student
    topics: dict[str, TopicScore] = field(default_factory=dict)
    submissions: int = 0
    last: dt.datetime | None = None

    def score(self, topic: str) -> float:
        """The counted score for `topic`; 0 when never submitted."""
        return self.topics[topic].score if topic in self.topics else 0.0

    def total(self, topics: Iterable[str]) -> float:
        return round(sum(self.score(t) for t in topics), 4)


def standings(
    students: Iterable[Student],
    submissions: Iterable[Submission],
    course: rules.CourseRules = rules.NO_RULES,
    granted: deadlines.Extensions | None = None,
) -> list[Standing]:
    """One Standing per student on the roster (dropped students left out), in login order; scores
    counted under the `course`'s late policy with the extensions `granted`."""
    rows = {s.id: Standing(s) for s in students if s.dropped_at is None}
    by_student: dict[int, list[Submission]] = {}
    for sub in submissions:
        row = rows.get(sub.student_id)
        if row is None:
            continue
        row.submissions += 1
        row.last = max(filter(None, (row.last, sub.created_at)))
        by_student.setdefault(sub.student_id, []).append(sub)
    for sid, subs in by_student.items():
        rows[sid].topics = counted(subs, keeps_for(course, granted or {}, sid))
    return sorted(rows.values(), key=lambda r: r.student.login)

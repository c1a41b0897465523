"""The course's rules (jaxlings/grading/rules.py): the file validated at start, the phases of a
topic, what a late submission keeps, extensions, and the words a student reads. No server: the
service's own tests submit through a real one (test_service_deadlines.py)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jaxlings.grading import rules
from jaxlings.grading.rules import LatePolicy, Phase, RulesError

TOPICS = ("jit_basics", "prng", "at_updates")
UTC = dt.UTC


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "course.toml"
    path.write_text(text)
    return path


COURSE = """
timezone = "Europe/Zurich"
[late]
policy = "per_day"
penalty = 0.10
floor = 0.50
[topics.prng]
opens = 2026-12-01T09:00:00
due = 2026-12-08T23:59:00
late_until = 2026-12-15T23:59:00
[topics.at_updates]
due = 2026-12-10T12:00:00Z
late = { policy = "closed" }
"""


def test_a_course_file_reads_in_its_zone(tmp_path):
    course = rules.load(write(tmp_path, COURSE), TOPICS)
    window = course.window("prng")
    assert window.due == dt.datetime(2026, 12, 8, 22, 59, tzinfo=UTC)  # 23:59 in Zurich (CET, UTC+1)
    assert course.window("at_updates").due == dt.datetime(2026, 12, 10, 12, 0, tzinfo=UTC)  # an offset wins
    assert course.window("jit_basics").phase(dt.datetime(2030, 1, 1, tzinfo=UTC)) is Phase.OPEN  # no rules


@pytest.mark.parametrize(
    "text, names",
    [
        ("timezone = 'Mars/Olympus'", ["timezone", "unknown time zone"]),
        ("timezone = 'America'", ["timezone", "unknown time zone 'America'"]),  # a folder of the database
        ("[topics.prgn]\ndue = 2026-12-08T23:59:00", ["[topics.prgn]", "not a topic", "prng"]),
        ("[topics.prng]\ndue = 2026-12-08T23:59:00\nlate_until = 2026-12-01T00:00:00", ["topics.prng", "after"]),
        ("[topics.prng]\ndeu = 2026-12-08T23:59:00", ["topics.prng.deu", "not a key of this table"]),
        ("[late]\npolicy = 'per_week'", ["late.policy"]),
        ("[late]\npolicy = 'per_day'\npenalty = 1.5", ["late.penalty"]),
        ("[topics.prng]\nlate_until = 2026-12-01T00:00:00", ["late_until needs a due date"]),
        ("timezone = ", ["not a TOML file"]),
    ],
)
def test_a_wrong_file_is_refused_naming_what(tmp_path, text, names):
    with pytest.raises(RulesError) as refused:
        rules.load(write(tmp_path, text), TOPICS)
    assert all(n in str(refused.value) for n in names), str(refused.value)
    assert str(tmp_path / "course.toml") in str(refused.value)


def test_no_file_is_no_rules(tmp_path):
    assert rules.load(None, TOPICS) == rules.NO_RULES
    assert rules.load(tmp_path / "absent.toml", TOPICS) == rules.NO_RULES


def test_phases_and_factors_across_a_topics_life(tmp_path):
    course = rules.load(write(tmp_path, COURSE), TOPICS)
    w = course.window("prng")
    before, due, limit = w.opens - dt.timedelta(minutes=1), w.due, w.late_until
    assert w.phase(before) is Phase.NOT_OPEN and w.factor(before) == 0.0
    assert w.phase(due) is Phase.OPEN and w.factor(due) == 1.0  # on the minute is on time
    assert w.phase(due + dt.timedelta(seconds=1)) is Phase.LATE
    assert w.factor(due + dt.timedelta(seconds=1)) == pytest.approx(0.9)  # a day started
    assert w.factor(due + dt.timedelta(days=2, seconds=1)) == pytest.approx(0.7)
    assert w.factor(due + dt.timedelta(days=6, hours=23)) == pytest.approx(0.5)  # the floor
    assert w.phase(limit + dt.timedelta(seconds=1)) is Phase.CLOSED and w.factor(limit + dt.timedelta(seconds=1)) == 0
    hard = course.window("at_updates")
    assert hard.phase(hard.due + dt.timedelta(seconds=1)) is Phase.CLOSED


def test_an_extension_moves_due_and_limit():
    course = rules.CourseRules.model_validate(
        {"late": {"policy": "per_hour", "penalty": 0.25}, "topics": {"prng": {"due": "2026-12-08T12:00:00Z"}}}
    )
    at = dt.datetime(2026, 12, 9, 12, 0, tzinfo=UTC)
    assert course.window("prng").factor(at) == 0.0  # 24 hours late at 25% an hour
    assert course.window("prng", dt.timedelta(days=1)).factor(at) == 1.0


times = st.datetimes(min_value=dt.datetime(2026, 11, 1), max_value=dt.datetime(2027, 1, 31), timezones=st.just(UTC))
policies = st.builds(
    LatePolicy,
    policy=st.sampled_from(["none", "per_day", "per_hour", "closed"]),
    penalty=st.floats(0, 1),
    floor=st.floats(0, 1),
)


@given(policies, times, times, st.timedeltas(min_value=dt.timedelta(0), max_value=dt.timedelta(days=20)))
def test_later_never_counts_more_and_an_extension_never_less(policy, a, b, extra):
    course = rules.CourseRules(
        late=policy,
        topics={
            "prng": rules.TopicRules(
                due=dt.datetime(2026, 12, 8, 12, tzinfo=UTC), late_until=dt.datetime(2026, 12, 20, tzinfo=UTC)
            )
        },
    )
    early, late = sorted((a, b))
    window = course.window("prng")
    assert 0.0 <= window.factor(late) <= window.factor(early) <= 1.0
    assert course.window("prng", extra).factor(late) >= window.factor(late)


def test_the_words_a_student_reads(tmp_path):
    course = rules.load(write(tmp_path, COURSE), TOPICS)
    w = course.window("prng")
    assert rules.describe(w, w.opens - dt.timedelta(hours=3), course).startswith(
        "opens in 3 hours (Tue 01 Dec 09:00 CET"
    )
    assert rules.describe(w, w.due - dt.timedelta(days=2, minutes=5), course) == "due in 2 days (Tue 08 Dec 23:59 CET)"
    late = rules.describe(w, w.due + dt.timedelta(hours=30), course)
    assert late == "late: 10% off per day started, at least 50% kept; now 20% off, taken until Tue 15 Dec 23:59 CET"
    assert rules.describe(w, w.late_until + dt.timedelta(minutes=1), course) == "closed since Tue 15 Dec 23:59 CET"
    hard = course.window("at_updates")
    assert rules.describe(hard, hard.due + dt.timedelta(minutes=1), course) == "closed since Thu 10 Dec 13:00 CET"
    assert rules.describe(course.window("jit_basics"), w.due, course) == "open, no due date"

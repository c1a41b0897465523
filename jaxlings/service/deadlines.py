"""Deadlines on the service: the course's rules (`jaxlings.grading.rules`) with each student's
extensions, what a submission's topics are worth when it arrives, and granting extensions.

The server's clock decides: a submission's time is `Submission.created_at`, set when the
server received it. Submissions of a topic not yet open or already closed for that student are
refused at receipt (`refusal`); late ones are taken and count with the policy's factor
(`scores`), worked out every time a score counts, so a granted extension or a changed rule
applies to what is already stored.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from pathlib import Path
from zoneinfo import ZoneInfo

from sqlalchemy import select
from sqlalchemy.orm import Session

from jaxlings.grading import rules
from jaxlings.service.config import Settings
from jaxlings.service.db import Extension, Student, sessions, utcnow

Extensions = dict[tuple[int, str], dt.timedelta]
"""(student id, topic) -> the length of the extension that holds (the latest granted)."""


def extensions(session: Session, student_ids: Iterable[int] | None = None) -> Extensions:
    """The extensions that hold, for these students (all when None)."""
    query = select(Extension).order_by(Extension.id)
    if student_ids is not None:
        query = query.where(Extension.student_id.in_(list(student_ids)))
    return {(e.student_id, e.topic): dt.timedelta(seconds=e.seconds) for e in session.scalars(query)}


def aware(t: dt.datetime) -> dt.datetime:
    """A time as the database stores it (naive UTC) made aware."""
    return t if t.tzinfo else t.replace(tzinfo=dt.UTC)


def window(course: rules.CourseRules, granted: Extensions, student_id: int, topic: str) -> rules.Window:
    """One student's dates for one topic, their extension applied."""
    return course.window(topic, granted.get((student_id, topic), dt.timedelta(0)))


def closed(
    course: rules.CourseRules, granted: Extensions, student_id: int, topics: Iterable[str], now: dt.datetime
) -> dict[str, str]:
    """Of `topics`, those a submission received `now` cannot hold for this student (not open yet,
    or closed for them), each with why in words: "prng opens in 3 hours (...)", "prng is closed
    since ..."."""
    why = {}
    for topic in topics:
        w = window(course, granted, student_id, topic)
        phase = w.phase(aware(now))
        if phase is rules.Phase.NOT_OPEN:
            why[topic] = f"{topic} {rules.describe(w, aware(now), course)}"
        elif phase is rules.Phase.CLOSED:
            why[topic] = f"{topic} is {rules.describe(w, aware(now), course)}"
    return why


def refusal(
    course: rules.CourseRules, granted: Extensions, student_id: int, topics: Iterable[str], now: dt.datetime
) -> str | None:
    """Why a submission of `topics` received `now` is not taken (a topic not open yet, or
    closed for this student), in one sentence naming each; None when it is taken."""
    return refused(closed(course, granted, student_id, topics, now))


def refused(why: dict[str, str]) -> str | None:
    """The refusal of a submission whose topics `why` says are not open (`closed`), in one
    sentence naming each; None when `why` is empty."""
    return "; ".join(why.values()) + " (no submission of it is taken now)" if why else None


def status_lines(
    course: rules.CourseRules,
    granted: Extensions,
    student_id: int,
    topics: Iterable[str],
    now: dt.datetime,
    zone: ZoneInfo | None = None,
) -> dict[str, str]:
    """topic -> one line on where it stands for this student ("due in 2 days (...)", "late: ...",
    "closed since ..."), times in `zone` (the student's; None: the course's), for the topics that
    have dates; {} when the course has none."""
    return {
        t: rules.describe(window(course, granted, student_id, t), aware(now), course, zone)
        for t in topics
        if t in course.topics
    }


def zone_for(session: Session, course: rules.CourseRules, student_id: int | None) -> ZoneInfo:
    """The zone a student reads dates in: the one they chose (`Student.timezone`), else the course's."""
    student = session.get(Student, student_id) if student_id is not None else None
    name = student.timezone if student is not None and student.timezone else course.timezone
    try:
        return rules.known_zone(name)
    except ValueError:  # a zone the system no longer knows: the course's
        return course.zone


class Shortening(ValueError):
    """A grant shorter than the extension in force, not said to shorten it."""


def grant(
    session: Session,
    course: rules.CourseRules,
    topics: Iterable[str],
    login: str,
    topic: str,
    length: dt.timedelta,
    by: str,
    reason: str = "",
    shorten: bool = False,
) -> str:
    """Give `login` `length` more on `topic`, one of the course's `topics` (replacing any
    earlier extension of theirs for it); the caller commits. A line saying what the student now
    has; a ValueError naming an unknown student or topic, or a length that is not positive;
    a `Shortening` where the grant is shorter than the one in force and `shorten` is not set
    (a student must not lose time they were promised by a slip of the unit)."""
    topics = list(topics)
    if topic not in topics:
        raise ValueError(f"no topic {topic!r} in this course (its topics: {', '.join(topics)})")
    if int(length.total_seconds()) < 1:  # stored in whole seconds: a shorter one would be stored as none
        raise ValueError("an extension must be at least one second long (extensions are kept in whole seconds)")
    student = session.scalar(select(Student).where(Student.login == login))
    if student is None:
        raise ValueError(f"no student {login!r} on the roster")
    earlier = extensions(session, [student.id]).get((student.id, topic))
    if earlier is not None and length < earlier and not shorten:
        raise Shortening(
            f"{login} already has {rules.length(earlier)} more on {topic}; {rules.length(length)} would take"
            " time away: grant it again saying to shorten it (shorten, or --shorten) if that is meant"
        )
    session.add(
        Extension(
            student_id=student.id,
            topic=topic,
            seconds=int(length.total_seconds()),
            granted_by=by,
            reason=reason,
            created_at=utcnow(),
        )
    )
    w = course.window(topic, length)
    replaced = "" if earlier is None else f" (replacing the earlier extension of {rules.length(earlier)})"
    if w.due is None:
        return f"{login} has {rules.length(length)} more on {topic} (it has no due date yet){replaced}"
    return f"{login}: {topic} now due {course.local(w.due):%a %d %b %H:%M %Z}{replaced}"


def granted_on(session: Session, topic: str) -> list[tuple[str, Extension]]:
    """The extensions that hold on `topic`, as (login, the latest grant), in login order."""
    rows = session.execute(
        select(Student.login, Extension)
        .join(Student, Student.id == Extension.student_id)
        .where(Extension.topic == topic)
    ).tuples()
    latest = dict(sorted(rows, key=lambda r: r[1].id))  # a later grant replaces an earlier one
    return sorted(latest.items(), key=lambda r: r[0])


def course_topics(settings: Settings) -> list[str]:
    """The topics this service grades (JAXLINGS_TOPICS, else the whole course)."""
    from jaxlings.grading import topics

    return list(settings.topics or topics.ORDER)


def extend(
    settings: Settings,
    rules_file: Path,
    login: str,
    topic: str,
    length: dt.timedelta,
    by: str,
    reason: str,
    shorten: bool = False,
) -> str:
    """`grant` in a transaction of its own, against the rules in `rules_file` (the CLI)."""
    from jaxlings.service import storage

    topics = course_topics(settings)
    course = rules.load(rules_file, topics)
    storage.ready(settings)
    with sessions(settings.db_url).begin() as session:
        return grant(session, course, topics, login, topic, length, by, reason, shorten)


def by_login(settings: Settings) -> dict[tuple[str, str], dt.timedelta]:
    """The extensions that hold, keyed by (login, topic), for the nbgrader gradebook."""
    from jaxlings.service import storage

    storage.ready(settings)
    with sessions(settings.db_url)() as session:
        logins = dict(session.execute(select(Student.id, Student.login)).tuples().all())
        return {(logins[sid], topic): length for (sid, topic), length in extensions(session).items()}

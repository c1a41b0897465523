"""Taking a submission in: check the upload, hold the student's limits, store it, hand it on.

The order is the contract: the upload is checked (no database touched), then in one
transaction that first locks the student's row (so concurrent submits of one student take
turns and the limits hold exactly) the rate limit and the storage quota are checked and the
upload and submission rows inserted and committed; only then is the job handed to the
dispatcher (off the request path) and the 202 sent. A refused upload stores nothing.
"""

from __future__ import annotations

import datetime as dt
import math

from fastapi import HTTPException
from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from jaxlings.grading import rules
from jaxlings.service import deadlines, jobs, storage
from jaxlings.service.auth import Identity
from jaxlings.service.config import Settings
from jaxlings.service.db import FAILED, QUEUED, Student, Submission, Upload, utcnow
from jaxlings.service.state import AppState


def submit(
    state: AppState, session: Session, who: Identity, raw: bytes, wanted: list[str] | None
) -> tuple[Submission, bool, dict[str, str]]:
    """Check, store and queue an upload; (the submission, whether it was already there, the
    topics left out because they are not open for this student now, each with why).

    `state` is the app's state (settings, topics, rules, dispatcher); `raw` the body as sent; `wanted`
    the topics asked for (None: those in the zip). A topic not open yet or closed is left out,
    and said so, never the whole upload refused for it: a student submits their whole folder
    in the first week too. Raises UploadError or HTTPException (4xx; 403 when no topic of it is
    open).
    """
    settings = state.settings
    if who.is_instructor:
        raise HTTPException(403, "instructor tokens do not submit; use a student's course token")
    checked = storage.check_upload(
        raw, state.topics, max_bytes=settings.max_upload_bytes, max_unpacked=settings.max_unpacked_bytes
    )
    course = state.rules
    names, left_out = _open_only(session, course, who.student_id, topics_for(state.topics, wanted, checked.files))
    existing = _existing(session, who.student_id, checked.digest, names)
    if existing is not None:
        return _again(state, session, existing), True, left_out
    session.rollback()  # end any read snapshot: the lock below must be the transaction's first statement
    row = store(session, settings, who.student_id, checked, names, course)
    state.dispatcher.put([row.id])
    return row, False, left_out


def _open_only(
    session: Session, course: rules.CourseRules, student_id: int | None, names: str
) -> tuple[str, dict[str, str]]:
    """The topics of `names` open for this student now, and those left out with why; 403 naming
    each when none is open."""
    if not course.topics or student_id is None:
        return names, {}
    topics = names.split(",")
    left_out = deadlines.closed(course, deadlines.extensions(session, [student_id]), student_id, topics, utcnow())
    kept = [t for t in topics if t not in left_out]
    if not kept:
        raise HTTPException(403, deadlines.refused(left_out))
    return ",".join(kept), left_out


def topics_for(known: tuple[str, ...], wanted: list[str] | None, files: dict[str, bytes]) -> str:
    """The topics to grade, in course order: those asked for (each must be in the zip), else the zip's."""
    unknown = [t for t in wanted or () if t not in known]
    if unknown:
        raise storage.UploadError(f"unknown topic(s) {_names(unknown)}; the topics are: {', '.join(known)}")
    missing = [t for t in wanted or () if t not in files]
    if missing:
        raise storage.UploadError(
            f"topic(s) {', '.join(missing)} asked for but not in the zip (it holds "
            f"{', '.join(f'{t}.py' for t in sorted(files))})"
        )
    chosen = set(wanted or files)
    return ",".join(t for t in known if t in chosen)


def _names(names: list[str], most: int = 5, width: int = 40) -> str:
    """Names a client sent, as a message may echo them: the first few, each cut short, printable."""
    shown = [repr(n if len(n) <= width else n[:width] + "…") for n in names[:most]]
    return ", ".join(shown) + (f" and {len(names) - most} more" if len(names) > most else "")


def _existing(session: Session, student_id: int | None, digest: str, topics: str) -> Submission | None:
    return session.scalar(
        select(Submission).where(
            Submission.student_id == student_id, Submission.digest == digest, Submission.topics == topics
        )
    )


def _again(state: AppState, session: Session, row: Submission) -> Submission:
    """The same content sent again: re-queue it if it failed for an infrastructure reason, or
    send it if its first sender died before sending; otherwise it is just answered again."""
    if row.status == FAILED and jobs.retry_failed(session, row):
        session.commit()
        state.dispatcher.put([row.id])
    elif row.status == QUEUED and row.sent_at is None:
        state.dispatcher.put([row.id])
    return row


def store(
    session: Session,
    settings: Settings,
    student_id: int | None,
    checked: storage.Checked,
    topics: str,
    course: rules.CourseRules = rules.NO_RULES,
) -> Submission:
    """Under the student's lock: check the course's dates (`course`: a topic not open yet or
    closed for this student is refused, 403), the limits, insert the upload (once per content)
    and the submission row, and commit. The time that counts is the row's `created_at`: the one
    moment, read once the student's lock is held, that its dates were checked against (an upload
    accepted just inside a deadline is never stamped just past it)."""
    for _attempt in range(3):
        try:
            _lock_student(session, student_id)
            now = utcnow()
            _dates(session, course, student_id, topics, now)
            _rate_limit(session, settings, student_id, topics)
            _quota(
                session, settings, student_id, 0 if _holds(session, student_id, checked.digest) else len(checked.data)
            )
            if session.get(Upload, checked.digest) is None:
                session.add(Upload(digest=checked.digest, data=checked.data, size=len(checked.data)))
                session.flush()
            row = Submission(student_id=student_id, digest=checked.digest, topics=topics, created_at=now)
            session.add(row)
            session.commit()
            return row
        except IntegrityError:  # the same upload or submission stored by a concurrent request
            session.rollback()
            existing = _existing(session, student_id, checked.digest, topics)
            if existing is not None:
                return existing
        except Exception:
            session.rollback()
            raise
    raise HTTPException(503, "could not store the submission; send it again", headers={"Retry-After": "1"})


def _lock_student(session: Session, student_id: int | None) -> None:
    """Take the student's row lock for this transaction (PostgreSQL: the row; SQLite: the writer's
    lock): concurrent submits of one student then check their limits one after the other."""
    session.execute(update(Student).where(Student.id == student_id).values(last_submitted_at=utcnow()))


def _dates(session: Session, course: rules.CourseRules, student_id: int | None, topics: str, now: dt.datetime) -> None:
    """403 naming each topic not open yet or closed for this student at `now` (their extensions applied)."""
    if not course.topics or student_id is None:
        return
    granted = deadlines.extensions(session, [student_id])
    refused = deadlines.refusal(course, granted, student_id, topics.split(","), now)
    if refused:
        raise HTTPException(403, refused)


def _rate_limit(session: Session, settings: Settings, student_id: int | None, topics: str) -> None:
    """429 with Retry-After when any of these topics had rate_limit submissions in the window."""
    now = utcnow()
    since = now - dt.timedelta(seconds=settings.rate_window)
    recent = session.execute(
        select(Submission.created_at, Submission.topics).where(
            Submission.student_id == student_id, Submission.created_at > since
        )
    ).all()
    for topic in topics.split(","):
        times = sorted(t for t, names in recent if topic in names.split(","))
        if len(times) >= settings.rate_limit:
            wait = math.ceil((times[-settings.rate_limit] - since).total_seconds()) + 1
            raise HTTPException(
                429,
                f"too many submissions of {topic}: {settings.rate_limit} per "
                f"{settings.rate_window} s; try again in {wait} s",
                headers={"Retry-After": str(wait)},
            )


def _holds(session: Session, student_id: int | None, digest: str) -> bool:
    """Whether one of the student's submissions already stores this upload."""
    return (
        session.execute(
            select(func.count())
            .select_from(Submission)
            .where(Submission.student_id == student_id, Submission.digest == digest)
        ).scalar_one()
        > 0
    )


def stored_bytes(session: Session, student_id: int | None) -> int:
    """The bytes of the distinct uploads a student's submissions store."""
    theirs = select(Submission.digest).where(Submission.student_id == student_id).scalar_subquery()
    return session.scalar(select(func.coalesce(func.sum(Upload.size), 0)).where(Upload.digest.in_(theirs))) or 0


def _quota(session: Session, settings: Settings, student_id: int | None, adding: int) -> None:
    """413 when storing `adding` more bytes would take the student past their storage quota."""
    if not adding:
        return
    used = stored_bytes(session, student_id)
    if used + adding > settings.quota_bytes:
        raise storage.UploadError(
            f"storage quota reached: your submissions store {used} bytes and this one "
            f"{adding} more, past your quota of {settings.quota_bytes} bytes; ask your "
            "instructor",
            413,
        )


def regrade(state: AppState, session: Session, ids: list[int]) -> dict[str, list[int]]:
    """Queue these submissions to be graded again (those being graded now are skipped)."""
    queued = jobs.requeue(session, ids)
    session.commit()
    state.dispatcher.put(queued)
    return {"queued": queued, "skipped": sorted(set(ids) - set(queued))}

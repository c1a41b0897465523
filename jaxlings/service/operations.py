"""What the JSON API and the pages both do, apart from how they are asked: the service layer.

A route reads its request (a token or a page session, a path, a form, a body) and hands the rest
here: a submission as it is shown, the gradebook's standings and exports, the roster's changes,
extensions, a student's history, settings, the speed leaderboard and the similarity report. Each
takes the app's state (`state.AppState`) or what it needs of it, never the request, and refuses in
HTTP's terms (`HTTPException`: the status and the message the API and the pages both give).
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Callable, Sequence
from typing import Any, TypeVar
from zoneinfo import ZoneInfo

from fastapi import HTTPException, Response
from fastapi.responses import JSONResponse, PlainTextResponse
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from jaxlings.grading import rules
from jaxlings.service import deadlines, exports, jobs, leaderboard, reports, roster, scores, similarity
from jaxlings.service.auth import Identity
from jaxlings.service.db import Student, Submission
from jaxlings.service.schemas import (
    ExerciseLeaderboard,
    Grading,
    LeaderboardRow,
    LeaderboardView,
    RosterEntry,
    SubmissionView,
)
from jaxlings.service.state import AppState

T = TypeVar("T")
NO_LEADERBOARD = "the course has no leaderboard"


def view(state: AppState, session: Session, row: Submission, duplicate: bool | None = None) -> SubmissionView:
    """A submission as the API shows it, its score as it counts under the course's late policy."""
    base = state.settings.base_path
    counts = scores.counted_for(session, state.rules, row)
    return SubmissionView(
        id=row.id,
        student=row.student.login,
        topics=row.topic_list,
        status=row.status,
        progress=row.progress,
        position=jobs.position(session, row),
        digest=row.digest,
        created_at=iso(row.created_at),
        started_at=iso(row.started_at),
        finished_at=iso(row.finished_at),
        attempts=row.attempts,
        score=row.score,
        max_score=row.max_score,
        counted_score=counts.score,
        late=counts.late,
        error=row.error,
        results_url=f"{base}/api/submissions/{row.id}/results.json" if row.result_json else None,
        page_url=f"{base}/submissions/{row.id}",
        duplicate=duplicate,
    )


def iso(t: dt.datetime | None) -> str | None:
    """A stored (naive UTC) time as the API writes it."""
    return t.isoformat() + "Z" if t else None


def matching(session: Session, topic: str | None) -> list[int]:
    """Ids of the submissions holding `topic` (every submission for None)."""
    rows = session.execute(select(Submission.id, Submission.topics)).all()
    return [i for i, names in rows if topic is None or topic in names.split(",")]


def grading_list(row: Submission) -> list[Grading]:
    """A submission's stored gradings (`GradeResult` rows), oldest first."""
    return [
        Grading(id=g.id, created_at=iso(g.created_at) or "", worker=g.worker, score=g.score, max_score=g.max_score)
        for g in row.results
    ]


def results_download(row: Submission) -> Response:
    """A submission's results.json as a download (its latest complete grading)."""
    if not row.result_json:
        raise HTTPException(409, f"submission {row.id} is {row.status}, not graded yet")
    return Response(
        row.result_json,
        media_type="application/json",
        headers={"Content-Disposition": f'attachment; filename="results-{row.id}.json"'},
    )


def csv_download(
    state: AppState, session: Session, fmt: str = "csv", canvas_ids: str = "", only: Sequence[str] = ()
) -> Response:
    """The gradebook export `fmt` of the topics `only` names (default: `exports.chosen_topics`)
    as a download; 400 naming the formats for another, or the topics for an unknown one."""
    try:
        if canvas_ids and fmt != "canvas":
            raise ValueError("canvas_ids goes with format=canvas")
        if fmt not in exports.FORMATS:
            raise ValueError(f"unknown export format; the formats are: {', '.join(exports.FORMATS)}")
        every = list(state.topics)
        topics = exports.chosen_topics(only, every, fmt, state.rules, dt.datetime.now(dt.UTC))
        ids = exports.canvas_ids_query(canvas_ids, every) if canvas_ids else None
    except ValueError as exc:
        raise HTTPException(400, str(exc)) from None
    rows, _ = standings(state, session)
    return PlainTextResponse(
        exports.render(fmt, rows, scores.outline(topics), ids, state.rules),
        media_type="text/csv",
        headers={"Content-Disposition": f'attachment; filename="{exports.filename(fmt)}"'},
    )


def on_roster(session: Session, change: Callable[[], T]) -> T:
    """Run one roster change and commit it; its refusals as 404 (unknown login), 409 (the
    student's state forbids it) or 400 (a field that does not fit)."""
    try:
        done = change()
        session.commit()
    except roster.UnknownStudent as exc:
        raise HTTPException(404, str(exc)) from None
    except roster.RosterConflict as exc:
        raise HTTPException(409, str(exc)) from None
    except ValueError as exc:
        raise HTTPException(400, str(exc)) from None
    except IntegrityError:  # the same new login added by two requests at once: the other one won
        session.rollback()
        raise HTTPException(409, "that login was just added by another request; list the roster") from None
    return done


def grant_extension(
    state: AppState,
    session: Session,
    login: str,
    topic: str,
    length: dt.timedelta,
    by: str,
    reason: str,
    shorten: bool = False,
) -> str:
    """`deadlines.grant` committed; 404 for a login not on the roster, 409 for a grant shorter than
    the one in force without `shorten`, 400 for another refusal."""
    if _dropped(session, login):
        raise HTTPException(404, "no such student on the roster (or dropped)")
    try:
        message = deadlines.grant(session, state.rules, state.topics, login, topic, length, by, reason, shorten)
        session.commit()
    except deadlines.Shortening as exc:
        session.rollback()
        raise HTTPException(409, str(exc)) from None
    except ValueError as exc:
        session.rollback()
        raise HTTPException(400, str(exc)) from None
    return message


def _dropped(session: Session, login: str) -> bool:
    """Whether `login` is not (or no longer) on the roster."""
    student = session.scalar(select(Student).where(Student.login == login))
    return student is None or student.dropped_at is not None


def entry_view(e: roster.Entry) -> RosterEntry:
    return RosterEntry(
        login=e.login,
        name=e.name,
        email=e.email,
        submissions=e.submissions,
        last_submission=iso(e.last_submission),
        dropped_at=iso(e.dropped_at),
        dropped_by=e.dropped_by,
    )


def standings(state: AppState, session: Session) -> tuple[list[scores.Standing], scores.Outline]:
    """Every student's counted scores (`scores`: which score counts) and the course's outline."""
    students = list(session.scalars(select(Student)))
    subs = list(session.scalars(select(Submission)))
    counted = scores.standings(students, subs, state.rules, deadlines.extensions(session))
    return counted, scores.outline(state.topics)


def student_history(state: AppState, session: Session, student_id: int, zone: ZoneInfo | None = None) -> dict[str, Any]:
    """A student's submissions, newest first, what counts of them (per topic and per submission,
    late marks included) and their dates per topic (in `zone`; None: the course's): the student's
    own page and the instructor's record of them (`roster_pages`) show the same."""
    subs = list(
        session.scalars(select(Submission).where(Submission.student_id == student_id).order_by(Submission.id.desc()))
    )
    course = state.rules
    granted = deadlines.extensions(session, [student_id])
    keeps = scores.keeps_for(course, granted, student_id)
    now = dt.datetime.now(dt.UTC)
    return {
        "submissions": subs,
        "best": scores.counted(subs, keeps),
        "counts": {s.id: scores.counted_one(s, keeps) for s in subs},
        "dates": deadlines.status_lines(course, granted, student_id, state.topics, now, zone),
    }


def require_leaderboard(course: rules.CourseRules) -> None:
    """404 unless the course's rules turn the speed leaderboard on (course.toml `[leaderboard]`)."""
    if not course.leaderboard.enabled:
        raise HTTPException(404, NO_LEADERBOARD)


def leaderboard_view(state: AppState, session: Session, who: Identity) -> LeaderboardView:
    """The board as the caller sees it (their own rows marked; an instructor sees who each row
    is); 404 when the course has none."""
    require_leaderboard(state.rules)
    students = list(session.scalars(select(Student)))
    boards = leaderboard.board(
        students,
        session.scalars(select(Submission).where(Submission.result_json.is_not(None))),
        leaderboard.speed_exercises(state.topics),
    )
    mine = who.student_id if not who.is_instructor else None
    names = {s.id: (s.login, s.name) for s in students} if who.is_instructor else {}
    return LeaderboardView(
        exercises=[
            ExerciseLeaderboard(
                exercise=b.name,
                rows=[
                    LeaderboardRow(
                        rank=e.rank,
                        pseudonym=e.pseudonym,
                        ratio=e.ratio,
                        mine=e.student_id == mine,
                        login=names[e.student_id][0] if names else None,
                        name=names[e.student_id][1] if names else None,
                    )
                    for e in b.entries
                ],
            )
            for b in boards
        ],
        pseudonym=next((s.pseudonym for s in students if s.id == mine), None),
    )


def set_timezone(session: Session, who: Identity, name: str) -> None:
    """Set the caller's own zone for dates, committed; 403 for an instructor, 400 for a zone that
    is not an IANA name ("" goes back to the course's)."""
    if who.is_instructor or who.student_id is None:
        raise HTTPException(403, "a time zone is a student's setting; instructors read the course's")
    name = name.strip()
    if name:
        try:
            rules.known_zone(name)
        except ValueError as exc:
            raise HTTPException(400, str(exc)) from None
    student = session.get(Student, who.student_id)
    if student is None:
        raise HTTPException(404, "no such student on the roster")
    student.timezone = name
    session.commit()


def set_pseudonym(state: AppState, session: Session, who: Identity, text: str | None) -> str | None:
    """Set (or with None clear) the caller's own pseudonym, committed; 404 without a leaderboard,
    403 for an instructor, 400 for one that does not fit the rules, 409 for one that is taken (or
    looks like a name on the roster), 429 past `leaderboard.TRIES` tries an hour."""
    require_leaderboard(state.rules)
    if who.is_instructor or who.student_id is None:
        raise HTTPException(403, "pseudonyms are for students: instructors are not on the leaderboard")
    try:
        name = None if text is None else leaderboard.choose(session, who.student_id, text)
        if text is None:
            leaderboard.leave(session, who.student_id)
        session.commit()
    except leaderboard.PseudonymError as exc:
        session.rollback()
        raise HTTPException(400, str(exc)) from None
    except leaderboard.PseudonymTaken as exc:
        session.rollback()
        raise HTTPException(409, str(exc)) from None
    except leaderboard.PseudonymTooOften as exc:
        session.rollback()
        raise HTTPException(429, str(exc), headers={"Retry-After": "3600"}) from None
    except IntegrityError:  # another student took it between our check and the commit
        session.rollback()
        raise HTTPException(409, "that pseudonym was just taken; choose another") from None
    return name


def costly(state: AppState, who: Identity) -> contextlib.AbstractContextManager[None]:
    """Held while a view whose cost grows with what students uploaded is worked out (a
    submission's code, a diff, the similarity report, page or API): at most `pages_at_once`
    per caller (`limits.PerCaller`; past it, 429)."""
    return state.costly.held(f"{who.role}:{who.login}")


def similarity_rankings(
    state: AppState, session: Session, who: Identity, topic: str, exercise: str | None = None
) -> list[similarity.Ranking] | None:
    """The similarity report of `topic` (one `exercise` of it, when given; 404 for one it does
    not have), worked out off the request path (`reports`): None where it is not done within the
    wait. A costly view of `who`'s (`limits.PerCaller`)."""
    rows, course = standings(state, session)
    exercises = list(course.exercises[topic])
    if exercise is not None:
        if exercise not in exercises:
            raise HTTPException(404, f"no such exercise in {topic}")
        exercises = [exercise]
    files = similarity.class_files(session, rows, topic)
    programs = similarity.class_programs(session, rows, topic)
    with costly(state, who):
        return state.reports.get(
            reports.key(topic, exercises, files, programs), lambda: similarity.report(topic, exercises, files, programs)
        )


def similarity_answer(topic: str, rankings: list[similarity.Ranking] | None, top: int) -> Any:
    """The report as JSON (`similarity.view`), or 202 with Retry-After while it is worked out."""
    if rankings is None:
        return JSONResponse(
            {"detail": f"the report is being worked out; ask again in {reports.RETRY_SECONDS} seconds"},
            status_code=202,
            headers={"Retry-After": str(reports.RETRY_SECONDS)},
        )
    return similarity.view(topic, rankings, top)

"""The JSON API (`/api/...`; OpenAPI at `/api/openapi.json`), for `grade submit` and scripts.

Callers are known by their bearer token only. An upload's body is read, bounded, before any
database connection is taken, so a client sending slowly holds a socket, not the database.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Callable, Sequence
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, HTTPException, Path, Query, Request, Response
from fastapi.responses import JSONResponse, PlainTextResponse
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from jaxlings import __version__
from jaxlings.grading import rules
from jaxlings.service import (
    deadlines,
    exports,
    jobs,
    leaderboard,
    reports,
    roster,
    scores,
    similarity,
    storage,
    submitting,
)
from jaxlings.service.auth import Identity
from jaxlings.service.db import Student, Submission
from jaxlings.service.deps import MAX_ID, Caller, Instructor, SessionDep, bearer, identify, visible
from jaxlings.service.schemas import (
    Deadlines,
    ExerciseLeaderboard,
    Grading,
    Granted,
    Health,
    IssuedToken,
    LeaderboardRow,
    LeaderboardView,
    Me,
    NewExtension,
    NewPseudonym,
    NewStudent,
    NewTimezone,
    Problem,
    PseudonymView,
    Regraded,
    RosterEntry,
    Similarity,
    SubmissionView,
    Topics,
)

SubmissionId = Annotated[int, Path(ge=1, le=MAX_ID, description="A submission's id.")]
LoginPath = Annotated[str, Path(min_length=1, max_length=200, description="A student's login.")]
ExportFormat = Annotated[str, Query(max_length=20, description="csv (ours), canvas or nbgrader.")]
CanvasIds = Annotated[
    str, Query(max_length=2000, description="With format=canvas: topic:assignment_id pairs, comma-separated.")
]
T = TypeVar("T")
REFUSALS: dict[int | str, dict[str, Any]] = {
    code: {"model": Problem} for code in (400, 401, 403, 404, 409, 413, 422, 429, 503)
}


def view(request: Request, session: Session, row: Submission, duplicate: bool | None = None) -> SubmissionView:
    """A submission as the API shows it, its score as it counts under the course's late policy."""
    base = request.app.state.settings.base_path
    counts = scores.counted_for(session, request.app.state.rules, row)
    return SubmissionView(
        id=row.id,
        student=row.student.login,
        topics=row.topic_list,
        status=row.status,
        progress=row.progress,
        position=jobs.position(session, row),
        digest=row.digest,
        created_at=_iso(row.created_at),
        started_at=_iso(row.started_at),
        finished_at=_iso(row.finished_at),
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


def _iso(t: dt.datetime | None) -> str | None:
    return t.isoformat() + "Z" if t else None


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, refusing (413) past `limit` bytes before reading it all."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise storage.UploadError(f"the upload is {declared} bytes; the limit is {limit} bytes", 413)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise storage.UploadError(f"the upload is over the limit of {limit} bytes", 413)
        chunks.append(chunk)
    return b"".join(chunks)


def _submit_as(request: Request, token: str, raw: bytes, topics: list[str] | None) -> SubmissionView:
    """Authenticate, then submit, on a database session opened only now (after the body)."""
    with request.app.state.sessions() as session:
        who = identify(session, request, token)
        row, duplicate, left_out = submitting.submit(request.app.state, session, who, raw, topics)
        return view(request, session, row, duplicate).model_copy(update={"left_out": left_out})


def router() -> APIRouter:
    routes = APIRouter(responses=REFUSALS)

    @routes.get("/health")
    def health(session: SessionDep) -> Health:
        session.execute(select(1))
        return Health(ok=True, version=__version__)

    @routes.get("/topics")
    def course_topics(request: Request) -> Topics:
        """The topics a submission may hold, in course order."""
        return Topics(topics=list(request.app.state.topics))

    @routes.get("/me")
    def me(who: Caller) -> Me:
        return Me(login=who.login, role=who.role)

    @routes.get("/deadlines")
    def course_deadlines(request: Request, who: Caller, session: SessionDep) -> Deadlines:
        """Where each dated topic stands for the caller now (`grade submit` prints it first)."""
        course = request.app.state.rules
        student = who.student_id if who.student_id is not None else -1
        granted = deadlines.extensions(session, [student])
        zone = deadlines.zone_for(session, course, who.student_id)
        now = dt.datetime.now(dt.UTC)
        lines = deadlines.status_lines(course, granted, student, request.app.state.topics, now, zone)
        return Deadlines(timezone=zone.key, topics=lines)

    @routes.put("/me/timezone")
    def choose_timezone(request: Request, session: SessionDep, who: Caller, body: NewTimezone) -> Deadlines:
        """Read the course's dates in your own zone (an IANA name; "" for the course's): students only."""
        set_timezone(session, who, body.timezone)
        return course_deadlines(request, who, session)

    @routes.get("/leaderboard")
    def speed_leaderboard(request: Request, session: SessionDep, who: Caller) -> LeaderboardView:
        """The speed leaderboard, when the course has one: per speed-graded exercise, each
        pseudonymous student's best measured time ratio, fastest first."""
        return leaderboard_view(request, session, who)

    @routes.put("/me/pseudonym")
    def choose_pseudonym(request: Request, session: SessionDep, who: Caller, body: NewPseudonym) -> PseudonymView:
        """Choose (or change) your pseudonym on the speed leaderboard: students only, their own."""
        name = set_pseudonym(request, session, who, body.pseudonym)
        return PseudonymView(pseudonym=name, message=f"you are on the speed leaderboard as {name}")

    @routes.delete("/me/pseudonym")
    def leave_leaderboard(request: Request, session: SessionDep, who: Caller) -> PseudonymView:
        """Leave the speed leaderboard (your pseudonym is cleared; your submissions stay)."""
        set_pseudonym(request, session, who, None)
        return PseudonymView(pseudonym=None, message="you are off the speed leaderboard")

    @routes.post(
        "/submissions",
        status_code=202,
        response_model=SubmissionView,
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {"application/zip": {"schema": {"type": "string", "format": "binary"}}},
            }
        },
    )
    async def create(
        request: Request, topics: Annotated[list[str] | None, Query(max_length=64)] = None
    ) -> JSONResponse:
        """Upload a zip of `<topic>.py` files as the request body (Content-Type: application/zip)."""
        token = bearer(request)
        if not token:  # refused before the body is read
            raise HTTPException(
                401,
                "no token: send `Authorization: Bearer <your course token>` (see `grade login`)",
                headers={"WWW-Authenticate": "Bearer"},
            )
        raw = await read_body(request, request.app.state.settings.max_upload_bytes)
        body = await run_in_threadpool(_submit_as, request, token, raw, topics)
        return JSONResponse(body.model_dump(), status_code=202)

    @routes.get("/submissions")
    def history(
        request: Request,
        session: SessionDep,
        who: Caller,
        student: Annotated[str | None, Query(max_length=200)] = None,
        limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    ) -> list[SubmissionView]:
        query = select(Submission).order_by(Submission.id.desc()).limit(limit)
        if not who.is_instructor:
            query = query.where(Submission.student_id == who.student_id)
        elif student:
            query = query.join(Student).where(Student.login == student)
        return [view(request, session, row) for row in session.scalars(query)]

    @routes.get("/submissions/{submission_id}")
    def one(request: Request, session: SessionDep, who: Caller, submission_id: SubmissionId) -> SubmissionView:
        return view(request, session, visible(session, who, submission_id))

    @routes.get("/submissions/{submission_id}/results.json")
    def results(session: SessionDep, who: Caller, submission_id: SubmissionId) -> Response:
        return results_download(visible(session, who, submission_id))

    @routes.get("/submissions/{submission_id}/history")
    def grading_history(session: SessionDep, who: Caller, submission_id: SubmissionId) -> list[Grading]:
        """Every stored grading of a submission, oldest first; the last is the one that counts."""
        return grading_list(visible(session, who, submission_id))

    @routes.post("/submissions/{submission_id}/regrade")
    def regrade_one(request: Request, session: SessionDep, who: Instructor, submission_id: SubmissionId) -> Regraded:
        visible(session, who, submission_id)
        return Regraded(**submitting.regrade(request.app.state, session, [submission_id]))

    @routes.post("/regrade")
    def regrade_many(
        request: Request,
        session: SessionDep,
        _who: Instructor,
        topic: Annotated[str | None, Query(max_length=100)] = None,
        all: bool = False,
    ) -> Regraded:
        """Regrade every submission holding `topic`, or everything with `all=true`."""
        if not topic and not all:
            raise HTTPException(400, "say which: ?topic=NAME or ?all=true")
        if topic and topic not in request.app.state.topics:
            raise HTTPException(400, f"unknown topic {topic!r}; the topics are: {', '.join(request.app.state.topics)}")
        return Regraded(**submitting.regrade(request.app.state, session, matching(session, None if all else topic)))

    @routes.get("/gradebook.csv")
    def gradebook_csv(
        request: Request,
        session: SessionDep,
        _who: Instructor,
        format: ExportFormat = "csv",
        canvas_ids: CanvasIds = "",
        topics: Annotated[
            list[str] | None,
            Query(max_length=50, description="Topics to export (repeat; default: all, for Canvas those open)."),
        ] = None,
    ) -> Response:
        """The gradebook as our CSV, Canvas's gradebook import (`format=canvas`, optionally
        `canvas_ids=prng:45678,...`) or nbgrader's grades.csv (`format=nbgrader`), of the
        `topics` given (default: every topic; for Canvas, those already open)."""
        return csv_download(request, session, format, canvas_ids, topics or ())

    @routes.get("/similarity/{topic}")
    def similarity_report(
        request: Request,
        session: SessionDep,
        _who: Instructor,
        topic: Annotated[str, Path(max_length=100, description="A topic of the course.")],
        top: Annotated[int, Query(ge=1, le=1000, description="Pairs shown per exercise.")] = 20,
    ) -> Similarity:
        """Per exercise of `topic`, the pairs of students whose counted submissions are most alike
        (`similarity`: normalised source, the stub, hints and reference discounted). Worked out
        off the request path (`reports`): 202 with Retry-After while it is not done."""
        if topic not in request.app.state.topics:
            raise HTTPException(404, f"no topic {topic!r} in this course (GET /api/topics lists them)")
        return similarity_answer(topic, similarity_rankings(request, session, _who, topic), top)

    @routes.get("/students")
    def students(session: SessionDep, _who: Instructor) -> list[RosterEntry]:
        """The roster in login order, dropped students included (with when and by whom)."""
        return [entry_view(e) for e in roster.entries(session)]

    @routes.post("/extensions", status_code=201)
    def extend(request: Request, session: SessionDep, who: Instructor, body: NewExtension) -> Granted:
        """Give a student more time on one topic (replacing their earlier extension of it)."""
        length = dt.timedelta(days=body.days, hours=body.hours)
        message = grant_extension(request, session, body.login, body.topic, length, f"{who.login} (API)", body.reason)
        return Granted(login=body.login, topic=body.topic, seconds=int(length.total_seconds()), message=message)

    @routes.post("/students", status_code=201)
    def add_student(session: SessionDep, _who: Instructor, body: NewStudent) -> IssuedToken:
        """Add a student, or re-admit a dropped one; their course token is in this answer only."""
        token, readmitted = on_roster(session, lambda: roster.enrol(session, body.login, body.name, body.email))
        return IssuedToken(login=body.login.strip(), token=token, readmitted=readmitted)

    @routes.delete("/students/{login}")
    def drop_student(session: SessionDep, who: Instructor, login: LoginPath) -> RosterEntry:
        """Drop a student: tokens revoked, page sessions ended, out of the gradebook; submissions kept."""
        entry, _revoked = on_roster(session, lambda: roster.drop(session, login, who.login))
        return entry_view(entry)

    @routes.post("/students/{login}/token")
    def rotate_student(session: SessionDep, _who: Instructor, login: LoginPath) -> IssuedToken:
        """A new course token for a student (in this answer only); their earlier tokens stop working."""
        return IssuedToken(login=login, token=on_roster(session, lambda: roster.new_token(session, login)))

    return routes


def matching(session: Session, topic: str | None) -> list[int]:
    """Ids of the submissions holding `topic` (every submission for None)."""
    rows = session.execute(select(Submission.id, Submission.topics)).all()
    return [i for i, names in rows if topic is None or topic in names.split(",")]


def grading_list(row: Submission) -> list[Grading]:
    """A submission's stored gradings (`GradeResult` rows), oldest first."""
    return [
        Grading(id=g.id, created_at=_iso(g.created_at) or "", worker=g.worker, score=g.score, max_score=g.max_score)
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
    request: Request, session: Session, fmt: str = "csv", canvas_ids: str = "", only: Sequence[str] = ()
) -> Response:
    """The gradebook export `fmt` of the topics `only` names (default: `exports.chosen_topics`)
    as a download; 400 naming the formats for another, or the topics for an unknown one."""
    try:
        if canvas_ids and fmt != "canvas":
            raise ValueError("canvas_ids goes with format=canvas")
        if fmt not in exports.FORMATS:
            raise ValueError(f"unknown export format; the formats are: {', '.join(exports.FORMATS)}")
        every = list(request.app.state.topics)
        topics = exports.chosen_topics(only, every, fmt, request.app.state.rules, dt.datetime.now(dt.UTC))
        ids = exports.canvas_ids_query(canvas_ids, every) if canvas_ids else None
    except ValueError as exc:
        raise HTTPException(400, str(exc)) from None
    rows, _ = standings(request, session)
    return PlainTextResponse(
        exports.render(fmt, rows, scores.outline(topics), ids, request.app.state.rules),
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
    request: Request, session: Session, login: str, topic: str, length: dt.timedelta, by: str, reason: str
) -> str:
    """`deadlines.grant` committed; 404 for a login not on the roster, 400 for another refusal."""
    if _dropped(session, login):
        raise HTTPException(404, "no such student on the roster (or dropped)")
    try:
        message = deadlines.grant(
            session, request.app.state.rules, request.app.state.topics, login, topic, length, by, reason
        )
        session.commit()
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
        last_submission=_iso(e.last_submission),
        dropped_at=_iso(e.dropped_at),
        dropped_by=e.dropped_by,
    )


def standings(request: Request, session: Session) -> tuple[list[scores.Standing], scores.Outline]:
    """Every student's counted scores (`scores`: which score counts) and the course's outline."""
    students = list(session.scalars(select(Student)))
    subs = list(session.scalars(select(Submission)))
    counted = scores.standings(students, subs, request.app.state.rules, deadlines.extensions(session))
    return counted, scores.outline(request.app.state.topics)


NO_LEADERBOARD = "the course has no leaderboard"


def require_leaderboard(request: Request) -> None:
    """404 unless the course's rules turn the speed leaderboard on (course.toml `[leaderboard]`)."""
    if not request.app.state.rules.leaderboard.enabled:
        raise HTTPException(404, NO_LEADERBOARD)


def leaderboard_view(request: Request, session: Session, who: Identity) -> LeaderboardView:
    """The board as the caller sees it (their own rows marked; an instructor sees who each row
    is); 404 when the course has none."""
    require_leaderboard(request)
    students = list(session.scalars(select(Student)))
    boards = leaderboard.board(
        students,
        session.scalars(select(Submission).where(Submission.result_json.is_not(None))),
        leaderboard.speed_exercises(request.app.state.topics),
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


def costly(request: Request, who: Identity) -> contextlib.AbstractContextManager:
    """Held while a view whose cost grows with what students uploaded is worked out (a
    submission's code, a diff, the similarity report, page or API): at most `pages_at_once`
    per caller (`limits.PerCaller`; past it, 429)."""
    return request.app.state.costly.held(f"{who.role}:{who.login}")


def similarity_rankings(
    request: Request, session: Session, who: Identity, topic: str, exercise: str | None = None
) -> list[similarity.Ranking] | None:
    """The similarity report of `topic` (one `exercise` of it, when given; 404 for one it does
    not have), worked out off the request path (`reports`): None where it is not done within the
    wait. A costly view of `who`'s (`limits.PerCaller`)."""
    rows, course = standings(request, session)
    exercises = list(course.exercises[topic])
    if exercise is not None:
        if exercise not in exercises:
            raise HTTPException(404, f"no such exercise in {topic}")
        exercises = [exercise]
    files = similarity.class_files(session, rows, topic)
    programs = similarity.class_programs(session, rows, topic)
    with costly(request, who):
        return request.app.state.reports.get(
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


def set_pseudonym(request: Request, session: Session, who: Identity, text: str | None) -> str | None:
    """Set (or with None clear) the caller's own pseudonym, committed; 404 without a leaderboard,
    403 for an instructor, 400 for one that does not fit the rules, 409 for one that is taken (or
    looks like a name on the roster), 429 past `leaderboard.TRIES` tries an hour."""
    require_leaderboard(request)
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

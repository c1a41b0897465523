"""The JSON API (`/api/...`; OpenAPI at `/api/openapi.json`), for `grade submit` and scripts.

Callers are known by their bearer token only. An upload's body is read, bounded, before any
database connection is taken, so a client sending slowly holds a socket, not the database.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Path, Query, Request, Response
from fastapi.responses import JSONResponse
from sqlalchemy import select
from starlette.concurrency import run_in_threadpool

from jaxlings import __version__
from jaxlings.service import deadlines, operations, roster, submitting
from jaxlings.service.db import Student, Submission
from jaxlings.service.deps import (
    MAX_ID,
    Caller,
    Instructor,
    SessionDep,
    StateDep,
    bearer,
    identify,
    read_body,
    visible,
)
from jaxlings.service.schemas import (
    Deadlines,
    Grading,
    Granted,
    Health,
    IssuedToken,
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
from jaxlings.service.state import AppState

SubmissionId = Annotated[int, Path(ge=1, le=MAX_ID, description="A submission's id.")]
LoginPath = Annotated[str, Path(min_length=1, max_length=200, description="A student's login.")]
ExportFormat = Annotated[str, Query(max_length=20, description="csv (ours), canvas or nbgrader.")]
CanvasIds = Annotated[
    str, Query(max_length=2000, description="With format=canvas: topic:assignment_id pairs, comma-separated.")
]
REFUSALS: dict[int | str, dict[str, Any]] = {
    code: {"model": Problem} for code in (400, 401, 403, 404, 409, 413, 422, 429, 503)
}

router = APIRouter(responses=REFUSALS)


@router.get("/health")
def health(session: SessionDep) -> Health:
    session.execute(select(1))
    return Health(ok=True, version=__version__)


@router.get("/topics")
def course_topics(state: StateDep) -> Topics:
    """The topics a submission may hold, in course order."""
    return Topics(topics=list(state.topics))


@router.get("/me")
def me(who: Caller) -> Me:
    return Me(login=who.login, role=who.role)


@router.get("/deadlines")
def course_deadlines(state: StateDep, who: Caller, session: SessionDep) -> Deadlines:
    """Where each dated topic stands for the caller now (`grade submit` prints it first)."""
    course = state.rules
    student = who.student_id if who.student_id is not None else -1
    granted = deadlines.extensions(session, [student])
    zone = deadlines.zone_for(session, course, who.student_id)
    now = dt.datetime.now(dt.UTC)
    lines = deadlines.status_lines(course, granted, student, state.topics, now, zone)
    return Deadlines(timezone=zone.key, topics=lines)


@router.put("/me/timezone")
def choose_timezone(state: StateDep, session: SessionDep, who: Caller, body: NewTimezone) -> Deadlines:
    """Read the course's dates in your own zone (an IANA name; "" for the course's): students only."""
    operations.set_timezone(session, who, body.timezone)
    return course_deadlines(state, who, session)


@router.get("/leaderboard")
def speed_leaderboard(state: StateDep, session: SessionDep, who: Caller) -> LeaderboardView:
    """The speed leaderboard, when the course has one: per speed-graded exercise, each
    pseudonymous student's best measured time ratio, fastest first."""
    return operations.leaderboard_view(state, session, who)


@router.put("/me/pseudonym")
def choose_pseudonym(state: StateDep, session: SessionDep, who: Caller, body: NewPseudonym) -> PseudonymView:
    """Choose (or change) your pseudonym on the speed leaderboard: students only, their own."""
    name = operations.set_pseudonym(state, session, who, body.pseudonym)
    return PseudonymView(pseudonym=name, message=f"you are on the speed leaderboard as {name}")


@router.delete("/me/pseudonym")
def leave_leaderboard(state: StateDep, session: SessionDep, who: Caller) -> PseudonymView:
    """Leave the speed leaderboard (your pseudonym is cleared; your submissions stay)."""
    operations.set_pseudonym(state, session, who, None)
    return PseudonymView(pseudonym=None, message="you are off the speed leaderboard")


@router.post(
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
    request: Request, state: StateDep, topics: Annotated[list[str] | None, Query(max_length=64)] = None
) -> JSONResponse:
    """Upload a zip of `<topic>.py` files as the request body (Content-Type: application/zip)."""
    token = bearer(request)
    if not token:  # refused before the body is read
        raise HTTPException(
            401,
            "no token: send `Authorization: Bearer <your course token>` (see `grade login`)",
            headers={"WWW-Authenticate": "Bearer"},
        )
    raw = await read_body(request, state.settings.max_upload_bytes)
    body = await run_in_threadpool(_submit_as, state, token, raw, topics)
    return JSONResponse(body.model_dump(), status_code=202)


@router.get("/submissions")
def history(
    state: StateDep,
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
    return [operations.view(state, session, row) for row in session.scalars(query)]


@router.get("/submissions/{submission_id}")
def one(state: StateDep, session: SessionDep, who: Caller, submission_id: SubmissionId) -> SubmissionView:
    return operations.view(state, session, visible(session, who, submission_id))


@router.get("/submissions/{submission_id}/results.json")
def results(session: SessionDep, who: Caller, submission_id: SubmissionId) -> Response:
    return operations.results_download(visible(session, who, submission_id))


@router.get("/submissions/{submission_id}/history")
def grading_history(session: SessionDep, who: Caller, submission_id: SubmissionId) -> list[Grading]:
    """Every stored grading of a submission, oldest first; the last is the one that counts."""
    return operations.grading_list(visible(session, who, submission_id))


@router.post("/submissions/{submission_id}/regrade")
def regrade_one(state: StateDep, session: SessionDep, who: Instructor, submission_id: SubmissionId) -> Regraded:
    visible(session, who, submission_id)
    return Regraded(**submitting.regrade(state, session, [submission_id]))


@router.post("/regrade")
def regrade_many(
    state: StateDep,
    session: SessionDep,
    _who: Instructor,
    topic: Annotated[str | None, Query(max_length=100)] = None,
    all: bool = False,
) -> Regraded:
    """Regrade every submission holding `topic`, or everything with `all=true`."""
    if not topic and not all:
        raise HTTPException(400, "say which: ?topic=NAME or ?all=true")
    if topic and topic not in state.topics:
        raise HTTPException(400, f"unknown topic {topic!r}; the topics are: {', '.join(state.topics)}")
    return Regraded(**submitting.regrade(state, session, operations.matching(session, None if all else topic)))


@router.get("/gradebook.csv")
def gradebook_csv(
    state: StateDep,
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
    return operations.csv_download(state, session, format, canvas_ids, topics or ())


@router.get("/similarity/{topic}")
def similarity_report(
    state: StateDep,
    session: SessionDep,
    _who: Instructor,
    topic: Annotated[str, Path(max_length=100, description="A topic of the course.")],
    top: Annotated[int, Query(ge=1, le=1000, description="Pairs shown per exercise.")] = 20,
) -> Similarity:
    """Per exercise of `topic`, the pairs of students whose counted submissions are most alike
    (`similarity`: normalised source, the stub, hints and reference discounted). Worked out
    off the request path (`reports`): 202 with Retry-After while it is not done."""
    if topic not in state.topics:
        raise HTTPException(404, f"no topic {topic!r} in this course (GET /api/topics lists them)")
    return operations.similarity_answer(topic, operations.similarity_rankings(state, session, _who, topic), top)


@router.get("/students")
def students(session: SessionDep, _who: Instructor) -> list[RosterEntry]:
    """The roster in login order, dropped students included (with when and by whom)."""
    return [operations.entry_view(e) for e in roster.entries(session)]


@router.post("/extensions", status_code=201)
def extend(state: StateDep, session: SessionDep, who: Instructor, body: NewExtension) -> Granted:
    """Give a student more time on one topic (replacing their earlier extension of it; one that
    takes time away needs `shorten`, else 409)."""
    length = dt.timedelta(days=body.days, hours=body.hours)
    message = operations.grant_extension(
        state, session, body.login, body.topic, length, f"{who.login} (API)", body.reason, body.shorten
    )
    return Granted(login=body.login, topic=body.topic, seconds=int(length.total_seconds()), message=message)


@router.post("/students", status_code=201)
def add_student(session: SessionDep, _who: Instructor, body: NewStudent) -> IssuedToken:
    """Add a student, or re-admit a dropped one; their course token is in this answer only."""
    token, readmitted = operations.on_roster(session, lambda: roster.enrol(session, body.login, body.name, body.email))
    return IssuedToken(login=body.login.strip(), token=token, readmitted=readmitted)


@router.delete("/students/{login}")
def drop_student(session: SessionDep, who: Instructor, login: LoginPath) -> RosterEntry:
    """Drop a student: tokens revoked, page sessions ended, out of the gradebook; submissions kept."""
    entry, _revoked = operations.on_roster(session, lambda: roster.drop(session, login, who.login))
    return operations.entry_view(entry)


@router.post("/students/{login}/token")
def rotate_student(session: SessionDep, _who: Instructor, login: LoginPath) -> IssuedToken:
    """A new course token for a student (in this answer only); their earlier tokens stop working."""
    return IssuedToken(login=login, token=operations.on_roster(session, lambda: roster.new_token(session, login)))


def _submit_as(state: AppState, token: str, raw: bytes, topics: list[str] | None) -> SubmissionView:
    """Authenticate, then submit, on a database session opened only now (after the body)."""
    with state.sessions() as session:
        who = identify(session, state.settings, token)
        row, duplicate, left_out = submitting.submit(state, session, who, raw, topics)
        return operations.view(state, session, row, duplicate).model_copy(update={"left_out": left_out})

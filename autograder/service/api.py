"""The HTTP side: the FastAPI app, its dependencies (session, caller), submitting, and the JSON API
(`/api/...`, OpenAPI at `/api/openapi.json`); the pages' routes are in `pages.py`.

Nothing here holds state between requests: every fact lives in the database, so any number of
API processes can serve one course. A submission is stored (file, upload row, submission row,
content hash) and committed before it is sent to the queue and before the 202 reply.
"""

from __future__ import annotations

import datetime as dt
import math
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Query, Request, Response
from fastapi.responses import JSONResponse, PlainTextResponse
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from autograder import __version__
from autograder.service import auth, db, gradebook, jobs, storage
from autograder.service.auth import Identity
from autograder.service.config import Settings
from autograder.service.db import DONE, QUEUED, Student, Submission, Upload, utcnow

COOKIE = "jaxlings_token"


def create_app(settings: Settings) -> FastAPI:
    """The whole service for these settings (the database is migrated at start)."""

    @asynccontextmanager
    async def lifespan(_app: FastAPI):
        db.upgrade(settings.db_url)
        storage_dir = Path(settings.data_dir)
        storage_dir.mkdir(parents=True, exist_ok=True)
        jobs.declare_queue(_app.state.celery, settings)
        yield

    if settings.hub_api_url:
        auth.require_hub_support()
    base = settings.base_path
    app = FastAPI(title="jaxlings grading service", version=__version__, lifespan=lifespan,
                  openapi_url=f"{base}/api/openapi.json", docs_url=f"{base}/api/docs", redoc_url=None)
    app.state.settings = settings
    app.state.celery = jobs.make_celery(settings)
    app.state.sessions = db.sessions(settings.db_url)
    app.state.topics = settings.topics or _course_topics()
    app.include_router(api_router(), prefix=f"{base}/api")
    from autograder.service.pages import page_router  # the pages build on this module's dependencies

    app.include_router(page_router(), prefix=base)
    app.add_exception_handler(storage.UploadError, _upload_error)
    return app


def from_env() -> FastAPI:
    """The app for the settings in the environment (uvicorn's factory when it runs several processes)."""
    from autograder.service import config

    return create_app(config.from_env())


def _course_topics() -> tuple[str, ...]:
    from autograder import topics

    return topics.ORDER


def _upload_error(_request: Request, exc: storage.UploadError) -> JSONResponse:
    return JSONResponse({"detail": str(exc)}, status_code=exc.status)


# ---------------------------------------------------------------- dependencies


def get_session(request: Request):
    with request.app.state.sessions() as session:
        yield session


SessionDep = Annotated[Session, Depends(get_session)]


def bearer(request: Request) -> str:
    """The token of a request: `Authorization: Bearer|token X`, else the pages' cookie."""
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() in ("bearer", "token") and value.strip():
        return value.strip()
    return request.cookies.get(COOKIE, "")


def current(request: Request, session: SessionDep) -> Identity:
    """The caller, or 401 saying what is missing."""
    token = bearer(request)
    if not token:
        raise HTTPException(401, "no token: send `Authorization: Bearer <your course token>` (see `grade login`)",
                            headers={"WWW-Authenticate": "Bearer"})
    who = auth.identify(session, token, request.app.state.settings)
    if who is None:
        raise HTTPException(401, "unknown or revoked token", headers={"WWW-Authenticate": "Bearer"})
    return who


Caller = Annotated[Identity, Depends(current)]


def instructor(who: Caller) -> Identity:
    if not who.is_instructor:
        raise HTTPException(403, "instructors only")
    return who


Instructor = Annotated[Identity, Depends(instructor)]


def visible(session: Session, who: Identity, submission_id: int) -> Submission:
    """A submission the caller may see; others' are 404, exactly like ones that do not exist."""
    row = session.get(Submission, submission_id)
    if row is None or (not who.is_instructor and row.student_id != who.student_id):
        raise HTTPException(404, f"no submission {submission_id}")
    return row


# ---------------------------------------------------------------- submitting


def submit(request: Request, session: Session, who: Identity, raw: bytes, wanted: list[str] | None) -> tuple[Submission, bool]:
    """Check, store and queue an upload; (the submission, whether it was already there)."""
    settings: Settings = request.app.state.settings
    if who.is_instructor:
        raise HTTPException(403, "instructor tokens do not submit; use a student's course token")
    checked = storage.check_upload(raw, request.app.state.topics, max_bytes=settings.max_upload_bytes,
                                   max_unpacked=settings.max_unpacked_bytes)
    names = _topics_for(request.app.state.topics, wanted, checked.files)
    existing = _existing(session, who.student_id, checked.digest, names)
    if existing is not None:
        if existing.status == QUEUED and existing.sent_at is None:  # stored, but its sender died before sending
            jobs.send(request.app.state.celery, settings, [existing.id])
        return existing, True
    _rate_limit(session, settings, who.student_id, names)
    storage.keep_file(settings.data_dir, checked.digest, checked.data)
    row = _store(session, who.student_id, checked, names)
    if settings.reply_delay:
        time.sleep(settings.reply_delay)
    jobs.send(request.app.state.celery, settings, [row.id])
    return row, False


def _topics_for(known: tuple[str, ...], wanted: list[str] | None, files: dict[str, bytes]) -> str:
    """The topics to grade, in course order: those asked for, else those in the zip."""
    unknown = [t for t in wanted or () if t not in known]
    if unknown:
        raise storage.UploadError(f"unknown topic(s) {', '.join(unknown)}; the topics are: {', '.join(known)}")
    chosen = set(wanted or files)
    return ",".join(t for t in known if t in chosen)


def _existing(session: Session, student_id: int, digest: str, topics: str) -> Submission | None:
    return session.scalar(select(Submission).where(Submission.student_id == student_id, Submission.digest == digest,
                                                   Submission.topics == topics))


def _rate_limit(session: Session, settings: Settings, student_id: int, topics: str) -> None:
    """429 with Retry-After when any of these topics had rate_limit submissions in the window."""
    now = utcnow()
    since = now - dt.timedelta(seconds=settings.rate_window)
    recent = session.execute(select(Submission.created_at, Submission.topics).where(
        Submission.student_id == student_id, Submission.created_at > since)).all()
    for topic in topics.split(","):
        times = sorted(t for t, names in recent if topic in names.split(","))
        if len(times) >= settings.rate_limit:
            wait = math.ceil((times[-settings.rate_limit] - since).total_seconds()) + 1
            raise HTTPException(429, f"too many submissions of {topic}: {settings.rate_limit} per "
                                     f"{settings.rate_window} s; try again in {wait} s",
                                headers={"Retry-After": str(wait)})


def _store(session: Session, student_id: int, checked: storage.Checked, topics: str) -> Submission:
    """Insert the upload (once per content) and the submission row, committed."""
    for attempt in range(3):
        try:
            if session.get(Upload, checked.digest) is None:
                session.add(Upload(digest=checked.digest, data=checked.data, size=len(checked.data)))
                session.flush()
            row = Submission(student_id=student_id, digest=checked.digest, topics=topics)
            session.add(row)
            session.commit()
            return row
        except IntegrityError:  # the same upload or submission stored by a concurrent request
            session.rollback()
            existing = _existing(session, student_id, checked.digest, topics)
            if existing is not None:
                return existing
    raise HTTPException(503, "could not store the submission; send it again")


def view(request: Request, session: Session, row: Submission) -> dict[str, Any]:
    """A submission as the API shows it."""
    base = request.app.state.settings.base_path
    return {
        "id": row.id, "student": row.student.login, "topics": row.topic_list, "status": row.status,
        "progress": row.progress, "position": jobs.position(session, row), "digest": row.digest,
        "created_at": _iso(row.created_at), "started_at": _iso(row.started_at), "finished_at": _iso(row.finished_at),
        "attempts": row.attempts, "score": row.score, "max_score": row.max_score, "error": row.error,
        "results_url": f"{base}/api/submissions/{row.id}/results.json" if row.status == DONE else None,
        "page_url": f"{base}/submissions/{row.id}",
    }


def _iso(t: dt.datetime | None) -> str | None:
    return t.isoformat() + "Z" if t else None


def regrade(request: Request, session: Session, ids: list[int]) -> dict[str, Any]:
    queued = jobs.requeue(session, ids)
    session.commit()
    jobs.send(request.app.state.celery, request.app.state.settings, queued)
    return {"queued": queued, "skipped": sorted(set(ids) - set(queued))}


# ---------------------------------------------------------------- JSON API


def api_router() -> APIRouter:
    router = APIRouter()

    @router.get("/health")
    def health(session: SessionDep) -> dict[str, Any]:
        session.execute(select(1))
        return {"ok": True, "version": __version__}

    @router.get("/topics")
    def course_topics(request: Request) -> dict[str, Any]:
        """The topics a submission may hold, in course order."""
        return {"topics": list(request.app.state.topics)}

    @router.get("/me")
    def me(who: Caller) -> dict[str, Any]:
        return {"login": who.login, "role": who.role}

    @router.post("/submissions", status_code=202, responses={400: {}, 401: {}, 403: {}, 413: {}, 429: {}},
                 openapi_extra={"requestBody": {"required": True, "content": {
                     "application/zip": {"schema": {"type": "string", "format": "binary"}}}}})
    async def create(request: Request, session: SessionDep, who: Caller,
                     topics: Annotated[list[str] | None, Query()] = None) -> JSONResponse:
        """Upload a zip of `<topic>.py` files as the request body (Content-Type: application/zip)."""
        raw = await _read_capped(request, request.app.state.settings.max_upload_bytes)
        row, duplicate = await run_in_threadpool(submit, request, session, who, raw, topics)
        body = {**await run_in_threadpool(view, request, session, row), "duplicate": duplicate}
        return JSONResponse(body, status_code=202)

    @router.get("/submissions")
    def history(request: Request, session: SessionDep, who: Caller, student: str | None = None,
                limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> list[dict[str, Any]]:
        query = select(Submission).order_by(Submission.id.desc()).limit(limit)
        if not who.is_instructor:
            query = query.where(Submission.student_id == who.student_id)
        elif student:
            query = query.join(Student).where(Student.login == student)
        return [view(request, session, row) for row in session.scalars(query)]

    @router.get("/submissions/{submission_id}")
    def one(request: Request, session: SessionDep, who: Caller, submission_id: int) -> dict[str, Any]:
        return view(request, session, visible(session, who, submission_id))

    @router.get("/submissions/{submission_id}/results.json")
    def results(session: SessionDep, who: Caller, submission_id: int) -> Response:
        row = visible(session, who, submission_id)
        if row.status != DONE:
            raise HTTPException(409, f"submission {submission_id} is {row.status}, not graded yet")
        return Response(row.result_json, media_type="application/json",
                        headers={"Content-Disposition": f'attachment; filename="results-{submission_id}.json"'})

    @router.post("/submissions/{submission_id}/regrade")
    def regrade_one(request: Request, session: SessionDep, _who: Instructor, submission_id: int) -> dict[str, Any]:
        visible(session, _who, submission_id)
        return regrade(request, session, [submission_id])

    @router.post("/regrade")
    def regrade_many(request: Request, session: SessionDep, _who: Instructor, topic: str | None = None,
                     all: bool = False) -> dict[str, Any]:
        """Regrade every submission holding `topic`, or everything with `all=true`."""
        if not topic and not all:
            raise HTTPException(400, "say which: ?topic=NAME or ?all=true")
        rows = session.execute(select(Submission.id, Submission.topics)).all()
        return regrade(request, session, [i for i, names in rows if all or topic in names.split(",")])

    @router.get("/gradebook.csv")
    def gradebook_csv(request: Request, session: SessionDep, _who: Instructor) -> Response:
        rows, topics = gradebook_rows(request, session)
        return PlainTextResponse(gradebook.to_csv(rows, topics), media_type="text/csv",
                                 headers={"Content-Disposition": 'attachment; filename="gradebook.csv"'})

    return router


async def _read_capped(request: Request, limit: int) -> bytes:
    """The request body, refusing (413) past `limit` bytes before reading it all."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise storage.UploadError(f"the upload is {declared} bytes; the limit is {limit} bytes", 413)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise storage.UploadError(f"the upload is over the limit of {limit} bytes", 413)
        chunks.append(chunk)
    return b"".join(chunks)


def gradebook_rows(request: Request, session: Session) -> tuple[list[gradebook.Row], list[str]]:
    students = list(session.scalars(select(Student)))
    subs = list(session.scalars(select(Submission)))
    return gradebook.gradebook(students, subs), list(request.app.state.topics)

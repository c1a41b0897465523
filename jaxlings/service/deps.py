"""The request dependencies shared by the JSON API and the pages: the app's state, a database
session, the caller; and what both read of a request themselves (an upload's body, a page's form).

The JSON API knows its caller by a bearer token only (`Authorization: Bearer <token>`); a page's
cookie is never a credential there, so a page on another site cannot drive the API through a
logged-in browser. The pages know theirs by a page session (`websession`), and take a form only
from their own origin with the session's CSRF token (`check_form`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Annotated, Any

from fastapi import Depends, HTTPException, Request
from sqlalchemy.orm import Session

from jaxlings.service import auth, storage, websession
from jaxlings.service.auth import Identity
from jaxlings.service.config import Settings
from jaxlings.service.db import UNREACHABLE, Submission, WebSession
from jaxlings.service.jobs import one_line
from jaxlings.service.security import same_origin
from jaxlings.service.state import AppState

log = logging.getLogger("jaxlings.http")
MAX_ID = 2**31 - 1  # ids beyond a 32-bit integer are nobody's (and would overflow PostgreSQL's integer)
FOREIGN = "this form came from another site or an old page; reload the page and try again"


async def get_state(request: Request) -> AppState:
    """The app's state, built once by `create_app` (`state.AppState`)."""
    return AppState.of(request.app)


StateDep = Annotated[AppState, Depends(get_state)]


async def get_settings(state: StateDep) -> Settings:
    """The app's settings."""
    return state.settings


SettingsDep = Annotated[Settings, Depends(get_settings)]


def get_session(state: StateDep) -> Iterator[Session]:
    """One database session per request, closed after the response (a connection the database
    dropped meanwhile costs a log line there, not a traceback after the reply)."""
    session = state.sessions()
    try:
        yield session
    finally:
        try:
            session.close()
        except UNREACHABLE as exc:
            log.warning("closing a database session: %s", one_line(exc))


SessionDep = Annotated[Session, Depends(get_session)]


def bearer(request: Request) -> str:
    """The token of a request's `Authorization: Bearer|token X` header ('' when there is none)."""
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    return value.strip() if scheme.lower() in ("bearer", "token") else ""


def identify(session: Session, settings: Settings, token: str) -> Identity:
    """The identity behind `token`, or 401 saying what is missing."""
    if not token:
        raise HTTPException(
            401,
            "no token: send `Authorization: Bearer <your course token>` (see `grade login`)",
            headers={"WWW-Authenticate": "Bearer"},
        )
    who = auth.identify(session, token, settings)
    if who is None:
        raise HTTPException(401, "unknown or revoked token", headers={"WWW-Authenticate": "Bearer"})
    return who


def current(request: Request, session: SessionDep, settings: SettingsDep) -> Identity:
    """The JSON API's caller (bearer token only)."""
    return identify(session, settings, bearer(request))


Caller = Annotated[Identity, Depends(current)]


def instructor(who: Caller) -> Identity:
    if not who.is_instructor:
        raise HTTPException(403, "instructors only")
    return who


Instructor = Annotated[Identity, Depends(instructor)]


def visible(session: Session, who: Identity, submission_id: int) -> Submission:
    """A submission the caller may see; others' are 404, exactly like ones that do not exist."""
    row = session.get(Submission, submission_id) if 1 <= submission_id <= MAX_ID else None
    if row is None or (not who.is_instructor and row.student_id != who.student_id):
        raise HTTPException(404, f"no submission {submission_id}")
    return row


def visitor(request: Request, session: Session) -> tuple[Identity, WebSession] | None:
    """A page's visitor: their page session's identity and row, or None when not logged in."""
    row = websession.lookup(session, request.cookies.get(websession.COOKIE, ""))
    return (websession.identity(row), row) if row is not None else None


def instructor_visitor(request: Request, session: Session) -> tuple[Identity, WebSession] | None:
    """An instructor's page session, None when not logged in; 403 for a student."""
    found = visitor(request, session)
    if found is not None and not found[0].is_instructor:
        raise HTTPException(403, "the gradebook is for instructors; your own page is /me")
    return found


def check_form(request: Request, settings: Settings, row: WebSession, csrf: Any) -> None:
    """403 unless the form comes from our own origin and carries the session's CSRF token."""
    if not same_origin(request, settings) or not websession.same(row.csrf, csrf):
        raise HTTPException(403, FOREIGN)


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

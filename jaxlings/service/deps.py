"""The request dependencies shared by the JSON API and the pages: a database session, the caller.

The JSON API knows its caller by a bearer token only (`Authorization: Bearer <token>`); a page's
cookie is never a credential there, so a page on another site cannot drive the API through a
logged-in browser. The pages know theirs by a page session (`websession`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from sqlalchemy.orm import Session

from jaxlings.service import auth
from jaxlings.service.auth import Identity
from jaxlings.service.db import UNREACHABLE, Submission
from jaxlings.service.jobs import one_line

log = logging.getLogger("jaxlings.http")
MAX_ID = 2**31 - 1  # ids beyond a 32-bit integer are nobody's (and would overflow PostgreSQL's integer)


def get_session(request: Request) -> Iterator[Session]:
    """One database session per request, closed after the response (a connection the database
    dropped meanwhile costs a log line there, not a traceback after the reply)."""
    session = request.app.state.sessions()
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


def identify(session: Session, request: Request, token: str) -> Identity:
    """The identity behind `token`, or 401 saying what is missing."""
    if not token:
        raise HTTPException(
            401,
            "no token: send `Authorization: Bearer <your course token>` (see `grade login`)",
            headers={"WWW-Authenticate": "Bearer"},
        )
    who = auth.identify(session, token, request.app.state.settings)
    if who is None:
        raise HTTPException(401, "unknown or revoked token", headers={"WWW-Authenticate": "Bearer"})
    return who


def current(request: Request, session: SessionDep) -> Identity:
    """The JSON API's caller (bearer token only)."""
    return identify(session, request, bearer(request))


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

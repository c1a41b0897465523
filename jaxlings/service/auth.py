"""Who is asking: course tokens (stored as SHA-256 digests), instructor tokens, JupyterHub tokens.

A token is 32 random bytes (URL-safe), so a plain SHA-256 digest is enough to store it: there
is nothing to brute-force. A token lives until it is revoked (`revoke`, `rotate`, or re-adding
its student); revoking also ends the page sessions opened with it. On JupyterHub (hub settings
present) a token we do not know is asked of the hub through `jupyterhub.services.auth.HubAuth`;
a hub user becomes a student of the same login, and a hub admin or a member of the instructors
group an instructor. A hub that cannot answer is `HubUnavailable` (a 503), never a 500.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import secrets
import threading
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from jaxlings.service import leaderboard
from jaxlings.service.config import Settings
from jaxlings.service.db import Student, Token, WebSession, student_by_login, utcnow

STUDENT, INSTRUCTOR = "student", "instructor"
PREFIX = "jxl_"
HUB_TIMEOUT = 10.0  # seconds one question to the hub may take before it counts as unreachable


class HubUnavailable(Exception):
    """JupyterHub could not say whose a token is (down, timing out, failing, refusing our service token)."""


@dataclass(frozen=True)
class Identity:
    """The caller: a role, the student row for students, and the token row it came with (None for hub tokens)."""

    role: str
    student_id: int | None
    login: str
    token_id: int | None = None

    @property
    def is_instructor(self) -> bool:
        return self.role == INSTRUCTOR


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def new_token(session: Session, role: str, *, student: Student | None = None, label: str = "") -> str:
    """Create a token, store only its digest, and return the token itself (shown once)."""
    token = PREFIX + secrets.token_urlsafe(32)
    session.add(
        Token(
            digest=digest(token),
            role=role,
            student_id=student.id if student else None,
            label=label or (student.login if student else ""),
        )
    )
    return token


def add_student(session: Session, login: str, name: str = "", email: str = "") -> tuple[Student, str]:
    """A roster entry and a fresh course token for it.

    An existing login keeps its submissions, takes the name and email given (when given), and has
    its token rotated: the tokens it had are revoked, so only the one returned here works.
    """
    login = login.strip()
    if not login:
        raise ValueError("a roster row has an empty login")
    student = student_by_login(session, login)
    if student is None:
        student = Student(login=login, name=name.strip(), email=email.strip())
        session.add(student)
        session.flush()
        leaderboard.release_clashes(session, student)
        return student, new_token(session, STUDENT, student=student)
    student.name = name.strip() or student.name
    student.email = email.strip() or student.email
    leaderboard.release_clashes(session, student)
    return student, rotate(session, login=login)


def revoke(session: Session, *, login: str | None = None, instructor: str | None = None) -> int:
    """Revoke every live token of a student (by login) or every instructor token with this label.

    The page sessions opened with those tokens are deleted too. Returns how many tokens were
    revoked (0 when they already all were); a ValueError names a login or label we do not know.
    """
    rows = _tokens_of(session, login, instructor)
    live = [t for t in rows if not t.revoked]
    now = utcnow()
    for token in live:
        token.revoked, token.revoked_at = True, now
    if live:
        session.execute(delete(WebSession).where(WebSession.token_id.in_([t.id for t in live])))
    session.flush()
    return len(live)


def rotate(session: Session, *, login: str | None = None, instructor: str | None = None) -> str:
    """Revoke the tokens of a student or instructor label, and return a fresh one (shown once)."""
    revoke(session, login=login, instructor=instructor)  # unknown names fail here, before anything changes
    if login is not None:
        return new_token(session, STUDENT, student=student_by_login(session, login))
    assert instructor is not None  # `revoke` refused neither
    return new_token(session, INSTRUCTOR, label=instructor)


def _tokens_of(session: Session, login: str | None, instructor: str | None) -> list[Token]:
    """All token rows of a student (the login must be on the roster) or of an instructor label (one must exist).

    The rows are locked (PostgreSQL) so that two rotations at once leave one live token, not two.
    """
    if (login is None) == (instructor is None):
        raise ValueError("name either a student's login or an instructor's label, not both or neither")
    if login is not None:
        student = session.scalar(select(Student).where(Student.login == login).with_for_update())
        if student is None:
            raise ValueError(
                f"no student with login {login!r} on the roster; add them with `grade course add-students`"
            )
        return list(session.scalars(select(Token).where(Token.student_id == student.id).with_for_update()))
    rows = list(
        session.scalars(select(Token).where(Token.role == INSTRUCTOR, Token.label == instructor).with_for_update())
    )
    if not rows:
        raise ValueError(f"no instructor token labelled {instructor!r}; create one with `grade course add-instructor`")
    return rows


def identify(session: Session, token: str, settings: Settings) -> Identity | None:
    """The identity behind a bearer token, or None for an unknown or revoked one.

    Raises HubUnavailable when the token is for JupyterHub to judge and the hub cannot answer.
    """
    if not token:
        return None
    row = session.scalar(select(Token).where(Token.digest == digest(token), Token.revoked.is_(False)))
    if row is not None:
        if row.role == INSTRUCTOR:
            return Identity(INSTRUCTOR, None, row.label or "instructor", row.id)
        student = session.get(Student, row.student_id)
        if student is None:  # a student's token always has its student (foreign key); nothing to identify
            return None
        return Identity(STUDENT, student.id, student.login, row.id)
    if settings.hub_api_url and not token.startswith(PREFIX):
        return _hub_identity(session, token, settings)
    return None


def _hub_identity(session: Session, token: str, settings: Settings) -> Identity | None:
    """Ask JupyterHub whose token this is; its users become students, its admins instructors."""
    user = hub_user(settings.hub_api_url, settings.hub_api_token, token)
    if not user or user.get("kind", "user") != "user":
        return None
    login = user["name"]
    if user.get("admin") or settings.hub_instructor_group in (user.get("groups") or []):
        return Identity(INSTRUCTOR, None, login)
    student = student_by_login(session, login)
    if student is None:
        student = Student(login=login, name=login, email="")
        session.add(student)
        session.commit()
    elif student.dropped_at is not None:  # dropped from the roster: the hub's token no longer opens the course
        return None
    return Identity(STUDENT, student.id, login)


def hub_user(api_url: str, api_token: str, token: str) -> dict[str, Any] | None:
    """The hub's user model for `token` (None for a token the hub does not know), asked within HUB_TIMEOUT.

    HubAuth's own blocking call runs every question in one background thread with aiohttp's
    5-minute default timeout, so one hanging hub would queue every request behind it. Here the
    question runs on a shared event loop of ours, bounded by HUB_TIMEOUT, so a hanging hub costs
    each request at most that long and the others are not queued behind it.
    """
    from tornado.web import HTTPError

    question = _hub_auth(api_url, api_token).user_for_token(token, use_cache=True, sync=False)
    future = asyncio.run_coroutine_threadsafe(asyncio.wait_for(question, HUB_TIMEOUT), _hub_loop(os.getpid()))
    try:
        return future.result(HUB_TIMEOUT + 5)
    except HTTPError as exc:  # HubAuth's words for: cannot connect, the hub failed (5xx), other 4xx
        raise HubUnavailable(_hub_failure(exc)) from None
    except TimeoutError:
        raise HubUnavailable(f"JupyterHub did not answer within {HUB_TIMEOUT:g} s; try again shortly") from None


def _hub_failure(exc) -> str:
    """One line for the HTTPError HubAuth raised when the hub could not judge a token.

    It reaches whoever sent the token, so it names no address (HubAuth logs the hub's URL itself).
    """
    said = (exc.log_message or "").split(".  ")[0].strip()
    if said.startswith("Failed to connect"):
        return "JupyterHub cannot be reached to check the token; try again shortly"
    if exc.status_code == 502:
        return "JupyterHub failed (a server error) while checking the token; try again shortly"
    return f"JupyterHub could not check the token ({said or exc.status_code}); try again shortly"


@lru_cache(maxsize=1)
def _hub_loop(pid: int) -> asyncio.AbstractEventLoop:
    """One event loop, in a daemon thread, for the questions this process asks the hub (a forked child: its own)."""
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, name="jaxlings-hub", daemon=True).start()
    return loop


def require_hub_support() -> None:
    """Fail at start, not at the first request, when hub tokens are on but JupyterHub is missing."""
    try:
        import jupyterhub.services.auth  # noqa: F401
    except ImportError:
        raise RuntimeError(
            "accepting JupyterHub tokens needs the jupyterhub package beside the service "
            "(pip install jupyterhub), or unset JAXLINGS_HUB_API_URL / JUPYTERHUB_API_URL"
        ) from None


@lru_cache(maxsize=4)
def _hub_auth(api_url: str, api_token: str):
    """One HubAuth client per hub (it caches the hub's answers for a short while)."""
    from jupyterhub.services.auth import HubAuth

    return HubAuth(api_url=api_url, api_token=api_token, cache_max_age=60)

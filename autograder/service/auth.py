"""Who is asking: course tokens (stored as SHA-256 digests), instructor tokens, JupyterHub tokens.

A token is 32 random bytes (URL-safe), so a plain SHA-256 digest is enough to store it: there
is nothing to brute-force. On JupyterHub (hub settings present) a token we do not know is asked
of the hub through `jupyterhub.services.auth.HubAuth`; a hub user becomes a student of the same
login, and a hub admin or a member of the instructors group an instructor.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from functools import lru_cache

from sqlalchemy import select
from sqlalchemy.orm import Session

from autograder.service.config import Settings
from autograder.service.db import Student, Token, student_by_login

STUDENT, INSTRUCTOR = "student", "instructor"
PREFIX = "jxl_"


@dataclass(frozen=True)
class Identity:
    """The caller: a role, and the student row for students."""

    role: str
    student_id: int | None
    login: str

    @property
    def is_instructor(self) -> bool:
        return self.role == INSTRUCTOR


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def new_token(session: Session, role: str, *, student: Student | None = None, label: str = "") -> str:
    """Create a token, store only its digest, and return the token itself (shown once)."""
    token = PREFIX + secrets.token_urlsafe(32)
    session.add(Token(digest=digest(token), role=role, student_id=student.id if student else None,
                      label=label or (student.login if student else "")))
    return token


def add_student(session: Session, login: str, name: str = "", email: str = "") -> tuple[Student, str]:
    """A roster entry and a fresh course token for it (an existing login gets a new token)."""
    login = login.strip()
    if not login:
        raise ValueError("a roster row has an empty login")
    student = student_by_login(session, login)
    if student is None:
        student = Student(login=login, name=name.strip(), email=email.strip())
        session.add(student)
        session.flush()
    return student, new_token(session, STUDENT, student=student)


def identify(session: Session, token: str, settings: Settings) -> Identity | None:
    """The identity behind a bearer token, or None for an unknown or revoked one."""
    if not token:
        return None
    row = session.scalar(select(Token).where(Token.digest == digest(token), Token.revoked.is_(False)))
    if row is not None:
        if row.role == INSTRUCTOR:
            return Identity(INSTRUCTOR, None, row.label or "instructor")
        student = session.get(Student, row.student_id)
        return Identity(STUDENT, student.id, student.login)
    if settings.hub_api_url and not token.startswith(PREFIX):
        return _hub_identity(session, token, settings)
    return None


def _hub_identity(session: Session, token: str, settings: Settings) -> Identity | None:
    """Ask JupyterHub whose token this is; its users become students, its admins instructors."""
    user = _hub_auth(settings.hub_api_url, settings.hub_api_token).user_for_token(token, use_cache=True)
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
    return Identity(STUDENT, student.id, login)


def require_hub_support() -> None:
    """Fail at start, not at the first request, when hub tokens are on but JupyterHub is missing."""
    try:
        import jupyterhub.services.auth  # noqa: F401
    except ImportError:
        raise RuntimeError("accepting JupyterHub tokens needs the jupyterhub package beside the service "
                           "(pip install jupyterhub), or unset JAXLINGS_HUB_API_URL / JUPYTERHUB_API_URL") from None


@lru_cache(maxsize=4)
def _hub_auth(api_url: str, api_token: str):
    """One HubAuth client per hub (it caches the hub's answers for a short while)."""
    from jupyterhub.services.auth import HubAuth

    return HubAuth(api_url=api_url, api_token=api_token, cache_max_age=60)

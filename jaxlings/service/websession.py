"""Page sessions, apart from the tokens people log in with, and their CSRF tokens.

Logging in on the login page makes a new server-side session (a random id in the cookie
`jaxlings_session`, only its SHA-256 stored) with its own CSRF token; every form of the pages
carries that token. Logging out deletes the row, so the old cookie opens nothing; a session
expires after `session_hours`, and one made with a token ends when that token is revoked.

Login itself is guarded too (login CSRF, where a page elsewhere logs a victim in as the
attacker): the login form carries a token that must match a cookie set with the form.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import secrets
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from jaxlings.service.auth import Identity
from jaxlings.service.config import Settings
from jaxlings.service.db import Token, WebSession, utcnow

COOKIE = "jaxlings_session"
LOGIN_COOKIE = "jaxlings_login_csrf"


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def new_secret() -> str:
    return secrets.token_urlsafe(32)


def start(session: Session, who: Identity, settings: Settings) -> tuple[str, WebSession]:
    """A new session for `who` (committed); (the cookie's value, the row). Expired rows are swept."""
    now = utcnow()
    session.execute(delete(WebSession).where(WebSession.expires_at < now))
    value = new_secret()
    row = WebSession(
        digest=_digest(value),
        csrf=new_secret(),
        role=who.role,
        login=who.login,
        student_id=who.student_id,
        token_id=who.token_id,
        created_at=now,
        expires_at=now + dt.timedelta(hours=settings.session_hours),
    )
    session.add(row)
    session.commit()
    return value, row


def lookup(session: Session, value: str) -> WebSession | None:
    """The live session whose cookie value this is (not expired, its token not revoked), else None."""
    if not value:
        return None
    row = session.scalar(
        select(WebSession).where(WebSession.digest == _digest(value), WebSession.expires_at > utcnow())
    )
    if row is None:
        return None
    if row.token_id is not None:
        token = session.get(Token, row.token_id)
        if token is None or token.revoked:
            return None
    return row


def identity(row: WebSession) -> Identity:
    return Identity(row.role, row.student_id, row.login, row.token_id)


def end(session: Session, value: str) -> None:
    """Delete the session whose cookie value this is (logging out)."""
    if value:
        session.execute(delete(WebSession).where(WebSession.digest == _digest(value)))
        session.commit()


def same(expected: str, given: str | None) -> bool:
    """Whether a form's CSRF field matches (constant time; empty never matches)."""
    return bool(expected) and isinstance(given, str) and hmac.compare_digest(expected.encode(), given.encode())


def cookie_options(settings: Settings) -> dict[str, Any]:
    """How the pages' cookies are set: HttpOnly, SameSite=Strict, on the service's path, Secure on https."""
    return {"httponly": True, "samesite": "strict", "path": settings.base_path or "/", "secure": settings.secure}

"""The course roster: students from a CSV (login, name, email), one at a time, dropped, listed,
and the tokens handed to them.

Tokens are shown once: `add_students` writes them to a file only its owner can read, and
`rotate_token` returns one to print. Re-adding a student who is already on the roster rotates
their token (the old ones stop working), and the file says so.

The one-student operations (`enrol`, `drop`, `new_token`, `entries`) take a database session so
that the CLI (`grade course add-student|drop|rotate-token|roster`, through the wrappers that open
one) and the instructors' API (`/api/students`) run the same code. Dropping a student keeps
everything they submitted, revokes their tokens and ends their page sessions, and leaves them out
of the gradebook and its exports (`scores`); adding them again re-admits them with a new token.
"""

from __future__ import annotations

import csv
import datetime as dt
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from jaxlings.service import auth, db, storage
from jaxlings.service.config import Settings

NEW, ROTATED = "new", "rotated: earlier tokens revoked"
READMITTED = "re-admitted (was dropped): earlier tokens revoked"
LOGIN = re.compile(r"[^\s\x00-\x1f\x7f]{1,200}")  # no spaces or control characters; the column's length


class UnknownStudent(ValueError):
    """A login that is not on the roster."""


class RosterConflict(ValueError):
    """An operation the student's state does not allow (adding one already enrolled, a token for a dropped one)."""


def read_roster(path: Path) -> list[dict[str, str]]:
    """The rows of a roster CSV; a ValueError naming the problem (no login column, empty or repeated logins)."""
    with open(path, newline="", encoding="utf-8-sig") as f:
        reader = csv.DictReader(f)
        if not reader.fieldnames or "login" not in [h.strip().lower() for h in reader.fieldnames]:
            raise ValueError(
                f"{path}: the first line must be a header with a 'login' column (and optionally name, email)"
            )
        rows = [{k.strip().lower(): (v or "").strip() for k, v in row.items() if k} for row in reader]
    empty = [i + 2 for i, row in enumerate(rows) if not row.get("login")]
    if empty:
        raise ValueError(f"{path}: line(s) {', '.join(map(str, empty))} have no login")
    seen: dict[str, int] = {}
    for i, row in enumerate(rows):
        if row["login"] in seen:  # the second would revoke the token just issued to the first
            raise ValueError(
                f"{path}: line {i + 2} repeats login {row['login']!r} of line {seen[row['login']]}; "
                "keep one line per student"
            )
        seen[row["login"]] = i + 2
    return rows


def add_students(settings: Settings, roster: Path, out: Path) -> tuple[int, int]:
    """Add every roster student and write login,name,email,token,note to `out` (mode 0600).

    Returns (students added, students already there whose token was rotated). The file is
    written before the database commits and put in place after, so a failure leaves neither
    tokens nobody has seen nor a file of tokens that do not work.
    """
    rows = read_roster(roster)
    storage.ready(settings)
    added = rotated = 0
    with private_file(out) as f, db.sessions(settings.db_url).begin() as session:
        writer = csv.writer(f)
        writer.writerow(["login", "name", "email", "token", "note"])
        for row in rows:
            before = db.student_by_login(session, row["login"])
            note = NEW if before is None else READMITTED if before.dropped_at else ROTATED
            student, token = auth.add_student(session, row["login"], row.get("name", ""), row.get("email", ""))
            student.dropped_at, student.dropped_by = None, ""  # on the roster again
            writer.writerow([student.login, student.name, student.email, token, note])
            known = before is not None
            rotated, added = rotated + known, added + (not known)
    return added, rotated


class private_file:
    """A text file written beside `path` with mode 0600 from its creation, renamed onto `path` on success."""

    def __init__(self, path: Path):
        self.path = Path(path)

    def __enter__(self):
        fd, self.tmp = tempfile.mkstemp(dir=self.path.resolve().parent, prefix=f".{self.path.name}.", suffix=".tmp")
        self.file = os.fdopen(fd, "w", newline="")
        return self.file

    def __exit__(self, kind, *_):
        self.file.close()
        if kind is None:
            os.replace(self.tmp, self.path)
        else:
            os.unlink(self.tmp)


def add_instructor(settings: Settings, label: str) -> str:
    """A new instructor token (returned once; only its digest is stored)."""
    storage.ready(settings)
    with db.sessions(settings.db_url).begin() as session:
        return auth.new_token(session, auth.INSTRUCTOR, label=label)


def rotate_token(settings: Settings, *, login: str | None = None, instructor: str | None = None) -> str:
    """Revoke a student's (or an instructor label's) tokens and return a fresh one, shown once.
    A dropped student gets none (re-admit them with `grade course add-student`)."""
    storage.ready(settings)
    with db.sessions(settings.db_url).begin() as session:
        if login is not None and instructor is None:
            return new_token(session, login)
        return auth.rotate(session, login=login, instructor=instructor)


def revoke(settings: Settings, *, login: str | None = None, instructor: str | None = None) -> int:
    """Revoke a student's (or an instructor label's) tokens and end their page sessions; how many tokens."""
    storage.ready(settings)
    with db.sessions(settings.db_url).begin() as session:
        return auth.revoke(session, login=login, instructor=instructor)


# ---------------------------------------------------------------- one student at a time (CLI and API)


@dataclass(frozen=True)
class Entry:
    """One roster line: who, how much they submitted, and whether (when, by whom) they were dropped."""

    login: str
    name: str
    email: str
    submissions: int
    last_submission: dt.datetime | None
    dropped_at: dt.datetime | None
    dropped_by: str


def entries(session: Session, login: str | None = None) -> list[Entry]:
    """The roster in login order, dropped students included (and marked); one student's line with `login`."""
    query = (
        select(db.Student, func.count(db.Submission.id), func.max(db.Submission.created_at))
        .outerjoin(db.Submission, db.Submission.student_id == db.Student.id)
        .group_by(db.Student.id)
        .order_by(db.Student.login)
    )
    if login is not None:
        query = query.where(db.Student.login == login)
    return [
        Entry(s.login, s.name, s.email, count, last, s.dropped_at, s.dropped_by)
        for s, count, last in session.execute(query).all()
    ]


def enrol(session: Session, login: str, name: str = "", email: str = "") -> tuple[str, bool]:
    """Put a student on the roster and return (their new token, shown once; whether they were re-admitted).

    A dropped login is re-admitted (what they submitted counts again) and gets a new token. A
    login already enrolled is a RosterConflict: its token is rotated on purpose (`new_token`),
    never by a repeated add.
    """
    login, name, email = _checked(login, name, email)
    student = session.scalar(select(db.Student).where(db.Student.login == login).with_for_update())
    if student is not None and student.dropped_at is None:
        raise RosterConflict(
            f"{login!r} is already on the roster; a new token for them: `grade course rotate-token {login}` "
            f"(POST /api/students/{login}/token)"
        )
    readmitted = student is not None
    student, token = auth.add_student(session, login, name, email)
    student.dropped_at, student.dropped_by = None, ""
    return token, readmitted


def _checked(login: str, name: str, email: str) -> tuple[str, str, str]:
    """The fields stripped, or a ValueError saying which does not fit (lengths are the columns')."""
    login, name, email = login.strip(), name.strip(), email.strip()
    if not LOGIN.fullmatch(login):
        raise ValueError("a login is 1 to 200 characters with no spaces or control characters")
    if len(name) > 200 or len(email) > 320:
        raise ValueError("a name is at most 200 characters and an email at most 320")
    return login, name, email


def drop(session: Session, login: str, by: str) -> tuple[Entry, int]:
    """Drop a student: (their roster line, how many tokens were revoked).

    Their tokens are revoked and every page session of theirs ends; what they submitted is kept
    and leaves the gradebook with them. Dropping a dropped student changes nothing (0 revoked).
    """
    student = session.scalar(select(db.Student).where(db.Student.login == login).with_for_update())
    if student is None:
        raise UnknownStudent(f"no student with login {login!r} on the roster")
    revoked = 0
    if student.dropped_at is None:
        student.dropped_at, student.dropped_by = db.utcnow(), by
        revoked = auth.revoke(session, login=login)
        session.execute(delete(db.WebSession).where(db.WebSession.student_id == student.id))  # hub logins too
        session.flush()
    return entries(session, login)[0], revoked


def new_token(session: Session, login: str) -> str:
    """A student's new token (shown once); their earlier ones are revoked. A dropped student gets none."""
    student = session.scalar(select(db.Student).where(db.Student.login == login))
    if student is None:
        raise UnknownStudent(
            f"no student with login {login!r} on the roster; add them with `grade course add-student` "
            "(or `grade course add-students ROSTER.csv`)"
        )
    if student.dropped_at is not None:
        raise RosterConflict(f"{login!r} was dropped; re-admit them (with a new token) with `grade course add-student`")
    return auth.rotate(session, login=login)


def add_student(settings: Settings, login: str, name: str = "", email: str = "") -> tuple[str, bool]:
    """`enrol` in a transaction of its own (the CLI)."""
    storage.ready(settings)
    with db.sessions(settings.db_url).begin() as session:
        return enrol(session, login, name, email)


def drop_student(settings: Settings, login: str, by: str) -> tuple[Entry, int]:
    """`drop` in a transaction of its own (the CLI)."""
    storage.ready(settings)
    with db.sessions(settings.db_url).begin() as session:
        return drop(session, login, by)


def roster(settings: Settings) -> list[Entry]:
    """`entries` of the course's database (the CLI)."""
    storage.ready(settings)
    with db.sessions(settings.db_url)() as session:
        return entries(session)

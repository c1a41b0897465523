"""The course roster: students from a CSV (login, name, email) and the tokens handed to them.

Tokens are shown once: `add_students` writes them to a file only its owner can read, and
`rotate_token` returns one to print. Re-adding a student who is already on the roster rotates
their token (the old ones stop working), and the file says so.
"""

from __future__ import annotations

import csv
import os
import tempfile
from pathlib import Path

from autograder.service import auth, db, storage
from autograder.service.config import Settings

NEW, ROTATED = "new", "rotated: earlier tokens revoked"


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
    _ready(settings)
    added = rotated = 0
    with _private_file(out) as f, db.sessions(settings.db_url).begin() as session:
        writer = csv.writer(f)
        writer.writerow(["login", "name", "email", "token", "note"])
        for row in rows:
            known = db.student_by_login(session, row["login"]) is not None
            student, token = auth.add_student(session, row["login"], row.get("name", ""), row.get("email", ""))
            writer.writerow([student.login, student.name, student.email, token, ROTATED if known else NEW])
            rotated, added = rotated + known, added + (not known)
    return added, rotated


def _ready(settings: Settings) -> None:
    """The data folder private (the roster is often the first thing to create the database), the schema current."""
    storage.secure_data_dir(settings)
    db.upgrade(settings.db_url)


class _private_file:
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
    _ready(settings)
    with db.sessions(settings.db_url).begin() as session:
        return auth.new_token(session, auth.INSTRUCTOR, label=label)


def rotate_token(settings: Settings, *, login: str | None = None, instructor: str | None = None) -> str:
    """Revoke a student's (or an instructor label's) tokens and return a fresh one, shown once."""
    _ready(settings)
    with db.sessions(settings.db_url).begin() as session:
        return auth.rotate(session, login=login, instructor=instructor)


def revoke(settings: Settings, *, login: str | None = None, instructor: str | None = None) -> int:
    """Revoke a student's (or an instructor label's) tokens and end their page sessions; how many tokens."""
    _ready(settings)
    with db.sessions(settings.db_url).begin() as session:
        return auth.revoke(session, login=login, instructor=instructor)

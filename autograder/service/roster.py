"""The course roster: students from a CSV (login, name, email) and the tokens handed to them."""

from __future__ import annotations

import csv
from pathlib import Path

from autograder.service import auth, db
from autograder.service.config import Settings


def read_roster(path: Path) -> list[dict[str, str]]:
    """The rows of a roster CSV; a ValueError naming the problem when it has no login column."""
    with open(path, newline="", encoding="utf-8-sig") as f:
        reader = csv.DictReader(f)
        if not reader.fieldnames or "login" not in [h.strip().lower() for h in reader.fieldnames]:
            raise ValueError(f"{path}: the first line must be a header with a 'login' column (and optionally name, email)")
        rows = [{k.strip().lower(): (v or "").strip() for k, v in row.items() if k} for row in reader]
    empty = [i + 2 for i, row in enumerate(rows) if not row.get("login")]
    if empty:
        raise ValueError(f"{path}: line(s) {', '.join(map(str, empty))} have no login")
    return rows


def add_students(settings: Settings, roster: Path, out: Path) -> int:
    """Add every roster student (a new token each) and write login,name,email,token to `out`."""
    rows = read_roster(roster)
    db.upgrade(settings.db_url)
    issued = []
    with db.sessions(settings.db_url).begin() as session:
        for row in rows:
            student, token = auth.add_student(session, row["login"], row.get("name", ""), row.get("email", ""))
            issued.append((student.login, student.name, student.email, token))
    with open(out, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["login", "name", "email", "token"])
        writer.writerows(issued)
    out.chmod(0o600)
    return len(issued)


def add_instructor(settings: Settings, label: str) -> str:
    """A new instructor token (returned once; only its digest is stored)."""
    db.upgrade(settings.db_url)
    with db.sessions(settings.db_url).begin() as session:
        return auth.new_token(session, auth.INSTRUCTOR, label=label)

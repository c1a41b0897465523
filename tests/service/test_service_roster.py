"""Roster operations, one student at a time, through the real CLI and the instructors' API on a
real `grade serve`: add (token shown once), list, drop (their tokens 401, their page sessions
ended, out of the gradebook, what they submitted kept), add again (re-admitted, a new token),
rotate (the old token 401, the new one works). Students and strangers are refused; unknown logins
and odd fields are clear errors.
"""

from __future__ import annotations

import csv
import io

import pytest

from helpers.service import api, course, grade, page_login, post_zip, zip_of  # noqa: F401
from jaxlings.service import db

pytestmark = pytest.mark.slow


def ok(course, *args: str) -> str:
    done = grade(list(args), course)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def status(course, token: str, path: str = "/api/me") -> int:
    with api(course, token) as client:
        return client.get(path).status_code


def gradebook_logins(client) -> set[str]:
    reply = client.get("/api/gradebook.csv")
    assert reply.status_code == 200, reply.text
    return {r["login"] for r in csv.DictReader(io.StringIO(reply.text))}


def submissions_of(course, login: str) -> int:
    settings = course.settings()
    with db.sessions(settings.db_url)() as session:
        student = db.student_by_login(session, login)
        assert student is not None
        return session.query(db.Submission).filter(db.Submission.student_id == student.id).count()


def page_opens(pages, path: str = "/me") -> bool:
    reply = pages.get(path, follow_redirects=False)
    return reply.status_code == 200


def test_the_roster_through_the_cli(course):
    prof = course.instructor()
    added = ok(course, "course", "add-student", "ada", "--name", "Ada Lovelace", "--email", "ada@example.org")
    assert "ada added" in added and "shown only now" in added
    ada = added.strip().splitlines()[-1]
    assert ada.startswith("jxl_")
    course.serve()
    assert status(course, ada) == 200
    with api(course, ada) as client:  # something to keep: a submission (never graded: no worker)
        assert post_zip(client, zip_of({"prng.py": "x = 1\n"})).status_code == 202
    pages = page_login(course, ada)
    assert page_opens(pages)

    listed = ok(course, "course", "roster")
    assert "ada" in listed and "Ada Lovelace" in listed and "ada@example.org" in listed
    line = next(row for row in listed.splitlines() if "ada@example.org" in row)
    assert "│ 1 " in line and "by" not in line  # one submission, not dropped

    again = grade(["course", "add-student", "ada"], course)  # never rotates by accident
    assert again.returncode == 2 and "'ada' is already on the roster" in again.stdout and "rotate-token" in again.stdout
    assert status(course, ada) == 200

    dropped = ok(course, "course", "drop", "ada")
    assert "dropped ada (1 token(s) revoked" in dropped and "1 submission(s) are kept" in dropped, dropped
    assert status(course, ada) == 401 and not page_opens(pages)
    with api(course, prof) as teacher:
        assert gradebook_logins(teacher) == set()  # out of the gradebook
        assert [s["student"] for s in teacher.get("/api/submissions").json()] == ["ada"]  # kept
    assert submissions_of(course, "ada") == 1
    listed = ok(course, "course", "roster")
    assert "(grade course drop)" in next(row for row in listed.splitlines() if "ada@example.org" in row)
    refused = grade(["course", "rotate-token", "ada"], course)  # a dropped student gets no token
    assert refused.returncode == 2 and "'ada' was dropped" in refused.stdout and "add-student" in refused.stdout
    assert "dropped ada (0 token(s) revoked" in ok(course, "course", "drop", "ada")  # again: nothing changes

    readmitted = ok(course, "course", "add-student", "ada")
    assert "ada re-admitted" in readmitted
    back = readmitted.strip().splitlines()[-1]
    assert status(course, back) == 200 and status(course, ada) == 401
    with api(course, prof) as teacher:
        assert gradebook_logins(teacher) == {"ada"}

    rotated = ok(course, "course", "rotate-token", "ada").strip().splitlines()[-1]
    assert status(course, back) == 401 and status(course, rotated) == 200


def test_unknown_logins_and_odd_fields_are_clear_errors_in_the_cli(course):
    out = grade(["course", "drop", "nobody"], course)
    assert out.returncode == 2 and "no student with login 'nobody' on the roster" in out.stdout, out.stdout
    out = grade(["course", "rotate-token", "nobody"], course)
    assert out.returncode == 2 and "'nobody'" in out.stdout and "add-student" in out.stdout
    for login in ("two words", "tab\there", "x" * 201, " "):
        out = grade(["course", "add-student", login], course)
        assert out.returncode == 2 and "no spaces or control characters" in out.stdout, out.stdout
    out = grade(["course", "add-student", "ada", "--name", "n" * 201], course)
    assert out.returncode == 2 and "at most 200" in out.stdout
    assert "ada" not in ok(course, "course", "roster")  # nothing was added


def test_the_roster_through_the_api(course):
    prof = course.instructor()
    course.token("carol")  # on the roster, never submitted
    course.serve()
    with api(course, prof) as teacher:
        made = teacher.post("/api/students", json={"login": "ada", "name": "Ada Lovelace", "email": "ada@example.org"})
        assert made.status_code == 201 and made.json()["login"] == "ada" and not made.json()["readmitted"]
        ada = made.json()["token"]
        assert status(course, ada) == 200
        with api(course, ada) as client:
            assert post_zip(client, zip_of({"prng.py": "x = 1\n"})).status_code == 202
        listed = {e["login"]: e for e in teacher.get("/api/students").json()}
        assert listed["ada"]["name"] == "Ada Lovelace" and listed["ada"]["submissions"] == 1
        assert listed["ada"]["last_submission"].endswith("Z") and listed["ada"]["dropped_at"] is None
        assert listed["carol"]["submissions"] == 0 and listed["carol"]["last_submission"] is None

        twice = teacher.post("/api/students", json={"login": "ada"})
        assert twice.status_code == 409 and "already on the roster" in twice.json()["detail"]
        assert status(course, ada) == 200

        gone = teacher.delete("/api/students/ada")
        assert gone.status_code == 200 and gone.json()["dropped_at"] and gone.json()["dropped_by"] == "prof"
        assert status(course, ada) == 401
        assert gradebook_logins(teacher) == {"carol"} and submissions_of(course, "ada") == 1
        assert teacher.post("/api/students/ada/token").status_code == 409  # dropped: no token
        assert teacher.delete("/api/students/ada").json()["dropped_at"] == gone.json()["dropped_at"]  # idempotent

        back = teacher.post("/api/students", json={"login": "ada"})
        assert back.status_code == 201 and back.json()["readmitted"]
        assert status(course, back.json()["token"]) == 200 and gradebook_logins(teacher) == {"ada", "carol"}
        assert teacher.get("/api/students").json()[0]["name"] == "Ada Lovelace"  # kept when not given

        rotated = teacher.post("/api/students/ada/token")
        assert rotated.status_code == 200 and rotated.json()["login"] == "ada"
        assert status(course, back.json()["token"]) == 401 and status(course, rotated.json()["token"]) == 200

        for call, why in [
            (lambda: teacher.delete("/api/students/nobody"), (404, "no student with login 'nobody'")),
            (lambda: teacher.post("/api/students/nobody/token"), (404, "no student with login 'nobody'")),
            (lambda: teacher.post("/api/students", json={"login": "two words"}), (400, "no spaces")),
            (lambda: teacher.post("/api/students", json={"login": ""}), (422, "")),
            (lambda: teacher.post("/api/students", json={"login": "x" * 201}), (422, "")),
            (lambda: teacher.post("/api/students", json={"name": "no login"}), (422, "")),
            (lambda: teacher.post("/api/students", content=b"not json"), (422, "")),
        ]:
            reply = call()
            assert reply.status_code == why[0] and why[1] in reply.json()["detail"], reply.text
        assert {e["login"] for e in teacher.get("/api/students").json()} == {"ada", "carol"}


def test_students_and_strangers_are_refused_the_roster(course):
    carol = course.token("carol")
    course.serve()
    with api(course, carol) as student:
        for call in (
            lambda: student.get("/api/students"),
            lambda: student.post("/api/students", json={"login": "mallory"}),
            lambda: student.delete("/api/students/carol"),
            lambda: student.post("/api/students/carol/token"),
        ):
            assert call().status_code == 403
    with api(course, "jxl_not-a-token") as stranger:
        assert stranger.get("/api/students").status_code == 401
        assert stranger.delete("/api/students/carol").status_code == 401
    assert status(course, carol) == 200  # nothing happened to carol
    assert "mallory" not in ok(course, "course", "roster")

"""The speed leaderboard (issue 31): per speed-graded exercise, each pseudonymous student's best
time ratio measured on the grading machine, fastest first; opt-in per course (course.toml
`[leaderboard]`), under pseudonyms the students choose.

First `leaderboard` on submissions and students built in memory (ranking, the best per student,
what measured nothing, who is left out) and the pseudonym rules; then a real `grade serve` on
SQLite with seeded graded rows (what is tested is what the board shows, not the grading), the
real `grade pseudonym`, the API, the pages and the refusals.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
from typing import Any

import httpx
import pytest

from helpers.service import (  # noqa: F401
    GRADE,
    PAGES_PRNG_OK,
    api,
    course,
    database_url,
    form_csrf,
    page_login,
    seed_submission,
    seeded_result,
)
from jaxlings.grading.topics import ORDER
from jaxlings.service import leaderboard
from jaxlings.service.db import DONE, Student, Submission

T0 = dt.datetime(2026, 12, 1, 12, 0)
SPEEDY = [("prng", "dropout"), ("prng", "monte_carlo_pi"), ("prng", "noisy_walk")]


def speed(ratio: Any) -> dict[str, Any]:
    """A speed test's extra_data: measured at `ratio` (a number), or "pending" (judged on
    submission), "waits" (not run: correct failed), "failed" (the timed call failed: no ratio),
    "idled" (little CPU time, much wall time: ranked by the wall time)."""
    return {
        "pending": {"pending": True},
        "waits": {"waits": True},
        "failed": {"size": 4096},
        "idled": {"ratio": 0.2, "wall_ratio": 15.0},
    }.get(ratio, {"ratio": ratio, "clock": "cpu", "wall_ratio": ratio})


def result(ratios: dict[str, Any], topic: str = "prng") -> str:
    """A results.json as `grade grade` writes it for `topic`, each exercise named in `ratios`
    with its speed test as `speed` makes it (the others' speed tests carry no ratio)."""
    doc = json.loads(seeded_result(topic))
    for test in doc["tests"]:
        _, exercise, check = test["tags"]
        if check == "speed" and exercise in ratios:
            test["extra_data"] = speed(ratios[exercise])
    return json.dumps(doc)


def sub(sid: int, student: int, ratios: dict[str, Any], hours: float = 0) -> Submission:
    return Submission(
        id=sid,
        student_id=student,
        digest=f"d{sid}",
        topics="prng",
        status=DONE,
        created_at=T0 + dt.timedelta(hours=hours),
        result_json=result(ratios),
    )


def student(sid: int, login: str, pseudonym: str | None, dropped: bool = False) -> Student:
    return Student(id=sid, login=login, name=login.title(), pseudonym=pseudonym, dropped_at=T0 if dropped else None)


def rows(board: list[leaderboard.ExerciseBoard], name: str) -> list[tuple[int, str, float]]:
    found = next(b for b in board if b.name == name)
    return [(e.rank, e.pseudonym, e.ratio) for e in found.entries]


# -- the board, in memory --------------------------------------------------------------------------


def test_the_speed_graded_exercises_come_from_the_course_in_order():
    assert leaderboard.speed_exercises(["prng"]) == SPEEDY
    assert ("prng", "derive_keys") not in leaderboard.speed_exercises(["prng"])  # no speed check


def test_each_student_ranks_by_their_best_measured_ratio_lower_first():
    students = [student(1, "ann", "Falcon"), student(2, "bob", "Tortoise"), student(3, "cat", "Hare")]
    subs = [
        sub(1, 1, {"dropout": 1.8, "noisy_walk": 0.9}, hours=0),
        sub(2, 1, {"dropout": 1.1, "noisy_walk": 2.5}, hours=1),  # better dropout, worse walk: each best counts
        sub(3, 2, {"dropout": 3.0}, hours=0),
        sub(4, 3, {"dropout": 1.1}, hours=2),  # ties ann's 1.1: shares her rank, after her (later)
    ]
    board = leaderboard.board(students, subs, SPEEDY)
    assert [b.name for b in board] == ["prng.dropout", "prng.monte_carlo_pi", "prng.noisy_walk"]
    assert rows(board, "prng.dropout") == [(1, "Falcon", 1.1), (1, "Hare", 1.1), (3, "Tortoise", 3.0)]
    assert rows(board, "prng.noisy_walk") == [(1, "Falcon", 0.9)]
    assert rows(board, "prng.monte_carlo_pi") == []  # nobody measured: listed, empty
    falcon = next(b for b in board if b.name == "prng.dropout").entries[0]
    assert falcon.submission_id == 2  # where the best came from


def test_a_speed_check_that_measured_nothing_is_left_out():
    students = [student(1, "ann", "Falcon")]
    for what in ("pending", "waits", "failed"):
        board = leaderboard.board(students, [sub(1, 1, {"dropout": what})], SPEEDY)
        assert rows(board, "prng.dropout") == [], what
    idled = leaderboard.board(students, [sub(1, 1, {"dropout": "idled"})], SPEEDY)
    assert rows(idled, "prng.dropout") == [(1, "Falcon", 15.0)]  # CPU x0.2 but wall x15: ranked by the wall
    measured_then_pending = [sub(1, 1, {"dropout": 2.0}), sub(2, 1, {"dropout": "pending"}, hours=1)]
    assert rows(leaderboard.board(students, measured_then_pending, SPEEDY), "prng.dropout") == [(1, "Falcon", 2.0)]


def test_only_a_submissions_latest_complete_result_counts():
    regraded = sub(1, 1, {"dropout": 0.5})
    regraded.result_json = result({"dropout": 1.7})  # a regrade stored a slower time: it replaces the old one
    queued = Submission(id=2, student_id=1, digest="d2", topics="prng", status="queued", created_at=T0)
    board = leaderboard.board([student(1, "ann", "Falcon")], [regraded, queued], SPEEDY)
    assert rows(board, "prng.dropout") == [(1, "Falcon", 1.7)]


def test_students_without_a_pseudonym_and_dropped_students_are_left_out():
    students = [student(1, "ann", None), student(2, "bob", "Tortoise", dropped=True), student(3, "cat", "")]
    subs = [sub(1, 1, {"dropout": 0.5}), sub(2, 2, {"dropout": 0.6}), sub(3, 3, {"dropout": 0.7})]
    assert rows(leaderboard.board(students, subs, SPEEDY), "prng.dropout") == []
    students.append(student(4, "dan", "Owl"))
    subs.append(sub(4, 4, {"dropout": 2.0}))
    assert rows(leaderboard.board(students, subs, SPEEDY), "prng.dropout") == [(1, "Owl", 2.0)]


# -- the pseudonym rules -----------------------------------------------------------------------------


def test_a_pseudonym_is_trimmed_normalised_and_two_to_thirty_printable_characters():
    assert leaderboard.clean("  Speedy   Gonzales ") == "Speedy Gonzales"
    assert leaderboard.clean("Ｆａｌｃｏｎ") == "Falcon"  # full-width letters: NFKC
    assert leaderboard.clean("x" * 30) == "x" * 30 and leaderboard.clean("ab") == "ab"
    for bad in ("", " a ", "x" * 31, "tab\there", "line\nbreak", "bell\x07", "rtl\u202eevil", "zero\u200bwidth"):
        with pytest.raises(leaderboard.PseudonymError):
            leaderboard.clean(bad)


def test_a_pseudonym_is_unique_whatever_the_case_and_never_a_login_or_name():
    ann, bob = student(1, "ann", "Falcon"), student(2, "bob", None)
    ann.pseudonym_key = leaderboard.key("Falcon")
    roster = [ann, bob, student(3, "old", None, dropped=True)]
    assert leaderboard.refusal("Hawk", bob, roster) is None
    for taken in ("falcon", "FALCON", "ann", "Ann", "old"):  # another's pseudonym, login or name (dropped too)
        assert isinstance(leaderboard.refusal(taken, bob, roster), leaderboard.PseudonymTaken), taken
    for own in ("bob", "Bob"):  # their own login or name would give them away
        assert isinstance(leaderboard.refusal(own, bob, roster), leaderboard.PseudonymError), own
    assert leaderboard.refusal("Falcon", ann, roster) is None  # keeping one's own


def test_a_pseudonym_that_looks_like_a_name_is_refused_with_the_one_refusal():
    """Compared by confusable skeleton (Unicode's confusables): a Cyrillic А or о, Greek Ο, is the
    Latin letter it looks like; every unavailable name gets the same words, whoever has it."""
    ann, bob = student(1, "ann", "Falcon"), student(2, "bob", None)
    ann.name, bob.name = "Alice Smith", "Bob Jones"
    roster = [ann, bob, student(3, "oscar", "Speedy")]
    for lookalike in ("Аlice Smith", "Fаlcon", "Οscar", "Spееdy", "ΑΝΝ"):
        problem = leaderboard.refusal(lookalike, bob, roster)
        assert isinstance(problem, leaderboard.PseudonymTaken) and str(problem) == leaderboard.UNAVAILABLE, lookalike
    assert isinstance(leaderboard.refusal("Bоb Jones", bob, roster), leaderboard.PseudonymError)  # their own, disguised
    for fine in ("Alice Smyth", "Falcons", "Hawk"):  # honest twins: other names
        assert leaderboard.refusal(fine, bob, roster) is None, fine


def test_a_student_tries_at_most_so_many_names_an_hour():
    tries = leaderboard.Tries()
    for _ in range(leaderboard.TRIES):
        tries.take(7)
    with pytest.raises(leaderboard.PseudonymTooOften, match="try again in"):
        tries.take(7)
    tries.take(8)  # another student's count is their own


def test_enrolling_or_renaming_to_a_name_that_looks_like_a_pseudonym_clears_it(database_url):
    """The rule holds at every change: the roster's name comes first, the look-alike pseudonym goes."""
    from jaxlings.service import auth, db

    with db.sessions(database_url).begin() as session:
        ann = auth.add_student(session, "ann")[0]
        bob = auth.add_student(session, "bob")[0]
        session.flush()
        assert leaderboard.choose(session, ann.id, "Dаisy") == "Dаisy"  # nobody's name yet (Cyrillic а)
        assert leaderboard.choose(session, bob.id, "Hawk") == "Hawk"
        auth.add_student(session, "daisy", "Daisy Duck")  # a newcomer whose login looks like ann's pseudonym
        assert (ann.pseudonym, ann.pseudonym_key) == (None, None) and bob.pseudonym == "Hawk"
        auth.add_student(session, "bob", "Hawk")  # bob renamed to his own pseudonym: it would give him away
        assert bob.pseudonym is None


def test_two_students_racing_for_one_pseudonym_cannot_both_have_it(database_url):
    """Both pass the check before either commits: the unique key refuses the second (the API's 409)."""
    from sqlalchemy.exc import IntegrityError

    from jaxlings.service import auth, db

    make = db.sessions(database_url)
    with make.begin() as session:
        added = [auth.add_student(session, login)[0] for login in ("ann", "bob")]
        session.flush()
        ids = [s.id for s in added]
    first, second = make(), make()
    assert leaderboard.choose(first, ids[0], "Hawk") == "Hawk"
    assert leaderboard.choose(second, ids[1], "HAWK") == "HAWK"  # ann's is not committed yet
    first.commit()
    with pytest.raises(IntegrityError):
        second.commit()
    second.rollback()
    with make() as session:
        assert [(s.login, s.pseudonym) for s in session.scalars(db.select(Student).order_by(Student.login))] == [
            ("ann", "Hawk"),
            ("bob", None),
        ]
    first.close()
    second.close()


# -- through a real server ---------------------------------------------------------------------------


def enable(course, on: bool = True) -> None:
    (course.data_dir / "course.toml").write_text(f"[leaderboard]\nenabled = {'true' if on else 'false'}\n")


def seed(course, login: str, ratios: dict[str, Any], n: int = 0) -> int:
    """A graded prng submission of `login` (added if new) whose speed tests measured `ratios`."""
    return seed_submission(course, login, {"prng.py": f"# {n}\n{PAGES_PRNG_OK}"}, result(ratios))


def grade_pseudonym(course, token: str, tmp_path, *args: str) -> subprocess.CompletedProcess:
    """`grade pseudonym ...` as the student runs it (their server and token in the environment)."""
    env = {
        **os.environ,
        "JAXLINGS_SERVER": course.url,
        "JAXLINGS_TOKEN": token,
        "JAXLINGS_CONFIG": str(tmp_path / "client.json"),
    }
    return subprocess.run(GRADE + ["pseudonym", *args], env=env, capture_output=True, text=True, timeout=120)


def board_of(client, name: str = "prng.dropout") -> list[tuple[int, str, float, bool]]:
    reply = client.get("/api/leaderboard")
    assert reply.status_code == 200, reply.text
    found = next(e for e in reply.json()["exercises"] if e["exercise"] == name)
    return [(r["rank"], r["pseudonym"], r["ratio"], r["mine"]) for r in found["rows"]]


@pytest.mark.slow
def test_without_the_opt_in_there_is_no_leaderboard_and_a_misspelt_key_stops_the_server(course, tmp_path):
    (course.data_dir / "course.toml").write_text("[leaderboard]\nenable = true\n")
    refused = subprocess.run(
        GRADE + ["serve"], env={**os.environ, **course.env}, capture_output=True, text=True, timeout=120
    )
    assert refused.returncode == 2 and "leaderboard.enable: not a key of this table" in refused.stdout
    enable(course, on=False)
    seed(course, "ann", {"dropout": 0.9})
    course.serve()
    token = course.token("ann")
    student = api(course, token)
    for reply in (
        student.get("/api/leaderboard"),
        student.put("/api/me/pseudonym", json={"pseudonym": "Falcon"}),
        student.delete("/api/me/pseudonym"),
    ):
        assert (reply.status_code, reply.json()) == (404, {"detail": "the course has no leaderboard"})
    ran = grade_pseudonym(course, token, tmp_path, "Falcon")
    assert ran.returncode == 2 and "the course has no leaderboard" in ran.stdout
    pages = page_login(course, token)
    me = pages.get("/me").text
    assert "leaderboard" not in me and "pseudonym" not in me
    page = pages.get("/leaderboard")
    assert page.status_code == 404 and "the course has no leaderboard" in page.text
    forged = pages.post("/me/pseudonym", data={"pseudonym": "Falcon", "csrf": form_csrf(me)})
    assert forged.status_code == 404
    gradebook = page_login(course, course.instructor()).get("/gradebook").text
    assert 'id="leaderboard-link"' not in gradebook


@pytest.mark.slow
def test_students_choose_pseudonyms_and_the_board_ranks_their_best_measured_ratio(course, tmp_path):
    enable(course)
    seed(course, "ann", {"dropout": 1.8, "noisy_walk": 0.7}, 0)
    seed(course, "ann", {"dropout": 1.2, "noisy_walk": "pending"}, 1)
    seed(course, "bob", {"dropout": 0.9, "noisy_walk": "waits"})
    seed(course, "cat", {"dropout": 0.4})  # fastest, but never chooses a pseudonym
    seed(course, "dan", {"dropout": 0.5})  # chooses one, then is dropped
    seed(course, "eve", {"dropout": "failed", "noisy_walk": "waits"})  # measured nothing
    course.serve()
    tokens = {login: course.token(login) for login in ("ann", "bob", "cat", "dan", "eve")}
    clients = {login: api(course, t) for login, t in tokens.items()}
    teacher = api(course, course.instructor())

    chose = grade_pseudonym(course, tokens["ann"], tmp_path, "  Falcon ")  # the real command, trimmed
    assert chose.returncode == 0, chose.stdout + chose.stderr
    assert "you are on the speed leaderboard as Falcon" in chose.stdout and f"{course.url}/leaderboard" in chose.stdout
    for login, name in (("bob", "Tortoise"), ("dan", "Owl"), ("eve", "Heron")):
        reply = clients[login].put("/api/me/pseudonym", json={"pseudonym": name})
        assert (reply.status_code, reply.json()["pseudonym"]) == (200, name), reply.text
    assert teacher.delete("/api/students/dan").status_code == 200

    assert board_of(clients["ann"]) == [(1, "Tortoise", 0.9, False), (2, "Falcon", 1.2, True)]
    assert board_of(clients["bob"]) == [(1, "Tortoise", 0.9, True), (2, "Falcon", 1.2, False)]
    assert board_of(clients["ann"], "prng.noisy_walk") == [(1, "Falcon", 0.7, True)]
    assert board_of(clients["cat"]) == [(1, "Tortoise", 0.9, False), (2, "Falcon", 1.2, False)]
    assert board_of(teacher) == [(1, "Tortoise", 0.9, False), (2, "Falcon", 1.2, False)]
    whole = clients["ann"].get("/api/leaderboard").json()
    assert whole["pseudonym"] == "Falcon" and clients["cat"].get("/api/leaderboard").json()["pseudonym"] is None
    assert [e["exercise"] for e in whole["exercises"]] == [f"{t}.{e}" for t, e in leaderboard.speed_exercises(ORDER)]
    shown = [row for e in whole["exercises"] for row in e["rows"]]
    assert all(row["login"] is None and row["name"] is None and "id" not in row for row in shown)  # pseudonyms only
    for_teacher = [row for e in teacher.get("/api/leaderboard").json()["exercises"] for row in e["rows"]]
    assert {(row["pseudonym"], row["login"]) for row in for_teacher} == {("Falcon", "ann"), ("Tortoise", "bob")}
    assert {row["pseudonym"] for row in shown} == {"Falcon", "Tortoise"}  # not dan (dropped), not eve (unmeasured)

    # the pages: linked from the student's page and the gradebook, the visitor's row marked
    pages = page_login(course, tokens["ann"])
    me = pages.get("/me").text
    assert 'id="leaderboard-link"' in me and 'value="Falcon"' in me
    board = pages.get("/leaderboard")
    assert board.status_code == 200 and "Falcon <strong>(you)</strong>" in board.text and "Tortoise" in board.text
    assert "Owl" not in board.text and "×0.90" in board.text
    assert 'class="who"' not in board.text and ">ann<" not in board.text  # a student sees pseudonyms only
    instructor_pages = page_login(course, course.instructor())
    gradebook = instructor_pages.get("/gradebook").text
    assert 'id="leaderboard-link"' in gradebook
    assert '<td class="who">ann</td>' in instructor_pages.get("/leaderboard").text  # who each row is

    # leaving the board
    left = clients["bob"].delete("/api/me/pseudonym")
    assert (left.status_code, left.json()["pseudonym"]) == (200, None)
    assert board_of(clients["ann"]) == [(1, "Falcon", 1.2, True)]


@pytest.mark.slow
def test_pseudonyms_that_may_not_be_taken_are_refused_and_change_nothing(course, tmp_path):
    enable(course)
    for login in ("ann", "bob"):
        seed(course, login, {"dropout": 1.0})
    course.serve()
    ann, bob = api(course, course.token("ann")), api(course, course.token("bob"))
    assert ann.put("/api/me/pseudonym", json={"pseudonym": "Falcon"}).status_code == 200

    def refused(client, body: Any, status: int, words: str) -> None:
        reply = client.put("/api/me/pseudonym", json=body)
        assert reply.status_code == status and words in reply.json()["detail"], (body, reply.text)

    refused(bob, {"pseudonym": "FALCON"}, 409, "taken")  # another's, in other letters' case
    refused(bob, {"pseudonym": "Ｆａｌｃｏｎ"}, 409, "taken")  # and in full-width letters
    refused(bob, {"pseudonym": "ann"}, 409, "taken")  # another student's login: the same refusal
    refused(bob, {"pseudonym": "Fаlcon"}, 409, "taken")  # a look-alike (Cyrillic а)
    refused(bob, {"pseudonym": "Bob"}, 400, "not your login or name")  # their own: it would give them away
    refused(bob, {"pseudonym": "x"}, 400, "2 to 30 characters")
    refused(bob, {"pseudonym": "x" * 31}, 400, "2 to 30 characters")
    refused(bob, {"pseudonym": "bell\x07ring"}, 400, "printable characters only")
    refused(bob, {"pseudonym": "   "}, 400, "2 to 30 characters")
    # a body naming another student is no way to set theirs: refused as a whole
    reply = bob.put("/api/me/pseudonym", json={"pseudonym": "Hawk", "login": "ann"})
    assert reply.status_code == 422
    assert bob.put("/api/me/pseudonym", json={}).status_code == 422
    teacher = api(course, course.instructor())
    reply = teacher.put("/api/me/pseudonym", json={"pseudonym": "Prof"})
    assert reply.status_code == 403 and "instructors are not on the leaderboard" in reply.json()["detail"]
    assert api(course, "jxl_not-a-token").get("/api/leaderboard").status_code == 401
    anonymous = httpx.put(f"{course.url}/api/me/pseudonym", json={"pseudonym": "Hawk"}, timeout=30)
    assert anonymous.status_code == 401
    assert board_of(teacher) == [(1, "Falcon", 1.0, False)]  # ann's unchanged, bob still off the board

    ran = grade_pseudonym(course, course.token("bob"), tmp_path, "falcon")
    assert ran.returncode == 2 and "409" in ran.stdout and "taken" in ran.stdout
    ran = grade_pseudonym(course, course.token("bob"), tmp_path)
    assert ran.returncode == 2 and "--leave" in ran.stdout
    bob = api(course, course.token("bob"))  # a token of his own again (`course.token` rotates it)
    statuses = [bob.put("/api/me/pseudonym", json={"pseudonym": f"Owl {i}"}) for i in range(leaderboard.TRIES)]
    too_often = statuses[-1]  # bob's earlier tries count: the hour's are spent before these end
    assert too_often.status_code == 429 and "try again in" in too_often.json()["detail"]
    assert too_often.headers["retry-after"] == "3600"


@pytest.mark.slow
def test_the_page_form_sets_the_visitors_own_pseudonym_escapes_html_and_refuses_forgeries(course):
    enable(course)
    seed(course, "ann", {"dropout": 1.0})
    seed(course, "bob", {"dropout": 2.0})
    course.serve()
    ann_token, bob_token = course.token("ann"), course.token("bob")
    assert api(course, ann_token).put("/api/me/pseudonym", json={"pseudonym": "Falcon"}).status_code == 200
    pages = page_login(course, bob_token)
    csrf = form_csrf(pages.get("/me").text)
    hostile = "<b>x</b><script>"
    assert pages.post("/me/pseudonym", data={"pseudonym": hostile}).status_code == 403  # no CSRF token
    other_site = pages.post(
        "/me/pseudonym", data={"pseudonym": hostile, "csrf": csrf}, headers={"Origin": "https://evil.example"}
    )
    assert other_site.status_code == 403
    assert board_of(api(course, bob_token)) == [(1, "Falcon", 1.0, False)]  # nothing changed

    done = pages.post("/me/pseudonym", data={"pseudonym": hostile, "csrf": csrf})
    assert done.status_code == 303 and done.headers["location"].endswith("/me#leaderboard")
    board = pages.get("/leaderboard").text
    assert "&lt;b&gt;x&lt;/b&gt;&lt;script&gt;" in board and hostile not in board
    assert "&lt;b&gt;x&lt;/b&gt;&lt;script&gt; <strong>(you)</strong>" in board
    assert api(course, ann_token).get("/leaderboard").status_code in (303, 307)  # pages take no bearer token

    taken = pages.post("/me/pseudonym", data={"pseudonym": "falcon", "csrf": csrf})
    assert taken.status_code == 409 and "taken" in taken.text  # the page again, saying why
    left = pages.post("/me/pseudonym", data={"action": "clear", "csrf": csrf})
    assert left.status_code == 303
    assert board_of(api(course, ann_token)) == [(1, "Falcon", 1.0, True)]

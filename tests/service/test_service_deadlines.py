"""Course rules on the service (issue 31): a late submission counts with the policy's factor,
never rewritten; a topic not open yet or closed is left out at receipt, said so; an extension moves one
student's dates; the student sees where each topic stands (page, `/api/deadlines`, `grade
submit`); the instructor sees raw and counted scores and the late flag (gradebook, exports) and
grants extensions (CLI, API, topic page).

First `scores` with rules on submissions built in memory, then a real `grade serve` on SQLite
with seeded graded rows (what is tested is what counts, not the grading) and the real `grade`
commands.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
from contextlib import closing

import pytest

from helpers.service import (  # noqa: F401
    api,
    course,
    database_url,
    grade,
    page_login,
    post_zip,
    seed_submission,
    seeded_result,
    zip_of,
)
from jaxlings.grading import rules
from jaxlings.service import db, scores
from jaxlings.service.db import DONE, Student, Submission

AT = "at_updates"
T0 = dt.datetime(2026, 12, 1, 12, 0)  # naive UTC, as the database stores times
RULES = rules.CourseRules.model_validate(
    {
        "timezone": "Europe/Zurich",
        "late": {"policy": "per_day", "penalty": 0.25, "floor": 0.5},
        "topics": {
            AT: {"due": T0.replace(tzinfo=dt.UTC), "late_until": (T0 + dt.timedelta(days=7)).replace(tzinfo=dt.UTC)}
        },
    }
)


def result(total: float) -> str:
    """A results.json whose at_updates topic scored `total` of 14 (one exercise carrying it all)."""
    tests = [{"name": f"{AT}.histogram:correct", "score": total, "max_score": 14.0, "status": "passed"}]
    return json.dumps({"tests": tests, "extra_data": {"topics": {AT: {"score": total, "max_score": 14.0}}}})


def sub(sid: int, hours_after_due: float, total: float, student: int = 1) -> Submission:
    return Submission(
        id=sid,
        student_id=student,
        digest=f"d{sid}",
        topics=AT,
        status=DONE,
        created_at=T0 + dt.timedelta(hours=hours_after_due),
        result_json=result(total),
    )


# -- which score counts, with rules ----------------------------------------------------------------


def test_the_best_is_taken_after_the_late_penalty_and_the_raw_score_is_kept():
    on_time, late = sub(1, -1, 7.0), sub(2, 20, 8.0)  # 8 twenty hours late keeps 75%: 6
    [row] = scores.standings([Student(id=1, login="ann")], [on_time, late], RULES, {})
    counted = row.topics[AT]
    assert (counted.submission_id, counted.score, counted.raw_score, counted.late) == (1, 7.0, 7.0, False)
    much_better = sub(3, 30, 12.0)  # 30 hours: two days started, 50% kept (the floor): 6 < 7
    [row] = scores.standings([Student(id=1, login="ann")], [on_time, late, much_better], RULES, {})
    assert row.topics[AT].submission_id == 1
    best_late = sub(4, 20, 10.0)  # 75% of 10: 7.5 beats the on-time 7
    [row] = scores.standings([Student(id=1, login="ann")], [on_time, late, best_late], RULES, {})
    counted = row.topics[AT]
    assert (counted.submission_id, counted.score, counted.raw_score, counted.factor) == (4, 7.5, 10.0, 0.75)
    assert late.result_json == result(8.0)  # nothing stored was rewritten


def test_an_extension_lifts_the_penalty_for_that_student_only_and_past_late_until_nothing_counts():
    ann, bob = Student(id=1, login="ann"), Student(id=2, login="bob")
    subs = [sub(1, 20, 8.0, student=1), sub(2, 20, 8.0, student=2), sub(3, 24 * 8, 14.0, student=2)]
    rows = scores.standings([ann, bob], subs, RULES, {(1, AT): dt.timedelta(days=1)})
    assert [(r.student.login, r.score(AT), r.topics[AT].late) for r in rows] == [
        ("ann", 8.0, False),
        ("bob", 6.0, True),
    ]
    assert rules.NO_RULES.window(AT).factor(dt.datetime.now(dt.UTC)) == 1.0  # no rules: always in full


def test_without_rules_every_submission_counts_in_full():
    [row] = scores.standings([Student(id=1, login="ann")], [sub(1, 24 * 30, 9.0)])
    assert (row.score(AT), row.topics[AT].late) == (9.0, False)


# -- through a real server -------------------------------------------------------------------------


def stamp(t: dt.datetime) -> str:
    return f"{t:%Y-%m-%dT%H:%M:%SZ}"


def write_rules(course, now: dt.datetime) -> None:
    """prng due 20 hours ago (late: 25% off a day started), at_updates due in 2 days, loops closed
    3 days ago, jit_basics opening in 3 days."""
    (course.data_dir / "course.toml").write_text(
        f"""
timezone = "Europe/Zurich"
[late]
policy = "per_day"
penalty = 0.25
floor = 0.5
[topics.prng]
due = {stamp(now - dt.timedelta(hours=20))}
late_until = {stamp(now + dt.timedelta(days=5))}
[topics.at_updates]
due = {stamp(now + dt.timedelta(days=2, hours=1))}
[topics.loops]
due = {stamp(now - dt.timedelta(days=10))}
late_until = {stamp(now - dt.timedelta(days=3))}
[topics.jit_basics]
opens = {stamp(now + dt.timedelta(days=3, hours=1))}
"""
    )


def submissions(course) -> int:
    from sqlalchemy import func, select

    settings = course.settings()
    with db.sessions(settings.db_url)() as session:
        return session.scalar(select(func.count(Submission.id))) or 0


FILE = "def f():\n    return 1\n"


@pytest.mark.slow
def test_a_topic_closed_or_not_open_is_left_out_at_receipt_and_an_extension_reopens_it_for_one_student(course):
    write_rules(course, dt.datetime.now(dt.UTC))
    course.serve()
    alice_token = course.token("alice")
    alice, bob = api(course, alice_token), api(course, course.token("bob"))
    for topic, words in (("loops", "loops is closed since"), ("jit_basics", "jit_basics opens in 3 days (")):
        refused = post_zip(alice, zip_of({f"{topic}.py": FILE}))
        assert refused.status_code == 403 and words in refused.json()["detail"], refused.text
    assert submissions(course) == 0  # nothing stored for a refusal
    # an upload with an open topic beside closed ones: the open one taken, the others left out and said
    both = post_zip(alice, zip_of({"loops.py": FILE, "at_updates.py": FILE, "jit_basics.py": FILE}))
    assert both.status_code == 202 and both.json()["topics"] == ["at_updates"], both.text
    left_out = both.json()["left_out"]
    assert set(left_out) == {"loops", "jit_basics"} and left_out["loops"].startswith("loops is closed since")
    assert submissions(course) == 1
    with closing(page_login(course, alice_token)) as pages:  # the submission's page says what it left out
        page = " ".join(pages.get(f"/submissions/{both.json()['id']}").text.split())
    assert (
        "In the upload but not graded: jit_basics.py (not open for this student when it was received), "
        "loops.py (not open for this student when it was received)."
    ) in page, page
    assert post_zip(alice, zip_of({"at_updates.py": FILE})).status_code == 202  # open
    assert post_zip(alice, zip_of({"prng.py": FILE})).status_code == 202  # late, still taken

    granted = grade(["course", "extend", "alice", "loops", "--days", "7", "--reason", "ill"], course)
    assert granted.returncode == 0 and "alice: loops now due" in granted.stdout, granted.stdout + granted.stderr
    assert post_zip(alice, zip_of({"loops.py": FILE})).status_code == 202  # her dates moved by a week
    assert post_zip(bob, zip_of({"loops.py": FILE})).status_code == 403  # not his
    unknown = grade(["course", "extend", "nobody", "loops", "--days", "1"], course)
    assert unknown.returncode == 2 and "no student 'nobody'" in unknown.stdout + unknown.stderr
    typo = grade(["course", "extend", "alice", "lopos", "--days", "1"], course)
    assert typo.returncode == 2 and "no topic 'lopos'" in typo.stdout + typo.stderr
    assert grade(["course", "extend", "alice", "loops"], course).returncode == 2  # no length: refused
    shorter = grade(["course", "extend", "alice", "loops", "--hours", "7"], course)  # hours for days: a slip
    said = " ".join((shorter.stdout + shorter.stderr).split())
    assert shorter.returncode == 2 and "alice already has 7 days more on loops" in said and "--shorten" in said, said
    assert post_zip(alice, zip_of({"loops.py": FILE})).status_code == 202  # the week still holds
    meant = grade(["course", "extend", "alice", "loops", "--hours", "7", "--shorten"], course)
    assert meant.returncode == 0 and "replacing the earlier extension of 7 days" in meant.stdout, meant.stdout
    assert post_zip(alice, zip_of({"loops.py": FILE})).status_code == 403  # now it does not


@pytest.mark.slow
def test_a_late_score_counts_with_the_penalty_everywhere_and_the_student_sees_where_each_topic_stands(course):
    write_rules(course, dt.datetime.now(dt.UTC))
    course.serve()
    token = course.token("carol")
    graded = seeded_result("prng")
    raw = json.loads(graded)["extra_data"]["topics"]["prng"]["score"]
    sid = seed_submission(course, "carol", {"prng": FILE}, graded)  # received now: 20 hours late, keeps 75%
    prof = api(course, course.instructor())

    [row] = list(csv.DictReader(io.StringIO(prof.get("/api/gradebook.csv").text)))
    assert (float(row["prng"]), float(row["prng raw"]), row["prng late"]) == (round(raw * 0.75, 4), raw, "0.25")
    [nb] = [
        r
        for r in csv.DictReader(io.StringIO(prof.get("/api/gradebook.csv?format=nbgrader").text))
        if r["assignment"] == "prng"
    ]
    assert float(nb["raw_score"]) == raw and float(nb["late_submission_penalty"]) == pytest.approx(raw * 0.25)
    assert nb["duedate"].endswith("Z") and nb["duedate"] != ""
    exported = grade(["course", "export", "-o", str(course.data_dir / "out.csv")], course)
    assert exported.returncode == 0, exported.stdout + exported.stderr
    [row] = list(csv.DictReader(open(course.data_dir / "out.csv")))
    assert row["prng late"] == "0.25"  # the CLI reads the same rules

    with closing(page_login(course, course.instructor())) as pages:
        book = pages.get("/gradebook").text
        assert "late " in book and "−25%" in book
        topic = pages.get("/gradebook/topics/loops").text
        assert 'id="dates"' in topic and "late until" in topic

    student = api(course, token)
    lines = student.get("/api/deadlines").json()
    assert lines["timezone"] == "Europe/Zurich"
    assert (
        lines["topics"]["prng"].startswith("late: 25% off per day started") and "now 25% off" in lines["topics"]["prng"]
    )
    assert lines["topics"]["at_updates"].startswith("due in 2 days (") and lines["topics"]["loops"].startswith(
        "closed since"
    )
    assert "static_args" not in lines["topics"]  # no dates: left out
    with closing(page_login(course, token)) as pages:
        me = pages.get("/me").text
        assert "Europe/Zurich" in me and "due in 2 days" in me and "closed since" in me and "late: " in me

    # every view of the one submission: the time received, the late mark, the score that counts
    counted, total = round(raw * 0.75, 4), json.loads(graded)["max_score"]
    shown = student.get(f"/api/submissions/{sid}").json()
    assert (shown["counted_score"], shown["score"], shown["late"]) == (counted, raw, {"prng": 0.75}), shown
    assert [s["counted_score"] for s in student.get("/api/submissions").json()] == [counted]
    env = {"JAXLINGS_SERVER": course.url, "JAXLINGS_TOKEN": token, "JAXLINGS_CONFIG": str(course.data_dir / "c.json")}
    listed = " ".join(grade(["submissions"], course, COLUMNS="200", **env).stdout.split())
    assert f"{counted:g} / {total:g} (late: prng keeps 75%; {raw:g} before)" in listed, listed
    one = " ".join(grade(["result", str(sid)], course, COLUMNS="200", **env).stdout.split())
    assert "received " in one and f"; counts {counted:g} / {total:g} (late: prng keeps 75%" in one, one
    with closing(page_login(course, token)) as pages:
        history = pages.get("/me").text.split('id="history"')[1]
        assert f"{counted:g} / {total:g}" in history and "late: prng keeps 75%" in history
        page = pages.get(f"/submissions/{sid}").text
        assert 'id="received"' in page and "late: prng keeps 75%" in page and f"{raw:g} before the late policy" in page


@pytest.mark.slow
def test_grade_submit_says_where_each_topic_stands_before_it_uploads(course, tmp_path):
    write_rules(course, dt.datetime.now(dt.UTC))
    course.serve()
    (tmp_path / "exercises").mkdir()
    (tmp_path / "exercises" / "at_updates.py").write_text(FILE)
    env = {
        "JAXLINGS_SERVER": course.url,
        "JAXLINGS_TOKEN": course.token("dan"),
        "JAXLINGS_CONFIG": str(tmp_path / "c.json"),
    }
    sent = grade(["submit", "at_updates"], course, cwd=tmp_path, **env)
    assert sent.returncode == 0 and "at_updates: due in 2 days (" in sent.stdout, sent.stdout + sent.stderr
    (tmp_path / "exercises" / "loops.py").write_text(FILE)
    closed = grade(["submit", "loops"], course, cwd=tmp_path, **env)
    assert closed.returncode != 0 and "loops: closed since" in closed.stdout
    assert "no submission of it is taken now" in " ".join((closed.stdout + closed.stderr).split())
    (tmp_path / "exercises" / "prng.py").write_text(FILE + "\n")  # another content: not a duplicate
    everything = grade(["submit"], course, cwd=tmp_path, **env)  # the whole folder, as the README says
    said = " ".join(everything.stdout.split())
    assert everything.returncode == 0, everything.stdout + everything.stderr
    assert ": prng, at_updates" in said and "left out: loops is closed since" in said, said


@pytest.mark.slow
def test_extensions_from_the_api_and_the_topic_page_for_instructors_only(course):
    write_rules(course, dt.datetime.now(dt.UTC))
    course.serve()
    student_token = course.token("erin")
    prof = api(course, course.instructor())
    granted = prof.post("/api/extensions", json={"login": "erin", "topic": "loops", "days": 4, "reason": "travel"})
    assert granted.status_code == 201 and granted.json()["seconds"] == 4 * 86400, granted.text
    assert "erin: loops now due" in granted.json()["message"]
    for body, code in (
        ({"login": "nobody", "topic": "loops", "days": 1}, 404),
        ({"login": "erin", "topic": "lopos", "days": 1}, 400),
        ({"login": "erin", "topic": "loops", "days": 0}, 400),
        ({"login": "erin", "topic": "loops", "hours": 0.0001}, 400),  # 0.36 s: stored as none, it wiped hers
        ({"login": "erin", "topic": "loops", "days": -1}, 422),
        ({"login": "erin", "topic": "loops", "days": 3}, 409),  # takes a day away: must say so
    ):
        assert prof.post("/api/extensions", json=body).status_code == code, body
    student = api(course, student_token)
    assert student.post("/api/extensions", json={"login": "erin", "topic": "loops", "days": 9}).status_code == 403

    with closing(page_login(course, course.instructor())) as pages:
        page = pages.get("/gradebook/topics/loops").text
        assert 'id="extensions"' in page and "travel" in page and "4 days" in page  # the refused grants changed nothing
        from helpers.service import form_csrf

        csrf = form_csrf(page)
        shorter = {"login": "erin", "days": "2", "hours": "6", "csrf": csrf}
        refused = pages.post("/gradebook/topics/loops/extend", data=shorter)
        assert refused.status_code == 409 and "erin already has 4 days more on loops" in refused.text
        assert "4 days" in pages.get("/gradebook/topics/loops").text  # hers is untouched
        done = pages.post("/gradebook/topics/loops/extend", data=shorter | {"shorten": "yes"})
        assert done.status_code == 200 and "erin: loops now due" in done.text
        assert "replacing the earlier extension of 4 days" in done.text  # a shorter grant says what it replaces
        assert (
            "2.25 days" in pages.get("/gradebook/topics/loops").text
            or "54 hours" in pages.get("/gradebook/topics/loops").text
        )
        forged = pages.post("/gradebook/topics/loops/extend", data={"login": "erin", "days": "30", "csrf": "wrong"})
        assert forged.status_code == 403
    with closing(page_login(course, student_token)) as pages:
        csrf = form_csrf(pages.get("/me").text)
        assert (
            pages.post("/gradebook/topics/loops/extend", data={"login": "erin", "days": "30", "csrf": csrf}).status_code
            == 403
        )


def test_a_rules_file_with_a_typo_stops_grade_serve_with_the_key_named(tmp_path):
    from helpers.service import new_course

    c = new_course(tmp_path / "course")
    (c.data_dir / "course.toml").write_text(
        "[topics.prng]\ndue = 2026-12-01T12:00:00Z\nlate_untill = 2026-12-02T12:00:00Z\n"
    )
    started = grade(["serve"], c)
    assert started.returncode == 2 and "course.toml" in started.stdout + started.stderr
    said = started.stdout + started.stderr
    assert "topics.prng.late_untill: not a key of this table (misspelt?)" in said and "Traceback" not in said


@pytest.mark.slow
def test_a_student_reads_the_dates_in_their_own_zone(course):
    write_rules(course, dt.datetime.now(dt.UTC))
    course.serve()
    token = course.token("fay")
    fay = api(course, token)
    assert fay.get("/api/deadlines").json()["timezone"] == "Europe/Zurich"
    chosen = fay.put("/api/me/timezone", json={"timezone": "Asia/Tokyo"})
    assert chosen.status_code == 200 and chosen.json()["timezone"] == "Asia/Tokyo", chosen.text
    assert "JST)" in chosen.json()["topics"]["at_updates"] and "CET" not in chosen.json()["topics"]["at_updates"]
    for zone in ("Mars/Olympus_Mons", "America", "Europe", "../../etc/passwd"):  # folders of the database too
        refused = fay.put("/api/me/timezone", json={"timezone": zone})
        assert refused.status_code == 400 and "unknown time zone" in refused.json()["detail"], (zone, refused.text)
    assert fay.get("/api/deadlines").json()["timezone"] == "Asia/Tokyo"  # a refusal changes nothing
    prof = api(course, course.instructor())
    assert prof.put("/api/me/timezone", json={"timezone": "Asia/Tokyo"}).status_code == 403

    with closing(page_login(course, token)) as pages:
        me = pages.get("/me").text
        assert "dates (Asia/Tokyo)" in me and "JST)" in me
        from helpers.service import form_csrf

        bad = pages.post("/me/timezone", data={"timezone": "<b>x</b>", "csrf": form_csrf(me)})
        assert bad.status_code == 400 and "unknown time zone" in bad.text and "<b>x</b>" not in bad.text
        folder = pages.post("/me/timezone", data={"timezone": "America", "csrf": form_csrf(me)})
        assert folder.status_code == 400 and "unknown time zone" in folder.text
        back = pages.post("/me/timezone", data={"timezone": "", "csrf": form_csrf(me)})
        assert back.status_code == 303
        assert "dates (Europe/Zurich)" in pages.get("/me").text
        forged = pages.post("/me/timezone", data={"timezone": "Asia/Tokyo", "csrf": "wrong"})
        assert forged.status_code == 403
    assert fay.get("/api/deadlines").json()["timezone"] == "Europe/Zurich"


def test_a_submission_is_stamped_at_the_moment_its_dates_were_checked(database_url, tmp_path, monkeypatch):
    """One clock reading decides both: accepted inside the window means counted inside it (the
    stamp used to be the commit's, later than the check: just past a closing, counting 0)."""
    from jaxlings.service import auth, config, storage, submitting

    url = database_url
    checked_at = T0 - dt.timedelta(seconds=1)  # one second before the topic closes (its late_until)
    closing_rules = RULES.model_copy(
        update={"topics": {AT: RULES.topics[AT].model_copy(update={"late_until": T0.replace(tzinfo=dt.UTC)})}}
    )
    monkeypatch.setattr(submitting, "utcnow", lambda: checked_at)
    settings = config.from_env({"JAXLINGS_DB_URL": url, "JAXLINGS_DATA_DIR": str(tmp_path)})
    upload = storage.Checked({f"{AT}.py": b"x = 1\n"}, b"zip", "digest-1")
    with db.sessions(url)() as session:
        student = auth.add_student(session, "ann")[0]
        session.commit()
        row = submitting.store(session, settings, student.id, upload, AT, closing_rules)
        assert row.created_at == checked_at  # not the real clock's later (here: days later) commit time

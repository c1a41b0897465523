"""Scores that never regress by accident: which score counts (`scores`), and each submission's
grading history (`GradeResult` rows, `GET /api/submissions/{id}/history`).

First `scores` on its own (submissions built in memory), then the storing path of `jobs` on a
real SQLite database with the grading itself stubbed (what is tested is what gets stored), then,
for real, `grade serve` and `grade worker`: a regrade polled on the gradebook page and the CSV
from its request until its result is stored, a worker killed by SIGKILL during a regrade, a job
delivered twice through the broker, and who may read a history.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import re
import time
from html.parser import HTMLParser

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select

from helpers.service import (  # noqa: F401
    SOLUTIONS,
    api,
    course,
    graded,
    kill,
    new_course,
    page_login,
    post_zip,
    state,
    wait_for,
    zip_of,
)
from jaxlings.service import db, jobs, scores
from jaxlings.service.db import DONE, FAILED, GRADING, QUEUED, GradeResult, Student, Submission, Upload

T0 = dt.datetime(2025, 3, 1, 9, 0)
AT = "at_updates"
AT_EXERCISES = {"scatter_ops": 3.0, "histogram": 5.0, "mask_fill": 3.0, "lookup_and_clamp": 3.0}
# at_updates with one exercise (histogram, the one with a speed check) left undone: 9 of 14 whatever the load
PARTIAL = re.sub(
    r"(def histogram\(x, nbins\):\n(?:    .*\n|\n)*?    ### BEGIN SOLUTION\n)    return .*\n",
    r"\1    raise NotImplementedError\n",
    (SOLUTIONS / "at_updates.py").read_text(),
)
PARTIAL_SCORE = 9.0


# -- results.json texts and submissions, in memory ---------------------------------------------


def result_json(earned: dict[str, dict[str, float]], outline: dict[str, dict[str, float]] | None = None) -> str:
    """A results.json as the engine writes it: per topic, per exercise, a `correct` and a `jit`
    check sharing the exercise's points; `earned` is topic -> exercise -> points earned."""
    outline = outline or {AT: AT_EXERCISES}
    tests, topics = [], {}
    for topic, exercises in earned.items():
        top = outline[topic]
        for exercise, points in top.items():
            got = exercises.get(exercise, 0.0)
            for check, share in (("correct", 2 / 3), ("jit", 1 / 3)):
                tests.append(
                    {
                        "name": f"{topic}.{exercise}:{check}",
                        "score": round(got * share, 4),
                        "max_score": round(points * share, 4),
                        "status": "passed" if got >= points else "failed",
                        "output": "",
                        "visibility": "visible",
                        "tags": [topic, exercise, check],
                        "extra_data": {},
                    }
                )
        topics[topic] = {"score": sum(exercises.values()), "max_score": sum(top.values())}
    score = sum(t["score"] for t in topics.values())
    top_score = sum(t["max_score"] for t in topics.values())
    return json.dumps(
        {"score": score, "max_score": top_score, "tests": tests, "extra_data": {"topics": topics}}, allow_nan=False
    )


def earned_at(total: float) -> dict[str, dict[str, float]]:
    """at_updates exercises earning `total` points, filled in course order."""
    out, left = {}, total
    for exercise, points in AT_EXERCISES.items():
        out[exercise] = min(points, left)
        left -= out[exercise]
    return {AT: out}


def sub(sid: int, minutes: float, result: str | None, status: str = DONE, student: int = 1) -> Submission:
    """A submission of student `student`, received `minutes` after T0, holding `result`."""
    return Submission(
        id=sid,
        student_id=student,
        digest=f"d{sid}",
        topics=AT,
        status=status,
        created_at=T0 + dt.timedelta(minutes=minutes),
        result_json=result,
    )


def student(sid: int, login: str, dropped: bool = False) -> Student:
    return Student(id=sid, login=login, name="", email="", dropped_at=T0 if dropped else None)


# -- which score counts -----------------------------------------------------------------------


def test_on_a_tie_the_earliest_submission_counts():
    later, earlier = sub(1, 30, result_json(earned_at(9))), sub(2, 10, result_json(earned_at(9)))
    assert scores.counted([later, earlier])[AT].submission_id == 2
    same_time = [sub(7, 5, result_json(earned_at(9))), sub(4, 5, result_json(earned_at(9)))]
    assert scores.counted(same_time)[AT].submission_id == 4  # received together: the first stored
    better = sub(3, 40, result_json(earned_at(10)))
    assert scores.counted([later, earlier, better])[AT].submission_id == 3  # a strictly better one wins


def test_a_lower_complete_regrade_replaces_that_submissions_result_but_the_best_submission_still_counts():
    first = sub(1, 0, result_json(earned_at(12)))
    assert scores.counted([first])[AT].score == 12
    first.result_json = result_json(earned_at(6))  # the regrade stored: 6 now counts for this submission
    assert scores.topic_results(first)[AT].score == 6
    assert scores.counted([first])[AT].score == 6
    second = sub(2, 5, result_json(earned_at(8)))
    best = scores.counted([first, second])[AT]
    assert (best.score, best.submission_id) == (8, 2)


@pytest.mark.parametrize("status", [QUEUED, GRADING, FAILED])
def test_a_regrade_queued_grading_or_failed_keeps_the_earlier_result(status):
    row = sub(1, 0, result_json(earned_at(11)), status=status)
    assert scores.counted([row])[AT].score == 11
    [line] = scores.standings([student(1, "ann")], [row, sub(2, 1, None, status=status)])
    assert line.score(AT) == 11 and line.submissions == 2  # a first grading in flight adds nothing, yet


def test_a_topic_never_submitted_counts_zero_of_the_outlines_maximum():
    course = scores.outline([AT, "prng"])
    [line] = scores.standings([student(1, "ann")], [sub(1, 0, result_json(earned_at(9)))])
    assert line.score("prng") == 0 and course.max_score("prng") > 0
    assert course.max_score(AT) == sum(AT_EXERCISES.values()) and course.topics == [AT, "prng"]
    assert line.total(course.topics) == 9 and course.total == course.max_score(AT) + course.max_score("prng")
    [nobody] = scores.standings([student(2, "bob")], [])
    assert nobody.total(course.topics) == 0 and nobody.last is None


def test_a_dropped_student_is_left_out():
    rows = scores.standings(
        [student(1, "ann"), student(2, "bob", dropped=True)],
        [sub(1, 0, result_json(earned_at(9))), sub(2, 0, result_json(earned_at(14)), student=2)],
    )
    assert [r.student.login for r in rows] == ["ann"]


def test_the_exercise_scores_shown_add_up_to_the_topic_score_of_the_submission_that_counts():
    course = {AT: AT_EXERCISES, "prng": {"derive_keys": 4.0, "dropout": 5.0}}
    a = sub(1, 0, result_json({AT: {"scatter_ops": 3, "histogram": 5}, "prng": {"dropout": 5}}, course))
    b = sub(2, 5, result_json({AT: {"mask_fill": 3, "lookup_and_clamp": 3, "scatter_ops": 3}, "prng": {}}, course))
    best = scores.counted([a, b])
    assert (best[AT].submission_id, best["prng"].submission_id) == (2, 1)  # each topic from its best submission
    for topic in course:
        exercises = best[topic].exercises
        assert set(exercises) == set(course[topic])
        assert sum(e.score for e in exercises.values()) == pytest.approx(best[topic].score)
        assert sum(e.max_score for e in exercises.values()) == pytest.approx(best[topic].max_score)
    assert best[AT].exercises["histogram"].failed == ("correct", "jit")


EVENTS = st.lists(
    st.tuples(st.sampled_from(["queue", "grading", "fail", "submit"]), st.integers(0, 5), st.integers(0, 14)),
    max_size=30,
)


@settings(max_examples=200, deadline=None)
@given(first=st.lists(st.integers(0, 14), min_size=1, max_size=4), events=EVENTS)
def test_whatever_regrades_are_queued_or_fail_no_counted_score_goes_down(first, events):
    """Regrades queued, running or failed, and new submissions graded: the counted score of every
    topic only ever stays or rises (only a regrade's stored result may lower it)."""
    subs = [sub(i + 1, i, result_json(earned_at(s))) for i, s in enumerate(first)]
    roster = [student(1, "ann")]
    before = scores.standings(roster, subs)[0].score(AT)
    for kind, which, points in events:
        if kind == "submit":
            subs.append(sub(len(subs) + 1, len(subs), result_json(earned_at(points))))
        else:
            subs[which % len(subs)].status = {"queue": QUEUED, "grading": GRADING, "fail": FAILED}[kind]
        now = scores.standings(roster, subs)[0].score(AT)
        assert now >= before
        before = now


# -- the storing path: one history row per stored grading, no more ------------------------------


@pytest.fixture
def store(tmp_path, monkeypatch):
    """A course database (SQLite) holding one queued submission of ann's; grading stubbed to
    return a results.json worth 9 at once (what is tested is what gets stored)."""
    c = new_course(tmp_path / "store")
    c.token("ann")
    settings_ = c.settings()
    with db.sessions(settings_.db_url).begin() as session:
        ann = session.scalar(select(Student).where(Student.login == "ann"))
        session.add(Upload(digest="z" * 64, data=b"zip", size=3))
        session.flush()
        session.add(Submission(student_id=ann.id, digest="z" * 64, topics=AT))
    monkeypatch.setattr(jobs, "_grade_zip", lambda *_args: result_json(earned_at(PARTIAL_SCORE)))
    return settings_


def history_of(settings_, submission_id: int = 1) -> list[GradeResult]:
    with db.sessions(settings_.db_url)() as session:
        return list(session.scalars(select(GradeResult).where(GradeResult.submission_id == submission_id)))


def row_of(settings_, submission_id: int = 1) -> Submission:
    with db.sessions(settings_.db_url)() as session:
        return session.get(Submission, submission_id)


def test_a_stored_grading_adds_one_history_row_and_a_second_delivery_adds_nothing(store):
    done = jobs.grade_submission(store, 1, "w:1")
    assert done["stored"] and done["score"] == PARTIAL_SCORE
    [first] = history_of(store)
    row = row_of(store)
    assert row.status == DONE and row.score == first.score == PARTIAL_SCORE
    assert first.worker == "w:1" and first.result_json == row.result_json and first.created_at == row.finished_at
    assert jobs.grade_submission(store, 1, "w:2") == {"submission": 1, "skipped": True}  # delivered again
    assert [g.id for g in history_of(store)] == [first.id] and row_of(store).score == PARTIAL_SCORE


def test_a_stale_attempts_late_result_adds_nothing(store):
    stale = jobs.claim(store, 1, "w:old")
    with db.sessions(store.db_url).begin() as session:  # its lease runs out: reaped, claimed by another worker
        session.get(Submission, 1).lease_until = db.utcnow() - dt.timedelta(seconds=1)
    assert jobs.claim(store, 1, "w:new") == 2
    late = result_json(earned_at(14))
    assert not jobs._finish(store, 1, "w:old", stale, status=DONE, result_json=late, score=14.0, max_score=14.0)
    assert history_of(store) == [] and row_of(store).status == GRADING and row_of(store).result_json is None
    result = result_json(earned_at(PARTIAL_SCORE))
    assert jobs._finish(store, 1, "w:new", 2, status=DONE, result_json=result, score=9.0, max_score=14.0)
    assert [g.worker for g in history_of(store)] == ["w:new"]
    # the stale attempt again, after the row is done: nothing either
    assert not jobs._finish(store, 1, "w:old", stale, status=DONE, result_json=late, score=14.0, max_score=14.0)
    assert len(history_of(store)) == 1 and row_of(store).score == 9.0


def test_a_store_tried_again_after_a_database_error_adds_one_row(store, monkeypatch):
    """The first try fails inside its transaction (rolled back); the second stores the row and
    its history together; a third call (an answer lost after the commit) finds it done."""
    from sqlalchemy.exc import OperationalError

    real, calls = jobs._store_end, []

    def flaky(session, *args):
        calls.append(1)
        stored = real(session, *args)
        if len(calls) == 1:
            session.flush()
            raise OperationalError("COMMIT", {}, Exception("server closed the connection unexpectedly"))
        return stored

    monkeypatch.setattr(jobs, "_store_end", flaky)
    attempt = jobs.claim(store, 1, "w:1")
    result = result_json(earned_at(PARTIAL_SCORE))
    assert jobs._finish(store, 1, "w:1", attempt, status=DONE, result_json=result, score=9.0, max_score=14.0)
    assert len(calls) == 2 and len(history_of(store)) == 1
    assert not jobs._finish(store, 1, "w:1", attempt, status=DONE, result_json=result, score=9.0, max_score=14.0)
    assert len(history_of(store)) == 1


def test_a_failed_regrade_adds_no_history_and_keeps_the_result(store):
    jobs.grade_submission(store, 1, "w:1")
    with db.sessions(store.db_url).begin() as session:
        assert jobs.requeue(session, [1]) == [1]
    attempt = jobs.claim(store, 1, "w:2")
    store_failed = jobs._failed(store, 1, "w:2", attempt, "the sandbox is gone")
    assert "graded again" in store_failed
    row = row_of(store)
    assert row.status == QUEUED and row.score == PARTIAL_SCORE and row.result_json
    assert len(history_of(store)) == 1


# -- for real: grade serve, grade worker -------------------------------------------------------


class _Table(HTMLParser):
    """The cells' text of the page's `<table id="gradebook">`, row by row."""

    def __init__(self):
        super().__init__()
        self.rows: list[list[str]] = []
        self.inside = self.cell = False

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.inside = dict(attrs).get("id") == "gradebook"
        elif self.inside and tag == "tr":
            self.rows.append([])
        elif self.inside and tag in ("td", "th"):
            self.cell = True
            self.rows[-1].append("")

    def handle_endtag(self, tag):
        if tag == "table":
            self.inside = False
        elif tag in ("td", "th"):
            self.cell = False

    def handle_data(self, data):
        if self.inside and self.cell:
            self.rows[-1][-1] += data


def page_cell(html: str, login: str, topic: str) -> str:
    """The text of `login`'s cell for `topic` in the gradebook page's table."""
    table = _Table()
    table.feed(html)
    header, *rows = table.rows
    column = next(i for i, h in enumerate(header) if h.strip().startswith(topic))
    [row] = [r for r in rows if r and r[0].strip().split()[0] == login]
    return row[column].strip()


def csv_cell(text: str, login: str, topic: str) -> str:
    [row] = [r for r in csv.DictReader(io.StringIO(text)) if r["login"] == login]
    return row[topic].strip()


def number(cell: str) -> float | None:
    """The first number of a cell ("9", "9 / 14"); None for a blank cell."""
    found = re.search(r"-?\d+(?:\.\d+)?", cell)
    return float(found.group()) if found else None


def history(client, submission_id: int) -> list[dict]:
    reply = client.get(f"/api/submissions/{submission_id}/history")
    assert reply.status_code == 200, reply.text
    return reply.json()


def shown(course, pages, prof, login: str) -> tuple[float | None, float | None]:
    """`login`'s at_updates score on the gradebook page and in the CSV, as numbers."""
    page = pages.get("/gradebook")
    assert page.status_code == 200, page.text
    sheet = prof.get("/api/gradebook.csv")
    assert sheet.status_code == 200, sheet.text
    return number(page_cell(page.text, login, AT)), number(csv_cell(sheet.text, login, AT))


def graded_once(course, login: str):
    """serve + worker, `login` submits the partial at_updates and it is graded: (worker, student's
    client, instructor's client, instructor's page session, submission id)."""
    course.serve()
    worker = course.worker()
    client = api(course, course.token(login))
    instructor = course.instructor()
    prof, pages = api(course, instructor), page_login(course, instructor)
    sid = post_zip(client, zip_of({"at_updates.py": PARTIAL})).json()["id"]
    done = graded(client, sid, 240)
    assert done["status"] == "done" and done["score"] == PARTIAL_SCORE, (done, course.log("worker.log"))
    assert shown(course, pages, prof, login) == (PARTIAL_SCORE, PARTIAL_SCORE)
    return worker, client, prof, pages, sid


@pytest.mark.slow
def test_during_a_regrade_the_gradebook_and_the_csv_show_the_earned_score_at_every_poll(course):
    _worker, client, prof, pages, sid = graded_once(course, "ann")
    assert len(history(client, sid)) == 1
    polls: list[tuple[int, float | None, float | None, int, str]] = []
    assert prof.post(f"/api/submissions/{sid}/regrade").json()["queued"] == [sid]
    deadline = time.monotonic() + 240
    while True:
        before = len(history(prof, sid))
        page, sheet = shown(course, pages, prof, "ann")
        status = state(prof, sid)["status"]
        polls.append((before, page, sheet, len(history(prof, sid)), status))
        if before >= 2:
            break
        assert time.monotonic() < deadline, f"the regrade was not stored in 240 s: {polls[-5:]}"
    pending = [p for p in polls if p[3] == 1]  # polls wholly before the regrade's result was stored
    assert len(pending) > 1, f"only {len(pending)} poll(s) before the regrade was stored: it proves nothing"
    assert all(p[1] == p[2] == PARTIAL_SCORE for p in pending), [p for p in pending if p[1] != PARTIAL_SCORE]
    assert {"queued", "grading"} & {p[4] for p in pending}, polls  # seen while the regrade was in flight
    assert all(p[1] == p[2] == PARTIAL_SCORE for p in polls)  # the same code regraded: the same score after
    print(f"{len(pending)} polls while the regrade was queued or grading; statuses {sorted({p[4] for p in polls})}")
    stored = history(client, sid)
    assert [g["score"] for g in stored] == [PARTIAL_SCORE, PARTIAL_SCORE] and stored[0]["id"] < stored[1]["id"]
    assert state(client, sid)["attempts"] == 2


@pytest.mark.slow
def test_a_job_delivered_again_through_the_broker_adds_no_second_result(course):
    _worker, client, prof, pages, sid = graded_once(course, "ann")
    app = jobs.make_celery(course.settings())
    skips = course.log("worker.log").count("'skipped': True")
    assert jobs.send(app, course.settings(), [sid]) == [sid]  # the finished job, sent to the worker again
    wait_for(lambda: course.log("worker.log").count("'skipped': True") > skips, 60, "the worker to skip the job")
    assert len(history(client, sid)) == 1 and state(client, sid)["attempts"] == 1
    assert shown(course, pages, prof, "ann") == (PARTIAL_SCORE, PARTIAL_SCORE)


def grading_now(course, sid: int) -> bool:
    with db.sessions(course.settings().db_url)() as session:
        row = session.get(Submission, sid)
        return row.status == GRADING and row.progress.startswith("grading topic")


@pytest.mark.slow
def test_a_worker_killed_during_a_regrade_leaves_the_earned_score_and_the_regrade_adds_one_result(course):
    worker, client, prof, pages, sid = graded_once(course, "ann")
    assert prof.post(f"/api/submissions/{sid}/regrade").json()["queued"] == [sid]
    wait_for(lambda: grading_now(course, sid), 240, "the regrade to start grading")
    kill(worker)  # SIGKILL to the worker's whole process group: its pool and grader die mid-grade
    for _ in range(3):  # no worker left: the row stays held by a dead worker
        assert shown(course, pages, prof, "ann") == (PARTIAL_SCORE, PARTIAL_SCORE)
        assert state(prof, sid)["status"] == "grading" and len(history(prof, sid)) == 1
        time.sleep(0.5)
    course.worker()  # its sweep reaps the row once the lease has run out, and grades it again
    wait_for(lambda: (s := state(prof, sid))["status"] == "done" and s["attempts"] == 3, 240, "the job graded again")
    stored = history(client, sid)
    assert len(stored) == 2 and stored[1]["score"] == PARTIAL_SCORE, stored
    assert shown(course, pages, prof, "ann") == (PARTIAL_SCORE, PARTIAL_SCORE)
    with db.sessions(course.settings().db_url)() as session:
        assert session.get(Submission, sid).lost == 1
    time.sleep(float(course.env["JAXLINGS_LEASE_SECONDS"]) + 2 * float(course.env["JAXLINGS_SWEEP_SECONDS"]))
    assert len(history(client, sid)) == 2 and state(prof, sid)["attempts"] == 3  # graded once more, not twice


# -- who may read a history ---------------------------------------------------------------------


def seed(course, login: str, gradings: list[float]) -> int:
    """A submission of `login`'s stored as graded `len(gradings)` times (the last counts); its id."""
    with db.sessions(course.settings().db_url).begin() as session:
        who = session.scalar(select(Student).where(Student.login == login))
        digest = f"{login:0<64}"[:64]
        session.add(Upload(digest=digest, data=b"zip", size=3))
        session.flush()
        row = Submission(student_id=who.id, digest=digest, topics=AT, status=DONE, attempts=len(gradings))
        session.add(row)
        session.flush()
        for i, points in enumerate(gradings):
            text = result_json(earned_at(points))
            when = T0 + dt.timedelta(hours=i)
            session.add(
                GradeResult(
                    submission_id=row.id,
                    created_at=when,
                    worker=f"w:{i}",
                    score=points,
                    max_score=14.0,
                    result_json=text,
                )
            )
            row.result_json, row.score, row.max_score, row.finished_at = text, points, 14.0, when
        return row.id


@pytest.mark.slow
def test_a_student_reads_their_own_submissions_history_and_no_one_elses(course):
    course.serve()
    ann, bob = api(course, course.token("ann")), api(course, course.token("bob"))
    prof = api(course, course.instructor())
    mine, theirs = seed(course, "ann", [12, 9]), seed(course, "bob", [14])
    got = history(ann, mine)
    assert [(g["score"], g["max_score"], g["worker"]) for g in got] == [(12, 14, "w:0"), (9, 14, "w:1")]
    assert got[0]["created_at"] == "2025-03-01T09:00:00Z" and got[0]["id"] < got[1]["id"]
    assert ann.get(f"/api/submissions/{mine}").json()["score"] == 9  # the latest counts
    assert ann.get(f"/api/submissions/{theirs}/history").status_code == 404  # like one that does not exist
    assert ann.get("/api/submissions/999999/history").status_code == 404
    assert ann.get("/api/submissions/0/history").status_code == 422
    assert ann.get("/api/submissions/abc/history").status_code == 422
    assert api(course, "jxl_wrong").get(f"/api/submissions/{mine}/history").status_code == 401
    assert [g["score"] for g in history(bob, theirs)] == [14]
    assert len(history(prof, mine)) == 2 and len(history(prof, theirs)) == 1
    with db.sessions(course.settings().db_url)() as session:
        assert session.scalar(select(func.count()).select_from(GradeResult)) == 3

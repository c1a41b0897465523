"""Grading through the service for real: `grade serve`, `grade worker` processes, `grade submit --wait`.

Kills are real (SIGKILL to the whole process group); SQLite with Celery's SQLAlchemy transport
(the embedded default) and PostgreSQL + Redis. Submissions hold one small topic.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading

import httpx
import pytest

from helpers.service import (  # noqa: F401
    BROKEN,
    GRADE,
    SOLUTIONS,
    all_but_speed_pass,
    api,
    course,
    drop_database,
    graded,
    kill,
    new_course,
    post_zip,
    postgres_redis_env,
    state,
    wait_for,
    zip_of,
)

pytestmark = pytest.mark.slow
AT = (SOLUTIONS / "at_updates.py").read_bytes()


def run_grade(course, args: list[str], cwd, **env: str) -> subprocess.CompletedProcess:
    """Run a `grade` client command as a student would, bounded in time."""
    full = {**os.environ, "JAXLINGS_CONFIG": str(cwd / "client.json"), "COLUMNS": "200", **env}
    return subprocess.run(GRADE + args, cwd=cwd, env=full, capture_output=True, text=True, timeout=300)


def test_grade_submit_wait_shows_progress_then_the_check_table(course, tmp_path):
    course.serve()
    course.worker()
    home = tmp_path / "student"
    (home / "exercises").mkdir(parents=True)
    shutil.copy(SOLUTIONS / "at_updates.py", home / "exercises")
    (home / "exercises" / "prng.py").write_text(BROKEN)
    (home / "exercises" / "notes.txt").write_text("not sent")
    refused = run_grade(course, ["login", "--server", course.url, "--token", "jxl_wrong"], home)
    assert refused.returncode == 2 and "refused your token" in refused.stdout
    token = course.token("carol")
    assert run_grade(course, ["login", "--server", course.url, "--token", token], home).returncode == 0
    done = run_grade(course, ["submit", "at_updates", "--wait"], home)
    assert done.returncode == 0, done.stdout + done.stderr + course.log("worker.log")
    out = done.stdout
    assert "queued" in out and "grading topic 1 of 1: at_updates" in out
    sub = int(out.split("submission ")[1].split(":")[0])
    doc = api(course, token).get(f"/api/submissions/{sub}/results.json").json()
    assert doc["max_score"] == 14 and all_but_speed_pass(doc) and doc["extra_data"]["mode"] == "hidden"
    total = f"Total: {doc['score']:g} / 14"
    assert f"at_updates: {doc['score']:g} / 14" in out and total in out
    assert {t["name"].split(".")[0] for t in doc["tests"]} == {"at_updates"}
    assert {"score", "max_score", "execution_time", "tests", "extra_data"} <= set(doc)
    again = run_grade(course, ["result", str(sub), "--json", "r.json"], home)
    assert total in again.stdout and json.loads((home / "r.json").read_text()) == doc
    history = run_grade(course, ["submissions"], home)
    assert str(sub) in history.stdout and "done" in history.stdout
    failing = run_grade(course, ["submit", "prng", "--wait"], home)  # a broken file scores 0, with why
    assert failing.returncode == 0 and "Total: 0 /" in failing.stdout and "prng" in failing.stdout


@pytest.fixture(params=["sqlite", "postgres-redis"])
def any_course(request, tmp_path):
    """A course on the embedded default, then on PostgreSQL + Redis."""
    env = postgres_redis_env() if request.param == "postgres-redis" else {}
    c = new_course(tmp_path / request.param, **env)
    yield c
    c.stop()
    if env:
        drop_database(env["JAXLINGS_DATABASE_URL"])


def test_a_worker_killed_mid_grade_leaves_the_job_to_be_graded_again(any_course):
    course = any_course
    course.serve()
    first = course.worker()
    client = api(course, course.token("dave"))
    sub = post_zip(client, zip_of({"at_updates.py": AT})).json()["id"]
    wait_for(lambda: state(client, sub)["progress"].startswith("grading topic"), 120, "grading to start")
    kill(first)  # SIGKILL: pool, graders and all
    assert state(client, sub)["status"] == "grading"  # held by a lease that nobody renews now
    course.worker()
    done = graded(client, sub, 240)
    assert done["status"] == "done" and done["attempts"] == 2, course.log("worker.log")
    assert done["max_score"] == 14 and all_but_speed_pass(client.get(f"/api/submissions/{sub}/results.json").json())


def test_the_api_killed_between_storing_and_replying_loses_nothing(course):
    slow = course.serve(faults=True, JAXLINGS_FAULT_REPLY_DELAY="60")  # stores, then sits before sending and replying
    course.worker()
    token = course.token("erin")
    data = zip_of({"prng.py": BROKEN})
    replies: list = []

    def send() -> None:
        try:
            replies.append(post_zip(api(course, token), data))
        except httpx.HTTPError as exc:
            replies.append(exc)

    sender = threading.Thread(target=send)
    sender.start()
    wait_for(lambda: _rows(course), 30, "the submission row")
    kill(slow)
    sender.join(60)
    assert replies and isinstance(replies[0], httpx.HTTPError)  # the student never got the 202
    course.serve()
    client = api(course, token)
    (stored,) = _rows(course)
    done = graded(client, stored, 120)  # the worker's sweep sends what the dead API never did
    assert done["status"] == "done" and done["score"] == 0
    retry = post_zip(client, data).json()  # the student sends again: the same submission
    assert retry["id"] == stored and retry["duplicate"] is True


def _rows(course) -> list[int]:
    from sqlalchemy import select

    from jaxlings.service import db

    with db.sessions(course.settings().db_url)() as session:
        return list(session.scalars(select(db.Submission.id)))


def test_instructors_regrade_one_a_topic_or_everything(course):
    course.serve()
    course.worker()
    client = api(course, course.token("frank"))
    prof = api(course, course.instructor())
    sub = post_zip(client, zip_of({"prng.py": BROKEN})).json()["id"]
    assert graded(client, sub, 120)["attempts"] == 1
    assert client.post(f"/api/submissions/{sub}/regrade").status_code == 403
    assert prof.post(f"/api/submissions/{sub}/regrade").json()["queued"] == [sub]
    assert graded(prof, sub, 120)["attempts"] == 2
    assert prof.post("/api/regrade", params={"topic": "at_updates"}).json()["queued"] == []
    assert prof.post("/api/regrade").status_code == 400
    assert prof.post("/api/regrade", params={"topic": "prng"}).json()["queued"] == [sub]
    wait_for(lambda: graded(prof, sub, 120)["attempts"] == 3, 120, "the topic regrade")
    assert prof.post("/api/regrade", params={"all": "true"}).json()["queued"] == [sub]
    wait_for(lambda: graded(prof, sub, 120)["attempts"] == 4, 120, "the regrade of everything")


def test_postgres_and_redis_with_two_workers(tmp_path):
    env = postgres_redis_env()
    c = new_course(tmp_path / "pg", **env)
    try:
        c.serve()
        c.worker()
        c.worker()
        clients = [api(c, c.token(f"pg{i}")) for i in range(3)]
        subs = [
            (cl, post_zip(cl, zip_of({"prng.py": BROKEN + f"# {i}\n"})).json()["id"]) for i, cl in enumerate(clients)
        ]
        results = [graded(cl, sub, 180) for cl, sub in subs]
        assert all(r["status"] == "done" and r["score"] == 0 for r in results), c.log("worker.log")
        assert clients[0].get(f"/api/submissions/{subs[1][1]}").status_code == 404
    finally:
        c.stop()
        drop_database(env["JAXLINGS_DATABASE_URL"])


def test_a_message_the_broker_lost_is_sent_again_once_workers_sit_idle(course):
    course.serve()
    client = api(course, course.token("gina"))
    sub = post_zip(client, zip_of({"prng.py": BROKEN})).json()["id"]
    _lose_the_message(course, sub)
    course.worker()
    done = graded(client, sub, 120)
    assert done["status"] == "done" and done["attempts"] == 1


def _lose_the_message(course, sub: int) -> None:
    """What a worker that fetched the message and died before claiming it leaves: no message, sent long ago."""
    import datetime as dt

    import sqlalchemy

    from jaxlings.service import db

    def sent() -> bool:  # the dispatcher sends off the request path: wait for the message to be there
        with db.sessions(course.settings().db_url)() as session:
            return session.get(db.Submission, sub).sent_at is not None

    wait_for(sent, 30, "the dispatcher to send the job")
    broker = sqlalchemy.create_engine(f"sqlite:///{course.data_dir / 'broker.db'}")
    with broker.begin() as conn:
        assert conn.execute(sqlalchemy.text("DELETE FROM kombu_message")).rowcount == 1
    broker.dispose()
    with db.sessions(course.settings().db_url).begin() as session:
        row = session.get(db.Submission, sub)
        row.sent_at = row.created_at = row.created_at - dt.timedelta(minutes=10)


def test_serve_with_worker_grades_and_stops_its_worker(course):
    server = course.serve(args=("--with-worker",))
    client = api(course, course.token("ivan"))
    sub = post_zip(client, zip_of({"prng.py": BROKEN})).json()["id"]
    assert graded(client, sub, 120)["status"] == "done"
    children = subprocess.run(["pgrep", "-P", str(server.pid)], capture_output=True, text=True).stdout.split()
    assert children, "the worker is a child of grade serve"
    server.terminate()  # SIGTERM to grade serve alone: it stops its worker
    assert server.wait(90) == 0
    assert "Warm shutdown" in course.log("serve.log")
    wait_for(lambda: not any(os.path.exists(f"/proc/{pid}") for pid in children), 30, "the worker to exit")
    course.procs.remove(server)
    again = course.serve(args=("--with-worker",))  # kill -9 of grade serve: the kernel stops its worker
    children = subprocess.run(["pgrep", "-P", str(again.pid)], capture_output=True, text=True).stdout.split()
    os.kill(again.pid, 9)
    again.wait(30)
    wait_for(lambda: not any(os.path.exists(f"/proc/{pid}") for pid in children), 60, "the orphaned worker to exit")


def test_a_worker_that_cannot_sandbox_fails_the_job_saying_why(course, tmp_path):
    course.serve()
    course.worker(JAXLINGS_SANDBOX="on", PATH=os.path.dirname(GRADE[0]))  # no bwrap on this PATH
    client = api(course, course.token("judy"))
    sub = post_zip(client, zip_of({"prng.py": BROKEN})).json()["id"]
    failed = graded(client, sub, 120)
    assert failed["status"] == "failed" and "bubblewrap" in failed["error"]
    assert client.get(f"/api/submissions/{sub}/results.json").status_code == 409
    (tmp_path / "client.json").write_text(json.dumps({"url": course.url, "token": client.headers["authorization"][7:]}))
    shown = run_grade(course, ["result", str(sub)], tmp_path)
    assert shown.returncode == 2 and "could not be graded" in shown.stdout and "bubblewrap" in shown.stdout


def at_once(script: str, count: int, *args: str, lead: float) -> list[str]:
    """Run `script` in `count` Python processes, passing it a start time `lead` s from now (after
    each has imported what it needs) and `args`; their outputs, once all exited 0."""
    import time

    start = time.time() + lead
    procs = [
        subprocess.Popen(
            [*GRADE[:1], "-c", script, str(start), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(count)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err[-2000:] for _, err in outs]
    return [out for out, _ in outs]


RACER = """
import sys, time
from jaxlings.service import config, jobs
start, rounds, folder = float(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
for r in range(rounds):
    settings = config.from_env({"JAXLINGS_DATA_DIR": f"{folder}/{r}"})
    app = jobs.make_celery(settings)
    while time.time() < start + r * 0.5:
        pass
    declared = jobs.declare_queue(app, settings)
    with app.connection_for_write() as connection:
        app.send_task(jobs.TASK, args=[r], queue=settings.queue, connection=connection)
    print(r, declared, flush=True)
"""


def test_processes_starting_at_once_on_a_fresh_sqlite_broker_all_declare_and_send(tmp_path):
    """An API and workers started together race to create the SQLite broker's tables and queue row
    (kombu checks, then inserts: one of two racers used to get IntegrityError, a 500 on submit).
    Four processes, eight fresh brokers, each round started at the same instant: every process
    declares the queue and every message arrives."""
    import sqlalchemy

    racers, rounds = 4, 8
    outs = at_once(RACER, racers, str(rounds), str(tmp_path), lead=8)
    assert all(out.split() == [w for r in range(rounds) for w in (str(r), "True")] for out in outs), outs
    for r in range(rounds):
        broker = sqlalchemy.create_engine(f"sqlite:///{tmp_path / str(r) / 'broker.db'}")
        with broker.connect() as conn:
            assert conn.execute(sqlalchemy.text("SELECT count(*) FROM kombu_queue")).scalar() == 1
            assert conn.execute(sqlalchemy.text("SELECT count(*) FROM kombu_message")).scalar() == racers
        broker.dispose()


def test_a_broker_that_refuses_a_job_loses_nothing_and_the_student_still_gets_a_reply(course):
    """The broker fails the send (its message table is gone): the API still answers 202 with the
    stored submission, its dispatcher says why in the log, and the sweep of the worker started later sends and
    grades it."""
    import sqlalchemy

    course.serve()
    client = api(course, course.token("hana"))
    broker = sqlalchemy.create_engine(f"sqlite:///{course.data_dir / 'broker.db'}")
    with broker.begin() as conn:
        conn.execute(sqlalchemy.text("DROP TABLE kombu_message"))
    broker.dispose()
    reply = post_zip(client, zip_of({"prng.py": BROKEN}))
    assert reply.status_code == 202, reply.text
    sub = reply.json()["id"]
    assert reply.json()["status"] == "queued"
    wait_for(
        lambda: "could not send submission" in course.log("serve.log"),
        30,  # sent off the request path
        "the dispatcher to log the refused send",
    )
    course.worker()  # creates the broker's tables again, then sweeps
    done = graded(client, sub, 120)
    assert done["status"] == "done" and done["score"] == 0


MIGRATOR = """
import sys, time
from jaxlings.service import db
start, urls = float(sys.argv[1]), sys.argv[2:]
for i, url in enumerate(urls):
    while time.time() < start + i * 1.0:
        pass
    db.upgrade(url)
    print("migrated", flush=True)
"""


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_processes_starting_at_once_on_a_fresh_database_all_migrate(backend, tmp_path):
    """`grade serve` and its workers started together on a fresh database each run the
    migrations: without taking turns, all but one found no schema, created it and crashed
    ("table alembic_version already exists"; PostgreSQL: a unique violation). Four processes,
    two fresh databases each started at the same instant: every process comes up, the schema
    is current."""
    import sqlalchemy

    if backend == "sqlite":
        urls = [f"sqlite:///{tmp_path / f'course{i}.db'}" for i in range(2)]
    else:
        urls = [postgres_redis_env()["JAXLINGS_DATABASE_URL"] for _ in range(2)]
    try:
        outs = at_once(MIGRATOR, 4, *urls, lead=6)
        assert all(out.split() == ["migrated"] * len(urls) for out in outs)
        for url in urls:
            engine = sqlalchemy.create_engine(url)
            with engine.connect() as conn:
                assert conn.execute(sqlalchemy.text("SELECT count(*) FROM alembic_version")).scalar() == 1
                assert conn.execute(sqlalchemy.text("SELECT count(*) FROM submissions")).scalar() == 0
            engine.dispose()
    finally:
        if backend == "postgres":
            for url in urls:
                drop_database(url)

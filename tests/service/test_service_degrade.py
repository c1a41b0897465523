"""Operator faults degrade gently: the broker, the sandbox or the database away, for real.

Real processes (`grade serve`, `grade worker`), real Redis and PostgreSQL on loopback; outages
made as they happen: a broker port where nothing listens, or that accepts and never answers, a
worker without bubblewrap, a TCP relay in front of PostgreSQL that is cut and restored.

- No request waits on the broker (`jobs.Dispatcher`, bounded `jobs.send`); what was not sent
  is sent by the sweep once a worker reaches a broker.
- A grading that fails on the grading side is tried again, `max_attempts` times in all, then
  failed with the reason; a failed regrade keeps the earlier grade counted; the student sending
  the same zip again queues it again.
- The database away: one line and exit 2 at start, 503 with Retry-After while it is away, one
  log line per failure on the worker's side, nothing lost once it is back.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import os
import signal
import socket
import subprocess
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from helpers.service import (  # noqa: F401
    BROKEN,
    GRADE,
    REDIS,
    SOLUTIONS,
    api,
    course,
    drop_database,
    free_port,
    graded,
    kill,
    new_course,
    post_zip,
    postgres_redis_env,
    reachable,
    state,
    wait_for,
    zip_of,
)

PRNG = (SOLUTIONS / "prng.py").read_bytes()
AT = (SOLUTIONS / "at_updates.py").read_bytes()


# ---------------------------------------------------------------- helpers


def needs_redis() -> None:
    if not reachable(6379):
        pytest.skip("Redis (127.0.0.1:6379) is not running; .ci/run starts it")


class Silent:
    """A port that accepts connections and never answers (a paused or wedged server)."""

    def __init__(self):
        self.socket = socket.create_server(("127.0.0.1", 0), backlog=128)
        self.port = self.socket.getsockname()[1]

    def close(self) -> None:
        self.socket.close()


class Relay:
    """A TCP relay 127.0.0.1:port -> 127.0.0.1:target that can be cut (listener closed, every
    connection reset) and restored on the same port: a database server lost and back."""

    def __init__(self, target: int):
        self.target, self.port = target, free_port()
        self.lock = threading.Lock()
        self.conns: list[socket.socket] = []
        self.listener: socket.socket | None = None
        self.restore()

    def restore(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", self.port))
        threading.Thread(target=self._accept, args=(self.listener,), daemon=True).start()

    def cut(self) -> None:
        listener, self.listener = self.listener, None
        for s in [listener, *self._take()]:
            for step in (lambda s=s: s.shutdown(socket.SHUT_RDWR), s.close):
                try:
                    step()
                except OSError:
                    pass

    def _take(self) -> list[socket.socket]:
        with self.lock:
            conns, self.conns = self.conns, []
        return conns

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target), timeout=5)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            with self.lock:
                self.conns += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a: socket.socket, b: socket.socket) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def settings_for(tmp_path, broker: str, backend: str = "", **extra: str):
    """Settings of a SQLite database in tmp_path with this broker, migrated."""
    from jaxlings.service import config, db

    env = {
        "JAXLINGS_DATA_DIR": str(tmp_path / "data"),
        "JAXLINGS_BROKER_URL": broker,
        "JAXLINGS_QUEUE": f"degrade_{uuid.uuid4().hex[:8]}",
        "JAXLINGS_SEND_TIMEOUT": "1",
        **extra,
    }
    if backend:
        env["JAXLINGS_RESULT_BACKEND"] = backend
    settings = config.from_env(env)
    db.upgrade(settings.db_url)
    return settings


def stored_rows(settings, count: int) -> list[int]:
    """`count` queued submissions stored (never sent), as the API stores them; their ids."""
    from jaxlings.service import auth, db

    with db.sessions(settings.db_url).begin() as session:
        student = auth.add_student(session, f"s{uuid.uuid4().hex[:6]}")[0]
        session.flush()
        session.add(db.Upload(digest="d" * 64, data=b"zip", size=3))
        session.flush()
        rows = [db.Submission(student_id=student.id, digest="d" * 64, topics=f"prng{i}") for i in range(count)]
        session.add_all(rows)
        session.flush()
        return [r.id for r in rows]


def unsent(settings, ids: list[int]) -> int:
    from jaxlings.service import db

    with db.sessions(settings.db_url)() as session:
        return sum(session.get(db.Submission, i).sent_at is None for i in ids)


def redis_waiting(settings) -> int:
    """Messages waiting in the settings' Redis queue."""
    import redis

    return redis.Redis.from_url(settings.celery_broker).llen(settings.queue)


def whole_log(course, name: str) -> str:
    path = course.data_dir / name
    return path.read_text(errors="replace") if path.exists() else ""


def gradebook_cells(client: httpx.Client, login: str) -> dict[str, str]:
    reply = client.get("/api/gradebook.csv")
    assert reply.status_code == 200, reply.text
    return next(r for r in csv.DictReader(io.StringIO(reply.text)) if r["login"] == login)


# ---------------------------------------------------------------- sends are bounded


@pytest.mark.parametrize("down", ["redis-closed", "redis-silent", "postgres-closed", "postgres-silent"])
def test_a_send_to_a_broker_that_is_down_gives_up_within_the_send_timeout(tmp_path, down):
    """Before issue 27 one send to a Redis that was down (broker and result backend) took 19 s,
    and to one that accepts and never answers, for ever. Now: about `send_timeout` (1 s here),
    and the rows stay unsent, for the sweep."""
    from jaxlings.service import jobs

    silent = Silent()
    port = silent.port if down.endswith("silent") else free_port()
    broker = (
        f"redis://127.0.0.1:{port}/0"
        if down.startswith("redis")
        else f"sqla+postgresql+psycopg://postgres@127.0.0.1:{port}/x"
    )
    settings = settings_for(tmp_path, broker, f"redis://127.0.0.1:{port}/1")
    ids = stored_rows(settings, 3)
    try:
        start = time.monotonic()
        sent = jobs.send(jobs.make_celery(settings), settings, ids)
        took = time.monotonic() - start
    finally:
        silent.close()
    assert sent == [] and unsent(settings, ids) == 3
    assert took < 5 * settings.send_timeout, f"a send to a broker that is down took {took:.1f} s"


def test_a_send_to_a_broker_that_answers_is_sent_and_noted(tmp_path):
    from jaxlings.service import jobs

    needs_redis()
    settings = settings_for(tmp_path, f"{REDIS}/0", f"{REDIS}/1")
    ids = stored_rows(settings, 3)
    assert jobs.send(jobs.make_celery(settings), settings, ids) == ids
    assert unsent(settings, ids) == 0 and redis_waiting(settings) == 3


def test_the_dispatcher_never_blocks_and_leaves_what_it_cannot_send_to_the_sweep(tmp_path):
    """A broker that never answers: `put` returns at once (even past the queue's room, whose
    extra ids are dropped, to be swept), and nothing is marked sent."""
    from jaxlings.service import jobs

    silent = Silent()
    settings = settings_for(tmp_path, f"redis://127.0.0.1:{silent.port}/0")
    ids = stored_rows(settings, 40)
    dispatcher = jobs.Dispatcher(jobs.make_celery(settings), settings, capacity=10)
    try:
        start = time.monotonic()
        for i in ids:
            dispatcher.put([i])
        took = time.monotonic() - start
        assert took < settings.send_timeout, f"40 puts took {took:.2f} s: put waited on the broker"
        assert dispatcher.dropped >= 40 - 2 * 10 - 1  # the thread holds what it took before its send stuck
        time.sleep(2 * settings.send_timeout)
        assert unsent(settings, ids) == 40
    finally:
        dispatcher.stop()
        silent.close()


def test_the_dispatcher_sends_what_it_is_given_to_a_broker_that_answers(tmp_path):
    from jaxlings.service import jobs

    needs_redis()
    settings = settings_for(tmp_path, f"{REDIS}/0", f"{REDIS}/1")
    ids = stored_rows(settings, 5)
    dispatcher = jobs.Dispatcher(jobs.make_celery(settings), settings)
    dispatcher.start()
    try:
        dispatcher.put(ids)
        wait_for(lambda: unsent(settings, ids) == 0, 30, "the dispatcher to send and note every job")
        assert redis_waiting(settings) == 5 and dispatcher.dropped == 0
    finally:
        dispatcher.stop()
    assert not dispatcher.thread.is_alive()


# ---------------------------------------------------------------- the gradebook counts results held


def test_the_gradebook_counts_the_results_a_submission_holds_whatever_its_status():
    from jaxlings.service import db, scores

    doc = json.dumps({"extra_data": {"topics": {"prng": {"score": 7.0, "max_score": 10.0}}}})
    when = dt.datetime(2026, 12, 1)
    for status in (db.DONE, db.QUEUED, db.GRADING, db.FAILED):
        sub = db.Submission(id=1, status=status, result_json=doc, created_at=when)
        assert {t: (r.score, r.max_score) for t, r in scores.topic_results(sub).items()} == {"prng": (7.0, 10.0)}
        later = db.Submission(id=2, status=db.FAILED, result_json=None, created_at=when)
        assert scores.counted([sub, later])["prng"].score == 7.0, status
    assert scores.topic_results(db.Submission(status=db.FAILED, result_json=None)) == {}


# ---------------------------------------------------------------- the database away at start


@pytest.mark.parametrize("command", ["worker", "serve"])
def test_a_database_that_does_not_answer_at_start_is_one_line_and_exit_2(tmp_path, command):
    url = f"postgresql+psycopg://grader:s3cret-pw@127.0.0.1:{free_port()}/course"
    env = {
        **os.environ,
        "JAXLINGS_DATA_DIR": str(tmp_path / "data"),
        "JAXLINGS_DATABASE_URL": url,
        "JAXLINGS_PORT": str(free_port()),
        "COLUMNS": "80",
    }
    done = subprocess.run(GRADE + [command], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    out = (done.stdout + done.stderr).strip()
    assert done.returncode == 2, out
    assert out.count("\n") == 0 and "Traceback" not in out, out
    assert out.startswith("error: cannot reach the database at postgresql+psycopg://grader:***@127.0.0.1:"), out
    assert "s3cret-pw" not in out and "Connection refused" in out


@pytest.mark.parametrize("command", ["worker", "serve"])
@pytest.mark.parametrize(
    "url, says",
    [
        ("postgress://grader:s3cret-pw@127.0.0.1/course", "Can't load plugin: sqlalchemy.dialects:postgress"),
        ("postgresql+psycopg://grader:s3cret-pw@127.0.0.1/course?bogus_option=1", "bogus_option"),
    ],
)
def test_a_database_url_the_driver_refuses_is_one_line_and_exit_2(tmp_path, command, url, says):
    env = {**os.environ, "JAXLINGS_DATA_DIR": str(tmp_path / "data"), "JAXLINGS_DATABASE_URL": url, "COLUMNS": "80"}
    env["JAXLINGS_PORT"] = str(free_port())
    done = subprocess.run(GRADE + [command], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    out = (done.stdout + done.stderr).strip()
    assert done.returncode == 2, out
    assert out.count("\n") == 0 and "Traceback" not in out and "sqlalche.me" not in out, out
    assert out.startswith(f"error: cannot use the database at {url.split(':')[0]}"), out
    assert says in out and "s3cret-pw" not in out, out


@pytest.mark.slow
def test_a_database_that_answers_at_start_lets_the_worker_run(tmp_path):
    """The honest case of the above: the same command with a database that answers keeps running."""
    env = {**os.environ, "JAXLINGS_DATA_DIR": str(tmp_path / "data")}
    proc = subprocess.Popen(
        GRADE + ["worker"],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        text=True,
    )
    try:
        time.sleep(5)
        assert proc.poll() is None, proc.stdout.read()
    finally:
        kill(proc, signal.SIGTERM)
    assert "cannot reach the database" not in proc.stdout.read()


# ---------------------------------------------------------------- the broker away


@pytest.mark.slow
def test_a_worker_whose_broker_is_away_at_start_says_so_once_and_grades_when_it_comes(course, tmp_path):
    """One warning line, Celery's retry lines (no traceback), the worker alive; then a Redis
    started on that port: the job the API stored meanwhile is sent and graded."""
    port = free_port()
    broker = {
        "JAXLINGS_BROKER_URL": f"redis://127.0.0.1:{port}/0",
        "JAXLINGS_RESULT_BACKEND": f"redis://127.0.0.1:{port}/1",
    }
    course.env.update(broker)
    course.serve()
    worker = course.worker()
    client = api(course, course.token("omar"))
    reply = post_zip(client, zip_of({"prng.py": BROKEN}))
    assert reply.status_code == 202, reply.text
    wait_for(lambda: "Trying again" in course.log("worker.log"), 60, "Celery's retry line")
    assert worker.poll() is None
    log = course.log("worker.log")
    assert log.count("cannot reach the broker at redis://127.0.0.1:") == 1 and "Traceback" not in log, log
    redis = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        done = graded(client, reply.json()["id"], 240)
        assert done["status"] == "done", course.log("worker.log")
    finally:
        kill(redis, signal.SIGTERM)


@pytest.mark.slow
def test_submits_with_the_broker_down_answer_at_once_and_are_graded_once_a_worker_reaches_a_broker(tmp_path):
    """Redis (broker and result backend) down for the API: 20 submits at once each answer 202
    well under the 19 s each took before, reads of others answer meanwhile; a worker on a Redis
    that answers then sweeps the unsent rows to it and grades them all."""
    needs_redis()
    closed = free_port()
    queue = f"degrade_{uuid.uuid4().hex[:8]}"
    course = new_course(
        tmp_path / "course",
        JAXLINGS_QUEUE=queue,
        JAXLINGS_RATE_LIMIT="100",
        JAXLINGS_BROKER_URL=f"redis://127.0.0.1:{closed}/0",
        JAXLINGS_RESULT_BACKEND=f"redis://127.0.0.1:{closed}/1",
    )
    try:
        course.serve()
        student, other = api(course, course.token("pat")), api(course, course.token("quinn"))
        seen = post_zip(other, zip_of({"prng.py": BROKEN + "# quinn\n"})).json()["id"]

        def timed(call):
            start = time.monotonic()
            reply = call()
            return reply.status_code, time.monotonic() - start

        with ThreadPoolExecutor(30) as pool:
            submits = [
                pool.submit(timed, lambda i=i: post_zip(student, zip_of({"prng.py": BROKEN + f"# {i}\n"})))
                for i in range(20)
            ]
            reads = [pool.submit(timed, lambda: other.get(f"/api/submissions/{seen}")) for _ in range(10)]
            submitted, read = [f.result() for f in submits], [f.result() for f in reads]
        assert [code for code, _ in submitted] == [202] * 20 and [code for code, _ in read] == [200] * 10
        print(
            f"broker down: 20 submits at once, slowest {max(t for _, t in submitted):.2f} s; 10 reads, slowest "
            f"{max(t for _, t in read):.2f} s"
        )
        slow = [round(t, 1) for _, t in submitted + read if t >= 5]
        assert not slow, f"replies that waited on the broker: {slow}"
        ids = [s["id"] for s in student.get("/api/submissions").json()] + [seen]
        assert all(state(student if i != seen else other, i)["status"] == "queued" for i in ids)
        course.worker(JAXLINGS_BROKER_URL=f"{REDIS}/0", JAXLINGS_RESULT_BACKEND=f"{REDIS}/1")
        for i in ids:
            assert graded(student if i != seen else other, i, 600)["status"] == "done", course.log("worker.log")
        serve_log = course.log("serve.log")
        assert "Traceback" not in serve_log and "could not send submission" in serve_log
    finally:
        course.stop()
        print(f"--- serve.log ---\n{course.log('serve.log')}\n--- worker.log ---\n{course.log('worker.log')}")


# ---------------------------------------------------------------- failures on the grading side


def attempts_of(course, sub: int) -> tuple[int, int, str]:
    """(attempts, failures, status) of a row, read from the database."""
    from jaxlings.service import db

    with db.sessions(course.settings().db_url)() as session:
        row = session.get(db.Submission, sub)
        return row.attempts, row.failures, row.status


@pytest.mark.slow
def test_a_regrade_on_a_worker_that_cannot_sandbox_keeps_the_earlier_grade_and_is_tried_max_attempts_times(course):
    course.env["JAXLINGS_MAX_ATTEMPTS"] = "3"
    course.serve()
    worker = course.worker()
    prof = api(course, course.instructor())
    client = api(course, course.token("rita"))
    data = zip_of({"prng.py": PRNG})
    sub = post_zip(client, data).json()["id"]
    first = graded(client, sub, 300)
    assert first["status"] == "done" and first["score"] > 0, course.log("worker.log")
    earlier = gradebook_cells(prof, "rita")["prng"]
    assert float(earlier) == first["score"]

    kill(worker, signal.SIGTERM)
    course.worker(JAXLINGS_SANDBOX="on", PATH=os.path.dirname(GRADE[0]))  # no bwrap on this PATH
    assert prof.post(f"/api/submissions/{sub}/regrade").json()["queued"] == [sub]
    assert gradebook_cells(prof, "rita")["prng"] == earlier  # the regrade in flight
    failed = graded(client, sub, 180)
    assert failed["status"] == "failed", course.log("worker.log")
    assert "bubblewrap" in failed["error"] and "3 times" in failed["error"], failed["error"]
    assert failed["score"] == first["score"] and failed["results_url"]  # the earlier result, still held
    assert gradebook_cells(prof, "rita")["prng"] == earlier  # and still counted
    assert attempts_of(course, sub) == (1 + 3, 3, "failed")
    time.sleep(3 * float(course.env["JAXLINGS_SWEEP_SECONDS"]) + float(course.env["JAXLINGS_LEASE_SECONDS"]))
    assert attempts_of(course, sub) == (1 + 3, 3, "failed"), "a failed job was tried again on its own"

    # the student sends the same zip again: queued again (its tries counted afresh), and graded
    # once a worker that can sandbox runs
    again = post_zip(client, data)
    assert again.status_code == 202 and again.json()["duplicate"] and again.json()["id"] == sub
    assert again.json()["status"] in ("queued", "grading"), again.json()
    course.stop()
    course.serve()
    course.worker()
    done = graded(client, sub, 300)
    assert done["status"] == "done" and not done["error"], done
    # the new grading counts (its speed points may differ from the first's by the clock's noise)
    assert float(gradebook_cells(prof, "rita")["prng"]) == done["score"]


@pytest.mark.slow
def test_a_first_grading_that_fails_on_the_grading_side_is_failed_after_max_attempts_with_no_grade(course):
    """No earlier result: nothing counted, the tries bounded (2 here), the reason given."""
    course.env["JAXLINGS_MAX_ATTEMPTS"] = "2"
    course.serve()
    course.worker(JAXLINGS_SANDBOX="on", PATH=os.path.dirname(GRADE[0]))
    prof = api(course, course.instructor())
    client = api(course, course.token("sam"))
    sub = post_zip(client, zip_of({"prng.py": BROKEN})).json()["id"]
    failed = graded(client, sub, 180)
    assert failed["status"] == "failed" and "2 times" in failed["error"] and failed["score"] is None
    assert attempts_of(course, sub) == (2, 2, "failed")
    cells = gradebook_cells(prof, "sam")
    assert (cells["prng"], cells["prng submitted_at"]) == ("0", "")  # nothing counts: 0, from no submission


# ---------------------------------------------------------------- PostgreSQL lost mid-run


def row_of(url: str, sub: int) -> dict:
    """A submission row read straight from PostgreSQL (not through the relay)."""
    from jaxlings.service import db

    with db.sessions(url)() as session:
        row = session.get(db.Submission, sub)
        return {
            "status": row.status,
            "progress": row.progress,
            "attempts": row.attempts,
            "lost": row.lost,
            "failures": row.failures,
        }


@pytest.mark.slow
def test_postgres_lost_mid_run_answers_503_then_everything_comes_back(tmp_path):
    """API and worker reach PostgreSQL through a relay, cut while a job is being graded: every
    request is a 503 with Retry-After, the worker logs one line per failed sweep, lease renewal
    or store (no traceback); restored, the API answers, the job in flight is stored once (not
    graded again), and the submission refused meanwhile, sent again, is graded."""
    env = postgres_redis_env()
    direct = env["JAXLINGS_DATABASE_URL"]
    relay = Relay(5432)
    env["JAXLINGS_DATABASE_URL"] = direct.replace("127.0.0.1:5432", f"127.0.0.1:{relay.port}")
    course = new_course(tmp_path / "course", JAXLINGS_LEASE_SECONDS="90", **env)  # the outage is within a lease
    try:
        course.serve()
        course.worker()
        client = api(course, course.token("tess"))
        prof = api(course, course.instructor())
        before = post_zip(client, zip_of({"prng.py": BROKEN})).json()["id"]
        assert graded(client, before, 300)["status"] == "done", course.log("worker.log")
        flight = post_zip(client, zip_of({"at_updates.py": AT})).json()["id"]
        wait_for(lambda: row_of(direct, flight)["progress"].startswith("grading topic"), 300, "the grading to start")
        time.sleep(1)  # the last poll's session closed
        worker_lines = len(whole_log(course, "worker.log").splitlines())

        relay.cut()
        for reply in (
            client.get("/api/health"),
            client.get(f"/api/submissions/{before}"),
            post_zip(client, zip_of({"prng.py": BROKEN + "# during\n"})),
            prof.get("/api/gradebook.csv"),
        ):
            assert reply.status_code == 503, reply.text
            assert reply.headers.get("retry-after", "").isdigit() and "database" in reply.json()["detail"]
        time.sleep(4 * float(course.env["JAXLINGS_SWEEP_SECONDS"]))
        during = whole_log(course, "worker.log").splitlines()[worker_lines:]
        assert any("sweep failed" in line for line in during), during
        assert any("could not renew the lease" in line or "could not store the end" in line for line in during), during
        assert not any("Traceback" in line for line in during), "\n".join(during)

        relay.restore()
        wait_for(lambda: client.get("/api/health").status_code == 200, 60, "the API to answer again")
        assert state(client, before)["status"] == "done"
        assert graded(client, flight, 300)["status"] == "done", course.log("worker.log")
        assert {k: row_of(direct, flight)[k] for k in ("attempts", "lost", "failures")} == {
            "attempts": 1,
            "lost": 0,
            "failures": 0,
        }
        after = post_zip(client, zip_of({"prng.py": BROKEN + "# during\n"}))  # the one refused, sent again
        assert after.status_code == 202 and not after.json()["duplicate"]
        assert graded(client, after.json()["id"], 300)["status"] == "done", course.log("worker.log")
        assert len(client.get("/api/submissions").json()) == 3
        assert "Traceback" not in whole_log(course, "serve.log")
    finally:
        course.stop()
        relay.cut()
        print(f"--- serve.log ---\n{course.log('serve.log')}\n--- worker.log ---\n{course.log('worker.log')}")
        drop_database(direct)

"""Jobs: the Celery app, the grading task, and the leases that make a lost job come back.

The submission row is the truth; Celery only delivers "grade submission N" to one worker. The
task claims the row with a lease (one atomic UPDATE), renews it while grading, and stores the
results.json. Messages are acknowledged late and rejected when a pool process dies, so a broker
that keeps unacknowledged messages (Redis) delivers them again; every worker also sweeps the
table, so a row whose lease ran out (its worker was killed) or that was stored but never sent
(the API was killed) is sent again whatever the broker kept. A second delivery of a job that is
done, or held under a live lease, does nothing: results are idempotent per submission.

A job whose lease ran out took its worker down (or the worker stopped answering): that is
counted on the row (`Submission.lost`), and the second time (`MAX_LOST`) the job is marked
failed with the reason instead of being sent again, so a submission whose grading kills the
grading process cannot keep the queue busy without end. A regrade starts the count afresh.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import socket
import tempfile
import threading
import time
from pathlib import Path

from celery import Celery, signals
from sqlalchemy import and_, func, or_, select, true, update

from autograder.results import clip
from autograder.service import db
from autograder.service.config import Settings
from autograder.service.db import DONE, FAILED, GRADING, QUEUED, Submission, Upload, utcnow

TASK = "jaxlings.grade"
MAX_LOST = 2           # deaths of its worker after which a job is failed, not sent again
MAX_ERROR = 2000       # characters of a failed job's error kept in the database
log = logging.getLogger("jaxlings.jobs")


def make_celery(settings: Settings) -> Celery:
    """The Celery app for these settings: late acks, one job at a time, JSON messages."""
    app = Celery("jaxlings", broker=settings.celery_broker, backend=settings.celery_backend, set_as_current=False)
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        worker_concurrency=1,
        task_default_queue=settings.queue,
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        result_expires=dt.timedelta(days=7),
        broker_connection_retry_on_startup=True,
        broker_transport_options=_transport_options(settings.celery_broker),
        worker_hijack_root_logger=False,
        worker_cancel_long_running_tasks_on_connection_loss=True,
    )
    app.conf.jaxlings_settings = settings       # what the task reads, in this process and its forked pool
    app.task(name=TASK, bind=True, ignore_result=False)(_grade_task)
    return app


def _transport_options(broker: str) -> dict:
    """Redis keeps unacknowledged jobs for an hour; SQLite waits on locks instead of failing."""
    if broker.startswith(("redis", "rediss")):
        return {"visibility_timeout": 3600}
    if broker.startswith("sqla+sqlite"):
        return {"connect_args": {"timeout": 30}}
    return {}


def _grade_task(task, submission_id: int) -> dict:
    """Celery's entry point: grade one submission (or nothing, if it is done or held)."""
    return grade_submission(task.app.conf.jaxlings_settings, submission_id, worker_name())


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def send(app: Celery, settings: Settings, ids: list[int]) -> None:
    """Hand jobs to the broker and note when; a job the broker refuses stays unsent for a sweep.

    Each job goes over a connection of its own: a broker error (SQL brokers raise database
    errors, which leave their channel unusable) then costs that one send, never later ones. The
    row is stored before this is called, so a refused send loses nothing: the caller still
    answers, and the next sweep sends what was never noted as sent.
    """
    factory = db.sessions(settings.db_url)
    for submission_id in ids:
        try:
            with app.connection_for_write() as connection:
                app.send_task(TASK, args=[submission_id], queue=settings.queue, connection=connection)
        except Exception as exc:
            log.warning("could not send submission %s to the broker (a sweep sends it again): %s: %s",
                        submission_id, type(exc).__name__, exc)
            continue
        with factory.begin() as session:
            session.execute(update(Submission).where(Submission.id == submission_id).values(sent_at=utcnow()))


def declare_queue(app: Celery, settings: Settings, attempts: int = 5) -> bool:
    """Create a SQL broker's tables and the course's queue row; whether they are there.

    The API and the workers both call this at start. Two processes creating them at once make
    one of them fail (kombu checks, then inserts); trying again on a fresh connection finds what
    the other made. A broker still refusing after `attempts` is logged, not raised: the API
    answers anyway and the sweeps send what waits. Other brokers (Redis) declare idempotently
    when used: nothing to do.
    """
    if not settings.celery_broker.startswith("sqla+"):
        return True
    for attempt in range(1, attempts + 1):
        try:
            if settings.celery_broker.startswith("sqla+sqlite:///"):
                Path(settings.celery_broker.removeprefix("sqla+sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
            with app.connection_for_write() as connection:
                app.amqp.queues[settings.queue](connection.default_channel).declare()
            return True
        except Exception as exc:
            log.warning("declaring queue %s, attempt %d of %d: %s", settings.queue, attempt, attempts, exc)
            time.sleep(0.2 * attempt)
    return False


def reap(session, now: dt.datetime, ids: list[int] | None = None) -> list[int]:
    """Rows (of `ids`, or all) whose lease ran out while grading: their worker died or stopped
    answering. Each such death is counted (`lost`); a row at `MAX_LOST` is marked failed with
    the reason, the others queued again. Returns the ids queued again (to be sent).

    Each row changes under one conditional UPDATE, so two sweepers (or a sweep and a claim)
    that see the same row count its death once."""
    expired = [Submission.status == GRADING, Submission.lease_until < now]
    if ids is not None:
        expired.append(Submission.id.in_(ids))
    found = list(session.scalars(select(Submission.id).where(*expired)))
    if not found:
        return []
    taken = list(session.scalars(
        update(Submission).where(Submission.id.in_(found), *expired)
        .values(status=QUEUED, lost=Submission.lost + 1, progress="queued again: its worker stopped answering")
        .returning(Submission.id).execution_options(synchronize_session=False)))
    if not taken:
        return []
    failed = list(session.scalars(
        update(Submission).where(Submission.id.in_(taken), Submission.status == QUEUED, Submission.lost >= MAX_LOST)
        .values(status=FAILED, finished_at=now, lease_until=None, progress="",
                error=f"grading this submission took its worker down {MAX_LOST} times (the grading process died "
                      "or stopped answering, e.g. killed for memory); it is not graded again unless an "
                      "instructor asks for a regrade")
        .returning(Submission.id).execution_options(synchronize_session=False)))
    if failed:
        log.warning("failed after %d lost attempts each, not sent again: %s", MAX_LOST, failed)
    return [i for i in taken if i not in failed]


def claim(settings: Settings, submission_id: int, worker: str) -> int | None:
    """Take the job under a lease; its attempt number, or None when done, failed, or held by a
    live worker. A row whose lease ran out is reaped first (`reap`): its death counts."""
    now = utcnow()
    with db.sessions(settings.db_url).begin() as session:
        reap(session, now, [submission_id])
        taken = session.execute(
            update(Submission)
            .where(Submission.id == submission_id, Submission.status == QUEUED)
            .values(status=GRADING, worker=worker, attempts=Submission.attempts + 1, started_at=now,
                    lease_until=now + dt.timedelta(seconds=settings.lease_seconds), progress="starting"))
        if taken.rowcount != 1:
            return None
        return session.scalar(select(Submission.attempts).where(Submission.id == submission_id))


def _mine(submission_id: int, worker: str, attempt: int):
    """The WHERE clause of a row still held by this attempt (a re-claimed row is left alone)."""
    return and_(Submission.id == submission_id, Submission.worker == worker, Submission.attempts == attempt,
                Submission.status == GRADING)


def _touch(settings: Settings, submission_id: int, worker: str, attempt: int, **values) -> None:
    """Renew the lease (and set other fields) while this attempt still holds the row."""
    lease = utcnow() + dt.timedelta(seconds=settings.lease_seconds)
    with db.sessions(settings.db_url).begin() as session:
        session.execute(update(Submission).where(_mine(submission_id, worker, attempt)).values(lease_until=lease, **values))


class Heartbeat(threading.Thread):
    """Renews a job's lease every heartbeat_seconds until stopped."""

    def __init__(self, settings: Settings, submission_id: int, worker: str, attempt: int):
        super().__init__(daemon=True, name=f"lease-{submission_id}")
        self.args = (settings, submission_id, worker, attempt)
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(self.args[0].heartbeat_seconds):
            try:
                _touch(*self.args)
            except Exception:  # a database hiccup: the next beat tries again
                log.exception("lease renewal failed")


def grade_submission(settings: Settings, submission_id: int, worker: str) -> dict:
    """Claim, grade in the sandbox with the one engine, store results.json; idempotent."""
    attempt = claim(settings, submission_id, worker)
    if attempt is None:
        return {"submission": submission_id, "skipped": True}
    with db.sessions(settings.db_url)() as session:
        row = session.get(Submission, submission_id)
        data, names = session.get(Upload, row.digest).data, row.topic_list
    beat = Heartbeat(settings, submission_id, worker, attempt)
    beat.start()
    try:
        result_json = _grade_zip(settings, data, names, lambda text: _touch(settings, submission_id, worker, attempt,
                                                                           progress=text))
    except Exception as exc:
        log.exception("grading submission %s failed", submission_id)
        error = f"{type(exc).__name__}: {exc}"
        _finish(settings, submission_id, worker, attempt, status=FAILED, error=clip(error, MAX_ERROR))
        return {"submission": submission_id, "failed": clip(str(exc), MAX_ERROR)}
    finally:
        beat.stopped.set()
    doc = json.loads(result_json)
    _finish(settings, submission_id, worker, attempt, status=DONE, result_json=result_json, score=doc["score"],
            max_score=doc["max_score"], error="")
    return {"submission": submission_id, "score": doc["score"], "max_score": doc["max_score"]}


def _finish(settings: Settings, submission_id: int, worker: str, attempt: int, **values) -> None:
    with db.sessions(settings.db_url).begin() as session:
        session.execute(update(Submission).where(_mine(submission_id, worker, attempt))
                        .values(finished_at=utcnow(), lease_until=None, progress="", **values))


def _grade_zip(settings: Settings, data: bytes, names: list[str], progress) -> str:
    """The results.json text `grade grade` would write for this zip and these topics."""
    from autograder import engine, paths, topics
    from autograder.results import Result
    from autograder.sandbox import bwrap_available
    from autograder.session import GraderError
    from autograder.submission import open_submission

    isolate = settings.sandbox == "on" or (settings.sandbox == "auto" and bwrap_available())
    if settings.sandbox == "on" and not bwrap_available():
        raise GraderError("the sandbox needs bubblewrap on the worker (apt-get install bubblewrap)")
    specs = topics.resolve(names)
    order = [s.name for s in specs]
    progress(f"grading topic 1 of {len(order)}: {order[0]}")
    seen: set[str] = set()

    def on_test(test) -> None:  # topics may be graded side by side: the progress names the newest one
        if test.topic not in seen:
            seen.add(test.topic)
            progress(f"grading topic {len(seen)} of {len(order)}: {test.topic}")

    with tempfile.TemporaryDirectory(prefix="jaxlings-job-") as tmp:
        archive = Path(tmp) / "submission.zip"
        archive.write_bytes(data)
        with open_submission(archive) as folder:
            result: Result = engine.grade(folder, specs, reference_dir=paths.solutions_dir(), public=False,
                                          seed=None, isolate=isolate, on_test=on_test, jobs=engine.default_jobs())
        out = Path(tmp) / "results.json"
        result.write(out)
        return out.read_text()


def sweep(app: Celery, settings: Settings) -> list[int]:
    """Send again the jobs that were lost, and return their ids.

    Lost are: rows whose lease ran out (their worker died mid-grade), rows stored but never sent
    (the API died before sending), and, when no job at all is being graded although rows wait,
    rows sent long ago (a message the broker handed to a worker that died before claiming it):
    those only when no job was claimed for a whole lease, so a long queue is not sent twice over.
    """
    now = utcnow()
    old = now - dt.timedelta(seconds=settings.lease_seconds)
    with db.sessions(settings.db_url).begin() as session:
        expired = reap(session, now)
        idle = not session.scalar(select(func.count()).select_from(Submission).where(
            or_(Submission.status == GRADING, Submission.started_at > old)))
        waiting = or_(Submission.sent_at.is_(None), Submission.sent_at < old) if idle else Submission.sent_at.is_(None)
        unsent = list(session.scalars(select(Submission.id).where(
            Submission.status == QUEUED, Submission.id.not_in(expired) if expired else true(),
            Submission.created_at < old, waiting)))
    lost = expired + unsent
    if lost:
        log.warning("sending again: %s", lost)
        send(app, settings, lost)
    return lost


class Sweeper(threading.Thread):
    """Runs `sweep` every sweep_seconds in the worker's main process."""

    def __init__(self, app: Celery, settings: Settings):
        super().__init__(daemon=True, name="sweeper")
        self.app, self.settings = app, settings
        self.stopped = threading.Event()

    def run(self) -> None:
        while True:
            try:
                sweep(self.app, self.settings)
            except Exception:
                log.exception("sweep failed")
            if self.stopped.wait(self.settings.sweep_seconds):
                return


def position(session, row: Submission) -> int | None:
    """1 + the number of queued jobs sent before this one; None unless it is queued."""
    if row.status != QUEUED:
        return None
    ahead = session.scalar(select(func.count()).select_from(Submission).where(
        Submission.status == QUEUED, Submission.created_at < row.created_at))
    return ahead + 1


def requeue(session, ids: list[int]) -> list[int]:
    """Mark submissions to be graded again (regrade); those being graded now are left alone."""
    if not ids:
        return []
    targets = list(session.scalars(select(Submission.id).where(Submission.id.in_(ids), Submission.status != GRADING)))
    if targets:
        session.execute(update(Submission).where(Submission.id.in_(targets))
                        .values(status=QUEUED, sent_at=None, progress="queued for regrading", error="", lost=0))
    return targets


def run_worker(settings: Settings, name: str | None = None, loglevel: str = "INFO") -> None:
    """Run one grading worker (one job at a time) until stopped; sweeps for lost jobs meanwhile."""
    db.upgrade(settings.db_url)
    app = make_celery(settings)
    declare_queue(app, settings)
    signals.worker_process_init.connect(lambda **_: db.after_fork(), weak=False)
    sweeper = Sweeper(app, settings)
    signals.worker_ready.connect(lambda **_: sweeper.start(), weak=False)
    worker = app.Worker(pool="prefork", concurrency=1, queues=[settings.queue], loglevel=loglevel,
                        hostname=name or f"jaxlings@{socket.gethostname()}-{os.getpid()}", without_gossip=True,
                        without_mingle=True, optimization="fair")
    worker.start()
    sweeper.stopped.set()

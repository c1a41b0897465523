"""Jobs: the Celery app, the grading task, and the leases that make a lost job come back.

The submission row is the truth; Celery only delivers "grade submission N" to one worker. The
task claims the row with a lease (one atomic UPDATE), renews it while grading, and stores the
results.json. Messages are acknowledged late and rejected when a pool process dies, so a broker
that keeps unacknowledged messages (Redis) delivers them again; every worker also sweeps the
table, so a row whose lease ran out (its worker was killed) or that was stored but never sent
(the API was killed) is sent again whatever the broker kept. A second delivery of a job that is
done, or held under a live lease, does nothing: results are idempotent per submission. Each
stored grading adds one `GradeResult` row (the submission's history) in the transaction that
stores it, only when the attempt still holds the row, so no delivery or retry adds two.

A job whose lease ran out took its worker down (or the worker stopped answering): that is
counted on the row (`Submission.lost`), and the second time (`MAX_LOST`) the job is marked
failed with the reason instead of being sent again, so a submission whose grading kills the
grading process cannot keep the queue busy without end. A regrade starts the count afresh.

Outages degrade gently. No request waits on the broker: the API hands ids to a `Dispatcher`, a
thread that sends them with a bounded time (`send_timeout`, no publish retries) and leaves what
it cannot send to the sweep. A grading that fails for a reason on the grading side (no sandbox,
the engine crashed, the database blipped) is counted (`Submission.failures`) and graded again
after a pause, up to `max_attempts`, then failed with the reason; the results a row held before
(a regrade's earlier grade) are never cleared by a failure. Database errors on the worker's side
cost one log line each, never a traceback.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import math
import os
import queue
import socket
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from celery import Celery, signals
from sqlalchemy import CursorResult, and_, func, or_, select, true, update

from jaxlings.grading.results import clip
from jaxlings.service import db
from jaxlings.service.config import Settings
from jaxlings.service.db import (
    DONE,
    FAILED,
    GRADING,
    QUEUED,
    UNREACHABLE,
    GradeResult,
    Submission,
    Upload,
    utcnow,
)

TASK = "jaxlings.grade"
MAX_LOST = 2  # deaths of its worker after which a job is failed, not sent again
MAX_ERROR = 2000  # characters of a failed job's error kept in the database
QUEUE_SIZE = 10000  # ids a Dispatcher holds; past it they are left to the sweep
log = logging.getLogger("jaxlings.jobs")


def one_line(exc: BaseException) -> str:
    """An exception as one line for the log: its type and the first line of its message."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


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
        broker_connection_max_retries=None,  # a worker waits for its broker however long it is away
        broker_transport_options=_transport_options(settings.celery_broker, settings.send_timeout),
        worker_hijack_root_logger=False,
        worker_cancel_long_running_tasks_on_connection_loss=True,
    )
    app.conf.jaxlings_settings = settings  # what the task reads, in this process and its forked pool
    app.task(name=TASK, bind=True, ignore_result=False)(_grade_task)
    return app


def _transport_options(broker: str, send_timeout: float = 3.0) -> dict[str, Any]:
    """Redis keeps unacknowledged jobs for an hour; SQLite waits on locks instead of failing; a
    SQL broker on a server gives up connecting after `send_timeout` (kombu caches one engine per
    process, so this holds for sends and the worker's reads alike)."""
    if broker.startswith(("redis", "rediss")):
        return {"visibility_timeout": 3600}
    if broker.startswith("sqla+sqlite"):
        return {"connect_args": {"timeout": 30}}
    if broker.startswith(("sqla+postgresql", "sqla+mysql")):
        return {"connect_args": {"connect_timeout": max(2, math.ceil(send_timeout))}, "pool_pre_ping": True}
    return {}


def _send_options(settings: Settings) -> dict[str, Any]:
    """Transport options of one send: for Redis, socket timeouts so that a broker that accepts a
    connection but never answers costs `send_timeout`, not forever; no retries of its own."""
    options = dict(_transport_options(settings.celery_broker, settings.send_timeout), max_retries=0)
    if settings.celery_broker.startswith(("redis", "rediss")):
        options.update(
            socket_timeout=settings.send_timeout, socket_connect_timeout=settings.send_timeout, retry_on_timeout=False
        )
    return options


def _grade_task(task, submission_id: int) -> dict[str, Any]:
    """Celery's entry point: grade one submission (or nothing, if it is done or held).

    The database unreachable costs one log line, not a traceback: the row is untouched (or its
    lease runs out) and the sweep sends it again once the database answers."""
    try:
        return grade_submission(task.app.conf.jaxlings_settings, submission_id, worker_name())
    except UNREACHABLE as exc:
        log.warning(
            "submission %s not graded now, the database is not answering (the sweep sends it again): %s",
            submission_id,
            one_line(exc),
        )
        return {"submission": submission_id, "deferred": one_line(exc)}


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def queue_name(settings: Settings, kind: str) -> str:
    """The queue of one kind of grading machine: the course's queue for CPUs, `<queue>.<kind>`
    for an accelerator's ("jaxlings.tpu")."""
    return settings.queue if kind in ("", "cpu") else f"{settings.queue}.{kind}"


def queue_for(settings: Settings, topic_names: list[str]) -> str:
    """Where a submission's job goes (Celery's routing by queue): to the course's accelerator's
    queue when it holds a topic graded on one (`Topic.platform`), else to the CPUs' queue."""
    from jaxlings.grading import topics

    needs = settings.accelerator and any(
        topics.load(name).platform == "accelerator" for name in topic_names if name in topics.ORDER
    )
    return queue_name(settings, settings.accelerator if needs else "cpu")


def machine_of(settings: Settings) -> str:
    """What this worker is: its `machine` setting, else the accelerator the machine has, else "cpu"."""
    from jaxlings.grading import device

    return settings.machine or device.detect() or "cpu"


def send(app: Celery, settings: Settings, ids: list[int]) -> list[int]:
    """Hand jobs to the broker and note when; the ids sent. Stops at the first refusal.

    Each send is bounded (`_send_one`), and the first one the broker refuses ends the round: a
    broker that is down would refuse the rest too, each at the cost of a timeout. What is not
    sent stays unsent in the database (`sent_at` null), where the sweep finds it; the row is
    stored before this is called, so a refused send loses nothing.
    """
    sent: list[int] = []
    try:
        routes = _routes(settings, ids)
    except Exception:  # noqa: BLE001 - logged by `_routes`: the sweep sends them once the database answers
        return sent
    for submission_id in ids:
        try:
            _send_one(app, settings, submission_id, routes.get(submission_id, settings.queue))
        except Exception as exc:  # noqa: BLE001 - broker errors are many kinds: logged, the sweep sends the rest
            left = ids[len(sent) :]
            log.warning(
                "could not send submission %s to the broker (%s); %d job(s) left unsent for the sweep",
                submission_id,
                one_line(exc),
                len(left),
            )
            return sent
        sent.append(submission_id)
        try:
            with db.sessions(settings.db_url).begin() as session:
                session.execute(update(Submission).where(Submission.id == submission_id).values(sent_at=utcnow()))
        except Exception as exc:  # noqa: BLE001 - sent all the same: at worst the sweep sends it once more
            log.warning("sent submission %s but could not note it: %s", submission_id, one_line(exc))
    return sent


def _routes(settings: Settings, ids: list[int]) -> dict[int, str]:
    """The queue of each job (`queue_for` its submission's topics); the CPUs' where the database
    does not answer (a course with no accelerator loses nothing; one with an accelerator has its
    jobs sent again by the sweep, which reads the rows then)."""
    if not settings.accelerator or not ids:
        return {}
    try:
        with db.sessions(settings.db_url).begin() as session:
            rows = session.execute(select(Submission.id, Submission.topics).where(Submission.id.in_(ids))).all()
    except Exception as exc:
        log.warning("could not read the topics of %d job(s) to route them: %s", len(ids), one_line(exc))
        raise
    return {row.id: queue_for(settings, [t for t in row.topics.split(",") if t]) for row in rows}


def _send_one(app: Celery, settings: Settings, submission_id: int, route: str) -> None:
    """Publish one job to the queue `route` over a connection of its own, giving up after about `send_timeout`.

    No publish retries (`retry=False`) and no result-backend subscription (`ignore_result`: the
    row is the result; with a Redis result backend down, subscribing alone retried for 19 s). A
    connection per job: a broker error (SQL brokers raise database errors, which leave their
    channel unusable) then costs that one send, never later ones.
    """
    with app.connection_for_write(
        connect_timeout=settings.send_timeout, transport_options=_send_options(settings)
    ) as connection:
        app.send_task(TASK, args=[submission_id], queue=route, connection=connection, retry=False, ignore_result=True)


class Dispatcher:
    """Sends jobs to the broker from a thread of its own: no request waits on the broker.

    One per API process (`AppState.dispatcher`): `put(ids)` never blocks (past `QUEUE_SIZE`
    waiting ids, the extra are left to the sweep, which sends every row never marked sent); the
    thread sends them (`send`, each bounded by `send_timeout`). Ids the broker refused are tried
    again after `sweep_seconds`, as long as the queue has room; the workers' sweep sends them too,
    and a second delivery of a job does nothing.
    """

    def __init__(self, app: Celery, settings: Settings, capacity: int = QUEUE_SIZE):
        self.app, self.settings = app, settings
        self.waiting: queue.Queue[int | None] = queue.Queue(capacity)
        self.thread: threading.Thread | None = None
        self.stopping = threading.Event()
        self.dropped = 0
        self._lock = threading.Lock()

    def start(self) -> None:
        """Start the sending thread (again, in a forked child); idempotent."""
        with self._lock:
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self._run, daemon=True, name="dispatcher")
                self.thread.start()

    def put(self, ids: list[int]) -> None:
        """Queue these jobs to be sent; returns at once (a full queue leaves them to the sweep)."""
        self.start()
        for submission_id in ids:
            try:
                self.waiting.put_nowait(submission_id)
            except queue.Full:
                self.dropped += 1
                log.warning("dispatcher queue full: submission %s left to the sweep", submission_id)

    def stop(self, timeout: float | None = None) -> None:
        """Stop the thread after what it is sending now (unsent ids stay for the sweep)."""
        thread = self.thread
        self.stopping.set()
        if thread is None:
            return
        try:
            self.waiting.put_nowait(None)
        except queue.Full:
            pass
        thread.join(self.settings.send_timeout + 1 if timeout is None else timeout)

    def _run(self) -> None:
        held: list[int] = []  # ids the broker refused: sent again after a pause
        while not self.stopping.is_set():
            if held:  # the pause: gather what comes in, send it all after
                items = self._gather(time.monotonic() + self.settings.sweep_seconds)
            else:
                items = [self.waiting.get(), *self._gather(0)]
            ids = [i for i in items if i is not None]
            if len(ids) < len(items):  # a None: stop
                return
            todo = list(dict.fromkeys([*held, *ids]))
            sent = send(self.app, self.settings, todo)
            held = todo[len(sent) :][: self.waiting.maxsize]

    def _gather(self, until: float) -> list[int | None]:
        """The ids that arrive until `until` (monotonic time; 0: those waiting now); stops at a stop."""
        out: list[int | None] = []
        while None not in out:
            try:
                out.append(
                    self.waiting.get(timeout=max(0.0, until - time.monotonic())) if until else self.waiting.get_nowait()
                )
            except queue.Empty:
                break
        return out


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
                for name in dict.fromkeys([settings.queue, queue_name(settings, settings.accelerator)]):
                    app.amqp.queues[name](connection.default_channel).declare()
            return True
        except Exception as exc:  # noqa: BLE001 - the broker's errors are many kinds: logged, tried again
            log.warning("declaring queue %s, attempt %d of %d: %s", settings.queue, attempt, attempts, one_line(exc))
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
    taken = list(
        session.scalars(
            update(Submission)
            .where(Submission.id.in_(found), *expired)
            .values(status=QUEUED, lost=Submission.lost + 1, progress="queued again: its worker stopped answering")
            .returning(Submission.id)
            .execution_options(synchronize_session=False)
        )
    )
    if not taken:
        return []
    failed = list(
        session.scalars(
            update(Submission)
            .where(Submission.id.in_(taken), Submission.status == QUEUED, Submission.lost >= MAX_LOST)
            .values(
                status=FAILED,
                finished_at=now,
                lease_until=None,
                progress="",
                error=f"grading this submission took its worker down {MAX_LOST} times (the grading process died "
                "or stopped answering, e.g. killed for memory); it is not graded again unless an "
                "instructor asks for a regrade",
            )
            .returning(Submission.id)
            .execution_options(synchronize_session=False)
        )
    )
    if failed:
        log.warning("failed after %d lost attempts each, not sent again: %s", MAX_LOST, failed)
    return [i for i in taken if i not in failed]


def claim(settings: Settings, submission_id: int, worker: str) -> int | None:
    """Take the job under a lease; its attempt number, or None when done, failed, or held by a
    live worker. A row whose lease ran out is reaped first (`reap`): its death counts."""
    now = utcnow()
    with db.sessions(settings.db_url).begin() as session:
        reap(session, now, [submission_id])
        taken = cast(
            CursorResult[Any],
            session.execute(  # an UPDATE's result: it has a rowcount
                update(Submission)
                .where(Submission.id == submission_id, Submission.status == QUEUED)
                .values(
                    status=GRADING,
                    worker=worker,
                    attempts=Submission.attempts + 1,
                    started_at=now,
                    lease_until=now + dt.timedelta(seconds=settings.lease_seconds),
                    progress="starting",
                )
            ),
        )
        if taken.rowcount != 1:
            return None
        return session.scalar(select(Submission.attempts).where(Submission.id == submission_id))


def _mine(submission_id: int, worker: str, attempt: int):
    """The WHERE clause of a row still held by this attempt (a re-claimed row is left alone)."""
    return and_(
        Submission.id == submission_id,
        Submission.worker == worker,
        Submission.attempts == attempt,
        Submission.status == GRADING,
    )


def _touch(settings: Settings, submission_id: int, worker: str, attempt: int, **values) -> None:
    """Renew the lease (and set other fields) while this attempt still holds the row."""
    lease = utcnow() + dt.timedelta(seconds=settings.lease_seconds)
    with db.sessions(settings.db_url).begin() as session:
        session.execute(
            update(Submission).where(_mine(submission_id, worker, attempt)).values(lease_until=lease, **values)
        )


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
            except Exception as exc:  # noqa: BLE001 - a database hiccup: the next beat tries again
                log.warning(
                    "could not renew the lease of submission %s (the next beat tries again): %s",
                    self.args[1],
                    one_line(exc),
                )


def grade_submission(settings: Settings, submission_id: int, worker: str) -> dict[str, Any]:
    """Claim, grade in the sandbox with the one engine, store results.json; idempotent.

    An exception while grading is a failure on the grading side (a submission's own faults are
    verdicts in its results): `_failed` counts it and queues the job again or fails it."""
    attempt = claim(settings, submission_id, worker)
    if attempt is None:
        return {"submission": submission_id, "skipped": True}
    beat = Heartbeat(settings, submission_id, worker, attempt)
    beat.start()
    try:
        with db.sessions(settings.db_url)() as session:
            row = session.get(Submission, submission_id)
            upload = session.get(Upload, row.digest) if row is not None else None
            if row is None or upload is None:
                raise LookupError(f"submission {submission_id} or its upload is no longer stored")
            data, names = upload.data, row.topic_list
        result_json = _grade_zip(
            settings, data, names, lambda text: _progress(settings, submission_id, worker, attempt, text)
        )
    except Exception as exc:
        from jaxlings.grading.session import GraderError

        error = clip(one_line(exc) if isinstance(exc, UNREACHABLE) else f"{type(exc).__name__}: {exc}", MAX_ERROR)
        if isinstance(exc, (*UNREACHABLE, GraderError)):  # said in full by its message: one line
            log.warning("grading submission %s failed: %s", submission_id, error)
        else:  # unforeseen: the traceback, once per try
            log.exception("grading submission %s failed", submission_id)
        return {"submission": submission_id, "failed": _failed(settings, submission_id, worker, attempt, error)}
    finally:
        beat.stopped.set()
    doc = json.loads(result_json)
    stored = _finish(
        settings,
        submission_id,
        worker,
        attempt,
        status=DONE,
        result_json=result_json,
        score=doc["score"],
        max_score=doc["max_score"],
        error="",
        failures=0,
    )
    if not stored:
        log.warning(
            "submission %s: this attempt (%s, try %d) no longer holds the job; its result is not stored",
            submission_id,
            worker,
            attempt,
        )
    return {"submission": submission_id, "score": doc["score"], "max_score": doc["max_score"], "stored": stored}


def _progress(settings: Settings, submission_id: int, worker: str, attempt: int, text: str) -> None:
    """Note progress (and renew the lease); a database error costs a log line, not the grading."""
    try:
        _touch(settings, submission_id, worker, attempt, progress=text)
    except Exception as exc:  # noqa: BLE001 - a database error costs a log line, not the grading
        log.warning("could not note the progress of submission %s: %s", submission_id, one_line(exc))


def _failed(settings: Settings, submission_id: int, worker: str, attempt: int, error: str) -> str:
    """Count a grading that failed on the grading side; queue the job again, or fail it at
    `max_attempts`. The row keeps the results it held (a regrade's earlier grade stays counted).
    Returns what the row now says.

    Queued again, the row is unsent with `finished_at` now: the sweep sends it after
    `sweep_seconds` (`sweep`), so a broken worker does not spin on one job."""
    with db.sessions(settings.db_url).begin() as session:
        failures = 1 + (session.scalar(select(Submission.failures).where(_mine(submission_id, worker, attempt))) or 0)
    if failures < settings.max_attempts:
        note = (
            f"grading failed on the grading side ({failures} of {settings.max_attempts} tries; "
            f"it is graded again): {error}"
        )
        _finish(
            settings,
            submission_id,
            worker,
            attempt,
            status=QUEUED,
            sent_at=None,
            failures=failures,
            error=clip(note, MAX_ERROR),
            progress="queued again after a failure on the grading side",
        )
        return note
    note = (
        f"grading failed {failures} times on the grading side, not because of the submission "
        f"(send it again, or ask for a regrade, once the graders are fixed): {error}"
    )
    _finish(settings, submission_id, worker, attempt, status=FAILED, failures=failures, error=clip(note, MAX_ERROR))
    log.warning("submission %s failed after %d tries: %s", submission_id, failures, error)
    return note


def _finish(settings: Settings, submission_id: int, worker: str, attempt: int, **values) -> bool:
    """Store the end of this attempt, trying again (one log line each) while the database is not
    answering, until the lease would have run out (then the sweep grades the job again). Whether
    this attempt still held the row (a stale attempt, its row re-claimed or done, stores nothing).

    A grading (status DONE) also adds its `GradeResult` row (the submission's history), in the
    same transaction and only when the conditional UPDATE matched: a try that the database
    committed although its answer was lost finds the row done when tried again, and adds nothing.
    """
    deadline = time.monotonic() + settings.lease_seconds
    values = {"finished_at": utcnow(), "lease_until": None, "progress": "", **values}
    while True:
        try:
            with db.sessions(settings.db_url).begin() as session:
                return _store_end(session, submission_id, worker, attempt, values)
        except UNREACHABLE as exc:
            if time.monotonic() > deadline:
                raise
            log.warning("could not store the end of submission %s (trying again): %s", submission_id, one_line(exc))
            time.sleep(min(settings.heartbeat_seconds, 2.0))


def _store_end(session, submission_id: int, worker: str, attempt: int, values: dict[str, Any]) -> bool:
    """One try of `_finish`, in the caller's transaction: the row's update, and the history row
    of a grading when the update matched. Whether it matched."""
    taken = cast(
        CursorResult[Any],
        session.execute(update(Submission).where(_mine(submission_id, worker, attempt)).values(**values)),
    )
    if taken.rowcount != 1:
        return False
    if values.get("status") == DONE:
        session.add(
            GradeResult(
                submission_id=submission_id,
                created_at=values["finished_at"],
                worker=worker,
                score=values["score"],
                max_score=values["max_score"],
                result_json=values["result_json"],
            )
        )
    return True


def topic_progress(order: list[str], progress: Callable[[str], None]) -> Callable[[Any], None]:
    """Note the start of grading (`progress`), and return the engine's `on_test` that notes each
    topic as its first test arrives: "grading topic 2 of 3: prng". Topics are graded side by side
    and not in course order, so each is numbered once, as it starts (never "1 of 2" twice)."""
    seen: set[str] = {order[0]} if len(order) == 1 else set()
    progress(f"grading topic 1 of 1: {order[0]}" if len(order) == 1 else f"grading topics: {len(order)} to grade")

    def on_test(test: Any) -> None:
        if test.topic not in seen:
            seen.add(test.topic)
            progress(f"grading topic {len(seen)} of {len(order)}: {test.topic}")

    return on_test


def _grade_zip(settings: Settings, data: bytes, names: list[str], progress) -> str:
    """The results.json text `grade grade` would write for this zip and these topics."""
    from jaxlings.grading import device, engine, paths, topics
    from jaxlings.grading.results import Result
    from jaxlings.grading.session import GraderError
    from jaxlings.grading.submission import open_submission
    from jaxlings.isolation import bwrap_available, bwrap_problem

    isolate = settings.sandbox == "on" or (settings.sandbox == "auto" and bwrap_available())
    if settings.sandbox == "on" and not bwrap_available():
        raise GraderError(f"{bwrap_problem()} (the worker's sandbox setting is on)")
    specs = topics.resolve(names)
    on_test = topic_progress([s.name for s in specs], progress)

    with tempfile.TemporaryDirectory(prefix="jaxlings-job-") as tmp:
        archive = Path(tmp) / "submission.zip"
        archive.write_bytes(data)
        with open_submission(archive) as folder:
            result: Result = engine.grade(
                folder,
                specs,
                reference_dir=paths.solutions_dir(),
                public=False,
                seed=None,
                isolate=isolate,
                on_test=on_test,
                jobs=engine.default_jobs(),
                device=device.resolve(machine_of(settings)),
            )
        out = Path(tmp) / "results.json"
        result.write(out)
        return out.read_text()


def sweep(app: Celery, settings: Settings) -> list[int]:
    """Send again the jobs that were lost, and return their ids.

    Lost are: rows whose lease ran out (their worker died mid-grade), rows stored but never sent
    (the API died before sending, or the broker refused the send), rows queued again after a
    failure on the grading side once `sweep_seconds` passed since it (a pause, so that a broken
    worker does not take all of a job's tries at once), and, when no job at all is being graded
    although rows wait, rows sent long ago (a message the broker handed to a worker that died
    before claiming it): those only when no job was claimed for a whole lease, so a long queue
    is not sent twice over.
    """
    now = utcnow()
    old = now - dt.timedelta(seconds=settings.lease_seconds)
    paused = now - dt.timedelta(seconds=settings.sweep_seconds)
    with db.sessions(settings.db_url).begin() as session:
        expired = reap(session, now)
        idle = not session.scalar(
            select(func.count())
            .select_from(Submission)
            .where(or_(Submission.status == GRADING, Submission.started_at > old))
        )
        waiting = or_(Submission.sent_at.is_(None), Submission.sent_at < old) if idle else Submission.sent_at.is_(None)
        due = or_(
            and_(Submission.failures == 0, Submission.created_at < old),
            and_(Submission.failures > 0, or_(Submission.finished_at.is_(None), Submission.finished_at < paused)),
        )
        unsent = list(
            session.scalars(
                select(Submission.id).where(
                    Submission.status == QUEUED, Submission.id.not_in(expired) if expired else true(), due, waiting
                )
            )
        )
    lost = expired + unsent
    if lost:
        log.warning("sending again: %s", lost)
        send(app, settings, lost)
    return lost


class Sweeper(threading.Thread):
    """Runs `sweep` every sweep_seconds in the worker's main process; a failed sweep (the
    database or the broker not answering) costs one log line."""

    def __init__(self, app: Celery, settings: Settings):
        super().__init__(daemon=True, name="sweeper")
        self.app, self.settings = app, settings
        self.stopped = threading.Event()

    def run(self) -> None:
        while True:
            try:
                sweep(self.app, self.settings)
            except Exception as exc:  # noqa: BLE001 - a failed sweep is logged; the next one tries again
                log.warning(
                    "sweep failed (the next one tries again in %g s): %s", self.settings.sweep_seconds, one_line(exc)
                )
            if self.stopped.wait(self.settings.sweep_seconds):
                return


def position(session, row: Submission) -> int | None:
    """1 + the number of queued jobs sent before this one; None unless it is queued."""
    if row.status != QUEUED:
        return None
    ahead = session.scalar(
        select(func.count())
        .select_from(Submission)
        .where(Submission.status == QUEUED, Submission.created_at < row.created_at)
    )
    return ahead + 1


def requeue(session, ids: list[int]) -> list[int]:
    """Mark submissions to be graded again (regrade); those being graded now are left alone.

    Their results stay until the regrade stores new ones: a regrade in flight or failed keeps
    the earlier grade counted (`scores`: which score counts). The counts of lost and failed tries
    start afresh."""
    if not ids:
        return []
    targets = list(session.scalars(select(Submission.id).where(Submission.id.in_(ids), Submission.status != GRADING)))
    if targets:
        session.execute(
            update(Submission)
            .where(Submission.id.in_(targets))
            .values(status=QUEUED, sent_at=None, progress="queued for regrading", error="", lost=0, failures=0)
        )
    return targets


def retry_failed(session, row: Submission) -> bool:
    """Queue a failed submission again when its student sends it again; whether it was.

    Only a failure on the grading side is tried again (no sandbox, an engine crash, the
    database: `grade_submission`), its tries counted afresh; a job that took its worker down
    (`MAX_LOST`) stays failed until an instructor regrades it. The caller commits, then hands
    the id to the dispatcher."""
    if row.status != FAILED or row.lost >= MAX_LOST:
        return False
    taken = session.execute(
        update(Submission)
        .where(Submission.id == row.id, Submission.status == FAILED, Submission.lost < MAX_LOST)
        .values(status=QUEUED, sent_at=None, failures=0, error="", progress="queued again: sent again after a failure")
        .execution_options(synchronize_session=False)
    )
    if taken.rowcount != 1:
        return False
    session.refresh(row)
    return True


def broker_trouble(app: Celery, settings: Settings) -> str | None:
    """Why the broker cannot be reached now (one line), or None when it answers; bounded by
    `send_timeout`."""
    try:
        with app.connection_for_read(
            connect_timeout=settings.send_timeout, transport_options=_send_options(settings)
        ) as connection:
            connection.ensure_connection(max_retries=0)
            app.amqp.queues[settings.queue](connection.default_channel).declare()
        return None
    except Exception as exc:  # noqa: BLE001 - any failure to reach the broker is the answer: its one-line description
        return one_line(exc)


def without_password(url: str) -> str:
    """A URL to show: its password, if any, as ***."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if not parts.password:
        return url
    host = f"{parts.hostname}:{parts.port}" if parts.port else parts.hostname
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{host}"))


def log_to_stderr() -> None:
    """The service's own loggers (`jaxlings.*`: refusals, outages, sends) at INFO on stderr, beside
    uvicorn's lines, once per process (each API process of `--workers N` builds its app)."""
    logger = logging.getLogger("jaxlings")
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(levelname)s:     %(name)s: %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False


def run_worker(settings: Settings, name: str | None = None, loglevel: str = "INFO") -> None:
    """Run one grading worker (one job at a time) until stopped; sweeps for lost jobs meanwhile.

    A database that does not answer at start raises (`grade worker` says so in one line); a
    broker that does not answer is said in one warning line, and the worker waits for it
    (Celery's own retries, one line each, without end)."""
    from jaxlings.service import storage

    log_to_stderr()
    storage.secure_data_dir(settings)
    db.upgrade(settings.db_url)
    app = make_celery(settings)
    declare_queue(app, settings)
    trouble = broker_trouble(app, settings)
    if trouble:
        log.warning(
            "cannot reach the broker at %s (%s); the worker keeps trying and grades once it answers",
            without_password(settings.celery_broker),
            trouble,
        )
    signals.worker_process_init.connect(lambda **_: db.after_fork(), weak=False)
    sweeper = Sweeper(app, settings)
    signals.worker_ready.connect(lambda **_: sweeper.start(), weak=False)
    machine = machine_of(settings)
    log.info("grading on %s: jobs from queue %s", machine, queue_name(settings, machine))
    worker = app.Worker(
        pool="prefork",
        concurrency=1,
        queues=[queue_name(settings, machine)],
        loglevel=loglevel,
        hostname=name or f"jaxlings@{socket.gethostname()}-{os.getpid()}",
        without_gossip=True,
        without_mingle=True,
        optimization="fair",
    )
    worker.start()
    sweeper.stopped.set()

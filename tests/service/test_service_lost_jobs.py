"""A job that takes its worker down is failed the second time, with the reason, not sent again.

For real: `grade serve` and `grade worker` as processes (SQLite database and broker), the
grading process killed by SIGKILL while it grades, twice (as the kernel's OOM killer would
kill a grader that a submission made hold too much). The row counts each death (`lost`); after
the second the job is failed with the reason, nothing of it stays in the queue, and a later
submission is graded as usual.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import time

import pytest

from helpers.service import BROKEN, SOLUTIONS, api, course, graded, post_zip, state, wait_for, zip_of  # noqa: F401

pytestmark = pytest.mark.slow
AT = (SOLUTIONS / "at_updates.py").read_bytes()


def grading_pid(course, sub: int, not_pid: int | None = None) -> int | None:
    """The pid of the process grading `sub` now (the row's `worker` is host:pid), if any."""
    from jaxlings.service import db

    with db.sessions(course.settings().db_url)() as session:
        row = session.get(db.Submission, sub)
        if row.status != db.GRADING or not row.progress.startswith("grading topic"):
            return None
        pid = int(row.worker.rsplit(":", 1)[1])
    return pid if pid != not_pid else None


def lost_of(course, sub: int) -> int:
    from jaxlings.service import db

    with db.sessions(course.settings().db_url)() as session:
        return session.get(db.Submission, sub).lost


def queued_messages(course) -> int:
    """Messages waiting in the SQLite broker (kombu keeps delivered ones, invisible)."""
    path = course.settings().celery_broker.removeprefix("sqla+sqlite:///")
    with sqlite3.connect(path, timeout=30) as conn:
        return conn.execute("SELECT count(*) FROM kombu_message WHERE visible").fetchone()[0]


def test_a_job_that_kills_its_worker_twice_is_failed_with_the_reason_and_not_sent_again(course):
    course.serve()
    course.worker()
    client = api(course, course.token("erin"))
    sub = post_zip(client, zip_of({"at_updates.py": AT})).json()["id"]
    first = wait_for(lambda: grading_pid(course, sub), 180, "the first grading to start")
    os.kill(first, signal.SIGKILL)  # the grading process dies; the worker's main process lives
    second = wait_for(lambda: grading_pid(course, sub, not_pid=first), 180, "the job to be graded again")
    assert lost_of(course, sub) == 1 and state(client, sub)["attempts"] == 2
    os.kill(second, signal.SIGKILL)
    done = graded(client, sub, 120)
    assert done["status"] == "failed", course.log("worker.log")
    assert "took its worker down 2 times" in done["error"] and done["attempts"] == 2
    assert lost_of(course, sub) == 2
    wait_for(lambda: queued_messages(course) == 0, 60, "the broker's queue to empty")
    time.sleep(3 * float(course.env["JAXLINGS_SWEEP_SECONDS"]) + float(course.env["JAXLINGS_LEASE_SECONDS"]))
    after = state(client, sub)
    assert after["status"] == "failed" and after["attempts"] == 2 and queued_messages(course) == 0
    again = post_zip(client, zip_of({"at_updates.py": AT})).json()  # sent again: not graded a third time
    assert again["id"] == sub and again["duplicate"] and again["status"] == "failed"
    other = post_zip(client, zip_of({"prng.py": BROKEN})).json()["id"]  # the queue still works
    assert graded(client, other, 120)["status"] == "done"
    assert state(client, sub)["status"] == "failed" and state(client, sub)["attempts"] == 2

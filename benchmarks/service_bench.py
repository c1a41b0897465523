"""The grading service under load and under kills, on loopback (not a test: it prints figures).

    .venv/bin/python benchmarks/service_bench.py [--phases throughput,latency,kill-worker,kill-api]
        [--submissions 3] [--clients 50] [--trials 20] [--json FILE]

- throughput: N copies of the bundled submission (demo/submission, graded on the whole course:
  the topics it lacks score 0) through one worker; submissions per hour.
- latency: C concurrent clients each submit S times and read a result R times (no worker, so
  only the API and the database are measured); p50/p99 of each. Bounded in count and time.
- kill-worker: T times, kill -9 a worker's whole group a random moment into a grade, start
  another; then count submissions that were never graded (must be 0).
- kill-api: T times, kill -9 the API a random moment after an upload began (it stores, then
  waits `JAXLINGS_FAULT_REPLY_DELAY` (tests/helpers/fault_serve.py) before sending and replying), restart it, send again as
  `grade submit` would; count acknowledged or stored submissions never graded (must be 0).

Runs on the embedded default (SQLite, Celery's SQLAlchemy transport), or `--postgres-redis`.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from helpers.service import (  # noqa: E402
    BROKEN,
    SOLUTIONS,
    api,
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

BUNDLED = {p.name: p.read_bytes() for p in sorted((ROOT / "demo" / "submission").glob("*.py"))}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def throughput(course, n: int) -> dict:
    """Submissions per hour through one worker: n bundled submissions queued at once, whole course."""
    course.worker()
    client = api(course, course.token("throughput"))
    topics = client.get("/api/topics").json()["topics"]
    started = time.monotonic()
    subs = [
        post_zip(client, zip_of({**BUNDLED, "prng.py": BUNDLED["prng.py"] + f"# {i}\n".encode()}), topics).json()["id"]
        for i in range(n)
    ]
    done = [graded(client, s, 1800) for s in subs]
    elapsed = time.monotonic() - started
    return {
        "submissions": n,
        "seconds": round(elapsed, 1),
        "per_hour": round(3600 * n / elapsed, 1),
        "scores": [f"{d['score']:g}/{d['max_score']:g}" for d in done],
        "statuses": [d["status"] for d in done],
    }


def latency(course, clients: int, submits: int, reads: int, budget: float) -> dict:
    """p50/p99 of submit and of reading a result with `clients` concurrent students."""
    tokens = [course.token(f"load{i}") for i in range(clients)]
    deadline = time.monotonic() + budget
    submit_times: list[float] = []
    read_times: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    barrier = threading.Barrier(clients)

    def student(k: int) -> None:
        with api(course, tokens[k]) as client:
            barrier.wait(60)
            ids = []
            for i in range(submits):
                if time.monotonic() > deadline:
                    return
                t0 = time.perf_counter()
                r = post_zip(client, zip_of({"at_updates.py": BUNDLED["at_updates.py"] + f"# {k}.{i}\n".encode()}))
                with lock:
                    (submit_times.append(time.perf_counter() - t0) if r.status_code == 202 else errors.append(r.text))
                if r.status_code == 202:
                    ids.append(r.json()["id"])
            for i in range(reads):
                if time.monotonic() > deadline or not ids:
                    return
                t0 = time.perf_counter()
                r = client.get(f"/api/submissions/{ids[i % len(ids)]}")
                with lock:
                    (read_times.append(time.perf_counter() - t0) if r.status_code == 200 else errors.append(r.text))

    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(clients) as pool:
        list(pool.map(student, range(clients), timeout=budget + 120))
    ms = lambda xs, q: round(1000 * percentile(xs, q), 1) if xs else None  # noqa: E731
    return {
        "clients": clients,
        "submits": len(submit_times),
        "reads": len(read_times),
        "errors": len(errors),
        "seconds": round(time.monotonic() - started, 1),
        "submit_ms": {
            "p50": ms(submit_times, 0.5),
            "p99": ms(submit_times, 0.99),
            "mean": round(1000 * statistics.mean(submit_times), 1) if submit_times else None,
        },
        "read_ms": {
            "p50": ms(read_times, 0.5),
            "p99": ms(read_times, 0.99),
            "mean": round(1000 * statistics.mean(read_times), 1) if read_times else None,
        },
    }


def kill_worker(course, trials: int) -> dict:
    """kill -9 a worker mid-grade `trials` times; every submission must still be graded once a worker lives."""
    client = api(course, course.token("victim"))
    at = (SOLUTIONS / "at_updates.py").read_bytes()
    subs = [post_zip(client, zip_of({"at_updates.py": at + f"# {i}\n".encode()})).json()["id"] for i in range(trials)]
    killed_mid_grade = 0
    for _ in range(trials):
        before = {s: state(client, s)["attempts"] for s in subs}
        worker = course.worker()
        try:
            claimed = wait_for(
                lambda before=before: _claimed_since(client, before), 180, "the new worker to claim a job"
            )
            time.sleep(random.uniform(0.5, 8.0))
            killed_mid_grade += state(client, claimed)["status"] == "grading"
        finally:
            kill(worker)
    course.worker()
    finals = [graded(client, s, 1800) for s in subs]
    return {
        "trials": trials,
        "killed_mid_grade": killed_mid_grade,
        "submissions": len(subs),
        "graded": sum(f["status"] == "done" for f in finals),
        "lost": sum(f["status"] != "done" for f in finals),
        "attempts": sorted(f["attempts"] for f in finals),
    }


def _claimed_since(client, before: dict[int, int]) -> int | None:
    """A submission claimed again since `before` (its attempts) and being graded now, if any."""
    for sub, attempts in before.items():
        now = state(client, sub)
        if now["attempts"] > attempts and now["status"] == "grading":
            return sub
    return None


def kill_api(course, trials: int) -> dict:
    """kill -9 the API a random moment into an upload `trials` times; nothing stored or acknowledged is lost."""
    course.worker()
    token = course.token("uploader")
    acknowledged, stored_unanswered, retried_same = set(), 0, 0
    for trial in range(trials):
        server = course.serve(faults=True, JAXLINGS_FAULT_REPLY_DELAY="1.5")
        data = zip_of({"prng.py": BROKEN + f"# {trial}\n"})
        reply: list = []
        sender = threading.Thread(target=lambda reply=reply, data=data: reply.append(_try_post(course, token, data)))
        sender.start()
        time.sleep(random.uniform(0.0, 2.0))
        kill(server)
        sender.join(30)
        if isinstance(reply[0], httpx.Response) and reply[0].status_code == 202:
            acknowledged.add(reply[0].json()["id"])
        course.serve()  # restarted; the student sends again
        again = post_zip(api(course, token), data).json()
        stored_unanswered += not isinstance(reply[0], httpx.Response) and again["duplicate"]
        retried_same += again["duplicate"]
        acknowledged.add(again["id"])
        kill(course.procs[-1], 15)
    course.serve()
    client = api(course, token)
    finals = [graded(client, s, 600) for s in sorted(acknowledged)]
    return {
        "trials": trials,
        "stored_before_the_kill_without_reply": stored_unanswered,
        "resent_found_stored": retried_same,
        "submissions": len(acknowledged),
        "graded": sum(f["status"] == "done" for f in finals),
        "lost": sum(f["status"] != "done" for f in finals),
    }


def _try_post(course, token: str, data: bytes):
    try:
        return post_zip(api(course, token), data)
    except httpx.HTTPError as exc:
        return exc


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--phases", default="throughput,latency,kill-worker,kill-api")
    parser.add_argument("--submissions", type=int, default=3)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--submits", type=int, default=4)
    parser.add_argument("--reads", type=int, default=20)
    parser.add_argument("--budget", type=float, default=180.0, help="seconds the latency phase may take")
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--postgres-redis", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    figures: dict = {
        "machine": f"{platform.node()}: {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}",
        "backend": "postgresql+redis" if args.postgres_redis else "sqlite (embedded default)",
    }
    phases = {
        "throughput": lambda c: throughput(c, args.submissions),
        "latency": lambda c: latency(c, args.clients, args.submits, args.reads, args.budget),
        "kill-worker": lambda c: kill_worker(c, args.trials),
        "kill-api": lambda c: kill_api(c, args.trials),
    }
    for name in args.phases.split(","):
        with tempfile.TemporaryDirectory(prefix=f"bench-{name}-") as tmp:
            extra = postgres_redis_env() if args.postgres_redis else {}
            course = new_course(Path(tmp), JAXLINGS_RATE_LIMIT="100000", **extra)
            try:
                if name != "kill-api":
                    course.serve()
                t0 = time.monotonic()
                figures[name] = phases[name](course)
                figures[name]["phase_seconds"] = round(time.monotonic() - t0, 1)
            finally:
                course.stop()
                if extra:
                    drop_database(extra["JAXLINGS_DATABASE_URL"])
            print(name, json.dumps(figures[name]), flush=True)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

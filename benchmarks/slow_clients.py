"""Slow and idle clients beside normal ones, on loopback (not a test: it prints figures).

    .venv/bin/python benchmarks/slow_clients.py [--systems direct,proxy[,before]] [--slow 16] [--idle 8]
        [--endless 1] [--drip 1] [--normal 4] [--seconds 20] [--hold 45] [--baseline DIR] [--json FILE]

For each system, a fresh course on SQLite (the shipped limits: header 10 s, body 30 s,
keep-alive 5 s) is served; `--normal` students (threads) read in turn, as fast as they are
answered, the health check, their own submission and the instructor's CSV, first alone ("quiet"),
then beside the hostile clients ("attacked"), which connect from another loopback address
(127.0.0.2, as another machine would): `--slow` POSTs of a submission whose body comes 4 bytes
every 0.25 s, `--idle` connections that send nothing, `--endless` requests with a header that
never ends (sent as fast as the server reads) and `--drip` ones whose header lines come one every
0.25 s. Each gives up after `--hold` s. Printed for each system: the normal requests' count and
rate, errors (a status other than 200, or no answer within 10 s), p50 / p99 / max latency; and how
the hostile connections ended (closed by the server, after how long, with what status).

Systems: `direct` (`grade serve`: the app server's limits), `proxy` (`grade serve --proxy`:
nginx in front), `before` (the checkout at --baseline, the tree before these limits, served by
this venv's Python with PYTHONPATH and cwd at that checkout, so that it imports its own package;
the path it imported is printed).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import csv
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from helpers import raw_clients  # noqa: E402
from helpers.service import SOLUTIONS, free_port, kill, wait_for, zip_of  # noqa: E402

ANSWER_WITHIN = 10.0  # a normal request with no answer within this is an error
HOSTILE_FROM = "127.0.0.2"  # the hostile clients' address (the normal ones come from 127.0.0.1)


class Server:
    """One `grade serve` of a checkout (`root`) on a fresh SQLite course, with its tokens."""

    def __init__(self, root: Path, folder: Path, args: tuple[str, ...], students: int):
        self.root, self.folder, self.port = root, folder, free_port()
        self.env = {
            **os.environ,
            "PYTHONPATH": str(root),
            "JAXLINGS_DATA_DIR": str(folder / "data"),
            "JAXLINGS_PORT": str(self.port),
            "JAXLINGS_SANDBOX": "auto",
        }
        roster = folder / "roster.csv"
        roster.write_text("login\n" + "".join(f"student{i}\n" for i in range(students + 1)))
        self._grade("course", "add-students", str(roster), "--out", str(folder / "tokens.csv"))
        with open(folder / "tokens.csv") as f:
            self.tokens = [row["token"] for row in csv.DictReader(f)]
        self.instructor = self._grade("course", "add-instructor", "prof").split()[-1]
        self.imported = self._python("import jaxlings; print(jaxlings.__file__)").strip()
        self.log = open(folder / "serve.log", "ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "jaxlings", "serve", *args],
            cwd=root,
            env=self.env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        wait_for(self._answers, 90, f"grade serve {' '.join(args)} in {root}")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _python(self, code: str) -> str:
        return subprocess.run(
            [sys.executable, "-c", code], cwd=self.root, env=self.env, check=True, capture_output=True, text=True
        ).stdout

    def _grade(self, *args: str) -> str:
        return subprocess.run(
            [sys.executable, "-m", "jaxlings", *args],
            cwd=self.root,
            check=True,
            env={**self.env, "COLUMNS": "500"},
            capture_output=True,
            text=True,
        ).stdout

    def _answers(self) -> bool:
        if self.proc.poll() is not None:
            raise RuntimeError(f"grade serve exited: {(self.folder / 'serve.log').read_text()[-2000:]}")
        try:
            return httpx.get(f"{self.url}/api/health", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def stop(self) -> None:
        kill(self.proc, signal.SIGTERM)
        self.log.close()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def normal_client(server: Server, token: str, submission: int, until: float) -> list[tuple[int, float]]:
    """(status, seconds) of each read, in turn, until `until` (0: no answer in time)."""
    asks = [
        ("/api/health", {}),
        (f"/api/submissions/{submission}", {"Authorization": f"Bearer {token}"}),
        ("/api/gradebook.csv", {"Authorization": f"Bearer {server.instructor}"}),
    ]
    seen = []
    with httpx.Client(base_url=server.url, timeout=ANSWER_WITHIN) as client:
        while time.monotonic() < until:
            for path, headers in asks:
                t0 = time.monotonic()
                try:
                    status = client.get(path, headers=headers).status_code
                except httpx.HTTPError:
                    status = 0
                seen.append((status, time.monotonic() - t0))
    return seen


def normal_load(server: Server, submissions: list[int], seconds: float) -> dict:
    """The normal clients for `seconds`: count, errors, latency percentiles (ms)."""
    until = time.monotonic() + seconds
    with concurrent.futures.ThreadPoolExecutor(len(submissions)) as pool:
        runs = list(
            pool.map(
                lambda i: normal_client(server, server.tokens[i + 1], submissions[i], until), range(len(submissions))
            )
        )
    seen = [r for run in runs for r in run]
    ok = [s for status, s in seen if status == 200]
    return {
        "requests": len(seen),
        "per_s": round(len(seen) / seconds, 1),
        "errors": len(seen) - len(ok),
        "p50_ms": round(1000 * percentile(ok, 0.5), 1),
        "p99_ms": round(1000 * percentile(ok, 0.99), 1),
        "max_ms": round(1000 * max(ok, default=float("nan")), 1),
        "error_statuses": sorted({status for status, _ in seen if status != 200}),
    }


def hostile(server: Server, args, cap: float) -> list[concurrent.futures.Future]:
    """Start the hostile clients (each gives up after `cap` s); their futures, tagged by kind."""
    pool = concurrent.futures.ThreadPoolExecutor(args.slow + args.idle + args.endless + args.drip)
    auth = {"Authorization": f"Bearer {server.tokens[0]}"}
    where = dict(cap=cap, source=HOSTILE_FROM)
    jobs = [
        (
            "slow body",
            pool.submit(
                raw_clients.slow_body, server.port, "/api/submissions?topics=prng", auth, length=200_000, **where
            ),
        )
        for _ in range(args.slow)
    ]
    jobs += [("idle", pool.submit(raw_clients.idle, server.port, **where)) for _ in range(args.idle)]
    jobs += [
        ("endless header", pool.submit(raw_clients.endless_header, server.port, **where)) for _ in range(args.endless)
    ]
    jobs += [("drip header", pool.submit(raw_clients.drip_header, server.port, **where)) for _ in range(args.drip)]
    pool.shutdown(wait=False)
    return jobs


def ends(jobs) -> dict:
    """How the hostile connections ended, by kind: closed by the server (of how many), median seconds, statuses."""
    kinds: dict[str, list] = {}
    for kind, future in jobs:
        kinds.setdefault(kind, []).append(future.result())
    return {
        kind: {
            "closed": sum(o.closed for o in outs),
            "of": len(outs),
            "median_s": round(statistics.median(o.seconds for o in outs if o.closed), 1)
            if any(o.closed for o in outs)
            else None,
            "statuses": sorted({o.status for o in outs if o.status is not None}),
        }
        for kind, outs in kinds.items()
    }


def measure(system: str, args) -> dict:
    root = args.baseline if system == "before" else ROOT
    serve_args = ("--proxy",) if system == "proxy" else ()
    with tempfile.TemporaryDirectory(prefix=f"slow-{system}-") as tmp:
        server = Server(root, Path(tmp), serve_args, args.normal)
        try:
            submissions = []
            for i in range(args.normal):
                data = zip_of({"prng.py": (SOLUTIONS / "prng.py").read_bytes() + f"# {i}\n".encode()})
                reply = httpx.post(
                    f"{server.url}/api/submissions",
                    params={"topics": ["prng"]},
                    content=data,
                    headers={"Authorization": f"Bearer {server.tokens[i + 1]}", "Content-Type": "application/zip"},
                    timeout=30,
                )
                reply.raise_for_status()
                submissions.append(reply.json()["id"])
            quiet = normal_load(server, submissions, args.quiet)
            cap = max(args.hold, args.seconds + 5)
            jobs = hostile(server, args, cap)
            time.sleep(2.0)  # the hostile clients' headers are in
            attacked = normal_load(server, submissions, args.seconds)
            return {
                "system": system,
                "imported": server.imported,
                "quiet": quiet,
                "attacked": attacked,
                "hostile_ends": ends(jobs),
                "hostile_cap_s": cap,
            }
        finally:
            server.stop()


def table(results: list[dict], args) -> str:
    lines = [
        f"{args.slow} slow-body + {args.idle} idle + {args.endless} endless-header + {args.drip} drip-header "
        f"clients beside {args.normal} normal ones (measured {args.seconds:g} s; the hostile ones give up after "
        f"{max(args.hold, args.seconds + 5):g} s)",
        "",
        "| system | load | requests | per s | errors | p50 ms | p99 ms | max ms |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        for load in ("quiet", "attacked"):
            m = r[load]
            errors = f"{m['errors']}" + (f" ({', '.join(map(str, m['error_statuses']))})" if m["errors"] else "")
            lines.append(
                f"| {r['system']} | {load} | {m['requests']} | {m['per_s']} | {errors} | {m['p50_ms']} | "
                f"{m['p99_ms']} | {m['max_ms']} |"
            )
    lines += ["", "| system | hostile | closed by the server | median s | statuses |", "|---|---|---|---|---|"]
    for r in results:
        for kind, e in r["hostile_ends"].items():
            lines.append(
                f"| {r['system']} | {kind} | {e['closed']} of {e['of']} | {e['median_s']} | "
                f"{', '.join(map(str, e['statuses'])) or '-'} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--systems", default="direct,proxy", help="direct, proxy, before (needs --baseline)")
    parser.add_argument("--slow", type=int, default=16)
    parser.add_argument("--idle", type=int, default=8)
    parser.add_argument("--endless", type=int, default=1)
    parser.add_argument("--drip", type=int, default=1)
    parser.add_argument("--normal", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=20.0, help="the attacked phase (under the 30 s body deadline)")
    parser.add_argument("--quiet", type=float, default=10.0, help="the phase without hostile clients")
    parser.add_argument(
        "--hold", type=float, default=45.0, help="the hostile clients give up after this (past the 30 s body deadline)"
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        help="for the `before` system: a checkout of the tree before these limits "
        "(e.g. `git worktree add ../baseline e551914`)",
    )
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if "before" in args.systems.split(",") and not (args.baseline and (args.baseline / "jaxlings").is_dir()):
        parser.error("the `before` system needs --baseline: a checkout of the tree before these limits")
    results = []
    for system in args.systems.split(","):
        result = measure(system, args)
        print(f"{system}: imported {result['imported']}", flush=True)
        results.append(result)
    print(table(results, args))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()

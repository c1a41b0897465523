"""Helpers for the service tests: a real `grade serve` and `grade worker` as processes on loopback.

Everything talks to 127.0.0.1 only. Each helper bounds its waits; a process started here is
ended here (by its process group, so a worker's pool and grading processes go with it).
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
import zipfile
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = ROOT / "solutions"
GRADE = [sys.executable, "-m", "jaxlings"]
PG_ADMIN = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
REDIS = "redis://127.0.0.1:6379"
ARTIFACTS = ROOT / "tests" / "artifacts"
"""Screenshots and other files a test leaves for a person to look at (not in git; CI keeps them)."""


def artifact(name: str) -> Path:
    """Where a test writes the artifact `name` (the folder made on first use)."""
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS / name


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def reachable(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def zip_of(files: dict[str, bytes | str]) -> bytes:
    """A zip holding `files` (name -> content)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in files.items():
            archive.writestr(name, content)
    return buffer.getvalue()


BROKEN = "def split_keys(key, n:\n"  # a prng.py that fails to import: graded in seconds


def all_but_speed_pass(doc: dict) -> bool:
    """Every test of a results.json passed, speed aside (a loaded machine may cost it points)."""
    return all(t["status"] == "passed" for t in doc["tests"] if not t["name"].endswith(":speed"))


@dataclass
class Course:
    """One course's settings as environment variables, and handles on its processes."""

    env: dict[str, str]
    data_dir: Path
    port: int
    procs: list[subprocess.Popen] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def settings(self):
        from jaxlings.service import config

        return config.from_env(self.env)

    def token(self, login: str) -> str:
        """A fresh course token for `login` (added to the roster if new)."""
        from jaxlings.service import auth, db

        settings = self.settings()
        db.upgrade(settings.db_url)
        with db.sessions(settings.db_url).begin() as session:
            return auth.add_student(session, login)[1]

    def instructor(self) -> str:
        from jaxlings.service import roster

        return roster.add_instructor(self.settings(), "prof")

    def _start(self, args: list[str], log: str, command: list[str] = GRADE, **env: str) -> subprocess.Popen:
        out = open(self.data_dir / log, "ab")
        proc = subprocess.Popen(
            command + args,
            env={**os.environ, **self.env, **env},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=self.data_dir,
        )
        self.procs.append(proc)
        return proc

    def serve(
        self, timeout: float = 60, args: tuple[str, ...] = (), faults: bool = False, **env: str
    ) -> subprocess.Popen:
        """Start the API (on JAXLINGS_PORT if given, else the course's port) and wait (bounded) until it answers.

        `faults`: start it through tests/helpers/fault_serve.py, which injects the JAXLINGS_FAULT_* faults in `env`.

        A port taken between `free_port()` and the bind (another test run on this machine) is
        replaced by a fresh one, up to three times, when the course's own port was meant.
        """
        for _ in range(3):
            command = [sys.executable, str(ROOT / "tests" / "helpers" / "fault_serve.py")] if faults else GRADE
            proc = self._start(["serve", *args], "serve.log", command, **env)
            if self._answers(proc, int(env.get("JAXLINGS_PORT", self.port)), timeout):
                return proc
            if "JAXLINGS_PORT" in env or "address already in use" not in self.log("serve.log"):
                break
            self.port = free_port()
            self.env["JAXLINGS_PORT"] = str(self.port)
        raise RuntimeError(f"grade serve did not start: {self.log('serve.log')}")

    def _answers(self, proc: subprocess.Popen, port: int, timeout: float) -> bool:
        """Whether the API started as `proc` answers on `port` within `timeout` s (False if it exited)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=2).status_code == 200:
                    return True
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        return False

    def worker(self, **env: str) -> subprocess.Popen:
        return self._start(["worker"], "worker.log", **env)

    def log(self, name: str) -> str:
        path = self.data_dir / name
        return path.read_text(errors="replace")[-4000:] if path.exists() else ""

    def stop(self) -> None:
        for proc in self.procs:
            kill(proc, signal.SIGTERM)
        self.procs.clear()


def grade(args: list[str], course: Course, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess:
    """`grade ARGS` run for this course (its settings in the environment, a wide terminal), in its
    data folder or `cwd`, with `env` added."""
    return subprocess.run(
        GRADE + args,
        cwd=cwd or course.data_dir,
        env={**os.environ, "COLUMNS": "200", **course.env, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def kill(proc: subprocess.Popen, sig: int = signal.SIGKILL, wait: float = 30) -> None:
    """Send `sig` to a process's whole group (its pool and graders too) and reap it."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        try:
            proc.wait(wait)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(wait)
    try:  # what the group left behind (a grading process between two syscalls)
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def course_env(data_dir: Path, port: int, **extra: str) -> dict[str, str]:
    """Test settings: short leases and sweeps so lost jobs come back in seconds."""
    return {
        "JAXLINGS_DATA_DIR": str(data_dir),
        "JAXLINGS_PORT": str(port),
        "JAXLINGS_SANDBOX": "auto",
        "JAXLINGS_LEASE_SECONDS": "6",
        "JAXLINGS_HEARTBEAT_SECONDS": "1",
        "JAXLINGS_SWEEP_SECONDS": "2",
        "JAXLINGS_SOLUTIONS": str(SOLUTIONS),
        **extra,
    }


def postgres_redis_env() -> dict[str, str]:
    """A fresh PostgreSQL database and a private Redis queue; skips when either is not running."""
    if not reachable(5432) or not reachable(6379):
        pytest.skip("PostgreSQL (127.0.0.1:5432) or Redis (127.0.0.1:6379) is not running; .ci/run starts them")
    import sqlalchemy

    name = f"jaxlings_test_{uuid.uuid4().hex[:10]}"
    admin = sqlalchemy.create_engine(PG_ADMIN, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sqlalchemy.text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return {
        "JAXLINGS_DATABASE_URL": f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}",
        "JAXLINGS_BROKER_URL": f"{REDIS}/0",
        "JAXLINGS_RESULT_BACKEND": f"{REDIS}/1",
        "JAXLINGS_QUEUE": name,
    }


def drop_database(url: str) -> None:
    import sqlalchemy

    from jaxlings.service import db

    db.engine_for(url).dispose()
    name = url.rsplit("/", 1)[1]
    admin = sqlalchemy.create_engine(PG_ADMIN, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sqlalchemy.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


def wait_for(predicate, timeout: float, what: str, interval: float = 0.3):
    """Poll `predicate` until it returns something truthy; fail naming `what` after `timeout` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def api(course: Course, token: str) -> httpx.Client:
    return httpx.Client(base_url=course.url, headers={"Authorization": f"Bearer {token}"}, timeout=30)


def post_zip(client: httpx.Client, data: bytes, topics: list[str] | None = None) -> httpx.Response:
    return client.post(
        "/api/submissions", content=data, params={"topics": topics or []}, headers={"Content-Type": "application/zip"}
    )


def state(client: httpx.Client, submission_id: int) -> dict:
    return client.get(f"/api/submissions/{submission_id}").json()


def graded(client: httpx.Client, submission_id: int, timeout: float) -> dict:
    """Wait (bounded) until a submission is done or failed; its state."""
    return wait_for(
        lambda: (s := state(client, submission_id))["status"] in ("done", "failed") and s,
        timeout,
        f"submission {submission_id} to be graded",
    )


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request, tmp_path):
    """An upgraded, empty database on each configuration the service runs on: SQLite in a
    temporary folder, and a fresh PostgreSQL database (skipped where PostgreSQL is not running)."""
    from jaxlings.service import db

    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'service.db'}"
    else:
        url = postgres_redis_env()["JAXLINGS_DATABASE_URL"]
    db.upgrade(url)
    yield url
    if request.param == "postgres":
        drop_database(url)


@pytest.fixture
def course(tmp_path):
    """A course on SQLite in a temporary folder; its processes are stopped afterwards.

    The tails of its logs are printed at teardown: pytest shows them when the test failed.
    """
    c = new_course(tmp_path / "course")
    yield c
    c.stop()
    for name in ("serve.log", "worker.log"):
        print(f"--- {name} (tail) ---\n{c.log(name)}")


def new_course(data: Path, **extra: str) -> Course:
    data.mkdir(parents=True, exist_ok=True)
    port = free_port()
    return Course(course_env(data, port, **extra), data, port)


def form_csrf(html: str) -> str:
    """The value of a page's first hidden `csrf` field."""
    import re

    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found, "no csrf field on the page"
    return found.group(1)


def page_login(course: Course, token: str) -> httpx.Client:
    """A browser-like client logged in on the pages with `token` (login form, its CSRF, our Origin)."""
    pages = httpx.Client(base_url=course.url, headers={"Origin": course.url}, timeout=30)
    csrf = form_csrf(pages.get("/login").text)
    reply = pages.post("/login", data={"token": token, "csrf": csrf})
    assert reply.status_code == 303, reply.text
    return pages


CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@contextlib.contextmanager
def headless_chromium():
    """Debian's chromium driven by playwright, headless; skips the test when either is missing."""
    playwright = pytest.importorskip("playwright.sync_api")
    if not shutil.which(CHROMIUM):
        pytest.skip("Debian's chromium is not installed (apt-get install chromium; .ci/run does)")
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        try:
            yield browser
        finally:
            browser.close()


def hub_on_loopback(tmp: Path, port: int) -> str:
    """JupyterHub config lines for a throwaway hub: loopback on `port`, its state in `tmp`."""
    return (
        f'c.JupyterHub.ip = "127.0.0.1"\nc.JupyterHub.port = {port}\nc.JupyterHub.hub_port = {free_port()}\n'
        f'c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{free_port()}"\n'
        f'c.JupyterHub.db_url = "sqlite:///{tmp}/hub.sqlite"\nc.JupyterHub.cookie_secret_file = "{tmp}/cookie_secret"\n'
    )


# -- a browser, by hand (test_service_attacks, test_service_fuzz) --------------------------------

SESSION, LOGIN_CSRF = "jaxlings_session", "jaxlings_login_csrf"


class _Csrf(HTMLParser):
    """The value of the first `<input name="csrf">` of a page."""

    value: str | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "input" and attrs.get("name") == "csrf" and self.value is None:
            self.value = attrs.get("value")


def csrf_field(page: str) -> str:
    parser = _Csrf()
    parser.feed(page)
    assert parser.value, f"no csrf field on the page:\n{page[:2000]}"
    return parser.value


@dataclass
class PageSession:
    """A logged-in browser, reduced to what an attacker would target: its cookie and its CSRF token."""

    sid: str
    csrf: str

    def headers(self, origin: str | None) -> dict[str, str]:
        return {"Cookie": f"{SESSION}={self.sid}", **({"Origin": origin} if origin else {})}


def plain(course) -> httpx.Client:
    """A client with no credentials that does not follow redirects."""
    return httpx.Client(base_url=course.url, follow_redirects=False, timeout=30)


def set_cookie(response: httpx.Response, name: str) -> str | None:
    """The raw Set-Cookie header for `name` in a response (None when not set)."""
    return next((h for h in response.headers.get_list("set-cookie") if h.startswith(f"{name}=")), None)


def log_in(course, token: str) -> PageSession:
    """The honest flow: GET /login, POST it back with its csrf from our own origin, read a page's csrf."""
    with plain(course) as client:
        form = client.get("/login")
        assert form.status_code == 200 and LOGIN_CSRF in form.cookies, form.headers
        done = client.post(
            "/login", data={"token": token, "csrf": csrf_field(form.text)}, headers={"Origin": course.url}
        )
        assert done.status_code == 303, done.text
        sid = done.cookies.get(SESSION)
        assert sid, done.headers
        home = client.get(done.headers["location"])
        assert home.status_code == 200, home.text
        return PageSession(sid, csrf_field(home.text))


def serve_log(course) -> str:
    path = course.data_dir / "serve.log"
    return path.read_text(errors="replace") if path.exists() else ""


# -- pages seeded straight into the database (test_service_pages*) -------------------------------

PAGES_PRNG_OK = "def derive_keys(key, n):\n    return key\n\n\ndef dropout(key, x, rate):\n    return x\n"
PAGES_PRNG_BAD = (
    "def derive_keys(key, n):\n    return None  # wrong\n\n\ndef dropout(key, x, rate):\n    return x * 0\n"
)


def seeded_result(
    topic: str,
    failing: dict[str, str] | None = None,
    pending: set[str] | None = None,
    data: dict[str, dict] | None = None,
) -> str:
    """A results.json text shaped as `grade grade` writes it for `topic`: one test per
    (exercise, check) of the topic's public spec; the checks in `failing` (`exercise:check` ->
    message) fail, those in `pending` are judged on submission, the rest pass; `data`
    (`exercise:check` -> entries) adds to a test's extra_data."""
    import json as _json

    from jaxlings import public
    from jaxlings.grading.results import Result, TestResult

    failing, pending = failing or {}, pending or set()
    doc = _json.loads(public.path_for(topic).read_text())
    tests, totals = [], [0.0, 0.0]
    for ex in doc["spec"]["exercises"]["$tuple"]:
        for check in ex["checks"]["$tuple"]:
            name, points = check["$type"].lower(), float(check.get("points", 0))
            key = f"{ex['name']}:{name}"
            bad, wait = key in failing, key in pending
            extra = {"pending": True} if wait else {}
            extra.update((data or {}).get(key, {}))
            score = 0.0 if bad or wait else points
            message = failing.get(key) or ("judged on submission: speed" if wait else "passed")
            tests.append(
                TestResult(
                    f"{topic}.{key}",
                    score,
                    points,
                    "failed" if bad or wait else "passed",
                    message,
                    "visible",
                    [topic, ex["name"], name],
                    extra,
                )
            )
            totals[0] += score
            totals[1] += points
    topics = {topic: {"score": round(totals[0], 4), "max_score": round(totals[1], 4), "seconds": 1.0}}
    return _json.dumps(Result(tests, 1.0, {"topics": topics}).to_json())


def seed_submission(course: Course, login: str, files: dict[str, str], result: str | None, status: str = "done") -> int:
    """A submission of `login` (added if new) stored as the API would (its canonical zip in
    `uploads`), with `result` as its results.json text; its id."""
    import hashlib
    import json as _json

    from jaxlings.service import db, storage

    settings = course.settings()
    db.upgrade(settings.db_url)
    data = storage.canonical_zip({t: s.encode() for t, s in files.items()})
    digest = hashlib.sha256(data).hexdigest()
    with db.sessions(settings.db_url).begin() as session:
        student = db.student_by_login(session, login)
        if student is None:
            from jaxlings.service import auth

            auth.add_student(session, login)
            student = db.student_by_login(session, login)
        if session.get(db.Upload, digest) is None:
            session.add(db.Upload(digest=digest, data=data, size=len(data)))
            session.flush()  # the upload's row before the submission that refers to it
        doc = _json.loads(result) if result else None
        sub = db.Submission(
            student_id=student.id,
            digest=digest,
            topics=",".join(sorted(files)),
            status=status,
            score=doc["score"] if doc else None,
            max_score=doc["max_score"] if doc else None,
            result_json=result,
        )
        session.add(sub)
        session.flush()
        return sub.id

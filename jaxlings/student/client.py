"""The student's side of the service: `grade login`, `grade submit`, `grade submissions`, `grade result`,
`grade pseudonym`.

Ships in the student package, so it uses only the standard library, httpx, and the result
classes. Where the server is and who the student is come from, in order: the environment
(JAXLINGS_SERVER, JAXLINGS_TOKEN), the file `grade login` writes (JAXLINGS_CONFIG, else
$XDG_CONFIG_HOME/jaxlings/client.json, else ~/.config/jaxlings/client.json), and on a
JupyterHub user server the hub's own JUPYTERHUB_API_TOKEN (the service accepts it).
"""

from __future__ import annotations

import io
import json
import os
import time
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from jaxlings.grading.results import Result, TestResult

DONE, FAILED = "done", "failed"


class ClientError(Exception):
    """Something the student can act on: one line, no traceback."""


@dataclass(frozen=True)
class Connection:
    url: str
    token: str


def config_path() -> Path:
    """Where `grade login` keeps the server and token."""
    if os.environ.get("JAXLINGS_CONFIG"):
        return Path(os.environ["JAXLINGS_CONFIG"])
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "jaxlings" / "client.json"


def connection() -> Connection:
    """The server and token to use, or a ClientError saying how to set them."""
    saved: dict[str, str] = {}
    try:
        saved = json.loads(config_path().read_text())
    except (OSError, ValueError):
        pass
    url = os.environ.get("JAXLINGS_SERVER") or saved.get("url", "")
    token = os.environ.get("JAXLINGS_TOKEN") or saved.get("token", "") or os.environ.get("JUPYTERHUB_API_TOKEN", "")
    if not url:
        raise ClientError("no server configured: run `grade login --server URL` (or set JAXLINGS_SERVER)")
    if not token:
        raise ClientError(
            "no token: run `grade login` with the course token your instructor gave you (or set JAXLINGS_TOKEN)"
        )
    return Connection(url.strip().rstrip("/"), token.strip())


def save_login(url: str, token: str) -> tuple[Path, dict[str, Any]]:
    """Check the token against the server, then store both (readable by the user only)."""
    url, token = url.strip().rstrip("/"), token.strip()
    who = Client(Connection(url, token)).me()
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump({"url": url, "token": token}, f)
    return path, who


def zip_exercises(folder: Path, topics: Iterable[str], known: Iterable[str]) -> tuple[bytes, list[str]]:
    """A zip of `folder`'s <topic>.py files (those of `topics`, else every known topic present)."""
    folder, known = Path(folder), list(known)
    if not folder.is_dir():
        raise ClientError(f"no exercises folder at {folder.resolve()} (use --dir)")
    wanted = list(topics) or [t for t in known if (folder / f"{t}.py").is_file()]
    unknown = [t for t in wanted if t not in known]
    if unknown:
        raise ClientError(f"unknown topic(s) {', '.join(unknown)}; the topics are: {', '.join(known)}")
    missing = [t for t in wanted if not (folder / f"{t}.py").is_file()]
    if missing:
        raise ClientError(f"no {', '.join(f'{t}.py' for t in missing)} in {folder}")
    if not wanted:
        raise ClientError(f"no topic files in {folder}; expected some of: {', '.join(f'{t}.py' for t in known)}")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for topic in wanted:
            archive.write(folder / f"{topic}.py", f"{topic}.py")
    return buffer.getvalue(), wanted


class Client:
    """The service's JSON API over HTTP, with its errors turned into ClientErrors."""

    def __init__(self, conn: Connection, timeout: float = 60.0):
        self.conn = conn
        self.http = httpx.Client(base_url=conn.url, timeout=timeout, headers={"Authorization": f"Bearer {conn.token}"})

    def _call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            response = self.http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise ClientError(f"cannot reach the grading server at {self.conn.url}: {exc}") from None
        if response.status_code >= 400:
            raise ClientError(_explain(response))
        return response

    def me(self) -> dict[str, Any]:
        return self._call("GET", "/api/me").json()

    def topics(self) -> list[str]:
        return self._call("GET", "/api/topics").json()["topics"]

    def deadlines(self) -> dict[str, str]:
        """topic -> where it stands for you ("due in 2 days (...)", "late: ...", "closed since
        ..."), for the topics with dates; {} from a server without course rules."""
        try:
            response = self.http.get("/api/deadlines")
        except httpx.HTTPError as exc:
            raise ClientError(f"cannot reach the grading server at {self.conn.url}: {exc}") from None
        if response.status_code == 404:  # a server from before course rules
            return {}
        if response.status_code >= 400:
            raise ClientError(_explain(response))
        return dict(response.json().get("topics", {}))

    def submit(self, data: bytes, topics: list[str]) -> dict[str, Any]:
        return self._call(
            "POST",
            "/api/submissions",
            params={"topics": topics},
            content=data,
            headers={"Content-Type": "application/zip"},
        ).json()

    def set_pseudonym(self, name: str) -> dict[str, Any]:
        """Choose your pseudonym on the speed leaderboard (the server checks it and may refuse it)."""
        return self._call("PUT", "/api/me/pseudonym", json={"pseudonym": name}).json()

    def leave_leaderboard(self) -> dict[str, Any]:
        """Clear your pseudonym: you leave the speed leaderboard."""
        return self._call("DELETE", "/api/me/pseudonym").json()

    def submission(self, submission_id: int) -> dict[str, Any]:
        return self._call("GET", f"/api/submissions/{submission_id}").json()

    def submissions(self) -> list[dict[str, Any]]:
        return self._call("GET", "/api/submissions").json()

    def results(self, submission_id: int) -> dict[str, Any]:
        return self._call("GET", f"/api/submissions/{submission_id}/results.json").json()

    def wait(self, submission_id: int, on_update: Callable[[dict[str, Any]], None], timeout: float) -> dict[str, Any]:
        """Poll until graded (or failed), reporting each change; ClientError past `timeout` seconds."""
        deadline, delay, last = time.monotonic() + timeout, 0.5, None
        while True:
            state = self.submission(submission_id)
            seen = (state["status"], state.get("position"), state.get("progress"))
            if seen != last:
                on_update(state)
                last, delay = seen, 0.5
            if state["status"] in (DONE, FAILED):
                return state
            if time.monotonic() > deadline:
                raise ClientError(
                    f"submission {submission_id} is still {state['status']} after {timeout:g} s; "
                    f"see it later with `grade result {submission_id}`"
                )
            time.sleep(delay)
            delay = min(delay * 1.5, 5.0)


def _explain(response: httpx.Response) -> str:
    """One line for an error reply: the server's own detail, and what to do."""
    try:
        detail = response.json().get("detail", response.text)
    except ValueError:
        detail = response.text.strip()[:200]
    if response.status_code == 401:
        return f"the server refused your token ({detail}); run `grade login` again"
    if response.status_code == 429:
        return f"{detail} (retry after {response.headers.get('Retry-After', '?')} s)"
    return f"the server said {response.status_code}: {detail}"


def result_of(doc: dict[str, Any]) -> Result:
    """A Result (for `report.result_tables`) from a stored results.json."""
    fields = TestResult.__dataclass_fields__
    tests = [TestResult(**{k: t.get(k) for k in fields}) for t in doc.get("tests", [])]
    return Result(tests, float(doc.get("execution_time", 0.0)), dict(doc.get("extra_data", {})))


def describe(state: dict[str, Any]) -> str:
    """A short progress line for a submission's state."""
    if state["status"] == "queued":
        where = f", position {state['position']}" if state.get("position") else ""
        return f"queued{where}" + (f" ({state['progress']})" if state.get("progress") else "")
    if state["status"] == "grading":
        return state.get("progress") or "grading"
    if state["status"] == DONE:
        return f"graded: {state['score']:g} / {state['max_score']:g}"
    return f"failed: {state.get('error') or 'the grader could not run'}"

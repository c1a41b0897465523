"""The service as a JupyterHub service on a real hub: the hub starts `grade serve`, and the hub's
own user tokens are accepted (students and a hub instructor), reached through the hub's proxy.

Loopback only; JupyterHub's dummy authenticator; needs configurable-http-proxy (npm), which
`make setup` installs into .venv when npm is present.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

import httpx
import pytest

from helpers.service import SOLUTIONS, free_port, hub_on_loopback, kill, zip_of

BIN = Path(sys.executable).parent
PROXY_PATH = os.pathsep.join([str(BIN), str(BIN.parent / "node_modules" / ".bin"), os.environ["PATH"]])
PROBE = "jaxlings-service-probe-token-0123456789"

CONFIG = """
c = get_config()
c.JupyterHub.authenticator_class = "dummy"
c.JupyterHub.spawner_class = "simple"
c.Authenticator.allowed_users = {{"student1", "student2", "student3", "teacher"}}
c.JupyterHub.load_groups = {{"instructors": {{"users": ["teacher"]}}}}
{loopback}c.JupyterHub.services = [
    {{"name": "grading", "url": "http://127.0.0.1:{service_port}", "command": {command!r},
      "environment": {environment!r}}},
    {{"name": "probe", "api_token": {probe!r}}},
]
c.JupyterHub.load_roles = [
    {{"name": "grading", "services": ["grading"], "scopes": ["read:users:groups"]}},
    {{"name": "probe", "services": ["probe"], "scopes": ["tokens", "read:users"]}},
]
"""


class Hub(str):
    """The hub's public URL, and (`data`) the grading service's data folder."""

    data: Path


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    """The hub's public URL, with the grading service started by the hub."""
    if not shutil.which("configurable-http-proxy", path=PROXY_PATH):
        pytest.skip("configurable-http-proxy is not installed (npm install configurable-http-proxy)")
    import subprocess

    tmp = tmp_path_factory.mktemp("hub")
    port, service_port = free_port(), free_port()
    environment = {
        "PATH": PROXY_PATH,
        "HOME": str(tmp),
        "JAXLINGS_DATA_DIR": str(tmp / "grading"),
        "JAXLINGS_PORT": str(service_port),
        "JAXLINGS_SANDBOX": "auto",
        "JAXLINGS_SOLUTIONS": str(SOLUTIONS),
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
    }
    (tmp / "config.py").write_text(
        CONFIG.format(
            loopback=hub_on_loopback(tmp, port),
            service_port=service_port,
            command=[sys.executable, "-m", "jaxlings", "serve"],
            environment=environment,
            probe=PROBE,
        )
    )
    log = open(tmp / "hub.log", "w")
    proc = subprocess.Popen(
        [str(BIN / "jupyterhub"), "-f", str(tmp / "config.py")],
        cwd=tmp,
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PATH": PROXY_PATH},
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{base}/services/grading/api/health", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, (tmp / "hub.log").read_text()[-4000:]
            time.sleep(1)
        found = Hub(base)
        found.data = tmp / "grading"
        yield found
    finally:
        kill(proc, 15)
        log.close()


def hub_token(base: str, user: str) -> str:
    """A token the hub issues to `user` (what a user's server has as JUPYTERHUB_API_TOKEN)."""
    reply = httpx.post(
        f"{base}/hub/api/users/{user}/tokens",
        json={"note": "test"},
        headers={"Authorization": f"token {PROBE}"},
        timeout=30,
    )
    assert reply.status_code in (200, 201), reply.text
    return reply.json()["token"]


def test_hub_tokens_are_students_and_instructors_and_others_are_refused(hub):
    service = f"{hub}/services/grading/api"
    s1, s2, teacher = (hub_token(hub, u) for u in ("student1", "student2", "teacher"))
    as_ = lambda token: {"Authorization": f"token {token}"}  # noqa: E731
    assert httpx.get(f"{service}/me", headers=as_(s1)).json() == {"login": "student1", "role": "student"}
    assert httpx.get(f"{service}/me", headers=as_(teacher)).json()["role"] == "instructor"
    assert httpx.get(f"{service}/me", headers=as_("not-a-hub-token")).status_code == 401
    assert httpx.get(f"{service}/me").status_code == 401
    sent = httpx.post(
        f"{service}/submissions",
        content=zip_of({"prng.py": (SOLUTIONS / "prng.py").read_bytes()}),
        headers={**as_(s1), "Content-Type": "application/zip"},
        timeout=60,
    )
    assert sent.status_code == 202, sent.text
    sub = sent.json()["id"]
    assert httpx.get(f"{service}/submissions/{sub}", headers=as_(s1)).status_code == 200
    assert httpx.get(f"{service}/submissions/{sub}", headers=as_(s2)).status_code == 404
    assert httpx.get(f"{service}/submissions/{sub}", headers=as_(teacher)).status_code == 200
    assert sent.json()["page_url"] == f"/services/grading/submissions/{sub}"


def test_grade_submit_on_a_hub_needs_only_the_hub_token(hub, tmp_path):
    import subprocess

    (tmp_path / "exercises").mkdir()
    (tmp_path / "exercises" / "at_updates.py").write_bytes((SOLUTIONS / "at_updates.py").read_bytes())
    env = {
        **os.environ,
        "JUPYTERHUB_API_TOKEN": hub_token(hub, "student2"),
        "JAXLINGS_SERVER": f"{hub}/services/grading",
        "JAXLINGS_CONFIG": str(tmp_path / "none.json"),
    }
    env.pop("JAXLINGS_TOKEN", None)
    done = subprocess.run(
        [sys.executable, "-m", "jaxlings", "submit"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and "submission" in done.stdout and "at_updates" in done.stdout, (
        done.stdout + done.stderr
    )
    env["JUPYTERHUB_API_TOKEN"] = "revoked-or-wrong"
    refused = subprocess.run(
        [sys.executable, "-m", "jaxlings", "submit"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert refused.returncode == 2 and "refused your token" in refused.stdout


def test_a_student_dropped_from_the_roster_is_refused_with_a_valid_hub_token(hub):
    """The hub still vouches for student3, but `grade course drop` took them off the course."""
    import subprocess

    service = f"{hub}/services/grading/api"
    token, other = hub_token(hub, "student3"), hub_token(hub, "student1")
    assert httpx.get(f"{service}/me", headers={"Authorization": f"token {token}"}).status_code == 200
    dropped = subprocess.run(
        [sys.executable, "-m", "jaxlings", "course", "drop", "student3"],
        env={**os.environ, "JAXLINGS_DATA_DIR": str(hub.data)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert dropped.returncode == 0 and "dropped student3" in dropped.stdout, dropped.stdout + dropped.stderr
    assert httpx.get(f"{service}/me", headers={"Authorization": f"token {token}"}).status_code == 401
    assert httpx.get(f"{service}/me", headers={"Authorization": f"token {other}"}).status_code == 200

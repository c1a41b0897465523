"""`make demo`: the grading service end to end on the embedded default (SQLite, one worker).

Starts `grade serve --with-worker` on a temporary folder, gives a demo student a course token,
runs `grade submit --wait` on demo/submission as that student would, prints the table and the
gradebook's URL, then stops the service (its whole process group, whatever happens).
"""

from __future__ import annotations

import csv
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GRADE = [sys.executable, "-m", "jaxlings"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_up(url: str, server: subprocess.Popen, timeout: float = 90) -> None:
    """Poll the health endpoint (bounded); raise with the reason if the server died or never answered."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError("grade serve exited early; see its log above")
        try:
            with urllib.request.urlopen(f"{url}/api/health", timeout=2) as reply:
                if reply.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"grade serve did not answer within {timeout:g} s")


def stop(server: subprocess.Popen) -> None:
    """SIGTERM to the service's group (API and worker), SIGKILL if it lingers."""
    if server.poll() is not None:
        return
    os.killpg(server.pid, signal.SIGTERM)
    try:
        server.wait(30)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="jaxlings-demo-") as tmp:
        data = Path(tmp)
        port = free_port()
        env = {
            **os.environ,
            "JAXLINGS_DATA_DIR": str(data),
            "JAXLINGS_PORT": str(port),
            "JAXLINGS_SANDBOX": os.environ.get("JAXLINGS_SANDBOX", "auto"),
            "JAXLINGS_CONFIG": str(data / "client.json"),
        }
        url = f"http://127.0.0.1:{port}"
        roster = data / "roster.csv"
        roster.write_text("login,name\ndemo,Demo Student\n")
        subprocess.run(
            GRADE + ["course", "add-students", str(roster), "--out", str(data / "tokens.csv")],
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        token = next(csv.DictReader(open(data / "tokens.csv")))["token"]
        instructor = subprocess.run(
            GRADE + ["course", "add-instructor", "demo-instructor"], env=env, check=True, capture_output=True, text=True
        ).stdout.strip()
        log = open(data / "service.log", "wb")
        server = subprocess.Popen(
            GRADE + ["serve", "--with-worker"], env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            wait_until_up(url, server)
            print(f"service up at {url} (SQLite in {data}, one worker)")
            subprocess.run(GRADE + ["login", "--server", url, "--token", token], env=env, check=True)
            submitted = subprocess.run(
                GRADE + ["submit", "--dir", str(ROOT / "demo" / "submission"), "--wait", "--timeout", "600"], env=env
            )
            print(f"\ngradebook: {url}/gradebook (instructor token: {instructor})")
            print(f"the student's page: {url}/me (token: {token})")
            return submitted.returncode
        except Exception as exc:  # noqa: BLE001 - any failure: show the service's log, then stop it
            print(f"demo failed: {exc}\n--- service log ---\n{(data / 'service.log').read_text()[-4000:]}")
            return 1
        finally:
            stop(server)
            print("service stopped")


if __name__ == "__main__":
    sys.exit(main())

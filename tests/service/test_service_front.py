"""Slow, idle and oversized clients against a real `grade serve`, with the app server's own limits
(limits.py) and behind nginx (`grade serve --proxy`, front.py): they are closed by the deadlines,
and while they hold their connections other students and the instructor are served promptly.

Timeouts are set short (seconds) so that the deadlines show within a test; the bounds asserted
are several times the expected values (the machine is shared and noisy).
"""

from __future__ import annotations

import concurrent.futures
import os
import re
import signal
import time

import httpx
import pytest
from typer.testing import CliRunner

from helpers import raw_clients
from helpers.service import SOLUTIONS, kill, new_course, post_zip, reachable, wait_for, zip_of

PRNG = (SOLUTIONS / "prng.py").read_bytes()
HEADER_TIMEOUT, BODY_TIMEOUT, KEEP_ALIVE = 2, 6, 2
SHORT = {
    "JAXLINGS_HEADER_TIMEOUT": str(HEADER_TIMEOUT),
    "JAXLINGS_BODY_TIMEOUT": str(BODY_TIMEOUT),
    "JAXLINGS_KEEP_ALIVE": str(KEEP_ALIVE),
    "JAXLINGS_MAX_CONNECTIONS": "100",
}
SLOW, IDLE = 16, 8  # more slow bodies than the database pool's 15 connections
PROMPT = 5.0  # seconds: a normal request's bound (they take tens of milliseconds)
needs_nginx = pytest.mark.skipif(
    not any(os.path.exists(p) for p in ("/usr/sbin/nginx", "/usr/bin/nginx")),
    reason="nginx is not installed (.ci/run installs nginx-light)",
)
MODES = [pytest.param((), id="direct"), pytest.param(("--proxy",), id="proxy", marks=needs_nginx)]


def started(tmp_path, args: tuple[str, ...], **extra: str):
    """A course with short deadlines, served (with `args`)."""
    c = new_course(tmp_path / "course", **{**SHORT, **extra})
    c.serve(args=args)
    return c


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def normal_reads(c, reader: str, instructor: str, submission_id: int, seconds: float) -> list[tuple[str, int, float]]:
    """A student's and the instructor's reads, in turn, for `seconds`: (what, status, latency) of each."""
    asks = [
        ("health", "/api/health", {}),
        ("own list", "/api/submissions", bearer(reader)),
        ("own submission", f"/api/submissions/{submission_id}", bearer(reader)),
        ("gradebook csv", "/api/gradebook.csv", bearer(instructor)),
    ]
    seen = []
    end = time.monotonic() + seconds
    with httpx.Client(base_url=c.url, timeout=30) as client:
        while time.monotonic() < end:
            for what, path, headers in asks:
                t0 = time.monotonic()
                try:
                    status = client.get(path, headers=headers).status_code
                except httpx.HTTPError:
                    status = 0
                seen.append((what, status, time.monotonic() - t0))
            time.sleep(0.1)
    return seen


@pytest.mark.slow
@pytest.mark.parametrize("args", MODES)
def test_slow_idle_and_endless_clients_do_not_starve_others(tmp_path, args):
    c = started(tmp_path, args)
    try:
        attacker, reader, instructor = c.token("mallory"), c.token("alice"), c.instructor()
        with httpx.Client(base_url=c.url, headers=bearer(reader), timeout=30) as client:
            submitted = post_zip(client, zip_of({"prng.py": PRNG}))
        assert submitted.status_code == 202, submitted.text
        held = BODY_TIMEOUT + 2 if args else BODY_TIMEOUT * 5  # behind nginx they trickle on: stop them
        with concurrent.futures.ThreadPoolExecutor(SLOW + IDLE + 4) as pool:
            slow = [
                pool.submit(
                    raw_clients.slow_body,
                    c.port,
                    "/api/submissions?topics=prng",
                    bearer(attacker),
                    length=100_000,
                    cap=held,
                )
                for _ in range(SLOW)
            ]
            stalled = pool.submit(
                raw_clients.slow_body,
                c.port,
                "/api/submissions",
                bearer(attacker),
                length=100_000,
                stall_after=64,
                cap=BODY_TIMEOUT * 5,
            )
            idle = [pool.submit(raw_clients.idle, c.port, cap=HEADER_TIMEOUT * 10) for _ in range(IDLE)]
            drip = pool.submit(raw_clients.drip_header, c.port, cap=HEADER_TIMEOUT * 10)
            endless = pool.submit(raw_clients.endless_header, c.port, cap=HEADER_TIMEOUT * 10)
            time.sleep(1.0)  # their headers are in; the bodies trickle
            reads = normal_reads(c, reader, instructor, submitted.json()["id"], BODY_TIMEOUT - 2)
            slow, stalled = [f.result() for f in slow], stalled.result()
            idle, drip, endless = [f.result() for f in idle], drip.result(), endless.result()
    finally:
        log = c.log("serve.log")
        c.stop()
    assert reads and all(status == 200 for _, status, _ in reads), reads
    assert max(latency for _, _, latency in reads) < PROMPT, sorted(reads, key=lambda r: -r[2])[:5]
    # idle connections and endless headers are closed by the header deadline (or refused: 431)
    assert all(o.closed and o.seconds < HEADER_TIMEOUT * 5 for o in idle), idle
    assert drip.closed and drip.status in (None, 408, 431) and drip.seconds < HEADER_TIMEOUT * 5, drip
    assert endless.closed and endless.status in (None, 400, 431) and endless.seconds < HEADER_TIMEOUT * 5, endless
    assert stalled.closed and stalled.status in (None, 408) and stalled.seconds < BODY_TIMEOUT * 4, stalled
    if args:  # nginx holds the slow bodies (reading them into its buffer); the app never sees one
        assert not re.search(r'"POST /api/submissions\S* HTTP/1.1" (202|408)', log), log
    else:  # the app server's body deadline: 408 (or a reset while the client still sends)
        assert all(o.closed and o.status in (None, 408) and o.seconds < BODY_TIMEOUT * 4 for o in slow), slow
        assert any(o.status == 408 for o in slow + [stalled]), slow


@pytest.mark.parametrize("args", MODES)
def test_an_honest_upload_over_a_slow_link_and_large_headers_pass(tmp_path, args):
    """The honest twin: a zip sent in pieces over ~1 s (a sixth of the body deadline) is accepted,
    and a request with ~6 KB of headers (under the 16 KiB limit) is served."""
    c = started(tmp_path, args)
    try:
        data = zip_of({"prng.py": PRNG})
        piece = -(-len(data) // 8)
        outcome = _send_in_pieces(c.port, "/api/submissions?topics=prng", bearer(c.token("bob")), data, piece, 0.12)
        assert outcome[0] == 202, outcome
        big = {f"X-Note-{i}": "n" * 1000 for i in range(6)}
        assert httpx.get(f"{c.url}/api/health", headers=big, timeout=30).status_code == 200
        huge = {f"X-Note-{i}": "n" * 1000 for i in range(40)}
        assert httpx.get(f"{c.url}/api/health", headers=huge, timeout=30).status_code == 431
    finally:
        c.stop()


def _send_in_pieces(
    port: int, path: str, headers: dict[str, str], data: bytes, piece: int, interval: float
) -> tuple[int | None, bytes]:
    """POST `data` in pieces of `piece` bytes `interval` s apart on a raw socket: (status, reply)."""
    import socket

    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        head = "".join(
            f"{k}: {v}\r\n"
            for k, v in {
                **headers,
                "Content-Type": "application/zip",
                "Content-Length": str(len(data)),
                "Connection": "close",
            }.items()
        )
        sock.sendall(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{head}\r\n".encode())
        for start in range(0, len(data), piece):
            time.sleep(interval)
            sock.sendall(data[start : start + piece])
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
    parts = reply.split(b"\r\n", 1)[0].split()
    return (int(parts[1]) if len(parts) > 1 else None), reply[-300:]


@pytest.mark.slow
def test_several_api_processes_close_idle_connections(tmp_path):
    """`--workers 2`: uvicorn starts each process from the factory; the header deadline holds there too."""
    c = started(tmp_path, ("--workers", "2"))
    try:
        outcome = raw_clients.idle(c.port, cap=HEADER_TIMEOUT * 10)
        assert outcome.closed and outcome.seconds < HEADER_TIMEOUT * 5, outcome
        assert httpx.get(f"{c.url}/api/health", timeout=30).status_code == 200
    finally:
        c.stop()


@needs_nginx
def test_the_front_keeps_the_base_path_and_the_real_client_address(tmp_path):
    c = new_course(tmp_path / "course", JAXLINGS_BASE_PATH="/services/jaxlings")
    proc = c._start(["serve", "--proxy"], "serve.log")
    try:
        health = f"{c.url}/services/jaxlings/api/health"
        wait_for(lambda: _ok(health), 60, f"the front at {health}")
        reply = httpx.get(health, headers={"X-Forwarded-For": "6.6.6.6", "X-Forwarded-Proto": "https"}, timeout=30)
        assert reply.status_code == 200 and reply.json()["ok"] is True
        assert httpx.get(f"{c.url}/api/health", timeout=30).status_code == 404
        conf = (c.data_dir / "front" / "nginx.conf").read_text()
        assert "proxy_request_buffering on" in conf and "client_max_body_size" in conf
        wait_for(lambda: "/services/jaxlings/api/health" in c.log("serve.log"), 10, "the app's access log line")
        log = c.log("serve.log")
        assert "6.6.6.6" not in log and re.search(r"127\.0\.0\.1:\d+ - \"GET /services/jaxlings/api/health", log), log
    finally:
        kill(proc, signal.SIGTERM)


def _ok(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


@pytest.mark.slow
@needs_nginx
def test_one_address_cannot_take_every_connection_of_the_front(tmp_path):
    """nginx's per-address cap (max_connections) on requests in progress: past it, a 503 naming it."""
    c = started(tmp_path, ("--proxy",), JAXLINGS_MAX_CONNECTIONS="4")
    try:
        token = c.token("mallory")
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            held = [
                pool.submit(raw_clients.slow_body, c.port, "/api/submissions", bearer(token), length=100_000, cap=4)
                for _ in range(4)
            ]
            time.sleep(1.0)
            refused = httpx.get(f"{c.url}/api/health", timeout=30)
            [f.result() for f in held]
        assert refused.status_code == 503 and "from your address" in refused.json()["detail"], refused.text
        wait_for(lambda: _ok(f"{c.url}/api/health"), 30, "health once the slow clients left")
    finally:
        c.stop()


@needs_nginx
def test_nginx_stops_with_grade_serve_however_it_ends(tmp_path):
    c = started(tmp_path, ("--proxy",))
    serve = c.procs[0]
    pid = int((c.data_dir / "front" / "nginx.pid").read_text())
    os.kill(serve.pid, signal.SIGTERM)  # the serve process only: it stops nginx itself
    assert serve.wait(60) == 0
    assert not _alive(pid) and not reachable(c.port)
    c.serve(args=("--proxy",))
    serve = c.procs[-1]
    pid = int((c.data_dir / "front" / "nginx.pid").read_text())
    os.kill(serve.pid, signal.SIGKILL)  # no chance to clean up: the kernel tells nginx
    serve.wait(60)
    wait_for(lambda: not _alive(pid) and not reachable(c.port), 30, "nginx to stop after grade serve was killed")
    c.stop()


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie waiting for its reaper does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_proxy_without_nginx_is_one_line_naming_what_to_install(tmp_path, monkeypatch):
    from jaxlings import cli
    from jaxlings.service import front

    monkeypatch.setattr(front, "SEARCH", ())
    monkeypatch.setenv("PATH", str(tmp_path))
    result = CliRunner().invoke(cli.app, ["serve", "--proxy", "--data-dir", str(tmp_path / "data")])
    assert result.exit_code == 2, result.output
    message = " ".join(result.output.split())  # one message (the console wraps it at its width)
    assert message.startswith("error:") and message.count("error") == 1, message
    assert "nginx is not installed" in message and "apt-get install nginx-light" in message, message

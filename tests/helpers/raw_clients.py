"""Clients that hold a server's connections, on raw sockets (httpx would not misbehave so).

Each returns an `Outcome`: what the server answered (status, or None), whether it closed the
connection (or reset it) before the client gave up, and after how many seconds. Every client
gives up after `cap` seconds, so a server that never closes costs a test time, not a hang.
Used by tests/service/test_service_front.py and benchmarks/slow_clients.py.
"""

from __future__ import annotations

import select
import socket
import time
from dataclasses import dataclass


@dataclass
class Outcome:
    status: int | None  # the HTTP status the server sent, if any
    closed: bool  # the server closed or reset the connection before `cap`
    seconds: float  # from the connection's opening to its close (or to `cap`)
    sent: int = 0  # bytes of body or header sent after the request line


def _connect(port: int, source: str | None = None) -> socket.socket:
    """A connection to 127.0.0.1:port, from loopback address `source` (e.g. 127.0.0.2: another client)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=30, source_address=(source, 0) if source else None)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def _status(data: bytes) -> int | None:
    parts = data.split(b"\r\n", 1)[0].split()
    return int(parts[1]) if len(parts) >= 2 and parts[0].startswith(b"HTTP/") and parts[1].isdigit() else None


def _reply(sock: socket.socket, t0: float, cap: float, sent: int, failed: bool = False) -> Outcome:
    """Read what the server sends until it closes (closed) or `cap` passes (not closed); after a
    failed send (`failed`: the server closed), only what it had sent before."""
    data = b""
    if failed:
        cap = min(cap, time.monotonic() - t0 + 2)
    try:
        while time.monotonic() - t0 < cap:
            if not select.select([sock], [], [], min(0.5, max(0.0, cap - (time.monotonic() - t0))))[0]:
                continue
            chunk = sock.recv(65536)
            if not chunk:
                return Outcome(_status(data), True, time.monotonic() - t0, sent)
            data += chunk
        return Outcome(_status(data), failed, time.monotonic() - t0, sent)
    except OSError:  # reset: closed by the server
        return Outcome(_status(data), True, time.monotonic() - t0, sent)
    finally:
        sock.close()


def _trickle(sock: socket.socket, t0: float, cap: float, piece: bytes, interval: float, limit: int) -> tuple[int, bool]:
    """Send `piece` every `interval` s until the server speaks or closes, `limit` bytes went, or `cap`;
    (bytes sent, whether a send failed: the server closed)."""
    sent = 0
    while time.monotonic() - t0 < cap and sent < limit:
        if select.select([sock], [], [], interval)[0]:
            return sent, False
        try:
            sock.sendall(piece)
        except OSError:
            return sent, True
        sent += len(piece)
    return sent, False


def slow_body(
    port: int,
    path: str,
    headers: dict[str, str],
    length: int,
    piece: int = 4,
    interval: float = 0.25,
    cap: float = 40.0,
    stall_after: int | None = None,
    source: str | None = None,
) -> Outcome:
    """A POST whose body of `length` bytes comes `piece` bytes every `interval` s (or stops for good
    after `stall_after` bytes)."""
    t0 = time.monotonic()
    sock = _connect(port, source)
    head = "".join(
        f"{k}: {v}\r\n"
        for k, v in {
            "Host": f"127.0.0.1:{port}",
            "Content-Type": "application/zip",
            **headers,
            "Content-Length": str(length),
        }.items()
    )
    sock.sendall(f"POST {path} HTTP/1.1\r\n{head}\r\n".encode())
    sent, failed = _trickle(sock, t0, cap, b"P" * piece, interval, length if stall_after is None else stall_after)
    return _reply(sock, t0, cap, sent, failed)


def idle(port: int, cap: float = 40.0, source: str | None = None) -> Outcome:
    """A connection that sends nothing."""
    t0 = time.monotonic()
    return _reply(_connect(port, source), t0, cap, 0)


def drip_header(
    port: int, path: str = "/api/health", interval: float = 0.25, cap: float = 40.0, source: str | None = None
) -> Outcome:
    """A request whose headers never end: a short header line every `interval` s."""
    t0 = time.monotonic()
    sock = _connect(port, source)
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".encode())
    sent, failed = _trickle(sock, t0, cap, b"X-Drip: a\r\n", interval, 1 << 30)
    return _reply(sock, t0, cap, sent, failed)


def endless_header(port: int, path: str = "/api/health", cap: float = 40.0, source: str | None = None) -> Outcome:
    """A request with one header whose value never ends, sent as fast as the server takes it."""
    t0 = time.monotonic()
    sock = _connect(port, source)
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Endless: ".encode())
    sent, failed = _trickle(sock, t0, cap, b"a" * 1024, 0.01, 1 << 30)
    return _reply(sock, t0, cap, sent, failed)

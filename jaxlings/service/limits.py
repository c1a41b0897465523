"""What one client may hold of the app server: the limits uvicorn does not set by itself.

uvicorn starts its keep-alive timer only after a response, and any byte received stops it: a
connection that sends nothing, or a header a byte at a time, is held for ever, and a request body
has no deadline at all. Here:

- `LimitedH11Protocol` (uvicorn's h11 protocol, given as `http=`): a connection's request line
  and headers must be complete within `header_timeout` seconds of its opening or of its previous
  response, else it is closed (so an idle connection that never sends goes too); headers past
  `max_header_bytes` (h11's `max_incomplete_event_size`) get a 431 and the connection is closed.
- `BodyDeadline` (pure ASGI middleware): a request's whole body must arrive within `body_timeout`
  seconds of the request's start, else 408 and the connection is closed.
- `uvicorn_options(settings)`: every uvicorn.run argument these limits need, with the connection
  cap (`limit_concurrency`: past it, 503) and the keep-alive timeout.
- `PerCaller`: the views whose cost grows with what students uploaded (a submission's code, a
  diff, the similarity report) a caller may have in flight at once (`pages_at_once`); one more is
  a 429, so one account cannot hold every worker thread of the server.

The front (`grade serve --proxy`, front.py) sets the same limits in nginx; these hold without it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import threading
from collections.abc import Iterator
from typing import Any

import h11
from fastapi import HTTPException
from uvicorn.protocols.http.h11_impl import STATUS_PHRASES, H11Protocol, RequestResponseCycle

from jaxlings.service.config import Settings

log = logging.getLogger("jaxlings.http")


class _Connection(h11.Connection):
    """h11's server side, refusing a request whose line and headers pass `max_incomplete_event_size`
    even when they came whole (h11 bounds only what it buffers incomplete), and remembering the
    protocol error that ended it (to answer 431, not 400)."""

    refusal: h11.RemoteProtocolError | None = None

    def next_event(self):
        try:
            event = super().next_event()
            if isinstance(event, h11.Request) and _size(event) > self._max_incomplete_event_size:
                raise h11.RemoteProtocolError("request headers too large", error_status_hint=431)
            return event
        except h11.RemoteProtocolError as exc:
            self.refusal = exc
            raise


def _size(request: h11.Request) -> int:
    """The bytes of a request's line and headers, as sent (less optional whitespace)."""
    line = len(request.method) + len(request.target) + 12
    return line + sum(len(name) + len(value) + 4 for name, value in request.headers) + 2


class LimitedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a header deadline and a 431 for headers past the size limit.

    The deadline is armed when the connection opens and after each response, and disarmed when a
    request's headers are complete; if it fires first, the connection is closed (no reply: the
    client has not finished asking anything). uvicorn's own keep-alive timer still closes a
    connection idle after a response sooner (`timeout_keep_alive`).
    """

    conn: _Connection

    def __init__(self, config, server_state, app_state, _loop=None, *, header_timeout: float = 10.0) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.conn = _Connection(h11.SERVER, self.conn._max_incomplete_event_size)
        self.header_timeout = header_timeout
        self._header_timer: asyncio.TimerHandle | None = None
        self._waiting_after: RequestResponseCycle | None = (
            None  # the cycle (None: none yet) after which headers are awaited
        )

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        self._await_headers()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_header_timer()
        super().connection_lost(exc)

    def handle_events(self) -> None:
        super().handle_events()
        if self._header_timer is not None and self.cycle is not self._waiting_after:
            self._stop_header_timer()  # a new request's headers are complete

    def on_response_complete(self) -> None:
        if not self.transport.is_closing():
            self._await_headers()
        super().on_response_complete()  # may parse a pipelined request: handle_events disarms

    def _await_headers(self) -> None:
        self._stop_header_timer()
        self._waiting_after = self.cycle
        self._header_timer = self.loop.call_later(self.header_timeout, self._headers_too_slow)

    def _stop_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_too_slow(self) -> None:
        self._header_timer = None
        if not self.transport.is_closing():
            client = f"{self.client[0]}:{self.client[1]}" if self.client else "a client"
            log.info(
                "closed the connection of %s: no complete request headers within %g s", client, self.header_timeout
            )
            self.transport.close()

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to a request h11 cannot parse: 431 when the headers were too large."""
        refusal = self.conn.refusal
        status = getattr(refusal, "error_status_hint", 400) if refusal is not None else 400
        if status == 431:
            msg = f"request headers too large: at most {self.conn._max_incomplete_event_size} bytes"
        self._stop_header_timer()
        body = msg.encode("ascii", "replace")
        headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"connection", b"close")]
        for event in (
            h11.Response(status_code=status, headers=headers, reason=STATUS_PHRASES[status]),
            h11.Data(data=body),
            h11.EndOfMessage(),
        ):
            self.transport.write(self.conn.send(event))
        self.transport.close()


class BodyDeadline:
    """Pure ASGI middleware: 408 when a request's body has not fully arrived within `seconds` of
    the request's start (so a client sending a few bytes a second holds nothing for long).

    The app then reads a disconnect, and whatever it does about it is dropped: the client has
    its 408 (with `Connection: close`). When the response had already started, the app only
    reads the disconnect and the connection ends with the response.
    """

    def __init__(self, app, seconds: float):
        self.app, self.seconds = app, seconds

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.seconds
        started = body_done = timed_out = False

        async def timed_receive():
            nonlocal body_done, timed_out
            if body_done or timed_out:
                return await receive() if body_done else {"type": "http.disconnect"}
            try:
                async with asyncio.timeout_at(deadline):  # a message already there still passes
                    message = await receive()
            except TimeoutError:
                timed_out = True
                await self._refuse(scope, send, started)
                return {"type": "http.disconnect"}
            body_done = message["type"] != "http.request" or not message.get("more_body", False)
            return message

        async def tracked_send(message) -> None:
            nonlocal started
            if timed_out and not started:
                return  # the app's answer to the disconnect: the 408 went out
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, timed_receive, tracked_send)
        except Exception:
            if not timed_out:
                raise  # the app's own error (the disconnect's is expected)

    async def _refuse(self, scope, send, started: bool) -> None:
        log.info(
            "refused %s %s: 408 request body not received within %g s",
            scope.get("method"),
            scope.get("path"),
            self.seconds,
        )
        if started:
            return
        detail = f"request body not received within {self.seconds:g} s; send it faster, or a smaller one"
        body = json.dumps({"detail": detail}).encode() + b"\n"
        await send(
            {
                "type": "http.response.start",
                "status": 408,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def uvicorn_options(settings: Settings, behind_front: bool = False) -> dict[str, Any]:
    """The uvicorn.run keyword arguments of these settings' limits.

    `behind_front`: the app listens on a socket only the front (nginx) reaches, so X-Forwarded-*
    are trusted from any peer of that socket (a unix socket's peer has no address); otherwise
    uvicorn's default holds (trusted from loopback only: an existing proxy on the same host).
    """
    options: dict[str, Any] = {
        "http": functools.partial(LimitedH11Protocol, header_timeout=settings.header_timeout),
        "h11_max_incomplete_event_size": settings.max_header_bytes,
        "limit_concurrency": settings.max_connections,
        "timeout_keep_alive": settings.keep_alive,
    }
    if behind_front:
        options.update(proxy_headers=True, forwarded_allow_ips="*")
    return options


class PerCaller:
    """At most `at_once` costly views in flight per caller (in this process); one more is a 429
    naming the wait, and nothing of it is computed."""

    def __init__(self, at_once: int) -> None:
        self.at_once = at_once
        self._lock = threading.Lock()
        self._held: dict[str, int] = {}

    @contextlib.contextmanager
    def held(self, caller: str) -> Iterator[None]:
        with self._lock:
            if self._held.get(caller, 0) >= self.at_once:
                raise HTTPException(
                    429,
                    f"{self.at_once} of your pages are still being prepared; open this one again when they are",
                    headers={"Retry-After": "5"},
                )
            self._held[caller] = self._held.get(caller, 0) + 1
        try:
            yield
        finally:
            with self._lock:
                self._held[caller] -= 1
                if not self._held[caller]:
                    del self._held[caller]

"""What the service answers when a request cannot be served, and the one log line it costs.

Bad input is a 4xx with a message naming the problem (JSON on `/api/...`, a page elsewhere);
an outage of the database or the hub is a 503 with `Retry-After`; anything else is a 500
whose traceback is logged once, under a reference the reply names. Every refusal is one line
on the `jaxlings.http` logger, never a traceback.
"""

from __future__ import annotations

import html
import logging
import secrets

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from jaxlings.service import auth, storage
from jaxlings.service.db import UNREACHABLE
from jaxlings.service.jobs import one_line
from jaxlings.service.state import AppState

log = logging.getLogger("jaxlings.http")
RETRY_AFTER = 5


def install(app: FastAPI) -> None:
    """Register the handlers and the outermost catch-all on `app`."""
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(storage.UploadError, _upload_error)
    app.add_exception_handler(RequestValidationError, _invalid)
    app.add_exception_handler(auth.HubUnavailable, _hub_down)
    for kind in UNREACHABLE:
        app.add_exception_handler(kind, _database_down)


def answer(request: Request, status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    """A refusal: one log line, then JSON under /api/ and a page elsewhere."""
    log.info("refused %s %s: %d %s", request.method, request.url.path, status, message)
    base = AppState.of(request.app).settings.base_path
    if is_api(request.url.path, base):
        return JSONResponse({"detail": message}, status_code=status, headers=headers)
    from jaxlings.service.rendering import render

    response = render(request, "error.html", status_code=status, status=status, message=message)
    for name, value in (headers or {}).items():
        response.headers[name] = value
    return response


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return answer(request, exc.status_code, str(exc.detail), dict(exc.headers or {}))


async def _upload_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, storage.UploadError)
    return answer(request, exc.status, str(exc))


def describe_invalid(exc: RequestValidationError) -> str:
    """A validation error in one line: which parameter, what is wrong (never the model's dump)."""
    parts = []
    for error in exc.errors()[:3]:
        where = ".".join(str(p) for p in error.get("loc", ()) if p not in ("path", "query", "body", "header"))
        parts.append(f"{where or 'request'}: {error.get('msg', 'invalid')}")
    return "bad request: " + "; ".join(parts)


async def _invalid(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    return answer(request, 422, describe_invalid(exc))


async def _hub_down(request: Request, exc: Exception) -> Response:
    return answer(request, 503, str(exc), {"Retry-After": str(RETRY_AFTER)})


async def _database_down(request: Request, exc: Exception) -> Response:
    log.warning("database unavailable: %s", one_line(exc))
    return answer(
        request, 503, "the database is not answering; try again in a few seconds", {"Retry-After": str(RETRY_AFTER)}
    )


class Contain:
    """Pure ASGI middleware: an unexpected exception becomes a 500 naming a reference, logged
    once with its traceback under that reference (instead of a traceback from each layer);
    `base` is the service's base path (JSON under `{base}/api/`, a page elsewhere)."""

    def __init__(self, app: ASGIApp, base: str = ""):
        self.app, self.base = app, base

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def watch(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, watch)
        except Exception:
            ref = secrets.token_hex(4)
            log.exception("internal error %s on %s %s", ref, scope.get("method"), scope.get("path"))
            if started:
                return
            message = f"internal error (reference {ref}); the operators have it in their log"
            response = _json_or_page(scope, message, self.base)
            await response(scope, receive, send)


def is_api(path: str, base: str) -> bool:
    """Whether `path` is the JSON API's (answered in JSON), not a page's."""
    return path.startswith(f"{base}/api/") or path == f"{base}/api"


def _json_or_page(scope: Scope, message: str, base: str) -> Response:
    """A 500 that escaped every handler: JSON under /api/, a plain page (no template: whatever
    failed may be the rendering) elsewhere."""
    if is_api(str(scope.get("path", "")), base):
        return JSONResponse({"detail": message}, status_code=500)
    page = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>jaxlings: 500</title></head>'
        f'<body><h2>Not available right now</h2><p id="error">{html.escape(message)}</p>'
        f'<p><a href="{html.escape(base)}/">back to your page</a></p></body></html>'
    )
    return HTMLResponse(page, status_code=500)

"""Headers every response carries, and the same-origin check of the pages' forms.

Pages are framed by nobody (`frame-ancestors 'none'`, X-Frame-Options), load nothing from
elsewhere (a strict Content-Security-Policy: the pages have no script), are not sniffed or
cached (`nosniff`, `no-store`: answers carry grades and tokens' effects) and send no path to
other sites (`Referrer-Policy`).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from jaxlings.service.config import Settings

CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
]


class SecurityHeaders:
    """Pure ASGI middleware adding HEADERS to every response, and the CSP but on the API's docs
    page (Swagger UI loads its script from a CDN)."""

    def __init__(self, app: ASGIApp, docs_path: str):
        self.app, self.docs_path = app, docs_path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        extra = list(HEADERS)
        if scope.get("path") != self.docs_path:
            extra.append((b"content-security-policy", CSP.encode()))

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {name.lower() for name, _ in message.get("headers", [])}
                message["headers"] = [*message.get("headers", []), *((k, v) for k, v in extra if k not in present)]
            await send(message)

        await self.app(scope, receive, with_headers)


def _origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower() if parts.scheme and parts.netloc else ""


def same_origin(request: Request, settings: Settings) -> bool:
    """Whether a form post comes from the service's own pages, by its Origin (else Referer) header.

    Allowed origins: the public URL's, and the one the request was addressed to (scheme + Host).
    A request with neither header passes here (some clients send none); the CSRF token still
    has to match. `Origin: null` (a sandboxed or opaque origin) never passes.
    """
    origin = request.headers.get("origin")
    if origin is None:
        referer = request.headers.get("referer")
        if referer is None:
            return True
        origin = _origin_of(referer)
    origin = origin.strip().lower()
    allowed = {f"{request.url.scheme}://{request.headers.get('host', '')}".lower()}
    if settings.public_url:
        allowed.add(settings.origin.lower())
    return origin in allowed

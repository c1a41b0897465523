"""The pages' answers: Jinja2 templates (templates/) rendered with what every page shows, and the
way to the login page for a visitor who is not logged in.

`render` runs in routes and in the error handlers alike, so it reads the app's state from the
request's app (`AppState.of`) rather than taking it as a dependency.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.templating import Jinja2Templates

from jaxlings import __version__
from jaxlings.service.config import Settings
from jaxlings.service.state import AppState

TEMPLATES = Jinja2Templates(directory=str(Path(__file__).resolve().parent / "templates"))


def render(request: Request, name: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    """Template `name` with the base path, the version, whether the course has a speed
    leaderboard (pages link to it) and `context` (autoescaped)."""
    state = AppState.of(request.app)
    common = {
        "base": state.settings.base_path,
        "version": __version__,
        "who": None,
        "csrf": "",
        "leaderboard_enabled": state.rules.leaderboard.enabled,
    }
    return TEMPLATES.TemplateResponse(request, name, {**common, **context}, status_code=status_code)


def to_login(settings: Settings) -> RedirectResponse:
    """Where a page sends a visitor who is not logged in."""
    return RedirectResponse(f"{settings.base_path}/login", status_code=303)

"""The pages' Jinja2 templates (templates/), rendered with what every page shows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from jaxlings import __version__

TEMPLATES = Jinja2Templates(directory=str(Path(__file__).resolve().parent / "templates"))


def render(request: Request, name: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    """Template `name` with the base path, the version, whether the course has a speed
    leaderboard (pages link to it) and `context` (autoescaped)."""
    settings = request.app.state.settings
    rules = getattr(request.app.state, "rules", None)
    common = {
        "base": settings.base_path,
        "version": __version__,
        "who": None,
        "csrf": "",
        "leaderboard_enabled": rules is not None and rules.leaderboard.enabled,
    }
    return TEMPLATES.TemplateResponse(request, name, {**common, **context}, status_code=status_code)

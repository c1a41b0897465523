"""What one API process holds for all its requests, as one typed object: `AppState`.

`app.create_app` builds it once and keeps it on the app (`AppState.attach`); a route declares it
as a dependency (`deps.StateDep`) and hands the helpers it calls what they need of it. Error
handlers and template rendering, which run outside FastAPI's dependencies, reach it through
`AppState.of(app)`, the one place that reads it back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from starlette.applications import Starlette

if TYPE_CHECKING:
    from celery import Celery
    from sqlalchemy.orm import Session, sessionmaker

    from jaxlings.grading.rules import CourseRules
    from jaxlings.service.config import Settings
    from jaxlings.service.jobs import Dispatcher
    from jaxlings.service.limits import PerCaller
    from jaxlings.service.reports import Reports


@dataclass(frozen=True)
class AppState:
    """The settings, the course (its rules and topics) and the machinery every request shares."""

    settings: Settings
    rules: CourseRules  # course.toml: dates, late policy, leaderboard
    topics: tuple[str, ...]  # the topics a submission may hold, in course order
    sessions: sessionmaker[Session]  # the database's session factory
    celery: Celery  # the Celery app the dispatcher sends jobs through
    dispatcher: Dispatcher  # sends jobs to the broker off the request path
    costly: PerCaller  # the costly views each caller may have in flight
    reports: Reports  # similarity reports, worked out off the request path

    def attach(self, app: Starlette) -> None:
        """Keep this state on `app`, for `of`."""
        app.state.jaxlings = self

    @staticmethod
    def of(app: Starlette) -> AppState:
        """The state `attach` kept on `app`."""
        state: AppState = app.state.jaxlings
        return state

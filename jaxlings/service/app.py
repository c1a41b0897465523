"""The service's ASGI app: `create_app(settings)` builds the app's state (`state.AppState`) and
wires the routes, the middleware and the error handlers; `from_env()` is uvicorn's factory when it
runs several API processes.

Nothing here holds state between requests but the dispatcher's queue of jobs to send: every
fact lives in the database, so any number of API processes can serve one course.
"""

from __future__ import annotations

from contextlib import asynccontextmanager

from fastapi import FastAPI

from jaxlings import __version__
from jaxlings.grading import rules
from jaxlings.service import db, errors, jobs, limits, reports, storage
from jaxlings.service.config import Settings
from jaxlings.service.routes import api, pages, roster_pages
from jaxlings.service.security import SecurityHeaders
from jaxlings.service.state import AppState


def create_app(settings: Settings) -> FastAPI:
    """The whole service for these settings (the database is migrated at start)."""
    if settings.hub_api_url:
        from jaxlings.service import auth

        auth.require_hub_support()
    jobs.log_to_stderr()
    state = _state(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        storage.secure_data_dir(settings)
        db.upgrade(settings.db_url)
        jobs.declare_queue(state.celery, settings)
        state.dispatcher.start()
        yield
        state.dispatcher.stop()
        state.reports.close()

    base = settings.base_path
    app = FastAPI(
        title="jaxlings grading service",
        version=__version__,
        lifespan=lifespan,
        openapi_url=f"{base}/api/openapi.json",
        docs_url=f"{base}/api/docs",
        redoc_url=None,
    )
    state.attach(app)
    app.include_router(api.router, prefix=f"{base}/api")
    app.include_router(pages.router, prefix=base)
    app.include_router(roster_pages.router, prefix=base)
    errors.install(app)
    app.add_middleware(limits.BodyDeadline, seconds=settings.body_timeout)  # 408 past it (innermost of three)
    app.add_middleware(errors.Contain, base=base)  # the last added is the outermost:
    app.add_middleware(SecurityHeaders, docs_path=f"{base}/api/docs")  # a contained 500 gets the headers too
    return app


def _state(settings: Settings) -> AppState:
    """What every request of this API process shares: the course's topics and rules (a faulty
    course.toml raises `RulesError`, naming what is wrong), the database's sessions, the Celery app
    and its dispatcher, the limit on costly views and the similarity reports."""
    celery = jobs.make_celery(settings)
    dispatcher = jobs.Dispatcher(celery, settings)
    sessions = db.sessions(settings.db_url)
    topics = settings.topics or _course_topics()
    course = rules.load(settings.rules_path, topics)
    return AppState(
        settings=settings,
        rules=course,
        topics=topics,
        sessions=sessions,
        celery=celery,
        dispatcher=dispatcher,
        costly=limits.PerCaller(settings.pages_at_once),  # views a caller may have in flight
        reports=reports.Reports(settings.similarity_wait),  # similarity reports, off the request path
    )


def from_env() -> FastAPI:
    """The app for the settings in the environment."""
    from jaxlings.service import config

    return create_app(config.from_env())


def _course_topics() -> tuple[str, ...]:
    from jaxlings.grading import topics

    return topics.ORDER

"""The grading service: `grade serve` (HTTP API and pages), `grade worker` (Celery), `grade submit`.

Modules, one concern each:

    config     settings from flags and JAXLINGS_* environment variables
    db         SQLAlchemy models and sessions; migrations (Alembic) live in migrations/
    auth       course tokens (hashed), instructor tokens, JupyterHub tokens
    storage    checking an uploaded zip and storing it before the reply
    jobs       the Celery app and the grading task; leases that re-send lost jobs
    api        the FastAPI app, its dependencies (session, caller), submitting, the JSON API
    pages      the server-rendered pages (Jinja2 templates in templates/)
    gradebook  best scores per student and topic, the CSV, the SVG figures
    roster     students from a CSV, instructor tokens
    gradescope `grade export gradescope`: an autograder zip running the same engine
    client     the student's side (`grade login`, `grade submit`, ...): stdlib + httpx only
    cli        the commands, registered on the `grade` app

This package's `__init__`, `client` and `cli` ship in the student package: they import no
server-only library at module level.
"""

"""The grading service: `grade serve` (HTTP API and pages), `grade worker` (Celery), `grade submit`.

Modules, one concern each:

    config     settings from flags and JAXLINGS_* environment variables
    db         SQLAlchemy models and sessions; migrations (Alembic) live in migrations/
    auth       course tokens (hashed), instructor tokens, JupyterHub tokens
    storage    checking an uploaded zip and storing it before the reply
    jobs       the Celery app and the grading task; leases that re-send lost jobs
    api        the FastAPI app: JSON API and the HTTP side of the pages
    pages      the gradebook's figures (SVG) and CSV
    gradescope `grade export gradescope`: an autograder zip running the same engine
    client     the student's side (`grade login`, `grade submit`, ...): stdlib + httpx only
    cli        the commands, registered on the `grade` app

This package's `__init__`, `client` and `cli` ship in the student package: they import no
server-only library at module level.
"""

"""The grading service: `grade serve` (HTTP API and pages), `grade worker` (Celery), `grade submit`.

Modules, one concern each:

    config     settings from flags and JAXLINGS_* environment variables
    db         SQLAlchemy models and sessions; migrations (Alembic) live in migrations/
    auth       course tokens (hashed), instructor tokens, JupyterHub tokens
    storage    checking an uploaded zip and storing it before the reply
    jobs       the Celery app and the grading task; leases that re-send lost jobs
    app        the FastAPI app: `create_app` builds the app's state and includes the routers
    state      `AppState`: what one API process shares between requests, built once
    deps       the request dependencies (state, settings, session, caller) and request parsing
    operations the service layer: what the JSON API and the pages both do, given the state
    submitting taking a submission in: check, limits, store, hand to the dispatcher
    routes     the routers: the JSON API (`api`), the pages (`pages`, `roster_pages`; Jinja2 templates in templates/)
    scores     which score counts (best per student and topic, never lowered by a regrade in flight)
    views      what a page shows: a submission by exercise, two submissions' diff, a topic's table
    plots      the gradebook's SVG figures (histograms, submissions over time)
    exports    the gradebook as files: our CSV, Canvas's import, nbgrader's grades.csv
    deadlines  course.toml's windows applied to a student: extensions, refusals (rules: jaxlings.grading.rules)
    roster     students enrolled, dropped and listed; tokens; instructor tokens
    leaderboard  the speed leaderboard (opt-in): pseudonyms, each one's best measured time ratio
    similarity   the similarity report: pairs of students' functions alike in source and program
    inline       the similarity report's helpers read in place (a wrapper is its helper's body)
    reference_programs  the references' programs fingerprinted for the similarity report (a subprocess)
    gradescope `grade export gradescope`: an autograder zip running the same engine
    client     the student's side (`grade login`, `grade submit`, ...): stdlib + httpx only
    cli        the commands, registered on the `grade` app

This package's `__init__`, `client` and `cli` ship in the student package: they import no
server-only library at module level.
"""

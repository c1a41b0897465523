"""The service's commands on the `grade` app: `register(app)` adds them.

    grade login [--server URL] [--token T]        store where the server is and your token
    grade submit [TOPIC ...] [--wait]             zip ./exercises' topic files and submit them
    grade submissions                             your submissions
    grade result ID [--json FILE]                 one submission's verdicts (the `grade check` table)
    grade serve [--with-worker]                   the API and pages (instructors)
    grade worker                                  one grading worker: one per GPU
    grade course add-students ROSTER.csv          roster in, course tokens out
    grade course add-instructor NAME              an instructor token
    grade export gradescope [--out FILE]          a Gradescope autograder zip

Ships in the student package: server libraries are imported inside the server commands only.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Callable, Optional

import typer
from rich.console import Console
from rich.markup import escape

from autograder.service import client

console = Console()
course_app = typer.Typer(help="The course roster: students' and instructors' tokens.", no_args_is_help=True)
export_app = typer.Typer(help="Export the grader for other platforms.", no_args_is_help=True)

DataDir = Annotated[Optional[Path], typer.Option("--data-dir", help="Folder of the SQLite files and uploads [JAXLINGS_DATA_DIR].")]
DatabaseUrl = Annotated[Optional[str], typer.Option("--database-url", help="SQLAlchemy URL, e.g. postgresql+psycopg://... [JAXLINGS_DATABASE_URL].")]
BrokerUrl = Annotated[Optional[str], typer.Option("--broker-url", help="Celery broker, e.g. redis://host:6379/0 [JAXLINGS_BROKER_URL].")]
Sandbox = Annotated[Optional[str], typer.Option("--sandbox", help="on, off or auto [JAXLINGS_SANDBOX].")]


def friendly(fn: Callable) -> Callable:
    """The errors a user can cause as one red line and exit status 2."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (client.ClientError, ValueError, FileNotFoundError) as exc:
            console.print(f"[red]error:[/] {escape(str(exc))}", highlight=False)
            raise typer.Exit(2) from None
        except ImportError as exc:  # a server command in the student package (no server modules or libraries)
            console.print(f"[red]error:[/] `grade {fn.__name__.replace('_', '-')}` runs on the grading server, which "
                          f"needs the grader: pip install 'jaxlings\\[server]' (missing: {exc.name})", highlight=False)
            raise typer.Exit(2) from None

    return wrapper


def settings_from(**flags):
    """Settings: environment variables, then the flags given."""
    from autograder.service import config

    return config.from_env().with_overrides(**flags)


# ---------------------------------------------------------------- student commands


@friendly
def login(
    server: Annotated[Optional[str], typer.Option(help="The grading server's URL (your instructor gives it).")] = None,
    token: Annotated[Optional[str], typer.Option(help="Your course token (asked for when not given).")] = None,
) -> None:
    """Store the grading server's URL and your course token (checked against the server first)."""
    server = server or typer.prompt("grading server URL")
    token = token or typer.prompt("course token", hide_input=True)
    path, who = client.save_login(server, token)
    console.print(f"logged in to {server} as [bold]{who['login']}[/] ({who['role']}); saved in {path}", highlight=False)


@friendly
def submit(
    names: Annotated[Optional[list[str]], typer.Argument(metavar="[TOPIC]...", help="Topics to submit (default: every topic file).")] = None,
    directory: Annotated[Path, typer.Option("--dir", help="Your exercises folder.")] = Path("exercises"),
    wait: Annotated[bool, typer.Option("--wait", help="Wait for the verdicts and print them.")] = False,
    timeout: Annotated[float, typer.Option(help="With --wait: give up waiting after this many seconds.")] = 3600.0,
) -> None:
    """Zip your exercises' topic files, submit them for hidden grading, and print the submission's id."""
    api = client.Client(client.connection())
    data, topics = client.zip_exercises(directory, names or [], api.topics())
    state = api.submit(data, topics)
    again = " (already submitted: same files)" if state.get("duplicate") else ""
    console.print(f"submission [bold]{state['id']}[/]: {', '.join(topics)}{again}", highlight=False)
    if not wait:
        console.print(f"see it with `grade result {state['id']}`")
        return
    _show(api, _wait(api, state["id"], timeout))


def _wait(api: client.Client, submission_id: int, timeout: float) -> dict:
    with console.status("queued") as status:
        def update(state: dict) -> None:
            status.update(client.describe(state))
            if not sys.stdout.isatty():
                console.print(client.describe(state), highlight=False)

        return api.wait(submission_id, update, timeout)


def _show(api: client.Client, state: dict, json_path: Path | None = None) -> None:
    """The verdict table (as `grade check` prints it), or where the submission stands."""
    from autograder import report

    if state["status"] == client.FAILED:
        raise client.ClientError(f"submission {state['id']} could not be graded: {state.get('error')}")
    if state["status"] != client.DONE:
        console.print(f"submission {state['id']}: {client.describe(state)}", highlight=False)
        return
    doc = api.results(state["id"])
    report.result_tables(client.result_of(doc), console)
    if json_path:
        json_path.write_text(json.dumps(doc, indent=2))
        console.print(f"wrote {json_path}")


@friendly
def submissions() -> None:
    """Your submissions, newest first."""
    from rich.table import Table

    table = Table(title="submissions", title_justify="left")
    for col in ("id", "submitted (UTC)", "topics", "status", "score"):
        table.add_column(col)
    for s in client.Client(client.connection()).submissions():
        score = f"{s['score']:g} / {s['max_score']:g}" if s.get("score") is not None else ""
        table.add_row(str(s["id"]), s["created_at"][:19].replace("T", " "), ", ".join(s["topics"]), s["status"], score)
    console.print(table)


@friendly
def result(
    submission_id: Annotated[int, typer.Argument(metavar="ID")],
    json_path: Annotated[Optional[Path], typer.Option("--json", help="Also write its results.json here.")] = None,
) -> None:
    """One submission's verdicts, or where it stands in the queue."""
    api = client.Client(client.connection())
    _show(api, api.submission(submission_id), json_path)


# ---------------------------------------------------------------- server commands


@friendly
def serve(
    host: Annotated[Optional[str], typer.Option(help="Address to listen on [JAXLINGS_HOST].")] = None,
    port: Annotated[Optional[int], typer.Option(help="Port [JAXLINGS_PORT].")] = None,
    data_dir: DataDir = None, database_url: DatabaseUrl = None, broker_url: BrokerUrl = None, sandbox: Sandbox = None,
    with_worker: Annotated[bool, typer.Option("--with-worker", help="Also run one grading worker (one machine).")] = False,
    workers: Annotated[int, typer.Option("--workers", min=1, help="API processes (they share nothing but the database).")] = 1,
) -> None:
    """Run the grading service's API and pages (migrating the database first)."""
    import uvicorn

    from autograder.service import api, db

    settings = settings_from(host=host, port=port, data_dir=data_dir, database_url=database_url,
                             broker_url=broker_url, sandbox=sandbox)
    db.upgrade(settings.db_url)
    os.environ.update(settings.to_env())      # what a worker or a second API process reads
    worker = _child_worker() if with_worker else None
    # uvicorn shuts down on SIGTERM, then raises it again with the handler it found: this one, so
    # that the `finally` below stops the worker instead of the process dying around it.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    console.print(f"jaxlings service at {settings.url}/ (gradebook: {settings.url}/gradebook)", highlight=False)
    try:
        app = api.create_app(settings) if workers == 1 else "autograder.service.api:from_env"
        uvicorn.run(app, host=settings.host, port=settings.port, workers=workers, factory=workers > 1,
                    log_level="info")
    finally:
        if worker is not None:
            _stop(worker)


def _child_worker() -> subprocess.Popen:
    """`grade worker` as a child that the kernel stops (SIGTERM) if this process dies, however it dies."""
    def die_with_parent() -> None:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG

    return subprocess.Popen([sys.executable, "-m", "autograder", "worker"],
                            preexec_fn=die_with_parent if sys.platform == "linux" else None)


def _stop(process) -> None:
    """Ask a child to stop (SIGTERM: Celery's warm shutdown), then insist."""
    process.terminate()
    try:
        process.wait(60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@friendly
def worker(
    data_dir: DataDir = None, database_url: DatabaseUrl = None, broker_url: BrokerUrl = None, sandbox: Sandbox = None,
    name: Annotated[Optional[str], typer.Option(help="Worker name (default: jaxlings@host-pid).")] = None,
) -> None:
    """Run one grading worker: one job at a time (so timings stay fair); run one per GPU."""
    from autograder.service import jobs

    jobs.run_worker(settings_from(data_dir=data_dir, database_url=database_url, broker_url=broker_url,
                                  sandbox=sandbox), name)


@friendly
def add_students(
    roster: Annotated[Path, typer.Argument(help="CSV with a header: login (required), name, email.")],
    out: Annotated[Path, typer.Option(help="Where to write login,token (the tokens are shown only once).")] = Path("tokens.csv"),
    data_dir: DataDir = None, database_url: DatabaseUrl = None,
) -> None:
    """Add the roster's students and write a fresh course token for each to OUT."""
    from autograder.service import roster as rosters

    settings = settings_from(data_dir=data_dir, database_url=database_url)
    count = rosters.add_students(settings, roster, out)
    console.print(f"added {count} students; their tokens are in {out} (hand each student their own)", highlight=False)


@friendly
def add_instructor(
    label: Annotated[str, typer.Argument(metavar="NAME")],
    data_dir: DataDir = None, database_url: DatabaseUrl = None,
) -> None:
    """Create an instructor token (printed once)."""
    from autograder.service import roster as rosters

    token = rosters.add_instructor(settings_from(data_dir=data_dir, database_url=database_url), label)
    console.print(token, highlight=False, soft_wrap=True)


@friendly
def gradescope(
    out: Annotated[Path, typer.Option(help="The autograder zip to write.")] = Path("jaxlings-gradescope.zip"),
    topics: Annotated[Optional[list[str]], typer.Option("--topics", "-t", help="Topics to grade (default: all).")] = None,
) -> None:
    """Write a Gradescope autograder zip (setup.sh, run_autograder) that runs the same engine."""
    from autograder.service import gradescope as export

    path = export.write_autograder(out, topics or [])
    console.print(f"wrote {path}; upload it as the assignment's autograder on Gradescope", highlight=False)


def register(app: typer.Typer) -> None:
    """Add the service's commands to the `grade` app."""
    for fn in (login, submit, submissions, result, serve, worker):
        app.command(fn.__name__)(fn)
    course_app.command("add-students")(add_students)
    course_app.command("add-instructor")(add_instructor)
    export_app.command("gradescope")(gradescope)
    app.add_typer(course_app, name="course")
    app.add_typer(export_app, name="export")

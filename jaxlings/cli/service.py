"""The service's commands on the `grade` app: `register(app)` adds them.

    grade login [--server URL] [--token T]        store where the server is and your token
    grade submit [TOPIC ...] [--wait]             zip ./exercises' topic files and submit them
    grade submissions                             your submissions
    grade result ID [--json FILE]                 one submission's verdicts (the `grade check` table)
    grade pseudonym NAME | --leave                your name on the speed leaderboard, or off it
    grade serve [--proxy] [--with-worker]         the API and pages (instructors); nginx in front with --proxy
    grade worker                                  one grading worker: one per GPU
    grade course add-students ROSTER.csv          roster in, course tokens out
    grade course add-student LOGIN [--name --email]   one student (or a dropped one re-admitted); token printed once
    grade course drop LOGIN                       out of the course: tokens revoked, submissions kept
    grade course roster                           the roster: submissions, last one, dropped
    grade course export --format csv|canvas|nbgrader [--canvas-ids FILE] [-o FILE]   the gradebook for a spreadsheet or an LMS
    grade course add-instructor NAME              an instructor token
    grade course rotate-token LOGIN|--instructor NAME   a new token; the old ones revoked
    grade course revoke LOGIN|--instructor NAME   revoke tokens (and the page sessions opened with them)
    grade course extend LOGIN TOPIC --days N [--hours N] [--reason R]   more time for one student on one topic
    grade course nbgrader-dates [--course-dir DIR]   course.toml's due dates and the extensions into nbgrader's gradebook
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
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from jaxlings.student import client

console = Console()
course_app = typer.Typer(
    help="The course roster: students' and instructors' tokens, and the gradebook's exports.", no_args_is_help=True
)
export_app = typer.Typer(help="Export the grader for other platforms.", no_args_is_help=True)

DataDir = Annotated[
    Path | None, typer.Option("--data-dir", help="Folder of the SQLite files and uploads [JAXLINGS_DATA_DIR].")
]
DatabaseUrl = Annotated[
    str | None,
    typer.Option("--database-url", help="SQLAlchemy URL, e.g. postgresql+psycopg://... [JAXLINGS_DATABASE_URL]."),
]
BrokerUrl = Annotated[
    str | None, typer.Option("--broker-url", help="Celery broker, e.g. redis://host:6379/0 [JAXLINGS_BROKER_URL].")
]
Sandbox = Annotated[str | None, typer.Option("--sandbox", help="on, off or auto [JAXLINGS_SANDBOX].")]


P = ParamSpec("P")
R = TypeVar("R")


def friendly(fn: Callable[P, R]) -> Callable[P, R]:
    """The errors a user can cause, and a database that does not answer, as one red line and
    exit status 2."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except (client.ClientError, ValueError, FileNotFoundError) as exc:
            console.print(f"[red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)  # paths unbroken
            raise typer.Exit(2) from None
        except ImportError as exc:  # a server command in the student package (no server modules or libraries)
            console.print(
                f"[red]error:[/] `grade {fn.__name__.replace('_', '-')}` runs on the grading server, which "
                f"needs the grader: pip install 'jaxlings\\[server]' (missing: {exc.name})",
                highlight=False,
            )
            raise typer.Exit(2) from None
        except Exception as exc:
            problem = _database_problem(exc)
            if problem is None:
                raise
            console.print(
                f"[red]error:[/] {problem} the database at {escape(_database_named(kwargs))}: {escape(_reason(exc))}",
                highlight=False,
                soft_wrap=True,
            )
            raise typer.Exit(2) from None

    return wrapper


def _database_problem(exc: BaseException) -> str | None:
    """What `exc` says of the database, as the start of a sentence: "cannot reach" (it does not
    answer), "cannot use" (a URL or an option that SQLAlchemy or the driver refuses: an unknown
    scheme, a bad connection option), or None when it is about something else. SQLAlchemy's
    classes are looked up only if it was imported: this module ships in the student package,
    without it."""
    errors = sys.modules.get("sqlalchemy.exc")
    if errors is None:
        return None
    if isinstance(exc, (errors.OperationalError, errors.InterfaceError)):
        return "cannot reach"
    if isinstance(exc, (errors.ArgumentError, errors.DBAPIError)):
        return "cannot use"
    return None


def _database_named(flags: dict[str, Any]) -> str:
    """The database URL a server command was given (flags, then environment), password hidden."""
    from sqlalchemy.engine import make_url

    url = settings_from(data_dir=flags.get("data_dir"), database_url=flags.get("database_url")).db_url
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - not a URL SQLAlchemy reads: name it by its scheme only
        return url.split("://", 1)[0] + "://…"


def _reason(exc: BaseException) -> str:
    """The driver's words for a database error, on one line (SQLAlchemy's link to its docs left out)."""
    words = str(getattr(exc, "orig", None) or exc)
    lines = [line.strip() for line in words.splitlines() if line.strip() and not line.strip().startswith("(Background")]
    return " ".join(lines) or type(exc).__name__


def settings_from(**flags):
    """Settings: environment variables, then the flags given."""
    from jaxlings.service import config

    return config.from_env().with_overrides(**flags)


# ---------------------------------------------------------------- student commands


@friendly
def login(
    server: Annotated[str | None, typer.Option(help="The grading server's URL (your instructor gives it).")] = None,
    token: Annotated[str | None, typer.Option(help="Your course token (asked for when not given).")] = None,
) -> None:
    """Store the grading server's URL and your course token (checked against the server first)."""
    server = server or typer.prompt("grading server URL")
    token = token or typer.prompt("course token", hide_input=True)
    path, who = client.save_login(server, token)
    console.print(f"logged in to {server} as [bold]{who['login']}[/] ({who['role']}); saved in {path}", highlight=False)


@friendly
def submit(
    names: Annotated[
        list[str] | None, typer.Argument(metavar="[TOPIC]...", help="Topics to submit (default: every topic file).")
    ] = None,
    directory: Annotated[Path, typer.Option("--dir", help="Your exercises folder.")] = Path("exercises"),
    wait: Annotated[bool, typer.Option("--wait", help="Wait for the verdicts and print them.")] = False,
    timeout: Annotated[float, typer.Option(help="With --wait: give up waiting after this many seconds.")] = 3600.0,
) -> None:
    """Zip your exercises' topic files, submit them for hidden grading, and print the submission's id."""
    from jaxlings.student import pairing

    for line in pairing.notices(directory, names or None):
        console.print(f"[yellow]note:[/] {escape(line)}", highlight=False)
    api = client.Client(client.connection())
    data, topics = client.zip_exercises(directory, names or [], api.topics())
    dates = api.deadlines()
    for topic in (t for t in topics if t in dates):
        console.print(f"{escape(topic)}: {escape(dates[topic])}", highlight=False)
    state = api.submit(data, topics)
    left_out = state.get("left_out") or {}  # the topics not taken now: not open yet, or closed
    again = " (already submitted: same files)" if state.get("duplicate") else ""
    taken = state.get("topics") or topics
    console.print(f"submission [bold]{state['id']}[/]: {escape(', '.join(taken))}{again}", highlight=False)
    for why in left_out.values():
        console.print(f"left out: {escape(str(why))} (not submitted)", highlight=False)
    if not wait:
        console.print(f"see it with `grade result {state['id']}`")
        return
    _show(api, _wait(api, state["id"], timeout))


def _wait(api: client.Client, submission_id: int, timeout: float) -> dict[str, Any]:
    with console.status("queued") as status:

        def update(state: dict[str, Any]) -> None:
            status.update(client.describe(state))
            if not sys.stdout.isatty():
                console.print(client.describe(state), highlight=False)

        return api.wait(submission_id, update, timeout)


def _show(api: client.Client, state: dict[str, Any], json_path: Path | None = None) -> None:
    """The verdict table (as `grade check` prints it), or where the submission stands."""
    from jaxlings.student import report

    if state["status"] == client.FAILED and not state.get("results_url"):
        raise client.ClientError(f"submission {state['id']} could not be graded: {state.get('error')}")
    if state["status"] == client.FAILED:  # a regrade failed: its earlier verdicts still count
        console.print(
            f"[red]submission {state['id']}: its latest grading failed:[/] {escape(state.get('error') or '')}\n"
            "the verdicts below are from its earlier grading, which still counts",
            highlight=False,
        )
    elif state["status"] != client.DONE:
        console.print(f"submission {state['id']}: {client.describe(state)}", highlight=False)
        return
    doc = api.results(state["id"])
    report.result_tables(client.result_of(doc), console)
    console.print(_received(state), highlight=False)
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
        table.add_row(
            str(s["id"]), s["created_at"][:19].replace("T", " "), ", ".join(s["topics"]), s["status"], _score(s)
        )
    console.print(table)


def _score(state: dict[str, Any]) -> str:
    """A submission's score as it counts, "14.25 / 19 (late: prng keeps 75%; 19 before)", or ""."""
    if state.get("score") is None:
        return ""
    counted = state.get("counted_score", state["score"])
    text = f"{counted:g} / {state['max_score']:g}"
    if late := state.get("late"):
        kept = ", ".join(f"{topic} keeps {factor:.0%}" for topic, factor in late.items())
        text += f" (late: {kept}; {state['score']:g} before)"
    return text


def _received(state: dict[str, Any]) -> str:
    """When the server received a submission, whether it was late, and the score that counts."""
    when = (state.get("created_at") or "")[:19].replace("T", " ")
    on_time = "" if state.get("late") else ", on time"
    return f"received {when} UTC{on_time}; counts {_score(state)}"


@friendly
def result(
    submission_id: Annotated[int, typer.Argument(metavar="ID")],
    json_path: Annotated[Path | None, typer.Option("--json", help="Also write its results.json here.")] = None,
) -> None:
    """One submission's verdicts, or where it stands in the queue."""
    api = client.Client(client.connection())
    _show(api, api.submission(submission_id), json_path)


@friendly
def pseudonym(
    name: Annotated[
        str | None, typer.Argument(metavar="[NAME]", help="2 to 30 characters; not your login or name.")
    ] = None,
    leave: Annotated[bool, typer.Option("--leave", help="Leave the board (your pseudonym is cleared).")] = False,
) -> None:
    """Choose the pseudonym you appear under on the course's speed leaderboard (or --leave it)."""
    if (name is None) == (not leave):
        raise ValueError("give a pseudonym (`grade pseudonym NAME`) or --leave, not both")
    api = client.Client(client.connection())
    reply = api.leave_leaderboard() if leave else api.set_pseudonym(name or "")
    console.print(f"{escape(reply['message'])}; the board: {api.conn.url}/leaderboard", highlight=False)


# ---------------------------------------------------------------- server commands


@friendly
def serve(
    host: Annotated[str | None, typer.Option(help="Address to listen on [JAXLINGS_HOST].")] = None,
    port: Annotated[int | None, typer.Option(help="Port [JAXLINGS_PORT].")] = None,
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
    broker_url: BrokerUrl = None,
    sandbox: Sandbox = None,
    with_worker: Annotated[
        bool, typer.Option("--with-worker", help="Also run one grading worker (one machine).")
    ] = False,
    workers: Annotated[
        int, typer.Option("--workers", min=1, help="API processes (they share nothing but the database).")
    ] = 1,
    proxy: Annotated[
        bool, typer.Option("--proxy", help="Serve behind nginx (started here; it holds slow and idle clients).")
    ] = False,
) -> None:
    """Run the grading service's API and pages (migrating the database first), with the app
    server's own limits on what one client may hold, or behind nginx with --proxy."""
    import uvicorn

    from jaxlings.grading import rules
    from jaxlings.service import app as service
    from jaxlings.service import db, deadlines, front, limits, storage

    settings = settings_from(
        host=host, port=port, data_dir=data_dir, database_url=database_url, broker_url=broker_url, sandbox=sandbox
    )
    rules.load(settings.rules_path, deadlines.course_topics(settings))  # a faulty course.toml stops us here
    storage.secure_data_dir(settings)  # before anything creates a file there
    db.upgrade(settings.db_url)
    os.environ.update(settings.to_env())  # what a worker or a second API process reads
    # with --proxy nginx listens on host:port and the app on a socket only nginx reaches
    edge = front.prepare(settings) if proxy else None
    listen: dict[str, Any] = dict(uds=str(edge.socket)) if edge else dict(host=settings.host, port=settings.port)
    nginx = front.start(edge) if edge else None
    worker = _child_worker() if with_worker else None
    # uvicorn shuts down on SIGTERM, then raises it again with the handler it found: this one, so
    # that the `finally` below stops the worker and nginx instead of the process dying around them.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    console.print(
        f"jaxlings service at {settings.url}/ (gradebook: {settings.url}/gradebook)"
        + (f"; nginx in front, config {edge.config}" if edge else ""),
        highlight=False,
    )
    try:
        app = service.create_app(settings) if workers == 1 else "jaxlings.service.app:from_env"
        uvicorn.run(
            app,
            **listen,
            workers=workers,
            factory=workers > 1,
            log_level="info",
            **limits.uvicorn_options(settings, behind_front=proxy),
        )
    finally:
        if worker is not None:
            _stop(worker)
        if nginx is not None:
            front.stop(nginx, edge)


def _child_worker() -> subprocess.Popen[bytes]:
    """`grade worker` as a child that the kernel stops (SIGTERM) if this process dies, however it dies."""

    def die_with_parent() -> None:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG

    return subprocess.Popen(
        [sys.executable, "-m", "jaxlings", "worker"], preexec_fn=die_with_parent if sys.platform == "linux" else None
    )


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
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
    broker_url: BrokerUrl = None,
    sandbox: Sandbox = None,
    name: Annotated[str | None, typer.Option(help="Worker name (default: jaxlings@host-pid).")] = None,
    machine: Annotated[
        str | None,
        typer.Option(
            help="What this worker grades on: cpu, tpu, gpu or exclusive (JAXLINGS_MACHINE; default: the "
            "accelerator this machine has, else cpu). It takes the jobs of that kind's queue."
        ),
    ] = None,
) -> None:
    """Run one grading worker: one job at a time (so timings stay fair); run one per accelerator."""
    from jaxlings.service import jobs

    jobs.run_worker(
        settings_from(
            data_dir=data_dir, database_url=database_url, broker_url=broker_url, sandbox=sandbox, machine=machine
        ),
        name,
    )


@friendly
def add_students(
    roster: Annotated[Path, typer.Argument(help="CSV with a header: login (required), name, email.")],
    out: Annotated[Path, typer.Option(help="Where to write login,token (the tokens are shown only once).")] = Path(
        "tokens.csv"
    ),
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Add the roster's students and write a fresh course token for each to OUT."""
    from jaxlings.service import roster as rosters

    settings = settings_from(data_dir=data_dir, database_url=database_url)
    added, rotated = rosters.add_students(settings, roster, out)
    again = f"; {rotated} already on the roster got a new token (their old tokens no longer work)" if rotated else ""
    console.print(
        f"added {added} new student(s){again}; the tokens are in {out} (hand each student their own)", highlight=False
    )


@friendly
def add_instructor(
    label: Annotated[str, typer.Argument(metavar="NAME")],
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Create an instructor token (printed once)."""
    from jaxlings.service import roster as rosters

    token = rosters.add_instructor(settings_from(data_dir=data_dir, database_url=database_url), label)
    console.print(token, highlight=False, soft_wrap=True)


Login = Annotated[str | None, typer.Argument(metavar="[LOGIN]", help="A student's login.")]
InstructorLabel = Annotated[
    str | None, typer.Option("--instructor", metavar="NAME", help="An instructor token's name (from add-instructor).")
]


@friendly
def rotate_token(
    login: Login = None, instructor: InstructorLabel = None, data_dir: DataDir = None, database_url: DatabaseUrl = None
) -> None:
    """Give a student (LOGIN) or an instructor (--instructor NAME) a new token, printed once; the old ones stop working."""
    from jaxlings.service import roster as rosters

    token = rosters.rotate_token(
        settings_from(data_dir=data_dir, database_url=database_url), login=login, instructor=instructor
    )
    console.print(token, highlight=False, soft_wrap=True)


@friendly
def revoke(
    login: Login = None, instructor: InstructorLabel = None, data_dir: DataDir = None, database_url: DatabaseUrl = None
) -> None:
    """Revoke every token of a student (LOGIN) or an instructor (--instructor NAME), and end their page sessions."""
    from jaxlings.service import roster as rosters

    count = rosters.revoke(
        settings_from(data_dir=data_dir, database_url=database_url), login=login, instructor=instructor
    )
    who = f"student {login}" if login is not None else f"instructor {instructor}"
    console.print(f"revoked {count} token(s) of {who}" + ("" if count else " (none was live)"), highlight=False)


@friendly
def add_student(
    login: Annotated[str, typer.Argument(metavar="LOGIN", help="The student's login.")],
    name: Annotated[str, typer.Option(help="Their name.")] = "",
    email: Annotated[str, typer.Option(help="Their email.")] = "",
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Add one student (or re-admit a dropped one) and print their course token, once."""
    from jaxlings.service import roster as rosters

    token, readmitted = rosters.add_student(
        settings_from(data_dir=data_dir, database_url=database_url), login, name, email
    )
    done = "re-admitted (what they submitted counts again)" if readmitted else "added"
    console.print(f"{escape(login)} {done}; their course token (shown only now):", highlight=False)
    console.print(token, highlight=False, soft_wrap=True)


@friendly
def drop(
    login: Annotated[str, typer.Argument(metavar="LOGIN", help="The student's login.")],
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Drop a student: their tokens stop working and they leave the gradebook; what they submitted is kept."""
    import getpass

    from jaxlings.service import roster as rosters

    settings = settings_from(data_dir=data_dir, database_url=database_url)
    entry, revoked = rosters.drop_student(settings, login, f"{getpass.getuser()} (grade course drop)")
    console.print(
        f"dropped {escape(login)} ({revoked} token(s) revoked, page sessions ended); their {entry.submissions} "
        f"submission(s) are kept; `grade course add-student {escape(login)}` re-admits them",
        highlight=False,
    )


@friendly
def roster(data_dir: DataDir = None, database_url: DatabaseUrl = None) -> None:
    """The roster: login, name, email, submissions, the last one (UTC), and when each dropped student was dropped."""
    from rich.table import Table

    from jaxlings.service import roster as rosters

    table = Table(title="roster", title_justify="left")
    for col in ("login", "name", "email", "submissions", "last submission (UTC)", "dropped (UTC)"):
        table.add_column(col)
    for e in rosters.roster(settings_from(data_dir=data_dir, database_url=database_url)):
        dropped = f"{e.dropped_at:%Y-%m-%d %H:%M} by {e.dropped_by}" if e.dropped_at else ""
        last = f"{e.last_submission:%Y-%m-%d %H:%M}" if e.last_submission else ""
        table.add_row(*(escape(v) for v in (e.login, e.name, e.email, str(e.submissions), last, dropped)))
    console.print(table)


@friendly
def export(
    fmt: Annotated[str, typer.Option("--format", "-f", help="csv (ours), canvas or nbgrader.")] = "csv",
    canvas_ids: Annotated[
        Path | None,
        typer.Option(
            "--canvas-ids",
            help="With --format canvas: a CSV `topic,assignment_id` of Canvas assignment ids, or Canvas's own "
            "gradebook export (its assignment ids and each student's Canvas ID, SIS User ID and section).",
        ),
    ] = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="The file to write (default: by format).")] = None,
    topics: Annotated[
        list[str] | None,
        typer.Option("--topics", "-t", help="Topics to export (repeat; default: all, for Canvas those already open)."),
    ] = None,
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Write the gradebook (the scores that count; dropped students left out) as CSV, Canvas's
    gradebook import or nbgrader's grades.csv, readable by its owner only: every topic, or those
    `--topics` names; for Canvas by default only the topics already open."""
    from jaxlings.service import exports
    from jaxlings.service import roster as rosters

    if fmt not in exports.FORMATS:
        raise ValueError(f"unknown format {fmt!r}; the formats are: {', '.join(exports.FORMATS)}")
    if canvas_ids is not None and fmt != "canvas":
        raise ValueError("--canvas-ids goes with --format canvas")
    text = exports.from_database(
        settings_from(data_dir=data_dir, database_url=database_url), fmt, canvas_ids, topics or ()
    )
    path = out or Path(exports.filename(fmt))
    with rosters.private_file(path) as f:
        f.write(text)
    console.print(f"wrote {path} (format {fmt}; readable by you only)", highlight=False)


RulesFile = Annotated[
    Path | None,
    typer.Option(
        "--rules", help="The course's rules (course.toml) [JAXLINGS_COURSE_RULES; default DATA_DIR/course.toml]."
    ),
]


@friendly
def extend(
    login: Annotated[str, typer.Argument(metavar="LOGIN", help="The student's login.")],
    topic: Annotated[str, typer.Argument(metavar="TOPIC", help="The topic whose dates move.")],
    days: Annotated[float, typer.Option(help="Days more (added to --hours).")] = 0,
    hours: Annotated[float, typer.Option(help="Hours more (added to --days).")] = 0,
    reason: Annotated[str, typer.Option(help="Why, kept with the extension.")] = "",
    shorten: Annotated[
        bool, typer.Option("--shorten", help="Allow a length shorter than the extension in force.")
    ] = False,
    rules_file: RulesFile = None,
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Give a student more time on one topic: its due date and late window move by the length
    given (replacing an earlier extension of theirs for it; a shorter one than that needs
    --shorten); what they submitted counts again."""
    import datetime as dt
    import getpass

    from jaxlings.service import deadlines

    settings = settings_from(data_dir=data_dir, database_url=database_url)
    length = dt.timedelta(days=days, hours=hours)
    by = f"{getpass.getuser()} (grade course extend)"
    line = deadlines.extend(settings, rules_file or settings.rules_path, login, topic, length, by, reason, shorten)
    console.print(escape(line), highlight=False)


@friendly
def nbgrader_dates(
    course_dir: Annotated[
        Path, typer.Option("--course-dir", help="The nbgrader course (its gradebook.db is written).")
    ] = Path("."),
    rules_file: RulesFile = None,
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Write course.toml's due dates and the service's extensions into the nbgrader gradebook, so
    nbgrader's late penalties match the service's."""
    from jaxlings.course import deadlines as nbgrader_deadlines
    from jaxlings.grading import rules
    from jaxlings.service import deadlines

    settings = settings_from(data_dir=data_dir, database_url=database_url)
    path = rules_file or settings.rules_path
    if not path.exists():
        raise ValueError(f"no rules file {path} (write one: docs/service.md, 'Deadlines and late work')")
    course = rules.load(path, deadlines.course_topics(settings))
    gradebook = course_dir.resolve() / "gradebook.db"
    for line in nbgrader_deadlines.write_due_dates(f"sqlite:///{gradebook}", course, deadlines.by_login(settings)):
        console.print(escape(line), highlight=False)


@friendly
def gradescope(
    out: Annotated[Path, typer.Option(help="The autograder zip to write.")] = Path("jaxlings-gradescope.zip"),
    topics: Annotated[list[str] | None, typer.Option("--topics", "-t", help="Topics to grade (default: all).")] = None,
) -> None:
    """Write a Gradescope autograder zip (setup.sh, run_autograder) that runs the same engine."""
    from jaxlings.service import gradescope as export

    path = export.write_autograder(out, topics or [])
    console.print(f"wrote {path}; upload it as the assignment's autograder on Gradescope", highlight=False)


def register(app: typer.Typer, student: bool = False) -> None:
    """Add the service's commands to the `grade` app. In the `student` package, the instructors'
    (serve, worker, course, export) still work but are left out of `grade --help`."""
    for fn in (login, submit, submissions, result, pseudonym):
        app.command(fn.__name__)(fn)
    for fn in (serve, worker):
        app.command(fn.__name__, hidden=student)(fn)
    course_app.command("add-students")(add_students)
    course_app.command("add-student")(add_student)
    course_app.command("drop")(drop)
    course_app.command("roster")(roster)
    course_app.command("export")(export)
    course_app.command("add-instructor")(add_instructor)
    course_app.command("rotate-token")(rotate_token)
    course_app.command("revoke")(revoke)
    course_app.command("extend")(extend)
    course_app.command("nbgrader-dates")(nbgrader_dates)
    export_app.command("gradescope")(gradescope)
    app.add_typer(course_app, name="course", hidden=student)
    app.add_typer(export_app, name="export", hidden=student)

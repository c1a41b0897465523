"""The `grade` command: what students, instructors and graders type.

    grade init [DIR]                           lay out a workspace: exercises/, lessons/, notebooks/
    grade check [TOPIC | TOPIC.EXERCISE ...]   public checks on ./exercises (fixed cases, offline)
    grade watch [TOPIC ...]                    re-check a topic each time its file is saved
    grade hint [TOPIC.]EXERCISE [--level N]    the next hint (a nudge, the API, the shape)
    grade list                                 topics, exercises, points, what passed locally
    grade take-notebook TOPIC                  copy the answers written in notebooks/TOPIC.ipynb into exercises/
  the grader's side only (the repo, not the student package):
    grade grade SUBMISSION [--json FILE] [--leaderboard]   hidden checks on a submission (dir or .zip)
    grade build [TOPIC...] [--check]           regenerate stubs, notebooks, public expectations

Public checks replay the public expectations (`jaxlings.public`): no reference solution runs.
Errors print one line and exit with status 2; `grade grade` exits 0 whatever the score.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from jaxlings import __version__
from jaxlings import public as public_data
from jaxlings.grading import device, draws, engine, paths, topics
from jaxlings.grading.results import Result, TestResult
from jaxlings.grading.session import GraderError
from jaxlings.grading.spares import Spares
from jaxlings.grading.spec import Topic
from jaxlings.grading.submission import SubmissionError, open_submission
from jaxlings.isolation import bwrap_available, bwrap_problem
from jaxlings.student import hints, pairing, report, workspace

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="jaxlings: learn JAX by filling in functions; graded for correctness, jit and speed.",
)
console = Console()
USER_ERRORS = (
    GraderError,
    SubmissionError,
    FileNotFoundError,
    ValueError,
    KeyError,
    public_data.PublicDataError,
    workspace.WorkspaceError,
    device.DeviceError,
)
DEVICE_HELP = (
    "Where the student's functions run: auto (the machine's accelerator, a TPU or GPU, where it has one; "
    "else the CPU), cpu (the CPU, the accelerator left alone), or exclusive (the CPU played as an accelerator, "
    "one process on it at a time: for tests). Default: JAXLINGS_DEVICE, else auto."
)


P = ParamSpec("P")
R = TypeVar("R")


def friendly(fn: Callable[P, R]) -> Callable[P, R]:
    """Turn the errors a user can cause into one red line and exit status 2."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except USER_ERRORS as exc:
            message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
            console.print(f"[red]error:[/] {message}", highlight=False)
            raise typer.Exit(2) from None

    return wrapper


def _progress(status) -> Callable[[TestResult], None]:
    return lambda test: status.update(f"grading… {report.progress_line(test)}")


def _run(
    submission: Path,
    selected: list[str] | None,
    *,
    public: bool,
    seed: int | None = None,
    isolate: bool = False,
    jobs: int | None = None,
    spares: Spares | None = None,
    device_setting: str | None = None,
) -> Result:
    """Public runs replay the public expectations; hidden runs grade against the live reference.
    `device_setting` says where the student's functions run (`DEVICE_HELP`, `jaxlings.grading.device`)."""
    specs = topics.resolve(selected, public=public)
    jobs = jobs or engine.default_jobs()
    on = device.resolve(device_setting)
    with console.status("starting workers…") as status:
        if public:
            return engine.grade(
                submission,
                specs,
                public=True,
                isolate=isolate,
                on_test=_progress(status),
                answers=public_data.replay,
                jobs=jobs,
                spares=None if on is not None else spares,
                device=on,
            )
        return engine.grade(
            submission,
            specs,
            reference_dir=paths.solutions_dir(),
            public=False,
            seed=seed,
            isolate=isolate,
            on_test=_progress(status),
            jobs=jobs,
            device=on,
        )


def tell_pairing(directory: Path, names: list[str] | None) -> None:
    """Say where a topic's notebook holds answers its file in `directory` does not
    (`jaxlings.student.pairing`): the commands read the file."""
    for line in pairing.notices(directory, names):
        console.print(f"[yellow]note:[/] {escape(line)}", highlight=False)


def _failed(result: Result) -> bool:
    """Whether some test that can be judged here did not pass (pending ones wait for the grader)."""
    return any(t.status != "passed" and not t.pending for t in result.tests)


@app.command()
@friendly
def check(
    names: list[str] = typer.Argument(
        None, metavar="[TOPIC|TOPIC.EXERCISE]...", help="What to check (default: every topic)."
    ),
    directory: Path = typer.Option(Path("exercises"), "--dir", help="Your exercises folder."),
    sandbox: bool = typer.Option(False, help="Run your code under bubblewrap, as the grading server does."),
    json_path: Path | None = typer.Option(None, "--json", help="Also write the result (results.json format) here."),
    device_setting: str | None = typer.Option(None, "--device", help=DEVICE_HELP),
) -> None:
    """Run the public checks on your exercises: the same checks the grader runs, on fixed cases.

    Exits 1 until every check that can be judged here passes (speed is judged on submission).
    """
    if not directory.is_dir():
        raise FileNotFoundError(f"no exercises folder at {directory.resolve()} (run `grade init` first, or use --dir)")
    tell_pairing(directory, names)
    result = _run(directory, names, public=True, isolate=sandbox, device_setting=device_setting)
    report.result_tables(result, console)
    report.save_last_check(Path.cwd(), result)
    known = report.load_last_check(Path.cwd())
    checked = topics.resolve(names, public=True)
    console.print(report.next_line(_course(), known, first=checked), highlight=False)
    if json_path:
        result.write(json_path)
    if _failed(result):
        raise typer.Exit(1)


@friendly
def grade(
    submission: Path = typer.Argument(..., help="A folder shaped like exercises/, or a .zip of one."),
    topic: list[str] = typer.Option(None, "--topics", "-t", help="Topics (or TOPIC.EXERCISE) to grade; default all."),
    json_path: Path | None = typer.Option(None, "--json", help="Write Gradescope's results.json here."),
    seed: str | None = typer.Option(
        None,
        help="The run's secret seed, decimal or 0x-hex (default: 128 fresh "
        "random bits, recorded in the result's extra_data.seed); a "
        "recorded seed reproduces that run's inputs.",
    ),
    sandbox: str = typer.Option(
        "on",
        help="on (the default: student code under bubblewrap, refused without it), "
        "off (no sandbox: recorded in the result), or auto (on when available).",
    ),
    jobs: int | None = typer.Option(
        None,
        min=1,
        help="Topics graded at a time (default: JAXLINGS_JOBS, else one "
        "per core, at most 4; timed checks stay fair); spare slots "
        "grade a topic in parts.",
    ),
    leaderboard: bool = typer.Option(
        False,
        "--leaderboard",
        help="With --json: add Gradescope's `leaderboard` (each measured speed ratio, lower first).",
    ),
    device_setting: str | None = typer.Option(None, "--device", help=DEVICE_HELP),
) -> None:
    """Run the hidden checks on a submission and print (and optionally write) the result."""
    if sandbox not in ("auto", "on", "off"):
        raise ValueError("--sandbox takes on, off or auto")
    isolate = sandbox == "on" or (sandbox == "auto" and bwrap_available())
    with open_submission(submission) as folder:  # a bad submission is named before a missing sandbox
        if sandbox == "on" and not bwrap_available():
            raise GraderError(
                f"{bwrap_problem()}; to grade without it, say so with --sandbox off (the result records it)"
            )
        if not isolate:
            console.print(
                "[yellow]warning:[/] student code runs WITHOUT the sandbox (no file-system, network or "
                "process isolation); the result records it"
            )
        result = _run(
            folder,
            topic,
            public=False,
            seed=None if seed is None else draws.parse_seed(seed),
            isolate=isolate,
            jobs=jobs,
            device_setting=device_setting,
        )
    report.result_tables(result, console)
    if json_path:
        result.write(json_path, leaderboard=leaderboard)
        console.print(f"wrote {json_path}")


@app.command()
@friendly
def hint(
    name: str = typer.Argument(..., metavar="[TOPIC.]EXERCISE"),
    level: int | None = typer.Option(None, help="Show this level (1 = a nudge) instead of the next one."),
) -> None:
    """Show the next hint for one exercise (its topic may be left out where the name is unambiguous)."""
    topic_name, ex_name = _exercise_named(name)
    ex = topics.load_public(topic_name).exercise(ex_name)
    lvl, text = hints.next_hint(Path.cwd(), topic_name, ex, level)
    console.print(f"[bold]{topic_name}.{ex_name}[/] hint {lvl}/{len(ex.hints)}: {text}", highlight=False)
    if lvl < len(ex.hints):
        console.print("[dim](ask again for the next one)[/]")


def _exercise_named(name: str) -> tuple[str, str]:
    """(topic, exercise) for `TOPIC.EXERCISE`, or for a bare `EXERCISE` that one topic has; a
    topic alone, or a name no topic (or several) has, is a ValueError listing the choices."""
    topic_name, _, ex_name = name.partition(".")
    if ex_name:
        return topic_name, ex_name
    if topic_name in topics.ORDER:
        exercises = ", ".join(f"{topic_name}.{e.name}" for e in topics.load_public(topic_name).exercises)
        raise ValueError(f"name an exercise: {exercises}")
    found = hints.topics_with(name, _course())
    if len(found) == 1:
        return found[0], name
    if found:
        raise ValueError(f"{name!r} is in several topics: {', '.join(f'{t}.{name}' for t in found)}")
    raise ValueError(f"no topic has an exercise {name!r} (`grade list` shows them all)")


def _course() -> list[Topic]:
    """Every topic's public spec, in course order."""
    return [topics.load_public(name) for name in topics.ORDER]


@app.command("list")
@friendly
def list_() -> None:
    """List the topics and exercises in course order, with what passed in your last checks."""
    known = report.load_last_check(Path.cwd())
    specs = _course()
    report.course_list(specs, known, console, title=f"jaxlings {__version__}")
    tell_pairing(paths.state_dir(Path.cwd()).parent / "exercises", None)
    console.print("\n" + report.next_line(specs, known), highlight=False)


@friendly
def build_(
    names: list[str] = typer.Argument(None, metavar="[TOPIC]...", help="Only these topics (default: all)."),
    check: bool = typer.Option(False, "--check", help="Write nothing; fail if a generated file is out of date."),
) -> None:
    """Regenerate the stubs (exercises/), the nbgrader notebooks (course/source/) and the public
    expectations (jaxlings/public/) from the solutions and specs."""
    from jaxlings.course import build as builder

    try:
        built = builder.build(
            paths.solutions_dir(),
            paths.exercises_dir(),
            paths.course_dir(),
            check=check,
            public_dir=public_data.DIR,
            names=names or (),
            on_record=lambda t: console.print(f"recording the public expectations of {t}…"),
        )
    except builder.BuildError as exc:
        raise ValueError(str(exc)) from None
    stale = [b.path for b in built if b.changed]
    for b in built:
        console.print(
            f"{'[yellow]out of date[/]' if check and b.changed else ('[green]wrote[/]' if b.changed else 'unchanged')} {b.path}"
        )
    if check and stale:
        raise typer.Exit(1)


@app.command()
@friendly
def watch(
    names: list[str] = typer.Argument(
        None, metavar="[TOPIC|TOPIC.EXERCISE]...", help="What to watch (default: your first unfinished topic)."
    ),
    directory: Path = typer.Option(Path("exercises"), "--dir", help="Your exercises folder."),
    interval: float = typer.Option(0.2, help="Seconds between looks at the files (a look is one stat of each file)."),
) -> None:
    """Check a topic each time you save its file, on one screen redrawn in place (re-checking only
    the functions you changed); keys: h a hint, n the next exercise, q quit."""
    from jaxlings.student import watch as watching

    if not directory.is_dir():
        raise FileNotFoundError(f"no exercises folder at {directory.resolve()} (run `grade init` first, or use --dir)")
    tell_pairing(directory, names)
    watching.run(names, directory, interval=interval, console=console)


@app.command("take-notebook")
@friendly
def take_notebook(
    topic: str = typer.Argument(..., metavar="TOPIC", help="The topic whose notebook answers to copy."),
    directory: Path = typer.Option(Path("exercises"), "--dir", help="Your exercises folder."),
) -> None:
    """Copy the answers you wrote in notebooks/TOPIC.ipynb into exercises/TOPIC.py, the file the
    commands read (the file as it was is kept in .jaxlings/backups/ first)."""
    if topic not in topics.ORDER:
        raise ValueError(f"no topic {topic!r} (the topics: {', '.join(topics.ORDER)})")
    if not (directory / f"{topic}.py").is_file():
        raise FileNotFoundError(f"no {directory / f'{topic}.py'} (run `grade init` first, or use --dir)")
    names, backup = pairing.take(directory, topic)
    if not names:
        console.print(f"notebooks/{topic}.ipynb answers nothing that {directory.name}/{topic}.py does not hold")
        return
    console.print(
        f"copied {', '.join(names)} from notebooks/{topic}.ipynb into {directory.name}/{topic}.py "
        f"(it was kept as {backup}); now [bold]grade check {topic}[/]",
        highlight=False,
    )


@app.command()
@friendly
def init(
    directory: Path = typer.Argument(Path("jaxlings"), help="Where to lay out the workspace (made if missing)."),
) -> None:
    """Lay out your workspace: exercises/, lessons/, notebooks/, a README. Never overwrites your work."""
    made = workspace.init(directory)
    for path in made.created:
        console.print(f"[green]created[/] {path}", highlight=False)
    if made.kept:
        console.print(f"kept {len(made.kept)} file(s) that were already there (your work is never overwritten)")
    console.print(
        f"\nNext: [bold]cd {directory}[/], read lessons/{topics.ORDER[0]}.md, edit "
        f"exercises/{topics.ORDER[0]}.py, then [bold]grade check {topics.ORDER[0]}[/] "
        f"(stuck? [bold]grade hint {topics.ORDER[0]}.<function>[/])",
        highlight=False,
    )


if paths.has_grader():  # the grader's commands: not in the student package
    app.command("grade")(grade)
    app.command("build")(build_)


from jaxlings.cli.service import register as _register_service  # noqa: E402 - after the grader's own commands

_register_service(app, student=not paths.has_grader())


def main() -> None:
    app()

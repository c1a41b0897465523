"""Rendering results for people: rich tables in the terminal, and the last-check memory.

What is shown comes from `jaxlings.student.progress` (one cause once, the same counts everywhere);
this module only draws it. `grade check` keeps its last verdicts in `.jaxlings/last_check.json`
(test name -> `progress.status`) so that `grade list` can show progress without running anything.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from jaxlings.grading.paths import state_dir
from jaxlings.grading.results import Result, TestResult, by_topic
from jaxlings.grading.spec import Topic
from jaxlings.student import progress

COLOURS = {"pass": "green", "fail": "red", "partial": "yellow", "pending": "blue", "advice": "magenta", "waits": "dim"}
MARKS: dict[str, str] = {kind: f"[{COLOURS[kind]}]{symbol}[/]" for kind, symbol in progress.SYMBOLS.items()}
"""How each `progress.Kind` is marked in the terminal (`progress.SYMBOLS`, coloured)."""


def result_tables(result: Result, console: Console) -> None:
    """Per topic its title and rows (`progress.rows`: one cause once), then the total."""
    for topic, tests in by_topic(result.tests).items():
        got, total = sum(t.score for t in tests), sum(t.max_score for t in tests)
        title = f"[bold]{topic}[/]: {got:g} / {total:g}  ({progress.describe(progress.tally(tests))})"
        rows = progress.rows(tests)
        if all(r.exercise is None for r in rows):  # one cause for the whole topic: said once, plainly
            console.print(title, highlight=False)
            for r in rows:
                console.print(f"{MARKS[r.kind]} {escape(r.message)}", highlight=False)
            continue
        table = Table(title=title, title_justify="left", expand=True, highlight=False)
        table.add_column("exercise", no_wrap=True)
        table.add_column("check", no_wrap=True)
        table.add_column("", no_wrap=True)
        table.add_column("points", justify="right", no_wrap=True)
        table.add_column("message", ratio=1, overflow="fold")  # a link too long for the column folds, never cut
        previous = None
        for r in rows:
            style = "dim" if r.kind == "waits" else None
            table.add_row(
                r.exercise if r.exercise != previous else "",
                r.check or "all",
                MARKS[r.kind],
                r.points,
                escape(r.message),
                style=style,
            )
            previous = r.exercise
        console.print(table)
    waiting = sum(t.max_score for t in result.tests if t.pending)
    later = f", {waiting:g} judged on submission" if waiting else ""
    console.print(
        f"[bold]Total: {result.score:g} / {result.max_score:g}[/]{later}  ({result.execution_time:.1f} s)",
        highlight=False,
    )


LIST_WIDTH = 100
"""`grade list` fits this many columns (fewer where the terminal is narrower)."""


def course_list(specs: list[Topic], known: Mapping[str, str], console: Console, title: str) -> None:
    """`grade list`: the course's total, then one compact block per topic: its name, title and
    counts on one line, its exercises (marked by `exercise_mark`) in columns below."""
    width = min(console.width, LIST_WIDTH)
    total = progress.course_counts(specs, known)
    console.print(f"[bold]{escape(title)}[/]: {progress.describe(total)}", highlight=False)
    cell = 4 + max(len(ex.name) for spec in specs for ex in spec.exercises)
    per_line = max(1, (width - 3) // cell)
    for spec in specs:
        c = progress.counts(spec, known)
        right = f"{c.passed}/{c.total} pass" + (f", {c.failed} to fix" if c.failed else "")
        right += f", {c.pending} on submission" if c.pending else ""
        about = _short_title(spec)
        room = width - len(spec.name) - len(right) - 7
        about = about if len(about) <= room else about[: max(0, room - 1)] + "…"
        gap = " " * max(1, width - 5 - len(spec.name) - len(about) - len(right))
        console.print(f"\n{_topic_mark(c)} [bold]{spec.name}[/]  [dim]{escape(about)}[/]{gap}{right}", highlight=False)
        cells = [
            f"{_topic_mark(progress.counts(spec, known, ex.name))} {ex.name.ljust(cell - 2)}" for ex in spec.exercises
        ]
        for i in range(0, len(cells), per_line):
            console.print("   " + "".join(cells[i : i + per_line]).rstrip(), highlight=False)


def _short_title(spec: Topic) -> str:
    """The topic's title without a repeat of its name ("jit basics: tracing, ..." -> "tracing, ...")."""
    spoken = spec.name.replace("_", " ").lower() + ":"
    title = spec.title.strip()
    return title[len(spoken) :].strip() if title.lower().startswith(spoken) else title


def _topic_mark(c: progress.Counts) -> str:
    """One character: ✓ finished (checks judged on submission allowed), ✗ something to fix,
    ~ partly checked, · not checked yet."""
    if c.finished:
        return "[green]✓[/]"
    if c.failed:
        return "[red]✗[/]"
    return "[yellow]~[/]" if c.started else "[dim]·[/]"


def next_line(specs: Iterable[Topic], known: Mapping[str, str], first: Iterable[Topic] = ()) -> str:
    """ "Next: ..." naming the first unfinished exercise (`progress.next_unfinished`): of `first`
    (the topics just checked) if one is unfinished there, else of the course (`specs`)."""
    found = progress.next_unfinished(first, known) or progress.next_unfinished(specs, known)
    if found is None:
        return "[green]Every exercise passes here.[/] Next: [bold]grade submit[/] to be graded on the grading machine."
    topic, exercise = found
    return f"Next: [bold]{topic}.{exercise}[/] in exercises/{topic}.py, then [bold]grade check {topic}[/]"


def save_last_check(workdir: Path, result: Result | Iterable[TestResult]) -> None:
    """Merge these verdicts into the remembered ones (per test name, its `progress.status`)."""
    tests = result.tests if isinstance(result, Result) else list(result)
    path = state_dir(workdir) / "last_check.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    known = load_last_check(workdir)
    known.update(progress.statuses(tests))
    path.write_text(json.dumps(known, indent=1, sort_keys=True))


def load_last_check(workdir: Path) -> dict[str, str]:
    """Test name -> `progress.status`, from the last `grade check` runs here (an older memory's
    true/false read as passed/failed)."""
    try:
        raw = json.loads((state_dir(workdir) / "last_check.json").read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(raw, dict):
        return {}
    known: dict[str, str] = {}
    for name, value in raw.items():
        if isinstance(value, bool):
            known[str(name)] = "passed" if value else "failed"
        elif value in progress.STATUSES:
            known[str(name)] = value
    return known


def progress_line(test: TestResult) -> str:
    """A one-line live progress note for a finished test."""
    kind = progress.kind(test)
    mark = progress.SYMBOLS["fail" if kind == "partial" else kind]
    return f"{mark} {test.name} {progress.points_text(test) or '0 points'}"

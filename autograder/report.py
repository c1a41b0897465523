"""Rendering results for people: rich tables in the terminal, and the last-check memory.

`grade check` keeps its last verdicts in `.jaxlings/last_check.json` so that `grade list` can
show progress without running anything.
"""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from autograder.paths import state_dir
from autograder.results import Result, TestResult, by_topic


def result_tables(result: Result, console: Console) -> None:
    """One table per topic (exercise x check), then the total."""
    for topic, tests in by_topic(result.tests).items():
        got, total = sum(t.score for t in tests), sum(t.max_score for t in tests)
        table = Table(title=f"{topic}: {got:g} / {total:g}", title_justify="left", expand=True)
        table.add_column("exercise", no_wrap=True)
        table.add_column("check", no_wrap=True)
        table.add_column("", no_wrap=True)
        table.add_column("points", justify="right", no_wrap=True)
        table.add_column("message", ratio=1)
        previous = None
        for t in tests:
            table.add_row(
                t.exercise if t.exercise != previous else "",
                t.check,
                _mark(t),
                f"–/{t.max_score:g}" if t.pending else f"{t.score:g}/{t.max_score:g}",
                escape(t.output),
            )
            previous = t.exercise
        console.print(table)
    waiting = sum(t.max_score for t in result.tests if t.pending)
    later = f", {waiting:g} judged on submission" if waiting else ""
    console.print(f"[bold]Total: {result.score:g} / {result.max_score:g}[/]{later}  ({result.execution_time:.1f} s)")


def _mark(test: TestResult) -> str:
    """✓ passed, ~ partial, ✗ failed, … left for the grading machine."""
    if test.pending:
        return "[blue]…[/]"
    if test.status == "passed":
        return "[green]✓[/]"
    return "[yellow]~[/]" if test.score > 0 else "[red]✗[/]"


def save_last_check(workdir: Path, result: Result) -> None:
    """Merge this check's verdicts into the remembered ones (per test name)."""
    path = state_dir(workdir) / "last_check.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    known = load_last_check(workdir)
    known.update({t.name: t.status == "passed" for t in result.tests})
    path.write_text(json.dumps(known, indent=1, sort_keys=True))


def load_last_check(workdir: Path) -> dict[str, bool]:
    """Test name -> passed, from the last `grade check` runs here."""
    try:
        return json.loads((state_dir(workdir) / "last_check.json").read_text())
    except (OSError, ValueError):
        return {}


def progress_line(test: TestResult) -> str:
    """A one-line live progress note for a finished test."""
    mark = "…" if test.pending else ("✓" if test.status == "passed" else "✗")
    return f"{mark} {test.name} {test.score:g}/{test.max_score:g}"

"""What the pages show, worked out before a template sees it: a result's verdicts grouped by topic
and exercise, a submission's topic files highlighted (Pygments) with an anchor per line, the diff
between two submissions' files, and a topic's students x exercises table.

Everything here is computed from stored rows (the `Upload` zip, `Submission.result_json`) and the
course's outline; scores come from `scores`, the one definition of them. Markup made here is
Pygments' own (which escapes the source) or built from escaped parts only.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import io
import re
import zipfile
from dataclasses import dataclass, field
from functools import cache, partial
from typing import Any

from markupsafe import Markup, escape
from pygments import highlight  # type: ignore[import-untyped]
from pygments.formatters import HtmlFormatter  # type: ignore[import-untyped]
from pygments.lexers import DiffLexer, PythonLexer  # type: ignore[import-untyped]
from sqlalchemy.orm import Session

from jaxlings.grading.results import TestResult
from jaxlings.grading.source import parse as read
from jaxlings.service import plots, scores
from jaxlings.service.db import Submission, Upload
from jaxlings.service.kept import Kept
from jaxlings.service.storage import ZIP_ERRORS
from jaxlings.student import progress

MAX_SOURCE = 512 << 10  # bytes of one topic file shown (the upload limit bounds it already)
MAX_HIGHLIGHT = 192 << 10
"""Bytes of a file highlighted (Pygments); a larger one is shown as plain numbered lines. A
topic file as written is 10-40 KiB; the bound keeps a view's cost a student controls small."""
MAX_DIFF_LINES = 6000
"""Lines of either file compared on the diff page; past it the page says the files are too
large to compare there (difflib's matching grows faster than linearly with the lines)."""
RENDERED = 128
"""Renders kept (highlighted files, diffs), by their content's digest: a page viewed again
costs a lookup."""
LABELS = {
    "pass": "passed",
    "fail": "failed",
    "partial": "partly",
    "pending": "pending",
    "advice": "advice",
    "waits": "waits",
}
"""The words each verdict kind (`progress.kind`) is shown with, beside its mark (`progress.SYMBOLS`)."""


@dataclass(frozen=True)
class Check:
    """One check's verdict as a page shows it."""

    name: str  # the full test name, topic.exercise:check
    check: str  # its short name: "correct", "jit", "speed"
    kind: str  # progress.kind: pass, fail, partial, pending, advice, waits
    points: str  # "2/2", "–/2", "" for a 0-point check
    message: str

    @property
    def label(self) -> str:
        return f"{progress.SYMBOLS.get(self.kind, '?')} {LABELS.get(self.kind, self.kind)}"


@dataclass
class Exercise:
    """One exercise of a topic: its subtotal (`scores.ExerciseScore`), its checks, its function's line."""

    name: str
    score: scores.ExerciseScore
    checks: list[Check] = field(default_factory=list)
    line: int | None = None

    @property
    def full(self) -> bool:
        return not self.score.failed and not self.score.pending


@dataclass
class Topic:
    """One topic of a submission: its total, its exercises, its highlighted file (if stored)."""

    name: str
    score: float | None
    max_score: float | None
    exercises: list[Exercise] = field(default_factory=list)
    code: Markup | None = None


def _test(raw: dict[str, Any]) -> TestResult:
    """A results.json test as a TestResult, tolerating missing fields (hand-written results)."""
    name = str(raw.get("name", ""))
    where, _, check = name.partition(":")
    topic, _, exercise = where.partition(".")
    return TestResult(
        name=name,
        score=float(raw.get("score") or 0),
        max_score=float(raw.get("max_score") or 0),
        status=str(raw.get("status", "")),
        output=str(raw.get("output", "")),
        visibility=str(raw.get("visibility", "")),
        tags=[topic, exercise, check],
        extra_data=dict(raw.get("extra_data") or {}),
    )


def grouped(sub: Submission, files: dict[str, str]) -> list[Topic]:
    """The submission's topics, in its order: per exercise its subtotal and checks, and the topic
    file highlighted with the failing exercises' functions marked."""
    doc = _json(sub.result_json)
    totals = scores.topic_results(sub)
    tests = [_test(t) for t in doc.get("tests", []) if isinstance(t, dict)]
    names = list(dict.fromkeys([*sub.topic_list, *totals, *(t.tags[0] for t in tests if t.tags[0])]))
    topics = []
    for name in names:
        total = totals.get(name)
        lines = function_lines(files.get(name, ""))
        exercises: dict[str, Exercise] = {}
        for test in (t for t in tests if t.tags[0] == name and t.tags[1] and t.tags[2]):
            ex = test.tags[1]
            if ex not in exercises:
                summary = total.exercises.get(ex) if total else None
                exercises[ex] = Exercise(ex, summary or scores.ExerciseScore(0.0, 0.0), line=lines.get(ex))
            exercises[ex].checks.append(
                Check(test.name, test.tags[2], progress.kind(test), progress.points_text(test), test.output)
            )
        marked = [e.line for e in exercises.values() if e.line and not e.full]
        code = highlighted(name, files[name], marked) if name in files else None
        topics.append(
            Topic(
                name,
                total.score if total else None,
                total.max_score if total else None,
                list(exercises.values()),
                code,
            )
        )
    return topics


def _json(text: str | None) -> dict[str, Any]:
    import json

    if not text:
        return {}
    doc = json.loads(text)
    return doc if isinstance(doc, dict) else {}


def topic_files(session: Session, sub: Submission) -> dict[str, str]:
    """topic -> the source of its file in the submission's stored (canonical) zip; {} when the
    upload is missing or unreadable (the page then shows the verdicts without code)."""
    upload = session.get(Upload, sub.digest)
    if upload is None:
        return {}
    files: dict[str, str] = {}
    try:
        with zipfile.ZipFile(io.BytesIO(upload.data)) as archive:
            for member in archive.infolist():
                topic = member.filename.rsplit("/", 1)[-1].removesuffix(".py")
                if member.filename.endswith(".py") and member.file_size <= MAX_SOURCE:
                    files[topic] = archive.read(member).decode("utf-8", errors="replace")
    except ZIP_ERRORS:
        return {}
    return files


def function_lines(source: str) -> dict[str, int]:
    """function name -> the line of its `def`, for a file's top-level functions (a file that
    does not parse is searched line by line instead)."""
    tree = read(source)  # the grader's reader: never raises (a sum of 3,000 terms overflows ast's recursion)
    if tree is None:
        found: dict[str, int] = {}
        for number, line in enumerate(source.splitlines(), 1):
            match = re.match(r"(?:async\s+)?def\s+([A-Za-z_]\w*)", line)
            if match:
                found.setdefault(match.group(1), number)
        return found
    return {node.name: node.lineno for node in tree.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)}


def anchor(topic: str, line: int) -> str:
    """The id of a topic file's line on the submission page."""
    return f"src-{topic}-{line}"


def highlighted(topic: str, source: str, marked: list[int]) -> Markup:
    """A topic file highlighted, numbered, each line a span with its id (`anchor`), `marked` lines
    lit; past `MAX_HIGHLIGHT` bytes, plain numbered lines with the same ids. Kept by content."""
    key = ("source", topic, _digest(source), tuple(marked))
    return RENDERS.get(key, partial(_render_source, topic, source, tuple(marked)))


def _digest(text: str | None) -> str:
    return "" if text is None else hashlib.sha256(text.encode("utf-8", errors="replace")).hexdigest()


RENDERS: Kept[Any] = Kept(RENDERED)
"""Highlighted files and diffs, by their content's digest (`kept.Kept`)."""


def _render_source(topic: str, source: str, marked: tuple[int, ...]) -> Markup:
    if len(source) > MAX_HIGHLIGHT:
        return _plain(topic, source, marked)
    formatter = HtmlFormatter(
        linenos="table",
        linespans=f"src-{topic}",
        lineanchors=f"line-{topic}",
        anchorlinenos=True,
        hl_lines=marked,
        cssclass="code",
        wrapcode=True,
    )
    return Markup(highlight(source, PythonLexer(), formatter))  # Pygments escapes the source


def _plain(topic: str, source: str, marked: tuple[int, ...]) -> Markup:
    """A file too large to highlight: its lines escaped, numbered, each a span with its `anchor`."""
    lit = set(marked)
    rows = [
        Markup('<span id="{}"{}>{:>5}  {}</span>').format(
            anchor(topic, number), Markup(' class="hll"') if number in lit else "", number, line
        )
        for number, line in enumerate(source.splitlines(), 1)
    ]
    note = escape(f"{len(source) >> 10} KiB: too large to highlight here; shown as plain text")
    return Markup('<p class="too-large">{}</p><div class="code"><pre>{}</pre></div>').format(
        note, Markup("\n").join(rows)
    )


@cache
def code_css() -> Markup:
    """Pygments' rules for `.code` (highlighted files and diffs), for the page's inline style block
    (the CSP allows inline styles, no other file)."""
    return Markup(HtmlFormatter(cssclass="code").get_style_defs(".code"))  # our constant


@dataclass(frozen=True)
class FileDiff:
    """One topic file compared between two submissions."""

    topic: str
    state: str  # "changed", "same", "added", "removed", "too large"
    html: Markup | None
    added: int = 0
    removed: int = 0
    lines: tuple[int, int] = (0, 0)  # each side's lines, where too large to compare


def diff(older: dict[str, str], newer: dict[str, str], older_name: str, newer_name: str) -> list[FileDiff]:
    """Per topic file in either submission, a unified diff (highlighted by Pygments' diff lexer);
    "too large" past `MAX_DIFF_LINES` lines on either side. Each file's diff is kept by content."""
    out = []
    for topic in sorted(set(older) | set(newer)):
        a, b = older.get(topic), newer.get(topic)
        if a == b:
            out.append(FileDiff(topic, "same", None))
            continue
        names = f"{older_name}/{topic}.py", f"{newer_name}/{topic}.py"
        out.append(
            RENDERS.get(("diff", topic, _digest(a), _digest(b), names), partial(_file_diff, topic, a, b, *names))
        )
    return out


def _file_diff(topic: str, a: str | None, b: str | None, a_name: str, b_name: str) -> FileDiff:
    """One file's `diff` (see there)."""
    sizes = len((a or "").splitlines()), len((b or "").splitlines())
    if max(sizes) > MAX_DIFF_LINES:
        return FileDiff(topic, "too large", None, lines=sizes)
    lines = list(
        difflib.unified_diff(
            (a or "").splitlines(keepends=True), (b or "").splitlines(keepends=True), a_name, b_name, n=3
        )
    )
    text = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    added = sum(1 for line in lines[2:] if line.startswith("+"))
    removed = sum(1 for line in lines[2:] if line.startswith("-"))
    state = "added" if a is None else "removed" if b is None else "changed"
    html = Markup(highlight(text, DiffLexer(), HtmlFormatter(cssclass="code diff")))
    return FileDiff(topic, state, html, added, removed)


@dataclass(frozen=True)
class Cell:
    """One student's exercise on the topic page: its counted score and the checks it failed."""

    score: scores.ExerciseScore
    submission_id: int


@dataclass
class TopicRow:
    """One student's line on the topic page."""

    login: str
    name: str
    total: float | None
    submission_id: int | None
    cells: dict[str, Cell] = field(default_factory=dict)


@dataclass(frozen=True)
class PassRate:
    """An exercise's column footer: how many students have full marks on it, of those who
    submitted the topic (`plots.pass_rates`, the gradebook's figure: one definition)."""

    passed: int
    of: int

    @property
    def percent(self) -> int:
        return round(100 * self.passed / self.of) if self.of else 0


def topic_table(
    rows: list[scores.Standing], topic: str, exercises: list[str]
) -> tuple[list[TopicRow], dict[str, PassRate]]:
    """Students x exercises of one topic (the counted submission's per-exercise scores, `scores`)
    and the pass rate per exercise (`plots.pass_rates`: full marks, of the students who submitted
    the topic, as the gradebook counts them)."""
    table = []
    for row in rows:
        counted = row.topics.get(topic)
        line = TopicRow(
            row.student.login,
            row.student.name,
            counted.score if counted else None,
            counted.submission_id if counted else None,
        )
        if counted:
            line.cells = {e: Cell(s, counted.submission_id) for e, s in counted.exercises.items()}
        table.append(line)
    outline = scores.Outline({topic: dict.fromkeys(exercises, 0.0)})
    found = {r.exercise: r for r in plots.pass_rates(rows, outline).get(topic, [])}
    rates = {e: PassRate(found[e].full, found[e].students) if e in found else PassRate(0, 0) for e in exercises}
    return table, rates

"""The gradebook as files other tools import: our CSV, Canvas's gradebook import, nbgrader's grades.csv.

Every export reads the counted scores of `scores` (which score counts, maxima from the course's
outline, dropped students left out) and only arranges them; none decides a score of its own.

- `gradebook_csv`: one row per student. login, name, email; per topic `TOPIC` (the counted
  score), `TOPIC max`, `TOPIC raw` (that submission's score before any late penalty),
  `TOPIC late` (the fraction the late policy took off: 0 on time, 0.25), `TOPIC submitted_at`
  (ISO 8601 UTC time of the submission that counts; empty when none does) and `TOPIC.EXERCISE`
  (that submission's points per exercise, which add up to `TOPIC raw`); then `total`,
  `total max`, `submissions`. Maxima are columns repeated on every
  row, not a second header row, so that `csv.DictReader`, pandas and a spreadsheet's sort and
  filter read every row as a student (and `=B2/C2` is a percentage).
- `canvas_csv`: Canvas's gradebook import file (Grades > Import): `Student`, `ID`,
  `SIS User ID`, `SIS Login ID`, `Section`, then one column per topic named `TOPIC (ASSIGNMENT ID)`
  when the Canvas assignment id is known, else `TOPIC` (Canvas then creates a new assignment),
  a first row `Points Possible` holding the maxima, then one row per student. The ids come from a
  `topic,assignment_id` file or from Canvas's own gradebook export (`canvas_ids_file`), which also
  gives each student's Canvas `ID`, `SIS User ID` and `Section` (matched by `SIS Login ID`, our
  login).
- `nbgrader_csv`: the columns and row order of `nbgrader export` (its CsvExportPlugin): one row
  per topic (nbgrader's assignment) per student.

Text cells (logins, names, emails) that a spreadsheet would run as formulas are neutralised in
every format (a leading '); scores are written as numbers.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from jaxlings.grading.rules import NO_RULES, CourseRules
from jaxlings.grading.rules import load as load_rules
from jaxlings.service.config import Settings
from jaxlings.service.scores import Outline, Standing

FORMATS = ("csv", "canvas", "nbgrader")
CANVAS_IDENTITY = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
POINTS_POSSIBLE = "Points Possible"
NBGRADER_COLUMNS = [
    "assignment",
    "duedate",
    "timestamp",
    "student_id",
    "last_name",
    "first_name",
    "email",
    "raw_score",
    "late_submission_penalty",
    "score",
    "max_score",
]

# A cell starting with one of these is a formula to Excel, LibreOffice or Sheets (OWASP "CSV Injection",
# ASVS 1.2.10; the full-width forms too): a text cell that starts with one gets a leading single quote.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n", "\0", "\uff1d", "\uff0b", "\uff0d", "\uff20")
CANVAS_ID = re.compile(r"[0-9]{1,20}")


def text(value: str) -> str:
    """A text cell a spreadsheet shows as text: one that would start a formula gets a leading '.

    (Hand-written: defusedcsv, the one library for it, leaves tab and CR and rewrites '|'.)
    """
    return "'" + value if value.startswith(FORMULA_STARTS) else value


def number(value: float) -> str:
    """A score as spreadsheets read it: 12, 12.5 (no trailing .0, no exponent for course-sized numbers)."""
    return f"{value:g}"


def utc(when: dt.datetime | None) -> str:
    """A stored (naive UTC) time as ISO 8601 UTC, `2026-12-01T09:30:00Z`; '' for none."""
    return when.replace(microsecond=0).isoformat() + "Z" if when else ""


def _write(header: list[str], rows: Iterable[list[str]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()


def gradebook_csv(rows: Sequence[Standing], course: Outline) -> str:
    """Our gradebook CSV: per student their counted score, its maximum, its time and its
    exercises per topic, then the total, its maximum and how many submissions they made."""
    header = ["login", "name", "email"]
    for t in course.topics:
        header += [t, f"{t} max", f"{t} raw", f"{t} late", f"{t} submitted_at"]
        header += [f"{t}.{e}" for e in course.exercises[t]]
    header += ["total", "total max", "submissions"]

    def line(r: Standing) -> list[str]:
        cells = [text(r.student.login), text(r.student.name), text(r.student.email)]
        for t in course.topics:
            counted = r.topics.get(t)
            done = counted.exercises if counted else {}
            raw, off = (counted.raw_score, round(1 - counted.factor, 4)) if counted else (0.0, 0.0)
            cells += [number(r.score(t)), number(course.max_score(t)), number(raw), number(off)]
            cells += [utc(counted.submitted_at if counted else None)]
            cells += [number(done[e].score if e in done else 0.0) for e in course.exercises[t]]
        return [*cells, number(r.total(course.topics)), number(course.total), str(r.submissions)]

    return _write(header, map(line, rows))


def canvas_csv(
    rows: Sequence[Standing],
    course: Outline,
    ids: Mapping[str, str] | None = None,
    people: Mapping[str, CanvasPerson] | None = None,
) -> str:
    """Canvas's gradebook import CSV. Canvas finds each student by `SIS Login ID` (our login)
    and each assignment by the id in its column's parentheses (`ids`: topic -> Canvas assignment
    id); a topic without an id is a column Canvas offers to create as a new assignment. `people`
    (login -> what Canvas's own export says of them) fills `ID`, `SIS User ID` and `Section`."""
    ids, people = ids or {}, people or {}
    header = [*CANVAS_IDENTITY, *(f"{t} ({ids[t]})" if t in ids else t for t in course.topics)]
    possible = [POINTS_POSSIBLE, "", "", "", "", *(number(course.max_score(t)) for t in course.topics)]
    nobody = CanvasPerson("", "", "")
    students = (
        [
            text(r.student.name or r.student.login),
            text((person := people.get(r.student.login, nobody)).canvas_id),
            text(person.sis_user_id),
            text(r.student.login),
            text(person.section),
        ]
        + [number(r.score(t)) for t in course.topics]
        for r in rows
    )
    return _write(header, [possible, *students])


def nbgrader_csv(rows: Sequence[Standing], course: Outline, dues: Mapping[str, dt.datetime] | None = None) -> str:
    """nbgrader's grades.csv: one row per topic (its `assignment`) per student, in nbgrader's
    order (topics outer). `duedate` is the topic's due date from the course's rules (`dues`, UTC;
    empty without one), `raw_score` the counted submission's score before the late penalty,
    `late_submission_penalty` what the policy took off; `timestamp` is empty when no submission
    counts."""
    dues = dues or {}

    def line(topic: str, r: Standing) -> list[str]:
        counted = r.topics.get(topic)
        first, last = split_name(r.student.name)
        raw = counted.raw_score if counted else 0.0
        return [
            topic,
            utc(dues[topic].astimezone(dt.UTC).replace(tzinfo=None)) if topic in dues else "",
            utc(counted.submitted_at if counted else None),
            text(r.student.login),
            text(last),
            text(first),
            text(r.student.email),
            str(float(raw)),
            str(float(round(raw - r.score(topic), 4))),
            str(float(r.score(topic))),
            str(course.max_score(topic)),
        ]

    return _write(NBGRADER_COLUMNS, (line(t, r) for t in course.topics for r in rows))


def split_name(name: str) -> tuple[str, str]:
    """(first_name, last_name) for nbgrader's two columns from our one name: the last word is the
    last name, the words before it the first name ('Ada' is a last name alone)."""
    first, _, last = name.strip().rpartition(" ")
    return first.strip(), last


def render(
    fmt: str,
    rows: Sequence[Standing],
    course: Outline,
    canvas_ids: Mapping[str, str] | None = None,
    rules: CourseRules = NO_RULES,
    canvas_people: Mapping[str, CanvasPerson] | None = None,
) -> str:
    """The export `fmt` (one of FORMATS); a ValueError naming the formats for another. `rules`
    gives nbgrader's due dates (the scores in `rows` are already counted under them);
    `canvas_ids` and `canvas_people` Canvas's ids (`canvas_csv`)."""
    dues = {t: due for t in course.topics if (due := rules.window(t).due) is not None}
    makers: dict[str, Callable[[], str]] = {
        "csv": lambda: gradebook_csv(rows, course),
        "canvas": lambda: canvas_csv(rows, course, canvas_ids, canvas_people),
        "nbgrader": lambda: nbgrader_csv(rows, course, dues),
    }
    if fmt not in makers:
        raise ValueError(f"unknown export format; the formats are: {', '.join(FORMATS)}")
    return makers[fmt]()


def chosen_topics(
    requested: Sequence[str], topics: Sequence[str], fmt: str, rules: CourseRules, now: dt.datetime
) -> list[str]:
    """The topics an export holds, in course order: those `requested` (a ValueError naming one
    the course does not have), else every topic, but for Canvas only those already open (a
    column of zeros for a topic nobody could submit would count against every student there)."""
    unknown = [t for t in requested if t not in topics]
    if unknown:
        raise ValueError(f"{unknown[0]!r} is not a topic of the course; the topics are: {', '.join(topics)}")
    if requested:
        return [t for t in topics if t in requested]
    if fmt == "canvas":
        return [t for t in topics if (opens := rules.window(t).opens) is None or opens <= now]
    return list(topics)


def filename(fmt: str) -> str:
    """The download's file name for a format."""
    return {"canvas": "gradebook-canvas.csv", "nbgrader": "grades.csv"}.get(fmt, "gradebook.csv")


# ---------------------------------------------------------------- Canvas assignment ids


@dataclass(frozen=True)
class CanvasPerson:
    """What Canvas's gradebook export says of one student: the identities its import wants."""

    canvas_id: str
    sis_user_id: str
    section: str


@dataclass(frozen=True)
class CanvasIds:
    """Canvas's ids for an export: topic -> assignment id, and login -> `CanvasPerson` (empty
    from a `topic,assignment_id` file)."""

    assignments: dict[str, str]
    people: dict[str, CanvasPerson] = field(default_factory=dict)


CANVAS_ASSIGNMENT = re.compile(r"^(?P<name>.*\S)\s+\((?P<id>[0-9]{1,20})\)$")


def canvas_ids_file(path: Path, topics: Sequence[str]) -> CanvasIds:
    """Canvas's ids from a CSV: either `topic,assignment_id` lines, or Canvas's own gradebook
    export (Grades > Export: `Student`, `ID`, `SIS User ID`, `SIS Login ID`, `Section`, then a
    column per assignment named `NAME (ID)`), whose assignments named as topics give their ids
    and whose students give theirs, matched by `SIS Login ID` (other columns, rows and
    assignments are left alone).

    The assignment id is the number in the assignment's Canvas address
    (`/courses/123/assignments/45678`). A ValueError names a missing column, an unknown topic, an
    id that is not a number, or a topic given twice, with its line.
    """
    with open(path, newline="", encoding="utf-8-sig") as f:
        reader = csv.DictReader(f)
        columns = [h.strip().lower() for h in reader.fieldnames or []]
        if "sis login id" in columns and "student" in columns:
            return _canvas_gradebook(path, reader, topics)
        if "topic" not in columns or "assignment_id" not in columns:
            raise ValueError(
                f"{path}: the first line must be the header `topic,assignment_id`, or the file Canvas's own "
                "gradebook export (its header starts `Student,ID,SIS User ID,SIS Login ID`)"
            )
        pairs = [
            (i + 2, {k.strip().lower(): (v or "").strip() for k, v in row.items() if k}) for i, row in enumerate(reader)
        ]
    return CanvasIds(_checked_ids(((f"{path}: line {n}", r["topic"], r["assignment_id"]) for n, r in pairs), topics))


def _canvas_gradebook(path: Path, reader: csv.DictReader[str], topics: Sequence[str]) -> CanvasIds:
    """`canvas_ids_file` of Canvas's gradebook export, its header already read by `reader`."""
    named = {h.strip(): h for h in reader.fieldnames or []}
    missing = [c for c in ("ID", "SIS Login ID") if c not in named]
    if missing:
        raise ValueError(f"{path}: Canvas's gradebook export without the column(s) {', '.join(missing)}")
    found = [
        (f"{path}: the header", m["name"], m["id"])
        for h in named
        if (m := CANVAS_ASSIGNMENT.match(h)) is not None and m["name"] in topics
    ]
    people = {}
    for n, row in enumerate(reader, start=2):
        login = (row.get(named["SIS Login ID"]) or "").strip()
        canvas_id = (row.get(named["ID"]) or "").strip()
        if not login or not canvas_id:  # the "Points Possible" row, a test student, a row Canvas left blank
            continue
        if not CANVAS_ID.fullmatch(canvas_id):
            raise ValueError(f"{path}: line {n}: a Canvas ID must be a number, not {canvas_id!r}")
        people[login] = CanvasPerson(
            canvas_id,
            (row.get(named.get("SIS User ID", "")) or "").strip(),
            (row.get(named.get("Section", "")) or "").strip(),
        )
    return CanvasIds(_checked_ids(found, topics), people)


def canvas_ids_query(value: str, topics: Sequence[str]) -> dict[str, str]:
    """topic -> Canvas assignment id from a query's `prng:45678,loops:45679`; a ValueError names what is wrong."""
    found = []
    for item in (item.strip() for item in value.split(",") if item.strip()):
        topic, sep, number_ = item.partition(":")
        if not sep:
            raise ValueError("canvas_ids is topic:assignment_id pairs separated by commas, e.g. prng:45678")
        found.append(("canvas_ids", topic.strip(), number_.strip()))
    return _checked_ids(found, topics, quote=False)  # a URL's text is never repeated back


def _checked_ids(items: Iterable[tuple[str, str, str]], topics: Sequence[str], quote: bool = True) -> dict[str, str]:
    """topic -> id from (where, topic, id) triples; a ValueError naming the first bad one (its
    values only when `quote`: a file's, not a URL's)."""
    ids: dict[str, str] = {}
    for where, topic, number_ in items:
        name = f"topic {topic!r}" if quote else "a topic"
        if topic not in topics:
            raise ValueError(f"{where}: {name} is not in the course; the topics are: {', '.join(topics)}")
        if not CANVAS_ID.fullmatch(number_):
            given = f", not {number_!r}" if quote else ""
            raise ValueError(f"{where}: the Canvas assignment id of {name} must be a number{given}")
        if topic in ids:
            raise ValueError(f"{where}: {name} is given twice")
        ids[topic] = number_
    return ids


# ---------------------------------------------------------------- on the server (the CLI)


def from_database(settings: Settings, fmt: str, canvas_ids: Path | None = None, only: Sequence[str] = ()) -> str:
    """The export `fmt` of the course's database (for `grade course export`, run on the server),
    of the topics `only` names (default: `chosen_topics`)."""
    from sqlalchemy import select

    from jaxlings.grading import topics as course_topics
    from jaxlings.service import db, deadlines, scores, storage

    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r}; the formats are: {', '.join(FORMATS)}")
    every = list(settings.topics or course_topics.ORDER)
    course = load_rules(settings.rules_path, every)
    topics = chosen_topics(only, every, fmt, course, dt.datetime.now(dt.UTC))
    ids = canvas_ids_file(canvas_ids, every) if canvas_ids else CanvasIds({})
    storage.secure_data_dir(settings)
    db.upgrade(settings.db_url)
    with db.sessions(settings.db_url)() as session:
        students = list(session.scalars(select(db.Student)))
        subs = list(session.scalars(select(db.Submission)))
        rows = scores.standings(students, subs, course, deadlines.extensions(session))
    return render(fmt, rows, scores.outline(topics), ids.assignments, course, ids.people)

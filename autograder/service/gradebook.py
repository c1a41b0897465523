"""The gradebook from the rows: best scores per student and topic, its CSV, and the SVG figures.

Figures are small inline SVGs drawn here (a histogram of best scores per topic, submissions
per hour), so the pages need no script and no plotting library.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
from dataclasses import dataclass, field
from html import escape

from autograder.service.db import Student, Submission

BINS = 10


@dataclass
class Row:
    """One student's line of the gradebook: best score per topic, submissions made."""

    student: Student
    best: dict[str, float] = field(default_factory=dict)
    submissions: int = 0
    last: dt.datetime | None = None

    @property
    def total(self) -> float:
        return round(sum(self.best.values()), 4)


def topic_scores(sub: Submission) -> dict[str, tuple[float, float]]:
    """topic -> (score, max_score) of the results a submission holds, from its results.json.

    Whatever its status: a submission being regraded (queued, grading) or whose regrade failed
    keeps its earlier results until new ones are stored, and they stay counted, so a regrade in
    flight or failed never lowers the gradebook."""
    if not sub.result_json:
        return {}
    topics = json.loads(sub.result_json).get("extra_data", {}).get("topics", {})
    return {t: (v["score"], v["max_score"]) for t, v in topics.items()}


def best_scores(submissions: list[Submission]) -> dict[str, tuple[float, float]]:
    """topic -> the best (score, max_score) over these submissions."""
    best: dict[str, tuple[float, float]] = {}
    for sub in submissions:
        for topic, (score, top) in topic_scores(sub).items():
            if topic not in best or score > best[topic][0]:
                best[topic] = (score, top)
    return best


def gradebook(students: list[Student], submissions: list[Submission]) -> list[Row]:
    """One Row per student, in login order."""
    rows = {s.id: Row(s) for s in students}
    for sub in submissions:
        row = rows.get(sub.student_id)
        if row is None:
            continue
        row.submissions += 1
        row.last = max(filter(None, (row.last, sub.created_at)))
    by_student: dict[int, list[Submission]] = {}
    for sub in submissions:
        by_student.setdefault(sub.student_id, []).append(sub)
    for sid, subs in by_student.items():
        if sid in rows:
            rows[sid].best = {t: s for t, (s, _) in best_scores(subs).items()}
    return sorted(rows.values(), key=lambda r: r.student.login)


def maxima(submissions: list[Submission]) -> dict[str, float]:
    """topic -> its max score, as recorded in results."""
    tops: dict[str, float] = {}
    for sub in submissions:
        for topic, (_, top) in topic_scores(sub).items():
            tops[topic] = top
    return tops


# A cell starting with one of these is a formula to Excel, LibreOffice or Sheets (OWASP "CSV Injection",
# ASVS 1.2.10; the full-width forms too): a text cell that starts with one gets a leading single quote.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n", "\0", "\uff1d", "\uff0b", "\uff0d", "\uff20")


def to_csv(rows: list[Row], topics: list[str]) -> str:
    """The gradebook as CSV: login, name, email, one column per topic, total, submissions.

    Logins, names and emails come from rosters and hub users, so a text cell that a spreadsheet
    would run as a formula is neutralised (a leading '); the numbers are written as numbers.
    (Hand-written: defusedcsv, the one library for it, leaves tab and CR and rewrites '|'.)
    """

    def text(value: str) -> str:
        return "'" + value if value.startswith(FORMULA_STARTS) else value

    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["login", "name", "email", *topics, "total", "submissions"])
    for r in rows:
        writer.writerow(
            [
                text(r.student.login),
                text(r.student.name),
                text(r.student.email),
                *(f"{r.best[t]:g}" if t in r.best else "" for t in topics),
                f"{r.total:g}",
                r.submissions,
            ]
        )
    return out.getvalue()


def histogram_svg(scores: list[float], top: float, title: str, width: int = 240, height: int = 120) -> str:
    """An SVG bar chart of `scores` in BINS bins from 0 to `top`."""
    counts = [0] * BINS
    for s in scores:
        counts[min(BINS - 1, int(BINS * s / top)) if top else 0] += 1
    peak, bar = max(counts) or 1, width / BINS
    bars = "".join(
        f'<rect x="{i * bar:.1f}" y="{height - 20 - (height - 35) * c / peak:.1f}" width="{bar - 2:.1f}" '
        f'height="{(height - 35) * c / peak:.1f}" fill="#4a7ebb"><title>{c} in {i * 10}-{i * 10 + 10}%</title></rect>'
        for i, c in enumerate(counts)
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="histogram" width="{width}" height="{height}" '
        f'role="img" aria-label="{escape(title)}"><text x="0" y="12" font-size="12">{escape(title)}</text>{bars}'
        f'<text x="0" y="{height - 5}" font-size="10">0</text>'
        f'<text x="{width - 30}" y="{height - 5}" font-size="10">{top:g}</text></svg>'
    )


def timeline_svg(times: list[dt.datetime], width: int = 600, height: int = 140) -> str:
    """An SVG polyline of submissions per hour over the course's lifetime."""
    if not times:
        return '<svg xmlns="http://www.w3.org/2000/svg" class="timeline" width="10" height="10"></svg>'
    start = min(times).replace(minute=0, second=0, microsecond=0)
    hours = int((max(times) - start).total_seconds() // 3600) + 1
    counts = [0] * hours
    for t in times:
        counts[int((t - start).total_seconds() // 3600)] += 1
    peak, step = max(counts), width / max(hours, 1)
    points = " ".join(
        f"{(i + 0.5) * step:.1f},{height - 20 - (height - 35) * c / peak:.1f}" for i, c in enumerate(counts)
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="timeline" width="{width}" height="{height}" role="img" '
        f'aria-label="submissions per hour"><text x="0" y="12" font-size="12">submissions per hour (peak {peak})'
        f'</text><polyline fill="none" stroke="#bb4a4a" stroke-width="2" points="{points}"/>'
        f'<text x="0" y="{height - 5}" font-size="10">{start:%Y-%m-%d %H:00} UTC</text></svg>'
    )

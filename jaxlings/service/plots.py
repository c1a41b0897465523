"""The gradebook's figures as server-rendered SVG: pure functions, data in and an SVG string out.

- `histogram_svg`: one topic's counted scores (`scores`: which score counts) in bins over
  0..maximum, with axes, tick labels, each bar's count written on it, the number of students and
  the median in the caption. Students who never submitted the topic count 0, drawn apart (grey).
- `timeline_svg`: submissions over time, binned to fit the span (minutes under 2 h, hours under
  3 days, days under 2 months, weeks beyond; several units a bin when there would be too many
  bars), with dated tick labels. One submission still draws a visible bar.
- `pass_rate_svg` (with `pass_rates`): per exercise of a topic, the share of the students who
  submitted the topic with full marks on it in their counted submission: where the class is stuck.

Drawn by hand rather than by a plotting library: the figures are bars, axes and labels (a few
dozen elements each). matplotlib would add a large dependency and about a second of rendering per
page for two dozen figures, and its SVG brings its own ids and styles; pygal's SVG wants its
JavaScript for tooltips, which the pages' CSP forbids. Here every coordinate goes through `_n`
(finite, rounded) and every text through `_text` (escaped, characters XML forbids dropped), so
the output is always well-formed XML; bars carry a `<title>` a browser shows on hover.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from jaxlings.service.scores import Outline, Standing

SVG_NS = "http://www.w3.org/2000/svg"
BAR, MISSING, STUCK, AXIS, GRID = "#4a7ebb", "#c4c4c4", "#b42318", "#444", "#e4e4e4"
MAX_TIME_BARS = 60
"""The most bars of the timeline: past it, a bar holds several units (2 hours, 3 weeks)."""

_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _n(x: float) -> str:
    """A coordinate: one decimal, and 0 for anything not finite (never NaN or inf in the SVG)."""
    return f"{x:.1f}" if math.isfinite(x) else "0"


def _text(value: object) -> str:
    """Text for an SVG element or attribute: escaped, without the characters XML 1.0 forbids."""
    return escape(_NOT_XML.sub("", str(value)), quote=True)


def _num(x: float) -> str:
    """A score as people write it: 7, 7.5, 7.25 (two decimals at most)."""
    return f"{round(x, 2):g}" if math.isfinite(x) else "?"


def _percent(part: float, whole: float) -> str:
    share = 100 * part / whole if whole > 0 else math.nan
    return f"{round(share)} %" if math.isfinite(share) else "–"


def nice_step(span: float, most: int, mantissas: Sequence[float] = (1, 2, 2.5, 5, 10)) -> float:
    """The smallest of `mantissas` × 10^k that cuts `span` into at most `most` steps (the last
    mantissa must be 10)."""
    if not (math.isfinite(span) and span > 0):
        return 1.0
    power = 10.0 ** math.floor(math.log10(span / most))
    return next(m * power for m in mantissas if span / (m * power) <= most + 1e-9)


@dataclass(frozen=True)
class Box:
    """The plot area in pixels: bars are drawn between left..right and top..bottom."""

    left: float
    top: float
    right: float
    bottom: float

    def x(self, frac: float) -> float:
        return self.left + (self.right - self.left) * frac

    def y(self, frac: float) -> float:
        return self.bottom - (self.bottom - self.top) * frac


def _svg(cls: str, width: float, height: float, label: str, body: str) -> str:
    """The figure's frame: size, accessible name (also its `<title>`), and the body."""
    return (
        f'<svg xmlns="{SVG_NS}" class="{cls}" width="{_n(width)}" height="{_n(height)}" '
        f'viewBox="0 0 {_n(width)} {_n(height)}" role="img" aria-label="{_text(label)}" '
        f'font-family="system-ui, sans-serif" font-size="11"><title>{_text(label)}</title>{body}</svg>'
    )


def _heading(title: str, *captions: str) -> str:
    """The figure's title (bold) and its caption lines, above the plot."""
    return f'<text class="title" x="4" y="14" font-size="13" font-weight="bold">{_text(title)}</text>' + "".join(
        f'<text class="caption" x="4" y="{30 + 14 * i}" fill="{AXIS}">{_text(c)}</text>' for i, c in enumerate(captions)
    )


def _count_axis(peak: int, box: Box, label: str) -> tuple[int, str]:
    """The y axis for counts up to `peak`: whole-number ticks with grid lines and a rotated label;
    returns the axis' top value (the bars' scale) and its SVG."""
    step = max(1, math.ceil(nice_step(max(peak, 1), 4)))
    top = max(step, math.ceil(max(peak, 1) / step) * step)
    parts = []
    for value in range(0, top + 1, step):
        y = _n(box.y(value / top))
        parts.append(
            f'<line x1="{_n(box.left)}" y1="{y}" x2="{_n(box.right)}" y2="{y}" stroke="{GRID}"/>'
            f'<text class="ytick" x="{_n(box.left - 4)}" y="{y}" dy="3.5" text-anchor="end">{value}</text>'
        )
    mid = _n((box.top + box.bottom) / 2)
    parts.append(
        f'<text class="axis-label" x="10" y="{mid}" transform="rotate(-90 10 {mid})" text-anchor="middle" '
        f'fill="{AXIS}">{_text(label)}</text>'
        f'<line x1="{_n(box.left)}" y1="{_n(box.top)}" x2="{_n(box.left)}" y2="{_n(box.bottom)}" stroke="{AXIS}"/>'
        f'<line x1="{_n(box.left)}" y1="{_n(box.bottom)}" x2="{_n(box.right)}" y2="{_n(box.bottom)}" '
        f'stroke="{AXIS}"/>'
    )
    return top, "".join(parts)


def _x_label(box: Box, height: float, label: str) -> str:
    return (
        f'<text class="axis-label" x="{_n((box.left + box.right) / 2)}" y="{_n(height - 4)}" '
        f'text-anchor="middle" fill="{AXIS}">{_text(label)}</text>'
    )


# -- scores of one topic ------------------------------------------------------------------------


@dataclass(frozen=True)
class Bins:
    """Scores counted into bins of `step` points from 0 to `top`: bin i holds [i·step, (i+1)·step),
    the last one closed and ending at `top` (so full marks fall in it; it may be narrower)."""

    step: float
    top: float
    counts: list[int]

    @property
    def edges(self) -> list[float]:
        return [round(min(i * self.step, self.top), 6) for i in range(len(self.counts) + 1)]


def score_bins(scores: Sequence[float], top: float, most: int = 12) -> Bins:
    """`scores` (finite ones; below 0 counted as 0, above `top` as `top`) in at most `most` bins
    of a round width in points (1, 2, 3, 5, 10…) over 0..`top`."""
    finite = [s for s in scores if math.isfinite(s)]
    top = top if math.isfinite(top) and top > 0 else max([*finite, 1.0])
    step = nice_step(top, most, (1, 2, 3, 5, 10))
    counts = [0] * max(1, math.ceil(top / step - 1e-9))
    for s in finite:
        counts[min(len(counts) - 1, int(min(max(s, 0.0), top) // step))] += 1
    return Bins(step, top, counts)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def histogram_svg(
    scores: Sequence[float], top: float, topic: str, missing: int = 0, width: int = 340, height: int = 200
) -> str:
    """A histogram of one topic's counted scores of `top` points: `scores` of the students who
    submitted it, `missing` students who did not (counted 0, drawn grey in the first bar).

    The x axis runs from 0 to the maximum in points (bars as wide as their range); each bar's
    count is written above it and its `<title>` names its range. The caption gives the number of
    students, how many submitted, the median (over all, never-submitted as 0) and how many have
    full marks."""
    finite = [s for s in scores if math.isfinite(s)]
    bins = score_bins(finite, top)
    missing = max(0, missing)
    everyone = finite + [0.0] * missing
    median = statistics.median(everyone) if everyone else 0.0
    full = sum(1 for s in finite if s >= bins.top)
    captions = (
        f"{len(everyone)} students, {len(finite)} submitted",
        f"median {_num(median)} / {_num(bins.top)} ({_percent(median, bins.top)}) · {full} with full marks",
    )
    box = Box(40, 58, width - 14, height - 34)
    totals = [c + (missing if i == 0 else 0) for i, c in enumerate(bins.counts)]
    scale, axis = _count_axis(max(totals), box, "students")
    bars, edges = [], bins.edges
    for i, (c, total) in enumerate(zip(bins.counts, totals, strict=True)):
        x0, x1 = box.x(edges[i] / bins.top), box.x(edges[i + 1] / bins.top)
        x, w = x0 + 1, max(x1 - x0 - 2, 1)
        where = f"{_num(edges[i])} to {'under ' if i < len(totals) - 1 else ''}{_num(edges[i + 1])} points"
        h_all, h_own = (box.bottom - box.top) * total / scale, (box.bottom - box.top) * c / scale
        if i == 0 and missing:
            bars.append(
                f'<rect class="missing" x="{_n(x)}" y="{_n(box.bottom - h_all)}" width="{_n(w)}" '
                f'height="{_n(h_all - h_own)}" fill="{MISSING}"><title>{missing} not submitted (0 points)</title></rect>'
            )
        bars.append(
            f'<rect class="bar" x="{_n(x)}" y="{_n(box.bottom - h_own)}" width="{_n(w)}" height="{_n(h_own)}" '
            f'fill="{BAR}"><title>{_plural(c, "student")}: {_text(where)}</title></rect>'
        )
        if total:
            bars.append(
                f'<text class="count" x="{_n(x + w / 2)}" y="{_n(box.bottom - h_all - 3)}" '
                f'text-anchor="middle">{total}</text>'
            )
    every = math.ceil(len(edges) / 7)
    shown = [i for i in range(len(edges)) if i % every == 0 and (edges[-1] - edges[i]) >= bins.step / 2]
    ticks = "".join(
        f'<line x1="{_n(box.x(edges[i] / bins.top))}" y1="{_n(box.bottom)}" x2="{_n(box.x(edges[i] / bins.top))}" '
        f'y2="{_n(box.bottom + 4)}" stroke="{AXIS}"/>'
        f'<text class="xtick" x="{_n(box.x(edges[i] / bins.top))}" y="{_n(box.bottom + 15)}" text-anchor="middle">'
        f"{_num(edges[i])}</text>"
        for i in [*shown, len(edges) - 1]
    )
    label = f"points of {_num(bins.top)}"
    body = _heading(topic, *captions) + axis + "".join(bars) + ticks + _x_label(box, height, label)
    return _svg("histogram", width, height, f"{topic}: scores. {' · '.join(captions)}", body)


# -- submissions over time ----------------------------------------------------------------------

UNITS = (
    (dt.timedelta(hours=2), "minute", dt.timedelta(minutes=1)),
    (dt.timedelta(days=3), "hour", dt.timedelta(hours=1)),
    (dt.timedelta(days=60), "day", dt.timedelta(days=1)),
)
WEEK = dt.timedelta(weeks=1)


@dataclass(frozen=True)
class TimeBins:
    """Submissions counted per bin: bin i starts at start + i·step; `unit` names the step's unit
    and `per` how many of them a bin holds."""

    start: dt.datetime
    step: dt.timedelta
    unit: str
    per: int
    counts: list[int]

    def at(self, i: int) -> dt.datetime:
        return self.start + i * self.step


def _utc(t: dt.datetime) -> dt.datetime:
    """Naive UTC (what the database stores), from an aware time too."""
    return t.astimezone(dt.UTC).replace(tzinfo=None) if t.tzinfo else t


def _floor(t: dt.datetime, unit: str) -> dt.datetime:
    t = t.replace(second=0, microsecond=0)
    if unit != "minute":
        t = t.replace(minute=0)
    if unit in ("day", "week"):
        t = t.replace(hour=0)
    return t - dt.timedelta(days=t.weekday()) if unit == "week" else t


def time_bins(times: Sequence[dt.datetime]) -> TimeBins:
    """`times` counted in bins that fit their span: minutes under 2 h, hours under 3 days, days
    under 2 months, weeks beyond; several units a bin past MAX_TIME_BARS bins. Needs a time."""
    times = [_utc(t) for t in times]
    first, last = min(times), max(times)
    unit, size = next(((u, s) for span, u, s in UNITS if last - first < span), ("week", WEEK))
    start = _floor(first, unit)
    per = math.ceil(((_floor(last, unit) - start) // size + 1) / MAX_TIME_BARS)
    step = size * per
    counts = [0] * ((last - start) // step + 1)
    for t in times:
        counts[(t - start) // step] += 1
    return TimeBins(start, step, unit, per, counts)


def _when(t: dt.datetime, unit: str) -> str:
    return f"{t:%m-%d %H:%M}" if unit in ("minute", "hour") else f"{t:%Y-%m-%d}"


def timeline_svg(times: Sequence[dt.datetime], width: int = 900, height: int = 210) -> str:
    """Submissions over time as bars, binned to fit the span (`time_bins`), with dated tick labels
    (UTC); "no submissions yet" when there are none."""
    if not times:
        body = _heading("Submissions over time", "") + '<text x="4" y="50">no submissions yet</text>'
        return _svg("timeline", width, 70, "submissions over time: no submissions yet", body)
    bins = time_bins(times)
    per = bins.unit if bins.per == 1 else f"{bins.per} {bins.unit}s"
    last = max(_utc(t) for t in times)
    caption = (
        f"{len(times)} submissions, per {per} · first {min(_utc(t) for t in times):%Y-%m-%d %H:%M}, "
        f"last {last:%Y-%m-%d %H:%M} UTC"
    )
    box = Box(44, 44, width - 12, height - 34)
    scale, axis = _count_axis(max(bins.counts), box, f"submissions per {per}")
    n = len(bins.counts)
    slot = (box.right - box.left) / n
    bar_w = max(1.5, min(slot * 0.85, 48))
    bars = []
    for i, c in enumerate(bins.counts):
        if not c:
            continue
        h = max(2.0, (box.bottom - box.top) * c / scale)
        x = box.left + i * slot + (slot - bar_w) / 2
        when = f"{bins.at(i):%Y-%m-%d %H:%M}"
        bars.append(
            f'<rect class="bar" x="{_n(x)}" y="{_n(box.bottom - h)}" width="{_n(bar_w)}" height="{_n(h)}" '
            f'fill="{BAR}"><title>{c} submissions from {when} UTC (per {per})</title></rect>'
        )
        if slot >= 16:
            bars.append(
                f'<text class="count" x="{_n(x + bar_w / 2)}" y="{_n(box.bottom - h - 3)}" '
                f'text-anchor="middle">{c}</text>'
            )
    every = math.ceil(n / 6)
    ticks = "".join(
        f'<line x1="{_n(box.left + (i + 0.5) * slot)}" y1="{_n(box.bottom)}" x2="{_n(box.left + (i + 0.5) * slot)}" '
        f'y2="{_n(box.bottom + 4)}" stroke="{AXIS}"/>'
        f'<text class="xtick" x="{_n(box.left + (i + 0.5) * slot)}" y="{_n(box.bottom + 15)}" text-anchor="middle">'
        f"{_when(bins.at(i), bins.unit)}</text>"
        for i in range(0, n, every)
    )
    label = "time (UTC; each label marks the start of its bar)"
    body = _heading("Submissions over time", caption) + axis + "".join(bars) + ticks + _x_label(box, height, label)
    return _svg("timeline", width, height, f"submissions over time. {caption}", body)


# -- where the class is stuck -------------------------------------------------------------------


@dataclass(frozen=True)
class ExerciseRate:
    """How many of the students who submitted a topic have full marks on one of its exercises."""

    exercise: str
    full: int
    students: int

    @property
    def rate(self) -> float:
        return self.full / self.students if self.students else 0.0


def pass_rates(rows: Sequence[Standing], course: Outline) -> dict[str, list[ExerciseRate]]:
    """topic -> each exercise's rate over the students who submitted the topic (their counted
    submission's exercise scores); topics nobody submitted are left out. Full marks: the
    exercise's score reaches its maximum, nothing pending."""
    rates: dict[str, list[ExerciseRate]] = {}
    for topic in course.topics:
        counted = [r.topics[topic] for r in rows if topic in r.topics]
        if not counted:
            continue
        rates[topic] = []
        for exercise in course.exercises[topic]:
            scored = [c.exercises.get(exercise) for c in counted]
            full = sum(1 for e in scored if e and e.max_score > 0 and e.score >= e.max_score and not e.pending)
            rates[topic].append(ExerciseRate(exercise, full, len(counted)))
    return rates


def hardest(rates: dict[str, list[ExerciseRate]], most: int = 5) -> list[tuple[str, ExerciseRate]]:
    """The `most` exercises with the lowest rates in the course, as (topic, rate), lowest first."""
    every = [(topic, r) for topic, rs in rates.items() for r in rs]
    return sorted(every, key=lambda tr: (tr[1].rate, tr[0], tr[1].exercise))[:most]


def _short(name: str, most: int = 20) -> str:
    return name if len(name) <= most else name[: most - 1] + "…"


def pass_rate_svg(topic: str, rates: Sequence[ExerciseRate], width: int = 350) -> str:
    """Horizontal bars: per exercise of `topic`, the share of the students who submitted it with
    full marks, written as a percentage; the lowest bars are drawn red (where the class is stuck),
    unless every exercise has the same rate; a rate of 0 still draws a red stub."""
    students = max((r.students for r in rates), default=0)
    height = 44 + 20 * max(len(rates), 1) + 34
    box = Box(140, 44, width - 46, height - 34)
    lowest = min((r.rate for r in rates), default=0.0)
    spread = max((r.rate for r in rates), default=0.0) > lowest
    parts = []
    for pct in (0, 25, 50, 75, 100):
        x = _n(box.x(pct / 100))
        parts.append(
            f'<line x1="{x}" y1="{_n(box.top)}" x2="{x}" y2="{_n(box.bottom)}" stroke="{GRID}"/>'
            f'<text class="xtick" x="{x}" y="{_n(box.bottom + 13)}" text-anchor="middle">{pct} %</text>'
        )
    for i, r in enumerate(rates):
        y = box.top + 20 * i + 3
        rate = r.rate if math.isfinite(r.rate) else 0.0
        colour = STUCK if rate <= lowest and spread else BAR
        share = _percent(r.full, r.students)
        parts.append(
            f'<text class="ex-name" x="{_n(box.left - 6)}" y="{_n(y + 11)}" text-anchor="end">'
            f"{_text(_short(r.exercise))}</text>"
            f'<rect class="bar" x="{_n(box.left)}" y="{_n(y)}" width="{_n(max(box.x(rate) - box.left, 2))}" '
            f'height="14" fill="{colour}"><title>{_text(r.exercise)}: {r.full} of {r.students} students '
            f"({share}) have full marks</title></rect>"
            f'<text class="rate" x="{_n(box.x(rate) + 4)}" y="{_n(y + 11)}">{share}</text>'
        )
    parts.append(
        f'<line x1="{_n(box.left)}" y1="{_n(box.top)}" x2="{_n(box.left)}" y2="{_n(box.bottom)}" stroke="{AXIS}"/>'
    )
    caption = f"full marks per exercise, of {students} students who submitted"
    body = _heading(topic, caption) + "".join(parts) + _x_label(box, height, "students with full marks")
    return _svg("passrate", width, height, f"{topic}: {caption}", body)

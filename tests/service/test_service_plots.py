"""The gradebook's figures (`jaxlings.service.plots`), as pure functions: no server, fast.

Whatever the scores and times, a figure is well-formed XML, has no NaN or infinity in its
coordinates, and the counts it shows add up to the counts it was given.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import xml.etree.ElementTree as ET

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from jaxlings.service import plots
from jaxlings.service.db import Student
from jaxlings.service.scores import ExerciseScore, Outline, Standing, TopicScore

NS = "{http://www.w3.org/2000/svg}"
COORDS = ("x", "y", "x1", "y1", "x2", "y2", "width", "height")
T0 = dt.datetime(2025, 3, 3, 9, 0)
NOT_FINITE = re.compile(r"(?<![a-z])(nan|-?inf(inity)?)(?![a-z])", re.I)
fast = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def parse(svg: str) -> ET.Element:
    """The figure as XML, after checking every coordinate is a finite number."""
    root = ET.fromstring(svg)
    assert root.tag == f"{NS}svg"
    for element in root.iter():
        for name in COORDS:
            if name in element.attrib:
                value = float(element.attrib[name])
                assert math.isfinite(value), (element.tag, name, value)
                if name in ("width", "height"):
                    assert value >= 0, (element.tag, name, value)
    for element in root.iter():  # no number written anywhere is NaN or infinite (names and titles may say "nan")
        for name in ("viewBox", "points", "d", "transform"):
            assert not NOT_FINITE.search(element.get(name, "")), (element.tag, name, element.get(name))
        if element.get("class") in ("count", "ytick", "xtick"):
            assert not NOT_FINITE.search(element.text or ""), (element.tag, element.text)
    return root


def texts(root: ET.Element, cls: str) -> list[str]:
    return [e.text or "" for e in root.iter(f"{NS}text") if e.get("class") == cls]


def bar_titles(root: ET.Element, cls: str = "bar") -> list[str]:
    return [r.find(f"{NS}title").text or "" for r in root.iter(f"{NS}rect") if r.get("class") == cls]


def leading_int(title: str) -> int:
    return int(title.split()[0])


# -- histograms ---------------------------------------------------------------------------------

scores_lists = st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64), max_size=60)
tops = st.one_of(st.floats(min_value=0.5, max_value=1000), st.sampled_from([0.0, -3.0, math.nan, math.inf, 19.0]))


@fast
@given(scores=scores_lists, top=tops, missing=st.integers(0, 40), topic=st.text(max_size=30))
@example(scores=[], top=1.0, missing=0, topic="NAN")  # a topic may be called so (CI's hypothesis found it)
def test_a_histogram_is_valid_xml_and_shows_the_counts_it_was_given(scores, top, missing, topic):
    root = parse(plots.histogram_svg(scores, top, topic, missing=missing))
    finite = [s for s in scores if math.isfinite(s)]
    shown = [leading_int(t) for t in bar_titles(root)]
    assert sum(shown) == len(finite)  # every finite score in exactly one bar
    assert sum(int(c) for c in texts(root, "count")) == len(finite) + missing  # the numbers written on bars
    assert bar_titles(root, "missing") == ([f"{missing} not submitted (0 points)"] if missing else [])
    assert texts(root, "caption")[0] == f"{len(finite) + missing} students, {len(finite)} submitted"
    assert texts(root, "axis-label")[0] == "students" and texts(root, "ytick")[0] == "0"


def test_a_histogram_bins_by_round_points_with_full_marks_in_the_last_bar():
    bins = plots.score_bins([0, 1.9, 2, 18, 19, 19, 25, -1], 19)
    assert bins.step == 2 and bins.edges == [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 19]  # the axis ends at the maximum
    assert bins.counts == [3, 1, 0, 0, 0, 0, 0, 0, 0, 4]  # -1 counts as 0, 25 as the maximum
    assert plots.score_bins([], 27).step == 3 and plots.score_bins([], 10).step == 1  # 9 and 10 bars
    root = parse(plots.histogram_svg([3, 19, 19, 12.5, 7], 19, "prng", missing=2))
    assert texts(root, "caption") == ["7 students, 5 submitted", "median 7 / 19 (37 %) · 2 with full marks"]
    assert texts(root, "xtick")[0] == "0" and texts(root, "xtick")[-1] == "19"
    assert texts(root, "axis-label") == ["students", "points of 19"]
    assert bar_titles(root)[0] == "0 students: 0 to under 2 points"
    assert bar_titles(root)[-1] == "2 students: 18 to 19 points"
    assert texts(root, "count") == ["2", "1", "1", "1", "2"]
    first, *_, last = (r for r in root.iter(f"{NS}rect") if r.get("class") == "bar")
    assert float(last.get("width")) < float(first.get("width"))  # 18..19 is half as wide as 0..2


def test_a_histogram_escapes_the_topic_name():
    svg = plots.histogram_svg([1], 2, '<script>alert("x")</script>&\x00')
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    assert texts(parse(svg), "title") == ['<script>alert("x")</script>&']


# -- the timeline -------------------------------------------------------------------------------

moments = st.datetimes(min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31))


@fast
@given(times=st.lists(moments, min_size=1, max_size=80))
def test_a_timeline_is_valid_xml_and_shows_every_submission(times):
    root = parse(plots.timeline_svg(times))
    titles = bar_titles(root)
    assert sum(leading_int(t) for t in titles) == len(times)
    assert 1 <= len(titles) <= plots.MAX_TIME_BARS
    assert all(float(r.get("height")) >= 2 for r in root.iter(f"{NS}rect"))  # every bar visible


@fast
@given(times=st.lists(st.datetimes(min_value=dt.datetime(2000, 1, 1), max_value=dt.datetime(2100, 1, 1)), min_size=1))
def test_the_timeline_bins_fit_the_span(times):
    bins = plots.time_bins(times)
    span = max(times) - min(times)
    expected = (
        "minute"
        if span < dt.timedelta(hours=2)
        else "hour"
        if span < dt.timedelta(days=3)
        else "day"
        if span < dt.timedelta(days=60)
        else "week"
    )
    assert bins.unit == expected and len(bins.counts) <= plots.MAX_TIME_BARS and sum(bins.counts) == len(times)
    assert bins.start <= min(times) and max(times) < bins.at(len(bins.counts))


@pytest.mark.parametrize(
    ("span", "unit", "label"),
    [
        (dt.timedelta(minutes=50), "minute", "03-03 09:00"),
        (dt.timedelta(hours=20), "hour", "03-03 09:00"),
        (dt.timedelta(days=20), "day", "2025-03-03"),
        (dt.timedelta(days=200), "week", "2025-03-03"),
    ],
)
def test_the_timeline_has_more_than_one_bar_and_dated_ticks(span, unit, label):
    times = [T0 + span * k / 10 for k in range(11)]
    root = parse(plots.timeline_svg(times))
    assert plots.time_bins(times).unit == unit and len(bar_titles(root)) > 1
    assert texts(root, "xtick")[0] == label and "11 submissions" in texts(root, "caption")[0]


def test_one_submission_or_all_in_one_minute_still_draw_a_bar():
    for times in ([T0], [T0 + dt.timedelta(seconds=s) for s in range(0, 60, 2)]):
        root = parse(plots.timeline_svg(times))
        (bar,) = root.iter(f"{NS}rect")
        assert float(bar.get("height")) > 20 and float(bar.get("width")) >= 20
        assert leading_int(bar_titles(root)[0]) == len(times)
        assert texts(root, "count") == [str(len(times))]


def test_an_empty_course_says_no_submissions_yet():
    root = parse(plots.timeline_svg([]))
    assert root.get("class") == "timeline" and "no submissions yet" in "".join(root.itertext())


def test_aware_times_are_read_in_utc():
    paris = dt.timezone(dt.timedelta(hours=2))
    assert plots.time_bins([dt.datetime(2025, 3, 3, 11, 0, tzinfo=paris)]).start == T0


# -- where the class is stuck -------------------------------------------------------------------


def standing(login: str, **topics: dict[str, tuple[float, float] | ExerciseScore]) -> Standing:
    """A student's row: topic -> exercise -> (score, max) of their counted submission."""

    def ex(v):
        return v if isinstance(v, ExerciseScore) else ExerciseScore(*v)

    scored = {
        t: TopicScore(t, sum(ex(v).score for v in e.values()), 10, 1, T0, {n: ex(v) for n, v in e.items()})
        for t, e in topics.items()
    }
    return Standing(Student(login=login), scored)


COURSE = Outline({"prng": {"split": 4, "dropout": 5}, "loops": {"ema": 4}, "never": {"x": 1}})


def test_pass_rates_count_full_marks_among_those_who_submitted():
    rows = [
        standing("ann", prng={"split": (4, 4), "dropout": (5, 5)}),
        standing("bob", prng={"split": (4, 4), "dropout": (4, 5)}),  # short of full marks: not counted
        standing("cat", prng={"split": ExerciseScore(4, 4, pending=("speed",)), "dropout": (0, 5)}),  # pending
        standing("dan", prng={"split": (4, 4)}),  # dropout absent from the result: not full marks
        standing("eve", loops={"ema": (4, 4)}),  # never submitted prng: not among its students
    ]
    rates = plots.pass_rates(rows, COURSE)
    assert list(rates) == ["prng", "loops"]  # nobody submitted "never"
    assert [(r.exercise, r.full, r.students) for r in rates["prng"]] == [("split", 3, 4), ("dropout", 1, 4)]
    assert plots.hardest(rates, 2) == [("prng", rates["prng"][1]), ("prng", rates["prng"][0])]
    root = parse(plots.pass_rate_svg("prng", rates["prng"]))
    assert texts(root, "ex-name") == ["split", "dropout"] and texts(root, "rate") == ["75 %", "25 %"]
    reds = [r for r in root.iter(f"{NS}rect") if r.get("fill") == plots.STUCK]
    assert [r.find(f"{NS}title").text for r in reds] == ["dropout: 1 of 4 students (25 %) have full marks"]
    assert "of 4 students who submitted" in texts(root, "caption")[0]
    zero = plots.pass_rate_svg("loops", [plots.ExerciseRate("ema", 0, 3), plots.ExerciseRate("scan", 3, 3)])
    red, blue = parse(zero).iter(f"{NS}rect")
    assert red.get("fill") == plots.STUCK and blue.get("fill") == plots.BAR
    assert float(red.get("width")) >= 2  # 0 % still shows, in red
    same = plots.pass_rate_svg("loops", [plots.ExerciseRate("ema", 2, 3), plots.ExerciseRate("scan", 2, 3)])
    assert plots.STUCK not in same  # all alike: nothing stands out as stuck


@fast
@given(
    counts=st.lists(st.tuples(st.text(max_size=40), st.integers(0, 500), st.integers(0, 500)), max_size=12),
    topic=st.text(max_size=20),
)
def test_a_pass_rate_figure_is_valid_xml_and_writes_the_rates(counts, topic):
    rates = [plots.ExerciseRate(name, min(full, students), students) for name, full, students in counts]
    root = parse(plots.pass_rate_svg(topic, rates))
    expected = [f"{round(100 * r.full / r.students)} %" if r.students else "–" for r in rates]
    assert texts(root, "rate") == expected
    assert len(bar_titles(root)) == len(rates)

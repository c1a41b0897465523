"""The instructor's gradebook page in a real headless Chromium, on a course seeded straight into its
database (12 students × every topic of realistic results.json, no grading): the page fits 1280 px,
its cells read "score / maximum" with a percentage, and its figures have axes and show the seeded
counts (histograms), more than one bar for a day of submissions (timeline), and name the exercise
nobody has full marks on (pass rates). Then a course whose submissions all fall in one minute.
"""

from __future__ import annotations

import datetime as dt
import json
import random
import statistics

import pytest

from helpers.service import artifact, course, headless_chromium  # noqa: F401
from jaxlings.grading import topics as course_topics
from jaxlings.service import db, plots, scores

pytestmark = pytest.mark.slow

T0 = dt.datetime(2026, 3, 2, 8, 0)
OUTLINE = scores.outline(course_topics.ORDER)
NOBODY = "debugging"  # the topic nobody submitted
STUCK = ("autodiff", "maml_loss")  # the exercise nobody gets full marks on
MISCHIEF = "<b>Zoë</b> & <script>alert(1)</script>"


def results_json(earned: dict[str, dict[str, float]]) -> str:
    """A results.json as the grader writes it: per exercise a `correct` check (all but one point)
    and a `speed` check (one point); topic totals in extra_data."""
    tests, summary = [], {}
    for topic, exercises in earned.items():
        for exercise, points in exercises.items():
            top = OUTLINE.exercises[topic][exercise]
            for check, got, most in (
                ("correct", min(points, top - 1), top - 1),
                ("speed", max(0, points - top + 1), 1),
            ):
                status = "passed" if got >= most else "failed"
                tests.append({"name": f"{topic}.{exercise}:{check}", "score": got, "max_score": most, "status": status})
        summary[topic] = {"score": sum(exercises.values()), "max_score": OUTLINE.max_score(topic), "seconds": 3.2}
    total = sum(t["score"] for t in tests)
    return json.dumps(
        {
            "score": total,
            "max_score": sum(OUTLINE.max_score(t) for t in earned),
            "tests": tests,
            "extra_data": {"topics": summary},
        }
    )


def attempt(rng: random.Random, topic: str) -> dict[str, float]:
    """One student's points on a topic's exercises: mostly full marks, often one point short."""
    earned = {}
    for exercise, top in OUTLINE.exercises[topic].items():
        roll = rng.random()
        full = roll < (0.0 if (topic, exercise) == STUCK else 0.75)
        earned[exercise] = top if full else (top - 1 if roll < 0.9 else 0.0)
    return earned


def seed(course, plan: list[tuple[str, str, dt.datetime, dict[str, dict[str, float]]]]) -> None:
    """Rows for `plan`: (login, name, received at, topic -> exercise -> points), one submission each."""
    settings = course.settings()
    db.upgrade(settings.db_url)
    with db.sessions(settings.db_url).begin() as session:
        students: dict[str, db.Student] = {}
        for n, (login, name, when, earned) in enumerate(plan):
            if login not in students:
                students[login] = db.Student(login=login, name=name)
                session.add(students[login])
            session.add(db.Upload(digest=f"{n:064d}", data=b"zip", size=3))
            session.flush()
            doc = results_json(earned)
            got = json.loads(doc)
            sub = db.Submission(
                student_id=students[login].id,
                digest=f"{n:064d}",
                topics=",".join(t for t in OUTLINE.topics if t in earned),
                status=db.DONE,
                created_at=when,
                finished_at=when + dt.timedelta(seconds=40),
                attempts=1,
                score=got["score"],
                max_score=got["max_score"],
                result_json=doc,
            )
            session.add(sub)
            session.flush()
            session.add(db.GradeResult(submission_id=sub.id, score=sub.score, max_score=sub.max_score, result_json=doc))


def course_plan() -> list[tuple[str, str, dt.datetime, dict[str, dict[str, float]]]]:
    """12 students over 30 hours, 1–3 submissions each of several topics; nobody submits NOBODY."""
    rng = random.Random(30)
    plan = []
    for k in range(12):
        login = f"student{k:02d}"
        name = MISCHIEF if k == 3 else f"Student {k}"
        for _ in range(rng.randint(1, 3)):
            chosen = [t for t in OUTLINE.topics if t != NOBODY and rng.random() < 0.7]
            when = T0 + dt.timedelta(minutes=rng.randint(0, 30 * 60))
            plan.append((login, name, when, {t: attempt(rng, t) for t in chosen}))
    return plan


def best(plan, topic: str) -> dict[str, float]:
    """login -> the counted (best) score on `topic`, for the students who submitted it."""
    out: dict[str, float] = {}
    for login, _, _, earned in plan:
        if topic in earned:
            out[login] = max(out.get(login, 0.0), sum(earned[topic].values()))
    return out


@pytest.fixture
def browser():
    with headless_chromium() as chromium:
        yield chromium


def instructor_page(browser, course):
    """Chromium at 1280×900, logged in with an instructor token (the login form), on /gradebook."""
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    page.set_default_timeout(30_000)
    page.goto(f"{course.url}/login")
    page.fill("#token", course.instructor())
    page.click("#login")
    page.wait_for_url("**/gradebook")
    page.wait_for_load_state("load")  # the gradebook parsed: `locator.all()` below does not wait
    return page


def test_the_gradebook_fits_1280_px_and_its_figures_show_the_seeded_data(course, browser):
    plan = course_plan()
    seed(course, plan)
    course.serve()
    page = instructor_page(browser, course)
    page.screenshot(path=str(artifact("gradebook.png")), full_page=True)

    assert page.evaluate("document.documentElement.scrollWidth") <= 1280  # the page never scrolls sideways
    fits = "(() => { const s = document.querySelector('#gradebook').parentElement; return [s.scrollWidth, s.clientWidth]; })()"
    wide, room = page.evaluate(fits)
    assert wide <= room, f"the table needs {wide} px of {room}"  # 13 topics fit without scrolling

    # cells: "score / maximum" and a percentage; never submitted: 0, styled apart; the total of the maximum
    prng = best(plan, "prng")
    login, score = sorted(prng.items())[0]
    row = page.locator("#gradebook tbody tr", has_text=login)
    cell = row.locator("td.score").nth(OUTLINE.topics.index("prng"))
    assert cell.text_content() == f"{score:g}\xa0/\xa019{round(100 * score / 19)} %"
    missing = row.locator("td.unsubmitted").nth(0)
    assert missing.text_content().startswith("0\xa0/\xa0") and "not sub." in missing.text_content()
    assert page.locator("#gradebook td.unsubmitted").count() >= 12  # NOBODY's column at least
    total = sum(best(plan, t).get(login, 0.0) for t in OUTLINE.topics)
    assert row.locator("td.total").text_content().startswith(f"{total:g}\xa0/\xa0{OUTLINE.total:g}")
    link = page.locator("#gradebook thead a", has_text="prng")
    assert link.get_attribute("href") == "/gradebook/topics/prng"
    assert page.locator("#gradebook", has_text=MISCHIEF).count() == 1  # a name is text, never markup
    assert page.locator("#gradebook b, #gradebook script").count() == 0

    # histograms: one per topic someone submitted, with axes and the seeded counts
    histograms = page.locator("svg.histogram")
    assert histograms.count() == len(OUTLINE.topics) - 1 and NOBODY in page.text_content("#unsubmitted")
    figure = page.locator("svg.histogram", has=page.locator("text.title", has_text="prng"))
    assert figure.locator("text.axis-label").all_text_contents() == ["students", "points of 19"]
    assert figure.locator("text.ytick").first.text_content() == "0" and figure.locator("text.xtick").count() >= 3
    everyone = [prng.get(f"student{k:02d}", 0.0) for k in range(12)]
    first, second = figure.locator("text.caption").all_text_contents()
    assert first == f"12 students, {len(prng)} submitted"
    assert second.startswith(f"median {statistics.median(everyone):g} / 19 ")
    shown = [int(c) for c in figure.locator("text.count").all_text_contents()]
    bins = plots.score_bins(list(prng.values()), 19)
    bins.counts[0] += 12 - len(prng)
    assert shown == [c for c in bins.counts if c] and sum(shown) == 12

    # the timeline: 30 hours of submissions in hourly bars, dated
    timeline = page.locator("svg.timeline")
    assert timeline.locator("rect.bar").count() > 1
    assert f"{len(plan)} submissions, per hour" in timeline.locator("text.caption").text_content()
    first = min(when for _, _, when, _ in plan)
    assert timeline.locator("text.xtick").first.text_content() == f"{first:%m-%d %H}:00"

    # where the class is stuck: the exercise with the lowest rate is named, and drawn red
    topic, exercise = STUCK
    assert page.locator("#hardest a").first.text_content() == f"{topic}.{exercise}"
    stuck = page.locator("svg.passrate", has=page.locator("text.title", has_text=topic))
    red = stuck.locator(f'rect[fill="{plots.STUCK}"] title').all_text_contents()
    assert red == [f"{exercise}: 0 of {len(best(plan, topic))} students (0 %) have full marks"]
    assert page.locator("svg.passrate").count() == len(OUTLINE.topics) - 1

    # the recent submissions keep their results.json links and regrade forms
    assert page.locator("#recent a", has_text="results.json").count() == min(50, len(plan))
    assert page.locator("#regrade-all").count() == 1 and page.locator("#csv").count() == 1


def test_submissions_within_one_minute_still_draw_a_bar(course, browser):
    plan = [
        (f"s{k}", f"S {k}", T0 + dt.timedelta(seconds=7 * k), {"prng": attempt(random.Random(k), "prng")})
        for k in range(6)
    ]
    seed(course, plan)
    course.serve()
    page = instructor_page(browser, course)
    timeline = page.locator("svg.timeline")
    (bar,) = timeline.locator("rect.bar").all()
    box = bar.bounding_box()
    assert box and box["height"] > 20 and box["width"] > 10  # visible, not a hairline
    assert timeline.locator("text.count").text_content() == "6"
    assert "6 submissions, per minute" in timeline.locator("text.caption").text_content()
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    page.screenshot(path=str(artifact("gradebook-one-minute.png")), full_page=True)

"""The pages in a real headless browser (Debian's chromium driven by playwright): a student logs in
with a token, submits a zip, watches the result appear; the instructor reads the gradebook and
downloads its CSV.
"""

from __future__ import annotations

import csv
import io
import json

import pytest

from helpers.service import BROKEN, SOLUTIONS, api, course, headless_chromium, state, wait_for, zip_of  # noqa: F401

pytestmark = pytest.mark.slow


@pytest.fixture
def browser():
    with headless_chromium() as chromium:
        yield chromium


def log_in(browser, url: str, token: str):
    page = browser.new_context(accept_downloads=True).new_page()
    page.set_default_timeout(30_000)
    page.goto(f"{url}/login")
    page.fill("#token", token)
    page.click("#login")
    return page


def test_student_submits_in_the_browser_and_instructor_downloads_the_csv(course, browser, tmp_path):
    course.serve()
    course.worker()
    wrong = log_in(browser, course.url, "jxl_not-a-token")
    assert "not known" in wrong.text_content("#error")
    page = log_in(browser, course.url, course.token("grace"))
    assert page.url.endswith("/me")
    bad = tmp_path / "notes.zip"
    bad.write_bytes(zip_of({"notes.txt": "hi"}))
    page.set_input_files("#file", str(bad))
    page.click("#submit")
    assert "not a topic file" in page.text_content("#error")
    good = tmp_path / "mine.zip"
    good.write_bytes(zip_of({"prng.py": BROKEN, "at_updates.py": (SOLUTIONS / "at_updates.py").read_text()}))
    page.set_input_files("#file", str(good))
    page.click("#submit")
    assert "/submissions/" in page.url and page.text_content("#status").startswith("status:")
    page.wait_for_selector("#score", timeout=240_000)  # the page refreshes itself until graded
    score = page.text_content("#score").split(":")[1].split("/")[0].strip()  # at_updates' points (prng: 0)
    assert "/ 33" in page.text_content("#score") and 12 <= float(score) <= 14
    assert "at_updates.mask_fill:jit" in page.text_content("#verdicts")
    page.goto(f"{course.url}/me")
    assert f"{score} / 33" in page.text_content("#history")
    refused = page.goto(f"{course.url}/gradebook")  # students have no gradebook
    assert refused.status == 403 and "for instructors" in page.text_content("#error")
    page.goto(f"{course.url}/me")
    page.click("text=log out")  # the session ends on the server
    assert page.url.endswith("/login") and page.goto(f"{course.url}/me").url.endswith("/login")

    prof = log_in(browser, course.url, course.instructor())
    assert prof.url.endswith("/gradebook")
    assert "grace" in prof.text_content("#gradebook")
    assert prof.locator("svg.histogram").count() == 2 and prof.locator("svg.timeline").count() == 1
    with prof.expect_download() as download:
        prof.click("#csv")
    rows = list(csv.DictReader(io.StringIO(open(download.value.path()).read())))
    assert [(r["login"], r["prng"], r["at_updates"], r["total"]) for r in rows] == [("grace", "0", score, score)]
    with prof.expect_download() as results:
        prof.click("#recent a:has-text('results.json')")
    assert json.loads(open(results.value.path()).read())["max_score"] == 33
    prof.click("#regrade-all")  # regrade everything, from the page: asked first, then queued
    assert "Regrade 1 submission" in prof.text_content("#question")
    prof.click("#confirm")
    assert "Queued 1 submission" in prof.text_content("#notice")
    teacher = api(course, course.instructor())
    (only,) = teacher.get("/api/submissions").json()
    wait_for(
        lambda: (s := state(teacher, only["id"]))["status"] == "done" and s["attempts"] == 2,
        240,
        "the regrade to finish",
    )

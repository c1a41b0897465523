"""The instructor's pages in a real headless Chromium at 1280 px: a submission's verdicts beside
its highlighted code, the diff of two submissions, a topic's page, and the bulk regrade's
confirmation then notice. Screenshots go to tests/artifacts/ for a person to look at.
"""

from __future__ import annotations

import pytest

from helpers.service import (  # noqa: F401
    PAGES_PRNG_BAD,
    PAGES_PRNG_OK,
    artifact,
    course,
    headless_chromium,
    seed_submission,
    seeded_result,
)

pytestmark = pytest.mark.slow


def test_submission_code_diff_topic_and_regrade_pages_in_chromium(course):
    first = seed_submission(
        course, "ada", {"prng": PAGES_PRNG_BAD}, seeded_result("prng", {"derive_keys:correct": "wrong keys"})
    )
    second = seed_submission(course, "ada", {"prng": PAGES_PRNG_OK}, seeded_result("prng", pending={"dropout:speed"}))
    seed_submission(course, "bob", {"prng": PAGES_PRNG_OK}, seeded_result("prng"))
    course.serve()
    token = course.instructor()
    with headless_chromium() as browser:
        page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
        page.set_default_timeout(30_000)
        page.goto(f"{course.url}/login")
        page.fill("#token", token)
        page.click("#login")
        page.goto(f"{course.url}/submissions/{first}")
        assert "16 / 19" in page.text_content("#total-prng")
        assert page.locator("#ex-prng-derive_keys tr.v-fail").count() == 1
        code = page.locator("#code-prng")
        assert "def derive_keys" in code.text_content() and code.bounding_box()["x"] > 500  # beside the verdicts
        page.click("#ex-prng-derive_keys h4 a")
        assert page.url.endswith("#src-prng-1")
        page.screenshot(path=str(artifact("submission.png")), full_page=True)

        page.goto(f"{course.url}/submissions/{second}")
        page.click("#compare")
        assert f"/submissions/{first}/diff/{second}" in page.url
        assert "wrong" in page.text_content("#diff-prng") and "+2 −2" in page.text_content("#diff-prng")
        page.screenshot(path=str(artifact("diff.png")), full_page=True)

        page.goto(f"{course.url}/gradebook/topics/prng")
        assert "2 / 2 (100%)" in page.text_content("#rate-derive_keys")
        assert "speed" in page.text_content("#topic")
        page.screenshot(path=str(artifact("topic.png")), full_page=True)

        page.goto(f"{course.url}/gradebook")
        page.click("#regrade-all")
        assert "Regrade 3 submissions (every topic)?" in page.text_content("#question")
        page.screenshot(path=str(artifact("regrade-confirm.png")), full_page=True)
        page.click("#confirm")
        assert "Queued 3 submissions" in page.text_content("#notice")
        page.screenshot(path=str(artifact("regrade-notice.png")), full_page=True)
        page.click("#to-gradebook")
        assert "/gradebook" in page.url

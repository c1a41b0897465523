"""The instructor's roster pages against a real `grade serve` (SQLite): add, drop, re-admit and a
new token from the browser, each token shown once and working at once, the earlier one revoked;
one student's record (scores, extensions, submissions). Each refusal beside its honest twin."""

from __future__ import annotations

from contextlib import closing

import pytest

from helpers.service import (  # noqa: F401
    PAGES_PRNG_BAD,
    api,
    course,
    form_csrf,
    page_login,
    seed_submission,
    seeded_result,
)

pytestmark = pytest.mark.slow


def token_on(page_text: str) -> str:
    start = page_text.index('<pre id="token">') + len('<pre id="token">')
    return page_text[start : page_text.index("</pre>", start)]


def works(course, token: str) -> bool:
    with api(course, token) as client:
        return client.get("/api/submissions").status_code == 200


def test_the_roster_page_adds_drops_readmits_and_gives_new_tokens(course):
    ada_token = course.token("ada")
    bob_token = course.token("bob")
    course.serve()
    with closing(page_login(course, course.instructor())) as prof:
        page = prof.get("/gradebook/roster")
        assert page.status_code == 200 and 'id="student-ada"' in page.text and 'id="student-bob"' in page.text
        assert 'id="roster-link"' in prof.get("/gradebook").text
        csrf = form_csrf(page.text)

        added = prof.post("/gradebook/roster", data={"login": "dee", "name": "Dee Dee", "csrf": csrf})
        assert added.status_code == 200 and "dee: added" in added.text
        assert added.headers["cache-control"] == "no-store" and works(course, token_on(added.text))
        taken = prof.post("/gradebook/roster", data={"login": "ada", "csrf": csrf})
        assert taken.status_code == 409 and "already on the roster" in taken.text  # a repeated add rotates nothing
        assert works(course, ada_token)

        fresh = prof.post("/gradebook/roster/ada/token", data={"csrf": csrf})
        assert fresh.status_code == 200 and works(course, token_on(fresh.text)) and not works(course, ada_token)

        dropped = prof.post("/gradebook/roster/bob/drop", data={"csrf": csrf})
        assert dropped.status_code == 303 and not works(course, bob_token)
        assert "dropped" in prof.get("/gradebook/roster").text
        again = prof.post("/gradebook/roster", data={"login": "bob", "csrf": csrf})
        assert again.status_code == 200 and "bob: re-admitted" in again.text and works(course, token_on(again.text))

        assert prof.post("/gradebook/roster/nobody/drop", data={"csrf": csrf}).status_code == 404
        forged = prof.post("/gradebook/roster/ada/token", data={"csrf": "not-the-token"})
        assert forged.status_code == 403
    with closing(page_login(course, course.token("dee"))) as dee:
        assert dee.get("/gradebook/roster").status_code == 403
        assert dee.post("/gradebook/roster/ada/drop", data={"csrf": form_csrf(dee.get("/me").text)}).status_code == 403


def test_a_students_record_shows_scores_extensions_and_every_submission(course):
    first = seed_submission(
        course, "ada", {"prng": PAGES_PRNG_BAD}, seeded_result("prng", {"derive_keys:correct": "x"})
    )
    course.serve()
    with api(course, course.instructor()) as teacher:
        granted = teacher.post("/api/extensions", json={"login": "ada", "topic": "prng", "days": 2, "reason": "ill"})
        assert granted.status_code == 201, granted.text
    with closing(page_login(course, course.instructor())) as prof:
        assert 'href="/gradebook/students/ada"' in prof.get("/gradebook").text
        record = prof.get("/gradebook/students/ada")
        assert record.status_code == 200 and 'id="record"' in record.text
        assert f"/submissions/{first}" in record.text and "16 / 19" in record.text
        assert "48.0 h" in record.text and "ill" in record.text  # the extension in force, why and by whom
        assert prof.get("/gradebook/students/nobody").status_code == 404
    with closing(page_login(course, course.token("ada"))) as ada:
        assert ada.get("/gradebook/students/ada").status_code == 403  # instructors only, even one's own

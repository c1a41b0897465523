"""The pages against a real `grade serve` (SQLite), submissions seeded straight into the database:
verdicts grouped by exercise beside the highlighted code, the diff of two submissions, a topic's
page, error pages (HTML, never JSON, off /api/), and the bulk regrade's confirmation and notice.
Each refusal beside its honest twin.
"""

from __future__ import annotations

from contextlib import closing

import pytest

from helpers.service import (  # noqa: F401
    PAGES_PRNG_BAD,
    PAGES_PRNG_OK,
    course,
    form_csrf,
    page_login,
    seed_submission,
    seeded_result,
)

pytestmark = pytest.mark.slow


@pytest.fixture
def seeded(course):
    """ada's two prng submissions (the first failing derive_keys:correct), bob's one, a server."""
    first = seed_submission(
        course, "ada", {"prng": PAGES_PRNG_BAD}, seeded_result("prng", {"derive_keys:correct": "<b>wrong</b> keys"})
    )
    second = seed_submission(course, "ada", {"prng": PAGES_PRNG_OK}, seeded_result("prng", pending={"dropout:speed"}))
    bob = seed_submission(course, "bob", {"prng": PAGES_PRNG_OK}, seeded_result("prng"))
    course.serve()
    return course, first, second, bob


def is_page(reply, status: int) -> bool:
    return reply.status_code == status and reply.headers["content-type"].startswith("text/html")


def test_submission_page_groups_verdicts_by_exercise_beside_the_code(seeded):
    course, first, second, _ = seeded
    with closing(page_login(course, course.token("ada"))) as ada:
        page = ada.get(f"/submissions/{first}")
        assert page.status_code == 200
        text = page.text
        assert 'id="ex-prng-derive_keys"' in text and 'class="exercise short"' in text
        assert 'id="total-prng">16 / 19' in text and "prng total: 16 / 19" in text
        assert "&lt;b&gt;wrong&lt;/b&gt; keys" in text and "<b>wrong</b>" not in text  # messages escaped
        assert 'class="v-fail"' in text and "prng.derive_keys:correct" in text
        assert 'href="#src-prng-1"' in text and 'id="src-prng-1"' in text  # the failing function linked
        assert 'class="hll"' in text  # its def line lit
        assert 'id="compare"' not in text  # no earlier submission to compare with
        later = ada.get(f"/submissions/{second}").text
        assert 'class="v-pending"' in later and f"/submissions/{first}/diff/{second}" in later
        assert 'id="score"' in later and 'id="results-json"' in later


def test_a_file_too_deep_for_pythons_parser_still_shows_its_page(course):
    # a dead line summing 3,000 terms: ast.parse overflows its recursion; the page read it anyway
    deep = PAGES_PRNG_BAD + "\n_dead = " + " + ".join(["1"] * 3000) + "\n"
    sub = seed_submission(course, "ada", {"prng": deep}, seeded_result("prng", {"derive_keys:correct": "wrong keys"}))
    course.serve()
    with closing(page_login(course, course.token("ada"))) as ada:
        page = ada.get(f"/submissions/{sub}")
        assert page.status_code == 200 and 'href="#src-prng-1"' in page.text  # the failing function still linked


def test_diff_of_one_students_submissions_and_not_across_students(seeded):
    course, first, second, bob = seeded
    with closing(page_login(course, course.token("ada"))) as ada:
        diff = ada.get(f"/submissions/{first}/diff/{second}")
        assert diff.status_code == 200 and 'id="diff-prng"' in diff.text and "+2 −2 lines" in diff.text
        assert "wrong" in diff.text
        for path in (f"/submissions/{first}/diff/{bob}", f"/submissions/{bob}/diff/{first}", f"/submissions/{bob}"):
            refused = ada.get(path)
            assert is_page(refused, 404) and "no submission" in refused.text and '"detail"' not in refused.text
    with closing(page_login(course, course.instructor())) as prof:
        assert prof.get(f"/submissions/{first}/diff/{second}").status_code == 200
        across = prof.get(f"/submissions/{first}/diff/{bob}")
        assert is_page(across, 404)


def test_compare_with_the_previous_submission_of_the_same_topic(course):
    """ada sent prng, then at_updates, then prng again: the last one compares with her first prng,
    not with the at_updates in between; the at_updates one has nothing to compare with."""
    first = seed_submission(course, "ada", {"prng": PAGES_PRNG_BAD}, seeded_result("prng"))
    other = seed_submission(course, "ada", {"at_updates": "def histogram(x, nbins):\n    return x\n"}, None)
    last = seed_submission(course, "ada", {"prng": PAGES_PRNG_OK}, seeded_result("prng"))
    course.serve()
    with closing(page_login(course, course.token("ada"))) as ada:
        page = ada.get(f"/submissions/{last}").text
        assert f"/submissions/{first}/diff/{last}" in page and f"/submissions/{other}/diff/{last}" not in page
        assert "/diff/" not in ada.get(f"/submissions/{other}").text


@pytest.mark.parametrize(
    "path",
    [
        "/submissions/0",
        "/submissions/-1",
        "/submissions/99999999999",
        "/submissions/abc",
        "/submissions/1/diff/x",
        "/nowhere",
        "/gradebook/topics/%3Cscript%3E",
    ],
)
def test_odd_ids_and_paths_are_html_error_pages(seeded, path):
    course = seeded[0]
    with closing(page_login(course, course.instructor())) as prof:
        reply = prof.get(path)
        assert 400 <= reply.status_code < 500 and reply.headers["content-type"].startswith("text/html")
        assert "<script" not in reply.text and '{"detail"' not in reply.text
        api = prof.get("/api/submissions/0")  # the JSON API keeps JSON
        assert api.headers["content-type"].startswith("application/json")


def test_topic_page_for_instructors_only(seeded):
    course, _, second, bob = seeded
    course.token("cy")  # on the roster, nothing submitted: listed, not counted in the pass rates (as the gradebook)
    with closing(page_login(course, course.instructor())) as prof:
        page = prof.get("/gradebook/topics/prng")
        assert page.status_code == 200 and 'id="topic"' in page.text
        assert f"/submissions/{second}#ex-prng-dropout" in page.text and f"/submissions/{bob}" in page.text
        assert 'id="rate-derive_keys">2 / 2 (100%)' in page.text  # ada's counted one is the later, full
        assert 'id="rate-dropout">1 / 2 (50%)' in page.text and "… speed" in page.text
        assert is_page(prof.get("/gradebook/topics/nope"), 404)
        me = prof.get("/me")
        assert me.status_code == 303 and me.headers["location"].endswith("/gradebook")  # not the login form
    with closing(page_login(course, course.token("ada"))) as ada:
        for path in ("/gradebook", "/gradebook/topics/prng"):
            refused = ada.get(path)
            assert is_page(refused, 403) and "for instructors" in refused.text and 'href="/me"' in refused.text
        assert ada.get("/me").status_code == 200
    with httpx_plain(course) as nobody:
        assert nobody.get("/gradebook/topics/prng").headers["location"].endswith("/login")


def httpx_plain(course):
    import httpx

    return httpx.Client(base_url=course.url, timeout=30)


def test_bulk_regrade_asks_first_then_queues_and_says_so(seeded):
    course, first, _, _ = seeded
    busy = seed_submission(course, "cy", {"prng": PAGES_PRNG_OK}, seeded_result("prng"), status="grading")
    with closing(page_login(course, course.instructor())) as prof:
        csrf = form_csrf(prof.get("/gradebook").text)
        ask = prof.post("/gradebook/regrade", data={"what": "topic:prng", "csrf": csrf})
        assert ask.status_code == 200 and "Regrade 4 submissions of prng?" in ask.text and 'value="yes"' in ask.text
        assert prof.get(f"/api/submissions/{first}", headers={"Authorization": "Bearer x"}).status_code == 401
        assert "status: <b>done" in prof.get(f"/submissions/{first}").text  # nothing queued yet
        done = prof.post("/gradebook/regrade", data={"what": "topic:prng", "confirm": "yes", "csrf": csrf})
        assert done.status_code == 200 and "Queued 3 submissions (1 skipped: being graded now)" in done.text
        page = prof.get(f"/submissions/{first}").text
        assert "status: <b>queued" in page or "status: <b>grading" in page, page[:3000]
        assert 'id="results-json"' in page and 'id="earlier"' in page
        one = prof.post("/gradebook/regrade", data={"what": str(busy), "csrf": csrf})
        assert one.status_code == 200 and "Queued 0 submissions (1 skipped" in one.text
        assert is_page(prof.post("/gradebook/regrade", data={"what": "topic:<x>", "csrf": csrf}), 400)
        assert is_page(prof.post("/gradebook/regrade", data={"what": "all", "confirm": "yes", "csrf": "bad"}), 403)
    with closing(page_login(course, course.token("ada"))) as ada:
        student = ada.get("/me").text
        assert 'class="results-json"' in student and "a regrade is under way" in student
        refused = ada.post("/gradebook/regrade", data={"what": "all", "confirm": "yes", "csrf": form_csrf(student)})
        assert is_page(refused, 403)


def test_a_student_cannot_make_the_diff_or_the_code_view_costly(course):
    """Files past the bounds: the diff page says they are too large to compare there (no
    difflib), the submission page shows plain numbered lines (no Pygments) with the same anchors;
    their honest twins (the seeded files above) are compared and highlighted."""
    from jaxlings.service import views

    filler = "".join(f"_v{i} = {i}  # <i>{i}</i> and some words\n" for i in range(views.MAX_DIFF_LINES + 1))
    assert len(filler) > views.MAX_HIGHLIGHT
    first = seed_submission(course, "ada", {"prng": PAGES_PRNG_BAD + filler}, seeded_result("prng"))
    second = seed_submission(course, "ada", {"prng": PAGES_PRNG_OK + filler[::-1]}, seeded_result("prng"))
    course.serve()
    with closing(page_login(course, course.token("ada"))) as ada:
        diff = ada.get(f"/submissions/{first}/diff/{second}")
        assert diff.status_code == 200 and "too large to compare here" in diff.text
        page = ada.get(f"/submissions/{first}")
        assert page.status_code == 200 and "too large to highlight here" in page.text
        assert 'id="src-prng-1"' in page.text and "&lt;i&gt;" in page.text and "<i>" not in page.text


def test_renders_are_kept_by_content_and_bounded():
    from jaxlings.service import views

    small_a, small_b = "x = 1\ny = 2\n", "x = 1\ny = 3\n"
    once = views.diff({"t": small_a}, {"t": small_b}, "#1", "#2")
    assert once[0].state == "changed" and once[0].html is not None and (once[0].added, once[0].removed) == (1, 1)
    assert views.diff({"t": small_a}, {"t": small_b}, "#1", "#2")[0] is once[0]  # kept, not diffed again
    assert views.highlighted("t", small_a, [1]) is views.highlighted("t", small_a, [1])
    assert views.highlighted("t", small_a, [1]) is not views.highlighted("t", small_b, [1])
    big = "z = 0\n" * (views.MAX_DIFF_LINES + 1)
    too_large = views.diff({"t": small_a}, {"t": big}, "#1", "#2")[0]
    assert (
        too_large.state == "too large" and too_large.html is None and too_large.lines == (2, views.MAX_DIFF_LINES + 1)
    )
    for i in range(views.RENDERED + 5):
        views.highlighted("t", f"a = {i}\n", [])
    assert len(views.RENDERS) <= views.RENDERED


def test_a_caller_has_only_so_many_costly_views_in_flight(course):
    """A submission's page, a diff and the similarity report are `costly`: with a caller's slots
    all held (as by slow views in flight), their next one is a 429 and nothing of it is worked
    out, while their cheap pages are served. The app in this
    process (so that the test can hold the slots), on the course's database."""
    from fastapi.testclient import TestClient

    from jaxlings.service import app as service_app
    from jaxlings.service import limits
    from jaxlings.service.state import AppState

    first = seed_submission(course, "ada", {"prng": PAGES_PRNG_BAD}, seeded_result("prng"))
    token = course.token("ada")
    app = service_app.create_app(course.settings())
    with TestClient(app, base_url=course.url, headers={"Origin": course.url}, follow_redirects=False) as client:
        held = AppState.of(app).costly
        assert isinstance(held, limits.PerCaller) and held.at_once == 2
        login = client.post("/login", data={"token": token, "csrf": form_csrf(client.get("/login").text)})
        assert login.status_code == 303, login.text
        assert client.get(f"/submissions/{first}").status_code == 200  # a free slot: served
        with held.held("student:ada"), held.held("student:ada"):
            refused = client.get(f"/submissions/{first}")
            assert refused.status_code == 429 and refused.headers["retry-after"] == "5"
            assert "still being prepared" in refused.text
            assert client.get("/me").status_code == 200  # a cheap page is not counted
        assert client.get(f"/submissions/{first}").status_code == 200  # released: served again


def test_per_caller_slots_are_each_callers_own():
    from fastapi import HTTPException

    from jaxlings.service import limits

    slots = limits.PerCaller(1)
    with slots.held("student:ada"):
        with slots.held("student:bob"):  # another caller's
            pass
        with pytest.raises(HTTPException) as refused:
            with slots.held("student:ada"):
                pass
        assert refused.value.status_code == 429
    with slots.held("student:ada"):  # released
        pass

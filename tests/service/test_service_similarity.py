"""The similarity report through a real `grade serve` (SQLite), submissions seeded straight into the
database: the ranking from each student's counted submission (`GET /api/similarity/{topic}` and
`/gradebook/similarity/{topic}`), two functions side by side with code escaped, the matched regions
and what was normalised on each side (in a real Chromium too), instructors only.
"""

from __future__ import annotations

import random
from contextlib import closing

import httpx
import pytest

from helpers import similarity as corpus
from helpers.service import artifact, course, headless_chromium, page_login, seed_submission, seeded_result  # noqa: F401
from jaxlings.grading import paths

pytestmark = pytest.mark.slow

HOSTILE = (
    "import jax.numpy as jnp\n\n\ndef histogram(x, nbins):\n"
    '    label = "</pre><script>alert(1)</script>"  # <b>bold</b>\n'
    "    return jnp.zeros(nbins, jnp.int32).at[x].add(len(label) - 37)\n"
)


HAL = "def histogram(x, nbins):\n    return _tally(x, nbins)\n"
HAL_HELPER = (
    "\n\ndef _tally(values, n):\n    scratch = values * 2\n    grid = jnp.arange(n)\n"
    "    hits = values[:, None] == grid[None, :]\n    return hits.sum(axis=0, dtype=jnp.int32)\n"
)
"""hal's copy of dee's (v3): the body in a helper of another name, locals renamed, a dead line,
`jnp.sum(hits, ...)` as `hits.sum(...)`."""


@pytest.fixture
def seeded(course):
    """at_updates: ada's histogram (a corpus variant in the stub), bob's planted copy of it (his
    counted submission; an earlier one of his is lower and does not count), cy and dee two other
    variants, eve and fay the reference unchanged, gus code with markup in it, hal a copy of dee's
    with its body moved into a helper and a synonym swapped in; a server."""
    stub = (paths.exercises_dir() / "at_updates.py").read_text()
    reference = (paths.solutions_dir() / "at_updates.py").read_text()
    texts = corpus.variants("at_updates", "histogram")
    copy = corpus.plant(texts["v5"], "histogram", random.Random(7))
    files = {
        "ada": corpus.with_function(stub, texts["v5"], "histogram"),
        "bob": corpus.with_function(stub, copy, "histogram"),
        "cy": corpus.with_function(stub, texts["v2"], "histogram"),
        "dee": corpus.with_function(stub, texts["v3"], "histogram"),
        "eve": reference,
        "fay": reference.replace("### BEGIN SOLUTION", "# all my own work"),
        "gus": corpus.with_function(stub, HOSTILE, "histogram"),
        "hal": corpus.with_function(stub, HAL, "histogram") + HAL_HELPER,
    }
    failing = {"histogram:correct": "wrong"}
    seed_submission(course, "bob", {"at_updates": stub}, seeded_result("at_updates", failing))
    ids = {}
    for login, text in files.items():
        # the jit test's fingerprint of the exported program, as the grader's trusted side records it
        # (gus's was graded before the fingerprint existed: his pairs are scored on the source alone)
        program = corpus.program_of("at_updates", "histogram", text) if login != "gus" else None
        data = {"histogram:jit": {"program_shingles": [f"{h:016x}" for h in sorted(program)]}} if program else {}
        ids[login] = seed_submission(course, login, {"at_updates": text}, seeded_result("at_updates", data=data))
    course.serve()
    return course, ids


def histogram_pairs(report: dict) -> list[dict]:
    return next(e for e in report["exercises"] if e["exercise"] == "histogram")["pairs"]


def test_the_api_ranks_the_copies_first_and_marks_the_reference(seeded):
    course, ids = seeded
    prof = httpx.Client(base_url=course.url, headers={"Authorization": f"Bearer {course.instructor()}"}, timeout=60)
    with closing(prof):
        reply = prof.get("/api/similarity/at_updates")
        assert reply.status_code == 200, reply.text
        report = reply.json()
        assert report["topic"] == "at_updates"
        assert [e["exercise"] for e in report["exercises"]] == [
            "scatter_ops",
            "histogram",
            "mask_fill",
            "lookup_and_clamp",
        ]
        pairs = histogram_pairs(report)
        assert next(e for e in report["exercises"] if e["exercise"] == "histogram")["compared"] == 8
        by_pair = {frozenset((p["a"], p["b"])): p for p in pairs}
        copy, split, ref = (by_pair[frozenset(k)] for k in (("ada", "bob"), ("dee", "hal"), ("eve", "fay")))
        # the two copies first, whatever was disguised; the reference pair marked and no evidence
        assert {frozenset((p["a"], p["b"])) for p in pairs[:2]} == {
            frozenset(("ada", "bob")),
            frozenset(("dee", "hal")),
        }
        assert copy["identical"] and split["identical"] and not copy["reference"]
        assert {copy["a_submission"], copy["b_submission"]} == {ids["ada"], ids["bob"]}
        assert ref["identical"] and ref["reference"] and ref["prescribed"] and ref["score"] < 0.2
        assert all(p["score"] < min(copy["score"], split["score"]) for p in pairs[2:])
        assert any("a call of `_tally`" not in n and "`_tally`" in n for n in split["a_notes"] + split["b_notes"])
        # the exported programs' side beside the source's, combined so that either side strong ranks high
        assert all(p["program_score"] is None for p in pairs if "gus" in (p["a"], p["b"]))
        assert all(p["program_score"] is not None for p in pairs if "gus" not in (p["a"], p["b"]))
        for p in pairs:
            s, q = p["source_score"], p["program_score"]
            assert p["score"] == pytest.approx(s if q is None else 1 - (1 - s) * (1 - q), abs=2e-4)
        # the other exercises are stubs for everyone but eve and fay: only their pair is compared
        scatter = report["exercises"][0]
        assert scatter["compared"] == 2 and scatter["pairs"][0]["reference"]
        assert len(histogram_pairs(prof.get("/api/similarity/at_updates?top=3").json())) == 3
        assert prof.get("/api/similarity/nonesuch").status_code == 404
        assert prof.get("/api/similarity/at_updates?top=0").status_code == 422


def test_the_api_is_for_instructors_only(seeded):
    course, _ = seeded
    assert httpx.get(f"{course.url}/api/similarity/at_updates").status_code == 401
    student = {"Authorization": f"Bearer {course.token('ada')}"}
    assert httpx.get(f"{course.url}/api/similarity/at_updates", headers=student).status_code == 403


def test_the_page_lists_pairs_and_shows_two_functions_side_by_side_escaped(seeded):
    course, ids = seeded
    with closing(page_login(course, course.instructor())) as prof:
        topic = prof.get("/gradebook/topics/at_updates")
        assert 'href="/gradebook/similarity/at_updates"' in topic.text
        page = prof.get("/gradebook/similarity/at_updates")
        assert page.status_code == 200 and 'id="sim-histogram"' in page.text
        assert "eve and fay" in page.text and 'class="ref"' in page.text
        link = f"/gradebook/similarity/at_updates/histogram/{ids['ada']}/{ids['bob']}"
        assert link in page.text or f"/gradebook/similarity/at_updates/histogram/{ids['bob']}/{ids['ada']}" in page.text
        side = prof.get(link)
        assert side.status_code == 200 and "ada" in side.text and "bob" in side.text
        assert 'id="written"' in side.text and 'id="normalised"' in side.text and 'class="hll"' in side.text
        assert 'id="what-normalised"' in side.text and "local names renamed" in side.text
        assert "exported program" in side.text and 'id="program-note"' in side.text
        hostile = prof.get(f"/gradebook/similarity/at_updates/histogram/{ids['gus']}/{ids['ada']}")
        assert hostile.status_code == 200
        assert "<script>alert(1)</script>" not in hostile.text and "&lt;/" in hostile.text
        assert "<b>bold</b>" not in hostile.text
        assert prof.get(f"/gradebook/similarity/at_updates/histogram/{ids['ada']}/999999").status_code == 404
        assert prof.get(f"/gradebook/similarity/at_updates/nonesuch/{ids['ada']}/{ids['bob']}").status_code == 404
        assert prof.get("/gradebook/similarity/nonesuch").status_code == 404
        assert 'href="/gradebook/similarity/at_updates.json"' in page.text  # "as JSON", with the page's session
        as_json = prof.get("/gradebook/similarity/at_updates.json", params={"top": 3})
        assert as_json.status_code == 200 and as_json.headers["content-type"].startswith("application/json")
        assert as_json.json()["topic"] == "at_updates" and len(histogram_pairs(as_json.json())) == 3
        assert prof.get("/gradebook/similarity/nonesuch.json").status_code == 404


def test_the_page_is_for_instructors_only(seeded):
    course, ids = seeded
    with closing(page_login(course, course.token("ada"))) as ada:
        for path in (
            "/gradebook/similarity/at_updates",
            "/gradebook/similarity/at_updates.json",
            f"/gradebook/similarity/at_updates/histogram/{ids['ada']}/{ids['bob']}",
        ):
            refused = ada.get(path)
            assert refused.status_code == 403 and refused.headers["content-type"].startswith("text/html")
            assert "bob" not in refused.text
    with closing(httpx.Client(base_url=course.url, timeout=30)) as nobody:
        reply = nobody.get("/gradebook/similarity/at_updates")
        assert reply.status_code == 303 and reply.headers["location"].endswith("/login")


def _long_histogram(stub: str, n: int) -> str:
    """The stub with a `histogram` of `n` live statements: reading it takes tenths of a second,
    so that a report over it cannot be done the instant it is asked for."""
    body = "".join(f"    a{i} = x * {i} + a{i - 1 if i else 0}\n" for i in range(n))
    fn = f"def histogram(x, nbins):\n    a0 = x\n{body}    return jnp.zeros(nbins, jnp.int32).at[a{n - 1}].add(1)\n"
    return corpus.with_function(stub, fn, "histogram")


def test_a_report_not_ready_within_the_wait_is_said_so_and_worked_out_once(course):
    """With no wait at all (JAXLINGS_SIMILARITY_WAIT=0) a view whose report is not done cannot
    have it: the API answers 202 with Retry-After, the page says so and reloads itself; the work
    goes on off the request path, a later view has it, and the same inputs are not worked out
    again. The honest twin is every test above (a 10 s wait)."""
    from helpers.service import wait_for

    stub = (paths.exercises_dir() / "at_updates.py").read_text()
    texts = corpus.variants("at_updates", "histogram")
    seed_submission(course, "ada", {"at_updates": _long_histogram(stub, 2000)}, seeded_result("at_updates"))
    bob = corpus.with_function(stub, texts["v3"], "histogram")
    seed_submission(course, "bob", {"at_updates": bob}, seeded_result("at_updates"))
    course.serve(JAXLINGS_SIMILARITY_WAIT="0")
    prof = httpx.Client(base_url=course.url, headers={"Authorization": f"Bearer {course.instructor()}"}, timeout=60)
    with closing(prof), closing(page_login(course, course.instructor())) as pages:
        first = prof.get("/api/similarity/at_updates")
        assert first.status_code == 202 and first.headers["retry-after"] == "5", first.text
        assert "being worked out" in first.json()["detail"]
        ready = wait_for(
            lambda: (r := prof.get("/api/similarity/at_updates")).status_code == 200 and r, 60, "the report"
        )
        assert {histogram_pairs(ready.json())[0]["a"], histogram_pairs(ready.json())[0]["b"]} == {"ada", "bob"}
        page = pages.get("/gradebook/similarity/at_updates")  # the same inputs: the report kept
        assert page.status_code == 200 and 'id="pending"' not in page.text and 'id="sim-histogram"' in page.text
        seed_submission(course, "cy", {"at_updates": _long_histogram(stub, 2001)}, seeded_result("at_updates"))
        pending = pages.get("/gradebook/similarity/at_updates")  # a new counted submission: new inputs
        assert pending.status_code == 202 and 'id="pending"' in pending.text
        assert '<meta http-equiv="refresh" content="5">' in pending.text
        wait_for(
            lambda: (r := pages.get("/gradebook/similarity/at_updates")).status_code == 200 and "cy" in r.text,
            60,
            "the report with cy",
        )


def test_the_pair_page_in_chromium_shows_the_matched_regions_side_by_side(seeded):
    """dee's function and hal's copy of it (the body in a helper, a synonym, a dead line): in a real
    browser, the two sides stand side by side; each marks its matched lines where it wrote them
    (hal's in the helper, shown as written, not in the one-line wrapper); what was normalised is
    listed per side: the helper read in place, the synonym, the dead line with its line number.
    A pair that shares little marks little. Screenshots to tests/artifacts/."""
    course, ids = seeded
    with headless_chromium() as browser:
        page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
        page.set_default_timeout(30_000)
        page.goto(f"{course.url}/login")
        page.fill("#token", course.instructor())
        page.click("#login")
        page.goto(f"{course.url}/gradebook/similarity/at_updates")
        page.click(f'a[href$="/histogram/{ids["dee"]}/{ids["hal"]}"], a[href$="/histogram/{ids["hal"]}/{ids["dee"]}"]')
        assert "/gradebook/similarity/at_updates/histogram/" in page.url
        dee, hal = page.locator("#written-dee"), page.locator("#written-hal")
        left, right = dee.bounding_box(), hal.bounding_box()
        assert (
            left
            and right
            and abs(left["y"] - right["y"]) < 5
            and (left["x"] + left["width"] <= right["x"] or right["x"] + right["width"] <= left["x"])
        )
        assert dee.locator(".hll").count() >= 3 and hal.locator(".hll").count() >= 3
        marked = " ".join(hal.locator(".hll").all_text_contents())
        assert "hits" in marked and "return _tally" not in marked  # the helper's lines, not the wrapper's
        assert "def _tally(values, n):" in hal.text_content()  # the helper shown as written
        said = page.locator("#normalised-hal").text_content()
        assert "a call of `_tally` and nothing else" in said
        assert "read as `jax.numpy.sum(hits" in said and "`scratch = values * 2` dropped" in said and "line " in said
        page.screenshot(path=str(artifact("similarity-pair.png")), full_page=True)

        page.goto(f"{course.url}/gradebook/similarity/at_updates/histogram/{ids['cy']}/{ids['hal']}")
        assert page.locator("#written-cy .hll").count() <= 1  # bincount against one-hot rows: little in common

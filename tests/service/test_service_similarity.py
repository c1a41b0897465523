"""The similarity report through a real `grade serve` (SQLite), submissions seeded straight into the
database: the ranking from each student's counted submission (`GET /api/similarity/{topic}` and
`/gradebook/similarity/{topic}`), two functions side by side with code escaped, instructors only.
"""

from __future__ import annotations

import random
from contextlib import closing

import httpx
import pytest

from helpers import similarity as corpus
from helpers.service import course, page_login, seed_submission, seeded_result  # noqa: F401
from jaxlings.grading import paths

pytestmark = pytest.mark.slow

HOSTILE = (
    "import jax.numpy as jnp\n\n\ndef histogram(x, nbins):\n"
    '    label = "</pre><script>alert(1)</script>"  # <b>bold</b>\n'
    "    return jnp.zeros(nbins, jnp.int32).at[x].add(len(label) - 37)\n"
)


@pytest.fixture
def seeded(course):
    """at_updates: ada's histogram (a corpus variant in the stub), bob's planted copy of it (his
    counted submission; an earlier one of his is lower and does not count), cy and dee two other
    variants, eve and fay the reference unchanged, gus code with markup in it; a server."""
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
        assert next(e for e in report["exercises"] if e["exercise"] == "histogram")["compared"] == 7
        top = {frozenset((p["a"], p["b"])): p for p in pairs[:2]}
        assert set(top) == {frozenset(("ada", "bob")), frozenset(("eve", "fay"))}
        assert all(p["score"] == 1.0 and p["identical"] for p in top.values())
        assert top[frozenset(("eve", "fay"))]["reference"] and not top[frozenset(("ada", "bob"))]["reference"]
        assert {top[frozenset(("ada", "bob"))]["a_submission"], top[frozenset(("ada", "bob"))]["b_submission"]} == {
            ids["ada"],
            ids["bob"],
        }
        assert all(p["score"] < 0.5 for p in pairs[2:])
        # the exported programs' side beside the source's: the copy and the reference lower alike
        assert all(p["program_score"] == 1.0 and p["source_score"] == 1.0 for p in top.values())
        assert all(p["program_score"] is None for p in pairs if "gus" in (p["a"], p["b"]))
        assert all(p["program_score"] is not None for p in pairs if "gus" not in (p["a"], p["b"]))
        for p in pairs:
            combined = p["source_score"] if p["program_score"] is None else (p["source_score"] + p["program_score"]) / 2
            assert p["score"] == pytest.approx(combined, abs=1e-4)
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
        assert "exported program 1.00" in side.text
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

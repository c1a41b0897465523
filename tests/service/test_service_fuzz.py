"""Property-based attacks (hypothesis) on a real `grade serve`: no input to the API or the pages
gets an answer of 500 or more, and the server is alive and has logged no traceback afterwards.

Drawn: submission ids of every shape on every id route, query parameters, `topics` lists,
headers, upload bodies (random bytes; zips of random names, contents and compression methods;
truncated and bit-flipped zips), and the pages' form fields. One server (SQLite, no worker)
serves the whole module; 400 examples a test, so the module runs in well under a minute.
"""

from __future__ import annotations

import io
import string
import warnings
import zipfile
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.service import SOLUTIONS, PageSession, api, csrf_field, log_in, new_course, plain, serve_log, zip_of

pytestmark = pytest.mark.slow  # about 3600 requests: half a minute on a quiet machine
PRNG = (SOLUTIONS / "prng.py").read_bytes()
FUZZ = settings(max_examples=400, deadline=None, database=None, suppress_health_check=list(HealthCheck))
TOPIC_FILES = [
    "prng.py",
    "at_updates.py",
    "exercises/prng.py",
    "a/b/prng.py",
    "../prng.py",
    "/prng.py",
    "C:prng.py",
    "prng.PY",
    "prng",
    "prng.py/",
    "..",
    ".",
    "prng.pyc",
    "__init__.py",
    "pr\\ng.py",
    "exercises\\prng.py",
]
METHODS = [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA]
# what httpx will put in a header: visible ASCII and spaces inside (a value that is not latin-1, or
# holds CR/LF, is refused by the client before it is sent)
HEADER_TEXT = st.text(
    st.characters(min_codepoint=0x20, max_codepoint=0xFF, blacklist_characters="\x7f"), max_size=200
).map(lambda v: v.strip(" \t"))
HEADER_NAMES = [
    "Authorization",
    "Content-Type",
    "Origin",
    "Referer",
    "Cookie",
    "Accept",
    "Accept-Encoding",
    "Accept-Language",
    "Content-Encoding",
    "X-Forwarded-For",
    "X-Forwarded-Proto",
    "Range",
    "If-None-Match",
    "If-Modified-Since",
    "Expect",
    "Upgrade",
    "Forwarded",
    "User-Agent",
]


@pytest.fixture(scope="module")
def target(tmp_path_factory):
    """The server, a student's and an instructor's bearer tokens and page sessions."""
    course = new_course(
        tmp_path_factory.mktemp("fuzz"),
        JAXLINGS_RATE_LIMIT="100000",
        JAXLINGS_QUOTA_BYTES=str(1 << 30),
        JAXLINGS_MAX_UPLOAD_BYTES="200000",
        JAXLINGS_MAX_UNPACKED_BYTES="800000",
    )
    (course.data_dir / "course.toml").write_text("[leaderboard]\nenabled = true\n")  # its routes fuzzed too
    course.serve()
    student, prof = course.token("fuzzed"), course.instructor()
    with api(course, student) as client:
        first = client.post(
            "/api/submissions", content=zip_of({"prng.py": PRNG}), headers={"Content-Type": "application/zip"}
        )
        assert first.status_code == 202, first.text
    yield {
        "course": course,
        "student": student,
        "prof": prof,
        "page": log_in(course, student),
        "prof_page": log_in(course, prof),
        "sub": first.json()["id"],
    }
    course.stop()
    print(f"--- serve.log (tail) ---\n{course.log('serve.log')}")


def below_500(response: httpx.Response) -> None:
    assert response.status_code < 500, (
        f"{response.request.method} {response.request.url}: {response.status_code} {response.text[:300]}"
    )


def alive(target) -> None:
    """The server still answers, and nothing it answered cost a traceback in its log."""
    course = target["course"]
    assert httpx.get(f"{course.url}/api/health", timeout=10).status_code == 200
    log = serve_log(course)
    assert "Traceback" not in log, log[log.find("Traceback") - 500 :][:4000]


# ---------------------------------------------------------------- parameters

IDS = st.one_of(
    st.integers(-(2**80), 2**80).map(str),
    st.text(min_size=1, max_size=30),
    st.sampled_from(
        [
            "0",
            "-1",
            "99999999999999999999",
            "2147483648",
            "2147483647",
            "1e9",
            "0x10",
            "²",
            "١",
            " 1",
            "1 ",
            "+1",
            "01",
            "1.0",
            "nan",
            "inf",
            "%00",
            "..",
            ".",
        ]
    ),
)


def test_any_submission_id_on_any_id_route(target):
    course, page = target["course"], target["page"]
    with api(course, target["student"]) as s, api(course, target["prof"]) as t, plain(course) as p:
        routes = [
            lambda i: s.get(f"/api/submissions/{i}"),
            lambda i: s.get(f"/api/submissions/{i}/results.json"),
            lambda i: t.post(f"/api/submissions/{i}/regrade"),
            lambda i: p.get(f"/submissions/{i}", headers=page.headers(None)),
            lambda i: p.get(f"/submissions/{i}/results.json", headers=page.headers(None)),
        ]

        @FUZZ
        @given(raw=IDS, route=st.sampled_from(range(len(routes))))
        def check(raw: str, route: int) -> None:
            below_500(routes[route](quote(raw, safe="")))

        check()
    alive(target)


PARAM_NAMES = st.one_of(
    st.sampled_from(["limit", "student", "topic", "all", "topics", "foo", "", "limit[]"]), st.text(max_size=20)
)


def test_any_query_parameters(target):
    course = target["course"]
    with api(course, target["student"]) as s, api(course, target["prof"]) as t:

        @FUZZ
        @given(
            params=st.lists(st.tuples(PARAM_NAMES, st.text(max_size=60)), max_size=6),
            call=st.sampled_from(["history-student", "history-prof", "regrade", "csv", "topics", "health"]),
        )
        def check(params: list[tuple[str, str]], call: str) -> None:
            r = {
                "history-student": lambda: s.get("/api/submissions", params=params),
                "history-prof": lambda: t.get("/api/submissions", params=params),
                "regrade": lambda: t.post("/api/regrade", params=params),
                "csv": lambda: t.get("/api/gradebook.csv", params=params),
                "topics": lambda: s.get("/api/topics", params=params),
                "health": lambda: s.get("/api/health", params=params),
            }[call]()
            below_500(r)

        check()
    alive(target)


def test_any_topics_list(target):
    course = target["course"]
    names = st.one_of(
        st.sampled_from(["prng", "at_updates", "jit_basics", "", "PRNG", "prng ", "prng,at_updates"]),
        st.text(max_size=40),
    )
    with api(course, target["student"]) as s:

        @FUZZ
        @given(topics=st.lists(names, max_size=8), note=st.integers(0, 10**6))
        def check(topics: list[str], note: int) -> None:
            body = zip_of({"prng.py": PRNG + f"\n# {note}\n".encode(), "at_updates.py": b"x = 1\n"})
            below_500(
                s.post(
                    "/api/submissions",
                    params={"topics": topics},
                    content=body,
                    headers={"Content-Type": "application/zip"},
                )
            )

        check()
    alive(target)


def test_any_headers(target):
    course = target["course"]
    body = zip_of({"prng.py": PRNG})
    with plain(course) as client:

        @FUZZ
        @given(
            headers=st.dictionaries(st.sampled_from(HEADER_NAMES), HEADER_TEXT, max_size=6),
            with_token=st.booleans(),
            call=st.sampled_from(["me", "submit", "login-page", "login", "me-page", "csv"]),
        )
        def check(headers: dict[str, str], with_token: bool, call: str) -> None:
            sent = {k: v.encode("latin-1") for k, v in headers.items()}
            if with_token and "Authorization" not in sent:
                sent["Authorization"] = f"Bearer {target['student']}".encode()
            if call == "submit":
                r = client.post("/api/submissions", content=body, headers=sent)
            elif call == "login":
                r = client.post("/login", data={"token": target["student"], "csrf": "x"}, headers=sent)
            else:
                path = {"me": "/api/me", "login-page": "/login", "me-page": "/me", "csv": "/api/gradebook.csv"}[call]
                r = client.get(path, headers=sent)
            below_500(r)

        check()
    alive(target)


# ---------------------------------------------------------------- upload shapes


@st.composite
def zips(draw) -> bytes:
    """A zip of random members (names, contents, methods), sometimes truncated or with bytes changed."""
    buffer = io.BytesIO()
    names = st.one_of(
        st.sampled_from(TOPIC_FILES),
        st.text(string.ascii_letters + string.digits + "._-/\\: ", min_size=1, max_size=30),
    )
    with zipfile.ZipFile(buffer, "w") as archive, warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # a name twice is one of the shapes drawn
        for _ in range(draw(st.integers(0, 4))):
            info = zipfile.ZipInfo(draw(names), (1980, 1, 1, 0, 0, 0))
            info.compress_type = draw(st.sampled_from(METHODS))
            info.external_attr = draw(st.sampled_from([0o644 << 16, 0o120777 << 16, 0o40755 << 16, 0]))
            content = draw(
                st.one_of(st.binary(max_size=2000), st.just(PRNG), st.integers(1, 300_000).map(lambda n: b"#" * n))
            )
            archive.writestr(info, content)
    data = bytearray(buffer.getvalue())
    for _ in range(draw(st.integers(0, 3))):  # flipped bytes
        if data:
            data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
    if draw(st.booleans()):  # truncated
        data = data[: draw(st.integers(0, len(data)))]
    return bytes(data)


def test_any_upload_body(target):
    course = target["course"]
    with api(course, target["student"]) as s:

        @FUZZ
        @given(
            body=st.one_of(st.binary(max_size=4000), zips()),
            content_type=st.sampled_from(["application/zip", "application/octet-stream", "text/plain", None]),
        )
        def check(body: bytes, content_type: str | None) -> None:
            headers = {"Content-Type": content_type} if content_type else {}
            below_500(s.post("/api/submissions", content=body, headers=headers))

        check()
    alive(target)


# ---------------------------------------------------------------- the pages' forms


def test_any_page_upload(target):
    course, page = target["course"], target["page"]
    with plain(course) as client:

        @FUZZ
        @given(
            body=st.one_of(st.binary(max_size=3000), zips()),
            filename=st.text(max_size=40),
            csrf=st.sampled_from(["own", "none", "junk"]),
        )
        def check(body: bytes, filename: str, csrf: str) -> None:
            form = {"own": {"csrf": page.csrf}, "none": {}, "junk": {"csrf": "junk"}}[csrf]
            below_500(
                client.post(
                    "/me/submit",
                    headers=page.headers(course.url),
                    data=form,
                    files={"file": (filename or "x.zip", body, "application/zip")},
                )
            )

        check()
    alive(target)


def test_any_regrade_form_value(target):
    course, prof = target["course"], target["prof_page"]
    values = st.one_of(
        st.text(max_size=300),
        st.sampled_from(["all", "topic:prng", "topic:", "²", "1e99", "0", "-1"]),
        st.integers(-(2**70), 2**70).map(str),
        st.text(max_size=30).map(lambda t: "topic:" + t),
    )
    with plain(course) as client:

        @FUZZ
        @given(
            what=st.one_of(st.none(), values),
            extra=st.dictionaries(st.text(max_size=10), st.text(max_size=20), max_size=3),
        )
        def check(what: str | None, extra: dict[str, str]) -> None:
            form = {**extra, **({"what": what} if what is not None else {}), "csrf": prof.csrf}
            below_500(client.post("/gradebook/regrade", headers=prof.headers(course.url), data=form))

        check()
    alive(target)


def test_any_login_form_and_login_url(target):
    course = target["course"]
    with plain(course) as client:
        pair = client.get("/login")
        field = csrf_field(pair.text)

        @FUZZ
        @given(
            token=st.one_of(st.text(max_size=100), st.just(target["student"])),
            csrf=st.one_of(st.text(max_size=80), st.just(field)),
            error=st.text(max_size=100),
            origin=st.sampled_from([None, course.url, "http://evil.example", "null", ""]),
        )
        def check(token: str, csrf: str, error: str, origin: str | None) -> None:
            headers = {"Cookie": f"jaxlings_login_csrf={pair.cookies.get('jaxlings_login_csrf', '')}"}
            if origin is not None:
                headers["Origin"] = origin
            below_500(client.post("/login", data={"token": token, "csrf": csrf}, headers=headers))
            below_500(client.get("/login", params={"error": error}))

        check()
    alive(target)


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=10,
)
FIELDS = ["login", "topic", "days", "hours", "reason", "name", "email", "timezone", "pseudonym", "shorten", "extra"]
WORDS = st.sampled_from(
    ["America", "Europe/Zurich", "UTC", "../etc", "prng", "fuzzed", "Аlice", "0", "1e308", "-1", "", " ", "\x00"]
)
BODIES = st.one_of(JSON, st.dictionaries(st.sampled_from(FIELDS), st.one_of(JSON, WORDS), max_size=6))


def test_any_json_body_on_the_settings_and_roster_routes(target):
    """Time zones, pseudonyms (their tries run out: 429), extensions, enrolments and drops, with
    bodies of any shape and values of any type, on the student's and the instructor's routes."""
    course = target["course"]
    with api(course, target["student"]) as s, api(course, target["prof"]) as t:
        routes = [
            lambda body, _: s.put("/api/me/timezone", json=body),
            lambda body, _: s.put("/api/me/pseudonym", json=body),
            lambda body, _: s.delete("/api/me/pseudonym"),
            lambda body, _: t.post("/api/extensions", json=body),
            lambda body, _: t.post("/api/students", json=body),
            lambda body, login: t.delete(f"/api/students/{quote(login, safe='')}"),
            lambda body, login: t.post(f"/api/students/{quote(login, safe='')}/token"),
        ]

        @FUZZ
        @given(body=BODIES, login=st.one_of(WORDS, st.text(min_size=1, max_size=30)), route=st.integers(0, 6))
        def check(body: object, login: str, route: int) -> None:
            if route >= 5 and login.strip() == "fuzzed":
                return  # the fuzzing's own student stays on the roster, with their token
            below_500(routes[route](body, login))

        check()
    alive(target)


def test_any_settings_form(target):
    course, page = target["course"], target["page"]
    with plain(course) as client:

        @FUZZ
        @given(
            path=st.sampled_from(["/me/timezone", "/me/pseudonym"]),
            form=st.dictionaries(
                st.sampled_from(["timezone", "pseudonym", "action", "x"]), WORDS | st.text(max_size=80)
            ),
        )
        def check(path: str, form: dict[str, str]) -> None:
            below_500(client.post(path, headers=page.headers(course.url), data={**form, "csrf": page.csrf}))

        check()
    alive(target)


def test_the_page_session_survives_the_fuzzing(target):
    """The honest twin: after all of the above, the student's page and the API still serve them."""
    course, page = target["course"], target["page"]
    assert isinstance(page, PageSession)
    with plain(course) as client:
        assert client.get("/me", headers=page.headers(None)).status_code == 200
    with api(course, target["student"]) as s:
        assert s.get(f"/api/submissions/{target['sub']}").status_code == 200
    alive(target)

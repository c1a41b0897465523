"""The server-rendered pages: log in, a student's page (history, best per topic, an upload form),
a submission's verdicts beside its code (refreshing itself until graded), the diff between two
submissions, the instructor's gradebook and a topic's page, regrades (bulk ones confirmed first).

A page knows its visitor by a page session (`websession`), never by a token in a cookie. Every
form carries the session's CSRF token and must come from the service's own origin; errors are
rendered on the page, never taken from the URL.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Form, HTTPException, Query, Request, Response
from fastapi.responses import JSONResponse, RedirectResponse
from sqlalchemy import select
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile

from jaxlings.grading.rules import dates as rules_line
from jaxlings.grading.rules import length as rule_length
from jaxlings.service import (
    auth,
    deadlines,
    jobs,
    operations,
    plots,
    reports,
    scores,
    similarity,
    storage,
    submitting,
    views,
    websession,
)
from jaxlings.service.auth import Identity
from jaxlings.service.config import Settings
from jaxlings.service.db import DONE, FAILED, Student, Submission, WebSession
from jaxlings.service.deps import (
    FOREIGN,
    MAX_ID,
    SessionDep,
    SettingsDep,
    StateDep,
    check_form,
    instructor_visitor,
    read_body,
    visible,
    visitor,
)
from jaxlings.service.rendering import render, to_login
from jaxlings.service.security import same_origin
from jaxlings.service.state import AppState

SIMILAR_TOP = 15
"""Pairs shown per exercise on the similarity page (the API's `top` shows more)."""


router = APIRouter(include_in_schema=False)


@router.get("/")
def index(request: Request, settings: SettingsDep, session: SessionDep) -> Response:
    found = visitor(request, session)
    return to_login(settings) if found is None else _home(settings, found[0])


@router.get("/login")
def login_form(request: Request, settings: SettingsDep) -> Response:
    return _login_page(request, settings)


@router.post("/login")
def login(
    request: Request,
    settings: SettingsDep,
    session: SessionDep,
    token: Annotated[str, Form(max_length=4096)] = "",
    csrf: Annotated[str, Form(max_length=200)] = "",
) -> Response:
    if not same_origin(request, settings) or not websession.same(
        request.cookies.get(websession.LOGIN_COOKIE, ""), csrf
    ):
        return _login_page(
            request, settings, 403, "This login form came from another site or has expired; log in again here."
        )
    token = token.strip()
    who = auth.identify(session, token, settings) if token else None
    if who is None:
        return _login_page(request, settings, 401, "That token is not known. Ask your instructor for yours.")
    value, _ = websession.start(session, who, settings)
    response = _home(settings, who)
    response.set_cookie(
        websession.COOKIE, value, max_age=int(settings.session_hours * 3600), **websession.cookie_options(settings)
    )
    response.delete_cookie(websession.LOGIN_COOKIE, path=settings.base_path or "/")
    return response


@router.post("/logout")
def logout(
    request: Request, settings: SettingsDep, session: SessionDep, csrf: Annotated[str, Form(max_length=200)] = ""
) -> Response:
    found = visitor(request, session)
    if found is not None:
        check_form(request, settings, found[1], csrf)
        websession.end(session, request.cookies.get(websession.COOKIE, ""))
    response = to_login(settings)
    response.delete_cookie(websession.COOKIE, path=settings.base_path or "/")
    return response


@router.get("/me")
def student_page(request: Request, state: StateDep, session: SessionDep) -> Response:
    found = visitor(request, session)
    if found is None:
        return to_login(state.settings)
    if found[0].is_instructor:
        return _home(state.settings, found[0])
    return _student_page(request, state, session, found)


@router.post("/me/pseudonym")
def page_pseudonym(
    request: Request,
    state: StateDep,
    session: SessionDep,
    pseudonym: Annotated[str, Form(max_length=1000)] = "",
    action: Annotated[str, Form(max_length=10)] = "set",
    csrf: Annotated[str, Form(max_length=200)] = "",
) -> Response:
    """The student's page's pseudonym form: choose one (`action=set`) or leave the board
    (`action=clear`); back to the page, or the page again with why it was refused."""
    name = None if action == "clear" else pseudonym
    return _student_setting(
        request,
        state,
        session,
        csrf,
        lambda who: operations.set_pseudonym(state, session, who, name),
        "leaderboard",
    )


@router.post("/me/timezone")
def page_timezone(
    request: Request,
    state: StateDep,
    session: SessionDep,
    timezone: Annotated[str, Form(max_length=64)] = "",
    csrf: Annotated[str, Form(max_length=200)] = "",
) -> Response:
    """The student's page's time-zone form: dates shown in the zone chosen ("" for the course's);
    back to the page, or the page again saying why the zone was refused."""
    return _student_setting(
        request, state, session, csrf, lambda who: operations.set_timezone(session, who, timezone), "best"
    )


@router.get("/leaderboard")
def leaderboard_page(request: Request, state: StateDep, session: SessionDep) -> Response:
    """The speed leaderboard (any logged-in visitor, when the course has one), their own rows marked."""
    found = visitor(request, session)
    if found is None:
        return to_login(state.settings)
    board = operations.leaderboard_view(state, session, found[0])
    return render(request, "leaderboard.html", who=found[0], csrf=found[1].csrf, board=board)


@router.post("/me/submit")
async def page_submit(request: Request, state: StateDep) -> Response:
    if not same_origin(request, state.settings):
        raise HTTPException(403, FOREIGN)
    file, csrf = await _upload_form(request, state.settings.max_upload_bytes)
    return await run_in_threadpool(_page_submit, request, state, file, csrf)


@router.get("/submissions/{submission_id}")
def submission_page(request: Request, state: StateDep, session: SessionDep, submission_id: int) -> Response:
    found = visitor(request, session)
    if found is None:
        return to_login(state.settings)
    who, row = found
    sub = visible(session, who, submission_id)
    result = json.loads(sub.result_json) if sub.result_json else None
    files = views.topic_files(session, sub)
    with operations.costly(state, who):
        grouped = views.grouped(sub, files)
    return render(
        request,
        "submission.html",
        who=who,
        csrf=row.csrf,
        sub=sub,
        result=result,
        topics=grouped,
        left_out=_left_out(state, session, sub, files),
        counts=scores.counted_for(session, state.rules, sub),
        previous=_previous(session, sub),
        code_css=views.code_css(),
        position=jobs.position(session, sub),
        pending=sub.status not in (DONE, FAILED),
    )


@router.get("/submissions/{older_id}/diff/{newer_id}")
def diff_page(request: Request, state: StateDep, session: SessionDep, older_id: int, newer_id: int) -> Response:
    """Two submissions of one student compared file by file; 404 unless both are the caller's
    to see and of the same student (exactly like ones that do not exist)."""
    found = visitor(request, session)
    if found is None:
        return to_login(state.settings)
    older, newer = visible(session, found[0], older_id), visible(session, found[0], newer_id)
    if older.student_id != newer.student_id:
        raise HTTPException(404, f"no submission {newer_id} of the student of submission {older_id}")
    with operations.costly(state, found[0]):
        files = views.diff(
            views.topic_files(session, older), views.topic_files(session, newer), f"#{older.id}", f"#{newer.id}"
        )
    return render(
        request,
        "diff.html",
        who=found[0],
        csrf=found[1].csrf,
        older=older,
        newer=newer,
        files=files,
        older_topics=scores.topic_results(older),
        newer_topics=scores.topic_results(newer),
        code_css=views.code_css(),
        max_diff_lines=views.MAX_DIFF_LINES,
    )


@router.get("/submissions/{submission_id}/results.json")
def submission_results(request: Request, settings: SettingsDep, session: SessionDep, submission_id: int) -> Response:
    found = visitor(request, session)
    if found is None:
        return to_login(settings)
    return operations.results_download(visible(session, found[0], submission_id))


@router.get("/gradebook")
def gradebook_page(request: Request, state: StateDep, session: SessionDep) -> Response:
    """The instructor's gradebook: every student's counted score per topic (`scores`), the
    figures (`plots`: scores per topic, submissions over time, pass rates per exercise) and the
    latest 50 submissions with their regrade forms."""
    found = instructor_visitor(request, session)
    if found is None:
        return to_login(state.settings)
    rows, course = operations.standings(state, session)
    submitted = {t: [r.score(t) for r in rows if t in r.topics] for t in course.topics}
    histograms = {
        t: plots.histogram_svg(got, course.max_score(t), t, missing=len(rows) - len(got))
        for t, got in submitted.items()
        if got
    }
    rates = plots.pass_rates(rows, course)
    recent = session.scalars(select(Submission).order_by(Submission.id.desc()).limit(50))
    return render(
        request,
        "gradebook.html",
        who=found[0],
        csrf=found[1].csrf,
        rows=rows,
        course=course,
        topics=course.topics,
        histograms=histograms,
        unsubmitted=[t for t, got in submitted.items() if not got],
        passrates={t: plots.pass_rate_svg(t, rs) for t, rs in rates.items()},
        hardest=plots.hardest(rates),
        timeline=plots.timeline_svg(list(session.scalars(select(Submission.created_at)))),
        recent=list(recent),
    )


@router.get("/gradebook.csv")
def gradebook_csv(
    request: Request,
    state: StateDep,
    session: SessionDep,
    format: Annotated[str, Query(max_length=20)] = "csv",
    canvas_ids: Annotated[str, Query(max_length=2000)] = "",
    topics: Annotated[list[str] | None, Query(max_length=50)] = None,
) -> Response:
    """The gradebook export (`?format=csv|canvas|nbgrader&topics=...`, as `/api/gradebook.csv`)."""
    if instructor_visitor(request, session) is None:
        return to_login(state.settings)
    return operations.csv_download(state, session, format, canvas_ids, topics or ())


@router.get("/gradebook/topics/{topic}")
def topic_page(request: Request, state: StateDep, session: SessionDep, topic: str) -> Response:
    """One topic, students x exercises: each cell the counted submission's exercise score and
    the checks it failed; the pass rate per exercise below."""
    found = instructor_visitor(request, session)
    if found is None:
        return to_login(state.settings)
    if topic not in state.topics:
        raise HTTPException(404, "no such topic in this course; the gradebook lists them")
    rows, course = operations.standings(state, session)
    exercises = course.exercises[topic]
    table, rates = views.topic_table(rows, topic, list(exercises))
    rules = state.rules
    window = rules.window(topic)
    return render(
        request,
        "topic.html",
        who=found[0],
        csrf=found[1].csrf,
        topic=topic,
        exercises=exercises,
        max_score=course.max_score(topic),
        table=table,
        rates=rates,
        dates=rules_line(window, rules) if topic in rules.topics else "",
        extensions=deadlines.granted_on(session, topic),
        timezone=rules.timezone,
        length=rule_length,
    )


@router.get("/gradebook/similarity/{topic}.json")
def similarity_json(
    request: Request,
    state: StateDep,
    session: SessionDep,
    topic: str,
    top: Annotated[int, Query(ge=1, le=1000)] = 20,
) -> Response:
    """The report as `GET /api/similarity/{topic}` gives it, for the page session (the page's
    "as JSON" link: a browser sends no bearer token)."""
    found = instructor_visitor(request, session)
    if found is None:
        return to_login(state.settings)
    answer = operations.similarity_answer(topic, _similarity(state, session, found[0], topic), top)
    return answer if isinstance(answer, Response) else JSONResponse(answer.model_dump())


@router.get("/gradebook/similarity/{topic}")
def similarity_page(request: Request, state: StateDep, session: SessionDep, topic: str) -> Response:
    """The similarity report of one topic: per exercise, the most alike pairs of students'
    counted submissions, each linking to the two functions side by side."""
    found = instructor_visitor(request, session)
    if found is None:
        return to_login(state.settings)
    rankings = _similarity(state, session, found[0], topic)
    if rankings is None:
        return _report_pending(request, found[0], topic)
    return render(request, "similarity.html", who=found[0], topic=topic, rankings=rankings, top=SIMILAR_TOP)


@router.get("/gradebook/similarity/{topic}/{exercise}/{a}/{b}")
def similarity_pair(
    request: Request, state: StateDep, session: SessionDep, topic: str, exercise: str, a: int, b: int
) -> Response:
    """Two students' functions for one exercise side by side: as written (with the helpers
    compared), the lines whose statements both share once normalised marked; what was normalised
    on each side; and normalised, the lines they share marked."""
    found = instructor_visitor(request, session)
    if found is None:
        return to_login(state.settings)
    rankings = _similarity(state, session, found[0], topic, exercise)
    if rankings is None:
        return _report_pending(request, found[0], topic)
    [ranking] = rankings
    placed = similarity.pair_in(ranking, a, b)
    if placed is None:
        raise HTTPException(404, "these two submissions are not a pair of this exercise's report")
    place, pair = placed
    return render(
        request,
        "similarity_pair.html",
        who=found[0],
        topic=topic,
        ranking=ranking,
        pair=pair,
        place=place,
        sides=similarity.sides(pair),
        code_css=views.code_css(),
    )


@router.post("/gradebook/topics/{topic}/extend")
def page_extend(
    request: Request,
    state: StateDep,
    session: SessionDep,
    topic: str,
    login: Annotated[str, Form(min_length=1, max_length=200)],
    days: Annotated[float, Form(ge=0, le=366)] = 0,
    hours: Annotated[float, Form(ge=0, le=24 * 366)] = 0,
    reason: Annotated[str, Form(max_length=500)] = "",
    shorten: Annotated[str, Form(max_length=10)] = "",
    csrf: Annotated[str, Form(max_length=200)] = "",
) -> Response:
    """Give one student more time on this topic (the topic page's form); a notice of their new dates."""
    found = visitor(request, session)
    if found is None:
        return to_login(state.settings)
    check_form(request, state.settings, found[1], csrf)
    if not found[0].is_instructor:
        raise HTTPException(403, "extensions are granted by instructors only")
    if topic not in state.topics:
        raise HTTPException(404, "no such topic in this course; the gradebook lists them")
    length = dt.timedelta(days=days, hours=hours)
    by = f"{found[0].login} (gradebook)"
    message = operations.grant_extension(state, session, login, topic, length, by, reason, bool(shorten))
    return render(request, "granted.html", who=found[0], topic=topic, message=message)


@router.post("/gradebook/regrade")
def page_regrade(
    request: Request,
    state: StateDep,
    session: SessionDep,
    what: Annotated[str, Form(max_length=200)] = "",
    confirm: Annotated[str, Form(max_length=10)] = "",
    csrf: Annotated[str, Form(max_length=200)] = "",
) -> Response:
    """Regrade one submission (`what` = its id) at once, or a topic (`topic:NAME`) or everything
    (`all`) once confirmed (`confirm=yes`, from the confirmation page this renders first); then
    a notice of what was queued."""
    found = visitor(request, session)
    if found is None:
        return to_login(state.settings)
    check_form(request, state.settings, found[1], csrf)
    if not found[0].is_instructor:
        raise HTTPException(403, "regrading is for instructors only")
    targets, what, topic = _regrade_targets(state.topics, session, what)
    context: dict[str, Any] = {
        "who": found[0],
        "csrf": found[1].csrf,
        "what": what,
        "topic": topic,
        "count": len(targets),
    }
    if what.isdigit():
        context["submission_id"] = int(what)
    elif confirm != "yes":
        return render(request, "confirm.html", **context)
    done = submitting.regrade(state, session, targets)
    return render(request, "notice.html", queued=len(done["queued"]), skipped=len(done["skipped"]), **context)


def _similarity(
    state: AppState, session: Session, who: Identity, topic: str, exercise: str | None = None
) -> list[similarity.Ranking] | None:
    """The similarity report of `topic` (`operations.similarity_rankings`); 404 for a topic the
    course does not have."""
    if topic not in state.topics:
        raise HTTPException(404, "no such topic in this course; the gradebook lists them")
    return operations.similarity_rankings(state, session, who, topic, exercise)


def _report_pending(request: Request, who: Identity, topic: str) -> Response:
    """The page said while a report is worked out: 202, reloading itself."""
    return render(
        request, "similarity.html", 202, who=who, topic=topic, rankings=None, top=0, retry=reports.RETRY_SECONDS
    )


def _home(settings: Settings, who: Identity) -> RedirectResponse:
    base = settings.base_path
    return RedirectResponse(f"{base}/gradebook" if who.is_instructor else f"{base}/me", status_code=303)


def _login_page(request: Request, settings: Settings, status_code: int = 200, error: str = "") -> Response:
    """The login form with its login CSRF token, set as a cookie beside it (the browser's own,
    when it has one: two login tabs both work)."""
    token = request.cookies.get(websession.LOGIN_COOKIE, "")
    if not (40 <= len(token) <= 64 and token.replace("-", "").replace("_", "").isalnum()):
        token = websession.new_secret()
    response = render(request, "login.html", status_code=status_code, error=error, login_csrf=token)
    response.set_cookie(websession.LOGIN_COOKIE, token, max_age=3600, **websession.cookie_options(settings))
    return response


def _regrade_targets(topics: tuple[str, ...], session: Session, what: str) -> tuple[list[int], str, str]:
    """The ids a regrade form names, its `what` rebuilt from known values (never echoed) and the
    topic named ('' for all or one submission); 400 saying what it may name otherwise."""
    if what == "all":
        return operations.matching(session, None), "all", ""
    if what.startswith("topic:") and what[6:] in topics:
        topic = next(t for t in topics if t == what[6:])
        return operations.matching(session, topic), f"topic:{topic}", topic
    if (
        what.isascii()
        and what.isdigit()
        and 1 <= int(what) <= MAX_ID
        and session.get(Submission, int(what)) is not None
    ):
        return [int(what)], str(int(what)), ""
    raise HTTPException(400, "a regrade names `all`, `topic:NAME` (a course topic) or a submission's id")


def _left_out(state: AppState, session: Session, sub: Submission, files: dict[str, str]) -> dict[str, str]:
    """The topics whose file is in the submission's upload but which it does not grade, each with
    why: not open for its student when it was received (`deadlines.closed` at that time), or not
    asked for."""
    topics = [t for t in state.topics if t in files and t not in sub.topic_list]
    if not topics:
        return {}
    course = state.rules
    closed = (
        deadlines.closed(
            course, deadlines.extensions(session, [sub.student_id]), sub.student_id, topics, sub.created_at
        )
        if course.topics
        else {}
    )
    return {t: "not open for this student when it was received" if t in closed else "not asked for" for t in topics}


def _previous(session: Session, sub: Submission) -> Submission | None:
    """The same student's latest submission before this one of any of its topics (for "compare
    with the previous"): a prng upload is compared with their last prng, not with whatever they
    sent just before (among their last 200)."""
    topics = set(sub.topic_list)
    earlier = session.scalars(
        select(Submission)
        .where(Submission.student_id == sub.student_id, Submission.id < sub.id)
        .order_by(Submission.id.desc())
        .limit(200)
    )
    return next((s for s in earlier if topics & set(s.topic_list)), None)


def _student_page(
    request: Request,
    state: AppState,
    session: Session,
    found: tuple[Identity, WebSession],
    status_code: int = 200,
    error: str = "",
) -> Response:
    who, row = found
    course = state.rules
    zone = deadlines.zone_for(session, course, who.student_id)
    return render(
        request,
        "student.html",
        status_code=status_code,
        who=who,
        csrf=row.csrf,
        **operations.student_history(state, session, who.student_id if who.student_id is not None else -1, zone),
        timezone=zone.key,
        course_timezone=course.timezone,
        error=error,
        topics=state.topics,
        pseudonym=_own_pseudonym(session, who),
    )


def _student_setting(
    request: Request,
    state: AppState,
    session: Session,
    csrf: str,
    change: Callable[[Identity], object],
    anchor: str,
) -> Response:
    """One of the student page's setting forms (pseudonym, time zone): `change` applied for the
    logged-in visitor once the form is ours, then back to the page at `anchor`; a refusal of the
    value (400, or 409 for one taken) shows the page again with why."""
    found = visitor(request, session)
    if found is None:
        return to_login(state.settings)
    check_form(request, state.settings, found[1], csrf)
    try:
        change(found[0])
    except HTTPException as exc:
        if exc.status_code not in (400, 409):
            raise
        return _student_page(request, state, session, found, exc.status_code, str(exc.detail))
    return RedirectResponse(f"{state.settings.base_path}/me#{anchor}", status_code=303)


def _own_pseudonym(session: Session, who: Identity) -> str | None:
    """The visiting student's pseudonym on the speed leaderboard (None: not on it)."""
    student = session.get(Student, who.student_id) if who.student_id is not None else None
    return student.pseudonym if student is not None else None


async def _upload_form(request: Request, limit: int) -> tuple[bytes, str]:
    """The upload form's file and CSRF field, its body read (bounded) before any database connection."""
    raw = await read_body(request, limit + 16384)
    delivered = False

    async def replay() -> dict[str, Any]:
        nonlocal delivered
        if delivered:
            return {"type": "http.disconnect"}
        delivered = True
        return {"type": "http.request", "body": raw, "more_body": False}

    form = await Request(request.scope, replay).form(max_files=1, max_fields=4, max_part_size=limit + 1024)
    upload, csrf = form.get("file"), form.get("csrf")
    data = await upload.read() if isinstance(upload, UploadFile) else b""
    return data, csrf if isinstance(csrf, str) else ""


def _page_submit(request: Request, state: AppState, file: bytes, csrf: str) -> Response:
    """The upload form, once its body is in: session, CSRF, then the same `submit` as the API."""
    with state.sessions() as session:
        found = visitor(request, session)
        if found is None:
            return to_login(state.settings)
        check_form(request, state.settings, found[1], csrf)
        try:
            sub, _, _ = submitting.submit(state, session, found[0], file, None)
        except storage.UploadError as exc:
            session.rollback()
            return _student_page(request, state, session, found, exc.status, str(exc))
        except HTTPException as exc:
            session.rollback()
            return _student_page(request, state, session, found, exc.status_code, str(exc.detail))
        return RedirectResponse(f"{state.settings.base_path}/submissions/{sub.id}", status_code=303)

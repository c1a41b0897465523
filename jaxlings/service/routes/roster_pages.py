"""The instructor's roster pages: the roster (add, drop, re-admit, a new token, each token shown
once), and one student's record (every topic, every submission with its late mark, the
extensions in force). The same operations as `grade course add-student|drop|rotate-token` and
`/api/students` (`roster`), from the browser, each form checked like every other (`check_form`)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, HTTPException, Request, Response
from fastapi.responses import RedirectResponse
from sqlalchemy import select
from sqlalchemy.orm import Session

from jaxlings.service import operations, roster
from jaxlings.service.auth import Identity
from jaxlings.service.config import Settings
from jaxlings.service.db import Extension, Student, WebSession
from jaxlings.service.deps import SessionDep, SettingsDep, StateDep, check_form, instructor_visitor
from jaxlings.service.rendering import render, to_login
from jaxlings.service.state import AppState

router = APIRouter(include_in_schema=False)
"""The roster's pages (`/gradebook/roster...`) and a student's record (`/gradebook/students/{login}`)."""


@router.get("/gradebook/roster")
def roster_page(request: Request, settings: SettingsDep, session: SessionDep) -> Response:
    """Every student, dropped ones marked, with the forms that change the roster."""
    found = instructor_visitor(request, session)
    if found is None:
        return to_login(settings)
    return _roster(request, session, found)


@router.post("/gradebook/roster")
def add(
    request: Request,
    settings: SettingsDep,
    session: SessionDep,
    login: Annotated[str, Form(min_length=1, max_length=200)],
    name: Annotated[str, Form(max_length=200)] = "",
    email: Annotated[str, Form(max_length=320)] = "",
    csrf: Annotated[str, Form(max_length=200)] = "",
) -> Response:
    """Add a student (or re-admit a dropped one): their token, on a page of its own, once."""
    who, row = _form(request, settings, session, csrf)
    token, readmitted = operations.on_roster(session, lambda: roster.enrol(session, login, name, email))
    return _issued(request, who, row, login.strip(), token, "re-admitted" if readmitted else "added")


@router.post("/gradebook/roster/{login}/drop")
def drop(
    request: Request,
    settings: SettingsDep,
    session: SessionDep,
    login: str,
    csrf: Annotated[str, Form(max_length=200)] = "",
) -> Response:
    """Drop a student (tokens revoked, out of the gradebook; submissions kept); back to the roster."""
    who, _ = _form(request, settings, session, csrf)
    operations.on_roster(session, lambda: roster.drop(session, login, f"{who.login} (roster page)"))
    return RedirectResponse(f"{settings.base_path}/gradebook/roster#roster", status_code=303)


@router.post("/gradebook/roster/{login}/token")
def token(
    request: Request,
    settings: SettingsDep,
    session: SessionDep,
    login: str,
    csrf: Annotated[str, Form(max_length=200)] = "",
) -> Response:
    """A new token for a student (their earlier ones stop working), shown once."""
    who, row = _form(request, settings, session, csrf)
    issued = operations.on_roster(session, lambda: roster.new_token(session, login))
    return _issued(request, who, row, login, issued, "given a new token")


@router.get("/gradebook/students/{login}")
def record(request: Request, state: StateDep, session: SessionDep, login: str) -> Response:
    """One student's record: scores per topic (raw, late, what counts), dates and extensions,
    every submission."""
    found = instructor_visitor(request, session)
    if found is None:
        return to_login(state.settings)
    student = session.scalar(select(Student).where(Student.login == login))
    if student is None:
        raise HTTPException(404, "no student with this login on the roster; the roster page lists them")
    return _record(request, state, session, found, student)


def _form(request: Request, settings: Settings, session: Session, csrf: str) -> tuple[Identity, WebSession]:
    """An instructor's form of ours: (who, their page session); 401/403 otherwise."""
    found = instructor_visitor(request, session)
    if found is None:
        raise HTTPException(401, "log in first: /login")
    check_form(request, settings, found[1], csrf)
    return found


def _roster(request: Request, session: Session, found: tuple[Identity, WebSession]) -> Response:
    return render(request, "roster.html", who=found[0], csrf=found[1].csrf, entries=roster.entries(session))


def _issued(request: Request, who: Identity, row: WebSession, login: str, token: str, what: str) -> Response:
    """The one page that shows a token: not cached, not stored anywhere but its digest."""
    page = render(request, "issued.html", who=who, csrf=row.csrf, login=login, token=token, what=what)
    page.headers["Cache-Control"] = "no-store"
    return page


def _record(
    request: Request, state: AppState, session: Session, found: tuple[Identity, WebSession], student: Student
) -> Response:
    grants = session.scalars(select(Extension).where(Extension.student_id == student.id).order_by(Extension.id))
    in_force = {g.topic: g for g in grants}  # the latest grant of a topic holds
    return render(
        request,
        "student_record.html",
        who=found[0],
        csrf=found[1].csrf,
        student=student,
        **operations.student_history(state, session, student.id),
        extensions=list(in_force.values()),
        topics=state.topics,
    )

"""The server-rendered pages (Jinja2 templates in templates/): log in with a token, a student's page
(history, best score per topic, an upload form), a submission's verdicts (refreshing itself until
graded) and the instructor's gradebook (figures, CSV, regrade). They use the API's dependencies,
so a page and its JSON twin always agree on who may see what.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Form, HTTPException, Request, Response
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.templating import Jinja2Templates
from sqlalchemy import select
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from autograder import __version__
from autograder.service import auth, gradebook, jobs, storage
from autograder.service.api import COOKIE, SessionDep, bearer, gradebook_rows, regrade, submit, visible
from autograder.service.auth import Identity
from autograder.service.db import DONE, FAILED, Submission

TEMPLATES = Jinja2Templates(directory=str(Path(__file__).resolve().parent / "templates"))


def page_router() -> APIRouter:
    router = APIRouter(include_in_schema=False)

    def render(request: Request, name: str, **context: Any) -> HTMLResponse:
        settings = request.app.state.settings
        return TEMPLATES.TemplateResponse(request, name, {"base": settings.base_path, "version": __version__, **context})

    def who_or_none(request: Request, session: Session) -> Identity | None:
        token = bearer(request)
        return auth.identify(session, token, request.app.state.settings) if token else None

    def login_redirect(request: Request) -> RedirectResponse:
        return RedirectResponse(f"{request.app.state.settings.base_path}/login", status_code=303)

    @router.get("/")
    def index(request: Request, session: SessionDep) -> Response:
        who = who_or_none(request, session)
        base = request.app.state.settings.base_path
        if who is None:
            return login_redirect(request)
        return RedirectResponse(f"{base}/gradebook" if who.is_instructor else f"{base}/me", status_code=303)

    @router.get("/login")
    def login_form(request: Request, error: str = "") -> HTMLResponse:
        return render(request, "login.html", error=error)

    @router.post("/login")
    def login(request: Request, session: SessionDep, token: Annotated[str, Form()] = "") -> Response:
        token = token.strip()
        who = auth.identify(session, token, request.app.state.settings) if token else None
        if who is None:
            return render(request, "login.html", error="That token is not known. Ask your instructor for yours.")
        base = request.app.state.settings.base_path
        response = RedirectResponse(f"{base}/gradebook" if who.is_instructor else f"{base}/me", status_code=303)
        response.set_cookie(COOKIE, token, httponly=True, samesite="strict", path=base or "/")
        return response

    @router.post("/logout")
    def logout(request: Request) -> Response:
        response = login_redirect(request)
        response.delete_cookie(COOKIE, path=request.app.state.settings.base_path or "/")
        return response

    @router.get("/me")
    def student_page(request: Request, session: SessionDep, error: str = "") -> Response:
        who = who_or_none(request, session)
        if who is None or who.is_instructor:
            return login_redirect(request)
        subs = list(session.scalars(select(Submission).where(Submission.student_id == who.student_id)
                                    .order_by(Submission.id.desc())))
        return render(request, "student.html", who=who, submissions=subs, best=gradebook.best_scores(subs), error=error,
                      topics=request.app.state.topics)

    @router.post("/me/submit")
    async def page_submit(request: Request, session: SessionDep) -> Response:
        who = who_or_none(request, session)
        if who is None:
            return login_redirect(request)
        base = request.app.state.settings.base_path
        limit = request.app.state.settings.max_upload_bytes
        declared = request.headers.get("content-length", "")
        if not declared.isdigit() or int(declared) > limit + 16384:
            return RedirectResponse(f"{base}/me?error=the+upload+is+over+the+limit+of+{limit}+bytes", status_code=303)
        form = await request.form()
        upload = form.get("file")
        raw = await upload.read() if hasattr(upload, "read") else b""
        try:
            row, _ = await run_in_threadpool(submit, request, session, who, raw, None)
        except (storage.UploadError, HTTPException) as exc:
            message = str(exc) if isinstance(exc, storage.UploadError) else exc.detail
            return RedirectResponse(f"{base}/me?error={quote(message)}", status_code=303)
        return RedirectResponse(f"{base}/submissions/{row.id}", status_code=303)

    @router.get("/submissions/{submission_id}")
    def submission_page(request: Request, session: SessionDep, submission_id: int) -> Response:
        who = who_or_none(request, session)
        if who is None:
            return login_redirect(request)
        row = visible(session, who, submission_id)
        result = _parse(row.result_json) if row.status == DONE else None
        return render(request, "submission.html", who=who, sub=row, result=result,
                      position=jobs.position(session, row), pending=row.status not in (DONE, FAILED))

    @router.get("/gradebook")
    def gradebook_page(request: Request, session: SessionDep) -> Response:
        who = who_or_none(request, session)
        if who is None or not who.is_instructor:
            return login_redirect(request)
        rows, topics = gradebook_rows(request, session)
        subs = list(session.scalars(select(Submission).order_by(Submission.id.desc())))
        tops = gradebook.maxima(subs)
        histograms = {t: gradebook.histogram_svg([r.best[t] for r in rows if t in r.best], tops[t], t)
                      for t in topics if t in tops}
        return render(request, "gradebook.html", who=who, rows=rows, topics=topics, histograms=histograms,
                      timeline=gradebook.timeline_svg([s.created_at for s in subs]), recent=subs[:50])

    @router.post("/gradebook/regrade")
    def page_regrade(request: Request, session: SessionDep, what: Annotated[str, Form()] = "") -> Response:
        """Regrade one submission (`what` = its id), a topic (`topic:NAME`) or everything (`all`)."""
        who = who_or_none(request, session)
        if who is None or not who.is_instructor:
            return login_redirect(request)
        rows = session.execute(select(Submission.id, Submission.topics)).all()
        if what == "all":
            ids = [i for i, _ in rows]
        elif what.startswith("topic:"):
            ids = [i for i, names in rows if what[6:] in names.split(",")]
        else:
            ids = [int(what)] if what.isdigit() else []
        regrade(request, session, ids)
        return RedirectResponse(f"{request.app.state.settings.base_path}/gradebook", status_code=303)

    return router


def _parse(text: str | None) -> dict | None:
    return json.loads(text) if text else None

"""The JSON API's response models (pydantic): what `/api/openapi.json` documents and clients read."""

from __future__ import annotations

from pydantic import BaseModel, Field


class Health(BaseModel):
    ok: bool
    version: str


class Topics(BaseModel):
    topics: list[str]


class Me(BaseModel):
    login: str
    role: str


class Deadlines(BaseModel):
    """Where each dated topic stands for the caller (a student: their extensions applied), in
    words ("due in 2 days (Tue 08 Dec 23:59 CET)", "late: ...", "closed since ..."); the
    course's time zone. Topics without dates are left out."""

    timezone: str
    topics: dict[str, str]


class SubmissionView(BaseModel):
    """A submission and its job, as the API shows it."""

    id: int
    student: str
    topics: list[str]
    status: str
    progress: str
    position: int | None
    digest: str
    created_at: str | None
    started_at: str | None
    finished_at: str | None
    attempts: int
    score: float | None
    max_score: float | None
    error: str
    results_url: str | None
    page_url: str
    duplicate: bool | None = None


class Grading(BaseModel):
    """One stored grading of a submission (its history: the latest counts; `scores`)."""

    id: int
    created_at: str
    worker: str
    score: float
    max_score: float


class Regraded(BaseModel):
    queued: list[int]
    skipped: list[int]


class Problem(BaseModel):
    """Every refusal: one line naming the problem."""

    detail: str


class RosterEntry(BaseModel):
    """One student on the roster (`GET /api/students`), dropped ones included and marked."""

    login: str
    name: str
    email: str
    submissions: int
    last_submission: str | None
    dropped_at: str | None
    dropped_by: str


class NewStudent(BaseModel):
    """A student to add (`POST /api/students`); a dropped login is re-admitted."""

    login: str = Field(min_length=1, max_length=200)
    name: str = Field("", max_length=200)
    email: str = Field("", max_length=320)


class NewExtension(BaseModel):
    """More time for one student on one topic (`POST /api/extensions`): `days` and `hours` add up."""

    login: str = Field(min_length=1, max_length=200)
    topic: str = Field(min_length=1, max_length=100)
    days: float = Field(0, ge=0, le=366)
    hours: float = Field(0, ge=0, le=24 * 366)
    reason: str = Field("", max_length=500)


class Granted(BaseModel):
    """An extension granted: what the student now has, in words."""

    login: str
    topic: str
    seconds: int
    message: str


class IssuedToken(BaseModel):
    """A student's new course token: shown in this answer only (the server keeps its digest)."""

    login: str
    token: str
    readmitted: bool = False

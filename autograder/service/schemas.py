"""The JSON API's response models (pydantic): what `/api/openapi.json` documents and clients read."""

from __future__ import annotations

from pydantic import BaseModel


class Health(BaseModel):
    ok: bool
    version: str


class Topics(BaseModel):
    topics: list[str]


class Me(BaseModel):
    login: str
    role: str


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


class Regraded(BaseModel):
    queued: list[int]
    skipped: list[int]


class Problem(BaseModel):
    """Every refusal: one line naming the problem."""

    detail: str

"""The JSON API's response models (pydantic): what `/api/openapi.json` documents and clients read."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Health(BaseModel):
    ok: bool
    version: str


class Topics(BaseModel):
    topics: list[str]


class SimilarPair(BaseModel):
    """Two students' functions for one exercise, and how alike they are once normalised (0 to 1)."""

    a: str
    b: str
    a_submission: int
    b_submission: int
    score: float = Field(
        description="1 - (1 - source_score) (1 - program_score), or source_score alone: either side strong ranks it high"
    )
    source_score: float = Field(
        description="how much the normalised sources share, weighed by how unusual it is in the class (0 to 1)"
    )
    program_score: float | None = Field(
        default=None,
        description="the same for the exported programs (normalised StableHLO), where both have one",
    )
    identical: bool = Field(description="the same code once names, order and dead code are normalised")
    reference: bool = Field(description="both are the reference solution itself")
    prescribed: bool = Field(
        default=False, description="both exported programs are the reference's own: the program side is no evidence"
    )
    a_notes: list[str] = Field(
        default=[], description="how a's function was read (a name bound twice, helpers compared)"
    )
    b_notes: list[str] = Field(default=[], description="how b's function was read")


class ExerciseSimilarity(BaseModel):
    """One exercise's most alike pairs, first the most alike; `compared`: the functions compared
    (each student's counted submission, stubs left out)."""

    exercise: str
    compared: int
    same_as_another: int = Field(
        default=0, description="the largest group of students who wrote one function, once normalised"
    )
    same_program: int = Field(
        default=0, description="the largest group of students who handed in one program (0 where none has one)"
    )
    too_short_to_tell: bool = Field(
        default=False,
        description="half the class or more wrote one function or handed in one program: a match here is no evidence"
        " by itself",
    )
    pairs: list[SimilarPair]


class Similarity(BaseModel):
    """The similarity report of one topic (`GET /api/similarity/{topic}`), per exercise."""

    topic: str
    exercises: list[ExerciseSimilarity]


class Me(BaseModel):
    login: str
    role: str


class Deadlines(BaseModel):
    """Where each dated topic stands for the caller (a student: their extensions applied), in
    words ("due in 2 days (Tue 08 Dec 23:59 CET)", "late: ...", "closed since ..."), and the zone
    the times are in (the student's own when they chose one, else the course's). Topics without
    dates are left out."""

    timezone: str
    topics: dict[str, str]


class NewTimezone(BaseModel):
    """The zone a student reads dates in (`PUT /api/me/timezone`): an IANA name, "" for the course's."""

    timezone: str = Field(max_length=64)


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
    counted_score: float | None = None
    """The score that counts: `score` after the course's late policy, at the time received
    (`created_at`); equal to `score` when every topic was on time."""
    late: dict[str, float] = {}
    """Each topic received after its due time, with the factor of its score it keeps."""
    error: str
    results_url: str | None
    page_url: str
    duplicate: bool | None = None
    left_out: dict[str, str] = {}
    """On the answer to a submit: the topics of the upload not taken because they are not open for
    the student now, each with why ("prng opens in 3 days (...)")."""


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
    """More time for one student on one topic (`POST /api/extensions`): `days` and `hours` add up;
    `shorten` must be true for a grant shorter than the one in force."""

    login: str = Field(min_length=1, max_length=200)
    topic: str = Field(min_length=1, max_length=100)
    days: float = Field(0, ge=0, le=366)
    hours: float = Field(0, ge=0, le=24 * 366)
    reason: str = Field("", max_length=500)
    shorten: bool = False


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


class LeaderboardRow(BaseModel):
    """One student on one exercise's speed board: their rank (equal ratios share one), the
    pseudonym they chose, their best time ratio against the reference (lower is faster), and
    whether it is the caller's own row; for an instructor, the student's login and name too."""

    rank: int
    pseudonym: str
    ratio: float
    mine: bool
    login: str | None = None  # who it is, for instructors only (a student sees pseudonyms)
    name: str | None = None


class ExerciseLeaderboard(BaseModel):
    """One speed-graded exercise (`topic.exercise`), fastest first; empty until a speed is measured."""

    exercise: str
    rows: list[LeaderboardRow]


class LeaderboardView(BaseModel):
    """The speed leaderboard (`GET /api/leaderboard`): every speed-graded exercise in course
    order, and the caller's own pseudonym (None: not on the board, or not a student)."""

    exercises: list[ExerciseLeaderboard]
    pseudonym: str | None


class NewPseudonym(BaseModel):
    """The pseudonym a student chooses for the leaderboard (`PUT /api/me/pseudonym`): always
    their own, so the body names nothing else."""

    model_config = ConfigDict(extra="forbid")
    pseudonym: str = Field(max_length=1000)


class PseudonymView(BaseModel):
    """The caller's pseudonym after a change (None: they left the board), and what it means."""

    pseudonym: str | None
    message: str

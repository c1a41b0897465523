"""The database: SQLAlchemy 2 models, engines and sessions, and the Alembic upgrade.

The schema is owned by the migrations in `migrations/versions/` (run by `upgrade`, which
`grade serve` and `grade worker` call at start); the models here mirror it. A submission row is
the truth about a job: the broker only delivers it, and a row whose lease ran out is sent again.
"""

from __future__ import annotations

import datetime as dt
import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import (
    Float,
    ForeignKey,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    create_engine,
    event,
    select,
)
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DisconnectionError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, relationship, sessionmaker

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
QUEUED, GRADING, DONE, FAILED = "queued", "grading", "done", "failed"
# what SQLAlchemy raises when the database cannot be reached (down, dropped, the pool exhausted)
UNREACHABLE = (OperationalError, InterfaceError, DisconnectionError, PoolTimeout)


def utcnow() -> dt.datetime:
    """Naive UTC now: the same in SQLite and PostgreSQL columns."""
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


class Base(DeclarativeBase):
    pass


class Student(Base):
    """One person on the roster (from `grade course add-students`, or a JupyterHub user)."""

    __tablename__ = "students"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    login: Mapped[str] = mapped_column(String(200), unique=True)
    name: Mapped[str] = mapped_column(String(200), default="")
    email: Mapped[str] = mapped_column(String(320), default="")
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    # written by every accepted submission; its row lock is what makes the rate limit and quota atomic
    last_submitted_at: Mapped[dt.datetime | None] = mapped_column(nullable=True)
    # dropped from the course (roster.drop): kept with what they submitted, out of the gradebook
    dropped_at: Mapped[dt.datetime | None] = mapped_column(nullable=True)
    dropped_by: Mapped[str] = mapped_column(String(200), default="")
    # the name the student chose for the speed leaderboard (`leaderboard`), None: not on it; and its
    # key (`leaderboard.key`: NFKC, casefolded), unique, so two pseudonyms differing in case never coexist
    pseudonym: Mapped[str | None] = mapped_column(String(30), unique=True, nullable=True)
    pseudonym_key: Mapped[str | None] = mapped_column(String(120), unique=True, nullable=True)
    # the IANA zone the student reads dates in (`deadlines.zone_for`); empty: the course's
    timezone: Mapped[str] = mapped_column(String(64), default="", server_default="")
    submissions: Mapped[list[Submission]] = relationship(back_populates="student")


class Token(Base):
    """A bearer token, stored as its SHA-256 only: a student's (with student_id) or an instructor's."""

    __tablename__ = "tokens"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    digest: Mapped[str] = mapped_column(String(64), unique=True)
    role: Mapped[str] = mapped_column(String(20))
    label: Mapped[str] = mapped_column(String(200), default="")
    student_id: Mapped[int | None] = mapped_column(ForeignKey("students.id"), nullable=True)
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    revoked: Mapped[bool] = mapped_column(default=False)
    revoked_at: Mapped[dt.datetime | None] = mapped_column(nullable=True)


class WebSession(Base):
    """A browser's page session, apart from the token it logged in with (stored as a digest).

    Made at login (a new one each time), ended at logout, expired after `session_hours`; one made
    with a course or instructor token ends when that token is revoked (`token_id`). `csrf` is the
    token every form of the session must carry.
    """

    __tablename__ = "web_sessions"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    digest: Mapped[str] = mapped_column(String(64), unique=True)
    csrf: Mapped[str] = mapped_column(String(64))
    role: Mapped[str] = mapped_column(String(20))
    login: Mapped[str] = mapped_column(String(200))
    student_id: Mapped[int | None] = mapped_column(ForeignKey("students.id"), nullable=True)
    token_id: Mapped[int | None] = mapped_column(ForeignKey("tokens.id"), nullable=True)
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[dt.datetime] = mapped_column()


class Upload(Base):
    """The stored zip of a submission's topic files, keyed by its content hash (shared by machines)."""

    __tablename__ = "uploads"
    digest: Mapped[str] = mapped_column(String(64), primary_key=True)
    data: Mapped[bytes] = mapped_column(LargeBinary)
    size: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)


class Submission(Base):
    """One submission and its job: status, progress, lease, and the results.json once graded."""

    __tablename__ = "submissions"
    __table_args__ = (UniqueConstraint("student_id", "digest", "topics", name="uq_submission_content"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    student_id: Mapped[int] = mapped_column(ForeignKey("students.id"), index=True)
    digest: Mapped[str] = mapped_column(ForeignKey("uploads.digest"))
    topics: Mapped[str] = mapped_column(String(400))  # comma-separated, course order
    status: Mapped[str] = mapped_column(String(20), default=QUEUED, index=True)
    progress: Mapped[str] = mapped_column(String(400), default="")
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow, index=True)
    sent_at: Mapped[dt.datetime | None] = mapped_column(nullable=True)
    started_at: Mapped[dt.datetime | None] = mapped_column(nullable=True)
    lease_until: Mapped[dt.datetime | None] = mapped_column(nullable=True)
    finished_at: Mapped[dt.datetime | None] = mapped_column(nullable=True)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    lost: Mapped[int] = mapped_column(Integer, default=0)  # attempts whose worker died (jobs.reap)
    failures: Mapped[int] = mapped_column(Integer, default=0)  # attempts failed for an infrastructure reason
    worker: Mapped[str] = mapped_column(String(200), default="")
    score: Mapped[float | None] = mapped_column(Float, nullable=True)
    max_score: Mapped[float | None] = mapped_column(Float, nullable=True)
    result_json: Mapped[str | None] = mapped_column(Text, nullable=True)
    error: Mapped[str] = mapped_column(Text, default="")
    student: Mapped[Student] = relationship(back_populates="submissions")
    results: Mapped[list[GradeResult]] = relationship(
        back_populates="submission", order_by="GradeResult.id", cascade="all, delete-orphan"
    )

    @property
    def topic_list(self) -> list[str]:
        return [t for t in self.topics.split(",") if t]


class GradeResult(Base):
    """One stored grading of a submission: every grading is kept (a regrade adds one), and the
    submission's `score`, `max_score` and `result_json` are always its latest (what counts:
    `scores`). A regrade in flight or failed adds nothing, so the latest complete one stays."""

    __tablename__ = "grade_results"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    submission_id: Mapped[int] = mapped_column(ForeignKey("submissions.id"), index=True)
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    worker: Mapped[str] = mapped_column(String(200), default="")
    score: Mapped[float] = mapped_column(Float)
    max_score: Mapped[float] = mapped_column(Float)
    result_json: Mapped[str] = mapped_column(Text)
    submission: Mapped[Submission] = relationship(back_populates="results")


class Extension(Base):
    """More time for one student on one topic, granted by an instructor (`grade course extend`,
    the gradebook page). Every grant is kept; the latest for a (student, topic) holds, and its
    length moves that student's due time and late limit (`jaxlings.grading.rules`)."""

    __tablename__ = "extensions"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    student_id: Mapped[int] = mapped_column(ForeignKey("students.id"), index=True)
    topic: Mapped[str] = mapped_column(String(100))
    seconds: Mapped[int] = mapped_column(Integer)
    granted_by: Mapped[str] = mapped_column(String(200), default="")
    reason: Mapped[str] = mapped_column(String(500), default="")
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)

    @property
    def length(self) -> dt.timedelta:
        return dt.timedelta(seconds=self.seconds)


_ENGINES: dict[str, Engine] = {}


def engine_for(url: str) -> Engine:
    """One engine per URL per process; SQLite gets WAL and a busy timeout so API and workers share it."""
    if url not in _ENGINES:
        if url.startswith("sqlite"):
            engine = create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})
            event.listen(engine, "connect", _sqlite_pragmas)
        else:
            # a database host that accepts connections but never answers costs 10 s, not a hung request
            connect = {"connect_timeout": 10} if url.startswith("postgresql") else {}
            engine = create_engine(url, pool_pre_ping=True, connect_args=connect)
        _ENGINES[url] = engine
    return _ENGINES[url]


def after_fork() -> None:
    """In a forked child: drop the parent's pooled connections without closing them under it."""
    for engine in _ENGINES.values():
        engine.dispose(close=False)


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA synchronous=FULL")
    cursor.close()


def sessions(url: str) -> sessionmaker[Session]:
    """A session factory bound to the database at `url`."""
    return sessionmaker(engine_for(url), expire_on_commit=False)


MIGRATION_LOCK = 0x6A61786C  # PostgreSQL's advisory lock key for migrations ("jaxl")


def upgrade(url: str) -> None:
    """Bring the database at `url` to the newest schema (Alembic `upgrade head`).

    Safe to call from processes starting together: one migrates, the others then find the
    schema current (a lock file beside a SQLite database; PostgreSQL's advisory lock in
    migrations/env.py).
    """
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["url"] = url
    with _sqlite_turn(url):
        command.upgrade(config, "head")


@contextmanager
def _sqlite_turn(url: str) -> Iterator[None]:
    """Hold an exclusive lock on `<database>.migrate-lock` for a SQLite file database (else nothing)."""
    path = url.removeprefix("sqlite:///").split("?", 1)[0] if url.startswith("sqlite:///") else ""
    if not path or path == ":memory:":
        yield
        return
    database = Path(path)
    database.parent.mkdir(parents=True, exist_ok=True)
    with open(database.with_name(database.name + ".migrate-lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def student_by_login(session: Session, login: str) -> Student | None:
    return session.scalar(select(Student).where(Student.login == login))

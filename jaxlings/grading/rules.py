"""The course's rules: when each topic opens, is due and closes, and what a late submission counts.

One file, read by both ways a course runs: the grading service (what counts, what is taken:
`service.scores`, `service.submitting`) and the nbgrader course (its due dates and its late
penalty plugin: `course.deadlines`), so both count a late submission the same.

An instructor writes them in a TOML file (`course.toml`; `JAXLINGS_COURSE_RULES`, default
`<data folder>/course.toml`, none = no deadlines), read and validated when the service starts:
a misspelt key, a topic not in the course, a due date after the late limit or an unknown time
zone stops `grade serve` with a message naming the line's table and key.

    timezone = "Europe/Zurich"          # how dates without an offset are read, and shown

    [late]                              # the default late policy (each topic may override it)
    policy = "per_day"                  # none | per_day | per_hour | closed
    penalty = 0.10                      # the fraction of the score taken off per day (hour) started
    floor = 0.50                        # the least fraction a late submission keeps

    [topics.prng]
    opens = 2026-12-01T09:00:00
    due = 2026-12-08T23:59:00
    late_until = 2026-12-15T23:59:00       # no submission of prng is taken after it
    late = { policy = "per_hour", penalty = 0.01 }

    [leaderboard]                       # the speed leaderboard (`service.leaderboard`); off unless asked
    enabled = true

(TOML 1.0 times need their seconds: `23:59:00`.)

Time that can be trusted: the server's clock decides. A submission's time is
`Submission.created_at`, stored when the server received it; nothing a client sends is read as a
time. The policy is applied when a score counts (`scores`), never by rewriting stored results,
so a changed rule or a granted extension re-counts every submission at once.

Policies: `none` (a submission before `late_until` counts in full), `per_day` / `per_hour`
(`penalty` off per day or hour started past the due time, never below `floor`), `closed`
(nothing is taken after the due time). An extension moves a student's due time and late limit
of one topic by its length.
"""

from __future__ import annotations

import datetime as dt
import enum
import math
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError, field_validator, model_validator

Fraction = Annotated[float, Field(ge=0.0, le=1.0)]


class RulesError(ValueError):
    """The rules file cannot be used; the message names the file, the table and the key."""


class LatePolicy(BaseModel):
    """What a late submission counts."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    policy: Literal["none", "per_day", "per_hour", "closed"] = "none"
    penalty: Fraction = 0.0
    floor: Fraction = 0.0

    @property
    def step(self) -> dt.timedelta | None:
        """The period a penalty is taken per (None: no penalty)."""
        return {"per_day": dt.timedelta(days=1), "per_hour": dt.timedelta(hours=1)}.get(self.policy)

    def factor(self, late_by: dt.timedelta) -> float:
        """The fraction of the score kept by a submission `late_by` past its due time (> 0)."""
        if self.step is None:
            return 1.0
        started = math.ceil(late_by / self.step)
        return max(self.floor, 1.0 - self.penalty * started)

    def describe(self) -> str:
        """In words: "10% off per day started, at least 50% kept"."""
        if self.step is None:
            return "no penalty" if self.policy == "none" else "not taken after the due time"
        unit = "day" if self.policy == "per_day" else "hour"
        kept = f", at least {self.floor:.0%} kept" if self.floor > 0 else ""
        return f"{self.penalty:.0%} off per {unit} started{kept}"


class TopicRules(BaseModel):
    """One topic's dates (naive ones are in the course's time zone) and its late policy."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    opens: dt.datetime | None = None
    due: dt.datetime | None = None
    late_until: dt.datetime | None = None
    late: LatePolicy | None = None

    @model_validator(mode="after")
    def _ordered(self) -> TopicRules:
        if self.late_until is not None and self.due is None:
            raise ValueError("late_until needs a due date")
        pairs = (("opens", self.opens, "due", self.due), ("due", self.due, "late_until", self.late_until))
        for a, x, b, y in pairs:
            if x is not None and y is not None and _naive(x) > _naive(y):
                raise ValueError(f"{a} ({x}) is after {b} ({y})")
        return self


def _naive(t: dt.datetime) -> dt.datetime:
    """For ordering within one file: aware times in UTC, naive ones as written."""
    return t.astimezone(dt.UTC).replace(tzinfo=None) if t.tzinfo else t


class Phase(enum.Enum):
    NOT_OPEN = "not open yet"
    OPEN = "open"
    LATE = "late"
    CLOSED = "closed"


@dataclass(frozen=True)
class Window:
    """One student's dates for one topic (their extension applied), all aware (UTC)."""

    opens: dt.datetime | None
    due: dt.datetime | None
    late_until: dt.datetime | None
    late: LatePolicy

    def phase(self, at: dt.datetime) -> Phase:
        """Where `at` (aware) falls."""
        if self.opens is not None and at < self.opens:
            return Phase.NOT_OPEN
        if self.due is None or at <= self.due:
            return Phase.OPEN
        if self.late.policy == "closed" or (self.late_until is not None and at > self.late_until):
            return Phase.CLOSED
        return Phase.LATE

    def factor(self, at: dt.datetime) -> float:
        """The fraction of its score a submission received at `at` keeps (0 when not taken)."""
        phase = self.phase(at)
        if phase is Phase.OPEN:
            return 1.0
        if phase is Phase.LATE and self.due is not None:
            return self.late.factor(at - self.due)
        return 0.0


class Leaderboard(BaseModel):
    """The speed leaderboard (`[leaderboard]`): off unless the course opts in, since it shows
    students' times to the class (under the pseudonyms they choose)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    enabled: StrictBool = False  # strict: `enabled = "no"` is refused, not read as a truthy string


def known_zone(name: str) -> ZoneInfo:
    """The IANA time zone `name` ("Europe/Zurich"); a ValueError naming it when there is none."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):  # OSError: a folder of the database ("America")
        raise ValueError(f"unknown time zone {name!r} (an IANA name such as 'Europe/Zurich')") from None


class CourseRules(BaseModel):
    """The whole file. `topics` may name only the course's topics (checked by `load`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    timezone: str = "UTC"
    late: LatePolicy = LatePolicy()
    topics: dict[str, TopicRules] = {}
    leaderboard: Leaderboard = Leaderboard()

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, name: str) -> str:
        known_zone(name)
        return name

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    def aware(self, t: dt.datetime | None) -> dt.datetime | None:
        """A time from the file as an aware UTC time (naive ones read in the course's zone)."""
        if t is None:
            return None
        return (t if t.tzinfo else t.replace(tzinfo=self.zone)).astimezone(dt.UTC)

    def window(self, topic: str, extension: dt.timedelta = dt.timedelta(0)) -> Window:
        """`topic`'s dates for a student with this extension (no rules: always open)."""
        rules = self.topics.get(topic, TopicRules())
        due, until = self.aware(rules.due), self.aware(rules.late_until)
        return Window(
            opens=self.aware(rules.opens),
            due=due + extension if due is not None else None,
            late_until=until + extension if until is not None else None,
            late=rules.late or self.late,
        )

    def local(self, t: dt.datetime) -> dt.datetime:
        """An aware (or naive UTC, as the database stores) time in the course's zone."""
        return (t if t.tzinfo else t.replace(tzinfo=dt.UTC)).astimezone(self.zone)


NO_RULES = CourseRules()


def load(path: Path | None, topics: tuple[str, ...] | list[str]) -> CourseRules:
    """The rules in `path` (NO_RULES when `path` is None or absent), validated against the
    course's `topics`; RulesError naming the file, table and key otherwise."""
    if path is None or not path.exists():
        return NO_RULES
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise RulesError(f"{path}: not a TOML file we can read: {exc}") from None
    try:
        rules = CourseRules.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {_words(e)}" for e in exc.errors())
        raise RulesError(f"{path}: {problems}") from None
    unknown = sorted(set(rules.topics) - set(topics))
    if unknown:
        raise RulesError(
            f"{path}: [topics.{unknown[0]}] is not a topic of this course (its topics: {', '.join(topics)})"
        )
    return rules


def _words(error: Any) -> str:
    """pydantic's message for one problem, in the words of someone editing the file."""
    if error["type"] == "extra_forbidden":
        return "not a key of this table (misspelt?)"
    return str(error["msg"]).removeprefix("Value error, ")


UNITS = ((86400, "day"), (3600, "hour"), (60, "minute"))


def length(span: dt.timedelta) -> str:
    """An extension's length in words: "1 day", "3 days", "12 hours", "1.5 hours"."""
    hours = span.total_seconds() / 3600
    amount, unit = (hours / 24, "day") if hours >= 24 and hours % 24 == 0 else (hours, "hour")
    return f"{amount:g} {unit}{'' if amount == 1 else 's'}"


def until(at: dt.datetime, now: dt.datetime) -> str:
    """How far `at` is from `now`, in words a student reads at a glance: "in 2 days", "in 5 hours",
    "in 12 minutes" (and "3 hours ago" for the past)."""
    seconds = (at - now).total_seconds()
    span = abs(seconds)
    size, unit = next(((size, unit) for size, unit in UNITS if span >= size), (1, "second"))
    n = max(1, int(span // size))
    words = f"{n} {unit}{'s' if n != 1 else ''}"
    return f"in {words}" if seconds >= 0 else f"{words} ago"


def dates(window: Window, rules: CourseRules) -> str:
    """A topic's dates for the instructor, in the course's zone: "opens Mon 30 Nov 09:00 CET ·
    due Tue 08 Dec 23:59 CET · late until Tue 15 Dec 23:59 CET (10% off per day started)"."""
    parts = [
        f"{label} {rules.local(t):%a %d %b %H:%M %Z}"
        for label, t in (("opens", window.opens), ("due", window.due), ("late until", window.late_until))
        if t is not None
    ]
    if window.due is not None:
        parts[-1] += f" ({window.late.describe()})"
    return " · ".join(parts) or "no dates"


def describe(window: Window, now: dt.datetime, rules: CourseRules, zone: ZoneInfo | None = None) -> str:
    """One line for the student's page and `grade submit`: "due in 2 days (Tue 08 Dec 23:59
    CET)", "late: 10% off per day started (until ...)", "closed since ...", "opens in 3 hours";
    times in `zone` (the student's), else the course's."""

    def when(t: dt.datetime) -> str:
        return rules.local(t).astimezone(zone or rules.zone).strftime("%a %d %b %H:%M %Z")

    phase = window.phase(now)
    if phase is Phase.NOT_OPEN and window.opens is not None:
        return f"opens {until(window.opens, now)} ({when(window.opens)})"
    if phase is Phase.OPEN:
        return "open, no due date" if window.due is None else f"due {until(window.due, now)} ({when(window.due)})"
    if phase is Phase.LATE:
        limit = f", taken until {when(window.late_until)}" if window.late_until is not None else ""
        kept = window.factor(now)
        return f"late: {window.late.describe()}; now {1 - kept:.0%} off{limit}"
    closed_at = window.late_until if window.late_until is not None and window.late.policy != "closed" else window.due
    return f"closed since {when(closed_at)}" if closed_at is not None else "closed"

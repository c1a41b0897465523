"""The speed leaderboard: per speed-graded exercise, the best time ratio of each student who chose a
pseudonym, fastest first. Opt-in per course (`[leaderboard] enabled = true` in course.toml).

- **The ratio is the grader's**: the student's best time over the reference's, measured in the
  same run on the grading machine by the speed check (`checks.speed`), read from the stored
  results.json (`results.measured_ratio`, through `scores.topic_results`). Nothing the student's
  process or client says is read. Lower is faster; 1.0 is the reference's speed.
- **What counts**: a submission's latest complete result (`scores`: which result counts); for each
  exercise, the student's lowest measured ratio over their submissions (on a tie, the earliest
  submission). A speed check judged on submission (`pending`), not run because `correct` failed,
  whose timed call failed, or refused by the guard against idling, measured nothing and is left out.
- **Who appears**: students who chose a pseudonym, on the roster (dropped students are left out).
  A student never sees another's login or name, an instructor sees who each row is
  (`operations.leaderboard_view`); each student sees their own row marked.
- **Pseudonyms** (`clean`, `refusal`): 2 to 30 printable characters after Unicode NFKC
  normalisation, trimming and collapsing runs of spaces; unique whatever the letters' case
  (`key`, stored beside it with a unique constraint); never a login or a name on the roster (the
  student's own included: the board keeps them anonymous, and nobody can pass as another), nor
  one that looks like any of them: names are compared by their confusable skeletons (`skeletons`:
  Unicode's confusables, TR39, so "Аlice" with a Cyrillic А is "Alice"). Every unavailable name
  gets the same refusal, and a student may try `TRIES` names an hour (`Tries`): a refusal tells
  that a name is unavailable, not whose it is. The rule holds at every change: a student enrolled
  or renamed (`auth.add_student`) to a name that looks like someone's pseudonym takes precedence,
  and that pseudonym is cleared (`release_clashes`).

Pure functions over rows, like `scores`, and the two writes that set or clear a pseudonym.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import threading
import time
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache

from sqlalchemy import select
from sqlalchemy.orm import Session

from jaxlings.service.db import Student, Submission
from jaxlings.service.scores import topic_results

SHORTEST, LONGEST = 2, 30
TRIES = 10
"""Names a student may try an hour (each choice that reaches the availability check)."""
UNAVAILABLE = "that pseudonym is taken; choose another"
log = logging.getLogger(__name__)


class PseudonymError(ValueError):
    """A pseudonym that does not fit the rules (a 400): the message says which."""


class PseudonymTaken(ValueError):
    """A pseudonym another student has, or a login or name on the roster (a 409)."""


@dataclass(frozen=True)
class Entry:
    """One student's best on one exercise: their rank (equal ratios share one), pseudonym and ratio."""

    rank: int
    pseudonym: str
    ratio: float
    student_id: int
    submission_id: int
    submitted_at: dt.datetime


@dataclass(frozen=True)
class ExerciseBoard:
    """One speed-graded exercise's board, fastest first (empty until someone's speed is measured)."""

    topic: str
    exercise: str
    entries: tuple[Entry, ...]

    @property
    def name(self) -> str:
        return f"{self.topic}.{self.exercise}"


@cache
def _speed_graded(topic: str) -> tuple[str, ...]:
    """The exercises of `topic` that have a speed check, in order (from its public expectations,
    as `scores.outline` reads the points: no JAX import needed)."""
    from jaxlings import public

    doc = json.loads(public.path_for(topic).read_text())
    return tuple(
        e["name"]
        for e in doc["spec"]["exercises"]["$tuple"]
        if any(c.get("$type") == "Speed" for c in e["checks"]["$tuple"])
    )


def speed_exercises(topics: Sequence[str]) -> list[tuple[str, str]]:
    """(topic, exercise) of every speed-graded exercise of these topics, in course order."""
    return [(t, e) for t in topics for e in _speed_graded(t)]


def best_ratios(submissions: Iterable[Submission]) -> dict[tuple[str, str], tuple[float, Submission]]:
    """(topic, exercise) -> one student's lowest measured ratio and the submission it came from,
    over their submissions' latest complete results; the earliest submission on a tie."""
    best: dict[tuple[str, str], tuple[float, Submission]] = {}
    for sub in sorted(submissions, key=lambda s: (s.created_at, s.id)):
        for topic, result in topic_results(sub).items():
            for exercise, score in result.exercises.items():
                where = (topic, exercise)
                if score.ratio is not None and (where not in best or score.ratio < best[where][0]):
                    best[where] = (score.ratio, sub)
    return best


def board(
    students: Iterable[Student], submissions: Iterable[Submission], exercises: Sequence[tuple[str, str]]
) -> list[ExerciseBoard]:
    """The leaderboard of `exercises` (`speed_exercises`): per exercise, every student on the
    roster with a pseudonym who has a measured ratio, ranked by it (lower first; then the earlier
    submission)."""
    named = {s.id: s.pseudonym for s in students if s.dropped_at is None and s.pseudonym}
    by_student: dict[int, list[Submission]] = {}
    for sub in submissions:
        if sub.student_id in named:
            by_student.setdefault(sub.student_id, []).append(sub)
    rows: dict[tuple[str, str], list[tuple[float, dt.datetime, int, str, int]]] = {}
    for sid, subs in by_student.items():
        for where, (ratio, sub) in best_ratios(subs).items():
            rows.setdefault(where, []).append((ratio, sub.created_at, sub.id, named[sid], sid))
    return [ExerciseBoard(t, e, _ranked(rows.get((t, e), []))) for t, e in exercises]


def _ranked(rows: list[tuple[float, dt.datetime, int, str, int]]) -> tuple[Entry, ...]:
    """Entries in order of ratio (then time received); equal ratios share a rank ("1, 2, 2, 4")."""
    ordered = sorted(rows)
    entries: list[Entry] = []
    for i, (ratio, at, sub_id, pseudonym, sid) in enumerate(ordered):
        rank = entries[-1].rank if entries and entries[-1].ratio == ratio else i + 1
        entries.append(Entry(rank, pseudonym, ratio, sid, sub_id, at))
    return tuple(entries)


# -- choosing a pseudonym -------------------------------------------------------------------------


def clean(text: str) -> str:
    """`text` as a pseudonym (NFKC, trimmed, runs of spaces made one), or PseudonymError saying
    what does not fit."""
    name = unicodedata.normalize("NFKC", text).strip()
    if not name.isprintable():
        raise PseudonymError("a pseudonym may hold printable characters only (no tabs, line breaks or control codes)")
    name = " ".join(part for part in name.split(" ") if part)
    if not SHORTEST <= len(name) <= LONGEST:
        raise PseudonymError(f"a pseudonym has {SHORTEST} to {LONGEST} characters (this one has {len(name)})")
    return name


def key(pseudonym: str) -> str:
    """What makes two pseudonyms the same in storage: their case-folded NFKC form ("Ann" is "ANN")."""
    return unicodedata.normalize("NFKC", pseudonym).casefold()


@cache
def _prototypes() -> dict[str, str]:
    """Each character Unicode lists as confusable (confusables.txt, through confusable_homoglyphs)
    -> one representative of everything it can be mistaken for (the least code point of its
    class: pairs joined transitively; single characters only)."""
    from confusable_homoglyphs import utils  # type: ignore[import-untyped]

    parent: dict[str, str] = {}

    def root(c: str) -> str:
        while parent.get(c, c) != c:
            c = parent[c]
        return c

    for char, glyphs in utils.load("confusables.json").items():
        for glyph in glyphs:
            a, b = root(char), root(glyph["c"])
            if len(char) == 1 and len(glyph["c"]) == 1 and a != b:
                parent[max(a, b)] = min(a, b)
    return {c: root(c) for c in parent}


def skeletons(text: str) -> frozenset[str]:
    """What a name looks like, in lower case and in upper case: NFKC, case folded (upper-cased),
    each character as the representative of what it can be mistaken for (`_prototypes`), spaces
    collapsed. Two names look alike where their skeletons meet: "Аlice" (Cyrillic А), "ALICE" and
    "alice"; Greek "ΑΝΝ" and "ann" (in capitals; its small letters look like "avv"). Unicode
    TR39's skeleton, compared whatever the case."""
    protos = _prototypes()

    def mapped(s: str) -> str:
        return " ".join("".join(protos.get(c, c) for c in unicodedata.normalize("NFD", s)).split())

    text = unicodedata.normalize("NFKC", text)
    return frozenset({mapped(text.casefold()), mapped(text.upper())}) - {""}


def refusal(name: str, me: Student, roster: Iterable[Student]) -> PseudonymError | PseudonymTaken | None:
    """Why `me` may not take the clean pseudonym `name`, given everyone on the roster (dropped
    students too: they may come back); None when they may. Names are compared by `skeletons`; every
    unavailable one gets the same refusal (`UNAVAILABLE`)."""
    wanted = skeletons(name)
    others = []
    for other in roster:
        if other.id == me.id:
            if wanted & (skeletons(other.login) | skeletons(other.name or "")):
                return PseudonymError(
                    "a pseudonym keeps you anonymous on the board: choose one that is not your login or name"
                )
        else:
            others.append(other)
    for other in others:
        if wanted & (skeletons(other.login) | skeletons(other.name or "") | skeletons(other.pseudonym or "")):
            return PseudonymTaken(UNAVAILABLE)
    return None


class Tries:
    """How many names each student tried in the last hour (this process's count: a server with
    several processes allows as many times `TRIES`); past `TRIES`, a 429."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._times: dict[int, list[float]] = {}

    def take(self, student_id: int) -> None:
        """Count one try, or raise PseudonymTooOften (nothing counted) where the hour's are spent."""
        now = time.monotonic()
        with self._lock:
            recent = [t for t in self._times.get(student_id, []) if now - t < 3600]
            if len(recent) >= TRIES:
                wait = int(3600 - (now - recent[0])) + 1
                raise PseudonymTooOften(f"{TRIES} pseudonyms tried in the last hour; try again in {wait // 60 + 1} min")
            self._times[student_id] = [*recent, now]


class PseudonymTooOften(ValueError):
    """A student past `TRIES` names an hour (a 429)."""


TRIED = Tries()


def choose(session: Session, student_id: int, text: str) -> str:
    """Set the student's pseudonym to `text` (cleaned) and return it; PseudonymError,
    PseudonymTaken or PseudonymTooOften when it may not be theirs (now). The caller commits (a
    race to the same pseudonym ends at the unique constraint: IntegrityError)."""
    name = clean(text)
    me = session.get(Student, student_id)
    if me is None:
        raise PseudonymError("only a student on the roster has a pseudonym")
    if me.pseudonym is not None and key(me.pseudonym) == key(name):
        return me.pseudonym  # keeping one's own: nothing asked of anyone else
    TRIED.take(student_id)
    problem = refusal(name, me, session.scalars(select(Student)))
    if problem is not None:
        raise problem
    me.pseudonym, me.pseudonym_key = name, key(name)
    return name


def release_clashes(session: Session, student: Student) -> list[str]:
    """After `student`'s login or name was set: the pseudonyms that now look like it (another's,
    or their own) are cleared, since a name on the roster comes first; the logins whose pseudonym
    was cleared."""
    names = skeletons(student.login) | skeletons(student.name or "")
    cleared = []
    for other in session.scalars(select(Student).where(Student.pseudonym.is_not(None))):
        if skeletons(other.pseudonym or "") & names:
            other.pseudonym = other.pseudonym_key = None
            cleared.append(other.login)
            log.warning("cleared %s's pseudonym: it looks like %s's login or name", other.login, student.login)
    return cleared


def leave(session: Session, student_id: int) -> None:
    """Clear the student's pseudonym: they leave the board (what they submitted stays)."""
    me = session.get(Student, student_id)
    if me is not None:
        me.pseudonym = me.pseudonym_key = None

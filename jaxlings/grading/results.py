"""Check outcomes and the result file: Gradescope's `results.json`, plus jaxlings' extras.

One test per (exercise, check), named `<topic>.<exercise>:<check>`, with `tags` =
[topic, exercise, check] and the measured figures in `extra_data`. The top level carries
`score`, `max_score`, `execution_time`, and `extra_data` with the platform and grader version,
so the same file works on Gradescope and in the gradebook. Written with `leaderboard=True`
(`grade grade --leaderboard`, which the Gradescope export runs), it also carries Gradescope's
top-level `leaderboard`: one entry per exercise whose speed was measured (`measured_ratio`).

Every string a student's process wrote (an exception's type, message and location, a treedef,
an output path, printed lines) is clipped to `MAX_TEXT` characters where it enters a message
(`clip`: `replies.check` clips worker errors as they arrive, `compare` what it quotes), and each
test is bounded as it is built (`TestResult.of`): its message to `MAX_MESSAGE` characters, its
measured figures to `MAX_DATA` bytes of JSON. So results.json, and the service's database that
stores it, grow with the number of checks, never with what a submission sends.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from jaxlings import __version__

MAX_TEXT = 2000  # characters of one student string in a message
MAX_MESSAGE = 4000  # characters of one test's message
MAX_DATA = 16000  # bytes of one test's extra_data, as JSON


def clip(text: str, limit: int = MAX_TEXT) -> str:
    """`text` cut to `limit` characters, saying how much was cut."""
    text = str(text)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit} more characters)"


def bounded_data(data: dict[str, Any]) -> dict[str, Any]:
    """`data` if its JSON is at most `MAX_DATA` bytes; else its entries that fit, smallest
    first, and the names of those dropped."""

    def size(x: Any) -> int:
        return len(json.dumps(x, default=_jsonable_or_repr))

    if size(data) <= MAX_DATA:
        return data
    kept: dict[str, Any] = {}
    dropped = []
    used = 200
    for key, value in sorted(data.items(), key=lambda kv: size(kv[1])):
        cost = size(value) + len(str(key)) + 6
        if used + cost <= MAX_DATA:
            kept[key] = value
            used += cost
        else:
            dropped.append(clip(str(key), 80))
    return {**kept, "dropped": dropped[:20]}


@dataclass
class Outcome:
    """One check's verdict: the fraction of its points earned, a message, measured figures."""

    fraction: float
    message: str
    data: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def ok(cls, message: str = "passed", **data: Any) -> Outcome:
        return cls(1.0, message, data)

    @classmethod
    def fail(cls, message: str, **data: Any) -> Outcome:
        return cls(0.0, message, data)

    @classmethod
    def pending(cls, message: str, **data: Any) -> Outcome:
        """A check that only the grading machine can judge (speed against the reference there):
        in a public run it earns nothing yet, is never shown as passed, and says what was seen."""
        return cls(0.0, f"judged on submission: {message}", {**data, "pending": True})


@dataclass
class TestResult:
    """One Gradescope test."""

    __test__ = False  # not a pytest test class, whatever module imports it

    name: str
    score: float
    max_score: float
    status: str
    output: str
    visibility: str
    tags: list[str]
    extra_data: dict[str, Any]

    @classmethod
    def of(cls, topic: str, exercise: str, check: str, points: float, outcome: Outcome, visibility: str) -> TestResult:
        score = round(points * max(0.0, min(1.0, outcome.fraction)), 4)
        return cls(
            name=f"{topic}.{exercise}:{check}",
            score=score,
            max_score=points,
            status="passed" if outcome.fraction >= 1.0 else "failed",
            output=clip(outcome.message, MAX_MESSAGE),
            visibility=visibility,
            tags=[topic, exercise, check],
            extra_data=bounded_data(outcome.data),
        )

    @property
    def pending(self) -> bool:
        """Left for the grading machine to judge (see `Outcome.pending`)."""
        return bool(self.extra_data.get("pending"))

    @property
    def topic(self) -> str:
        return self.tags[0]

    @property
    def exercise(self) -> str:
        return self.tags[1]

    @property
    def check(self) -> str:
        return self.tags[2]


@dataclass
class Result:
    """A whole grading run."""

    tests: list[TestResult]
    execution_time: float
    extra_data: dict[str, Any]

    @property
    def score(self) -> float:
        return round(sum(t.score for t in self.tests), 4)

    @property
    def max_score(self) -> float:
        return round(sum(t.max_score for t in self.tests), 4)

    def to_json(self, leaderboard: bool = False) -> dict[str, Any]:
        """The results.json document; with `leaderboard`, Gradescope's `leaderboard` list too
        (left out when no speed was measured)."""
        doc = {
            "score": self.score,
            "max_score": self.max_score,
            "execution_time": round(self.execution_time, 2),
            "output": f"jaxlings grader {__version__}: {self.score:g} / {self.max_score:g}",
            "visibility": "visible",
            "stdout_visibility": "hidden",
            "tests": [asdict(t) for t in self.tests],
            "extra_data": {**self.extra_data, "grader_version": __version__},
        }
        entries = leaderboard_entries(self.tests) if leaderboard else []
        return {**doc, "leaderboard": entries} if entries else doc

    def write(self, path: Path, leaderboard: bool = False) -> None:
        """Write atomically: a half-written results.json never exists."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".results-")
        with os.fdopen(fd, "w") as f:
            json.dump(self.to_json(leaderboard), f, indent=2, allow_nan=False, default=_jsonable)
        os.replace(tmp, path)


def measured_ratio(check: str, data: dict[str, Any]) -> float | None:
    """The time ratio (student / reference, lower is faster) that a `speed` test measured on the
    grading machine, from its `extra_data`: the slower of its clock's ratio and its wall-time
    ratio, so that a submission that idles (little CPU time, much wall time) cannot rank by the
    CPU clock. None when it measured none: another check, judged on submission (`pending`), not
    run (`waits`: `correct` failed), a timed call that failed or gave a wrong output (no
    `ratio`). The one definition the service's leaderboard and Gradescope's `leaderboard` field
    both read."""
    if check != "speed" or data.get("pending") or data.get("waits"):
        return None
    found = [data.get("ratio"), data.get("wall_ratio", data.get("ratio"))]
    ratios = [float(r) for r in found if isinstance(r, int | float) and not isinstance(r, bool)]
    if len(ratios) < 2 or not all(math.isfinite(r) and r > 0 for r in ratios):
        return None
    return max(ratios)


def leaderboard_entries(tests: list[TestResult]) -> list[dict[str, Any]]:
    """Gradescope's `leaderboard` entries: per exercise whose speed was measured, its time ratio
    against the reference, lower first (`order: asc`). Gradescope shows them under the pseudonym
    the student gives it; the ratio is the grader's own measurement, never the student's."""
    return [
        {"name": f"{t.topic}.{t.exercise} time / reference", "value": ratio, "order": "asc"}
        for t in tests
        if (ratio := measured_ratio(t.check, t.extra_data)) is not None
    ]


def _jsonable(x: Any) -> Any:
    if hasattr(x, "item"):
        return x.item()
    raise TypeError(f"not JSON-serialisable: {type(x).__name__}")


def _jsonable_or_repr(x: Any) -> Any:
    """For measuring only: anything `_jsonable` refuses is sized by its repr."""
    try:
        return _jsonable(x)
    except (TypeError, ValueError):
        return repr(x)


def by_topic(tests: list[TestResult]) -> dict[str, list[TestResult]]:
    """Tests grouped by topic, in order."""
    grouped: dict[str, list[TestResult]] = {}
    for t in tests:
        grouped.setdefault(t.topic, []).append(t)
    return grouped

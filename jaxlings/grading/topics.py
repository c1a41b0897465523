"""The topics of the course, in teaching order: ORDER is the one list of them.

Each topic's spec is a module of `jaxlings.specs` defining `TOPIC`, a `jaxlings.grading.spec.Topic`
holding its whole spec, hidden parts included (samplers, edge cases); that package stays on the
grader's side. What students are checked against is the public spec (`jaxlings.public.topic`),
which `resolve(..., public=True)` gives: it works in the student package too, which has no
`jaxlings.specs`.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import traceback
from pathlib import Path

from jaxlings.grading.check import SpecError
from jaxlings.grading.source import parse_trusted
from jaxlings.grading.spec import Topic

SPECS_DIR = Path(__file__).resolve().parent.parent / "specs"
"""Where the hidden specs are (`jaxlings/specs/`), in the grader's installation only."""

ORDER: tuple[str, ...] = (
    "jit_basics",
    "prng",
    "at_updates",
    "static_args",
    "loops",
    "pytrees",
    "primitives",
    "sharding",
    "ising",
    "autodiff",
    "training",
    "debugging",
    "precision",
)


def load(name: str) -> Topic:
    """The full spec of topic `name` (the grader's); a ValueError naming the known topics otherwise."""
    check_name(name)
    try:
        return importlib.import_module(f"jaxlings.specs.{name}").TOPIC
    except ModuleNotFoundError as exc:
        if exc.name not in ("jaxlings.specs", f"jaxlings.specs.{name}"):  # the student package has no specs/
            raise
        raise ValueError(
            f"the hidden grader of {name!r} is not installed here (only the course's grader has it)"
        ) from None
    except SpecError as exc:
        raise SpecError(f"topic {name}{where(exc, SPECS_DIR / f'{name}.py')}: {exc}") from None


def where(exc: Exception, path: Path) -> str:
    """Where in the topic module at `path` a spec error was raised: ", exercise dropout (prng.py
    line 95)", naming the exercise whose `Exercise(...)` holds that line (none for a line outside
    one, nor where the message already starts with the exercise's name)."""
    lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename) == path and f.lineno]
    if not lines:
        return ""
    line = lines[-1]
    exercise = _exercise_at(path.read_text(), line)
    said = exercise is None or str(exc).startswith(f"{exercise}:")
    return f"{'' if said else f', exercise {exercise}'} ({path.name} line {line})"


def _exercise_at(source: str, line: int) -> str | None:
    """The `name=` of the innermost `Exercise(...)` call in `source` that spans `line`."""
    found: str | None = None
    for node in ast.walk(parse_trusted(source, "the topic spec")):
        if (
            isinstance(node, ast.Call)
            and getattr(node.func, "id", None) == "Exercise"
            and node.lineno <= line <= (node.end_lineno or node.lineno)
        ):
            for kw in node.keywords:
                if kw.arg == "name" and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str):
                    found = kw.value.value
    return found


def check_name(name: str) -> None:
    """A ValueError naming the known topics unless `name` is one."""
    if name not in ORDER:
        raise ValueError(f"unknown topic {name!r}; the topics are: {', '.join(ORDER)}")


def load_public(name: str) -> Topic:
    """The public spec of topic `name`: what `grade check` grades (no samplers, no edge cases)."""
    from jaxlings import public

    check_name(name)
    return public.topic(name)


def resolve(names: list[str] | None, *, public: bool = False) -> list[Topic]:
    """Specs for `names` (all topics when empty), in course order; public specs with `public`.

    A name is a topic (`prng`) or one exercise of it (`prng.dropout`); a topic named through
    its exercises keeps only those.
    """
    load_spec = load_public if public else load
    wanted: dict[str, set[str] | None] = {}
    for name in names or ORDER:
        topic, _, exercise = name.partition(".")
        spec = load_spec(topic)
        if not exercise:
            wanted[topic] = None
        elif (chosen := wanted.setdefault(topic, set())) is not None:
            spec.exercise(exercise)
            chosen.add(exercise)
    selected = []
    for name in ORDER:
        if name in wanted:
            spec, only = load_spec(name), wanted[name]
            if only is not None:
                spec = dataclasses.replace(spec, exercises=tuple(e for e in spec.exercises if e.name in only))
            selected.append(spec)
    return selected

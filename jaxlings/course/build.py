"""`grade build`: generate the student stubs in `exercises/`, the nbgrader notebooks in
`course/source/` and the public expectations in `jaxlings/public/` from `solutions/` (and,
for the notebooks, the lessons and the specs).

A solution marks what the student writes with nbgrader's markers:

    ### BEGIN SOLUTION
    ...
    ### END SOLUTION

The stub keeps everything else (module docstring, imports, signatures, task docstrings) and
puts `raise NotImplementedError(...)` in place of each marked block. Each exercise's docstring,
in the stub and in the notebook, ends with its "Graded" list, generated from the topic's spec
(`jaxlings.course.graded`); the solutions write none. `check=True` writes nothing and reports
the files that are out of date, which is what the test suite runs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from jaxlings.course import expectations, graded, notebooks
from jaxlings.course.markers import BEGIN, DEF, END
from jaxlings.grading import topics
from jaxlings.grading.source import SourceError, parse_trusted

HEADER = """\
# Topic `{topic}`: replace each `raise NotImplementedError(...)` below with your code.
# Lesson: lessons/{topic}.md. Check: `grade check {topic}` (re-check on save: `grade watch {topic}`).
# Stuck? `grade hint {topic}.<function>`. Each docstring ends with what is graded; the rules all
# exercises share are in README.md ("How you are graded").
"""
"""A stub's header: what to edit, how to check, where the lesson and the rules are (paths in a
student's workspace, `grade init`'s layout: README.md, lessons/, exercises/)."""

REPO_TO_WORKSPACE = ((re.compile(r"\bcourse/lessons/"), "lessons/"),)
"""Paths of the course repository that a solution's docstrings may name, as a workspace lays them out."""


def for_workspace(text: str) -> str:
    """`text` with the repository's paths told as a student's workspace has them."""
    for pattern, replacement in REPO_TO_WORKSPACE:
        text = pattern.sub(replacement, text)
    return text


class BuildError(Exception):
    """A solution file is malformed (unbalanced markers, a marker outside a function)."""


@dataclass(frozen=True)
class Built:
    """One generated file: where it goes, and whether it changed (or would, with check=True)."""

    path: Path
    changed: bool


def make_stub(source: str, topic: str, solved: Collection[str] = ()) -> str:
    """The stub of one solution module's source. The functions named in `solved` keep their
    solution (a student's submission part way through the topic, for benchmarks and tests)."""
    out: list[str] = []
    current_def: str | None = None
    inside = keep = False
    for lineno, line in enumerate(source.splitlines(), 1):
        if m := DEF.match(line):
            current_def = m["name"]
        if m := BEGIN.match(line):
            if inside or current_def is None:
                raise BuildError(f"solutions/{topic}.py:{lineno}: BEGIN SOLUTION outside a function or nested")
            inside, keep = True, current_def in solved
            if not keep:
                out.append(f'{m["indent"]}raise NotImplementedError("{current_def}: your code here")')
            continue
        if END.match(line):
            if not inside:
                raise BuildError(f"solutions/{topic}.py:{lineno}: END SOLUTION without BEGIN")
            inside = False
            continue
        if not inside or keep:
            out.append(line)
    if inside:
        raise BuildError(f"solutions/{topic}.py: BEGIN SOLUTION is never closed")
    stub = HEADER.format(topic=topic) + for_workspace("\n".join(out)) + "\n"
    try:
        parse_trusted(stub, f"the stub made from solutions/{topic}.py")
    except SourceError as exc:
        raise BuildError(str(exc)) from None
    return stub


def marked_functions(source: str) -> list[str]:
    """Names of the functions that hold a solution block, in order."""
    names: list[str] = []
    current: str | None = None
    for line in source.splitlines():
        if m := DEF.match(line):
            current = m["name"]
        if BEGIN.match(line) and current is not None and current not in names:
            names.append(current)
    return names


def build(
    solutions_dir: Path,
    exercises_dir: Path,
    course_dir: Path | None = None,
    *,
    check: bool = False,
    public_dir: Path | None = None,
    on_record: Callable[[str], None] | None = None,
    names: Sequence[str] = (),
) -> list[Built]:
    """Generate (or, with `check`, compare) every topic's stub and, given `course_dir`, its
    nbgrader source notebook and, given `public_dir`, its public expectations (recorded again
    only when their fingerprint changed; `on_record(topic)` is called before each recording);
    return what changed. `names` limits it to those topics (all of them when empty)."""
    for name in names:
        topics.check_name(name)
    built = []
    for name in [n for n in topics.ORDER if not names or n in names]:
        spec = topics.load(name)
        source = (solutions_dir / f"{name}.py").read_text()
        expected = [ex.name for ex in spec.exercises]
        if (found := marked_functions(source)) != expected:
            raise BuildError(f"solutions/{name}.py marks {found}, but its spec grades {expected}")
        try:
            source = graded.insert(source, spec)
        except (graded.GradedError, SourceError) as exc:
            raise BuildError(str(exc)) from None
        built.append(_generate(exercises_dir / f"{name}.py", make_stub(source, name), check))
        if course_dir is not None:
            try:
                text = notebooks.render(spec, course_dir / "lessons" / f"{name}.md", source)
            except (notebooks.NotebookError, SourceError) as exc:
                raise BuildError(str(exc)) from None
            built.append(_generate(course_dir / "source" / name / f"{name}.ipynb", text, check))
        if public_dir is not None:
            target, blobs = public_dir / f"{name}.json", public_dir / f"{name}.bin"
            if target.exists() and blobs.exists() and expectations.up_to_date(name, solutions_dir):
                built += [Built(target, False), Built(blobs, False)]
            elif check:
                built += [Built(target, True), Built(blobs, True)]
            else:
                if on_record:
                    on_record(name)
                try:
                    text, data = expectations.record(name, solutions_dir)
                except expectations.RecordingError as exc:
                    raise BuildError(str(exc)) from None
                built += [_generate(target, text, check), _generate(blobs, data, check)]
    return built


def _generate(target: Path, content: str | bytes, check: bool) -> Built:
    """Write `content` (text or bytes) to `target` unless it is already there (or `check`
    forbids writing)."""
    data = content.encode() if isinstance(content, str) else content
    changed = not target.exists() or target.read_bytes() != data
    if changed and not check:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return Built(target, changed)

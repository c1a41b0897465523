"""The "Graded" list of every exercise's docstring, generated from its spec (`grade build`).

What the grader checks is written once, in the topic's spec (`jaxlings/specs/<topic>.py`):
the checks and their points, tolerances, static arguments, requirements, speed bands, streams.
The solution's docstrings state the task only; `insert` adds to each exercise's docstring (in
the stub and in the notebook's answer cell) a list generated from that spec, one line per check:

    Graded (5 points):
      - correct (3): called as written on 2 edge cases ("rate 0 keeps everything", ...) and
        4 random cases, the output equals the reference's (rtol 1e-6, atol 1e-6 for float
        outputs; integers, booleans and keys exactly).
      - jit (1): ...

Each check says what it asks in its own class (`Check.describe(exercise, words)`, beside its
one-line `summary`), and each requirement in its class (`Requirement.describe`), so a new
check or requirement states itself or fails to build. `Context` gives them the exercise's
words: its parameter names (for static arguments, `grad`'s and `vmap`'s axes), its outputs'
names, its cases and its speed workload described by shape, and numbers formatted alike.
A hand-written "Graded" paragraph in a solution is replaced in what is generated, and refused by
`tests/course/test_build.py` in the solution itself.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence
from typing import Any

import numpy as np

from jaxlings.grading import checks
from jaxlings.grading.checks.vocabulary import Workload
from jaxlings.grading.source import functions, parameters, parse_trusted
from jaxlings.grading.spec import Case, Edge, Exercise, Topic
from jaxlings.student import workspace

WIDTH = 96
GRADED = re.compile(r"^\s*Graded\b")
EXACT = "integers, booleans and keys exactly"
"""What a tolerance footnote says of the outputs no tolerance applies to (`compare._leaf_mismatch`)."""


# The rules every exercise shares are stated once, where students read them: the workspace's
# README (shipped with the student package, unlike this module); notebooks repeat them once.
JIT_CONVENTION = workspace.JIT_CONVENTION
TOLERANCE = workspace.TOLERANCE


def notebook_note(topic: Topic) -> str:
    """The grading rules, for `topic`'s notebook's grading note (a notebook student has no README
    open): the checks it names are the topic's own."""
    kinds = {check.name for ex in topic.exercises for check in ex.checks}
    return (
        'Each function\'s docstring ends with its "Graded" list: what to do for each check, its points, and a '
        f"last line of the exact numbers. {JIT_CONVENTION} {TOLERANCE} {workspace.after_correct(kinds)}"
    ).rstrip()


class GradedError(Exception):
    """An exercise's docstring or spec cannot make a Graded list (no docstring, a hand-written
    one, a check or requirement that does not describe itself)."""


def num(x: float) -> str:
    """A number as a student reads it: 1e-6, 2.5e-4, 1.5, 2000."""
    if x == 0:
        return "0"
    if abs(x) < 1e-2 or abs(x) >= 1e5:
        mantissa, exponent = f"{x:.2e}".split("e")
        return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"
    return f"{x:g}"


def _dim(d: int) -> str:
    return f"2**{d.bit_length() - 1}" if d >= 1024 and d & (d - 1) == 0 else str(d)


def join_words(words: Sequence[str], last: str = "and") -> str:
    words = list(words)
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} {last} {words[-1]}"


class Context:
    """What a check's `describe` needs of the exercise, in the docstring's words."""

    def __init__(
        self, exercise: Exercise, params: Sequence[str], topic: Topic | None = None, *, decorated: bool = False
    ):
        self.exercise, self.params, self.topic, self.decorated = exercise, tuple(params), topic, decorated
        self.notes: list[str] = []

    # -- footnotes ---------------------------------------------------------------------------

    def note(self, text: str) -> str:
        """A footnote: `text` (the exact numbers: a tolerance, a limit, a time band) goes to the
        Graded list's last line, so that each check's line says what to do; returns its marker
        ("¹"), the same marker for the same text."""
        if text not in self.notes:
            self.notes.append(text)
        return superscript(self.notes.index(text) + 1)

    # -- names -------------------------------------------------------------------------------

    def arg(self, i: int) -> str:
        """Argument `i` by its parameter name: "`n`"."""
        return f"`{self.params[i]}`" if i < len(self.params) else f"argument {i}"

    def args(self, idx: Sequence[int]) -> str:
        return join_words([self.arg(i) for i in idx])

    def static(self) -> str:
        """ "with `n` static", or "" when the exercise declares no static argument."""
        idx = self.exercise.static_argnums
        return f"with {self.args(idx)} static" if idx else ""

    def jitted(self, jit: bool, *, stream: bool = False, note: str = "") -> str:
        """How a check calls the function: jitted by the grader (with a `note` in brackets), or
        as written."""
        if not jit:
            return "called as written"
        if self.decorated:  # the solution (so the stub) jits it: the grader uses that jit as it is
            return "under its own `jax.jit` (the decorator the task gives it)"
        how = "jitted once by the grader" if stream else "jitted by the grader"
        said = "; ".join(filter(None, (self.static(), note)))
        return f"{how} ({said})" if said else how

    def outputs(self) -> str:
        """The outputs as the docstring names them: "`init_key` and `step_keys`", or "the output"."""
        names = self.exercise.outputs
        return join_words([f"`{n}`" for n in names]) if names else "the output"

    def equal(self) -> str:
        """ "`a` and `b` equal", "the output equals" """
        return f"{self.outputs()} {'equal' if len(self.exercise.outputs) > 1 else 'equals'}"

    # -- numbers -----------------------------------------------------------------------------

    def tolerance(self, rtol: float, atol: float) -> str:
        """The tolerance, as a footnote marker ("¹": "rtol 1e-6, atol 1e-6 for float outputs; ...").

        It applies to float outputs only: `compare.mismatch` compares integers, booleans and
        typed PRNG keys exactly whatever the exercise's rtol and atol, and the footnote says so
        (a key output with a tolerance beside it would read as compared approximately)."""
        return self.note(f"rtol {num(rtol)}, atol {num(atol)} for float outputs; {EXACT}")

    @staticmethod
    def num(x: float) -> str:
        return num(x)

    # -- cases and workloads -----------------------------------------------------------------

    def cases(self) -> str:
        """The cases `correct` (and the checks that follow it) run: "on 2 edge cases ("...",
        "..."; graded on other inputs of each kind) and 4 random cases"; hidden edge cases are
        counted, not named, and the edges that are families (`Edge`: a graded run draws its own
        instance) are said to be."""
        ex = self.exercise
        shown = [c.label for c in ex.edge_cases if not c.hidden]
        hidden = sum(c.hidden for c in ex.edge_cases)
        families = [c.label for c in ex.edge_cases if isinstance(c, Edge)]
        parts = []
        if shown or hidden:
            labels = ", ".join(f'"{label}"' for label in shown)
            if families:
                kinds = (
                    "each kind"
                    if len(families) == len(shown)
                    else "the kind" + ("s " if len(families) > 1 else " ") + join_words([f'"{f}"' for f in families])
                )
                labels += f"; graded on other inputs of {kinds}"
            more = f"{'; ' if shown else ''}{hidden} more hidden" if hidden else ""
            n = len(ex.edge_cases)
            parts.append(f"{n} edge case{'s' if n != 1 else ''} ({labels}{more})")
        if ex.sizes:
            parts.append(f"{len(ex.sizes)} random case{'s' if len(ex.sizes) != 1 else ''}")
        return "on " + " and ".join(parts) if parts else "on no case"

    def case_args(self, size: int) -> str:
        """One sampled case at `size`, by argument: arrays by dtype and shape, ints and fixed
        numbers by value (random numbers and keys are left out): "`x` int32[2**20], `nbins` 256"."""
        return _describe_case(self.exercise, self.params, size)

    def workload(self, speed: Workload) -> str:
        """The speed workload on a CPU, and what differs on an accelerator: "`x` int32[2**20],
        `nbins` = 256 (`x` int32[2**24] on a GPU)"."""
        cpu = speed.size_for("cpu")
        on_cpu = self.stream_or_case(speed, cpu)
        others = []
        for backend, name in (("gpu", "a GPU"), ("tpu", "a TPU")):
            if speed.size_for(backend) == cpu:
                continue
            there = self.stream_or_case(speed, speed.size_for(backend))
            differ = [part for part in _top_level_parts(there) if part not in _top_level_parts(on_cpu)]
            others.append(f"{', '.join(differ) or there} on {name}")
        return f"{on_cpu} ({'; '.join(others)})" if others else on_cpu

    def stream_or_case(self, speed: Workload, size: int) -> str:
        if speed.stream is None:
            return self.case_args(size)
        return _describe_stream(self.exercise, self.params, speed, size)

    # -- requirements ------------------------------------------------------------------------

    def requirements(self, requirements: Sequence[Any]) -> str:
        """The requirements' descriptions, scored ones first, advice last (no points)."""
        trusted = [self.footnoted(_describe(r)) for r in requirements if getattr(r, "trusted", True)]
        advice = [self.footnoted(_describe(r)) for r in requirements if not getattr(r, "trusted", True)]
        text = "; ".join(trusted)
        if advice:
            text += f"{'; ' if text else ''}(advice, no points: {'; '.join(advice)})"
        return text

    def footnoted(self, text: str) -> str:
        """A requirement's description with its numbers moved to a footnote: a closing bracket
        that holds a figure ("it does not grow with the input (at the largest case at most x3 +
        20 ...)") and a limit relative to the reference's ("at most x2 + 2000 the reference's")."""
        if m := TRAILING_FIGURES.search(text):
            text = f"{text[: m.start()]}{self.note(m[1])}"
        if m := RELATIVE_LIMIT.search(text):
            text = f"{text[: m.start()]}at most about the reference's{m[1] or ''}{self.note(m[0])}{text[m.end() :]}"
        return text


TRAILING_FIGURES = re.compile(r" \(([^()]*\d[^()]*)\)$")
RELATIVE_LIMIT = re.compile(
    r"at most x[\d.]+ \+ [\d.]+(?: s)? the reference's( (?!on\b)\w+(?: time)?)?(?: on the same inputs)?"
)


def _top_level_parts(text: str) -> list[str]:
    """`text` split at the ", " that lie outside brackets: "`x` float32[2**16, 8], `n` = 3"
    is two parts, not three."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += {"[": 1, "(": 1, "]": -1, ")": -1}.get(ch, 0)
        if depth == 0 and text.startswith(", ", i):
            parts.append(text[start:i])
            start = i + 2
    return parts + [text[start:]]


def _describe(requirement: Any) -> str:
    describe = getattr(type(requirement), "describe", None)
    if describe is None or getattr(describe, "__qualname__", "").startswith("Requirement."):
        raise GradedError(
            f"the requirement {type(requirement).__name__} has no `describe()`: say what it asks, "
            "for the docstrings' Graded list"
        )
    return requirement.describe()


# -- sampling, for the workload's shapes -----------------------------------------------------


def _array(a: np.ndarray) -> str:
    return f"{a.dtype}[{', '.join(_dim(int(d)) for d in a.shape)}]"


def _value(a: Any) -> str | None:
    """One argument by shape (arrays, trees) or value (ints, bools, tuples of ints); None for
    a float or a key (their values are random, or say nothing)."""
    if isinstance(a, np.ndarray):
        return _array(a)
    if isinstance(a, (bool, np.bool_)):
        return repr(bool(a))
    if isinstance(a, (int, np.integer)):
        return str(int(a))
    if isinstance(a, tuple) and all(isinstance(v, int) for v in a):
        return repr(a)
    if isinstance(a, (list, tuple, dict)):
        leaves = _leaves(a)
        return f"a tree of {len(leaves)} arrays" if leaves else None
    return None


def _leaves(tree: Any) -> list[Any]:
    if isinstance(tree, dict):
        return [leaf for v in tree.values() for leaf in _leaves(v)]
    if isinstance(tree, (list, tuple)):
        return [leaf for v in tree for leaf in _leaves(v)]
    return [tree] if isinstance(tree, (np.ndarray, np.generic)) else []


_DRAWN: dict[tuple[int, int, int], tuple[Any, Any]] = {}


def _cached(owner: Any, size: int, seed: int, draw: Any) -> Any:
    """`draw()` once per (spec object, size, seed) in this process: a build describes every
    workload on each of its files, and a GPU's workload takes a while to draw."""
    key = (id(owner), size, seed)
    if key not in _DRAWN or _DRAWN[key][0] is not owner:
        _DRAWN[key] = (owner, draw())
    return _DRAWN[key][1]


def _sample(ex: Exercise, size: int, seed: int) -> Case:
    return _cached(ex, size, seed, lambda: ex.sample(np.random.default_rng(seed), size))


def _describe_args(args: tuple[Any, ...], again: tuple[Any, ...] | None, params: Sequence[str]) -> str:
    parts = []
    for i, a in enumerate(args):
        name = f"`{params[i]}`" if i < len(params) else f"argument {i}"
        text = _value(a)
        if text is None and again is not None and isinstance(a, float) and again[i] == a:
            text = num(a)  # a float the sampler fixes (the same in two draws)
        if text is not None:
            by_shape = isinstance(a, np.ndarray) or text.startswith("a tree")
            parts.append(f"{name} {text}" if by_shape else f"{name} = {text}")
    return ", ".join(parts) or "one call"


def _describe_case(ex: Exercise, params: Sequence[str], size: int) -> str:
    return _describe_args(_sample(ex, size, 0).args, _sample(ex, size, 1).args, params)


def _stream(speed: Workload, size: int) -> list[Case]:
    stream = speed.stream
    if stream is None:
        raise GradedError("a speed workload without a stream has no calls to describe")
    return _cached(speed, size, 0, lambda: stream(np.random.default_rng(0), size))


def _describe_stream(ex: Exercise, params: Sequence[str], speed: Workload, size: int) -> str:
    calls = _stream(speed, size)
    first = _describe_args(calls[0].args, None, params)
    if len(calls) == 1:
        return first
    same = all(_describe_args(c.args, None, params) == first for c in calls)
    return f"a stream of {len(calls)} calls" + (f" on {first}" if same else " of various shapes")


# -- the list ----------------------------------------------------------------------------------


def items(
    ex: Exercise, params: Sequence[str], topic: Topic | None = None, *, decorated: bool = False
) -> list[tuple[str, float, str]]:
    """(check, points, what it asks) for each of the exercise's checks, in the spec's order;
    `decorated`: the task's function comes decorated (jitted) in the stub."""
    return described(ex, params, topic, decorated=decorated)[0]


def described(
    ex: Exercise, params: Sequence[str], topic: Topic | None = None, *, decorated: bool = False
) -> tuple[list[tuple[str, float, str]], list[str]]:
    """`items`, and the footnotes their texts refer to ("¹" is the first)."""
    words = Context(ex, params, topic, decorated=decorated)
    out = []
    for check in ex.checks:
        if type(check).describe is checks.Check.describe:
            raise GradedError(f"the check {type(check).__name__} ({type(check).__module__}) has no `describe`")
        out.append((check.name, check.points, check.describe(ex, words)))
    return out, words.notes


def _points(points: float, check: str) -> str:
    return "advice, no points" if checks.KINDS[check].advisory else f"{points:g}"


def block(
    ex: Exercise, params: Sequence[str], indent: str = "", topic: Topic | None = None, *, decorated: bool = False
) -> list[str]:
    """The Graded list as docstring lines, indented by `indent`."""
    total = sum(c.points for c in ex.checks if not c.advisory)
    lines = [f"{indent}Graded ({total:g} point{'' if total == 1 else 's'}):"]
    found, notes = described(ex, params, topic, decorated=decorated)
    for check, points, text in found:
        lines += _wrap(text, f"{indent}  - {check} ({_points(points, check)}): ", indent + "    ")
    if notes:
        footnotes = " ".join(f"{superscript(i)} {_sentence(n)}" for i, n in enumerate(notes, 1))
        lines += _wrap(footnotes, f"{indent}  ", indent + "  ")
    for line in lines:
        if "\\" in line or '"""' in line:
            raise GradedError(f"{ex.name}: the Graded list may not hold a backslash or triple quotes: {line!r}")
    return lines


SUPERSCRIPTS = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def superscript(n: int) -> str:
    """A footnote's marker: 1 -> "¹" (distinct from shapes' brackets, `float32[3]`)."""
    return str(n).translate(SUPERSCRIPTS)


def _wrap(text: str, first: str, rest: str) -> list[str]:
    return textwrap.wrap(
        text, WIDTH, initial_indent=first, subsequent_indent=rest, break_on_hyphens=False, break_long_words=False
    )


def _sentence(text: str) -> str:
    """A footnote's text ending with a full stop (it is kept in lower case: "rtol 1e-6")."""
    text = text.strip()
    return text if text.endswith(".") else text + "."


def hand_written(source: str, names: Sequence[str]) -> list[str]:
    """The exercises whose docstring in `source` already has a "Graded" paragraph."""
    found = []
    for fn in functions(parse_trusted(source, "a solution")):
        if not fn.is_async and fn.name in names and any(GRADED.match(line) for line in (fn.doc or "").splitlines()):
            found.append(fn.name)
    return found


def _drop_hand_written(lines: list[str], start: int, end: int) -> int:
    """Delete the "Graded" paragraphs of the docstring on lines `start`..`end` (1-based, the
    closing quotes' line last) from `lines`, with the blank line before each; how many went."""
    dropped, i = 0, start  # index of the docstring's second line (its first holds the opening quotes)
    while i < end - 1 - dropped:
        if GRADED.match(lines[i]):
            j = i
            while j < end - 1 - dropped and lines[j].strip():
                j += 1
            first = i - 1 if i - 1 >= start and not lines[i - 1].strip() else i
            del lines[first:j]
            dropped += j - first
            i = first
        else:
            i += 1
    return dropped


def insert(source: str, topic: Topic) -> str:
    """`source` (a solution module) with each exercise's docstring ending in its Graded list, in
    place of any hand-written "Graded" paragraph (which `tests/course/test_build.py` refuses in a solution)."""
    names = [ex.name for ex in topic.exercises]
    lines = source.splitlines()
    edits = []
    for fn in functions(parse_trusted(source, f"solutions/{topic.name}.py")):
        if fn.is_async or fn.name not in names:
            continue
        first = fn.docstring
        if first is None:
            raise GradedError(f"solutions/{topic.name}.py: {fn.name} has no docstring")
        indent = " " * first.col_offset
        edits.append(
            (
                first.lineno,
                first.end_lineno or first.lineno,
                indent,
                block(
                    topic.exercise(fn.name), parameters(fn.node), indent, topic, decorated=bool(fn.node.decorator_list)
                ),
            )
        )
    for start, end, indent, graded in sorted(edits, reverse=True):
        end -= _drop_hand_written(lines, start, end)
        closing = lines[end - 1]
        stripped = closing.strip()
        if stripped in ('"""', "'''"):
            body_end, quote = end - 1, stripped
        else:  # the text ends on the closing line: put the quotes on a line of their own
            quote = stripped[-3:]
            lines[end - 1] = closing.rstrip()[:-3].rstrip()
            body_end = end
        blank = [] if lines[body_end - 1].strip() == "" else [""]
        lines[body_end:end] = [*blank, *graded, f"{indent}{quote}"]
    return "\n".join(lines) + ("\n" if source.endswith("\n") else "")

"""The similarity report: per exercise, the pairs of students whose functions are suspiciously alike.

Pure functions over source text; the routes hand them each student's counted submission
(`scores`) read from its stored upload (`views.topic_files`). For one exercise:

1. **Read** what the student's topic file binds to the exercise's name, as the grader runs it
   (`jaxlings.grading.source`, the one reader of Python source; a file that does not parse has
   nothing to compare): the last top-level `def` of the name, or the function a later `name = f`
   or `name = jax.jit(f)` binds (a file that binds the name more than once says so: `Code.notes`),
   with every module-level function it reaches by name (`reached`). Helpers are read in place
   where they can be (`jaxlings.service.inline`): a function that only calls a helper with its
   own parameters is the helper's body, and a call of a helper that returns one expression is
   that expression; the others are compared beside it. So a body moved into helpers is still the
   body. Stubs (`jaxlings.grading.stubs`) and missing functions are left out: an unsolved
   exercise is not a copy.
2. **Normalise** it, so that what a copier changes cheaply changes nothing: the docstring,
   comments and formatting go (never in the tree); module aliases read as what they import
   (`np` bound to `jax.numpy` is `jax.numpy`); dead code goes (bare expressions that call
   nothing, `pass`, assignments and nested functions whose names are never read, to a fixed
   point); API synonyms read as one form (`_Synonyms`); arithmetic that changes nothing goes
   (`x + 0`, `x * 1`, ...); the helpers left are named `h0, h1, ...` by first reach; runs of
   simple statements are put in one canonical order where their order does not matter (a
   topological order of their data dependencies, ties broken by the statement's text with local
   names masked), and so are the operands of commutative operations (`b * a` is `a * b`); then
   local names are renamed `v0, v1, ...` by first use. Constants, attribute names (the JAX API
   used) and free names are kept. What was changed is noted with its line for the instructor
   (`Code.normalised`), and each normalised statement keeps the lines it was written on
   (`Code.spans`), so that the page marks the matched regions where each student wrote them.
3. **Shingle** the normalised tree: its preorder tokens (node types, names, attributes,
   constants) in overlapping n-grams (`N`), and beside them long ones (`LONG`: a long run two
   functions share is rare on its own), counted (`grams`).
4. **Weigh** what sharing each n-gram is worth: its `rarity` across the class for this exercise
   (1 where at most two of the n functions hold it, falling to 0 where all do:
   `log(n/df) / log(n/2)`), times `DISCOUNT` for the n-grams that the stub, the hints (the code in
   their backticks) and the reference solution already give everyone.
5. **Score** each pair by how unusual what they share is, not by how much they share: each
   shared occurrence at its weight, over the occurrences either holds (`alike`; 0 to 1). Two
   functions alike in what only they write score near 1; two alike in what most of the class
   writes, or in what the reference gives, near 0 (two copies of the reference are marked
   identical and `reference`, and ranked low). An exercise where half the class or more wrote one
   function, or handed in one program, is "too short to tell" (`Ranking.too_short_to_tell`).
6. **The program side**, where both students' gradings hold one: the `jit` test's
   `program_shingles`, a sketch of the exported program's normalised StableHLO computed by the
   grader's trusted analysis worker (`jaxlings.worker.dataflow`: calls inlined, constants folded,
   identities and no-op conversions gone, equivalent forms read as one, a Weisfeiler-Lehman
   labelling of the dataflow, the 128 smallest hashes kept). Scored as the source is (rarity
   across the class, the reference's program discounted, which the service fingerprints itself:
   `reference_programs`; sketches cut at 128 compared below the smaller cut: the bottom-k
   estimator); a pair whose programs are both the reference's own is marked `prescribed`. The
   pair's score combines the sides by a noisy-or (`combined`), so that either side strong ranks
   it high and evidence on both adds up. Without a program on either side (results graded before
   the fingerprint existed, an exercise without a `jit` check, a jit that failed before its
   program was analysed) the score is the source's alone.
"""

from __future__ import annotations

import ast
import copy
import hashlib
import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path

import numpy as np
from markupsafe import Markup
from pygments import highlight  # type: ignore[import-untyped]
from pygments.formatters import HtmlFormatter  # type: ignore[import-untyped]
from pygments.lexers import PythonLexer  # type: ignore[import-untyped]
from sqlalchemy.orm import Session

from jaxlings.grading import source, stubs
from jaxlings.service import inline, reference_programs, schemas, scores, views
from jaxlings.service.db import Submission
from jaxlings.service.kept import Kept

N = 4
"""The length of the token n-grams compared (4: long enough that an n-gram says what is done to
what, short enough that a reordered argument list or one changed constant costs few)."""
LONG = 12
"""The length of the long n-grams compared beside them (`grams`): about three lines' worth of
tokens, rarely written alike by two students on their own, so that a long run two functions
share counts as such, not as the common 4-grams it is made of (a verbatim copy of an answer
written the reference's way ranked above every honest pair in 25 of 47 cases of the benchmark's
cohort with 4-grams alone, 33 with these beside them; benchmarks/similarity.py)."""

DISCOUNT = 0.1
"""The weight kept by an n-gram that the stub, the hints or the reference already give everyone."""

CROWDED = 0.5
"""The share of a class writing one function (once normalised) from which an exercise is "too
short to tell" (`Ranking.too_short_to_tell`)."""

Functions = ast.FunctionDef | ast.AsyncFunctionDef
SIMPLE = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr, ast.FunctionDef)
"""Statements whose order within a run may be made canonical (their dependencies decide it)."""
EFFECT = "<effect>"
"""A pseudo-name every call made for its effect reads and writes: such calls keep their order."""


@dataclass(frozen=True)
class Code:
    """One student's function for one exercise, read and normalised."""

    login: str
    submission_id: int
    text: str  # the function as written (its lines in the topic file)
    start: int  # its first line in the topic file
    canonical: str  # the normalised function as code (ast.unparse)
    grams: Counter[str] = field(compare=False, repr=False)
    program: frozenset[int] | None = field(default=None, compare=False, repr=False)
    """The sketch of its exported program (`program_sketch`), where its grading has one."""
    bindings: int = 1
    """Top-level statements of its file that bind the exercise's name (more than one: a file that
    shows one function and runs another, or redefines it; `notes`)."""
    helpers: tuple[str, ...] = ()
    """The module-level functions it reaches, compared with it (`reached`)."""
    blocks: tuple[tuple[int, str], ...] = field(default=(), compare=False, repr=False)
    """(first line, text) of each of those helpers as written."""
    spans: tuple[tuple[str, int, int], ...] = field(default=(), compare=False, repr=False)
    """Its normalised statements, each with the lines of the file it was written on (`spans`)."""
    normalised: tuple[str, ...] = field(default=(), compare=False, repr=False)
    """What normalisation changed, for the instructor (`normalise`'s notes)."""

    @property
    def notes(self) -> list[str]:
        """What the instructor should know of how this function was read."""
        out = []
        if self.bindings > 1:
            out.append(
                f"its file binds the exercise's name {self.bindings} times at the top level; compared is what"
                " it binds last, which the grader runs"
            )
        if self.helpers:
            out.append(
                "compared with the functions it calls (read in place where it only forwards to one, or one"
                " returns an expression): " + ", ".join(f"`{h}`" for h in self.helpers)
            )
        return out

    @property
    def written(self) -> list[tuple[int, str]]:
        """(first line, text) of what was compared as written: the function, then its helpers."""
        return [(self.start, self.text), *self.blocks]


@dataclass(frozen=True)
class Given:
    """What everyone is given for one exercise: the n-grams of the stub, the hints' code and the
    reference, and the reference's normalised code."""

    grams: frozenset[str]
    reference: str | None
    program: frozenset[int] = frozenset()
    """The reference's program sketch where it is known (see `rank`): its hashes are discounted."""


@dataclass(frozen=True)
class Pair:
    """Two students' functions for one exercise and how alike they are (0 to 1)."""

    exercise: str
    a: Code
    b: Code
    score: float
    source: float | None = None
    """The source side's score (`score` combines it with `program`, or is it alone: `combined`)."""
    program: float | None = None
    """The program side's score, where both have a program sketch."""
    prescribed: bool = False
    """Whether both programs are the reference's own (what the task prescribes, computed as it
    does): the program side is no evidence, and two such answers may be written alike honestly."""

    @property
    def identical(self) -> bool:
        """Whether the two are the same code once normalised."""
        return self.a.canonical == self.b.canonical

    def is_reference(self, given: Given) -> bool:
        """Whether both are the reference solution itself, once normalised."""
        return self.identical and self.a.canonical == given.reference


@dataclass(frozen=True)
class Ranking:
    """One exercise's pairs, most alike first, and how many functions were compared."""

    exercise: str
    compared: int
    pairs: list[Pair]
    given: Given
    same_program: int = 0
    """The largest group of students whose programs are one program (0 where none has one)."""

    @property
    def same_as_another(self) -> int:
        """The largest group of students whose functions are one function once normalised (1
        where no two are)."""
        canonical = {code.login: code.canonical for p in self.pairs for code in (p.a, p.b)}
        return max(Counter(canonical.values()).values(), default=0)

    @property
    def too_short_to_tell(self) -> bool:
        """Whether the exercise leaves too little room for difference: `CROWDED` of the class (four
        students at least) wrote one function once normalised, or handed in one program (a task
        that prescribes the computation: right answers compile alike), so a pair that did so is no
        evidence of copying by itself (a short task, or the reference handed in by many); pairs
        of copies, each its own group, are not a crowd."""
        crowd = max(self.same_as_another, self.same_program)
        return self.compared >= 4 and crowd >= CROWDED * self.compared


# -- reading and normalising ------------------------------------------------------------------


@dataclass(frozen=True)
class Bound:
    """What a topic file binds to an exercise's name, as the grader runs it: the function, the
    module-level functions it reaches (first reached first), the file's import aliases, the
    function's first line and text, and how many top-level statements bind the name."""

    name: str
    fn: Functions
    helpers: tuple[Functions, ...]
    imported: dict[str, str]
    start: int
    text: str
    bindings: int
    blocks: tuple[tuple[int, str], ...] = ()
    """(first line, text) of each helper as written, in the order they are reached."""


def function_in(text: str, name: str) -> Bound | None:
    """What the module binds to `name` once it has run (`bound_to`) and what that reaches
    (`reached`); None when the file does not parse or binds no function of its own there."""
    tree = source.parse(text)
    if tree is None:
        return None
    fn, bindings = bound_to(tree, name)
    if fn is None:
        return None
    lines = text.splitlines()
    helpers = tuple(reached(tree, fn))
    start, body = _written(fn, lines)
    blocks = tuple(_written(h, lines) for h in helpers)
    return Bound(name, fn, helpers, aliases(tree), start, body, bindings, blocks)


def _written(fn: Functions, lines: Sequence[str]) -> tuple[int, str]:
    """(first line, text) of a function as written (decorators included)."""
    found = source.Function(fn)
    return found.start, "\n".join(lines[found.start - 1 : found.end])


def bound_to(tree: ast.Module, name: str) -> tuple[Functions | None, int]:
    """(the top-level function the module binds to `name` last, the number of top-level statements
    that bind it). A `def name`, or `name = f` / `name = wrapper(f, ...)` for a function `f`
    defined above (`jax.jit(f)`, `functools.partial(f, ...)`): the grader runs what the module
    binds, so a file that shows one `def name` and then rebinds the name is read as it runs."""
    defs: dict[str, Functions] = {}
    bound: Functions | None = None
    bindings = 0
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            defs[node.name] = node
            if node.name == name:
                bound, bindings = node, bindings + 1
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                bound, bindings = _function_of(node.value, defs), bindings + 1
    return bound, bindings


def _function_of(value: ast.expr, defs: Mapping[str, Functions]) -> Functions | None:
    """The function an assigned value stands for: a name of one, or a call wrapping one (its first
    argument), or a lambda (read as the `def` that returns its body); None for anything else."""
    if isinstance(value, ast.Call) and value.args:
        value = value.args[0]
    if isinstance(value, ast.Lambda):
        body: list[ast.stmt] = [ast.Return(value.body)]
        fn = ast.FunctionDef(name="<lambda>", args=value.args, body=body, decorator_list=[])
        setattr(fn, "type_params", [])  # noqa: B010 - a field from Python 3.12 on (mypy reads 3.11), read by `ast.unparse` there
        return ast.fix_missing_locations(ast.copy_location(fn, value))
    return defs.get(value.id) if isinstance(value, ast.Name) else None


def reached(tree: ast.Module, fn: Functions) -> list[Functions]:
    """The module-level functions `fn` reaches by name, transitively, first reached first (each
    as the module binds it last): a body moved into a helper is compared with the helper."""
    defs = {f.name: f.node for f in source.functions(tree)}
    out: list[Functions] = []
    todo = [fn]
    while todo:
        for node in _preorder(todo.pop(0)):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                helper = defs.get(node.id)
                if helper is not None and helper is not fn and helper not in out:
                    out.append(helper)
                    todo.append(helper)
    return out


def aliases(tree: ast.Module) -> dict[str, str]:
    """name -> the dotted module or object it is bound to by the module's top-level imports
    (`import jax.numpy as np`: np -> jax.numpy; `from jax import lax`: lax -> jax.lax)."""
    bound: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    bound[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                if alias.name != "*":
                    bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return bound


def normalise(fn: Functions, imported: Mapping[str, str] | None = None, noted: list[str] | None = None) -> Functions:
    """A normalised copy of `fn` (see the module's docstring, step 2); what was changed that the
    instructor may want to know is added to `noted` (`note`), where given."""
    fn = copy.deepcopy(fn)
    fn.body = fn.body[1:] if source.docstring(fn) is not None else fn.body
    local = local_names(fn)
    _resolve_aliases(fn, {k: v for k, v in (imported or {}).items() if k not in local}, noted)
    for _ in range(20):  # each pass may make another assignment dead; 20 is far past real code
        read = _read_names(fn)
        if not _clean(fn, read, noted):
            break
    fn = _Identities(noted).visit(_Synonyms(noted).visit(fn))
    masks = _masks(fn, local_names(fn))
    _commute(fn, masks)
    before = [id(s) for block in _blocks(fn) for s in block]
    _reorder(fn, masks)
    if noted is not None and [id(s) for block in _blocks(fn) for s in block] != before:
        noted.append("statements that do not depend on each other put in one order")
    renamed = local_names(fn) - {fn.name}
    if noted is not None and renamed:
        noted.append(f"{len(renamed)} local names renamed v0, v1, ... in order of use")
    return _rename(fn, local_names(fn))


def note(noted: list[str] | None, node: ast.AST | None, text: str) -> None:
    """Add `text` to `noted` (where given), with the line of `node` in the file where known."""
    if noted is None or len(noted) >= NOTES_KEPT:
        return
    line = getattr(node, "lineno", None)
    noted.append(f"line {line}: {text}" if isinstance(line, int) else text)


def short(node: ast.AST) -> str:
    """Code as a note quotes it: one line, at most 60 characters."""
    text = " ".join(ast.unparse(node).split())
    return text if len(text) <= 60 else text[:59] + "\u2026"


def normalise_bound(found: Bound, noted: list[str] | None = None) -> list[Functions]:
    """`found`'s function (under the name it is bound to) and helpers normalised (`normalise`):
    helpers it only forwards to, or that return one expression, read in place (`inline`); the
    rest named `h0, h1, ...` by first reach, at their definitions and wherever they are called."""
    fn, helpers, inlined = inline.inline(found.fn, found.helpers)
    if noted is not None:
        noted.extend(inlined)
    names = {h.name: f"h{i}" for i, h in enumerate(helpers)}
    if noted is not None and names:
        noted.append("helpers named by first call: " + ", ".join(f"`{a}` as `{b}`" for a, b in names.items()))
    fns = [fn, *helpers]
    for i, f in enumerate(fns):
        for node in ast.walk(f):
            if isinstance(node, ast.Name) and node.id in names:
                node.id = names[node.id]
        f.name = names[f.name] if i else found.name
    return [normalise(f, found.imported, noted) for f in fns]


def spans(norms: Iterable[Functions]) -> tuple[tuple[str, int, int], ...]:
    """Each statement of normalised functions as (its normalised text, the first and last line of
    the file it was written on): what two students share, found where each wrote it. A compound
    statement (`def`, `for`, `if`, ...) is its first line alone; its body's statements are their
    own."""
    out = []
    for norm in norms:
        for node in ast.walk(norm):
            if isinstance(node, ast.stmt) and node is not norm and isinstance(getattr(node, "lineno", None), int):
                compound = any(
                    isinstance(getattr(node, f, None), list) and getattr(node, f) for f in ("body", "orelse")
                )
                text = ast.unparse(node).split("\n", 1)[0] if compound else ast.unparse(node)
                last = node.lineno if compound else (node.end_lineno or node.lineno)
                out.append((" ".join(text.split()), node.lineno, last))
    return tuple(out)


def local_names(fn: Functions) -> set[str]:
    """The names `fn` binds (its parameters, assignments, loop targets, nested functions and
    their parameters, comprehension variables): what a copier may rename."""
    names: set[str] = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node is not fn:
            names.add(node.name)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
    return names


def _resolve_aliases(fn: Functions, imported: Mapping[str, str], noted: list[str] | None = None) -> None:
    """Replace each free name bound by an import with the dotted name it stands for, in place."""
    used = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and node.id in imported:
            used.add(node.id)
            node.id = imported[node.id]
    for name in sorted(n for n in used if imported[n] != n):
        note(noted, None, f"`{name}` read as `{imported[name]}`, what it imports")


def _read_names(fn: Functions) -> set[str]:
    """Every name `fn` reads anywhere (nested functions included)."""
    return {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _blocks(node: ast.AST) -> Iterator[list[ast.stmt]]:
    """Every statement list inside `node` (bodies, else branches, handlers' bodies), outermost first."""
    for sub in ast.walk(node):
        for name in ("body", "orelse", "finalbody"):
            block = getattr(sub, name, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                yield block


def _dead(stmt: ast.stmt, read: set[str]) -> bool:
    """Whether a statement does nothing anyone sees: a bare expression calling nothing, `pass`,
    an assignment or nested function whose names are never read."""
    if isinstance(stmt, ast.Pass):
        return True
    if isinstance(stmt, ast.Expr):
        return not any(isinstance(n, (ast.Call, ast.Await, ast.Yield, ast.YieldFrom)) for n in ast.walk(stmt))
    if isinstance(stmt, ast.FunctionDef):
        return stmt.name not in read
    if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        names = [n for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
        plain = all(
            isinstance(n, (ast.Name, ast.Tuple, ast.List, ast.Starred, ast.expr_context))
            for t in targets
            for n in ast.walk(t)
        )
        return plain and bool(names) and not any(n.id in read for n in names)
    return False


def _clean(fn: Functions, read: set[str], noted: list[str] | None = None) -> bool:
    """Drop the dead statements of every block of `fn` in place (a block left empty keeps a
    `pass`); whether any was dropped."""
    changed = False
    for block in list(_blocks(fn)):
        kept = [s for s in block if not _dead(s, read)]
        if not kept and len(block) == 1 and isinstance(block[0], ast.Pass):
            continue  # already as short as a block can be
        if len(kept) != len(block):
            changed = True
            for dropped in (s for s in block if s not in kept and not isinstance(s, ast.Pass)):
                note(noted, dropped, f"`{short(dropped)}` dropped: nothing reads what it computes")
            block[:] = kept or [ast.Pass()]
    return changed


def _uses(stmt: ast.stmt) -> tuple[set[str], set[str]]:
    """(names read, names written) by a simple statement; calls made for their effect also
    read and write `EFFECT`, so that they keep their order among themselves."""
    reads = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    writes = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    if isinstance(stmt, ast.FunctionDef):
        writes.add(stmt.name)
    if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
        reads.add(stmt.target.id)
    if isinstance(stmt, ast.Expr):
        reads.add(EFFECT)
        writes.add(EFFECT)
    return reads, writes


def _masked(node: object, local: Mapping[str, str]) -> str:
    """A statement's dump with local names replaced (`local`: the parameters by their place,
    every other local name by `_`): a sort key that renaming cannot change. Written out rather
    than `ast.dump` of a masked copy: copying every statement of every block cost most of a read."""
    if isinstance(node, ast.AST):
        parts = []
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, str) and name in ("id", "arg", "name") and value in local:
                value = local[value]
            parts.append(_masked(value, local))
        return f"{type(node).__name__}({','.join(parts)})"
    if isinstance(node, list):
        return "[" + ",".join(_masked(v, local) for v in node) + "]"
    return repr(node)


def _canonical_run(run: list[ast.stmt], local: Mapping[str, str], block: list[ast.stmt]) -> list[ast.stmt]:
    """A run of simple statements in canonical order: a topological order of their dependencies
    (one that reads or overwrites what another wrote, or overwrites what it read, stays after
    it), among those free to go the smallest first by their masked text, then by how the rest of
    the `block` uses what each writes (so that `a1, b1 = left` and `a2, b2 = right` are told
    apart by where `a1` and `a2` are read)."""
    uses = [_uses(s) for s in run]
    after = {
        j: {i for i in range(j) if uses[i][1] & (uses[j][0] | uses[j][1]) or uses[i][0] & uses[j][1]}
        for j in range(len(run))
    }
    keys = [
        (
            _masked(s, local),
            tuple(
                sorted(
                    _masked(t, {**local, **dict.fromkeys(uses[j][1] & local.keys(), "@")}) for t in block if t is not s
                )
            ),
        )
        for j, s in enumerate(run)
    ]
    done: list[int] = []
    while len(done) < len(run):
        ready = [j for j in range(len(run)) if j not in done and after[j] <= set(done)]
        done.append(min(ready, key=lambda j: (keys[j], j)))
    return [run[j] for j in done]


def _masks(fn: Functions, local: set[str]) -> dict[str, str]:
    """How `_masked` shows each local name: a parameter (of `fn`, or of a nested function or
    lambda) by its place, every other by `_`."""
    params = {p: f"p{i}" for i, p in enumerate(source.parameters(fn))}
    for node in ast.walk(fn):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and node is not fn:
            for i, arg in enumerate(node.args.posonlyargs + node.args.args):
                params.setdefault(arg.arg, f"a{i}")
    return {name: params.get(name, "_") for name in local}


COMMUTATIVE = (ast.Add, ast.Mult, ast.BitAnd, ast.BitOr, ast.BitXor)


def _commute(fn: Functions, masks: Mapping[str, str]) -> None:
    """Put the operands of commutative operations (`+ * & | ^`, `==`, `!=`) in canonical order
    (by their masked text), in place: `b * a` is `a * b`. For comparison only (`+` on strings
    does not commute, but no verdict reads this)."""
    for node in ast.walk(fn):
        if isinstance(node, ast.BinOp) and isinstance(node.op, COMMUTATIVE):
            if _masked(node.right, masks) < _masked(node.left, masks):
                node.left, node.right = node.right, node.left
        elif isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Eq, ast.NotEq)):
            if _masked(node.comparators[0], masks) < _masked(node.left, masks):
                node.left, node.comparators[0] = node.comparators[0], node.left


NOTES_KEPT = 40
"""Notes of what was normalised kept per student's function (`Code.normalised`)."""

MAX_REORDERED = 64
"""Statements of a block put in canonical order; a longer block is compared as written. Ordering
a run costs about the square of its block's statements (each statement's key reads the whole
block), and a 2,000-statement function took 74 s; an exercise's function has 3-30."""


def _reorder(fn: Functions, masks: Mapping[str, str]) -> None:
    """Put every run of simple statements of every block of `fn` (of at most `MAX_REORDERED`
    statements) in canonical order, in place."""
    for block in list(_blocks(fn)):
        if len(block) > MAX_REORDERED:
            continue
        out: list[ast.stmt] = []
        run: list[ast.stmt] = []
        for stmt in [*block, None]:
            if isinstance(stmt, SIMPLE):
                run.append(stmt)
                continue
            out.extend(_canonical_run(run, masks, block))
            run = []
            if stmt is not None:
                out.append(stmt)
        block[:] = out


MODULES = ("jax", "numpy")
"""Where a dotted name is an API's, not a value's (`jax.numpy.sum` against `x.sum`)."""
MATMUL = {"jax.numpy.matmul", "jax.numpy.dot", "numpy.matmul", "numpy.dot"}
WHERE = {"jax.numpy.where", "jax.lax.select", "numpy.where"}
BROADCAST = {"jax.numpy.broadcast_arrays", "numpy.broadcast_arrays"}
SQUARE = {"jax.numpy.square", "numpy.square"}
POWER = {"jax.numpy.power", "numpy.power", "jax.lax.pow"}
REDUCTIONS = {"sum", "mean", "max", "min", "prod", "any", "all"}
"""Methods of an array that are also functions of `jax.numpy` taking it first."""


def dotted(node: ast.expr) -> str | None:
    """`a.b.c` for a chain of attributes on a name (an alias already read as what it imports)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


class _Synonyms(ast.NodeTransformer):
    """One form for the API synonyms a rewrite swaps in: `jnp.matmul(a, b)`, `jnp.dot(a, b)` and
    `a.dot(b)` are `a @ b`; `jax.lax.select(c, x, y)` is `jnp.where(c, x, y)` (and so is
    `jax.lax.select(*jnp.broadcast_arrays(c, x, y))`, a `select` made to take scalars); `x * x`,
    `jnp.square(x)` and `jnp.power(x, 2)` are `x ** 2`; `x.sum(...)` is `jnp.sum(x, ...)` (and
    the other reductions). API names are written as one dotted name (`jax.numpy.sum`)."""

    def __init__(self, noted: list[str] | None = None) -> None:
        self.noted = noted

    def visit_Call(self, node: ast.Call) -> ast.expr:
        self.generic_visit(node)
        found = self._one_form(node)
        if found is not node:
            note(self.noted, node, f"`{short(node)}` read as `{short(found)}`")
        return found

    def _one_form(self, node: ast.Call) -> ast.expr:
        """The one form of a call (a new node), or the call itself with its API name dotted."""
        name, args = dotted(node.func), node.args
        plain = not node.keywords and not any(isinstance(a, ast.Starred) for a in args)
        if plain and name in MATMUL and len(args) == 2:
            return ast.BinOp(args[0], ast.MatMult(), args[1])
        if plain and name in SQUARE and len(args) == 1:
            return ast.BinOp(args[0], ast.Pow(), ast.Constant(2))
        if plain and name in POWER and len(args) == 2:
            return ast.BinOp(args[0], ast.Pow(), args[1])
        if name in WHERE and name != "jax.numpy.where" and len(args) == 3:
            return ast.Call(ast.Name("jax.numpy.where", ast.Load()), args, node.keywords)
        spread = _broadcast(args)
        if name == "jax.lax.select" and spread is not None:  # `select` takes no scalars: broadcast first
            return ast.Call(ast.Name("jax.numpy.where", ast.Load()), spread, node.keywords)
        if isinstance(node.func, ast.Attribute) and not _is_api(node.func.value):
            if plain and node.func.attr == "dot" and len(args) == 1:
                return ast.BinOp(node.func.value, ast.MatMult(), args[0])
            if node.func.attr in REDUCTIONS:
                return ast.Call(
                    ast.Name(f"jax.numpy.{node.func.attr}", ast.Load()), [node.func.value, *args], node.keywords
                )
        if name is not None and name.split(".")[0] in MODULES:
            node.func = ast.Name(name, ast.Load())
        return node

    def visit_BinOp(self, node: ast.BinOp) -> ast.expr:
        self.generic_visit(node)
        if isinstance(node.op, ast.Mult) and ast.dump(node.left) == ast.dump(node.right):
            squared = ast.BinOp(node.left, ast.Pow(), ast.Constant(2))
            note(self.noted, node, f"`{short(node)}` read as `{short(squared)}`")
            return squared
        return node


def _broadcast(args: list[ast.expr]) -> list[ast.expr] | None:
    """The three arrays of `*jnp.broadcast_arrays(c, x, y)` when that is all `args` is, else None."""
    if len(args) != 1 or not isinstance(args[0], ast.Starred) or not isinstance(args[0].value, ast.Call):
        return None
    call = args[0].value
    plain = not call.keywords and not any(isinstance(a, ast.Starred) for a in call.args)
    return call.args if dotted(call.func) in BROADCAST and plain and len(call.args) == 3 else None


def _is_api(node: ast.expr) -> bool:
    """Whether `node` names a module of the API (`jax.numpy`), not a value."""
    name = dotted(node)
    return name is not None and name.split(".")[0] in MODULES


class _Identities(ast.NodeTransformer):
    """Arithmetic that changes nothing taken away, as XLA's simplifier would: `x + 0`, `0 + x`,
    `x - 0`, `x * 1`, `1 * x`, `x / 1` (a copier's cheapest edit)."""

    def __init__(self, noted: list[str] | None = None) -> None:
        self.noted = noted

    def visit_BinOp(self, node: ast.BinOp) -> ast.expr:
        self.generic_visit(node)
        kept: ast.expr = node
        if isinstance(node.op, ast.Add | ast.Sub | ast.Mult | ast.Div) and _is(node.right, _UNIT[type(node.op)]):
            kept = node.left
        elif isinstance(node.op, ast.Add | ast.Mult) and _is(node.left, _UNIT[type(node.op)]):
            kept = node.right
        if kept is not node:
            note(self.noted, node, f"`{short(node)}` read as `{short(kept)}`: it changes nothing")
        return kept


_UNIT = {ast.Add: 0, ast.Sub: 0, ast.Mult: 1, ast.Div: 1}


def _is(node: ast.expr, value: int) -> bool:
    """Whether `node` is the number `value` written as a constant (an int or a float, not a bool)."""
    return isinstance(node, ast.Constant) and type(node.value) in (int, float) and node.value == value


class _Renamer(ast.NodeTransformer):
    """Renames local names `v0, v1, ...` in order of first appearance (in source order)."""

    def __init__(self, local: set[str]) -> None:
        self.local = local
        self.names: dict[str, str] = {}

    def new(self, name: str) -> str:
        if name not in self.local:
            return name
        return self.names.setdefault(name, f"v{len(self.names)}")

    def visit_Name(self, node: ast.Name) -> ast.Name:
        node.id = self.new(node.id)
        return node

    def visit_arg(self, node: ast.arg) -> ast.arg:
        node.arg = self.new(node.arg)
        node.annotation = None
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        node.name = self.new(node.name)
        node.returns = None
        self.generic_visit(node)
        return node


def _rename(fn: Functions, local: set[str]) -> Functions:
    """`fn` with its local names renamed canonically (its own name kept), annotations dropped."""
    renamer = _Renamer(local - {fn.name})
    fn.returns = None
    fn.args = renamer.visit(fn.args)
    fn.body = [renamer.visit(s) for s in fn.body]
    fn.decorator_list = [renamer.visit(d) for d in fn.decorator_list]
    return fn


# -- shingles ---------------------------------------------------------------------------------


def tokens(node: ast.AST) -> list[str]:
    """The tree's preorder tokens: each node's type, and the names, attributes, keywords and
    constants it carries."""
    out: list[str] = []
    for sub in _preorder(node):
        out.append(type(sub).__name__)
        if isinstance(sub, ast.Name):
            out.append(sub.id)
        elif isinstance(sub, ast.Attribute):
            out.append("." + sub.attr)
        elif isinstance(sub, ast.arg):
            out.append(sub.arg)
        elif isinstance(sub, ast.keyword):
            out.append(f"{sub.arg}=")
        elif isinstance(sub, ast.Constant):
            out.append(repr(sub.value)[:40])
    return out


def _preorder(node: ast.AST) -> Iterator[ast.AST]:
    """The tree's nodes in source order, parents first (no expression contexts)."""
    if isinstance(node, ast.expr_context):
        return
    yield node
    for child in ast.iter_child_nodes(node):
        yield from _preorder(child)


def grams(seq: list[str]) -> Counter[str]:
    """What a function is compared by: its counted `N`-grams and, beside them, its `LONG`-grams
    (marked `L:`, never equal to a short one)."""
    return shingles(seq, N) + Counter({f"L:{g}": k for g, k in shingles(seq, LONG).items()})


def shingles(seq: list[str], n: int = N) -> Counter[str]:
    """The counted n-grams of a token sequence (the whole sequence, when shorter than n)."""
    if len(seq) < n:
        return Counter([" ".join(seq)]) if seq else Counter()
    return Counter(" ".join(seq[i : i + n]) for i in range(len(seq) - n + 1))


def read(login: str, submission_id: int, text: str, exercise: str) -> Code | None:
    """One student's function for `exercise`, normalised and shingled; None when their topic
    file has no such function, does not parse, or leaves it a stub."""
    found = _read(text, exercise)
    if found is None:
        return None
    return Code(
        login,
        submission_id,
        found.text,
        found.start,
        found.canonical,
        Counter(dict(found.grams)),
        bindings=found.bindings,
        helpers=found.helpers,
        blocks=found.blocks,
        spans=found.spans,
        normalised=found.normalised,
    )


@dataclass(frozen=True)
class Reading:
    """A topic file's function for one exercise, read and normalised: what a `Code` is made of,
    kept by the file's hash (`READS`)."""

    text: str
    start: int
    canonical: str
    grams: tuple[tuple[str, int], ...]
    bindings: int
    helpers: tuple[str, ...]
    blocks: tuple[tuple[int, str], ...]
    spans: tuple[tuple[str, int, int], ...]
    normalised: tuple[str, ...]

    def size(self) -> int:
        """Its bytes, about (what `READS_KEPT_BYTES` counts)."""
        texts = [
            self.text,
            self.canonical,
            *(t for _, t in self.blocks),
            *self.normalised,
            *(t for t, *_ in self.spans),
        ]
        return sum(len(t) for t in texts) + sum(len(g) + 16 for g, _ in self.grams)


READS_KEPT = 4096
"""Functions read and normalised that are remembered (a report is worked out on every view, over
the same stored files), from topic files of at most `READ_CACHED_BYTES`."""
READS_KEPT_BYTES = 64 << 20
"""And at most this many bytes of them (their text, normalised code and n-grams): a read of any
file is kept, so that a large one costs its reading once, not at every view."""


def _read_size(found: Reading | None) -> int:
    """The bytes a kept read counts for (`READS_KEPT_BYTES`)."""
    return 0 if found is None else found.size()


READS: Kept[Reading | None] = Kept(READS_KEPT, READS_KEPT_BYTES, _read_size)


def _read(text: str, exercise: str) -> Reading | None:
    """A topic file's function read (`Reading`), remembered by the file's hash (`READS`: the last
    `READS_KEPT`, `READS_KEPT_BYTES` at most: memory stays bounded)."""
    key = (hashlib.sha256(text.encode("utf-8", "replace")).hexdigest(), exercise)
    return READS.get(key, lambda: _read_now(text, exercise))


def _read_now(text: str, exercise: str) -> Reading | None:
    """`_read`, worked out."""
    found = function_in(text, exercise)
    if found is None or stubs.find(text, [exercise]):
        return None
    noted: list[str] = []
    try:
        norms = normalise_bound(found, noted)
        counted = grams([t for norm in norms for t in tokens(norm)])
        canonical = "\n\n".join(ast.unparse(norm) for norm in norms)
        found_spans = spans(norms)
    except source.UNREADABLE:  # nesting too deep for a walk: nothing to compare
        return None
    helpers = tuple(h.name for h in found.helpers)
    return Reading(
        found.text,
        found.start,
        canonical,
        tuple(counted.items()),
        found.bindings,
        helpers,
        found.blocks,
        found_spans,
        tuple(noted),
    )


def shared_written(mine: Code, other: Code) -> list[int]:
    """The lines of `mine`'s file whose statements, normalised, are also `other`'s: the matched
    regions, marked where each student wrote them (`spans`)."""
    theirs = {text for text, _, _ in other.spans}
    return sorted({line for text, first, last in mine.spans if text in theirs for line in range(first, last + 1)})


# -- what everyone is given -------------------------------------------------------------------

SNIPPET = re.compile(r"`([^`\n]+)`")


def snippets(texts: Iterable[str]) -> list[str]:
    """The code quoted in backticks in hints and docstrings that parses as Python (a method
    quoted alone, `.at[x].add(1)`, read on a placeholder name)."""
    found = []
    for text in texts:
        for quoted in SNIPPET.findall(text):
            code = "_" + quoted if quoted.startswith(".") else quoted
            if source.parse(code) is not None:
                found.append(code)
    return found


def given_for(
    fn: Functions | None,
    imported: Mapping[str, str],
    reference: tuple[Functions, Mapping[str, str]] | None,
    hints: list[str],
) -> Given:
    """The n-grams every student is given for one exercise: the stub's function `fn` (with its
    docstring's code; `imported`: its file's aliases), the hints' code (read with the stub's
    parameters named as students' are, and its aliases), and the `reference` solution (with its
    file's aliases); and the reference's normalised code."""
    given_grams: set[str] = set()
    params = list(source.parameters(fn)) if fn is not None else []
    names = {**imported, **{p: f"v{i}" for i, p in enumerate(params)}}
    if fn is not None:
        given_grams |= set(grams(tokens(normalise(fn, imported))))
    for code in snippets([*hints, (ast.get_docstring(fn) or "") if fn is not None else ""]):
        tree = source.parse(code)
        if tree is not None:
            for node in ast.walk(tree):
                if isinstance(node, ast.Name) and node.id in names:
                    node.id = names[node.id]
            given_grams |= set(grams(tokens(tree)))
    canonical = None
    if reference is not None:
        norm = normalise(*reference)
        given_grams |= set(grams(tokens(norm)))
        canonical = ast.unparse(norm)
    return Given(frozenset(given_grams), canonical)


@cache
def given(topic: str, exercise: str) -> Given:
    """What everyone is given for `topic.exercise`, from the course's files: the generated stub
    (exercises/), the hints (the public expectations) and the reference (solutions/, where this
    machine has them: the grader's does), with the reference's program (`reference_programs`)."""
    from jaxlings import public
    from jaxlings.grading import paths

    stub = _read_function(paths.exercises_dir() / f"{topic}.py", exercise)
    try:
        reference = _read_function(paths.solutions_dir() / f"{topic}.py", exercise)
    except FileNotFoundError:
        reference = None
    hints: list[str] = []
    try:
        doc = json.loads(public.path_for(topic).read_text())
        for ex in doc["spec"]["exercises"]["$tuple"]:
            if ex["name"] == exercise:
                hints = list(ex["hints"]["$tuple"])
    except (OSError, ValueError, KeyError):
        pass
    fn, imported = stub or reference or (None, {})
    program = reference_programs.sketches(topic).get(exercise, frozenset())
    return replace(given_for(fn, imported, reference, hints), program=program)


def _read_function(path: Path, name: str) -> tuple[Functions, dict[str, str]] | None:
    """A course file's function `name` and the file's import aliases; None when absent."""
    if not path.is_file():
        return None
    found = function_in(path.read_text(), name)
    return (found.fn, found.imported) if found else None


# -- ranking ----------------------------------------------------------------------------------


def rarity(df: int, n: int) -> float:
    """What two students sharing an element (an n-gram, a program's hash) is worth as evidence,
    for an element `df` of the class's `n` functions hold: 1 where at most two do (what only the
    pair shares), falling to 0 where all do (`log(n / df) / log(n / 2)`): what most of the class
    writes or computes alike is no evidence."""
    return 1.0 if df <= 2 or n <= 2 else max(0.0, math.log(n / df) / math.log(n / 2))


def weights(codes: list[Code], given_grams: frozenset[str]) -> dict[str, float]:
    """n-gram -> what sharing it is worth: its `rarity` across the class, times `DISCOUNT` for
    what everyone is given."""
    df: Counter[str] = Counter()
    for code in codes:
        df.update(set(code.grams))
    n = len(codes)
    return {g: rarity(d, n) * (DISCOUNT if g in given_grams else 1.0) for g, d in df.items()}


def alike(a: Counter[str], b: Counter[str], weight: Mapping[str, float]) -> float:
    """How much two counted n-gram sets are evidence of one function: each occurrence they share
    at its n-gram's weight (`weights`), over the occurrences either holds (0 to 1; with every
    weight 1, their Jaccard index). Two functions alike in what few others write score near 1;
    alike in what the class writes alike, or the reference gives, near 0: shared material is
    ranked by how unusual it is, not by how much of it there is."""
    shared = union = 0.0
    for g in a.keys() | b.keys():
        shared += weight.get(g, 1.0) * min(a[g], b[g])
        union += max(a[g], b[g])
    return shared / union if union else 0.0


def _scores(rows: Sequence[Mapping[str, int]], weight: Mapping[str, float]) -> np.ndarray:
    """`alike` of every pair of rows (`rows`: n-gram -> count), as an upper triangle: [i, j] for
    i < j (for all pairs at once: per row, its n-grams' counts against every later row's)."""
    column: dict[str, int] = {}
    for row in rows:
        for g in row:
            column.setdefault(g, len(column))
    counts = np.zeros((len(rows), len(column)))
    for r, row in enumerate(rows):
        for g, k in row.items():
            counts[r, column[g]] = k
    worth = np.array([weight.get(g, 1.0) for g in column])
    totals = counts.sum(axis=1)
    out = np.zeros((len(rows), len(rows)))
    for i in range(len(rows) - 1):
        mine = np.flatnonzero(counts[i])
        both = np.minimum(counts[i, mine], counts[i + 1 :][:, mine])
        union = totals[i] + totals[i + 1 :] - both.sum(axis=1)
        out[i, i + 1 :] = np.divide(both @ worth[mine], union, out=np.zeros(len(union)), where=union > 0)
    return out


def program_weights(codes: list[Code], reference: frozenset[int]) -> dict[int, float]:
    """A program sketch's hash -> what sharing it is worth (`rarity` across the class's
    sketches), times `DISCOUNT` for a hash of the reference's program."""
    df: Counter[int] = Counter()
    for code in codes:
        df.update(code.program or ())
    n = sum(1 for c in codes if c.program is not None)
    return {h: rarity(d, n) * (DISCOUNT if h in reference else 1.0) for h, d in df.items()}


def program_alike(a: frozenset[int], b: frozenset[int], weight: Mapping[int, float]) -> float:
    """How much two program sketches are evidence of one program: the weight of what they share
    (`program_weights`: what the class or the reference also holds counts little) over the
    number of hashes either holds (0 to 1; with every weight 1, their Jaccard index). Two
    programs alike in what few others compute score near 1; two alike in what most of the class
    computes (a task that prescribes the computation), near 0. A sketch cut at `PROGRAM_KEPT`
    holds its program's smallest hashes only, so both are compared below the smaller of the cut
    sketches' largest hash (the bottom-k estimator: there each sketch is its whole program's set)."""
    cuts = [max(s) for s in (a, b) if len(s) >= PROGRAM_KEPT]
    cut = min(cuts) if cuts else None
    shared = sum(weight.get(h, 1.0) for h in a & b if cut is None or h <= cut)
    union = sum(1 for h in a | b if cut is None or h <= cut)
    return shared / union if union else 0.0


def program_scores(sketches: Sequence[frozenset[int]], weight: Mapping[int, float]) -> np.ndarray:
    """`program_alike` of every pair of sketches, as an upper triangle ([i, j] for i < j), for
    all pairs at once: per sketch, its hashes against every later sketch's (a matrix of which
    sketch holds which hash), each pair below its own cut."""
    n, empty = len(sketches), np.iinfo(np.uint64).max
    rows = [np.array(sorted(s)[:PROGRAM_KEPT], dtype=np.uint64) for s in sketches]
    column = {int(h): k for k, h in enumerate(sorted({int(h) for row in rows for h in row}))}
    holds = np.zeros((n, len(column)), dtype=bool)
    padded = np.full((n, PROGRAM_KEPT), empty, dtype=np.uint64)  # each sketch's hashes, sorted
    for i, row in enumerate(rows):
        holds[i, [column[int(h)] for h in row]] = True
        padded[i, : len(row)] = row
    cuts = np.array([row[-1] if len(row) >= PROGRAM_KEPT else empty for row in rows], dtype=np.uint64)
    out = np.zeros((n, n))
    for i in range(n - 1):
        row = rows[i]
        worth = np.array([weight.get(int(h), 1.0) for h in row])
        cut = np.minimum(cuts[i], cuts[i + 1 :])[:, None]  # each pair's: the smaller cut, if any
        below = row[None, :] <= cut
        both = holds[i + 1 :][:, [column[int(h)] for h in row]] & below
        theirs = ((padded[i + 1 :] <= cut) & (padded[i + 1 :] != empty)).sum(axis=1)
        union = below.sum(axis=1) + theirs - both.sum(axis=1)
        out[i, i + 1 :] = np.divide(both @ worth, union, out=np.zeros(n - i - 1), where=union > 0)
    return out


def combined(source_score: float, program_score: float | None) -> float:
    """A pair's score from its sides: `1 - (1 - source) (1 - program)` (a noisy-or), or the
    source's alone. Either side strong ranks the pair high (it is at least the larger side: a
    copy disguised on one side is still a copy on the other), and evidence on both sides adds up,
    as a copy of two sources shows partly on each; each side is already weighed against the
    class, so what most of it writes or computes alike adds little. (The mean capped a copy
    disguised on one side near 0.5, below honest pairs whose right answers compile alike; the
    larger of the two ranked a copy of two sources below honest pairs that share only their
    source: benchmarks/results/2026-12-07-similarity-combined.md.)"""
    return source_score if program_score is None else 1 - (1 - source_score) * (1 - program_score)


def reference_program(codes: list[Code], given_now: Given) -> frozenset[int]:
    """The reference's program sketch: `given_now`'s where known, else that of a student whose
    function is the reference's once normalised (its program is the reference's, lowered by the
    grader), else none."""
    if given_now.program:
        return given_now.program
    for code in codes:
        if given_now.reference is not None and code.canonical == given_now.reference and code.program:
            return code.program
    return frozenset()


def rank(exercise: str, codes: list[Code], given_now: Given, programs: bool = True) -> Ranking:
    """Every pair of `codes` scored (`alike`, for all pairs at once on a matrix of weighted
    counts; with `programs`, also `program_alike` where both have a program sketch, and the two
    `combined`), most alike first (ties: by the logins)."""
    weight = weights(codes, given_now.grams)
    source_scores = _scores([code.grams for code in codes], weight)
    with_program = [i for i, c in enumerate(codes) if programs and c.program is not None]
    found: dict[tuple[int, int], float] = {}
    reference = reference_program(codes, given_now) if with_program else frozenset()
    if len(with_program) > 1:
        matrix = program_scores(
            [codes[i].program or frozenset() for i in with_program], program_weights(codes, reference)
        )
        for x, i in enumerate(with_program):
            for y in range(x + 1, len(with_program)):
                found[(i, with_program[y])] = float(matrix[x, y])
    theirs = {i for i in with_program if reference and codes[i].program == reference}  # the reference's program
    pairs = []
    for i in range(len(codes) - 1):
        for j in range(i + 1, len(codes)):
            src = round(float(source_scores[i, j]), 4)
            prog = found.get((i, j))
            prog = None if prog is None else round(prog, 4)
            score = round(combined(src, prog), 4)
            pairs.append(Pair(exercise, codes[i], codes[j], score, src, prog, i in theirs and j in theirs))
    pairs.sort(key=lambda p: (-p.score, p.a.login, p.b.login))
    crowd = max(Counter(codes[i].program for i in with_program).values(), default=0)
    return Ranking(exercise, len(codes), pairs, given_now, crowd)


def report(
    topic: str,
    exercises: Iterable[str],
    files: Mapping[str, tuple[int, str]],
    programs: Mapping[str, Mapping[str, frozenset[int]]] | None = None,
) -> list[Ranking]:
    """The similarity report of one topic: per exercise, its ranking over the students' files
    (`files`: login -> (counted submission's id, its topic file's text)) and, where given, their
    programs (`programs`: login -> exercise -> program sketch, `class_programs`)."""
    out = []
    for exercise in exercises:
        codes = []
        for login, (sid, text) in sorted(files.items()):
            code = read(login, sid, text, exercise)
            if code is not None:
                sketch = (programs or {}).get(login, {}).get(exercise)
                codes.append(replace(code, program=sketch) if sketch else code)
        out.append(rank(exercise, codes, given(topic, exercise)))
    return out


# -- the program side ---------------------------------------------------------------------------

PROGRAM_KEPT = 128
"""The hashes a program sketch holds at most (`jaxlings.worker.program.SHINGLES_KEPT`)."""
_HASH = re.compile(r"[0-9a-f]{16}")


def program_sketch(shingles: object) -> frozenset[int] | None:
    """A `jit` test's `program_shingles` as a set of hashes; None unless it is a list of at most
    `PROGRAM_KEPT` 16-digit hex strings (results graded before the fingerprint, or damaged)."""
    if not isinstance(shingles, list) or not shingles or len(shingles) > PROGRAM_KEPT:
        return None
    if not all(isinstance(h, str) and _HASH.fullmatch(h) for h in shingles):
        return None
    return frozenset(int(h, 16) for h in shingles)


def programs_in(result_json: str | None, topic: str) -> dict[str, frozenset[int]]:
    """exercise -> program sketch, from one submission's results.json (its `jit` tests of
    `topic`); nothing from a result that does not read."""
    try:
        doc = json.loads(result_json or "")
        tests = doc["tests"] if isinstance(doc, dict) else []
    except (ValueError, KeyError, TypeError):
        return {}
    out = {}
    for test in tests if isinstance(tests, list) else []:
        tags = test.get("tags") if isinstance(test, dict) else None
        if not (isinstance(tags, list) and len(tags) == 3 and tags[0] == topic and tags[2] == "jit"):
            continue
        data = test.get("extra_data")
        sketch = program_sketch(data.get("program_shingles")) if isinstance(data, dict) else None
        if sketch is not None and isinstance(tags[1], str):
            out[tags[1]] = sketch
    return out


# -- the service's view -----------------------------------------------------------------------


def class_files(session: Session, rows: Iterable[scores.Standing], topic: str) -> dict[str, tuple[int, str]]:
    """login -> (id, topic file) of each student's counted submission of `topic` (`scores`:
    which score counts), read from its stored upload; students without one are left out."""
    out = {}
    for row in rows:
        counted = row.topics.get(topic)
        sub = session.get(Submission, counted.submission_id) if counted else None
        text = views.topic_files(session, sub).get(topic) if sub is not None else None
        if sub is not None and text is not None:
            out[row.student.login] = (sub.id, text)
    return out


def class_programs(
    session: Session, rows: Iterable[scores.Standing], topic: str
) -> dict[str, dict[str, frozenset[int]]]:
    """login -> exercise -> program sketch of each student's counted submission of `topic`, from
    its stored results.json (where its grading recorded one)."""
    out = {}
    for row in rows:
        counted = row.topics.get(topic)
        sub = session.get(Submission, counted.submission_id) if counted else None
        found = programs_in(sub.result_json, topic) if sub is not None else {}
        if found:
            out[row.student.login] = found
    return out


def pair_in(ranking: Ranking, a: int, b: int) -> tuple[int, Pair] | None:
    """The pair of submissions `a` and `b` (either order) in a ranking, with its 1-based place."""
    for place, pair in enumerate(ranking.pairs, 1):
        if {pair.a.submission_id, pair.b.submission_id} == {a, b}:
            return place, pair
    return None


def highlighted(text: str, start: int = 1, marked: Iterable[int] = ()) -> Markup:
    """Code highlighted (Pygments escapes it), numbered from `start`, the `marked` lines lit."""
    formatter = HtmlFormatter(linenos="table", linenostart=start, cssclass="code", hl_lines=list(marked))
    return Markup(highlight(text, PythonLexer(), formatter))


@dataclass(frozen=True)
class Side:
    """One student's side of a pair as the page shows it: what was compared as written (the
    function, then its helpers, each numbered as in the file, the lines matched by the other
    side marked) and normalised (the lines the other side also has marked)."""

    code: Code
    written: list[Markup]
    normalised: Markup
    matched: int
    """Lines of the file marked: written in statements the other side has too, once normalised."""


def sides(pair: Pair) -> list[Side]:
    """A pair's two sides (`Side`), each marked against the other."""
    out = []
    for code, other in ((pair.a, pair.b), (pair.b, pair.a)):
        marked = shared_written(code, other)
        written = [highlighted(text, start, _within(marked, start, text)) for start, text in code.written]
        normal = highlighted(code.canonical, 1, shared_lines(code.canonical, other.canonical))
        out.append(Side(code, written, normal, len(marked)))
    return out


def _within(lines: Iterable[int], start: int, text: str) -> list[int]:
    """File lines that fall in `text` (written from line `start`), as its own lines (1-based)."""
    count = text.count("\n") + 1
    return [n - start + 1 for n in lines if start <= n < start + count]


def shared_lines(mine: str, other: str) -> list[int]:
    """The lines (1-based) of normalised code `mine` that are also lines of `other`, the `def`
    line aside: where two normalised functions agree, to be marked side by side."""
    theirs = {line.strip() for line in other.splitlines()[1:]}
    return [i for i, line in enumerate(mine.splitlines(), 1) if i > 1 and line.strip() in theirs]


def view(topic: str, rankings: Iterable[Ranking], top: int) -> schemas.Similarity:
    """The report as the API answers it: per exercise its `top` most alike pairs."""
    return schemas.Similarity(
        topic=topic,
        exercises=[
            schemas.ExerciseSimilarity(
                exercise=r.exercise,
                compared=r.compared,
                same_as_another=r.same_as_another,
                same_program=r.same_program,
                too_short_to_tell=r.too_short_to_tell,
                pairs=[
                    schemas.SimilarPair(
                        a=p.a.login,
                        b=p.b.login,
                        a_submission=p.a.submission_id,
                        b_submission=p.b.submission_id,
                        score=p.score,
                        source_score=p.source if p.source is not None else p.score,
                        program_score=p.program,
                        identical=p.identical,
                        reference=p.is_reference(r.given),
                        prescribed=p.prescribed,
                        a_notes=p.a.notes,
                        b_notes=p.b.notes,
                    )
                    for p in r.pairs[:top]
                ],
            )
            for r in rankings
        ],
    )

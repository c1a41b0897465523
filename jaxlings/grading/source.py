"""Reading Python source: the one module of the grader that parses it.

Everything that reads a module's source rather than running it comes here: which exercises of a
submission are stubs (`jaxlings.grading.stubs`), which a save changed (`jaxlings.student.changes`), what a
spare worker preloads (`jaxlings.grading.spares`), what a notebook cell defines and where a function
of a stub begins and ends (`jaxlings.student.notebook`), and on the course's side the solutions' and
stubs' functions and docstrings (`jaxlings.course`), and the code a recording depends on
(`jaxlings.course.expectations`).

Two ways in, by whose file it is:

- `parse`, for a STUDENT's source (a submission, a notebook cell): it never raises. A file that
  does not parse is the import's to report; but some that are valid Python still break the
  parser or a walk over the tree: one line of dead code nested deeply enough
  (`x = ------...1`, `a.b.b.b...`) makes `ast.parse` raise MemoryError or RecursionError. So
  every such read goes through `parse` (and `UNREADABLE` where a walk over the tree recurses),
  and a file that cannot be read is treated as one with nothing to find.
- `parse_trusted`, for the course's own files (solutions, the stubs built from them, topic
  specs, the grader's code): one that does not parse is the author's mistake, and it raises
  `SourceError` naming the file and the line.

On a tree: `functions` (its top-level functions, with their lines, docstrings and parameters),
`defined_names` (what it binds at top level), `docstring`, `statement_end` (where a block's
text ends, its trailing comments included) and `code_dump` (the code without docstrings or
positions: what a fingerprint hashes).
"""

from __future__ import annotations

import ast
import threading
from dataclasses import dataclass
from typing import Any

UNREADABLE = (SyntaxError, ValueError, RecursionError, MemoryError)
"""What reading a submitted source may raise: not valid Python, a null byte, nesting too deep."""

Documented = ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
"""The nodes that may hold a docstring (as `ast.get_docstring` reads one)."""


_PARSING = threading.Lock()
"""One parse at a time in this process: on Python 3.11, two threads parsing at once (the engine
grades topics in threads) can raise `SystemError: AST constructor recursion depth mismatch`
(CPython issue 106905), which failed a whole topic about 3 times in 170 gradings here."""


def _parse(source: str) -> ast.Module:
    with _PARSING:
        return ast.parse(source)


def literal(text: str) -> Any:
    """`ast.literal_eval(text)` (a Python literal read from text), under the same lock as `parse`."""
    with _PARSING:
        return ast.literal_eval(text)


class SourceError(Exception):
    """A trusted file (a solution, a generated stub, a spec, the grader's code) does not parse."""


def parse(source: str) -> ast.Module | None:
    """The module's tree, or None where the source cannot be read (see `UNREADABLE`). For a
    student's source: never raises."""
    try:
        return _parse(source)
    except UNREADABLE:
        return None


def parse_trusted(source: str, where: str) -> ast.Module:
    """The tree of a course file, `where` naming it in the `SourceError` raised when it does
    not parse (e.g. "solutions/loops.py")."""
    try:
        return _parse(source)
    except SyntaxError as exc:
        raise SourceError(f"{where} is not valid Python: {exc.msg} (line {exc.lineno})") from None
    except UNREADABLE as exc:
        raise SourceError(f"{where} cannot be parsed: {type(exc).__name__}: {exc}") from None


def docstring(node: ast.AST) -> ast.Expr | None:
    """The docstring statement of a module, class or function (the first statement, when it is
    a string constant), or None."""
    body = getattr(node, "body", None) if isinstance(node, Documented) else None
    first = body[0] if body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        return first
    return None


def parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[str, ...]:
    """The names of a function's positional parameters, in order (positional-only ones first)."""
    return tuple(a.arg for a in node.args.posonlyargs + node.args.args)


@dataclass(frozen=True)
class Function:
    """One top-level `def` (or `async def`) of a module."""

    node: ast.FunctionDef | ast.AsyncFunctionDef

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def is_async(self) -> bool:
        return isinstance(self.node, ast.AsyncFunctionDef)

    @property
    def start(self) -> int:
        """Its first line (1-based): its first decorator's, or the `def`'s."""
        return min([self.node.lineno] + [d.lineno for d in self.node.decorator_list])

    @property
    def end(self) -> int:
        """Its last statement's last line (1-based; comments after it not counted: see `statement_end`)."""
        return self.node.end_lineno or self.node.lineno

    @property
    def docstring(self) -> ast.Expr | None:
        """Its docstring statement (for its lines and indent), or None."""
        return docstring(self.node)

    @property
    def doc(self) -> str | None:
        """Its docstring's text as written (not dedented), or None."""
        return ast.get_docstring(self.node, clean=False)

    @property
    def parameters(self) -> tuple[str, ...]:
        return parameters(self.node)

    @property
    def body(self) -> list[ast.stmt]:
        """Its statements after the docstring."""
        return self.node.body[1:] if self.docstring is not None else list(self.node.body)


def functions(tree: ast.Module | None) -> list[Function]:
    """The module's top-level functions, in source order (a name defined twice appears twice;
    none for None, a source `parse` could not read)."""
    if tree is None:
        return []
    return [Function(node) for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]


def defined_names(tree: ast.Module | None) -> set[str]:
    """The names the module binds at its top level by a def, a class or a plain assignment to a
    name (`x = ...`, `x: int = ...`); empty for None."""
    names: set[str] = set()
    for node in tree.body if tree is not None else ():
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def statement_end(node: ast.stmt, lines: list[str]) -> int:
    """The line after top-level statement `node`'s last, counting the indented comments that
    trail a block (the AST ends a def at its last statement, before a closing `### END
    SOLUTION`). `lines` are the module's lines; the result is a 0-based index into them, so
    that `lines[node.lineno - 1:end]` is the statement's text."""
    end = node.end_lineno or node.lineno
    while end < len(lines) and lines[end][:1] in (" ", "\t") and lines[end].strip():
        end += 1
    return end


def code_dump(tree: ast.AST) -> str:
    """The tree as text, with what cannot change what the code does left out: docstrings (of
    the module, its classes and functions), positions (so blank lines and moved code are the
    same), and comments and formatting (never in the tree).

    The text is the same on every Python the grader supports: fields that are None or empty
    are left out, so that one a later Python adds (3.12's `type_params`) reads the same where
    it is empty, and `ast.dump`'s own format (which 3.13 changed) is not used. For trusted
    trees (it recurses as deep as the tree).
    """

    def dump(value: object) -> str:
        if isinstance(value, ast.AST):
            parts = []
            for name in value._fields:
                field = getattr(value, name, None)
                if name == "body" and field and docstring(value) is not None:
                    field = field[1:]
                if field is None or (isinstance(field, list) and not field):
                    continue
                parts.append(f"{name}={dump(field)}")
            return f"{type(value).__name__}({', '.join(parts)})"
        if isinstance(value, list):
            return "[" + ", ".join(dump(v) for v in value) + "]"
        return repr(value)

    return dump(tree)


def syntax_error(source: str, shown_as: str) -> str | None:
    """Why a STUDENT's `source` is not valid Python, for them: the file as they know it
    (`shown_as`, e.g. "exercises/prng.py", never a temporary copy), the line, the line's text and
    a caret under the spot; None when it parses (or cannot be read for another reason, which the
    import then reports). Read in the grader's own process, so a typo is reported before any
    worker starts."""
    try:
        _parse(source)
    except SyntaxError as exc:
        where = f"{shown_as}, line {exc.lineno}" if exc.lineno else shown_as
        text = f"SyntaxError in {where}: {exc.msg}"
        line = (exc.text or "").rstrip("\n")
        if line.strip():
            stripped = line.lstrip()
            caret = max(0, (exc.offset or 1) - 1 - (len(line) - len(stripped)))
            text += f"\n    {stripped}\n    {' ' * min(caret, len(stripped))}^"
        return text
    except UNREADABLE:
        return None
    return None

"""Crafted submissions (tests/submissions/<topic>__<variant>.py) as the sources they grade as.

No pytest here: the benchmarks, on machines without it (the TPU's), build their submission
folders from the same files (`benchmarks/on_tpu.sh written`).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = ROOT / "solutions"
SUBMISSIONS = ROOT / "tests" / "submissions"


PATCH = "# crafted: the reference, with the definitions below in place of its own"
"""The first line of a crafted submission written as its fault alone (see `crafted_source`)."""


def crafted_source(stem: str) -> str:
    """tests/submissions/<stem>.py as the source of a submission.

    A file whose first line is `PATCH` holds only what its variant changes: its docstring, the
    imports it adds and its top-level definitions (functions, classes, `NAME = ...`), which take
    the place of the reference's definitions of the same names in solutions/<topic>.py (those
    the reference lacks are added at the end). Everything else is the reference's, so a
    one-fault variant is written as its fault and follows the reference as it changes. Any
    other file is the submission as it is.
    """
    return submission_source(SUBMISSIONS / f"{stem}.py")


def submission_source(path: Path) -> str:
    """The source a submission file grades as: a `PATCH` file (named `<topic>__<variant>.py`,
    see `crafted_source`) applied to the reference, any other file as it is."""
    source = path.read_text()
    if not source.startswith(PATCH):
        return source
    return _patched((SOLUTIONS / f"{path.stem.split('__')[0]}.py").read_text(), source)


def _patched(reference: str, patch: str) -> str:
    """`reference` with `patch`'s docstring, imports and top-level definitions (see `crafted_source`)."""
    ref_tree, patch_tree = ast.parse(reference), ast.parse(patch)
    lines = reference.splitlines(keepends=True)
    patch_lines = patch.splitlines(keepends=True)

    def span(node: ast.stmt) -> tuple[int, int]:  # 0-based first line (decorators included), end
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        return first - 1, node.end_lineno or node.lineno

    def name(node: ast.stmt) -> str | None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return node.name
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            return node.targets[0].id
        return None

    body = patch_tree.body
    doc = body[0] if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) else None
    imports = [n for n in body if isinstance(n, (ast.Import, ast.ImportFrom))]
    defs = {name(n): n for n in body if name(n)}
    text = {k: "".join(patch_lines[slice(*span(n))]) for k, n in defs.items()}
    edits = []  # (start, end, new lines), applied from the bottom up
    for node in ref_tree.body:
        key = name(node)
        if key in text:
            edits.append((*span(node), text.pop(key)))
    ref_imports = [n for n in ref_tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    if imports:
        at = span(ref_imports[-1])[1] if ref_imports else 0
        edits.append((at, at, "".join("".join(patch_lines[slice(*span(n))]) for n in imports)))
    ref_doc = ref_tree.body[0] if ref_tree.body and isinstance(ref_tree.body[0], ast.Expr) else None
    if doc is not None and ref_doc is not None:
        edits.append((*span(ref_doc), "".join(patch_lines[slice(*span(doc))])))
    for start, end, new in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        lines[start:end] = [new]
    added = "\n\n".join(text.values())
    return "".join(lines) + ("\n\n" + added if added else "")

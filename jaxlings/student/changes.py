"""Which exercises of a saved module changed since the last look (for `grade watch`).

A module is read as its top-level definitions plus "the rest" (imports, assignments, anything
else at module level). An exercise changed when its own definition changed, or a top-level
definition it uses (directly or through other definitions) did, or the rest did: a changed
import or constant can change every function. Sources are compared as syntax trees, so
comments, blank lines and formatting changes check nothing again. A file that does not parse
changes every exercise (the check reports the syntax error).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from jaxlings.grading.source import UNREADABLE, parse


@dataclass(frozen=True)
class Snapshot:
    """A module's top-level definitions (name -> (syntax, names it uses)) and the rest."""

    definitions: dict[str, tuple[str, frozenset[str]]]
    rest: str | None  # None: the source does not parse


def snapshot(source: str) -> Snapshot:
    """Read `source` into what `changed` compares."""
    tree = parse(source)
    if tree is None:
        return Snapshot({}, None)
    definitions, rest = {}, []
    try:  # `ast.dump` recurses: a tree nested deeply enough is read as one that does not parse
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                uses = frozenset(n.id for n in ast.walk(node) if isinstance(n, ast.Name))
                definitions[node.name] = (ast.dump(node), uses)
            else:
                rest.append(ast.dump(node))
    except UNREADABLE:
        return Snapshot({}, None)
    return Snapshot(definitions, "\n".join(rest))


def _depends_on(name: str, snap: Snapshot) -> set[str]:
    """`name` and every top-level definition it reaches through the names it uses."""
    seen, todo = set(), [name]
    while todo:
        current = todo.pop()
        if current in seen or current not in snap.definitions:
            continue
        seen.add(current)
        todo.extend(snap.definitions[current][1])
    return seen


def changed(before: Snapshot | None, after: Snapshot, exercises: list[str]) -> list[str]:
    """The exercises (of `exercises`, in order) whose behaviour may differ between the snapshots."""
    if before is None or before.rest is None or after.rest is None or before.rest != after.rest:
        return list(exercises)
    differs = {
        n
        for n in set(before.definitions) | set(after.definitions)
        if before.definitions.get(n, (None,))[0] != after.definitions.get(n, (None,))[0]
    }
    return [ex for ex in exercises if (_depends_on(ex, after) | _depends_on(ex, before) | {ex}) & differs]

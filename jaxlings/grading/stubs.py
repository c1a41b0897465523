"""Which exercises of a submitted module are still stubs, read from its source on the trusted side.

A stub is a top-level function, undecorated or decorated with `jax.jit` only, whose body is only
a docstring and `raise NotImplementedError` (with one constant string or nothing): the form
`grade build` and nbgrader put in place of a solution. Nothing else in the module may bind its
name, nor `NotImplementedError` (else the function called might not be this one, or might not
raise it).
Such a function raises on every call, whatever its arguments, so the engine scores its exercise
"not implemented yet" on every check without the reference's outputs or a single call: grading a
stub used to cost the reference's work (ising's `vmc` ran two VMCs before the stub raised).

Trust: the grader reads the file it was given, not anything the student's process says, and a
stub scores zero on every check. Reading a function as a stub can therefore only cost its author
points, never earn them, and a function that is not unmistakably a stub is graded as before.
"""

from __future__ import annotations

import ast

from jaxlings.grading.source import Function, functions, parse

ERROR = "NotImplementedError"
STAR = "*"


def find(source: str, names: list[str]) -> dict[str, str]:
    """Of `names`, the functions of `source` that are stubs -> each one's NotImplementedError
    message ("" for none). A source that does not parse has none (its import reports why)."""
    tree = parse(source)
    if tree is None:
        return {}
    bound = _bindings(tree)
    if bound.get(ERROR) or bound.get(STAR):
        return {}
    found = {}
    for fn in functions(tree):
        if not fn.is_async and fn.name in names and bound.get(fn.name) == 1:
            message = _stub_message(fn, jit_bound=bound.get("jax") == 1)
            if message is not None:
                found[fn.name] = message
    return found


def _bindings(tree: ast.Module) -> dict[str, int]:
    """How many times each name is bound anywhere in the module (any scope: over-counting only
    makes a function fail to read as a stub, and so be graded as usual)."""
    counts: dict[str, int] = {}

    def bind(name: str) -> None:
        counts[name] = counts.get(name, 0) + 1

    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bind(node.name)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bind(node.id)
        elif isinstance(node, ast.alias):  # `from m import *` may bind any name: STAR counts as all
            bind(STAR if node.name == "*" else (node.asname or node.name).split(".")[0])
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                bind(name)
        elif isinstance(node, ast.arg):
            bind(node.arg)
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            bind(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bind(node.rest)
    return counts


def _is_jit(decorator: ast.expr) -> bool:
    """`@jax.jit` or `@jax.jit(keyword=...)`: a wrapper that runs the function when traced."""
    if isinstance(decorator, ast.Call) and not decorator.args:
        decorator = decorator.func
    return (
        isinstance(decorator, ast.Attribute)
        and decorator.attr == "jit"
        and isinstance(decorator.value, ast.Name)
        and decorator.value.id == "jax"
    )


def _stub_message(fn: Function, jit_bound: bool) -> str | None:
    """The message a stub raises, or None when `fn` is not a stub. Its decorators, if any, must
    be `jax.jit` (`jit_bound`: `jax` is bound once, by its import), which raises as it traces."""
    decorators = fn.node.decorator_list
    if decorators and not (jit_bound and all(_is_jit(d) for d in decorators)):
        return None
    body = fn.body
    if len(body) != 1 or not isinstance(body[0], ast.Raise) or body[0].cause is not None:
        return None
    exc = body[0].exc
    if isinstance(exc, ast.Name) and exc.id == ERROR:
        return ""
    if isinstance(exc, ast.Call) and isinstance(exc.func, ast.Name) and exc.func.id == ERROR and not exc.keywords:
        if not exc.args:
            return ""
        if len(exc.args) == 1 and isinstance(exc.args[0], ast.Constant) and isinstance(exc.args[0].value, str):
            return exc.args[0].value
    return None

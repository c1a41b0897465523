"""Helpers read in place, for the similarity report (jaxlings/service/similarity.py): a function
that only calls a module-level helper is that helper, and a call of a helper that returns one
expression is that expression.

Why. A copier moves the body into a helper of a fresh name (`def ema(xs, a): return _impl(xs,
a)`), or pulls an expression out into one (`_converged(x, a, tol)`); an honest student writes it
either way too. Compared side by side, the wrapper's call and the helper's `def` line are
material the original does not have, and it weighs as much as the body they share: split
copies of short answers scored 0.25-0.55 against their originals. Read in place, the copy is
the original again. Only plain calls are read in place (positional arguments, as many as the
helper's parameters); anything else is compared as a helper beside the function, as before.

Pure functions over `ast` trees; the trees given are never changed.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterable, Mapping, Sequence

Functions = ast.FunctionDef | ast.AsyncFunctionDef

ROUNDS = 8
"""Rounds of reading expression helpers in place (a helper's expression may call another)."""
MAX_NODES = 5_000
"""Nodes a function may grow to by reading helpers in place; past it, the round is not taken."""


def inline(fn: Functions, helpers: Sequence[Functions]) -> tuple[Functions, list[Functions], list[str]]:
    """(`fn` with the helpers it calls read in place, the helpers it still reaches, first reached
    first, each with its own calls read in place, and what was done, for the instructor).
    `helpers`: the module-level functions `fn` reaches, by their names."""
    pool = {h.name: h for h in helpers}
    notes = []
    fn = copy.deepcopy(fn)
    for _ in range(len(pool) + 1):  # a wrapper of a wrapper: each read in place in turn
        target = forwarded(fn, pool)
        if target is None:
            break
        fn = as_body_of(fn, pool[target])
        notes.append(f"a call of `{target}` and nothing else: compared as `{target}`'s body")
    expressions = {name: h for name, h in pool.items() if expression_of(h) is not None}
    fn, used = _expressions_in(fn, expressions)
    kept = [_expressions_in(copy.deepcopy(h), expressions)[0] for h in _reached(fn, pool)]
    notes += [f"`{name}` returns one expression: read in place where it is called" for name in sorted(used)]
    return fn, kept, notes


def _body(fn: Functions) -> list[ast.stmt]:
    """A function's statements, its docstring aside."""
    first = fn.body[0] if fn.body else None
    doc = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str)
    return fn.body[1:] if doc else fn.body


def _plain(fn: Functions) -> list[str] | None:
    """A function's parameter names when it takes positional parameters only (no `*args`,
    `**kwargs`, keyword-only ones), else None."""
    args = fn.args
    if args.vararg or args.kwarg or args.kwonlyargs:
        return None
    return [a.arg for a in args.posonlyargs + args.args]


def forwarded(fn: Functions, pool: Mapping[str, Functions]) -> str | None:
    """The helper `fn` only calls, with its own parameters as the arguments, each once (`return
    _impl(xs, alpha)`), or None."""
    body = _body(fn)
    if len(body) != 1 or not isinstance(body[0], ast.Return) or not isinstance(body[0].value, ast.Call):
        return None
    call = body[0].value
    if not isinstance(call.func, ast.Name) or call.func.id not in pool or call.keywords:
        return None
    mine, theirs = _plain(fn), _plain(pool[call.func.id])
    names = [a.id for a in call.args if isinstance(a, ast.Name)]
    if mine is None or theirs is None or len(names) != len(call.args) or len(names) != len(theirs):
        return None
    return call.func.id if sorted(names) == sorted(mine) and len(set(names)) == len(names) else None


def as_body_of(wrapper: Functions, helper: Functions) -> Functions:
    """`helper`'s body, as written, under `wrapper`'s name and signature, each of the wrapper's
    parameters renamed to the helper's parameter it is passed as (so that what is quoted of the
    body is what the file holds)."""
    call = _body(wrapper)[0]
    assert isinstance(call, ast.Return) and isinstance(call.value, ast.Call)
    passed = [a.id for a in call.value.args if isinstance(a, ast.Name)]
    names = dict(zip(passed, _plain(helper) or [], strict=True))
    out = copy.deepcopy(wrapper)
    for arg in out.args.posonlyargs + out.args.args:
        arg.arg = names.get(arg.arg, arg.arg)
    out.body = copy.deepcopy(_body(helper))
    return out


def expression_of(helper: Functions) -> ast.expr | None:
    """What a helper returns when its body is one `return <expression>` that does not name the
    helper itself, and it takes plain positional parameters, else None."""
    body = _body(helper)
    if _plain(helper) is None or len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
        return None
    calls_itself = any(isinstance(n, ast.Name) and n.id == helper.name for n in ast.walk(body[0].value))
    return None if calls_itself else body[0].value


def _expressions_in(fn: Functions, helpers: Mapping[str, Functions]) -> tuple[Functions, set[str]]:
    """`fn` with every plain call of an expression helper replaced by its expression, the
    helper's parameters by the call's arguments (to a fixed point, at most `ROUNDS` deep, and no
    further than `MAX_NODES`: helpers that call each other could grow it without end); the names
    of the helpers read so."""
    used: set[str] = set()
    for _ in range(ROUNDS):
        reader = _InPlace(helpers)
        grown = reader.visit(copy.deepcopy(fn))
        if not reader.used or sum(1 for _ in ast.walk(grown)) > MAX_NODES:
            break
        fn, used = grown, used | reader.used
    return ast.fix_missing_locations(fn), used


class _InPlace(ast.NodeTransformer):
    """One round of reading expression helpers' calls in place."""

    def __init__(self, helpers: Mapping[str, Functions]) -> None:
        self.helpers = helpers
        self.used: set[str] = set()

    def visit_Call(self, node: ast.Call) -> ast.expr:
        self.generic_visit(node)
        helper = self.helpers.get(node.func.id) if isinstance(node.func, ast.Name) else None
        expression = expression_of(helper) if helper is not None else None
        params = _plain(helper) if helper is not None else None
        plain = not node.keywords and not any(isinstance(a, ast.Starred) for a in node.args)
        if helper is None or expression is None or params is None or not plain or len(params) != len(node.args):
            return node
        self.used.add(helper.name)
        values = dict(zip(params, node.args, strict=True))
        return ast.copy_location(_Substitute(values).visit(copy.deepcopy(expression)), node)


class _Substitute(ast.NodeTransformer):
    """Names replaced by (copies of) expressions."""

    def __init__(self, values: Mapping[str, ast.expr]) -> None:
        self.values = values

    def visit_Name(self, node: ast.Name) -> ast.expr:
        return copy.deepcopy(self.values[node.id]) if node.id in self.values else node


def _reached(fn: Functions, pool: Mapping[str, Functions]) -> list[Functions]:
    """The helpers of `pool` that `fn` reaches by name, transitively, first reached first."""
    out: list[Functions] = []
    todo: list[Functions] = [fn]
    while todo:
        for name in _names_in_order(todo.pop(0)):
            helper = pool.get(name)
            if helper is not None and helper not in out and helper.name != fn.name:
                out.append(helper)
                todo.append(helper)
    return out


def _names_in_order(node: ast.AST) -> Iterable[str]:
    """The names a tree reads, in source order (parents first)."""
    for sub in _preorder(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
            yield sub.id


def _preorder(node: ast.AST) -> Iterable[ast.AST]:
    """A tree's nodes in source order, parents first."""
    yield node
    for child in ast.iter_child_nodes(node):
        yield from _preorder(child)

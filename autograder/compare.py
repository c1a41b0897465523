"""Comparing a student's output with the reference's, in the grader's process.

Both outputs arrive as data (`{"treedef": str, "leaves": [...]}`, see
`worker.harness.Harness.export`), checked against their schema (`replies.output`), so no
student object takes part in the comparison; the student's output must have the reference's
structure, leaf for leaf. A mismatch message says *what* differs (structure, shape, dtype, how
large the error is and where) and never the expected values; what it quotes of the student's
output (its structure, a key path, a key implementation) is clipped (`results.clip`).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from autograder.results import clip

Output = dict[str, Any]

MAX_NAME = 80


def mismatch(expected: Output, got: Output, rtol: float, atol: float, names: tuple[str, ...] = ()) -> str | None:
    """None when `got` matches `expected` within tolerance; else what is wrong, in one line.

    A wrong leaf of a structured output is named as the docstring names it (`output_name`):
    `names` are the exercise's names for the entries of a returned tuple (`Exercise.outputs`)."""
    if got["treedef"] != expected["treedef"]:
        return f"the output's structure is {clip(got['treedef'], 500)}, but the task asks for {expected['treedef']}"
    if len(got["leaves"]) != len(expected["leaves"]):
        return (
            f"the output has {len(got['leaves'])} values where its structure, {expected['treedef']}, "
            f"holds {len(expected['leaves'])}"
        )
    for i, (e, g) in enumerate(zip(expected["leaves"], got["leaves"])):
        if (msg := _leaf_mismatch(e, g, rtol, atol)) is not None:
            name = output_name(expected, i, names)
            return (f"`{name}`: " if name else "") + msg
    return None


def output_name(out: Output, i: int, names: tuple[str, ...] = ()) -> str:
    """How a message names leaf `i` of an exported output: by its key path (`output['w']`,
    `output.b`, `output[1]`), with the first entry of a returned tuple named by `names` where
    the exercise gives them (`step_keys`, `total['a']`); "" for a bare array.

    The path is the one the worker read off the output (`jax.tree_util.keystr`); an output
    without paths (or a registered class without key paths) falls back on the leaf's number."""
    paths = out.get("paths")
    if not (isinstance(paths, list) and len(paths) == len(out["leaves"]) and isinstance(paths[i], str)):
        return f"output leaf {i}" if len(out["leaves"]) > 1 else ""
    path = re.sub(r"\[<flat index (\d+)>\]", r"[\1]", paths[i])
    if not path:
        return ""
    top = re.match(r"\[(\d+)\]", path)
    if names and top and int(top[1]) < len(names) and out["treedef"].startswith(("PyTreeDef((", "PyTreeDef([")):
        name = names[int(top[1])] + path[top.end() :]
    else:
        name = "output" + path
    return name if len(name) <= MAX_NAME else name[:MAX_NAME] + "..."


def _leaf_mismatch(e: dict[str, Any], g: dict[str, Any], rtol: float, atol: float) -> str | None:
    if e["kind"] != g["kind"]:
        want = "a typed PRNG key array" if e["kind"] == "key" else "a numeric array"
        return f"expected {want}, got {'a typed PRNG key array' if g['kind'] == 'key' else 'a numeric array'}"
    ev, gv = np.asarray(e["data"]), np.asarray(g["data"])
    if e["kind"] == "key" and e.get("impl") != g.get("impl"):
        return f"keys of implementation {clip(str(g.get('impl')), 100)}, expected {e.get('impl')}"
    if gv.shape != ev.shape:
        return f"shape {gv.shape}, expected shape {ev.shape}"
    if gv.dtype != ev.dtype:
        return f"dtype {gv.dtype}, expected dtype {ev.dtype}"
    if ev.size == 0:
        return None
    if ev.dtype.kind in "biu" or e["kind"] == "key":
        bad = gv != ev
        if bad.any():
            idx = np.unravel_index(np.argmax(bad), bad.shape) if bad.ndim else ()
            return f"{int(bad.sum())} of {bad.size} values differ (the first at index {_fmt_index(idx)}); exact equality is required"
        return None
    return _float_mismatch(ev.astype(np.float64), gv.astype(np.float64), rtol, atol)


def _float_mismatch(ev: np.ndarray, gv: np.ndarray, rtol: float, atol: float) -> str | None:
    e_nan, g_nan = np.isnan(ev), np.isnan(gv)
    if (e_nan != g_nan).any():
        idx = np.unravel_index(np.argmax(e_nan != g_nan), ev.shape) if ev.ndim else ()
        has = "NaN" if g_nan[idx] else "a number"
        return f"your output has {has} at index {_fmt_index(idx)} where the reference does not"
    with np.errstate(invalid="ignore"):
        err = np.where(e_nan, 0.0, np.abs(gv - ev))
        err = np.where(np.isinf(ev) & (gv == ev), 0.0, err)
        bad = err > atol + rtol * np.abs(np.where(e_nan, 0.0, ev))
    if bad.any():
        idx = np.unravel_index(np.argmax(np.where(bad, err, -1.0)), err.shape) if err.ndim else ()
        return (
            f"{int(bad.sum())} of {bad.size} values are off; the largest error is {err[idx]:.3g} at index "
            f"{_fmt_index(idx)} (tolerance {atol:g} + {rtol:g}·|expected|)"
        )
    return None


def _fmt_index(idx: tuple[Any, ...]) -> str:
    return "(" + ", ".join(str(int(i)) for i in idx) + (",)" if len(idx) == 1 else ")")


def shapes(args: tuple[Any, ...]) -> str:
    """A case's arguments described by shape and dtype (never values), for messages."""
    parts = []
    for a in args:
        if isinstance(a, np.ndarray):
            parts.append(f"{a.dtype}{list(a.shape)}")
        elif type(a).__name__ == "Key":
            parts.append("key")
        elif isinstance(a, (dict, list, tuple)):
            parts.append(_tree_shapes(a))
        else:
            parts.append(repr(a))
    return "(" + ", ".join(parts) + ")"


def _tree_shapes(tree: Any) -> str:
    """A nested dict/list/tuple argument (a pytree) with its array leaves as dtype[shape]."""
    if isinstance(tree, dict):
        return "{" + ", ".join(f"{k!r}: {_tree_shapes(v)}" for k, v in tree.items()) + "}"
    if isinstance(tree, (list, tuple)):
        inner = ", ".join(_tree_shapes(v) for v in tree)
        return f"[{inner}]" if isinstance(tree, list) else f"({inner}{',' if len(tree) == 1 else ''})"
    if isinstance(tree, (np.ndarray, np.generic)):
        return f"{tree.dtype}{list(np.shape(tree))}"
    return shapes((tree,))[1:-1]

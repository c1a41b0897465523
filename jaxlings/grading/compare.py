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

from jaxlings.grading import words
from jaxlings.grading.results import clip

Output = dict[str, Any]

MAX_NAME = 80


def mismatch(
    expected: Output, got: Output, rtol: float, atol: float, names: tuple[str, ...] = (), root: str = "output"
) -> str | None:
    """None when `got` matches `expected` within tolerance; else what is wrong, in one line.

    A wrong leaf of a structured output is named as the docstring names it (`output_name`):
    `names` are the exercise's names for the entries of a returned tuple (`Exercise.outputs`);
    `root` is what the whole is called ("output", "gradient"). Structures are said in words
    (`words.structure_difference`), keys counted as keys."""
    if got["treedef"] != expected["treedef"]:
        return words.structure_difference(expected["treedef"], clip(got["treedef"], 100_000), root, names)
    if len(got["leaves"]) != len(expected["leaves"]):
        return (
            f"the {root} has {words.count(len(got['leaves']), 'array')} where its structure, "
            f"{words.structure(expected['treedef'])}, holds {len(expected['leaves'])}"
        )
    for i, (e, g) in enumerate(zip(expected["leaves"], got["leaves"])):
        if (msg := _leaf_mismatch(e, g, rtol, atol)) is not None:
            name = output_name(expected, i, names, root)
            if TEXT_NAME.search(name) and (text := _text_mismatch(e, g)) is not None:
                msg = text
            return (f"`{name}`: " if name else "") + msg
    return None


TEXT_NAME = re.compile(r"(message|text|msg)$")
"""Outputs named so (`Exercise.outputs`) that are 1-D uint8 arrays are text (a `checkify`
message as its UTF-8 bytes): a message about them quotes the student's text, not its shape."""


def _text_mismatch(e: dict[str, Any], g: dict[str, Any]) -> str | None:
    """A wrong text output in words, quoting the student's text (clipped) and never the
    reference's; None when either side is not text (1-D uint8 of UTF-8)."""
    ev, gv = np.asarray(e["data"]), np.asarray(g["data"])
    if not (ev.dtype == gv.dtype == np.uint8 and ev.ndim == gv.ndim == 1):
        return None
    try:
        text = gv.tobytes().decode()
    except UnicodeDecodeError:
        return None
    if not text:
        return "no message (an empty array), but a check should fail on this case"
    if not ev.size:
        return f"your function reports {clip(text, 300)!r}, but no check should fail on this case"
    return f"your function reports {clip(text, 300)!r}, which is not the message this case should give"


def output_name(out: Output, i: int, names: tuple[str, ...] = (), root: str = "output") -> str:
    """How a message names leaf `i` of an exported output: by its key path (`output['w']`,
    `output.b`, `output[1]`), with the first entry of a returned tuple named by `names` where
    the exercise gives them (`step_keys`, `total['a']`); "" for a bare array, or for the one
    entry of a tuple of one (a gradient with respect to one argument is "the gradient").

    The path is the one the worker read off the output (`jax.tree_util.keystr`); an output
    without paths (or a registered class without key paths) falls back on the leaf's number."""
    paths = out.get("paths")
    if not (isinstance(paths, list) and len(paths) == len(out["leaves"]) and isinstance(paths[i], str)):
        return f"{root} leaf {i}" if len(out["leaves"]) > 1 else ""
    path = re.sub(r"\[<flat index (\d+)>\]", r"[\1]", paths[i])
    if out["treedef"].startswith("PyTreeDef((") and (node := words.parse(out["treedef"])) and len(node.children) == 1:
        path = path.removeprefix("[0]")  # a tuple of one: its entry is the whole
        names = ()
    if not path:
        return ""
    top = re.match(r"\[(\d+)\]", path)
    if names and top and int(top[1]) < len(names) and out["treedef"].startswith(("PyTreeDef((", "PyTreeDef([")):
        name = names[int(top[1])] + path[top.end() :]
    else:
        name = root + path
    return name if len(name) <= MAX_NAME else name[:MAX_NAME] + "..."


def _leaf_mismatch(e: dict[str, Any], g: dict[str, Any], rtol: float, atol: float) -> str | None:
    if e["kind"] != g["kind"]:
        want = "a typed PRNG key array" if e["kind"] == "key" else "a numeric array"
        return f"expected {want}, got {'a typed PRNG key array' if g['kind'] == 'key' else 'a numeric array'}"
    ev, gv = np.asarray(e["data"]), np.asarray(g["data"])
    if e["kind"] == "key":
        return _key_mismatch(e, g, ev, gv)
    if gv.shape != ev.shape:
        return f"shape {gv.shape}, expected shape {ev.shape}"
    if gv.dtype != ev.dtype:
        return f"dtype {gv.dtype}, expected dtype {ev.dtype}"
    if ev.size == 0:
        return None
    if ev.dtype.kind in "biu":
        bad = gv != ev
        if bad.any():
            if not bad.ndim:
                return _scalar_mismatch(ev, gv)
            idx = np.unravel_index(np.argmax(bad), bad.shape)
            return (
                f"{words.of(int(bad.sum()), bad.size, 'value')} differ (the first at index {_fmt_index(idx)}); "
                "exact equality is required"
            )
        return None
    if ev.dtype.kind == "c":  # both parts: the error is the modulus of the difference
        return _float_mismatch(ev.astype(np.complex128), gv.astype(np.complex128), rtol, atol)
    return _float_mismatch(ev.astype(np.float64), gv.astype(np.float64), rtol, atol)


def _key_mismatch(e: dict[str, Any], g: dict[str, Any], ev: np.ndarray, gv: np.ndarray) -> str | None:
    """Typed keys compared as keys: a key's data is its last axis (two uint32 words for
    threefry2x32), so a key array of shape (3,) is 3 keys, not 6 values."""
    if e.get("impl") != g.get("impl"):
        return f"keys of implementation {clip(str(g.get('impl')), 100)}, expected {e.get('impl')}"
    if gv.shape != ev.shape:
        got, want = gv.shape[:-1], ev.shape[:-1]
        if gv.shape[-1:] != ev.shape[-1:]:
            return f"keys of another kind (their data has shape {gv.shape}, expected {ev.shape})"
        return f"a key array of shape {got}, expected shape {want}"
    if ev.size == 0:
        return None
    bad = (gv != ev).any(axis=-1)
    if not bad.any():
        return None
    n = int(bad.sum())
    first = "" if bad.ndim == 0 else f" (the first is key[{', '.join(str(int(i)) for i in np.argwhere(bad)[0])}])"
    return f"{words.of(n, bad.size, 'key')} differ{first}; each key must be the one the task derives, exactly"


def _scalar_mismatch(ev: np.ndarray, gv: np.ndarray) -> str:
    """A wrong integer or boolean scalar (a count, an index, a flag) in words: the student's
    value and which side of the reference's it lies, as a float's "off by" does."""
    if ev.dtype.kind == "b":
        return f"your function returned {bool(gv)} where the reference returns {bool(ev)}"
    diff = int(gv) - int(ev)
    return (
        f"your value, {int(gv)}, is {abs(diff)} {'above' if diff > 0 else 'below'} the reference's; "
        "exact equality is required"
    )


def _float_mismatch(ev: np.ndarray, gv: np.ndarray, rtol: float, atol: float) -> str | None:
    e_nan, g_nan = np.isnan(ev), np.isnan(gv)
    if (e_nan != g_nan).any():
        idx = np.unravel_index(np.argmax(e_nan != g_nan), ev.shape) if ev.ndim else ()
        has = "NaN" if g_nan[idx] else "a number"
        return f"your output has {has}{f' at index {_fmt_index(idx)}' if idx else ''} where the reference does not"
    with np.errstate(invalid="ignore"):
        err = np.where(e_nan, 0.0, np.abs(gv - ev))
        err = np.where(np.isinf(ev) & (gv == ev), 0.0, err)
        # an infinite expected value is matched exactly: its tolerance, rtol * inf, would take anything
        bad = (err > atol + rtol * np.abs(np.where(e_nan, 0.0, ev))) | (np.isinf(ev) & (gv != ev))
    if bad.any():
        idx = np.unravel_index(np.argmax(np.where(bad, err, -1.0)), err.shape) if err.ndim else ()
        if not err.ndim:
            return f"the value is off by {err[()]:.3g} (tolerance {atol:g} + {rtol:g}·|expected|)"
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
            parts.append(words.num(a))
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

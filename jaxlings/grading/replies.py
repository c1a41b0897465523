"""The shape of every reply a worker may send, checked in the grader before anything reads it.

A student's worker can write any frame on its reply pipe (the pipe's descriptors are in its
process), so a reply is untrusted data: `wire.decode` guarantees only plain data (dicts, lists,
scalars, strings, NumPy arrays of numeric dtypes). `check(op, reply)` adds the schema of the
request `op`: the fields, their types, and for outputs the exported form of a pytree
(`{"treedef": str, "leaves": [{"kind": "array" | "key", "data": ndarray, "impl"?: str}], "paths"?: [str]}`).
A reply that does not fit raises `MalformedReply`, which fails the check that sent the request
(never the run).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from jaxlings.grading.results import clip


class MalformedReply(Exception):
    """A reply that does not have the shape its request calls for; the message says where."""


def _fail(where: str, what: str) -> None:
    raise MalformedReply(f"{where}: {what}")


def _dict(x: Any, where: str) -> dict[Any, Any]:
    if not isinstance(x, dict):
        _fail(where, f"expected a mapping, got {type(x).__name__}")
    return x


def _list(x: Any, where: str) -> list[Any]:
    if not isinstance(x, list):
        _fail(where, f"expected a list, got {type(x).__name__}")
    return x


def _typed(x: Any, kinds: tuple[type, ...], where: str) -> Any:
    if type(x) not in kinds:
        _fail(where, f"expected {' or '.join(k.__name__ for k in kinds)}, got {type(x).__name__}")
    return x


MAX_PATH = 500


def output(x: Any, where: str = "out") -> dict[str, Any]:
    """An exported pytree: a treedef string and its leaves, each an array or a key array, and
    optionally each leaf's key path (a string)."""
    _dict(x, where)
    _typed(x.get("treedef"), (str,), f"{where}.treedef")
    for i, leaf in enumerate(_list(x.get("leaves"), f"{where}.leaves")):
        at = f"{where}.leaves[{i}]"
        _dict(leaf, at)
        kind = leaf.get("kind")
        if kind not in ("array", "key"):
            _fail(f"{at}.kind", f"expected 'array' or 'key', got {kind!r}")
        _typed(leaf.get("data"), (np.ndarray,), f"{at}.data")
        if kind == "key":
            _typed(leaf.get("impl"), (str,), f"{at}.impl")
    if "paths" in x:
        paths = _list(x["paths"], f"{where}.paths")
        if len(paths) != len(x["leaves"]) or any(type(p) is not str or len(p) > MAX_PATH for p in paths):
            _fail(f"{where}.paths", f"expected one key path per leaf, each a string of at most {MAX_PATH} characters")
    return x


def _counts(x: Any, where: str) -> list[list[int]]:
    for i, pair in enumerate(_list(x, where)):
        if not isinstance(pair, list) or len(pair) != 2 or any(type(n) is not int or n < 0 for n in pair):
            _fail(f"{where}[{i}]", "expected [compilations, traces], two counts")
    return x


def _outs(x: Any, where: str = "outs") -> list[dict[str, Any]]:
    return [output(o, f"{where}[{i}]") for i, o in enumerate(_list(x, where))]


def _programs(x: Any, where: str = "programs") -> dict[Any, npt.NDArray[np.uint8]]:
    _dict(x, where)
    if "first" not in x:
        _fail(where, "no `first` program")
    for name, blob in x.items():
        if not isinstance(blob, np.ndarray) or blob.dtype != np.uint8 or blob.ndim != 1:
            _fail(f"{where}.{name}", "an exported program must be bytes (a 1-D uint8 array)")
    return x


def _shardings(reply: dict[str, Any]) -> None:
    if "shardings" in reply:
        for i, s in enumerate(_list(reply["shardings"], "shardings")):
            _dict(s, f"shardings[{i}]")


def _call(reply: dict[str, Any]) -> None:
    output(reply.get("out"))
    _shardings(reply)


def _step(reply: dict[str, Any]) -> None:
    output(reply.get("out"))
    _counts([reply.get("counts")], "counts")
    if type(reply.get("cache_hits", 0)) is not int:
        _fail("cache_hits", "expected a count")


def _trace(reply: dict[str, Any]) -> None:
    _programs(reply.get("programs"))
    _dict(reply.get("advisory", {}), "advisory")


def _analyse(reply: dict[str, Any]) -> None:
    _dict(reply.get("facts"), "facts")
    if "out" in reply:
        output(reply["out"])
    _shardings(reply)


def _stats(reply: dict[str, Any]) -> None:
    if type(reply.get("compilations")) is not int or reply["compilations"] < 0:
        _fail("compilations", "expected a count")
    seconds = reply.get("compile_seconds")
    if type(seconds) is not float or not 0 <= seconds < 1e7:
        _fail("compile_seconds", "expected a finite, non-negative number of seconds")


def _hello(reply: dict[str, Any]) -> None:
    platform = _dict(reply.get("platform"), "platform")
    for name in ("backend", "device_kind", "jax_version"):
        _typed(platform.get(name), (str,), f"platform.{name}")
    # A student's worker says this too (results.json shows it where no trusted worker ran): bounded.
    reply["platform"] = {
        clip(k, 40): clip(v, 200) if isinstance(v, str) else v
        for k, v in list(platform.items())[:20]
        if isinstance(k, str) and (v is None or isinstance(v, (str, int, float, bool)))
    }


def _digest(x: Any, where: str) -> list[int]:
    """A digest (`worker.commit.digest`): four 32-bit unsigned integers."""
    if len(_list(x, where)) != 4 or any(type(n) is not int or not 0 <= n < 1 << 32 for n in x):
        _fail(where, "expected a digest: four 32-bit words")
    return x


def _timed(reply: dict[str, Any]) -> None:
    if "digest" in reply:  # a round on an accelerator: its outputs stay in the worker (`fetch`)
        _digest(reply["digest"], "digest")
    else:
        _outs(reply.get("outs"))


def _call_outs(reply: dict[str, Any]) -> None:
    _outs(reply.get("outs"))


def _inputs(reply: dict[str, Any]) -> None:
    _digest(reply.get("inputs"), "inputs")


def _round(reply: dict[str, Any]) -> None:
    _outs(reply.get("outs"))
    if "inputs" in reply:
        _digest(reply["inputs"], "inputs")


def _load(reply: dict[str, Any]) -> None:
    for i, name in enumerate(_list(reply.get("functions"), "functions")):
        _typed(name, (str,), f"functions[{i}]")


SCHEMAS: dict[str, Callable[[dict[str, Any]], None]] = {
    "hello": _hello,
    "load": _load,
    "call": _call,
    "timed": _timed,
    "fetch": _call_outs,
    "keep": lambda reply: None,
    "round": _round,
    "inputs": _inputs,
    "module": _load,
    "trace": _trace,
    "analyse": _analyse,
    "prepare": lambda reply: None,
    "check_keys": lambda reply: None,
    "step": _step,
    "stats": _stats,
}


def check(op: str, reply: Any) -> dict[str, Any]:
    """`reply` if it has the shape a reply to `op` must have; MalformedReply otherwise."""
    _dict(reply, "reply")
    ok = reply.get("ok")
    if type(ok) is not bool:
        _fail("reply.ok", "missing or not a boolean")
    if not ok:
        error = _dict(reply.get("error"), "error")
        for name in ("type", "message"):
            _typed(error.get(name), (str,), f"error.{name}")
        _typed(error.get("where", ""), (str,), "error.where")
        # The one place a worker's error enters the grader: every message built from it is bounded.
        reply["error"] = {
            "type": clip(error["type"], 200),
            "message": clip(error["message"]),
            **({"where": clip(error["where"], 500)} if "where" in error else {}),
        }
        return reply
    SCHEMAS[op](reply)
    return reply


def format_error(error: dict[str, str], exercise: str | None = None) -> str:
    """A worker-reported exception as one message for the student (`exercise` = topic.name).

    A NotImplementedError is a stub's ("...: your code here"), or JAX's own for a rule a custom
    primitive lacks ("Batching rule for 'p' not implemented"); the latter's text is kept.
    """
    if error["type"] in ("ProgramRefused", "OutputRefused"):
        return error["message"].strip()
    if error["type"] == "NotImplementedError":
        detail = error["message"].strip()
        what = "" if not detail or detail.endswith("your code here") else f": {detail}"
        return f"not implemented yet{what}" + (f" (stuck? run `grade hint {exercise}`)" if exercise else "")
    text = f"{error['type']}: {error['message']}".strip()
    if error.get("where"):
        text += f" (at {error['where']})"
    return text

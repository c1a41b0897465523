"""The message format between the grader and its worker processes.

A message is a tree of dicts, lists, tuples, scalars, strings, NumPy arrays and `Key`s, sent
as one length-prefixed frame: a JSON header, then the raw array bytes. Decoding never
unpickles and never builds an object array, so a message from an untrusted worker can carry
data only, never code or objects with behaviour (a lying `__eq__`, say).
"""

from __future__ import annotations

import json
import os
import select
import struct
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np


MAX_FRAME = 1 << 30


@dataclass(frozen=True)
class Key:
    """A typed PRNG key argument, built in the worker as `jax.random.key(seed)`.

    Graders hand students typed keys only: JAX's key-reuse checker tracks typed keys, not the
    legacy uint32 ones.
    """

    seed: int
_ALLOWED_KINDS = set("biufc")


class WireError(Exception):
    """A frame was malformed, too large, or never came."""


class Timeout(WireError):
    """No complete frame arrived before the deadline."""


class Closed(WireError):
    """The other end closed the channel (the process died or exited)."""


def _dtype(name: str) -> np.dtype:
    """A data-only dtype from its name; ml_dtypes' (bfloat16, ...) included."""
    try:
        dt = np.dtype(name)
    except TypeError:
        import ml_dtypes

        dt = np.dtype(getattr(ml_dtypes, name))
    if dt.kind not in _ALLOWED_KINDS and dt.type.__module__ != "ml_dtypes":
        raise WireError(f"arrays of dtype {name} are not allowed")
    return dt


def encode(tree: Any) -> bytes:
    """Serialize a message tree into one frame payload."""
    arrays: list[np.ndarray] = []

    def enc(x: Any) -> Any:
        if isinstance(x, (np.ndarray, np.generic)):
            a = np.asarray(x)
            arrays.append(a if a.flags.c_contiguous else a.copy(order="C"))
            return {"$a": len(arrays) - 1}
        if isinstance(x, Key):
            return {"$key": int(x.seed)}
        if isinstance(x, tuple):
            return {"$t": [enc(v) for v in x]}
        if isinstance(x, list):
            return [enc(v) for v in x]
        if isinstance(x, dict):
            return {"$d": [[k, enc(v)] for k, v in x.items()]}
        if x is None or isinstance(x, (bool, int, float, str)):
            return x
        raise TypeError(f"cannot send a {type(x).__name__}")

    body = enc(tree)
    meta = [[a.dtype.name, list(a.shape)] for a in arrays]
    header = json.dumps({"tree": body, "arrays": meta}).encode()
    return b"".join([struct.pack("<I", len(header)), header, *(a.tobytes() for a in arrays)])


def decode(payload: bytes, key: Callable[[int], Any] = Key, array: Callable[[np.ndarray], Any] = lambda a: a) -> Any:
    """Rebuild a message tree; `key` and `array` map the leaves (the worker makes JAX values)."""
    try:
        (hlen,) = struct.unpack_from("<I", payload)
        header = json.loads(payload[4 : 4 + hlen])
        offset = 4 + hlen
        arrays = []
        for name, shape in header["arrays"]:
            dt = _dtype(name)
            count = int(np.prod(shape, dtype=np.int64))
            a = np.frombuffer(payload, dtype=dt, count=count, offset=offset).reshape(shape)
            offset += count * dt.itemsize
            arrays.append(a)
    except WireError:
        raise
    except Exception as exc:
        raise WireError(f"malformed message: {exc}") from None

    def dec(x: Any) -> Any:
        if isinstance(x, list):
            return [dec(v) for v in x]
        if isinstance(x, dict):
            if "$a" in x:
                return array(arrays[x["$a"]])
            if "$key" in x:
                return key(x["$key"])
            if "$t" in x:
                return tuple(dec(v) for v in x["$t"])
            if "$d" in x:
                return {k: dec(v) for k, v in x["$d"]}
            raise WireError("malformed message: unknown node")
        return x

    return dec(header["tree"])


def write_frame(fd: int, tree: Any) -> None:
    """Send one message."""
    data = encode(tree)
    view = memoryview(struct.pack("<Q", len(data)) + data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _read_exact(fd: int, n: int, deadline: float | None) -> bytes:
    chunks, got = [], 0
    while got < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise Timeout("no answer in time")
        chunk = os.read(fd, min(n - got, 1 << 20))
        if not chunk:
            raise Closed("the process closed its channel")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def read_frame(fd: int, deadline: float | None = None, max_bytes: int = MAX_FRAME, **decode_kw: Any) -> Any:
    """Receive one message; `deadline` is a `time.monotonic()` instant, None waits forever."""
    (size,) = struct.unpack("<Q", _read_exact(fd, 8, deadline))
    if size > max_bytes:
        raise WireError(f"message of {size} bytes is over the {max_bytes}-byte limit")
    return decode(_read_exact(fd, size, deadline), **decode_kw)

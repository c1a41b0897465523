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
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

MAX_FRAME = 1 << 30


@dataclass(frozen=True)
class Key:
    """A typed PRNG key argument, built in the worker as `jax.random.key(seed)`.

    Graders hand students typed keys only: JAX's key-reuse checker tracks typed keys, not the
    legacy uint32 ones.
    """

    seed: int


@dataclass(frozen=True)
class Generated:
    """A place in a timed round's arguments filled on the device: output `index` of the round's
    input program (`jaxlings.grading.workloads`), a typed key built from its data where `key`."""

    index: int
    key: bool = False


SPEC_KINDS = ("array", "key", "scalar")


@dataclass(frozen=True)
class Spec:
    """An argument described, never given: what a program is exported from (`op_trace`).

    `kind` "array": a NumPy array or scalar of `shape` and `dtype` (a dtype name); "key": a
    typed PRNG key array of `shape`, of the implementation `dtype` names (None: JAX's default);
    "scalar": a Python number of the type `dtype` names (bool, int, float, complex), which JAX
    traces as a weakly-typed scalar. The worker builds a `jax.ShapeDtypeStruct` from it.
    """

    kind: str
    shape: tuple[int, ...] = ()
    dtype: str | None = None


_ALLOWED_KINDS = set("biufc")


class WireError(Exception):
    """A frame was malformed, too large, or never came."""


class Timeout(WireError):
    """No complete frame arrived before the deadline."""


class Closed(WireError):
    """The other end closed the channel (the process died or exited)."""


def dtype_named(name: str) -> np.dtype:
    """A data-only dtype from its name; ml_dtypes' (bfloat16, ...) included."""
    try:
        dt = np.dtype(name)
    except TypeError:
        import ml_dtypes

        dt = np.dtype(getattr(ml_dtypes, name))
    if dt.kind not in _ALLOWED_KINDS and dt.type.__module__ != "ml_dtypes":
        raise WireError(f"arrays of dtype {name} are not allowed")
    return dt


def _header_tree(x: Any, array: Callable[[np.ndarray], int]) -> Any:
    """`x` as the JSON header carries it; `array(a)` files each array and returns its index."""
    if isinstance(x, (np.ndarray, np.generic)):
        return {"$a": array(np.asarray(x))}
    if isinstance(x, Key):
        return {"$key": int(x.seed)}
    if isinstance(x, Spec):
        return {"$spec": [x.kind, [int(n) for n in x.shape], x.dtype]}
    if isinstance(x, Generated):
        return {"$g": [int(x.index), bool(x.key)]}
    if isinstance(x, tuple):
        return {"$t": [_header_tree(v, array) for v in x]}
    if isinstance(x, list):
        return [_header_tree(v, array) for v in x]
    if isinstance(x, dict):
        return {"$d": [[k, _header_tree(v, array)] for k, v in x.items()]}
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    raise TypeError(f"cannot send a {type(x).__name__}")


def encode(tree: Any) -> bytes:
    """Serialize a message tree into one frame payload."""
    header, arrays = _parts(tree)
    return b"".join([struct.pack("<I", len(header)), header, *(a.tobytes() for a in arrays)])


def _parts(tree: Any) -> tuple[bytes, list[np.ndarray]]:
    """A message's JSON header and its arrays (C-contiguous), in the order the payload holds them."""
    arrays: list[np.ndarray] = []

    def file(a: np.ndarray) -> int:
        arrays.append(a if a.flags.c_contiguous else a.copy(order="C"))
        return len(arrays) - 1

    body = _header_tree(tree, file)
    meta = [[a.dtype.name, list(a.shape)] for a in arrays]
    return json.dumps({"tree": body, "arrays": meta}).encode(), arrays


def decode(
    payload: bytes | bytearray, key: Callable[[int], Any] = Key, array: Callable[[np.ndarray], Any] = lambda a: a
) -> Any:
    """Rebuild a message tree; `key` and `array` map the leaves (the worker makes JAX values)."""
    try:
        (hlen,) = struct.unpack_from("<I", payload)
        header = json.loads(payload[4 : 4 + hlen])
        offset = 4 + hlen
        arrays = []
        for name, shape in header["arrays"]:
            dt = dtype_named(name)
            if not all(type(n) is int and n >= 0 for n in shape):
                raise WireError(f"malformed message: array shape {shape!r}")
            count = int(np.prod(shape, dtype=np.int64))
            a = np.frombuffer(payload, dtype=dt, count=count, offset=offset).reshape(shape)
            a.flags.writeable = False  # as from `bytes`: a reply is read, never changed
            offset += count * dt.itemsize
            arrays.append(a)
    except WireError:
        raise
    except Exception as exc:  # noqa: BLE001 - numpy's errors on a malformed frame are many kinds
        raise WireError(f"malformed message: {exc}") from None

    def dec(x: Any) -> Any:
        if isinstance(x, list):
            return [dec(v) for v in x]
        if isinstance(x, dict):
            if "$a" in x:
                index = x["$a"]
                if type(index) is not int or not 0 <= index < len(arrays):
                    raise WireError(f"malformed message: no array {index!r}")
                return array(arrays[index])
            if "$key" in x:
                if type(x["$key"]) is not int:
                    raise WireError("malformed message: a key's seed must be an integer")
                return key(x["$key"])
            if "$spec" in x:
                return _spec(x["$spec"])
            if "$g" in x:
                return _generated(x["$g"])
            if "$t" in x:
                return tuple(dec(v) for v in x["$t"])
            if "$d" in x:
                return {_dict_key(k): dec(v) for k, v in x["$d"]}
            raise WireError("malformed message: unknown node")
        return x

    try:
        return dec(header["tree"])
    except WireError:
        raise
    except Exception as exc:  # noqa: BLE001 - a frame from an untrusted worker may be shaped any way at all
        raise WireError(f"malformed message: {type(exc).__name__}: {exc}") from None


def _spec(fields: Any) -> Spec:
    """A `Spec` as sent: a known kind, a shape of non-negative ints, a dtype name or None."""
    if not (
        isinstance(fields, list)
        and len(fields) == 3
        and fields[0] in SPEC_KINDS
        and isinstance(fields[1], list)
        and all(type(n) is int and n >= 0 for n in fields[1])
        and (fields[2] is None or type(fields[2]) is str)
    ):
        raise WireError("malformed message: a bad argument spec")
    return Spec(fields[0], tuple(fields[1]), fields[2])


def _generated(fields: Any) -> Generated:
    """A `Generated` as sent: a non-negative index and a flag."""
    if not (isinstance(fields, list) and len(fields) == 2 and type(fields[0]) is int and fields[0] >= 0):
        raise WireError("malformed message: a bad generated argument")
    if type(fields[1]) is not bool:
        raise WireError("malformed message: a bad generated argument")
    return Generated(fields[0], fields[1])


def _dict_key(k: Any) -> Any:
    """A dict key as sent: JSON scalars only (a list would be unhashable)."""
    if k is not None and not isinstance(k, (str, int, float, bool)):
        raise WireError(f"malformed message: a dict key of type {type(k).__name__}")
    return k


def write_frame(fd: int, tree: Any) -> None:
    """Send one message (the frame `encode` makes), each array written from its own buffer:
    nothing is joined or copied whole, so a large message (a program forwarded to the analyser,
    a workload's inputs) is never held twice."""
    header, arrays = _parts(tree)
    size = 4 + len(header) + sum(a.nbytes for a in arrays)
    _write_all(fd, memoryview(struct.pack("<QI", size, len(header)) + header))
    for a in arrays:
        if a.nbytes:
            _write_all(fd, a.reshape(-1).view(np.uint8).data)


def _write_all(fd: int, view: memoryview) -> None:
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _read_into(fd: int, view: memoryview, deadline: float | None, watch_fd: int | None = None) -> None:
    """Fill `view` from `fd`: a frame is read into one buffer allocated for it, never in chunks
    joined afterwards (which held it twice)."""
    got, n = 0, len(view)
    while got < n:
        if deadline is not None or watch_fd is not None:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise Timeout("no answer in time")
            poller = select.poll()  # not select(): it fails on descriptors past 1023
            poller.register(fd, select.POLLIN)
            if watch_fd is not None:
                poller.register(watch_fd, select.POLLIN)
            ready = {f for f, _ in poller.poll(None if left is None else int(left * 1000) + 1)}
            if not ready:
                raise Timeout("no answer in time")
            if fd not in ready:  # only `watch_fd`: the writer is gone and nothing is buffered
                raise Closed("the process exited")
        count = os.readv(fd, [view[got : got + (1 << 20)]])
        if not count:
            raise Closed("the process closed its channel")
        got += count


def _read_exact(fd: int, n: int, deadline: float | None, watch_fd: int | None = None) -> bytearray:
    buffer = bytearray(n)
    _read_into(fd, memoryview(buffer), deadline, watch_fd)
    return buffer


class TooLarge(WireError):
    """A frame, or its JSON header, announced a size past what the reader allows; nothing of it
    was allocated (the channel is then out of step: the writer must be stopped)."""


def megabytes(n: int) -> str:
    """A byte count for messages: "3.2 MB"."""
    if n >= 1e9:
        return f"{n / 1e9:.3g} GB"
    return f"{n / 1e6:.3g} MB" if n >= 1e6 else f"{n / 1e3:.3g} kB"


def read_frame(
    fd: int,
    deadline: float | None = None,
    max_bytes: int = MAX_FRAME,
    *,
    watch_fd: int | None = None,
    max_header: int | None = None,
    why: str = "",
    sizes: list[tuple[int, int]] | None = None,
    **decode_kw: Any,
) -> Any:
    """Receive one message; `deadline` is a `time.monotonic()` instant, None waits forever.

    The frame's size (and, with `max_header`, its JSON header's: decoding JSON builds Python
    objects some 20 times its size) is checked against the bound BEFORE anything is allocated
    for it: a frame past `max_bytes` raises `TooLarge` ("the reply was N MB, more than the M MB
    allowed" + `why`) having read 12 bytes of it. `sizes`, where given, receives (frame bytes,
    header bytes) of the frame read.

    `watch_fd` (e.g. a pidfd of the writer) becomes readable when the writer is gone: then what
    is already in the channel is still read, but once it runs dry without a complete frame,
    `Closed` is raised at once, even if some other process (a forked grandchild) keeps the
    channel open.
    """
    (size,) = struct.unpack("<Q", _read_exact(fd, 8, deadline, watch_fd))
    if size > max_bytes:
        raise TooLarge(f"the reply was {megabytes(size)}, more than the {megabytes(max_bytes)} allowed{why}")
    if size < 4:
        raise WireError(f"malformed message: a frame of {size} bytes")
    payload = bytearray(size)
    view = memoryview(payload)
    _read_into(fd, view[:4], deadline, watch_fd)
    (hlen,) = struct.unpack_from("<I", payload)
    if max_header is not None and hlen > max_header:
        raise TooLarge(
            f"the reply's description (its structure, names and messages) was {megabytes(hlen)}, "
            f"more than the {megabytes(max_header)} allowed{why}"
        )
    _read_into(fd, view[4:], deadline, watch_fd)
    del view
    if sizes is not None:
        sizes.append((size, hlen))
    return decode(payload, **decode_kw)


def sizes(tree: Any) -> tuple[int, int]:
    """(payload bytes, JSON header bytes) of `tree` as `encode` sends it, without copying its
    arrays: what a reference's reply weighs, to bound the student's reply to the same request."""
    meta: list[list[Any]] = []

    def file(a: np.ndarray) -> int:
        meta.append([a.dtype.name, list(a.shape), a.nbytes])
        return len(meta) - 1

    body = _header_tree(tree, file)
    header = len(json.dumps({"tree": body, "arrays": [m[:2] for m in meta]}).encode())
    return 4 + header + sum(m[2] for m in meta), header

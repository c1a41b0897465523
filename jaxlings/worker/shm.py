"""A shared-memory region between the grader and one worker, for timed workloads.

Moving a timed workload's inputs through the reply pipe costs copies on both sides (encode,
pipe, decode, then onto the device) that are the same for the reference and the student and
so pull every speed ratio towards 1. Instead, the grader creates one memfd per worker
(`Region.create`, sealed against shrinking and growing, so that neither side can make the
other's mapping fault), hands its descriptor to the worker at start (JAXLINGS_WORKER_SHM), and
both map it once. For each timed request the grader writes the round's inputs into the region
AFTER its clocks have started (`place`), and the request says where they are; the worker views
them in place (on a CPU, `jax.device_put` of a page-aligned view copies nothing) and writes its
outputs' bytes into the rest of the region (`put`), saying where in its reply; the grader
copies them out (`take`) before its clocks stop, so the worker cannot change them after.

Nothing here is trusted to the worker: a student's process may read or write the whole region
at any time. It learns nothing early (a round's inputs are written only inside that round's
window, and the reference's region is another memfd, never passed to it), and what it writes
into the region outside its outputs is overwritten or ignored; its output references are
checked against the region's bounds and the allowed dtypes before anything reads them.

This module belongs to the worker package: it imports nothing of the grader.
"""

from __future__ import annotations

import mmap
import os
from typing import Any

import numpy as np

ENV = "JAXLINGS_WORKER_SHM"
SIZE = 1 << 30
"""Bytes of address space per region: pages exist only once written (the grader's inputs are
charged to the grader, the outputs a worker writes to the worker's cgroup, as its memory)."""
ALIGN = 128
REF = "$shm"
_KINDS = set("biufc")


class Malformed(ValueError):
    """A reference into the region that is out of bounds or not plain numeric data."""


def _dtype(name: Any) -> np.dtype:
    """A data-only dtype from its name (ml_dtypes' included); Malformed otherwise."""
    if type(name) is not str:
        raise Malformed(f"a dtype name must be a string, got {type(name).__name__}")
    try:
        dt = np.dtype(name)
    except TypeError:
        try:
            import ml_dtypes

            dt = np.dtype(getattr(ml_dtypes, name))
        except (ImportError, AttributeError, TypeError):
            raise Malformed(f"unknown dtype {name[:40]!r}") from None
    if dt.kind not in _KINDS and dt.type.__module__ != "ml_dtypes":
        raise Malformed(f"arrays of dtype {name[:40]} are not allowed")
    return dt


def _up(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


class Region:
    """One mapping of a worker's region; `fd` stays open while the region is in use."""

    def __init__(self, fd: int, size: int) -> None:
        self.fd, self.size = fd, size
        self.map = mmap.mmap(fd, size)

    @classmethod
    def create(cls, size: int = SIZE) -> Region:
        """A new region (grader side): a memfd of `size` bytes, sealed at that size."""
        import fcntl

        fd = os.memfd_create("jaxlings-timed", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        try:
            os.ftruncate(fd, size)
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
            return cls(fd, size)
        except BaseException:
            os.close(fd)
            raise

    @classmethod
    def from_env(cls) -> Region | None:
        """The region the grader handed this worker (worker side), or None."""
        value = os.environ.pop(ENV, "")
        try:
            fd, size = (int(x) for x in value.split(","))
            return cls(fd, size)
        except (ValueError, OSError):
            return None

    def close(self) -> None:
        try:
            self.map.close()
        except BufferError:  # a view still exported: the mapping goes with the process
            pass
        os.close(self.fd)

    def env(self) -> dict[str, str]:
        return {ENV: f"{self.fd},{self.size}"}

    # -- grader side -----------------------------------------------------------------------

    def place(self, tree: Any) -> tuple[Any, int] | None:
        """Write every NumPy array of `tree` into the region; the tree with each replaced by a
        reference, and where free space begins. None if the arrays do not fit in half the
        region (the request then carries them inline)."""
        arrays: list[np.ndarray] = []

        def collect(x: Any) -> None:
            if isinstance(x, np.ndarray):
                arrays.append(x)
            elif isinstance(x, (list, tuple)):
                for v in x:
                    collect(v)
            elif isinstance(x, dict):
                for v in x.values():
                    collect(v)

        collect(tree)
        if sum(_up(a.nbytes) for a in arrays) > self.size // 2:
            return None
        offset = 0

        def swap(x: Any) -> Any:
            nonlocal offset
            if isinstance(x, np.ndarray):
                ref = self._write(x, offset)
                offset = _up(offset + x.nbytes)
                return ref
            if isinstance(x, (list, tuple)):
                return type(x)(swap(v) for v in x)
            if isinstance(x, dict):
                return {k: swap(v) for k, v in x.items()}
            return x

        placed = swap(tree)
        return placed, offset

    def spans(self, refs: list[Any], start: int) -> list[tuple[int, int]]:
        """(offset, bytes) of each array a worker's reply refers to, read without touching the
        region: each must lie in [start, size) after the one before it (Malformed if not), so
        that the outputs never overlap and total at most the region's size."""
        spans = []
        for ref in refs:
            offset, dt, shape = self._parse(ref)
            if offset < start:
                raise Malformed("an output outside the output area, or overlapping another")
            nbytes = int(np.prod(shape, dtype=object)) * dt.itemsize
            spans.append((offset, nbytes))
            start = offset + nbytes
        return spans

    def copy(self, ref: Any) -> np.ndarray:
        """A copy of the array a reference names (checked by `spans` first)."""
        return self._view(*self._parse(ref)).copy()

    # -- worker side -----------------------------------------------------------------------

    def view(self, tree: Any) -> Any:
        """`tree` with every reference replaced by a NumPy view of the region (no copy)."""
        if isinstance(tree, dict):
            if set(tree) == {REF}:
                return self._view(*self._parse(tree))
            return {k: self.view(v) for k, v in tree.items()}
        if isinstance(tree, (list, tuple)):
            return type(tree)(self.view(v) for v in tree)
        return tree

    def put(self, arr: np.ndarray, offset: int, end: int) -> tuple[dict[str, Any] | None, int]:
        """Write `arr` at `offset` if it fits before `end`: (its reference, the next offset),
        or (None, offset) when it does not fit (it then goes inline)."""
        if offset + arr.nbytes > min(end, self.size):
            return None, offset
        return self._write(arr, offset), _up(offset + arr.nbytes)

    # -- both ------------------------------------------------------------------------------

    def _write(self, arr: np.ndarray, offset: int) -> dict[str, Any]:
        np.frombuffer(self.map, dtype=arr.dtype, count=arr.size, offset=offset).reshape(arr.shape)[...] = arr
        return {REF: [offset, arr.dtype.name, list(arr.shape)]}

    def _parse(self, ref: Any) -> tuple[int, np.dtype, tuple[int, ...]]:
        fields = ref.get(REF) if isinstance(ref, dict) else None
        if not (
            isinstance(fields, list)
            and len(fields) == 3
            and type(fields[0]) is int
            and isinstance(fields[2], list)
            and all(type(n) is int and n >= 0 for n in fields[2])
            and len(fields[2]) <= 64
        ):
            raise Malformed("a malformed reference into the shared region")
        offset, dt, shape = fields[0], _dtype(fields[1]), tuple(fields[2])
        nbytes = int(np.prod(shape, dtype=object)) * dt.itemsize
        if offset < 0 or offset % ALIGN or offset + nbytes > self.size:
            raise Malformed("a reference outside the shared region")
        return offset, dt, shape

    def _view(self, offset: int, dt: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
        count = int(np.prod(shape, dtype=object))
        return np.frombuffer(self.map, dtype=dt, count=count, offset=offset).reshape(shape)

"""Where the reference's side of a grading run comes from: live, recorded, or replayed.

Every check that needs something of the reference (its output for a case, the facts of its
exported program, its stream of compiled calls, what it prints, a timed VMC run) asks for it
through `TopicSession.answer(kind, request, compute)`, and every random input a check uses is
drawn through `TopicSession.draw(kind, make)`. An `Answers` object decides what those do:

- `Live` (hidden grading, and the full engine's public mode): `compute()` asks the reference's
  trusted worker; `make(rng)` runs the topic's sampler.
- `Recorder` (`grade build`): the same, and it writes down every draw and every answer of a
  public run of the reference solutions, keyed by what was asked.
- `Replay` (`grade check`, the student package, notebooks' public grade cells): answers from a
  recording, with no reference solution and no sampler anywhere. A draw is keyed by the
  generator's state and the draw's kind, and restores the state the recorded draw left, so a
  run replays exactly as recorded whatever the student's code does; an answer is keyed by the
  request's kind and content. Anything not recorded is the grader's error ("rebuild").

Recorded values travel in the workers' own data-only format (`worker.wire`), each compressed
on its own (`to_blob`); a recording is stored as an index (key -> where its bytes lie) and the
bytes, one value after another (`Recording.pack`): no pickle, nothing that can carry code.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from jaxlings.grading.spec import Case
from jaxlings.worker import wire

T = TypeVar("T")


class MissingAnswer(Exception):
    """A replayed run asked for something the recording does not hold."""


def request_key(kind: str, request: Any) -> str:
    """A stable key for one request: its kind and its content, as the wire encodes it."""
    return hashlib.sha256(kind.encode() + b"\0" + wire.encode(_pack(request))).hexdigest()[:40]


def draw_key(kind: str, rng: np.random.Generator) -> str:
    """A stable key for one draw: its kind and the generator's state before it."""
    state = json.dumps([kind, rng.bit_generator.state], sort_keys=True)
    return hashlib.sha256(state.encode()).hexdigest()[:40]


def to_blob(value: Any) -> bytes:
    """A value (arrays, keys, cases, plain data) as compressed wire bytes."""
    return zlib.compress(wire.encode(_pack(value)), 9)


def from_blob(blob: bytes) -> Any:
    """The value `to_blob` encoded (data only: arrays come back read-only)."""
    return _unpack(wire.decode(zlib.decompress(blob)))


def blobs_in(data: bytes) -> Iterator[bytes]:
    """Every blob of a packed recording's bytes, in order, found by decompressing them one after
    another (no index needed: what a leak scan reads); ValueError where they are not blobs."""
    view = memoryview(data)
    while view:
        stream = zlib.decompressobj()
        try:
            stream.decompress(view)
        except zlib.error as exc:
            raise ValueError(f"not a recording's bytes: {exc}") from None
        if not stream.eof:
            raise ValueError("not a recording's bytes: a blob is cut short")
        used = len(view) - len(stream.unused_data)
        yield bytes(view[:used])
        view = view[used:]


def _pack(x: Any) -> Any:
    """Cases as plain dicts, so that the wire can carry them."""
    if isinstance(x, Case):
        return {"$case_args": _pack(x.args), "$case_label": x.label, "$case_hidden": x.hidden}
    if isinstance(x, list):
        return [_pack(v) for v in x]
    if isinstance(x, tuple):
        return tuple(_pack(v) for v in x)
    if isinstance(x, dict):
        return {k: _pack(v) for k, v in x.items()}
    return x


def _unpack(x: Any) -> Any:
    if isinstance(x, dict):
        if "$case_args" in x:
            return Case(_unpack(x["$case_args"]), x["$case_label"], x["$case_hidden"])
        return {k: _unpack(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_unpack(v) for v in x]
    if isinstance(x, tuple):
        return tuple(_unpack(v) for v in x)
    return x


PARTS = ("draws", "answers")


@dataclass
class Recording:
    """The draws and answers of one topic's public run: key -> blob."""

    draws: dict[str, bytes] = field(default_factory=dict)
    answers: dict[str, bytes] = field(default_factory=dict)

    def pack(self) -> tuple[dict[str, dict[str, list[int]]], bytes]:
        """(index, bytes): every blob one after another, by part and key in order, and for each
        part `key -> [offset, length]` into those bytes (JSON-able)."""
        index: dict[str, dict[str, list[int]]] = {}
        chunks: list[bytes] = []
        offset = 0
        for part in PARTS:
            index[part] = {}
            for key, blob in sorted(getattr(self, part).items()):
                index[part][key] = [offset, len(blob)]
                chunks.append(blob)
                offset += len(blob)
        return index, b"".join(chunks)

    @classmethod
    def unpack(cls, index: Any, data: bytes) -> Recording:
        """The recording `pack` gave as (index, data); ValueError naming what is wrong where the
        index is malformed or points outside the bytes."""
        parts: dict[str, dict[str, bytes]] = {}
        for part in PARTS:
            entries = index.get(part) if isinstance(index, dict) else None
            if not isinstance(entries, dict):
                raise ValueError(f"the recording's index has no `{part}`")
            parts[part] = {}
            for key, where in entries.items():
                if not (isinstance(where, list) and len(where) == 2 and all(type(n) is int and n >= 0 for n in where)):
                    raise ValueError(f"the recording's index entry {key!r} is not [offset, length]")
                offset, length = where
                if offset + length > len(data):
                    raise ValueError(f"the recording's entry {key!r} lies past the end of its bytes")
                parts[part][key] = data[offset : offset + length]
        return cls(parts["draws"], parts["answers"])


class Live:
    """Answers computed now: the reference's worker and the topic's samplers."""

    mode = "live"

    def answer(self, kind: str, request: Any, compute: Callable[[], T]) -> T:
        return compute()

    def draw(self, kind: str, rng: np.random.Generator, make: Callable[[np.random.Generator], T]) -> T:
        return make(rng)


class Recorder(Live):
    """Live answers, each also written into `recording` (what `grade build` stores)."""

    mode = "record"

    def __init__(self) -> None:
        self.recording = Recording()

    def answer(self, kind: str, request: Any, compute: Callable[[], T]) -> T:
        value = compute()
        blob = to_blob(value)
        self.recording.answers[request_key(kind, request)] = blob
        return from_blob(blob)  # exactly what a replay will see

    def draw(self, kind: str, rng: np.random.Generator, make: Callable[[np.random.Generator], T]) -> T:
        key = draw_key(kind, rng)
        value = make(rng)
        blob = to_blob([value, json.dumps(rng.bit_generator.state)])
        self.recording.draws[key] = blob
        return from_blob(blob)[0]


DEVICE_KINDS = frozenset({"rounds"})
"""Answers that must come from the accelerator itself (the reference's timed work: a speed
check's rounds), fetched before the student's process takes it (`Check.prefetch`); every other
answer is the reference's on the host's CPU (a `compiles` stream's too: it runs on workers of
its own there, `jaxlings.grading.checks.compiles`)."""


class Prefetching(Live):
    """Live answers of the reference on the device (`jaxlings.grading.device_grading`'s first phase),
    the device kinds kept in `store`, keyed by request, for the student's phase."""

    mode = "prefetch"

    def __init__(self, store: dict[str, Any]) -> None:
        self.store = store

    def answer(self, kind: str, request: Any, compute: Callable[[], T]) -> T:
        value = compute()
        if kind in DEVICE_KINDS:
            self.store[request_key(kind, request)] = value
        return value


class Prefetched(Live):
    """The student's phase on a device: the device kinds from the first phase's `store` (a
    request it did not make is the grader's error), every other answer live, from the
    reference on the host's CPU."""

    mode = "live"

    def __init__(self, store: dict[str, Any]) -> None:
        self.store = store

    def answer(self, kind: str, request: Any, compute: Callable[[], T]) -> T:
        if kind not in DEVICE_KINDS:
            return compute()
        key = request_key(kind, request)
        if key not in self.store:
            raise MissingAnswer(f"the reference's `{kind}` on the device was not measured ahead for this request")
        return self.store[key]


class Replay(Live):
    """Answers and draws from a recording; nothing of the reference runs."""

    mode = "replay"

    def __init__(self, recording: Recording, origin: str) -> None:
        self.recording, self.origin = recording, origin

    def answer(self, kind: str, request: Any, compute: Callable[[], T]) -> T:
        blob = self.recording.answers.get(request_key(kind, request))
        if blob is None:
            raise MissingAnswer(
                f"the public expectations ({self.origin}) hold no `{kind}` answer for this "
                "request; they are out of date (`grade build` records them again)"
            )
        return from_blob(blob)

    def draw(self, kind: str, rng: np.random.Generator, make: Callable[[np.random.Generator], T]) -> T:
        blob = self.recording.draws.get(draw_key(kind, rng))
        if blob is None:
            raise MissingAnswer(
                f"the public expectations ({self.origin}) hold no `{kind}` inputs for this "
                "point of the run; they are out of date (`grade build` records them again)"
            )
        value, state = from_blob(blob)
        rng.bit_generator.state = json.loads(state)
        return value

"""The requests the grader sends a worker: one typed shape per `op`, and the transforms a request
applies to the function it names.

On the pipe a request is a plain tree (`wire`'s encoding: dicts, lists, tuples, arrays, `Key`s,
`Spec`s); these `TypedDict`s say what each op's dict holds, for the harness that reads it
(`harness.Harness.op_<op>`) and the grader code that writes it. A request always has its `op`;
the fields a request may leave out are marked `NotRequired`.

| op           | asks the worker to                                              | reply          |
|--------------|-----------------------------------------------------------------|----------------|
| `load`       | import its module (sent first)                                  | functions      |
| `module`     | import another topic's module and make it current (device)      | functions      |
| `call`       | call a function once, as written or jitted                      | out            |
| `check_keys` | trace it under JAX's key-reuse checker, compiling nothing       | -              |
| `trace`      | export the jitted call from argument specs (never values)      | programs       |
| `analyse`    | analyse an exported program and run it (trusted workers only)   | facts, out     |
| `timed`      | a speed round: every call of the workload, or their digest      | outs / digest  |
| `keep`       | keep the last committed round's outputs                          | -              |
| `fetch`      | send the kept round's outputs, after its window                  | outs           |
| `round`      | a round untimed (the reference's, to verify a student's)        | outs, inputs   |
| `inputs`     | the digest of a round's inputs made on the device               | inputs         |
| `prepare`    | set up a stream of calls (jit once, caches cleared)             | -              |
| `step`       | one call of the prepared stream                                 | out, counts    |
| `stats`      | what this process compiled so far (advisory)                    | compilations   |
| `bye`        | exit                                                            | (none)         |

The replies' shapes are checked on the grader's side before anything reads them
(`jaxlings.grading.replies`): a reply comes from an untrusted process.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, NotRequired, TypedDict

import numpy as np

Op = Literal[
    "load",
    "module",
    "call",
    "check_keys",
    "trace",
    "analyse",
    "timed",
    "keep",
    "fetch",
    "round",
    "inputs",
    "prepare",
    "step",
    "stats",
    "bye",
]
"""Every request a worker answers."""

TransformName = Literal["grad", "vmap", "value_and_grad"]
"""The JAX transforms a request may apply (`jax.grad`, `jax.vmap`, `jax.value_and_grad`)."""

Transform = tuple[TransformName, dict[str, Any]]
"""One transform and its keyword parameters, JSON-like (lists where JAX takes tuples)."""


def grad(argnums: Sequence[int]) -> Transform:
    """`jax.grad(fn, argnums=...)`."""
    return ("grad", {"argnums": list(argnums)})


def vmap(in_axes: Sequence[int | None]) -> Transform:
    """`jax.vmap(fn, in_axes=...)`: one axis (or None) per positional argument."""
    return ("vmap", {"in_axes": list(in_axes)})


class Generate(TypedDict):
    """A round's inputs made on the device (`jaxlings.grading.workloads`): the grader's program
    (a serialized `jax.export`, as uint8), the round's key, and each call's arguments with
    `wire.Generated` places for the program's outputs."""

    program: np.ndarray[Any, Any]
    key: np.ndarray[Any, Any]
    calls: list[tuple[Any, ...]]


class Request(TypedDict):
    op: Op


class ModuleRequest(Request):
    """`module`: the file of another topic's module (`path`) and its module name (`name`)."""

    path: str
    name: str


class FunctionRequest(Request):
    """A request about one function of the current module (`fn`), and how it is called: with
    `transforms` applied (innermost first), jitted (`jit`) with `static_argnums`; `operators`:
    a quantum operator in an output is sent as its matrix."""

    fn: str
    transforms: NotRequired[list[Transform]]
    jit: NotRequired[bool]
    static_argnums: NotRequired[Sequence[int]]
    operators: NotRequired[bool]


class CallRequest(FunctionRequest):
    """`call` (and `check_keys`): one call on `args`; with `key_reuse`, under JAX's key-reuse
    checker; with `shardings`, how each output leaf is laid out."""

    args: tuple[Any, ...]
    key_reuse: NotRequired[bool]
    shardings: NotRequired[bool]


class TraceRequest(FunctionRequest):
    """`trace`: each program's arguments as `wire.Spec`s by program name ("first", "other"),
    exported for `platforms` (the worker's own when absent)."""

    specs: dict[str, tuple[Any, ...]]
    platforms: NotRequired[list[str] | None]


class AnalyseRequest(Request):
    """`analyse`: an exported program (uint8) run on `args`; `shingles` for the similarity
    report, `shardings` for the outputs' layouts."""

    program: np.ndarray[Any, Any]
    args: tuple[Any, ...]
    shingles: NotRequired[bool]
    shardings: NotRequired[bool]


class RoundRequest(FunctionRequest):
    """`timed` and `round`: a workload's calls, sent (`cases`, in the shared region where `shm`
    says) or made on the device (`generate`); with `commit` (a salt), a timed round's outputs
    stay in the worker and the reply carries their digest; `salt` keys a round's input digest."""

    cases: NotRequired[Any]
    shm: NotRequired[tuple[int, int]]
    commit: NotRequired[int | None]
    generate: NotRequired[Generate | None]
    salt: NotRequired[int]


class FetchRequest(Request):
    """`fetch`: the kept round's outputs, in the shared region from `shm[0]` where it says so."""

    operators: NotRequired[bool]
    shm: NotRequired[tuple[int, int]]


class InputsRequest(Request):
    """`inputs`: a round's inputs made again on the device, their digest under `salt`."""

    generate: Generate
    salt: NotRequired[int]


class StepRequest(Request):
    """`step`: one call of the prepared stream on `args`, sent with it (inside the window)."""

    args: tuple[Any, ...]

"""Timing a workload of a worker's function with the grader's own clocks.

One timed workload is ONE request, `timed`: it carries the inputs, and the reply carries the
outputs, materialised as arrays (see `Harness.op_timed`). The clocks run from just before the
grader writes the inputs to just after it holds the reply, decoded, its outputs copied and
checked against the reply schema: every moment the worker could see the inputs and has not yet
handed over the outputs is inside the window, so work done while "staging", in a lazy output's
conversion, or in a thread that ends before the reply, is counted. The values are compared
with the reference's right after, on data the worker can no longer change.

The inputs and outputs cross a shared-memory region of the worker's own, not the pipe
(`jaxlings.worker.shm`: a sealed memfd per worker, mapped once on each side): the grader
writes the round's inputs into it only once its clocks run, the request says where they are,
the worker views them in place (on a CPU, `jax.device_put` of a page-aligned view copies
nothing) and writes each output array's bytes into the region; the grader copies them out,
bounds and dtypes checked, before its clocks stop. Through the pipe every byte was copied
several times each way (encode, write, read, decode) and once more onto the device, costs that
are the same for the reference and the student and so pulled every ratio towards 1: the
reference `histogram` (2**20 values) went from 3.1 ms to 1.8 ms of CPU per round, `bce_fast`
from 7.6 to 2.8 ms, with the calls themselves unchanged. A worker without a region (no memfd) gets the inputs inline.

Two clocks, both the grader's: wall time, and the CPU time the kernel accounts to the worker's
cgroup (`WorkerProcess.cpu_seconds`: every thread and process that ran in it, ended ones included;
None where the machine gives no cgroup, and the wall clock decides). A student process that
fakes `time.perf_counter` changes neither; the inputs are fresh for every round, so memoising
outputs gains nothing. A thread that polls the region sees a round's inputs only inside that
round's window (the region of the reference, timed while the student's worker is frozen, is
another memfd, never handed to the student's worker), so what it computes is timed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from jaxlings.grading import replies
from jaxlings.grading.spec import Case
from jaxlings.isolation import WorkerProcess
from jaxlings.worker import shm


@dataclass(frozen=True)
class Timed:
    """One timed workload: its wall and CPU time (inputs in to outputs held), its outputs; or,
    for a round on a device, the digest of its outputs (`digest`), which stay in the worker."""

    seconds: float
    cpu_seconds: float | None
    outs: list[dict[str, Any]]
    digest: list[int] | None = None


class CallFailed(Exception):
    """The worker did not complete the call: `reason` says why (error, malformed reply).

    `error` is the exception the worker reported (type, message, where), when it reported one.
    """

    def __init__(self, reason: str, error: dict[str, str] | None = None) -> None:
        super().__init__(reason)
        self.error = error


def timed_request(
    worker: WorkerProcess, op: str, timeout: float, *, inputs: Any = None, **fields: Any
) -> tuple[dict[str, Any], float, float | None]:
    """Send one request and time it to its checked reply: (reply, wall seconds, CPU seconds).

    `inputs` (a request field: the case arguments) is written into the worker's shared region
    once the clocks run (`jaxlings.worker.shm`), or sent inline where it has none or they do
    not fit; the outputs the reply places in the region are copied out before the clocks stop.
    Raises `WorkerDied` if the worker goes away, `CallFailed` if it reports an error or its
    reply does not fit the schema of `op` (the worker is then stopped: it may be out of step).
    """
    region = getattr(worker, "region", None)
    cpu0 = worker.cpu_seconds(settled=True)
    t0 = time.perf_counter()  # before writing the inputs: the window covers every moment the worker may see them
    placed = region.place(inputs) if region is not None and inputs is not None else None
    if placed is not None and region is not None:
        fields.update(cases=placed[0], shm=[placed[1], region.size])
    elif inputs is not None:
        fields["cases"] = inputs
    reply = worker.request(op, timeout, **fields)
    try:
        if placed is not None and region is not None:
            _copy_out(worker, op, fields.get("fn"), region, placed[1], reply)
        replies.check(op, reply)
    except (replies.MalformedReply, shm.Malformed) as exc:
        worker.kill(f"sent a malformed reply ({exc})")
        raise CallFailed(f"the worker's reply was malformed: {exc}") from None
    seconds = time.perf_counter() - t0
    cpu1 = worker.cpu_seconds(settled=True)
    if not reply["ok"]:
        err = reply["error"]
        raise CallFailed(f"{err['type']}: {err['message']}", err)
    return reply, seconds, None if cpu0 is None or cpu1 is None else cpu1 - cpu0


def _copy_out(worker: WorkerProcess, op: str, fn: Any, region: shm.Region, start: int, reply: Any) -> None:
    """Copy a reply's outputs out of the region (`_take_outputs`), at most as many bytes as the
    worker's reply to `op` on `fn` may weigh (`WorkerProcess.bound_for`: for a student, twice
    the reference's, plus 1 MiB), and record the bytes copied as the reply's weight: the
    reference's copies set the student's bound, as its inline replies do."""
    bound = worker.bound_for(op, fn) if worker.bound_for is not None else None
    copied = _take_outputs(region, start, reply, None if bound is None else bound.frame)
    frame, header = worker.reply_sizes.get((op, fn), (0, 0))
    worker.reply_sizes[(op, fn)] = (max(frame, copied), header)


def _take_outputs(region: shm.Region, start: int, reply: Any, max_bytes: int | None = None) -> int:
    """Replace every output leaf's reference into the region by a copy of its bytes (the
    grader's own, which the worker cannot change after), and return the bytes copied. Every
    reference is read (bounds, dtype, shape) before anything is copied: they must follow one
    another without overlap, from `start` on, and total at most `max_bytes` (else the region's
    size); one that does not raises `shm.Malformed` and nothing is copied. Anything else
    malformed is left for `replies.check` to reject."""
    refs = []
    outs = reply.get("outs") if isinstance(reply, dict) else None
    for out in outs if isinstance(outs, list) else ():
        leaves = out.get("leaves") if isinstance(out, dict) else None
        for leaf in leaves if isinstance(leaves, list) else ():
            if isinstance(leaf, dict) and isinstance(leaf.get("data"), dict):
                refs.append(leaf)
    spans = region.spans([leaf["data"] for leaf in refs], start)
    total = sum(nbytes for _, nbytes in spans)
    if max_bytes is not None and total > max_bytes:
        raise shm.Malformed(f"outputs of {total} bytes in the shared region, past the {max_bytes} bytes allowed")
    for leaf in refs:
        leaf["data"] = region.copy(leaf["data"])
    return total


def timed_call(
    worker: WorkerProcess,
    fn: str,
    cases: list[Case],
    *,
    jit: bool,
    static_argnums: tuple[int, ...],
    timeout: float,
    operators: bool = False,
) -> Timed:
    """Time `fn` on all of `cases`, one call after another, inputs in to outputs held."""
    reply, seconds, cpu = timed_request(
        worker,
        "timed",
        timeout,
        inputs=[c.args for c in cases],
        fn=fn,
        jit=jit,
        static_argnums=static_argnums,
        operators=operators,
    )
    if len(reply["outs"]) != len(cases):
        worker.kill("sent a malformed reply")
        raise CallFailed(f"the worker's reply was malformed: {len(reply['outs'])} outputs for {len(cases)} calls")
    return Timed(seconds, cpu, reply["outs"])


def committed_round(
    worker: WorkerProcess,
    fn: str,
    *,
    jit: bool,
    static_argnums: tuple[int, ...],
    timeout: float,
    salt: int,
    cases: list[Case] | None = None,
    generate: dict[str, Any] | None = None,
) -> Timed:
    """Time one round on a device: its inputs sent (`cases`, through the shared region once the
    clocks run) or made on the device from the round's key (`generate`, `jaxlings.grading.workloads`),
    the calls run, and the reply holding only the outputs' digest under `salt`
    (`jaxlings.worker.commit`), computed on the device from the outputs: the clocks stop when
    the grader holds it. The outputs stay in the worker (`keep`, then `outputs(worker, "fetch")`)."""
    fields: dict[str, Any] = {"fn": fn, "jit": jit, "static_argnums": static_argnums, "commit": salt}
    if generate is not None:
        fields["generate"] = generate
    inputs = [c.args for c in cases] if cases is not None else None
    reply, seconds, cpu = timed_request(worker, "timed", timeout, inputs=inputs, **fields)
    if "digest" not in reply:
        worker.kill("sent a malformed reply")
        raise CallFailed("the worker's reply was malformed: no digest for a round on the device")
    return Timed(seconds, cpu, [], reply["digest"])


def outputs(worker: WorkerProcess, op: str, timeout: float, **fields: Any) -> dict[str, Any]:
    """A request whose reply carries outputs (`fetch`: a committed round's; `round`: a round
    computed untimed), their bytes through the worker's shared region where it has one; the
    reply, its outputs copied out and checked. Raises WorkerDied, or CallFailed (an error, a
    malformed reply: the worker is then stopped)."""
    region = getattr(worker, "region", None)
    if region is not None:
        fields["shm"] = [0, region.size]
    reply = worker.request(op, timeout, **fields)
    try:
        if region is not None:
            _copy_out(worker, op, fields.get("fn"), region, 0, reply)
        replies.check(op, reply)
    except (replies.MalformedReply, shm.Malformed) as exc:
        worker.kill(f"sent a malformed reply ({exc})")
        raise CallFailed(f"the worker's reply was malformed: {exc}") from None
    if not reply["ok"]:
        err = reply["error"]
        raise CallFailed(f"{err['type']}: {err['message']}", err)
    return reply

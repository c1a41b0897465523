"""Timing a workload of a worker's function with the grader's own clocks.

One timed workload is ONE request, `timed`: it carries the inputs, and the reply carries the
outputs, materialised as arrays (see `Harness.op_timed`). The clocks run from just before the
request is sent to just after its reply has been received, decoded and checked against the
reply schema: every moment the worker holds the inputs and has not yet handed over the outputs
is inside the window, so work done while "staging", in a lazy output's conversion, or in a
thread that ends before the reply, is counted. The values are compared with the reference's
right after, on data the worker can no longer change.

Two clocks, both the grader's: wall time, and the CPU time the kernel accounts to the worker's
cgroup (`Worker.cpu_seconds`: every thread and process that ran in it, ended ones included;
None where the machine gives no cgroup, and the wall clock decides). A student process that
fakes `time.perf_counter` changes neither; the inputs are fresh for every round, so memoising
outputs gains nothing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from autograder import replies
from autograder.sandbox import Worker
from autograder.spec import Case


@dataclass(frozen=True)
class Timed:
    """One timed workload: its wall and CPU time (inputs in to outputs held), its outputs."""

    seconds: float
    cpu_seconds: float | None
    outs: list[dict[str, Any]]


class CallFailed(Exception):
    """The worker did not complete the call: `reason` says why (error, malformed reply).

    `error` is the exception the worker reported (type, message, where), when it reported one.
    """

    def __init__(self, reason: str, error: dict[str, str] | None = None) -> None:
        super().__init__(reason)
        self.error = error


def timed_request(worker: Worker, op: str, timeout: float, **fields: Any) -> tuple[dict[str, Any], float, float | None]:
    """Send one request and time it to its checked reply: (reply, wall seconds, CPU seconds).

    Raises `WorkerDied` if the worker goes away, `CallFailed` if it reports an error or its
    reply does not fit the schema of `op` (the worker is then stopped: it may be out of step).
    """
    cpu0 = worker.cpu_seconds()
    t0 = time.perf_counter()  # before sending: a grader descheduled after the send must not shorten the call
    reply = worker.request(op, timeout, **fields)
    try:
        replies.check(op, reply)
    except replies.MalformedReply as exc:
        worker.kill(f"sent a malformed reply ({exc})")
        raise CallFailed(f"the worker's reply was malformed: {exc}") from None
    seconds = time.perf_counter() - t0
    cpu1 = worker.cpu_seconds()
    if not reply["ok"]:
        err = reply["error"]
        raise CallFailed(f"{err['type']}: {err['message']}", err)
    return reply, seconds, None if cpu0 is None or cpu1 is None else cpu1 - cpu0


def timed_call(worker: Worker, fn: str, cases: list[Case], *, jit: bool, static_argnums: tuple[int, ...],
               timeout: float, operators: bool = False) -> Timed:
    """Time `fn` on all of `cases`, one call after another, inputs in to outputs held."""
    reply, seconds, cpu = timed_request(worker, "timed", timeout, fn=fn, cases=[c.args for c in cases], jit=jit,
                                        static_argnums=static_argnums, operators=operators)
    if len(reply["outs"]) != len(cases):
        worker.kill("sent a malformed reply")
        raise CallFailed(f"the worker's reply was malformed: {len(reply['outs'])} outputs for {len(cases)} calls")
    return Timed(seconds, cpu, reply["outs"])


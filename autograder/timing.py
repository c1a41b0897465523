"""Timing one call of a worker's function with the grader's own clock.

Protocol, per timed call: `stage` (the worker puts the inputs on the device; untimed, but its
duration is kept), then `go`, timed here from sending the request to receiving the reply, then
`fetch` (the output, for verification). Two clocks run over `go`, both the grader's: wall
time, and the CPU time the kernel accounts to the worker's process tree. A student process
that fakes `time.perf_counter` changes neither; the inputs are new to the worker at `stage`,
so memoising outputs gains nothing; and the fetched output is compared with the reference's.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from autograder.sandbox import Worker
from autograder.spec import Case


@dataclass(frozen=True)
class Timed:
    """One timed workload: its wall and CPU time, the time its inputs took to stage, its outputs."""

    seconds: float
    cpu_seconds: float | None
    stage_seconds: float
    outs: list[dict[str, Any]]


class CallFailed(Exception):
    """The worker did not complete the call: `reason` says why (time-out, crash, error).

    `error` is the exception the worker reported (type, message, where), when it reported one.
    """

    def __init__(self, reason: str, error: dict[str, str] | None = None) -> None:
        super().__init__(reason)
        self.error = error


def timed_call(worker: Worker, fn: str, cases: list[Case], *, jit: bool, static_argnums: tuple[int, ...], timeout: float) -> Timed:
    """Stage `cases`, time `fn` on all of them, one after another, and fetch the outputs."""
    common = {"fn": fn, "jit": jit, "static_argnums": static_argnums}
    t0 = time.perf_counter()
    _expect_ok(worker.request("stage", timeout, cases=[c.args for c in cases], **common))
    staged = time.perf_counter() - t0
    cpu0 = worker.cpu_seconds()
    t0 = time.perf_counter()  # before sending: a grader descheduled after the send must not shorten the call
    worker.send("go")
    reply = worker.receive(timeout, "the timed call")
    seconds = time.perf_counter() - t0
    cpu1 = worker.cpu_seconds()
    _expect_ok(reply)
    outs = _expect_ok(worker.request("fetch", timeout))["outs"]
    return Timed(seconds, None if cpu0 is None or cpu1 is None else cpu1 - cpu0, staged, outs)


def _expect_ok(reply: dict[str, Any]) -> dict[str, Any]:
    if not reply["ok"]:
        err = reply["error"]
        raise CallFailed(f"{err['type']}: {err['message']}", err)
    return reply

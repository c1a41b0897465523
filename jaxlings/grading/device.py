"""The grading machine's accelerator, and the rule that one process holds it at a time.

A TPU chip is held by one process: a second one fails at start ("libtpu multi-process
lockfile"), and opening it costs 8.5 to 15 s per process (shared/JAX_NOTES.md). On a GPU one
holder keeps timing fair. So where the grading machine has an accelerator (`resolve`: detected,
or named by `JAXLINGS_DEVICE` / `grade grade --device`), the grader
- starts every worker that does not need it on the host's CPU (`Device.env(on_device=False)`:
  the trusted analysis of exported programs, the reference's answers, the topics whose spec
  says `platform="cpu"`);
- starts at most one worker on it at a time, each under the machine-wide `Lease`, and as few as
  it can: one trusted process for the reference's timed work of every topic, then one student
  process for every topic (`jaxlings.grading.device_grading`).

`exclusive` plays the same rules on a machine without an accelerator, with the CPU as the
device: the tests' way to run them (CI has no accelerator). Its device workers also take a
lock of their own when they start (`Device.lock`, handed to `WorkerProcess(device_lock=...)`;
`jaxlings.worker.harness`), as libtpu does, so a second holder fails loudly there as it would
on a TPU.

Every lease is recorded (`Lease.holders`: who, when, for how long): a result carries them
(`extra_data.device`), so the number of opens per submission is counted, not estimated.
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import importlib.util
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from jaxlings.worker import commit

SETTING_ENV = "JAXLINGS_DEVICE"
SETTINGS = ("auto", "cpu", "exclusive", "tpu", "gpu")
MATMUL_PRECISION = "highest"
"""float32 matrix products on an accelerator, both sides alike: a TPU's default runs them in
one bfloat16 pass (about 3 digits against float64; 'highest': about 7)."""
TOLERANCE = {"tpu": (5e-4, 2e-4), "gpu": (1e-5, 1e-6)}
"""The least (rtol, atol) a float output computed on each accelerator is compared with the
reference's on the CPU at (an exercise's own tolerance where larger): at 'highest', a TPU's
matrix products agree with float64 to about 7 digits, but its exp, log, tanh and erf to 4 or 5
(shared/JAX_NOTES.md); a GPU's float32 is IEEE's, its transcendentals within a few ulps.
The TPU's atol: the reference graded on a TPU v5e was off by up to 5.9e-5 where the expected
value is near zero (`autodiff.tall_jacobian`, `autodiff.per_example_grads`: products of tanh's
outputs that cancel; benchmarks/results/2026-12-07-tpu-v5e-grading-6.md), so 5e-5 failed it.
Provisional: `benchmarks/device_survey.py` measures the reference on the device against the
CPU, case by case (its runs: benchmarks/results/)."""
SERIAL_BITS = {"JAX_THREEFRY_PARTITIONABLE": "false"}
"""Hidden grading on an accelerator draws random bits in JAX's serial threefry layout, on every
worker of the grading (the device's and the host's alike, so both sides draw the same bits):
a TPU compiles the default, partitionable layout slowly (`prng.monte_carlo_pi` at its TPU
size: 39.7 s against 5.3 s serial; 23.1 s against 5.3 s at an eighth of it,
`benchmarks/compile_probe.py`), and every grading compiles the student's function anew. Public
checks keep JAX's default: their expectations were recorded with it."""
BACKENDS = {"tpu": "tpu,cpu", "gpu": "cuda,cpu"}
"""JAX_PLATFORMS for a worker on each kind of accelerator (the CPU too: the host's, for
programs exported for it)."""


class DeviceError(Exception):
    """A device setting that cannot be honoured here; the message says what to do."""


@dataclass
class Lease:
    """One holder of the device at a time: an exclusive `flock` on `path`, held by the grader
    from before a device worker starts until it is gone (`held`). Graders on one machine share
    the file, so two of them never open a chip at once either. `holders` records each lease."""

    path: Path
    holders: list[dict[str, Any]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @contextlib.contextmanager
    def held(self, who: str) -> Iterator[None]:
        """Hold the device for `who` (a worker about to start, and live until the block ends)."""
        with self._lock:
            fd = os.open(self.path, os.O_RDONLY | os.O_CREAT, 0o666)  # read-only: any user's grader may lock it
            try:
                waited = time.monotonic()
                fcntl.flock(fd, fcntl.LOCK_EX)
                started = time.monotonic()
                try:
                    yield
                finally:
                    self.holders.append(
                        {
                            "who": who,
                            "waited": round(started - waited, 3),
                            "started": started,
                            "ended": time.monotonic(),
                        }
                    )
                    fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)


@dataclass
class Device:
    """The accelerator a grading runs its device topics on: `kind` "tpu" or "gpu", or "cpu" in
    the exclusive mode (the CPU played as a device). `lease` sequences its holders;
    `lock` is the exclusive mode's stand-in for the chip's own lock. `serial_bits`: every worker
    draws random bits in the serial layout (`SERIAL_BITS`; `for_hidden`). `generates`: speed rounds
    make their inputs on the device where the exercise gives a generator (`jaxlings.grading.workloads`):
    on an accelerator, where sending them would time their transfer; not on the CPU, whose
    device is its host (nothing to transfer; making them costs a CPU more than most functions).
    `compiles_ahead`: the student's speed-checked functions are compiled in their process on the
    device as soon as it opens (`device_grading.compile_ahead`)."""

    kind: str
    lease: Lease
    lock: Path | None = None
    generates: bool = True
    serial_bits: bool = False
    compiles_ahead: bool = True

    @property
    def backend(self) -> str:
        """JAX's name for the device's platform ("tpu", "gpu", "cpu")."""
        return self.kind

    @property
    def accelerator(self) -> bool:
        """Whether it is a real accelerator (not the exclusive mode's CPU)."""
        return self.kind != "cpu"

    @property
    def platforms(self) -> tuple[str, ...]:
        """What a program that runs on the device and on the host's CPU is exported for."""
        return (self.backend,) if self.backend == "cpu" else (self.backend, "cpu")

    def for_hidden(self) -> Device:
        """The device as hidden grading uses it: on an accelerator, with `serial_bits`."""
        return replace(self, serial_bits=self.serial_bits or self.accelerator)

    def env(self, on_device: bool) -> dict[str, str]:
        """The variables of a worker on the device (`on_device`) or on the host's CPU."""
        bits = SERIAL_BITS if self.serial_bits else {}
        if not on_device or not self.accelerator:
            return {"JAX_PLATFORMS": "cpu", **bits}
        # the outputs' digest's first level as a kernel on a TPU (both sides alike), unless the
        # grader's environment turns it off (0) or asks for its folding stages as a kernel too (2)
        wanted = os.environ.get(commit.KERNEL_ENV)
        kernel = {commit.KERNEL_ENV: "2" if wanted == "2" else "1"} if self.kind == "tpu" and wanted != "0" else {}
        return {
            "JAX_PLATFORMS": BACKENDS[self.kind],
            "JAX_DEFAULT_MATMUL_PRECISION": MATMUL_PRECISION,
            **bits,
            **kernel,
        }

    def summary(self) -> dict[str, Any]:
        """The device's entry in a result's `extra_data`: its kind and each lease (the opens),
        `at` and `until` in seconds from the first, both rounded from the clock (so one lease's
        `until` is never after the next one's `at`), `seconds` their difference."""
        first = min((h["started"] for h in self.lease.holders), default=0.0)
        return {
            "kind": self.kind,
            "opens": len(self.lease.holders),
            "holders": [_span(h, first) for h in self.lease.holders],
        }


def _span(holder: dict[str, Any], first: float) -> dict[str, Any]:
    """One lease as `summary` reports it."""
    at, until = round(holder["started"] - first, 3), round(holder["ended"] - first, 3)
    return {"who": holder["who"], "at": at, "until": until, "seconds": round(until - at, 3), "waited": holder["waited"]}


def tolerance(kind: str) -> tuple[float, float]:
    """The least (rtol, atol) for outputs computed on an accelerator of `kind` (`TOLERANCE`)."""
    return TOLERANCE.get(kind, (0.0, 0.0))


def detect() -> str | None:
    """The accelerator this machine has, read without opening it: "tpu" (a TPU's device files
    and libtpu installed), "gpu" (NVIDIA's device files and JAX's CUDA plugin), or None. A
    grader whose own JAX_PLATFORMS is "cpu" has none."""
    if os.environ.get("JAX_PLATFORMS", "").strip().lower() == "cpu":
        return None
    tpu_files = glob.glob("/dev/accel[0-9]*") + glob.glob("/dev/vfio/[0-9]*")
    if tpu_files and importlib.util.find_spec("libtpu") is not None:
        return "tpu"
    cuda = ("jax_cuda12_plugin", "jax_cuda13_plugin")
    if glob.glob("/dev/nvidia[0-9]*") and any(importlib.util.find_spec(name) for name in cuda):
        return "gpu"
    return None


def resolve(setting: str | None = None) -> Device | None:
    """The device for a grading, from `setting` (else `JAXLINGS_DEVICE`, else "auto"): "auto"
    (the accelerator `detect` finds, or none), "cpu" (none: every worker on the CPU, as on a
    machine without one), "exclusive" (the CPU as a device: tests), "tpu" or "gpu" (that one,
    as the operator says). None: no device, the grading as on a plain CPU."""
    setting = (setting or os.environ.get(SETTING_ENV) or "auto").strip().lower()
    if setting not in SETTINGS:
        raise DeviceError(f"the device setting must be one of {', '.join(SETTINGS)}, not {setting!r}")
    kind = detect() if setting == "auto" else setting
    if kind in (None, "cpu"):
        return None
    if kind == "exclusive":
        folder = Path(tempfile.mkdtemp(prefix="jaxlings-device-"))
        return Device("cpu", Lease(folder / "lease"), folder / "chip", generates=False)
    return Device(kind, Lease(Path(tempfile.gettempdir()) / f"jaxlings-{kind}.lease"))

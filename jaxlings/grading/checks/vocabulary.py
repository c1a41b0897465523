"""`Words`: what a check's `describe` may ask of the text it is written into.

A check describes itself (`Check.describe`) in the words of the exercise it grades: its
arguments by name, its cases, its workload, footnotes for the exact figures. The course builder
supplies those words (`jaxlings.course.graded.Context` writes the docstrings' "Graded:"
lists); the checks see only this protocol, so the grading core never imports the builder.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from jaxlings.grading.spec import StreamSampler


class Workload(Protocol):
    """What a description reads of a timed workload (`checks.speed.Speed` is one): its size per
    backend, and the stream of calls it times, if any."""

    @property
    def stream(self) -> StreamSampler | None:
        """The calls a round times, in order, or None for one call on the exercise's sample."""
        ...

    def size_for(self, backend: str) -> int:
        """The workload's size on `backend` ("cpu", "gpu", "tpu")."""
        ...


class Words(Protocol):
    """The phrases a check's description is built from (see the module docstring)."""

    decorated: bool
    """Whether the task's own `jax.jit` decorates the function (the grader jits nothing more)."""

    def note(self, text: str) -> str:
        """A footnote holding `text`; returns its marker ("¹"), one marker per distinct text."""
        ...

    def arg(self, i: int) -> str:
        """Argument `i` by its parameter name: "`n`"."""
        ...

    def args(self, idx: Sequence[int]) -> str:
        """Several arguments by name: "`x` and `n`"."""
        ...

    def jitted(self, jit: bool, *, stream: bool = False, note: str = "") -> str:
        """How a check calls the function: jitted by the grader, or as written."""
        ...

    def outputs(self) -> str:
        """The outputs as the docstring names them: "`init_key` and `step_keys`"."""
        ...

    def equal(self) -> str:
        """ "`a` and `b` equal", "the output equals"."""
        ...

    def tolerance(self, rtol: float, atol: float) -> str:
        """The tolerance of float outputs, as a footnote marker."""
        ...

    def num(self, x: float) -> str:
        """A number to the vocabulary's significant digits."""
        ...

    def cases(self) -> str:
        """The cases `correct` runs: "on 2 edge cases (...) and 4 random cases"."""
        ...

    def case_args(self, size: int) -> str:
        """One sampled case at `size`, by argument: "`x` int32[2**20], `nbins` 256"."""
        ...

    def workload(self, speed: Workload) -> str:
        """The speed workload on a CPU, and what differs on an accelerator."""
        ...

    def requirements(self, requirements: Sequence[Any]) -> str:
        """The requirements' descriptions, scored ones first, advice last."""
        ...

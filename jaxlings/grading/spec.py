"""The vocabulary of a topic spec: what a topic module in `jaxlings/specs/` declares.

A spec is trusted data that lives in the grader's process. It never imports a solution: the
reference runs in a separate process, and the spec only says how to build inputs (with NumPy,
from a seeded generator), how to compare outputs, what structure the compiled function must
have, how to time it, what each check is worth, and how to hint.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from jaxlings.grading import device, options
from jaxlings.grading.check import Check, SpecError, ordered
from jaxlings.worker.wire import Key  # noqa: F401 - topic specs build key arguments with it


@dataclass(frozen=True)
class Case:
    """One call of an exercise: positional arguments (NumPy arrays, Python scalars, `Key`s).

    NumPy arrays reach the student's function as `jax.Array`s; Python scalars stay Python
    scalars (so that they can be static). `hidden` cases are left out of `grade check`.
    """

    args: tuple[Any, ...]
    label: str = ""
    hidden: bool = False


Sampler = Callable[[np.random.Generator, int], Case]
StreamSampler = Callable[[np.random.Generator, int], list[Case]]


class NotPublished(Exception):
    """A sampler of a public spec was called: public specs ship without their samplers, and a
    public run draws its inputs from the recording (`jaxlings.public`)."""


NAMED_EXAMPLE = ("the docstring's ", "the tutorial's ")
"""How the label of an edge whose public instance is one named example begins (`Edge.hidden_label`)."""


@dataclass(frozen=True)
class Edge:
    """An edge case as a family: one edge (ties, zeros, a single element, the docstring's
    example's structure) over many instances.

    A public run grades `public` (its reference answer ships with the public expectations); a
    hidden run grades `make(rng)`, drawn from the run's own generator, under `hidden_label`,
    and never the public instance itself (`draw` redraws an equal one). So an
    answer that ships, hard-coded for its input, gains nothing in hidden grading. `make` returns
    a `Case` (its label is ignored); every instance it draws must keep the edge's property (ties
    stay exact ties: draw integers or exactly representable floats). An edge with one instance
    only stays a plain `Case`.
    """

    public: Case
    make: Callable[[np.random.Generator], Case]

    @property
    def label(self) -> str:
        return self.public.label

    @property
    def hidden_label(self) -> str:
        """The label of a hidden instance: the public label, or, where that names one particular
        input ("the docstring's example", "the tutorial's mask example"), "a case like" it, so
        that a message about a drawn instance does not send the student to an example their
        function may well pass."""
        return f"a case like {self.label}" if self.label.startswith(NAMED_EXAMPLE) else self.label

    @property
    def hidden(self) -> bool:
        """Never a hidden-only case: its public instance is graded in public runs."""
        return False

    def draw(self, rng: np.random.Generator, tries: int = 50) -> Case:
        """One hidden instance: `make(rng)` under `hidden_label`, redrawn while it equals the
        public instance."""
        for _ in range(tries):
            args = self.make(rng).args
            if not same_args(args, self.public.args):
                return Case(args, self.hidden_label)
        raise ValueError(f"edge case {self.label!r}: its family drew only its public instance in {tries} tries")


def same_args(a: Any, b: Any) -> bool:
    """Whether two cases' arguments are the same call: equal structure, types, dtypes, shapes
    and values (NaN equal to NaN)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        return a.dtype == b.dtype and a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    if type(a) is not type(b):
        return False
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(same_args(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_args(a[k], b[k]) for k in a)
    if isinstance(a, np.generic):
        return same_args(np.asarray(a), np.asarray(b))
    return a == b or (a != a and b != b)


@dataclass(frozen=True)
class Exercise:
    """One function the student writes, and everything the grader checks about it.

    `sample(rng, size)` builds one random case; its shapes must depend on `size` only, so two
    samples of one size are "same-shaped inputs" for the re-tracing check. `checks` are the
    check objects that grade it, each with its points and options (`jaxlings.grading.checks`:
    `Correct(2)`, `Jit(1, requirements=...)`, `Speed(2, size=...)`, ...); a check not listed is
    not run. `edge_cases`: `Edge` families (public runs grade their public instance, hidden runs
    a fresh one) and plain `Case`s (graded as they are; `hidden` ones in hidden runs only).
    `operator_outputs`: the function returns quantum operators (NetKet's), which the workers
    send as their matrices; any other output leaf must be an array or a number.
    `outputs`: the names of the returned tuple's entries, as the docstring calls them
    (`("init_key", "step_keys")`): messages and the generated "Graded" list name the outputs so
    (dict keys and dataclass fields name themselves; see `jaxlings.grading.compare`).
    `accelerator_tolerance`: the least (rtol, atol) on an accelerator kind ("tpu", "gpu") where
    the exercise's outputs differ from the CPU's by more than `device.TOLERANCE` allows (an
    error that accumulates: a random walk's draws), with the measurement that says so.
    """

    name: str
    sample: Sampler
    checks: tuple[Check, ...]
    hints: tuple[str, ...]
    sizes: tuple[int, ...] = (1, 3, 17, 100)
    edge_cases: tuple[Case | Edge, ...] = ()
    rtol: float = 1e-6
    atol: float = 1e-6
    static_argnums: tuple[int, ...] = ()
    operator_outputs: bool = False
    outputs: tuple[str, ...] = ()
    accelerator_tolerance: dict[str, tuple[float, float]] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.checks, tuple) or not all(isinstance(c, Check) for c in self.checks):
            raise SpecError(
                f"{self.name}: `checks` must be a tuple of check objects (e.g. `(Correct(2), Jit(1))`), "
                f"not {type(self.checks).__name__}"
            )
        if found := options.first_problem(self, {"Check": Check}):
            raise SpecError(f"{self.name}: option {found[0]!r} {found[1]}")
        if len(self.hints) < 2:
            raise SpecError(f"{self.name}: give at least two progressive hints")
        if unknown := set(self.accelerator_tolerance) - set(device.TOLERANCE):
            raise SpecError(
                f"{self.name}: `accelerator_tolerance` names {sorted(unknown)}; its kinds are "
                f"{' and '.join(repr(kind) for kind in device.TOLERANCE)}"
            )
        names = [c.name for c in self.checks]
        if len(set(names)) != len(names):
            raise SpecError(f"{self.name}: a check is listed twice ({', '.join(names)})")
        for check in self.checks:
            missing = [r for r in check.requires if r not in names]
            if missing:
                raise SpecError(
                    f"{self.name}: the {check.name} check requires {', '.join(missing)}, which the "
                    "exercise does not have"
                )
            try:
                check.fits(self)
            except SpecError as exc:
                raise SpecError(f"{self.name}: {exc}") from None
        ordered(self.checks)

    def at_least(self, rtol: float, atol: float) -> Exercise:
        """This exercise with its tolerances, and those of its checks that have their own
        (`Grad`), raised to at least `rtol` and `atol` (outputs computed on an accelerator,
        compared with the reference's on the CPU: `device.TOLERANCE`, `accelerator_tolerance`)."""
        checks = tuple(
            replace(c, rtol=max(c.rtol, rtol), atol=max(c.atol, atol))  # type: ignore[call-arg]  # `Grad`'s own
            if hasattr(c, "rtol") and hasattr(c, "atol")
            else c
            for c in self.checks
        )
        return replace(self, rtol=max(self.rtol, rtol), atol=max(self.atol, atol), checks=checks)

    def on_accelerator(self, kind: str) -> Exercise:
        """This exercise as graded on an accelerator of `kind`: its tolerances at least the
        device's (`device.TOLERANCE`) and its own for that kind (`accelerator_tolerance`)."""
        return self.at_least(*device.tolerance(kind)).at_least(*self.accelerator_tolerance.get(kind, (0.0, 0.0)))

    def check(self, name: str) -> Check | None:
        """The exercise's check called `name`, or None."""
        return next((c for c in self.checks if c.name == name), None)

    @property
    def points(self) -> float:
        """All its checks' points (advisory ones are worth none)."""
        return sum(c.points for c in self.checks)

    def cases(self, rng: np.random.Generator, public: bool) -> list[Case]:
        """The cases of one grading run: the edge cases, then one random case per size.

        A public run grades each `Edge`'s public instance; a hidden run draws each `Edge`'s
        instance from `rng` (after the random cases, so that these stay the same in both runs
        of one generator), never the public one. Plain `Case`s are graded as they are, and
        `hidden` ones in hidden runs only."""
        drawn = [self.sample(rng, s) for s in self.sizes]
        edge = [
            c if isinstance(c, Case) else c.public if public else c.draw(rng)
            for c in self.edge_cases
            if not (public and c.hidden)
        ]
        return edge + [Case(c.args, c.label or f"random case, size {s}", c.hidden) for c, s in zip(drawn, self.sizes)]


PLATFORMS = ("accelerator", "cpu")
"""Where a topic's functions run on a grading machine with an accelerator (`Topic.platform`)."""


def check_platform(owner: str, platform: str, reason: str, what: str) -> None:
    """SpecError unless `platform` is one of PLATFORMS and, when it is "cpu", `reason` says why.
    `owner` starts the message (a topic's name, a check's); `what` names the reason's field."""
    if platform not in PLATFORMS:
        raise SpecError(f"{owner}: platform must be one of {', '.join(PLATFORMS)}, not {platform!r}")
    if platform == "cpu" and not reason:
        raise SpecError(f"{owner}: graded on the CPU on a machine with an accelerator, it says why ({what})")


@dataclass(frozen=True)
class Topic:
    """A topic: its exercises in order, and how its worker processes must be set up.

    `env` is added to the environment of both worker processes before JAX is imported (for
    example the XLA flag that fakes 8 CPU devices for sharding). `time_limit` bounds the
    wall time of the whole topic for one submission, in seconds.

    `platform` is where the student's functions run on a grading machine with an accelerator:
    "accelerator" (on it: the default), or "cpu" (on the host's CPU, with `platform_reason`
    saying why: float64 work, which a TPU refuses, or many devices). On a machine without one,
    every topic runs on the CPU (`jaxlings.grading.device`).
    """

    name: str
    title: str
    exercises: tuple[Exercise, ...]
    env: dict[str, str] = field(default_factory=dict)
    time_limit: float = 600.0
    platform: str = "accelerator"
    platform_reason: str = ""

    def __post_init__(self) -> None:
        check_platform(self.name, self.platform, self.platform_reason, "platform_reason")
        if self.platform == "accelerator" and self.env:
            raise SpecError(
                f"{self.name}: a topic with its own environment ({', '.join(self.env)}) cannot share the "
                'accelerator\'s one process with the others: give it platform="cpu"'
            )

    def exercise(self, name: str) -> Exercise:
        """The exercise called `name`; KeyError naming the topic's exercises otherwise."""
        for ex in self.exercises:
            if ex.name == name:
                return ex
        raise KeyError(
            f"topic {self.name!r} has no exercise {name!r}; it has {', '.join(e.name for e in self.exercises)}"
        )

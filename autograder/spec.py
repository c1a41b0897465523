"""The vocabulary of a topic spec: what a topic module in `autograder/topics/` declares.

A spec is trusted data that lives in the grader's process. It never imports a solution: the
reference runs in a separate process, and the spec only says how to build inputs (with NumPy,
from a seeded generator), how to compare outputs, what structure the compiled function must
have, how to time it, what each check is worth, and how to hint.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from autograder.requirements import Requirement
from autograder.worker.wire import Key  # noqa: F401 - topic specs build key arguments with it




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


@dataclass(frozen=True)
class Edge:
    """An edge case as a family: one edge (ties, zeros, a single element, the docstring's
    example's structure) over many instances.

    A public run grades `public` (its reference answer ships with the public expectations); a
    hidden run grades `make(rng)`, drawn from the run's own generator, under the public
    instance's label, and never the public instance itself (`draw` redraws an equal one). So an
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
    def hidden(self) -> bool:
        """Never a hidden-only case: its public instance is graded in public runs."""
        return False

    def draw(self, rng: np.random.Generator, tries: int = 50) -> Case:
        """One hidden instance: `make(rng)` with the public instance's label, redrawn while it
        equals the public instance."""
        for _ in range(tries):
            args = self.make(rng).args
            if not same_args(args, self.public.args):
                return Case(args, self.label)
        raise ValueError(f"edge case {self.label!r}: its family drew only its public instance in {tries} tries")


def same_args(a: Any, b: Any) -> bool:
    """Whether two cases' arguments are the same call: equal structure, types, dtypes, shapes
    and values (NaN equal to NaN)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        return a.dtype == b.dtype and a.shape == b.shape and bool(
            np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
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
class Speed:
    """How the speed check times an exercise against the reference.

    `size` (per backend: "cpu", "gpu", ...) is passed to the exercise's sampler to build a
    workload big enough that one call costs far more than dispatch (about 70 us on the grading
    GPU, 10 us on a CPU) and than the rest of the timed window (the request, the inputs' views
    and the outputs' copies: about 1 ms of CPU time per round here), so that twice the
    reference's work reads well past `full` (`benchmarks/speed_stability.py`). Points: full at
    `ratio <= full`, none at `ratio >= zero`, and
    log-linear in between. The check times at least `min_reps` rounds, and more (up to
    `max_reps`) while the reference's share of the timed work stays under `budget` seconds:
    the more rounds, the surer the best time. Past `min_reps` it stops as soon as the verdict
    is decided with `margin` to spare: a best-time ratio at or under `full / margin` (full
    marks), or at or over `zero * margin` (none). So `budget` is only ever spent on an
    undecided ratio, near a band's edge, where more rounds matter most: a right function
    usually stops at `min_reps` (3 s was 1 s until a reference timed against itself read x1.59
    on `prng.noisy_walk`, 90 ms a round, after the 11 rounds that 1 s allowed, on a noisy
    host). Stopping sooner than `min_reps` was tried and dropped: after 5 rounds on a loaded
    machine the best times are not settled yet, and a version twice as slow as the reference
    read x1.18 (median of 20) instead of x1.65.

    A round times one call on `sample(rng, size)`, or, with `stream`, the whole sequence of
    calls `stream(rng, size)` (for functions whose cost is in how they handle many calls).
    `jit=False` times the functions as written (for functions that jit internally).
    """

    size: dict[str, int]
    full: float = 1.25
    zero: float = 10.0
    min_reps: int = 11
    max_reps: int = 61
    budget: float = 3.0
    margin: float = 1.25
    stream: StreamSampler | None = None
    jit: bool = True

    def size_for(self, backend: str) -> int:
        """The workload size for `backend`, falling back to the CPU's."""
        return self.size.get(backend, self.size["cpu"])

    def decided(self, ratio: float, wall_ratio: float) -> bool:
        """Whether a best-time `ratio` (and the wall-time one, the guard against idling) already
        decides the verdict with `margin` to spare (see the class's docstring)."""
        full_marks = ratio * self.margin <= self.full and wall_ratio * self.margin < self.zero
        return full_marks or ratio >= self.zero * self.margin or wall_ratio >= self.zero * self.margin

    def score(self, ratio: float) -> float:
        """Fraction of the points earned at time ratio `ratio` (student / reference)."""
        if ratio <= self.full:
            return 1.0
        if ratio >= self.zero:
            return 0.0
        return float(1.0 - np.log(ratio / self.full) / np.log(self.zero / self.full))


@dataclass(frozen=True)
class Grad:
    """Options of the `grad` check: differentiate w.r.t. `argnums` (the output must be a scalar)."""

    argnums: tuple[int, ...] = (0,)
    rtol: float = 1e-5
    atol: float = 1e-5


@dataclass(frozen=True)
class Vmap:
    """Options of the `vmap` check: `in_axes` per argument (None: not batched, e.g. static),
    `batch` samples of size `size` stacked, and requirements on the batched function's facts."""

    in_axes: tuple[int | None, ...]
    batch: int = 5
    size: int | None = None
    requirements: tuple[Requirement, ...] = ()


@dataclass(frozen=True)
class Stream:
    """Options of the `compiles` check: a stream of calls, `make(rng, calls)`, whose outputs
    must match the reference's and whose compilations must number at most `max_compiles`.
    `jit=False` calls the function as written (it manages its own jit). JAX's caches are cleared
    before the stream starts; each call's arguments travel with that call and are put on the
    device (`jax.device_put`, which compiles nothing) inside its timed window, so that nothing
    of the stream is known before its clock runs and the compilations counted are the
    function's own. The count the student's process reports is advisory; the trusted one is
    read off the grader's clock, call by call and weighed in the reference's compilations
    (see `autograder.checks.compiles`)."""

    make: StreamSampler
    max_compiles: int
    calls: int = 100
    jit: bool = False


@dataclass(frozen=True)
class Prints:
    """Options of the `prints` check: a stream of calls, `make(rng, calls)`, to the function
    jitted once, from cold caches. What each call prints must be what the reference prints on
    the same call: a Python `print` runs while JAX traces, so once per new input shape."""

    make: StreamSampler
    calls: int = 12


@dataclass(frozen=True)
class Vmc:
    """Options of the `vmc` check: a variational Monte Carlo run `f(n, h, J, key)` for the
    transverse-field Ising ring, returning the parameters of its RBM (`nk.models.RBM`).

    Each grading draws its instance from a family, shared by its runs (and so is NetKet's
    compilation): a ring size from `rings`, J uniform in `coupling` and h/J uniform in `ratio`
    (the exercise's sampler, `sample(rng, n)`); each run has a fresh key. A public run uses `public`, (n, h, J)
    with a fresh key: an instance hidden grading never draws, so that the reference's answer to
    it, which ships with the public expectations, answers no hidden run. The check runs the
    reference and the student `runs` times each (the first run compiles), computes
    each returned RBM's energy exactly in the grader, and asks for a relative error below
    `max_error` on every run. Half the points are for that accuracy, half for the time: CPU
    time (wall time on a GPU) of each run against the reference's, full at `ratio <= full`,
    none at `ratio >= zero`. A run past `max(min_timeout, 2·zero·T_ref)` is stopped.
    """

    rings: tuple[int, ...] = (16,)
    ratio: tuple[float, float] = (1.0, 1.0)
    coupling: tuple[float, float] = (1.0, 1.0)
    public: tuple[int, float, float] = (12, 2.0, 1.0)
    max_error: float = 2e-3
    runs: int = 2
    full: float = 2.0
    zero: float = 10.0
    min_timeout: float = 60.0


@dataclass(frozen=True)
class Trains:
    """Options of the `trains` check: a training loop `f(params, x, y, steps, batch_size, ...)`
    that returns the trained parameters of a multilayer perceptron.

    The check draws `runs` cases from the exercise's sampler at `size` (each its own dataset
    and initial parameters, made by the grader), runs the reference's loop and then the
    student's on each, and computes the mean squared error of the returned parameters on the
    case's `x` and `y` (arguments `x_arg` and `y_arg`; the initial parameters are `params_arg`)
    itself, with NumPy: the network is
    `Trains.layers` in order, each `x @ kernel + bias`, with `tanh` between them. Every run's
    loss must be below `max_loss`, and its parameters must lie near the end of the reference's
    trajectory from the same initial parameters: their distance from the reference's, as a
    fraction of the distance the reference's travelled, below `max_drift` (a fit that takes no
    optimizer steps ends elsewhere). A run past `max(min_timeout, timeout_factor·T_ref)` is
    stopped.
    """

    size: int = 256
    max_loss: float = 0.2
    max_drift: float = 0.7
    runs: int = 2
    layers: tuple[str, ...] = ("hidden", "out")
    params_arg: int = 0
    x_arg: int = 1
    y_arg: int = 2
    timeout_factor: float = 20.0
    min_timeout: float = 60.0


@dataclass(frozen=True)
class Exercise:
    """One function the student writes, and everything the grader checks about it.

    `sample(rng, size)` builds one random case; its shapes must depend on `size` only, so two
    samples of one size are "same-shaped inputs" for the re-tracing check. `checks` maps each
    check name (`correct`, `jit`, `speed`, or a topic check such as `key_reuse`) to its points;
    a check not named there is not run. `options` holds per-check settings for the checks
    that need them (`options["grad"] = Grad(...)`, see `autograder.checks`).
    `edge_cases`: `Edge` families (public runs grade their public instance, hidden runs a
    fresh one) and plain `Case`s (graded as they are; `hidden` ones in hidden runs only).
    `operator_outputs`: the function returns quantum operators (NetKet's), which the workers
    send as their matrices; any other output leaf must be an array or a number.
    `outputs`: the names of the returned tuple's entries, as the docstring calls them
    (`("init_key", "step_keys")`): messages and the generated "Graded" list name the outputs so
    (dict keys and dataclass fields name themselves; see `autograder.compare`).
    """

    name: str
    sample: Sampler
    checks: dict[str, float]
    hints: tuple[str, ...]
    sizes: tuple[int, ...] = (1, 3, 17, 100)
    edge_cases: tuple[Case | Edge, ...] = ()
    rtol: float = 1e-6
    atol: float = 1e-6
    static_argnums: tuple[int, ...] = ()
    requirements: tuple[Requirement, ...] = ()
    speed: Speed | None = None
    options: dict[str, Any] = field(default_factory=dict)
    operator_outputs: bool = False
    outputs: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if len(self.hints) < 2:
            raise ValueError(f"{self.name}: give at least two progressive hints")
        if "speed" in self.checks and self.speed is None:
            raise ValueError(f"{self.name}: a speed check needs a Speed workload")

    def cases(self, rng: np.random.Generator, public: bool) -> list[Case]:
        """The cases of one grading run: the edge cases, then one random case per size.

        A public run grades each `Edge`'s public instance; a hidden run draws each `Edge`'s
        instance from `rng` (after the random cases, so that these stay the same in both runs
        of one generator), never the public one. Plain `Case`s are graded as they are, and
        `hidden` ones in hidden runs only."""
        drawn = [self.sample(rng, s) for s in self.sizes]
        edge = [c if isinstance(c, Case) else c.public if public else c.draw(rng)
                for c in self.edge_cases if not (public and c.hidden)]
        return edge + [
            Case(c.args, c.label or f"random case, size {s}", c.hidden) for c, s in zip(drawn, self.sizes)
        ]


@dataclass(frozen=True)
class Topic:
    """A topic: its exercises in order, and how its worker processes must be set up.

    `env` is added to the environment of both worker processes before JAX is imported (for
    example the XLA flag that fakes 8 CPU devices for sharding). `time_limit` bounds the
    wall time of the whole topic for one submission, in seconds.
    """

    name: str
    title: str
    exercises: tuple[Exercise, ...]
    env: dict[str, str] = field(default_factory=dict)
    time_limit: float = 600.0

    def exercise(self, name: str) -> Exercise:
        """The exercise called `name`; KeyError naming the topic's exercises otherwise."""
        for ex in self.exercises:
            if ex.name == name:
                return ex
        raise KeyError(f"topic {self.name!r} has no exercise {name!r}; it has {', '.join(e.name for e in self.exercises)}")

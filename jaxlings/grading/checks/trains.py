"""`trains`: a training loop, run on a dataset the grader makes, brings the loss below a bound.

The exercise's function, `f(params, x, y, steps, batch_size)`, trains a multilayer perceptron
from the initial parameters `params` for `steps` optimizer steps on minibatches of (x, y), and
returns the trained parameters (a nested dict `{layer: {"bias", "kernel"}}`, as
`nnx.State.to_pure_dict()` gives them). The grader draws each run's dataset and initial
parameters from the exercise's sampler (seeded by the run), and none of the student's own
figures is trusted: the grader computes the mean squared error of the RETURNED parameters on
the run's whole dataset itself, with NumPy in float64 (the network is `Trains.layers` in order,
each `h @ kernel + bias`, `tanh` between them). A loss the student's process prints or returns
counts for nothing, and a loop can only pass by returning parameters that fit the data.

`Trains.runs` runs, each on a fresh case: the reference's loop first (it must reach the bound
itself, or the run is the grader's error), then the student's, called as written. Every run's
loss must be below `Trains.max_loss`; all runs are judged (their losses are all reported, so a
failure shows how far off each run was), unless one raises or times out. The bound sits
between what a working loop reaches and where a broken one stays, measured over many seeds
(the figures are in the topic's spec). A run past `max(min_timeout, timeout_factor·T_ref)` is
stopped: T_ref is the reference's own run on the same case (its first run compiles).

A low loss alone does not show that the task's loop ran: one least-squares solve of the readout
on the initial hidden layer reaches 0.016 to 0.28 (below the bound on 199 seeds of 200) with no
optimizer step. So the parameters must also lie where the task's training ends: their `drift`,
the distance from the reference's parameters on the same case as a fraction of the distance
those travelled from the initial ones, must be below `Trains.max_drift`. The task fixes the
loop (its steps, in its batch order, with its optimizer), so a right loop ends on the
reference's, up to rounding; half the steps, another batch order, another optimizer (Adam at a
constant rate, RMSprop, SGD, Adam without the chain's clipping) or full-batch steps end
elsewhere, and a fit that takes no optimizer steps (a closed form, the initial parameters, the
hidden layer moved at random and the readout solved) at a drift of 1 or more, as the initial
parameters themselves are at exactly 1 (`benchmarks/trains_band.py`; the figures are in the
topic's spec). Getting there without the steps would take knowing where the reference's
training ends, which is the training.

The returned network must have the reference's shapes (the task's model).

Nothing here needs the grading machine: a public run judges in full, from the recorded
datasets and the reference's recorded runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from jaxlings.grading import words
from jaxlings.grading.check import Check
from jaxlings.grading.checks.vmc import student_run
from jaxlings.grading.context import REFERENCE_TIMEOUT, CallFailed, CheckContext, GraderError, WorkerDied
from jaxlings.grading.results import Outcome
from jaxlings.grading.spec import Case, Exercise

if TYPE_CHECKING:
    from jaxlings.grading.checks.vocabulary import Words


@dataclass(frozen=True, kw_only=True)
class Trains(Check):
    """`Trains(points, size=256, max_loss=0.2, max_drift=0.1, runs=2, layers=(...), ...)`: a
    training loop `f(params, x, y, steps, batch_size, ...)` that returns the trained parameters
    of a multilayer perceptron.

    The check draws `runs` cases from the exercise's sampler at `size` (each its own dataset
    and initial parameters, made by the grader), runs the reference's loop and then the
    student's on each, and computes the mean squared error of the returned parameters on the
    case's `x` and `y` (arguments `x_arg` and `y_arg`; the initial parameters are `params_arg`)
    itself, with NumPy: the network is `layers` in order, each `x @ kernel + bias`, with `tanh`
    between them. Every run's loss must be below `max_loss`, and its parameters must lie near
    the end of the reference's trajectory from the same initial parameters: their distance from
    the reference's, as a fraction of the distance the reference's travelled, below `max_drift`
    (a fit that takes no optimizer steps ends elsewhere). A run past `max(min_timeout,
    timeout_factor·T_ref)` is stopped.
    """

    size: int = 256
    max_loss: float = 0.2
    max_drift: float = 0.1
    runs: int = 2
    layers: tuple[str, ...] = ("hidden", "out")
    params_arg: int = 0
    x_arg: int = 1
    y_arg: int = 2
    timeout_factor: float = 20.0
    min_timeout: float = 60.0

    name = "trains"
    summary = (
        "your training loop, run on a dataset and initial parameters the grader draws, returns parameters "
        "whose loss (computed by the grader) is below the bound on every run, and which lie where the task's "
        "training ends (near the reference loop's)."
    )
    cost = 4

    def describe(self, ex: Exercise, words: Words) -> str:
        where = words.note(
            "the reference's loop runs from the same initial parameters, and yours must end within "
            f"{words.num(self.max_drift)} of the distance it travelled from them: the task's steps in the task's "
            "order do, half the steps, another optimizer or a fit that takes no optimizer steps do not; a run past "
            f"max({self.min_timeout:g} s, {self.timeout_factor:g}x the reference's) is stopped"
        )
        return (
            f"train as the task says, so that the parameters you return reach a mean squared error below "
            f"{words.num(self.max_loss)} on the whole dataset (predicting the targets' mean scores about 1) and are "
            f"where training ends{where}: called as written, {self.runs} runs, each on a dataset and initial "
            f"parameters the grader draws ({words.case_args(self.size)})."
        )

    def run(self, ctx: CheckContext) -> Outcome:
        return train_runs(self, ctx)


def expected_structure(layers: tuple[str, ...]) -> str:
    """The treedef string of `{layer: {"bias", "kernel"}}` (JAX prints dict keys sorted)."""
    inner = ", ".join(f"'{name}': {{'bias': *, 'kernel': *}}" for name in sorted(layers))
    return f"PyTreeDef({{{inner}}})"


def layers_of(
    out: dict[str, Any], layers: tuple[str, ...], n_in: int, n_out: int
) -> tuple[list[tuple[np.ndarray, np.ndarray]] | None, str | None]:
    """[(kernel, bias), ...] in `layers` order from an exported output; or why not."""
    structure = expected_structure(layers)
    if out["treedef"] != structure:
        nested = ", ".join(f"'{name}': {{'kernel': ..., 'bias': ...}}" for name in layers)
        return None, (
            f"{words.structure_difference(structure, out['treedef'])}: the task asks for the trained parameters "
            f"as a nested dict, {{{nested}}}"
        )
    if any(leaf["kind"] != "array" for leaf in out["leaves"]):
        return None, "the parameters must be numeric arrays"
    leaves = iter(np.asarray(leaf["data"]) for leaf in out["leaves"])
    by_name = {name: (lambda bias, kernel: (kernel, bias))(next(leaves), next(leaves)) for name in sorted(layers)}
    pairs = [by_name[name] for name in layers]
    width = n_in
    for name, (kernel, bias) in zip(layers, pairs):
        if kernel.dtype.kind not in "fc" or bias.dtype.kind not in "fc":
            return None, f"the parameters of `{name}` must be floating-point arrays"
        if kernel.ndim != 2 or kernel.shape[0] != width or bias.shape != kernel.shape[1:]:
            return None, (
                f"`{name}` has a kernel of shape {kernel.shape} and a bias of shape {bias.shape}; "
                f"a layer fed {width} features needs kernel ({width}, k) and bias (k,)"
            )
        width = kernel.shape[1]
    if width != n_out:
        return None, f"the network outputs {width} values per row, the targets have {n_out}"
    return pairs, None


def mlp_loss(pairs: list[tuple[np.ndarray, np.ndarray]], x: np.ndarray, y: np.ndarray) -> float:
    """Mean squared error, over every entry, of the network `pairs` on (x, y), in float64."""
    h = np.asarray(x, np.float64)
    for i, (kernel, bias) in enumerate(pairs):
        h = h @ np.asarray(kernel, np.float64) + np.asarray(bias, np.float64)
        if i < len(pairs) - 1:
            h = np.tanh(h)
    with np.errstate(over="ignore", invalid="ignore"):
        loss = float(np.mean((h - np.asarray(y, np.float64)) ** 2))
    return loss if np.isfinite(loss) else float("inf")


def drift(
    pairs: list[tuple[np.ndarray, np.ndarray]],
    ref_pairs: list[tuple[np.ndarray, np.ndarray]],
    initial: list[tuple[np.ndarray, np.ndarray]],
) -> float:
    """How far `pairs` lie from the reference's trained parameters `ref_pairs`, as a fraction of the
    distance the reference's travelled from `initial` (Euclidean, over every parameter, float64):
    0 on the reference's trajectory's end, 1 for the initial parameters themselves."""
    flat = lambda ps: np.concatenate([np.asarray(a, np.float64).ravel() for pair in ps for a in pair])  # noqa: E731
    theta, ref, start = flat(pairs), flat(ref_pairs), flat(initial)
    travelled = np.linalg.norm(ref - start)
    with np.errstate(over="ignore", invalid="ignore"):
        off = np.linalg.norm(theta - ref)
    if not np.isfinite(off):
        return float("inf")
    return float(off / travelled) if travelled > 0 else (0.0 if off == 0 else float("inf"))


def _initial(params: dict[str, Any], layers: tuple[str, ...]) -> list[tuple[np.ndarray, np.ndarray]]:
    return [(params[name]["kernel"], params[name]["bias"]) for name in layers]


def _joined(failures: list[tuple[str, str, str, str]]) -> str:
    """The failing runs, `(run, inputs, figures, advice)` each, as one message that says each
    thing once: a run's inputs when they differ from the previous run's, its advice when no
    earlier run gave it."""
    parts, said, previous = [], set(), None
    for run, inputs, figures, advice in failures:
        text = f"{run if inputs == previous else f'{run} ({inputs})'}: {figures}"
        if advice not in said:
            text += f"; {advice}"
            said.add(advice)
        parts.append(text)
        previous = inputs
    return "; ".join(parts)


def _diagnosis(initial: float, loss: float) -> str:
    """What a failed run's losses suggest, in words that lead without giving the fix."""
    if not np.isfinite(loss) or loss > 2 * initial:
        return "the loss grew: do the updates go downhill?"
    if abs(loss - initial) <= 0.05 * initial:
        return (
            "the loss barely moved from the initial parameters: are the updates applied, and does the "
            "optimizer's state (its step count, its moments) carry over from one step to the next?"
        )
    return "the loss went down, but not far enough: every step should use the optimizer the task gives"


def train_runs(opts: Trains, ctx: CheckContext) -> Outcome:
    """`opts.runs` runs of the reference's loop and the student's, each on a case of its own."""
    ex = ctx.exercise
    losses: list[float | None] = []
    drifts: list[float | None] = []
    ref_losses: list[float] = []
    initial_losses: list[float] = []
    seconds: list[float] = []
    ref_seconds: list[float] = []
    failures: list[tuple[str, str, str, str]] = []
    data: dict[str, Any] = {
        "losses": losses,
        "reference_losses": ref_losses,
        "initial_losses": initial_losses,
        "max_loss": opts.max_loss,
        "drifts": drifts,
        "max_drift": opts.max_drift,
        "seconds": seconds,
        "reference_seconds": ref_seconds,
    }
    for i in range(opts.runs):
        case = ctx.draw("trains", lambda rng: ex.sample(rng, opts.size))
        x, y = np.asarray(case.args[opts.x_arg]), np.asarray(case.args[opts.y_arg])
        run, inputs = f"run {i + 1} of {opts.runs}", _what(case.args, opts)
        which = f"{run} ({inputs})"
        start = _initial(case.args[opts.params_arg], opts.layers)
        initial = mlp_loss(start, x, y)
        ref = _reference_run(ctx, case, which)
        ref_pairs, problem = layers_of(ref["out"], opts.layers, x.shape[1], y.shape[1])
        ref_loss = mlp_loss(ref_pairs, x, y) if ref_pairs else float("inf")
        if problem or not ref_loss < opts.max_loss:
            raise GraderError(
                f"the reference {ctx.topic_name}.{ex.name} does not train, {which}: "
                f"{problem or f'loss {ref_loss:.4g}, bound {opts.max_loss:g}'}"
            )
        limit = min(max(opts.min_timeout, opts.timeout_factor * ref["seconds"]), max(1.0, ctx.time_left()))
        stu = student_run(ctx, case, limit, which, ref["seconds"], data)
        if isinstance(stu, Outcome):
            return stu
        pairs, problem = layers_of(stu.outs[0], opts.layers, x.shape[1], y.shape[1])
        if pairs is not None and ref_pairs is not None and _shapes(pairs) != _shapes(ref_pairs):
            problem = (
                f"the parameters have shapes {_shapes(pairs)} (kernel, bias per layer), the task's model "
                f"{_shapes(ref_pairs)}: train the model you were given"
            )
        if problem or pairs is None or ref_pairs is None:
            return Outcome.fail(f"{which}: {problem}", **data)
        loss, off = mlp_loss(pairs, x, y), drift(pairs, ref_pairs, start)
        losses.append(round(loss, 6) if np.isfinite(loss) else None)  # None: infinite or NaN (JSON has neither)
        drifts.append(round(off, 4) if np.isfinite(off) else None)
        ref_losses.append(round(ref_loss, 6))
        initial_losses.append(round(initial, 6))
        seconds.append(round(stu.seconds, 3))
        ref_seconds.append(round(ref["seconds"], 3))
        if not loss < opts.max_loss:
            failures.append(
                (
                    run,
                    inputs,
                    f"the loss of the parameters you return is {loss:.4g} (from {initial:.4g} at the "
                    f"initial parameters; the reference's loop reaches {ref_loss:.2g}), not below {opts.max_loss:g}",
                    _diagnosis(initial, loss),
                )
            )
        elif not off < opts.max_drift:
            failures.append(
                (
                    run,
                    inputs,
                    f"the loss is low ({loss:.2g}), but the parameters you return are not where training "
                    f"ends: their distance from the reference loop's, which started from the same "
                    f"parameters, is {off:.2f} times the distance that loop travelled",
                    f"at most {opts.max_drift:g} is allowed (the task's loop ends on the reference's). Train with "
                    "the task's step, `steps` times, on the minibatches of `batch_size` rows in the task's order, "
                    "from a fresh optimizer state: half the steps, another order or optimizer, or a fit by other "
                    "means ends elsewhere",
                )
            )
    if failures:
        return Outcome.fail(_joined(failures), **data)
    return Outcome.ok(
        f"{opts.runs} runs: losses {_listed(losses)} (from {_listed(initial_losses)} at the initial "
        f"parameters; the reference's {_listed(ref_losses)}), all below {opts.max_loss:g}; distances "
        f"from the reference loop's parameters {_listed(drifts)} of the distance it travelled, all "
        f"below {opts.max_drift:g}",
        **data,
    )


def _what(args: tuple[Any, ...], opts: Trains) -> str:
    x, y = np.asarray(args[opts.x_arg]), np.asarray(args[opts.y_arg])
    rest = [
        str(a)
        for i, a in enumerate(args)
        if i not in (opts.params_arg, opts.x_arg, opts.y_arg)
        and isinstance(a, (int, float))
        and not isinstance(a, bool)
    ]
    return f"x {x.dtype}{list(x.shape)}, y {y.dtype}{list(y.shape)}" + (f", {', '.join(rest)}" if rest else "")


def _shapes(pairs: list[tuple[np.ndarray, np.ndarray]]) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    return [(tuple(kernel.shape), tuple(bias.shape)) for kernel, bias in pairs]


def _listed(values: Sequence[float | None]) -> str:
    return ", ".join("inf" if v is None else f"{v:.3g}" for v in values)


def _reference_run(ctx: CheckContext, case: Case, which: str) -> dict[str, Any]:
    """The reference's run on `case`: its output and wall time (live, or recorded)."""
    fn = ctx.exercise.name

    def compute() -> dict[str, Any]:
        try:
            ref = ctx.reference.timed(fn, [case], jit=False, timeout=REFERENCE_TIMEOUT)
        except (WorkerDied, CallFailed) as exc:
            raise GraderError(f"the reference {ctx.topic_name}.{fn} failed, {which}: {exc}") from None
        return {"seconds": ref.seconds, "out": ref.outs[0]}

    return ctx.answer("trains", {"fn": fn, "args": case.args}, compute)

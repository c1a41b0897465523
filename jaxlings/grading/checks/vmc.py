"""`vmc`: a variational Monte Carlo run finds the ground state of the transverse-field Ising
ring, on fresh keys, in a time comparable to the reference's.

The exercise's function, `f(n, h, J, key)`, trains an RBM (`nk.models.RBM`) on the ring
H = -J sum_i Z_i Z_{i+1} - h sum_i X_i and returns its parameters, `vstate.parameters`. None of
the student's own estimates is trusted: the grader computes the returned RBM's energy
<psi|H|psi> / <psi|psi> exactly, summing over all 2**n configurations with NumPy, and compares
it with the exact ground-state energy, which it also computes (the chain maps to free
fermions: a closed form). A Monte Carlo average cannot be faked this way, and the verdict does
not depend on sampling noise.

The instance is drawn per grading from a family (`Vmc`): a ring size from `Vmc.rings`, J and
h/J, shared by the grading's runs (so the first compiles NetKet's functions for the next, and a
function that ignores its key returns identical parameters), and per run a fresh key. A
public run (`grade check`) grades `Vmc.public` instead, a ring size and a ratio h/J outside
the family: the public expectations ship the reference's parameters for that instance, and
they answer no hidden run. They are refused by shape (an RBM for another number of spins), and
even trained at a hidden ring size the public couplings' ground state misses the family's
nearest couplings by x28 the bound (`benchmarks/vmc_family.py --transfer`; the figures are in
`jaxlings.specs.ising`).

`Vmc.runs` runs, each on a case drawn so: the reference, then the student, both timed by the
grader's clock (`timing.timed_call`: CPU time of the worker's process tree on a CPU, wall time
on a GPU). The first run compiles NetKet's
functions; the next ones reuse them. Half the points: every run's relative error below
`Vmc.max_error`. The other half, only then: the time, banded on the worst run's ratio to the
reference's (so a function that does its real work on the first call and memoises it gains
nothing). Runs with different keys must not return identical parameters. A case on which the
reference itself misses the ground state (a few keys in a hundred) is no test: another is drawn.
A right VMC of the student's stalls from such keys too, so one missed run of the student's is
run again on a fresh case (`SECOND_CHANCES`); a second miss fails the accuracy half. A public
run gives no second chance: its recording holds the reference's runs on the public cases only,
not on a fresh one (asking for one stopped `grade check` with "out of date").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from jaxlings.grading.check import Check
from jaxlings.grading.checks.speed import band_score, clock_for
from jaxlings.grading.context import (
    REFERENCE_TIMEOUT,
    CallFailed,
    CheckContext,
    GraderError,
    StudentError,
    Timed,
    WorkerDied,
)
from jaxlings.grading.results import Outcome
from jaxlings.grading.spec import Case, Exercise, Key
from jaxlings.grading.words import num

if TYPE_CHECKING:
    from jaxlings.grading.checks.vocabulary import Words

MAX_HIDDEN_PER_SPIN = 8  # the exact sum costs 2**n * hidden units; more than alpha = 8 is refused
CHUNK = 4096  # configurations per block of the exact sum
REFERENCE_DRAWS = 3  # cases drawn for one run before a reference that misses them all is the grader's error
SECOND_CHANCES = 1  # a student's missed runs run again on a fresh case (a right VMC stalls from ~1 key in 80)


@dataclass(frozen=True, kw_only=True)
class Vmc(Check):
    """`Vmc(points, rings=..., ratio=..., coupling=..., public=..., ...)`: a variational Monte
    Carlo run `f(n, h, J, key)` for the transverse-field Ising ring, returning the parameters of
    its RBM (`nk.models.RBM`).

    Each grading draws its instance from a family, shared by its runs (and so is NetKet's
    compilation): a ring size from `rings`, J uniform in `coupling` and h/J uniform in `ratio`
    (the exercise's sampler, `sample(rng, n)`); each run has a fresh key. A public run uses
    `public`, (n, h, J) with a fresh key: an instance hidden grading never draws, so that the
    reference's answer to it, which ships with the public expectations, answers no hidden run.
    The check runs the reference and the student `runs` times each (the first run compiles),
    computes each returned RBM's energy exactly in the grader, and asks for a relative error
    below `max_error` on every run. Half the points are for that accuracy, half for the time:
    CPU time (wall time on a GPU) of each run against the reference's, full at `ratio <= full`,
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

    name = "vmc"
    summary = (
        "the RBM your VMC run returns has the ground-state energy (computed exactly, relative error within "
        "the bound) on fresh keys; half the points for that, half for the time against the reference's."
    )
    timed = True
    cost = 15

    def describe(self, ex: Exercise, words: Words) -> str:
        rings = ", ".join(str(n) for n in self.rings)
        n, h, J = self.public
        ring = words.note(
            f"n from {{{rings}}}, J between {words.num(self.coupling[0])} and {words.num(self.coupling[1])}, h/J "
            f"between {words.num(self.ratio[0])} and {words.num(self.ratio[1])}, a fresh `key` per run (the first "
            f"run compiles); a public run, `grade check`, uses n = {n}, h = {words.num(h)}, J = {words.num(J)}, which "
            "hidden grading never draws"
        )
        energy = words.note(
            f"computed exactly, over all 2**n configurations (at most alpha = {MAX_HIDDEN_PER_SPIN} hidden units "
            "per spin); one run that misses is run again on a fresh key, as a right VMC can stall from an unlucky key"
        )
        time = words.note(
            f"full up to x{words.num(self.full)} the reference's time, none from x{words.num(self.zero)}, log-linear "
            f"between (on a CPU the clock is CPU time, and a wall time past x{words.num(self.zero)} gets no time "
            f"points); a run past max({self.min_timeout:g} s, {2 * self.zero:g}x the reference's) is stopped"
        )
        return (
            f"return an RBM whose energy is within a relative {words.num(self.max_error)} of the exact ground "
            f"state's{energy} on every run (half the points), then make the worse run about as fast as the "
            f"reference's{time} (the other half, only then): called as written, {self.runs} runs on rings the grader "
            f"draws{ring}; runs with different keys must not return identical parameters."
        )

    def run(self, ctx: CheckContext) -> Outcome:
        backend = ctx.backend
        refs: list[Timed] = []
        stus: list[Timed] = []
        errors: list[float] = []
        ref_errors: list[float] = []
        instances: list[list[Any]] = []  # (n, h, J) of each judged run
        redrawn = 0
        second_chances: list[str] = []  # the student's runs that missed and were run again on a fresh case
        instance = _instance(ctx, self)
        i = 0
        while i < self.runs:
            case, ref, ref_error, misses = _case_the_reference_solves(ctx, self, i, instance)
            redrawn += misses
            n, h, J = case.args[:3]
            exact = exact_energy(n, h, J)
            which = _which(self, i, case)
            structure = ref.outs[0]["treedef"]
            limit = min(max(self.min_timeout, 2 * self.zero * ref.seconds), max(1.0, ctx.time_left()))
            stu = student_run(ctx, case, limit, which, ref.seconds)
            if isinstance(stu, Outcome):
                return stu
            params, problem = rbm_of(stu.outs[0], structure, n)
            if problem or params is None:
                return Outcome.fail(f"{which}: {problem}")
            energy = rbm_energy(*params, h, J)
            error = abs(energy - exact) / abs(exact)
            if not error < self.max_error and len(second_chances) < SECOND_CHANCES and not ctx.public:
                second_chances.append(f"{which}: relative error {error:.2e}")
                continue
            refs.append(ref)
            stus.append(stu)
            errors.append(error)
            ref_errors.append(ref_error)
            instances.append([n, h, J])
            data = {
                "errors": errors,
                "reference_errors": ref_errors,
                "instances": instances,
                "energy": energy,
                "exact_energy": exact,
                "max_error": self.max_error,
                "redrawn": redrawn,
                "second_chances": second_chances,
            }
            if not error < self.max_error:
                again = f" (a fresh case after {second_chances[0]})" if second_chances else ""
                return Outcome.fail(
                    f"{which}{again}: the returned RBM's energy is {num(energy)}, the exact ground state's "
                    f"{num(exact)}: relative error {error:.2e}, more than {self.max_error:g} (the reference "
                    f"reaches {ref_error:.1e}). Optimise longer or better: stochastic reconfiguration, "
                    "enough samples, a learning rate that converges"
                    + (
                        " (the grader runs one missed run again on a fresh key; `grade check` cannot)"
                        if ctx.public
                        else ""
                    ),
                    **data,
                )
            i += 1
        if len(stus) > 1 and all(
            np.array_equal(a["data"], b["data"]) for a, b in zip(stus[0].outs[0]["leaves"], stus[1].outs[0]["leaves"])
        ):
            return Outcome.fail(
                "two runs with different keys returned identical parameters: take every random choice "
                "(the initial parameters, the Markov chains) from the key",
                **data,
            )
        if ctx.public:
            times = ", ".join(f"{s.seconds:.2f} s" for s in stus)
            return Outcome.pending(
                f"relative energy error {', '.join(f'{e:.1e}' for e in errors)} on {len(stus)} runs "
                f"(below {self.max_error:g}: the accuracy half would pass); your runs took {times} "
                f"(wall time, this machine); the time half is judged against the reference's on the "
                f"grading machine: full up to x{self.full:g}, none from x{self.zero:g}",
                **data,
                student_seconds=[round(s.seconds, 3) for s in stus],
            )
        return _with_time(self, backend, refs, stus, data)


def exact_energy(n: int, h: float, J: float) -> float:
    """Ground-state energy of H = -J sum Z_i Z_{i+1} - h sum X_i on a ring of n sites (J > 0).

    Jordan-Wigner makes the chain free fermions; the ground state lies in the even-parity
    sector, where the momenta are k = (2m + 1) pi / n: E0 = -sum_k sqrt(J^2 + h^2 - 2 J h cos k).
    (At h = J this is -2 / sin(pi / 2n), about -4n/pi.)
    """
    k = np.pi * (2 * np.arange(n) + 1) / n
    return float(-np.sum(np.sqrt(J * J + h * h - 2 * J * h * np.cos(k))))


def _log_cosh(x: np.ndarray) -> np.ndarray:
    """log(cosh(x)) without overflow, for real or complex x."""
    s = np.where(np.real(x) >= 0, 1.0, -1.0)
    return s * x + np.log1p(np.exp(-2 * s * x)) - np.log(2.0)


def rbm_energy(visible: np.ndarray, hidden: np.ndarray, kernel: np.ndarray, h: float, J: float) -> float:
    """<psi|H|psi> / <psi|psi> for NetKet's RBM, log psi(s) = visible.s + sum_j log cosh(hidden_j + (s @ kernel)_j),
    s in {-1, +1}^n, summed exactly over all 2**n configurations (real or complex parameters).

    Configuration number c has s_i = 1 - 2·bit_i(c), so flipping spin i is c ^ (1 << i); the
    order of the sum does not matter.
    """
    n = visible.shape[0]
    configs = np.arange(2**n)
    log_psi = np.empty(2**n, dtype=np.result_type(visible, hidden, kernel, np.float64))
    for start in range(0, 2**n, CHUNK):
        s = 1.0 - 2.0 * ((configs[start : start + CHUNK, None] >> np.arange(n)) & 1)
        log_psi[start : start + CHUNK] = s @ visible + _log_cosh(s @ kernel + hidden).sum(axis=1)
    psi = np.exp(log_psi - np.max(np.real(log_psi)))  # scaled: the largest |psi| is 1
    weight = np.abs(psi) ** 2
    s = 1.0 - 2.0 * ((configs[:, None] >> np.arange(n)) & 1)
    energy = -J * np.sum(weight * np.sum(s * np.roll(s, -1, axis=1), axis=1))
    for i in range(n):
        energy = energy - h * np.sum(np.conj(psi) * psi[configs ^ (1 << i)])
    return float(np.real(energy) / np.sum(weight))


def rbm_of(
    out: dict[str, Any], structure: str, n: int
) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray] | None, str | None]:
    """(visible, hidden, kernel) from an exported output shaped like the reference's RBM
    parameters ({"Dense": {"bias", "kernel"}, "visible_bias"}: leaves in that order) for a ring
    of `n` spins; or why not."""
    if out["treedef"] != structure:
        return None, (
            f"the output's structure is {out['treedef']}, but the task asks for the RBM's parameters, "
            f"`vstate.parameters`: {structure}"
        )
    if any(leaf["kind"] != "array" for leaf in out["leaves"]):
        return None, "the parameters must be numeric arrays"
    hidden, kernel, visible = (np.asarray(leaf["data"]) for leaf in out["leaves"])
    if kernel.ndim != 2 or visible.shape != kernel.shape[:1] or hidden.shape != kernel.shape[1:]:
        return None, (
            f"parameters of shapes kernel {kernel.shape}, bias {hidden.shape}, visible_bias {visible.shape} "
            "are not an RBM's: kernel (n, hidden), bias (hidden,), visible_bias (n,)"
        )
    if visible.shape != (n,):
        return None, f"an RBM for {visible.shape[0]} spins, but the ring has n = {n}"
    if kernel.shape[1] > MAX_HIDDEN_PER_SPIN * kernel.shape[0]:
        return (
            None,
            f"{kernel.shape[1]} hidden units for {kernel.shape[0]} spins; at most alpha = {MAX_HIDDEN_PER_SPIN}",
        )
    if not all(np.isfinite(a).all() for a in (visible, hidden, kernel)):
        return None, "some parameters are NaN or infinite: the optimisation diverged"
    as_number = lambda a: a if a.dtype.kind in "fc" else a.astype(np.float64)  # noqa: E731
    return (as_number(visible), as_number(hidden), as_number(kernel)), None


def student_run(
    ctx: CheckContext,
    case: Case,
    limit: float,
    which: str,
    reference_seconds: float,
    data: dict[str, Any] | None = None,
) -> Timed | Outcome:
    """The student's run of the exercise on `case`, timed by the grader and stopped past `limit`
    seconds; or the failing Outcome saying why it did not return (`which`: the run, in words;
    `data`: what the Outcome carries). Shared with `jaxlings.grading.checks.trains`."""
    data = data or {}
    try:
        return ctx.student.timed(ctx.exercise.name, [case], jit=False, timeout=limit)
    except StudentError as exc:
        return Outcome.fail(f"{which}: {exc}", **data)
    except CallFailed as exc:
        reason = ctx.error_text(exc.error) if exc.error else str(exc)
        return Outcome.fail(f"{which}: {reason}", **data)
    except WorkerDied as exc:
        if not exc.timed_out:  # memory, or a signal: the limit is not the reason, the message says it
            return Outcome.fail(f"{which} stopped: {exc}", **data)
        return Outcome.fail(
            f"{which} did not finish within {limit:.0f} s (the reference took {reference_seconds:.1f} s)", **data
        )


def _which(opts: Vmc, i: int, case) -> str:
    n, h, J, key = case.args
    return f"run {i + 1} of {opts.runs} (n={n}, h={h:g}, J={J:g}, key=jax.random.key({key.seed}))"


def _instance(ctx: CheckContext, opts: Vmc) -> tuple[int, float, float]:
    """(n, h, J) of this grading, shared by its runs (and so is NetKet's compilation, and a
    function that ignores its key returns the same parameters twice): hidden, a ring size from
    `opts.rings` and the exercise's sampler's couplings on it; public, `opts.public`, which
    hidden grading never draws."""
    if ctx.public:
        return opts.public
    ex = ctx.exercise
    return ctx.draw("vmc_instance", lambda rng: ex.sample(rng, int(rng.choice(opts.rings))).args[:3])


def _keyed(ctx: CheckContext, instance: tuple[int, float, float]) -> Case:
    """One run's case: the grading's instance with a fresh key."""
    return ctx.draw("vmc", lambda rng: Case((*instance, Key(int(rng.integers(2**31))))))


def _case_the_reference_solves(
    ctx: CheckContext, opts: Vmc, i: int, instance: tuple[int, float, float]
) -> tuple[Case, Timed, float, int]:
    """Run i's case, the reference's run on it, its relative error, and how many draws it missed.

    From a few keys in a hundred the reference's own optimisation stalls far from the ground
    state (the solutions at n = 16, h = J = 1: relative error 0.52 from
    `jax.random.key(148396730)`); such a key tests nothing, so another case is drawn, up to
    REFERENCE_DRAWS. A reference that misses them all is the grader's error.
    """
    missed: list[str] = []
    while len(missed) < REFERENCE_DRAWS:
        case = _keyed(ctx, instance)
        n, h, J = case.args[:3]
        which = _which(opts, i, case)
        ref = _reference_run(ctx, case, which)
        params, problem = rbm_of(ref.outs[0], ref.outs[0]["treedef"], n)
        exact = exact_energy(n, h, J)
        error = abs(rbm_energy(*params, h, J) - exact) / abs(exact) if params else float("inf")
        if not problem and error < opts.max_error:
            return case, ref, error, len(missed)
        missed.append(f"{which}: {problem or f'relative error {error:.2e}'}")
    raise GraderError(
        f"the reference {ctx.topic_name}.{ctx.exercise.name} missed the ground state on {len(missed)} draws: "
        + "; ".join(missed)
    )


def _reference_run(ctx: CheckContext, case: Case, which: str) -> Timed:
    """The reference's timed run on `case` (live, with the student's worker frozen; or recorded)."""
    fn = ctx.exercise.name

    def compute() -> dict[str, Any]:
        try:
            ref = ctx.reference.timed(fn, [case], jit=False, timeout=REFERENCE_TIMEOUT)
        except (WorkerDied, CallFailed) as exc:
            raise GraderError(f"the reference {ctx.topic_name}.{fn} failed, {which}: {exc}") from None
        return {"seconds": ref.seconds, "cpu_seconds": ref.cpu_seconds, "outs": ref.outs}

    return Timed(**ctx.answer("vmc", {"fn": fn, "args": case.args}, compute))


def _with_time(opts: Vmc, backend: str, refs: list[Timed], stus: list[Timed], data: dict[str, Any]) -> Outcome:
    """Accurate: half the points, plus half the time band's fraction on the worst run's ratio."""
    clock, pick = clock_for(backend, refs + stus)
    ratios = [pick(s) / pick(r) for r, s in zip(refs, stus)]
    wall_ratios = [s.seconds / r.seconds for r, s in zip(refs, stus)]
    ratio = max(ratios)
    time_fraction = 0.0 if max(wall_ratios) >= opts.zero else band_score(ratio, opts.full, opts.zero)
    data.update(
        {
            "ratios": [round(r, 3) for r in ratios],
            "wall_ratios": [round(r, 3) for r in wall_ratios],
            "clock": clock,
            "reference_seconds": [round(pick(r), 3) for r in refs],
            "student_seconds": [round(pick(s), 3) for s in stus],
            "time_fraction": round(time_fraction, 3),
        }
    )
    runs = ", ".join(f"x{r:.2f}" for r in ratios)
    text = (
        f"relative energy error {', '.join(f'{e:.1e}' for e in data['errors'])} on {len(ratios)} runs (below "
        f"{opts.max_error:g}; the reference's {', '.join(f'{e:.1e}' for e in data['reference_errors'])}); "
        f"{clock} time against the reference's: {runs} (the first run compiles; {pick(refs[0]):.2f} s and "
        f"{pick(refs[-1]):.2f} s for the reference), full marks up to x{opts.full:g}, none from x{opts.zero:g}"
    )
    if max(wall_ratios) >= opts.zero:
        text += f"; but the wall time took x{max(wall_ratios):.1f} the reference's, past x{opts.zero:g}: no time points"
    return Outcome(round(0.5 + 0.5 * time_fraction, 3), text, data)

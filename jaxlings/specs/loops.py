"""Topic `loops`: `lax.fori_loop`, `lax.scan`, `lax.while_loop`, and loops that `jax.grad` goes through.

Where the trip count is known, it grows with the sample size (a static `n_iters`, or the
length of `xs`), so the `jit` check's counts at the smallest and the largest size tell a
rolled loop from an unrolled one. Those verdicts come from the exported program (StableHLO,
analysed on the trusted side), exact on every machine: a `while` (scan and fori_loop both
become one), about as many operations run at the smallest size as at the largest (`unroll=k`
repeats the body up to k times, a Python loop once per step), compiled HLO no more than a few
times the reference's. The compile-time requirement is wall time, so its margin is wide: the
reference passes on a busy machine, a 200-step loop unrolled by Python does not.
`newton_sqrt`'s trip count depends on the data: its `jit` check asks for a while loop whose
trip count XLA cannot know (a fori_loop, or a while on a counter alone, has a known one).

The smallest size is 2, not 1 (length 1 stays covered by edge cases), as in the jaxpr days:
at length 1 JAX drops the `slice` of an `xs[0]`.

Measured (operations run, `n_ops`, at the smallest -> largest size; compiled HLO lines at the
largest), references: power_iteration 21 -> 21 (172 lines), ema 20 -> 20 (154), rnn_loss
19 -> 19 (179); right variants (tests/submissions/loops__alternatives.py): power_iteration with
unroll=4 25 -> 44 (261), ema 27 -> 27 (189), rnn_loss 23 -> 23 (168); faults: a Python loop
25 -> 1,609 (5,513 lines, no while), scan with unroll=True 27 -> 1,809 (5,522).

Tolerances let the same maths written as a rolled or an unrolled loop both match (XLA fuses
the two differently). The tasks prescribe `@` for their matrix products, so that both sides
use the same matmul precision on the GPU.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from jaxlings.grading.checks import Correct, Grad, Jit
from jaxlings.grading.requirements import (
    CompileTimeAtMost,
    DataDependentLoop,
    HloLinesAtMost,
    OpsDoNotGrow,
    Requirement,
    UsesOp,
)
from jaxlings.grading.spec import Case, Edge, Exercise, Topic


def stays_a_loop(api: str) -> tuple[Requirement, ...]:
    """The requirements of an exercise whose loop has a known trip count: it stays a loop."""
    return (
        UsesOp("while", f"write the loop with {api}"),
        # default margin x3 + 20: unroll=4 grows 25 -> 44 (limit 95), a Python loop 25 -> 1,609 (see above)
        OpsDoNotGrow("a Python loop is unrolled while tracing, one copy of its body per step"),
        # x4 + 300 lines: the references have 154-179 (limits 916-1016), unroll=4 261, the faults 5,500
        HloLinesAtMost(
            4.0, 300.0, "the loop reaches XLA unrolled (a Python loop, or unroll=True); a small unroll=k is fine"
        ),
        CompileTimeAtMost(4.0, 1.0, "an unrolled loop compiles slower the more steps it has"),
    )


def _f32(a: ArrayLike) -> np.ndarray:
    return np.asarray(a, np.float32)


def _power_iteration(rng: np.random.Generator, size: int) -> Case:
    """A symmetric matrix with a clear dominant eigenvalue (the others at most 0.8 of it), and
    a start with a fair share of its eigenvector: a start almost orthogonal to it would turn
    float32 rounding into differences above the tolerance halfway to convergence."""
    n = 8 if size < 10 else 32
    q, _ = np.linalg.qr(rng.normal(size=(n, n)))
    eig = np.concatenate([[1.0], rng.uniform(-0.8, 0.8, n - 1)]) * rng.uniform(0.5, 3.0)
    x0 = rng.choice([-1.0, 1.0]) * rng.uniform(0.5, 1.0) * q[:, 0] + rng.normal(size=n) / np.sqrt(n)
    return Case((_f32((q * eig) @ q.T), _f32(x0), size))


def _ema(rng: np.random.Generator, size: int) -> Case:
    return Case((_f32(rng.normal(size=(size, 3))), float(rng.uniform(0.05, 1.0))))


def _newton_sqrt(rng: np.random.Generator, size: int) -> Case:
    """Entries log-uniform over 8 decades; tolerances well above float32's resolution, so that
    the number of updates does not hinge on rounding."""
    a = np.exp(rng.uniform(np.log(1e-4), np.log(1e4), size))
    return Case((_f32(a), float(10 ** rng.uniform(-4, -2))))


def _rnn_loss(rng: np.random.Generator, size: int) -> Case:
    h = 8
    return Case((_f32(0.6 * rng.normal(size=(h, h)) / np.sqrt(h)), _f32(rng.normal(size=(size, h)))))


# -- edge families: each edge case's instances in a graded run (`Edge`), never its public one


def _ints(rng: np.random.Generator, *shape: int, lo: int = -4, hi: int = 5, scale: float = 1.0) -> np.ndarray:
    """Small integers (times a power-of-two `scale`) as float32: exact."""
    return _f32(scale * rng.integers(lo, hi, shape))


def _nonzero(rng: np.random.Generator, n: int) -> np.ndarray:
    x = _ints(rng, n)
    x[rng.integers(n)] = rng.choice([-2.0, 1.0, 3.0])
    return x


def _diagonal(rng: np.random.Generator, n_iters: int) -> Case:
    """The docstring's example's structure: a diagonal A whose dominant entry is at least twice
    any other in size (so 40 iterations converge to float32's resolution), a start with a share
    of its eigenvector."""
    n = int(rng.integers(2, 5))
    top = int(rng.integers(2, 6))
    d = rng.integers(-(top // 2), top // 2 + 1, n).astype(np.float32)
    i = int(rng.integers(n))
    d[i] = top * rng.choice([-1, 1])
    x0 = _ints(rng, n)
    x0[i] = rng.choice([-2.0, -1.0, 1.0, 2.0])
    return Case((np.diag(d), x0, n_iters))


def _no_iterations(rng: np.random.Generator) -> Case:
    n = int(rng.integers(2, 5))
    A = _ints(rng, n, n)
    return Case((A + A.T, _nonzero(rng, n), 0))


def _ema_steps(rng: np.random.Generator, steps: int, alpha: float | None = None) -> Case:
    a = alpha if alpha is not None else float(rng.choice([0.25, 0.5, 0.75]))
    return Case((_ints(rng, steps, int(rng.integers(1, 4))), a))


def _squares(rng: np.random.Generator) -> Case:
    """The docstring's example's structure: perfect squares, tol > 0; the tolerance is never
    within a factor 3 of a residual on the way (float64 Newton iterates), so that the count of
    updates does not hinge on rounding."""
    while True:
        a = (rng.integers(2, 13, int(rng.integers(1, 5))) ** 2).astype(np.float64)
        tol = float(rng.choice([1e-2, 1e-3, 1e-4]))
        x, near = a.copy(), False
        for _ in range(100):
            r = np.max(np.abs(x * x - a) / a)
            near = near or bool(tol / 3 < r < 3 * tol)
            if r <= tol:
                break
            x = 0.5 * (x + a / x)
        if not near:
            return Case((_f32(a), tol))


def _never_reached(rng: np.random.Generator) -> Case:
    """tol = 0, and at least one of 2, 3, 7 among the entries: their residual stays above 0
    in float32 (the public instance reaches the cap on them), so the cap stops the loop."""
    a = rng.integers(1, 50, int(rng.integers(1, 5))).astype(np.float32)
    a[rng.integers(a.size)] = rng.choice([2.0, 3.0, 7.0])
    return Case((a, 0.0))


def _converged(rng: np.random.Generator) -> Case:
    """x = a already meets tol: entries within tol / 2 of 1 (multiples of 2**-10)."""
    tol = float(rng.choice([1e-6, 1e-3, 1e-2, 1e-1]))
    j = int(tol / 2 * 1024)
    return Case((_f32(1 + rng.integers(-j, j + 1, int(rng.integers(1, 5))) / 1024), tol))


def _zero_recurrence(rng: np.random.Generator) -> Case:
    """W = 0: every hidden state is tanh of its input."""
    h = int(rng.integers(1, 5))
    return Case((np.zeros((h, h), np.float32), _ints(rng, int(rng.integers(1, 4)), h, scale=0.25)))


def _two_steps(rng: np.random.Generator) -> Case:
    h = int(rng.integers(1, 5))
    return Case((_ints(rng, h, h, lo=-2, hi=3, scale=0.5), _ints(rng, 2, h, scale=0.25)))


TOPIC = Topic(
    name="loops",
    title="Loops: fori_loop, scan, while_loop",
    exercises=(
        Exercise(
            name="power_iteration",
            sample=_power_iteration,
            sizes=(2, 5, 20, 200),
            static_argnums=(2,),
            edge_cases=(
                Edge(
                    Case((_f32([[2, 0], [0, 1]]), _f32([1, 1]), 1), "the docstring's example"),
                    lambda rng: _diagonal(rng, 1),
                ),
                Edge(
                    Case((_f32([[2, 0], [0, 1]]), _f32([1, 1]), 60), "the docstring's example, converged"),
                    lambda rng: _diagonal(rng, int(rng.integers(40, 81))),
                ),
                Edge(
                    Case((_f32([[3, 1], [1, 3]]), _f32([3, 4]), 0), "no iterations: the normalised start"),
                    _no_iterations,
                ),
            ),
            rtol=1e-5,
            atol=1e-5,
            checks=(Correct(2), Jit(2, requirements=stays_a_loop("lax.fori_loop"))),
            outputs=("x", "lam"),
            hints=(
                "Under jit a Python `for` loop is unrolled: n_iters copies of the step. Hand the loop to JAX instead.",
                "`lax.fori_loop(0, n_iters, body, x)` calls `body(i, x)` and feeds its result back in as the next x.",
                "The body ignores the step index: multiply by `A`, then normalise. Start from the normalised `x0`. "
                "After the loop the eigenvalue is the Rayleigh quotient of the final vector (which has norm 1, so "
                "nothing to divide by); return (vector, eigenvalue).",
            ),
        ),
        Exercise(
            name="ema",
            sample=_ema,
            sizes=(2, 5, 30, 100),
            edge_cases=(
                Edge(
                    Case((_f32([[2], [0], [4]]), 0.5), "the docstring's example"),
                    lambda rng: _ema_steps(rng, int(rng.integers(2, 6))),
                ),
                Edge(
                    Case((_f32([[1, -2], [3, 5], [0, 7]]), 1.0), "alpha = 1 follows the signal"),
                    lambda rng: _ema_steps(rng, int(rng.integers(2, 6)), 1.0),
                ),
                Edge(Case((_f32([[1, -2, 3]]), 0.3), "one step"), lambda rng: _ema_steps(rng, 1)),
            ),
            rtol=1e-5,
            atol=1e-5,
            checks=(Correct(2), Jit(2, requirements=stays_a_loop("lax.scan"))),
            hints=(
                "The average after step t depends on the one after step t-1: carry it from step to step, and keep each one.",
                "`lax.scan(step, init, xs)` calls `step(carry, x)` for each row x of xs; `step` returns "
                "`(new_carry, output)` and scan stacks the outputs.",
                "The carry is the running average, starting from zeros shaped like one row of `xs`; each step blends in "
                "the new row with weight `alpha` and returns the new average as both carry and output. scan returns "
                "`(final_carry, stacked_outputs)`: you want the second.",
            ),
        ),
        Exercise(
            name="newton_sqrt",
            sample=_newton_sqrt,
            sizes=(1, 10, 100, 1000),
            edge_cases=(
                Edge(Case((_f32([4, 9]), 1e-3), "the docstring's example"), _squares),
                Edge(Case((_f32([2, 3, 7]), 0.0), "a tolerance never reached: the cap stops it"), _never_reached),
                Edge(Case((_f32([1, 1]), 1e-6), "already converged: no update"), _converged),
            ),
            rtol=1e-5,
            atol=1e-6,
            # measured: the reference and the right variant have 1 loop, 0 counted; a fixed 100
            # passes (loops__one_fault_each) 1 loop, 1 counted
            checks=(
                Correct(2),
                Jit(
                    2,
                    requirements=(
                        DataDependentLoop(
                            "the number of updates depends on the data: use lax.while_loop "
                            "(a fori_loop with fixed bounds runs a fixed count, as a scan)"
                        ),
                    ),
                ),
            ),
            outputs=("x", "k"),
            hints=(
                "Under jit you cannot test a traced value in a Python `while`: its value is not known while tracing. "
                "The test must run inside the compiled loop.",
                "`lax.while_loop(cond, body, state)` repeats `state = body(state)` while `cond(state)` is true; make "
                "the state a tuple `(x, k)`.",
                "The state starts from `a` and an int32 zero for the step count (a Python 0 would not stay int32). "
                "`cond` returns one boolean scalar: the docstring's residual test and the iteration cap joined with "
                "`&` (`and` needs a concrete bool); `body` applies one Newton update to every entry and counts the "
                "step.",
            ),
        ),
        Exercise(
            name="rnn_loss",
            sample=_rnn_loss,
            sizes=(2, 5, 30, 200),
            edge_cases=(
                Edge(
                    Case((np.zeros((2, 2), np.float32), _f32([[0.5, -0.5]])), "the docstring's example"),
                    _zero_recurrence,
                ),
                Edge(Case((_f32([[0, 1], [0, 0]]), _f32([[0, 1], [0, 0]])), "two steps"), _two_steps),
            ),
            rtol=1e-5,
            atol=1e-6,
            checks=(
                Correct(1),
                Jit(1, requirements=stays_a_loop("lax.scan")),
                Grad(2, argnums=(0,), rtol=1e-4, atol=1e-6),
            ),
            hints=(
                "Training needs the gradient of this loss, so the loop must be one that reverse-mode autodiff can go back through.",
                "`lax.scan` is differentiable (backpropagation through time); `lax.while_loop` is not, because its "
                "trip count is unknown.",
                "Carry the hidden state (zeros of length H in `xs`'s dtype) and emit it at every step, so scan stacks all "
                "T states into `(T, H)`; the loss is the mean of their squares. Keep the product as `W @ h`, as the "
                "docstring writes it.",
            ),
        ),
    ),
)

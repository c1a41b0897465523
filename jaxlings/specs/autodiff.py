"""Topic `autodiff`: value_and_grad, jacfwd vs jacrev, Hessian-vector products, custom_vjp,
stop_gradient, differentiating through a gradient, per-example gradients with vmap, and
gradient checkpointing.

Where the skill is a value (`loss_and_grads`), `correct` judges it. Where two ways give the same
numbers at very different costs, the `jit` check judges the exported program (analysed on the
trusted side, exact counts): XLA's FLOP count against the reference's on the same inputs, and
no loop (XLA's cost analysis counts ONE trip of a while loop, so a Hessian built by `lax.map`
over the basis vectors would otherwise read as cheap; `autodiff__hostile` tries it). Where two
ways give the same value and different gradients (`td_loss`, `maml_loss`, `pair_energy`), the
`grad` check judges `jax.grad` of the function against the reference's. Where the same gradient
takes much less memory one way (`remat_grad`), the `jit` check judges the program's temporary
bytes (XLA's memory analysis) against the reference's.

Measured here (2-core CPU, jax 0.10.2; `jaxlings.worker.program.analyse` on the exported
programs at the largest size, the same figures as `jax.jit(f).lower(...).compile().cost_analysis()`):
- tall_jacobian (n = 3, h = 64, m = 256): jacfwd (reference) 1.0e5 FLOPs, jacrev 8.7e6 (x86);
  reverse mode inside a `lax.map` over the rows 1.6e5 (one trip counted);
- hvp (d = 128, n = 256): forward-over-reverse (reference) 2.02e5 FLOPs, reverse-over-reverse
  2.01e5, reverse-over-forward 2.02e5, written by hand 1.98e5; `jax.hessian(...) @ v` 1.7e7
  (x85); the Hessian built by `lax.map` of HVPs over the identity 2.7e5 (x1.34: within any
  FLOP bound, hence the no-loop requirement);
- per_example_grads (n = 64, d = 8, h = 16): vmap of grad (reference) 3.4e4 FLOPs, jacrev of the
  vector of losses 1.5e6 (x45); operations at n = 2 -> 64: the reference 20 -> 20, a Python loop
  over the examples 47 -> 1,423, the same loop over one jitted helper 49 -> 1,487 (figures in
  tests/topics/test_topic_autodiff.py);
- remat_grad (L = 16, n = 64, d = 32, k = 128): XLA's temporary bytes of the gradient, jax.checkpoint
  on the scanned layer (reference) 2.46e5, nested checkpoints x1.82, the dots policy x3.2, a
  checkpointed fori_loop indexing the stacked weights x3.17, no checkpoint or a save-everything
  policy x5.2 (`TempBytesAtMost`, judged against the reference's program compiled on the same
  backend; at L = 32 the same programs read x1.97, x3.8, x3.8 and x6.5, and cost 8 times the
  arrays in the public expectations; benchmarks/lesson_figures.py measures L = 32).
"""

from __future__ import annotations

import numpy as np

from jaxlings.grading.checks import Correct, Grad, Jit
from jaxlings.grading.requirements import AvoidsOps, FlopsAtMost, OpsDoNotGrow, TempBytesAtMost
from jaxlings.grading.spec import Case, Edge, Exercise, Topic

F32 = np.float32
GRAD = Grad(3, argnums=(0,), rtol=1e-4, atol=1e-5)


def _f32(rng: np.random.Generator, *shape: int, scale: float = 1.0) -> np.ndarray:
    return (scale * rng.normal(size=shape)).astype(F32)


def _a(values, dtype=F32) -> np.ndarray:
    return np.array(values, dtype)


def _loss_and_grads(rng: np.random.Generator, size: int) -> Case:
    n, d = size, 1 + size // 8
    return Case((_f32(rng, d), np.asarray(rng.normal(), F32), _f32(rng, n, d), _f32(rng, n)))


def _tall_jacobian(rng: np.random.Generator, size: int) -> Case:
    """n = 3 inputs, h = 8 size hidden units, m = 32 size outputs."""
    n, h, m = 3, 8 * size, 32 * size
    return Case((_f32(rng, h, n), _f32(rng, h, scale=0.1), _f32(rng, m, h, scale=h**-0.5), _f32(rng, n)))


def _hvp(rng: np.random.Generator, size: int) -> Case:
    d, n = size, 2 * size
    return Case((_f32(rng, d, scale=d**-0.5), _f32(rng, n, d), (rng.random(n) < 0.5).astype(F32), _f32(rng, d)))


def _pair_energy(rng: np.random.Generator, size: int) -> Case:
    pos = _f32(rng, size, 3)
    if size >= 3:
        pos[-1] = pos[0]  # two points coincide: r = 0 off the diagonal too
    return Case((pos,))


def _td_loss(rng: np.random.Generator, size: int) -> Case:
    n, d = size, 4
    return Case((_f32(rng, d), _f32(rng, n, d), _f32(rng, n), _f32(rng, n, d), float(rng.choice([0.5, 0.9, 0.99]))))


def _maml_loss(rng: np.random.Generator, size: int) -> Case:
    n, d = size, 3
    return Case(
        (
            _f32(rng, d),
            _f32(rng, n, d),
            _f32(rng, n),
            _f32(rng, n, d),
            _f32(rng, n),
            float(rng.choice([0.01, 0.05, 0.1])),
        )
    )


def _per_example_grads(rng: np.random.Generator, size: int) -> Case:
    n, d, h = size, 8, 16
    params = {"W1": _f32(rng, h, d, scale=d**-0.5), "b1": _f32(rng, h, scale=0.1), "w2": _f32(rng, h, scale=h**-0.5)}
    return Case((params, _f32(rng, n, d), _f32(rng, n)))


def _grid(rng: np.random.Generator, *shape: int, scale: float = 1.0) -> np.ndarray:
    """Normal values rounded to sixteenths, times the power of two nearest `scale`: a few
    significant bits each, so that the large samples a public recording holds compress to a
    quarter of full-precision floats' size (remat_grad's were most of the course's recording)."""
    step = 2.0 ** round(np.log2(scale)) / 16
    return (np.round(rng.normal(size=shape) * 16) * step).astype(F32)


def _remat_params(rng: np.random.Generator, L: int, d: int, k: int) -> dict[str, np.ndarray]:
    """L layers of residual_block's weights, scaled so that the output stays of order 1."""
    return {
        "W1": _grid(rng, L, d, k, scale=d**-0.5),
        "b1": _grid(rng, L, k, scale=0.1),
        "W2": _grid(rng, L, k, d, scale=(k * L) ** -0.5),
    }


def _remat_grad(rng: np.random.Generator, size: int) -> Case:
    L, n, d = size, 4 * size, 2 * size  # k = 4 d hidden units: the wide intermediates remat drops
    return Case((_remat_params(rng, L, d, 4 * d), _grid(rng, n, d)))


NO_LOOP = AvoidsOps(
    ("while",),
    "the reference has no loop; a loop over basis vectors or examples does the work one "
    "direction at a time (and XLA's FLOP count sees only one trip of it)",
)

# -- edge families: each edge case's instances in a graded run (`Edge`), never its public one


def _ints(rng: np.random.Generator, *shape: int, lo: int = -3, hi: int = 4, scale: float = 1.0) -> np.ndarray:
    """Small integers (times a power-of-two `scale`) as float32: exact, so equalities stay exact."""
    return np.asarray(scale * rng.integers(lo, hi, shape), F32)


def _dims(rng: np.random.Generator, hi: int = 5) -> int:
    return int(rng.integers(1, hi))


def _identity_design(rng: np.random.Generator) -> Case:
    """The docstring's example's structure: X the identity, so each residual is one entry."""
    d = _dims(rng)
    return Case((_ints(rng, d), np.asarray(rng.integers(-3, 4), F32), np.eye(d, dtype=F32), _ints(rng, d)))


def _one_example(rng: np.random.Generator) -> Case:
    return Case(
        (_ints(rng, 1, scale=0.5), _ints(rng, scale=0.5), _ints(rng, 1, 1, scale=0.5), _ints(rng, 1, scale=0.5))
    )


def _identity_layer(rng: np.random.Generator) -> Case:
    """The docstring's example's structure: W1 the identity (h = n), a short readout."""
    n, m = _dims(rng), _dims(rng, 4)
    return Case((np.eye(n, dtype=F32), _ints(rng, n, scale=0.25), _ints(rng, m, n), _ints(rng, n, scale=0.25)))


def _zero_weights(rng: np.random.Generator) -> Case:
    """w = 0: every logit 0."""
    d, n = _dims(rng), _dims(rng, 6)
    return Case((np.zeros(d, F32), _ints(rng, n, d, scale=0.5), _ints(rng, n, lo=0, hi=2), _ints(rng, d)))


def _saturated(rng: np.random.Generator) -> Case:
    """Every logit at least 25 in size (w in 25..40, each row of X of one sign, entries 1..3)."""
    d, n = _dims(rng, 4), _dims(rng, 4)
    sign = rng.choice([-1.0, 1.0], size=(n, 1))
    X = (sign * rng.integers(1, 4, (n, d))).astype(F32)
    return Case((_ints(rng, d, lo=25, hi=41), X, _ints(rng, n, lo=0, hi=2), _ints(rng, d)))


def _points(rng: np.random.Generator, n: int) -> np.ndarray:
    """n distinct points of a small integer grid."""
    cells = rng.choice(7**3, size=n, replace=False)
    return (np.stack(np.unravel_index(cells, (7, 7, 7)), axis=1) - 3).astype(F32)


def _two_points(rng: np.random.Generator) -> Case:
    return Case((_points(rng, 2),))


def _single_point(rng: np.random.Generator) -> Case:
    return Case((_ints(rng, 1, 3, scale=0.5),))


def _coinciding(rng: np.random.Generator) -> Case:
    """Distinct points but for one pair that coincides exactly."""
    pos = _points(rng, int(rng.integers(3, 6)))
    i, j = rng.choice(len(pos), size=2, replace=False)
    pos[j] = pos[i]
    return Case((pos,))


def _td_case(rng: np.random.Generator, on_target: bool) -> Case:
    """Exact small numbers with r = s @ w - gamma (s_next @ w) (on target), or that plus a
    nonzero integer on one entry at least (off target)."""
    d, n = _dims(rng, 4), _dims(rng)
    w, s, s_next = _ints(rng, d), _ints(rng, n, d), _ints(rng, n, d)
    gamma = float(rng.choice([0.25, 0.5, 0.75]))
    r = s @ w - gamma * (s_next @ w)
    if not on_target:
        off = rng.integers(-2, 3, n) * (rng.random(n) < 0.5)
        off[rng.integers(n)] = rng.choice([-2, -1, 1, 2])
        r = r + off
    return Case((w, s, r.astype(F32), s_next, gamma))


def _maml_example(rng: np.random.Generator) -> Case:
    d, n = _dims(rng, 4), _dims(rng, 4)
    return Case(
        (
            _ints(rng, d),
            _ints(rng, n, d),
            _ints(rng, n),
            _ints(rng, n, d),
            _ints(rng, n),
            float(rng.choice([0.125, 0.25, 0.5])),
        )
    )


def _zero_first_layer(rng: np.random.Generator) -> Case:
    """W1 = 0 and b1 = 0: every hidden unit 0."""
    h, d, n = _dims(rng), _dims(rng), _dims(rng)
    params = {"W1": np.zeros((h, d), F32), "b1": np.zeros(h, F32), "w2": _ints(rng, h)}
    return Case((params, _ints(rng, n, d, scale=0.5), _ints(rng, n)))


def _single_example(rng: np.random.Generator) -> Case:
    h, d = _dims(rng), _dims(rng, 4)
    params = {"W1": _ints(rng, h, d, scale=0.5), "b1": _ints(rng, h, scale=0.25), "w2": _ints(rng, h, scale=0.5)}
    return Case((params, _ints(rng, 1, d, scale=0.25), _ints(rng, 1)))


def _zero_hidden(rng: np.random.Generator) -> Case:
    """W1 = 0 and b1 = 0 in every layer: every hidden unit 0, so the output is x."""
    L, n, d, k = _dims(rng), _dims(rng), _dims(rng), _dims(rng, 9)
    params = {"W1": np.zeros((L, d, k), F32), "b1": np.zeros((L, k), F32), "W2": _ints(rng, L, k, d, scale=0.5)}
    return Case((params, _ints(rng, n, d)))


def _one_layer(rng: np.random.Generator) -> Case:
    n, d, k = _dims(rng), _dims(rng), _dims(rng, 9)
    params = {
        "W1": _ints(rng, 1, d, k, scale=0.25),
        "b1": _ints(rng, 1, k, scale=0.25),
        "W2": _ints(rng, 1, k, d, scale=0.25),
    }
    return Case((params, _ints(rng, n, d, scale=0.5)))


def _one_example_deep(rng: np.random.Generator) -> Case:
    L, d = _dims(rng, 9), _dims(rng)
    return Case((_remat_params(rng, L, d, 4 * d), _f32(rng, 1, d)))


TOPIC = Topic(
    name="autodiff",
    title=(
        "Automatic differentiation: grad, Jacobians, HVPs, custom_vjp, stop_gradient, per-example gradients, "
        "checkpointing"
    ),
    exercises=(
        Exercise(
            name="loss_and_grads",
            sample=_loss_and_grads,
            edge_cases=(
                Edge(
                    Case(
                        (_a([1, 2]), np.asarray(0.0, F32), np.eye(2, dtype=F32), _a([0, 0])), "the docstring's example"
                    ),
                    _identity_design,
                ),
                Edge(
                    Case((_a([0.5]), np.asarray(-1.0, F32), _a([[2.0]]), _a([0.0])), "one example, one feature"),
                    _one_example,
                ),
            ),
            rtol=1e-5,
            atol=1e-5,
            checks=(Correct(2), Jit(1)),
            hints=(
                "One transformation gives the value and the gradient together, and can carry an auxiliary output "
                "along without differentiating it.",
                "`jax.value_and_grad` takes `argnums` (an int, or a tuple for several arguments: then the gradients "
                "come as a tuple) and `has_aux=True` (the function returns `(loss, aux)`).",
                "One transformed function, called once on all four arguments. Which arguments must it differentiate, "
                "and what does the auxiliary flag change in what it returns? Its result already has the asked "
                "structure, ((loss, aux), (grad_w, grad_b)): there is nothing to rebuild.",
            ),
        ),
        Exercise(
            name="tall_jacobian",
            sample=_tall_jacobian,
            sizes=(1, 2, 8),
            edge_cases=(
                Edge(
                    Case((np.eye(2, dtype=F32), _a([0, 0]), _a([[1, 1]]), _a([0, 0])), "the docstring's example"),
                    _identity_layer,
                ),
            ),
            rtol=1e-5,
            atol=1e-5,
            # measured at h = 64, m = 256: jacfwd 1.0e5 FLOPs, jacrev 8.7e6
            checks=(
                Correct(1),
                Jit(
                    2,
                    requirements=(
                        FlopsAtMost(
                            2.0,
                            2000.0,
                            "a tall Jacobian (3 inputs, 256 outputs) costs 3 forward-mode "
                            "passes or 256 reverse-mode ones",
                        ),
                        NO_LOOP,
                    ),
                ),
            ),
            hints=(
                "Count the directions: building a Jacobian column by column needs one pass per input, row by row one "
                "pass per output. Here there are 3 inputs and hundreds of outputs.",
                "`jax.jacfwd(f, argnums=...)` builds it from JVPs (one per input), `jax.jacrev` from VJPs (one per "
                "output). Both return the (m, n) matrix.",
                "One transformed function, called once: the mode follows from the count in the first hint, and "
                "`argnums` is the position of `x` among the function's arguments, counted from 0. The result is "
                "(outputs, inputs): check its shape.",
            ),
        ),
        Exercise(
            name="hvp",
            sample=_hvp,
            sizes=(1, 4, 16, 128),
            edge_cases=(
                Edge(
                    Case((_a([0, 0]), np.eye(2, dtype=F32), _a([1, 0]), _a([1, 2])), "the docstring's example: w = 0"),
                    _zero_weights,
                ),
                Edge(
                    Case((_a([30.0]), _a([[1.0], [2.0]]), _a([1, 0]), _a([1.0])), "saturated logits: a tiny curvature"),
                    _saturated,
                ),
            ),
            rtol=1e-5,
            atol=1e-5,
            # measured at d = 128, n = 256: forward-over-reverse 2.0e5 FLOPs, jax.hessian(...) @ v 1.7e7
            checks=(
                Correct(1),
                Jit(
                    2,
                    requirements=(
                        FlopsAtMost(2.0, 2000.0, "the Hessian-vector product must not build the d x d Hessian"),
                        NO_LOOP,
                    ),
                ),
            ),
            hints=(
                "H @ v is the derivative of the gradient in the direction v. Which transformation computes a "
                "directional derivative without forming the matrix?",
                "`jax.grad(f)` is the gradient as a function (close over `X` and `y` to make it a function of `w` "
                "alone); `jax.jvp(fn, (primal,), (tangent,))` returns `(fn(primal), derivative along tangent)`.",
                "Forward over reverse: push the direction `v` through the gradient function at `w`, and keep the "
                "tangent half of what jvp returns, shape (d,). `jax.hessian` would build all d x d entries first.",
            ),
        ),
        Exercise(
            name="pair_energy",
            sample=_pair_energy,
            sizes=(2, 5, 17, 40),
            edge_cases=(
                Edge(Case((_a([[0, 0, 0], [1, 0, 0]]),), "the docstring's example"), _two_points),
                Edge(Case((_a([[0.5, -1.0, 2.0]]),), "a single point"), _single_point),
                Edge(Case((_a([[0, 0, 0], [0, 0, 0], [0, 3, 4]]),), "two coinciding points"), _coinciding),
                Case((np.zeros((4, 3), F32),), "all points at one place", hidden=True),
            ),
            rtol=1e-5,
            atol=1e-5,
            checks=(Correct(1), Jit(1), GRAD),
            hints=(
                "The value is right with the obvious code. Compute `jax.grad` of it on two points: NaN. Where does the "
                "chain rule meet 0 times infinity, and why does masking the diagonal not remove it?",
                "Decorate a distance function (norm over the last axis) with `jax.custom_vjp` and register "
                "`fwd` (returns the value and the residuals the backward rule needs) and `bwd` (residuals and the "
                "cotangent `g` -> a tuple with one cotangent per input) with `.defvjp(fwd, bwd)`.",
                "In the backward rule, divide the difference vectors by a distance that `jnp.where` has replaced by 1 "
                "where it is 0, zero those entries with a second `where`, and multiply by `g` broadcast over the last "
                "axis. Then build the energy from the pairwise differences with the custom distance and the mask.",
            ),
        ),
        Exercise(
            name="td_loss",
            sample=_td_loss,
            edge_cases=(
                Edge(
                    Case((_a([1]), _a([[1]]), _a([0]), _a([[2]]), 0.5), "the docstring's example: on target"),
                    lambda rng: _td_case(rng, True),
                ),
                Edge(
                    Case((_a([1]), _a([[1]]), _a([1]), _a([[2]]), 0.5), "the docstring's example: off target"),
                    lambda rng: _td_case(rng, False),
                ),
            ),
            rtol=1e-5,
            atol=1e-5,
            checks=(Correct(1), Jit(1), GRAD),
            hints=(
                "The value is one line; what the grader checks is the gradient. Which part of the loss must `jax.grad` "
                "treat as a constant?",
                "`jax.lax.stop_gradient(x)` returns `x` and has a zero derivative.",
                "Build the target from the rewards and the discounted value of the next states, wrap the whole target "
                "so that no gradient flows through it, then take half the mean squared difference between the "
                "current values and that target.",
            ),
        ),
        Exercise(
            name="maml_loss",
            sample=_maml_loss,
            edge_cases=(
                Edge(
                    Case((_a([0]), _a([[1]]), _a([1]), _a([[1]]), _a([1]), 0.25), "the docstring's example"),
                    _maml_example,
                ),
            ),
            rtol=1e-5,
            atol=1e-5,
            checks=(Correct(1), Jit(1), GRAD),
            hints=(
                "`jax.grad` can be applied to a function that itself calls `jax.grad`: the outer derivative then goes "
                "through the inner gradient computation.",
                "Inside the function, the inner gradient (`jax.grad` of the given `mse` with respect to its first "
                "argument, on the training data) is an ordinary array that depends on `w`; do not cut it off with "
                "`stop_gradient` (that would be first-order MAML).",
                "Two lines: the weights adapted by one step against the inner gradient, scaled by `lr`, and the given "
                "`mse` of the adapted weights on the test data. The grader's `jax.grad` does the second derivative.",
            ),
        ),
        Exercise(
            name="per_example_grads",
            sample=_per_example_grads,
            sizes=(2, 5, 17, 64),
            edge_cases=(
                Edge(
                    Case(
                        (
                            {"W1": np.zeros((2, 3), F32), "b1": np.zeros(2, F32), "w2": _a([1, -1])},
                            np.ones((2, 3), F32),
                            _a([1, 2]),
                        ),
                        "the docstring's example: W1 = 0, b1 = 0",
                    ),
                    _zero_first_layer,
                ),
                Edge(
                    Case(
                        (
                            {"W1": np.ones((2, 1), F32), "b1": np.zeros(2, F32), "w2": _a([0.5, 0.5])},
                            _a([[0.3]]),
                            _a([1]),
                        ),
                        "one example",
                    ),
                    _single_example,
                ),
            ),
            rtol=1e-5,
            atol=1e-5,
            checks=(
                Correct(1),
                Jit(
                    2,
                    requirements=(
                        # measured, operations at n = 2 -> 64: the reference 20 -> 20, a Python loop 47 -> 1,423
                        OpsDoNotGrow(
                            "map the gradient over the examples with jax.vmap; a Python loop puts one copy of the "
                            "gradient in the program per example"
                        ),
                        NO_LOOP,
                        # measured at n = 64: vmap of grad 3.4e4 FLOPs, jax.jacrev of the n losses 1.5e6
                        FlopsAtMost(
                            2.0,
                            2000.0,
                            "one backward pass per example, on that example alone (jax.jacrev of the "
                            "batch's losses does n backward passes over the whole batch)",
                        ),
                    ),
                ),
            ),
            hints=(
                "Write nothing new about the model: `example_loss` handles one example. You need its gradient, mapped "
                "over the examples.",
                "`jax.vmap(fn, in_axes=...)` maps over the argument axes you name; `None` in `in_axes` means the "
                "argument is shared by all examples (a whole pytree, such as the params dict, takes one entry).",
                "Map the gradient of `example_loss`, not the loss itself: the parameters are shared by every example, "
                "the inputs and labels are mapped along their first axis. Every leaf of the result is the matching "
                "parameter with a leading axis of n.",
            ),
        ),
        Exercise(
            name="remat_grad",
            sample=_remat_grad,
            sizes=(1, 2, 8, 16),
            edge_cases=(
                Edge(
                    Case(
                        (
                            {
                                "W1": np.zeros((1, 1, 1), F32),
                                "b1": np.zeros((1, 1), F32),
                                "W2": np.ones((1, 1, 1), F32),
                            },
                            _a([[1]]),
                        ),
                        "the docstring's example: W1 = 0, b1 = 0",
                    ),
                    _zero_hidden,
                ),
                Edge(
                    Case(
                        (
                            {"W1": _a([[[0.5, -1.0]]]), "b1": _a([[0.25, 0.0]]), "W2": _a([[[1.0], [-0.5]]])},
                            _a([[1.0], [-2.0], [0.5]]),
                        ),
                        "one layer",
                    ),
                    _one_layer,
                ),
                Edge(
                    Case((_remat_params(np.random.default_rng(5), 4, 3, 12), _a([[0.5, -1.0, 2.0]])), "one example"),
                    _one_example_deep,
                ),
            ),
            outputs=("loss", "grads"),
            rtol=1e-4,
            atol=1e-7,
            # measured at L = 16, n = 64, d = 32, k = 128 (the largest size; 2-core CPU, jax 0.10.2), XLA's
            # temp bytes of the gradient's exported program: the reference (jax.checkpoint on the scanned
            # layer) 2.46e5; nested checkpoints (a checkpointed scan of 4 blocks of 4 checkpointed layers)
            # 4.47e5 (x1.82); the dots_with_no_batch_dims_saveable policy 7.87e5 (x3.2: it keeps each
            # layer's (n, k) product); a checkpointed layer in a fori_loop that indexes the stacked weights
            # 7.79e5 (x3.17: the loop carries the whole stack's gradient); no checkpoint 1.28e6 (x5.2), the
            # everything_saveable policy and jax.checkpoint around the whole loss the same. The bound,
            # 2.5x + 64 KiB (6.81e5), passes the nested form and fails the rest; at L = 32 the ratios were
            # x1.97, x3.8, x3.8, x6.5, but the public expectations held 8 times the arrays (33 MB). On an
            # accelerator the bound is relative to the reference's program compiled there, on the same backend.
            checks=(
                Correct(1),
                Jit(
                    2,
                    requirements=(
                        TempBytesAtMost(
                            2.5,
                            65536.0,
                            "keep only each layer's input for the backward pass and recompute the rest of the layer "
                            "(jax.checkpoint on the function that lax.scan repeats), and let lax.scan run over the "
                            "stacked parameters: a loop that indexes them (a fori_loop over W1[i]) carries the "
                            "gradient of the whole stack through every step, however well each layer is checkpointed",
                        ),
                    ),
                ),
            ),
            hints=(
                "The numbers are `jax.value_and_grad` of the given loss. What costs memory is what reverse mode keeps "
                "from the forward pass for the backward one: for each of the L layers, its wide hidden activations.",
                "`jax.checkpoint(fn)` (alias `jax.remat`) computes what `fn` computes, but under a gradient keeps only "
                "`fn`'s inputs and recomputes its intermediates during the backward pass. Its `policy` argument "
                "(`jax.checkpoint_policies`) names what may be kept anyway.",
                "Write the loss as `deep_loss` does, one `lax.scan` over the stacked layers, but give `scan` a "
                "checkpointed version of the per-layer function; then take `value_and_grad` of that loss with respect "
                "to the parameters. Checkpointing the whole loss at once saves nothing: its backward pass recomputes "
                "the whole forward pass and keeps every layer's activations of it.",
            ),
        ),
    ),
)

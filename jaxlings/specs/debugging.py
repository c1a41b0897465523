"""Topic `debugging`: run-time prints, checkify, NaNs and where they start, named scopes.

Every verdict is an outcome. `normalize_rows` is judged by what each call of the jitted
function prints on the worker's stdout (read by the grader, `prints`), and by the program
exported with `debug=False` having no callback (`jit`). `checked_entropy` returns the
checkify message as the bytes of its text, compared exactly with the reference's, on valid and
invalid inputs. `first_nan_step` returns an index, compared exactly, and its exported program
must keep the loop. `first_nan_grad` returns the index of a training loop's first NaN gradient,
compared exactly, on data where an outlier batch drives the weights negative at a drawn step, or
where targets of 0 slide them there (the next step's gradient is NaN, its loss finite); its
exported program must keep the loop too.
`scoped_mlp` is judged by the scope names in the exported program's locations (`InScope`, the
fact `scopes` of `jaxlings.worker.program`)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike

from jaxlings.grading.checks import Correct, Jit, Prints
from jaxlings.grading.requirements import InScope, OpsDoNotGrow
from jaxlings.grading.spec import Case, Edge, Exercise, Topic

# Sizes at which `normalize_rows` is sampled with debug=True; the `jit` check exports the
# function at the largest and the smallest size, where debug must be False (a program that
# holds a callback cannot be exported at all).
DEBUG_SIZES = (3, 17)


def _f32(rng: np.random.Generator, *shape: int, scale: float = 1.0) -> np.ndarray:
    return (scale * rng.normal(size=shape)).astype(np.float32)


def _rows(rng: np.random.Generator, n: int, d: int = 8) -> np.ndarray:
    """(n, d) float32 rows, about a third of them zero."""
    x = _f32(rng, n, d)
    x[rng.random(n) < 0.3] = 0.0
    return x


def _normalize_rows(rng: np.random.Generator, size: int) -> Case:
    return Case((_rows(rng, size), size in DEBUG_SIZES))


def _normalize_stream(rng: np.random.Generator, calls: int) -> list[Case]:
    """Calls in two shapes with the debug flag on and off: a run-time print shows on exactly
    the debug calls, a trace-time one on the first call of each (shape, flag)."""
    rows = [int(rng.integers(2, 7)), int(rng.integers(7, 12))]
    shape_of = [0, 0, 1, 0, 1, 1, 0, 1, 0, 0, 1, 1]
    debug_of = [True, True, True, False, False, True, False, True, True, False, True, False]
    return [Case((_rows(rng, rows[shape_of[i % 12]]), debug_of[i % 12])) for i in range(calls)]


def _probs(rng: np.random.Generator, size: int) -> Case:
    """A probability vector of length `size`, some entries 0: valid, with negative entries (the
    first check fails, and the second mostly too), or summing off 1 (the second fails)."""
    p = rng.dirichlet(np.ones(size))
    p[rng.random(size) < 0.2] = 0.0
    p = p / p.sum() if p.any() else np.full(size, 1.0 / size)
    kind = rng.choice(["valid", "negative", "sum"], p=[0.4, 0.35, 0.25])
    if kind == "negative":
        bad = rng.choice(size, size=min(size, int(rng.integers(1, 3))), replace=False)
        p[bad] = -rng.uniform(0.05, 0.5, size=bad.size)
    elif kind == "sum":
        p = p * rng.choice([rng.uniform(0.5, 0.95), rng.uniform(1.05, 2.0)])
    return Case((p.astype(np.float32),))


def _recurrence(rng: np.random.Generator, size: int, d: int = 8) -> Case:
    """T = size steps of h <- sqrt(a h + c): c in [0.2, 1) keeps the argument positive (h stays
    below 2.1), and a planted c = -10 (at one or two random steps) makes a NaN for certain."""
    h0 = rng.uniform(0.0, 1.0, d).astype(np.float32)
    a = rng.uniform(0.5, 1.5, (size, d)).astype(np.float32)
    c = rng.uniform(0.2, 1.0, (size, d)).astype(np.float32)
    if rng.random() < 0.75:
        for s in rng.choice(size, size=min(size, int(rng.integers(1, 3))), replace=False):
            c[s, rng.integers(d)] = -10.0
    if rng.random() < 0.1:
        h0[rng.integers(d)] = np.nan
    return Case((h0, a, c))


LEARNING_RATE = 0.05  # the solution's `LEARNING_RATE`
OUTLIER = 400.0  # an outlier example's features, with target 0: its gradient step is 20 / n per weight
MARGIN = 1e-3
"""The least |x @ w| a drawn training run keeps, in float64, over every example of every step up
to its first NaN gradient: far beyond float32's rounding, so no implementation moves that step."""


def nan_grad_step(w0: np.ndarray, x: np.ndarray, y: np.ndarray) -> tuple[int, float]:
    """`first_nan_grad`'s answer in float64 NumPy, and its margin: the first step whose batch
    has an example with `x @ w <= 0` (where `fit_loss`'s gradient is NaN) or -1, and the least
    |x @ w| over the examples of the steps up to that one."""
    w, margin = w0.astype(np.float64), np.inf
    for t in range(len(x)):
        z = x[t].astype(np.float64) @ w
        margin = min(margin, float(np.abs(z).min())) if not np.isnan(z).any() else 0.0
        if not (z > 0).all():
            return t, margin
        w = w - LEARNING_RATE * ((1 - y[t] / np.sqrt(z))[:, None] * x[t]).mean(axis=0)
    return -1, margin


def _training(rng: np.random.Generator, steps: int, d: int, n: int, kind: str, at: int = 0, scale: float = 1.0) -> Case:
    """`steps` batches of `n` examples of y = sqrt(x @ w_true) + noise, with x in [0.5, 1.5] *
    `scale` and both w_true and w0 in [0.5, 1.5]: gradient descent from w0 keeps `x @ w` above 0.24
    (measured on 3,000 draws of every size), so no gradient is NaN, unless `kind` is

    - "outlier": one example of batch `at` has features OUTLIER and target 0; its gradient moves
      every weight down by at least 20 / n - 0.2, so the weights leave step `at` negative (x @ w
      below -1.2) and the gradient of step `at + 1` (if any) is NaN;
    - "slide": every target is 0, so every step moves the weights down by about LEARNING_RATE *
      the features' mean, until x @ w <= 0 at a step that depends on w0 and x;
    - "negative": w0 is negative, so the gradient of step 0 is NaN."""
    w_true = rng.uniform(0.5, 1.5, d)
    w0 = rng.uniform(0.5, 1.5, d)
    x = scale * rng.uniform(0.5, 1.5, (steps, n, d))
    y = np.sqrt(x @ w_true) + rng.uniform(-0.1, 0.1, (steps, n))
    if kind == "outlier":
        i = rng.integers(n)
        x[at, i], y[at, i] = OUTLIER, 0.0
    elif kind == "slide":
        y[:] = 0.0
    elif kind == "negative":
        w0 = -w0
    return Case((w0.astype(np.float32), x.astype(np.float32), y.astype(np.float32)))


def _drawn(rng: np.random.Generator, draw: Callable[[], Case], answer: Callable[[int, int], bool]) -> Case:
    """`draw()` until its answer (with T) passes `answer` and its margin is at least MARGIN."""
    for _ in range(200):
        case = draw()
        got, margin = nan_grad_step(*case.args)
        if margin >= MARGIN and answer(got, len(case.args[1])):
            return case
    raise RuntimeError("first_nan_grad: no draw of this kind keeps its margin")


def _train(rng: np.random.Generator, size: int) -> Case:
    """T = size steps: an outlier at a random step (45%), targets that slide the weights to 0
    (30%), weights that start negative (10%), a clean run (15%)."""
    kind = str(rng.choice(["outlier", "slide", "negative", "clean"], p=[0.45, 0.3, 0.1, 0.15]))
    return _drawn(rng, lambda: _training(rng, size, 4, 8, kind, int(rng.integers(size))), lambda got, steps: True)


def _mlp(rng: np.random.Generator, size: int) -> Case:
    n, k, h, m = size, 8, 16, 4
    return Case(
        (
            _f32(rng, n, k),
            _f32(rng, k, h, scale=k**-0.5),
            _f32(rng, h, scale=0.1),
            _f32(rng, h, m, scale=h**-0.5),
            _f32(rng, m, scale=0.1),
        )
    )


def _arr(*rows: ArrayLike) -> np.ndarray:
    return np.array(rows, np.float32)


# -- edge families: each edge case's instances in a graded run (`Edge`), never its public one


def _ints(rng: np.random.Generator, *shape: int, lo: int = -4, hi: int = 5) -> np.ndarray:
    """Small integers as float32: exact, so that zeros and equalities stay exact."""
    return rng.integers(lo, hi, shape).astype(np.float32)


def _zero_and_nonzero_rows(rng: np.random.Generator) -> Case:
    """The docstring's example's structure: nonzero rows and zero rows (at least one of each)."""
    n, d = int(rng.integers(2, 6)), int(rng.integers(1, 5))
    x = _ints(rng, n, d)
    x[:, 0] = rng.choice([-3.0, -1.0, 1.0, 2.0, 4.0], n)
    x[rng.permutation(n)[: int(rng.integers(1, n))]] = 0.0
    return Case((x, True))


def _all_zero_rows(rng: np.random.Generator) -> Case:
    return Case((np.zeros((int(rng.integers(1, 6)), int(rng.integers(1, 6))), np.float32), False))


def _one_row(rng: np.random.Generator) -> Case:
    x = _ints(rng, 1, int(rng.integers(1, 7)))
    x[0, rng.integers(x.shape[1])] = rng.choice([-2.0, 1.0, 3.0])
    return Case((x, True))


def _eighths(rng: np.random.Generator, n: int, total: int) -> np.ndarray:
    """n nonnegative multiples of 1/8 summing to total/8 (exact in float32, printed exactly)."""
    return (rng.multinomial(total, np.ones(n) / n) / 8).astype(np.float32)


def _valid(rng: np.random.Generator) -> Case:
    """A valid vector, no entry 0."""
    n = int(rng.integers(2, 9))
    return Case((((1 + rng.multinomial(8 - n, np.ones(n) / n)) / 8).astype(np.float32),))


def _both_fail(rng: np.random.Generator) -> Case:
    """One or two negative entries and a sum off 1."""
    n = int(rng.integers(2, 6))
    p = _eighths(rng, n, int(rng.integers(1, 12)))
    bad = rng.permutation(n)[: int(rng.integers(1, 3))]
    p[bad] = -rng.integers(1, 5, bad.size) / 8
    if p.sum() == 1.0:
        p[bad[0]] -= 0.125
    return Case((p,))


def _sum_off(rng: np.random.Generator) -> Case:
    """Nonnegative entries summing to k/8 for some k other than 8."""
    k = int(rng.choice([t for t in range(1, 17) if t != 8]))
    return Case((_eighths(rng, int(rng.integers(1, 6)), k),))


def _valid_with_zeros(rng: np.random.Generator) -> Case:
    """A valid vector with zeros: m of its n entries positive."""
    n = int(rng.integers(2, 7))
    m = int(rng.integers(1, n))
    p = np.zeros(n, np.float32)
    p[rng.permutation(n)[:m]] = (1 + rng.multinomial(8 - m, np.ones(m) / m)) / 8
    return Case((p,))


def _recurrence_to(rng: np.random.Generator, nan_at: int | None, nan_h0: bool = False) -> Case:
    """h <- sqrt(a h + c) from h0 in [0, 3] with a in {1, 2}, c in {1, 2, 3}: h stays in (0, 3]; a
    c of -20 at step `nan_at` (in one entry or more) makes a NaN for certain."""
    t, d = int(rng.integers(2, 6)), int(rng.integers(1, 4))
    h0 = rng.integers(0, 4, d).astype(np.float32)
    a, c = rng.integers(1, 3, (t, d)).astype(np.float32), rng.integers(1, 4, (t, d)).astype(np.float32)
    if nan_at is not None:
        c[nan_at, rng.integers(d)] = -20.0
    if nan_h0:
        h0[rng.integers(d)] = np.nan
    return Case((h0, a, c))


def _train_edge(rng: np.random.Generator, kind: str, answer: Callable[[int, int], bool], at: int = 0) -> Case:
    """A few small batches (T in [2, 6], n and d in [1, 4]) of `_training`'s `kind`, with an
    outlier at step `at` (from the end when negative; `BEFORE_LAST`: any step but the last),
    whose answer (with T) passes `answer`; "slide" takes T in [6, 12] and features in [2, 6], so
    that the weights reach 0 within a few steps."""

    def draw() -> Case:
        steps = int(rng.integers(6, 13) if kind == "slide" else rng.integers(2, 7))
        where = int(rng.integers(steps - 1)) if at == BEFORE_LAST else at % steps
        d, n = int(rng.integers(1, 5)), int(rng.integers(1, 5))
        return _training(rng, steps, d, n, kind, where, scale=4.0 if kind == "slide" else 1.0)

    return _drawn(rng, draw, answer)


BEFORE_LAST = 1 << 30  # `_train_edge`: an outlier at any step but the last


def _zero_first_layer(rng: np.random.Generator) -> Case:
    """W1 = 0, b1 = 0: every row of the output is b2."""
    n, k, h, m = (int(rng.integers(1, hi)) for hi in (5, 9, 17, 4))
    return Case(
        (_ints(rng, n, k), np.zeros((k, h), np.float32), np.zeros(h, np.float32), _ints(rng, h, m), _ints(rng, m))
    )


TOPIC = Topic(
    name="debugging",
    title="debugging: run-time prints, checkify, NaNs and their first step, named scopes",
    exercises=(
        Exercise(
            name="normalize_rows",
            sample=_normalize_rows,
            static_argnums=(1,),
            edge_cases=(
                Edge(
                    Case((_arr([3.0, 4.0], [0.0, 0.0]), True), "the docstring's example, debug on"),
                    _zero_and_nonzero_rows,
                ),
                Edge(Case((np.zeros((3, 4), np.float32), False), "all rows zero, debug off"), _all_zero_rows),
                Edge(Case((_arr([1.0, 1.0, 1.0, 1.0]), True), "one row"), _one_row),
            ),
            rtol=1e-5,
            atol=1e-6,
            checks=(Correct(1), Jit(1, static_values=True), Prints(2, make=_normalize_stream, calls=12)),
            hints=(
                "A Python `print` runs while JAX traces, so once per shape (and per value of a static argument); the line "
                "must appear on every call with debug on. What prints from inside the compiled program?",
                "`jax.debug.print(fmt, *values)` stages a host callback: it prints on each call, with the run-time values. "
                "`debug` is a Python bool (static), so a plain Python `if` decides whether the print is in the program.",
                "Compute the row norms with `keepdims=True`; count the zero ones; print that count and the number of rows "
                "only under `if debug:`; divide by the norms where they are positive (a safe denominator elsewhere) and "
                "select zeros for the zero rows.",
            ),
        ),
        Exercise(
            name="checked_entropy",
            sample=_probs,
            edge_cases=(
                Edge(Case((_arr(0.5, 0.5),), "the docstring's example, valid"), _valid),
                Edge(Case((_arr(0.5, -0.5),), "the docstring's example, both checks fail"), _both_fail),
                Edge(Case((_arr(0.3, 0.3),), "the docstring's example, the sum is off"), _sum_off),
                Edge(Case((_arr(0.0, 1.0, 0.0),), "zeros in a valid vector (0 log 0 = 0)"), _valid_with_zeros),
                Case((_arr(0.2, -0.1, -0.3, 1.2),), "two negative entries, the sum is right", hidden=True),
            ),
            sizes=(1, 3, 17, 100, 5, 9),
            rtol=1e-5,
            atol=1e-6,
            checks=(Correct(3),),
            outputs=("message", "h"),
            hints=(
                "A failed `checkify.check` does not raise inside the program: `checkify.checkify(f)` returns an error value "
                "next to f's output, and you read it after the call.",
                "`checkify.check(pred, msg, **values)` formats `msg` with the values (`{i}`, `{s:.4f}`); "
                "`checkify.checkify(f)` gives a function returning `(err, out)`; jit that; `err.get()` is the message or "
                "None; `message_bytes` turns it into the array to return.",
                "Write a small function holding the two checks in the order given (the index of the first negative entry "
                "is the argmax of the boolean `p < 0`) and then the entropy with `xlogy`; checkify it, jit it, call it, and "
                "return the message's bytes with the entropy.",
            ),
        ),
        Exercise(
            name="first_nan_step",
            sample=_recurrence,
            edge_cases=(
                Edge(
                    Case(
                        (_arr(1.0), _arr([1.0], [1.0], [1.0]), _arr([3.0], [-5.0], [1.0])),
                        "the docstring's example: step 1",
                    ),
                    lambda rng: _recurrence_to(rng, 1),
                ),
                Edge(
                    Case(
                        (_arr(1.0), _arr([1.0], [1.0], [1.0]), _arr([3.0], [1.0], [1.0])),
                        "the docstring's example: no NaN",
                    ),
                    lambda rng: _recurrence_to(rng, None),
                ),
                Edge(
                    Case((_arr(np.nan, 1.0), np.ones((2, 2), np.float32), np.ones((2, 2), np.float32)), "a NaN in h0"),
                    lambda rng: _recurrence_to(rng, None, nan_h0=True),
                ),
                Case(
                    (_arr(1.0, 1.0), np.ones((4, 2), np.float32), _arr([1, 1], [1, 1], [1, 1], [1, -9])),
                    "the last step",
                    hidden=True,
                ),
            ),
            checks=(
                Correct(2),
                Jit(
                    2,
                    requirements=(
                        OpsDoNotGrow(
                            "carry the state through a `lax.scan`: a Python loop over the steps puts a copy "
                            "of the step in the program for every t"
                        ),
                    ),
                ),
            ),
            hints=(
                "Run the recurrence in a loop that stays a loop in the compiled program, and let each step report "
                "whether its new state holds a NaN.",
                "`jax.lax.scan(step, init, xs)` feeds `step(carry, x)` one row of `xs` at a time (`xs` may be a tuple "
                "of arrays) and stacks what it returns beside the carry; `jnp.isnan` and `jnp.any` make a per-step "
                "flag.",
                "Stack one boolean per step; the answer is the argmax of that stack when any flag is set and -1 "
                "otherwise (argmax alone gives 0 when none is); cast it to int32.",
            ),
        ),
        Exercise(
            name="first_nan_grad",
            sample=_train,
            edge_cases=(
                Edge(
                    Case(
                        (
                            _arr(1.0, 1.0),
                            _arr([[40.0, 40.0]], [[1.0, 1.0]], [[1.0, 1.0]]),
                            np.zeros((3, 1), np.float32),
                        ),
                        "the docstring's example: NaN the step after an outlier",
                    ),
                    lambda rng: _train_edge(rng, "outlier", lambda got, steps: got >= 1, BEFORE_LAST),
                ),
                Edge(
                    Case(
                        (_arr(1.0, 1.0), np.ones((3, 1, 2), np.float32), np.zeros((3, 1), np.float32)),
                        "the docstring's example: no NaN",
                    ),
                    lambda rng: _train_edge(rng, "clean", lambda got, steps: got == -1),
                ),
                Edge(
                    Case(
                        _train_edge(np.random.default_rng(1), "negative", lambda got, steps: got == 0).args,
                        "NaN at step 0",
                    ),
                    lambda rng: _train_edge(rng, "negative", lambda got, steps: got == 0),
                ),
                Edge(
                    Case(
                        _train_edge(np.random.default_rng(2), "outlier", lambda got, steps: got == steps - 1, -2).args,
                        "NaN at the last step",
                    ),
                    lambda rng: _train_edge(rng, "outlier", lambda got, steps: got == steps - 1, -2),
                ),
                Edge(
                    Case(
                        _train_edge(np.random.default_rng(3), "outlier", lambda got, steps: got == -1, -1).args,
                        "an outlier at the last step: no NaN",
                    ),
                    lambda rng: _train_edge(rng, "outlier", lambda got, steps: got == -1, -1),
                ),
                Edge(
                    Case(
                        _train_edge(np.random.default_rng(4), "slide", lambda got, steps: 1 <= got < steps).args,
                        "no outlier: the weights slide to 0",
                    ),
                    lambda rng: _train_edge(rng, "slide", lambda got, steps: 1 <= got < steps),
                ),
            ),
            checks=(
                Correct(2),
                Jit(
                    2,
                    requirements=(
                        OpsDoNotGrow(
                            "carry the weights through a `lax.scan`: a Python loop over the steps puts a copy "
                            "of the step, gradient included, in the program for every t"
                        ),
                    ),
                ),
            ),
            hints=(
                "Each step needs the gradient at the current weights, a flag saying whether it holds a NaN, and the "
                "updated weights for the next step; the loop must stay a loop in the compiled program. Watch the "
                "gradient, not the loss: the loss is still finite at the step that breaks.",
                "`jax.grad(fit_loss)` gives the gradient with respect to the weights; `jax.lax.scan(step, init, xs)` "
                "feeds one batch at a time (`xs` may be the tuple of both arrays) and stacks what each step emits.",
                "Carry the weights, emit `any(isnan(gradient))` per step, and turn the stacked flags into the index of "
                "the first set one, or -1 when none is (argmax alone gives 0), as int32.",
            ),
        ),
        Exercise(
            name="scoped_mlp",
            sample=_mlp,
            edge_cases=(
                Edge(
                    Case(
                        (
                            np.ones((3, 8), np.float32),
                            np.zeros((8, 16), np.float32),
                            np.zeros(16, np.float32),
                            np.ones((16, 2), np.float32),
                            _arr(1.0, 2.0),
                        ),
                        "the docstring's example: W1 = 0, b1 = 0",
                    ),
                    _zero_first_layer,
                ),
            ),
            rtol=1e-5,
            atol=1e-5,
            checks=(
                Correct(1),
                Jit(
                    2,
                    requirements=(
                        InScope(
                            "hidden",
                            "dot_general",
                            'compute `x @ W1 + b1` and the relu inside `jax.named_scope("hidden")`',
                        ),
                        InScope(
                            "readout",
                            "dot_general",
                            "compute `h @ W2 + b2` inside "
                            '`jax.named_scope("readout")`, beside the first scope, not inside it',
                        ),
                    ),
                ),
            ),
            hints=(
                "A named scope is a `with` block: every operation staged inside it gets the scope's name as a prefix.",
                "`jax.named_scope(name)` is a context manager; `jax.jit(f).lower(...).as_text(debug_info=True)` shows "
                "the scope names in the lowered program, so you can check yours.",
                "Two consecutive `with` blocks at the function's top level, the second not nested in the first: the "
                "first computes the hidden activations (matmul, bias, relu), the second the output from them.",
            ),
        ),
    ),
)

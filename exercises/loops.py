# Topic `loops`: replace each `raise NotImplementedError(...)` below with your code.
# Lesson: lessons/loops.md. Check: `grade check loops` (re-check on save: `grade watch loops`).
# Stuck? `grade hint loops.<function>`. Each docstring ends with what is graded; the rules all
# exercises share are in README.md ("How you are graded").
"""Loops that stay loops: `lax.fori_loop`, `lax.scan`, `lax.while_loop`.

Under `jax.jit` a Python `for` loop runs while JAX traces your function: it is *unrolled*,
each iteration's operations copied once more into the program. The lesson's power iteration
(32x32, 1000 steps), measured on 2 shared CPU cores (jax 0.10.2, five runs; the lesson
quotes the same figures):

    Python loop under jit:  3000 jaxpr equations, 27039 HLO lines, 20 to 59 s to compile
    lax.fori_loop:             1 jaxpr equation,    109 HLO lines, 0.16 to 0.7 s to compile

The program grows with the trip count, and so does its compile time (the lesson's table).
A rolled loop keeps the program small.

What a rolled loop does NOT promise is a faster run. XLA can fuse an unrolled loop into one
pass, while each rolled iteration pays for its own loop control (and, on an accelerator, its
kernel launches). On that CPU the power iteration ran in 0.13 to 0.19 ms rolled and 0.9 to
8 ms unrolled; on one TPU v5e chip (the same script, one run) it ran the other way round,
2.0 ms rolled and 1.65 ms unrolled. So: a rolled loop buys compile time and a small program;
run time depends, measure it. The knob in between is `unroll=k` (on `lax.scan` and
`lax.fori_loop`): the loop stays a loop whose body holds k steps.

Which loop to use:
  - `lax.fori_loop(lo, hi, body, x)`: a fixed trip count. With Python-int bounds it becomes
    a `scan` (differentiable); with traced bounds a `while` (jax.grad fails through it).
  - `lax.scan(step, carry, xs)`: a recurrence over the rows of `xs` that also stacks an output
    per step: the whole trajectory. Reverse-mode differentiable (backprop through time).
  - `lax.while_loop(cond, body, x)`: a trip count nobody knows before running (convergence).
    Forward-mode only: `jax.grad` through it raises.

The grader checks, from counts that are exact on every machine, that your loop stays a loop:
the exported program has a `while` (what `scan` and `fori_loop` become), its operations do
not grow with the trip count, and its compiled HLO is not many times the reference's (as it is
when `unroll=True` copies every step); it also compares your compile time with the reference's.
"""

import jax
import jax.numpy as jnp
from jax import lax


def power_iteration(A, x0, n_iters):
    """The dominant eigenvector of a matrix by power iteration, with `lax.fori_loop`.

    `A` is float32 (n, n), `x0` float32 (n,) (non-zero), `n_iters` a Python int >= 0 (static
    under jit). Start from `x = x0 / ||x0||`; then `n_iters` times: `y = A @ x`,
    `x = y / ||y||` (Euclidean norm, `jnp.linalg.norm`). Return the tuple `(x, lam)`: the final
    float32 (n,) vector and its Rayleigh quotient `lam = x @ (A @ x)`, a float32 scalar.
    Multiply with `@` (the grader's tolerance assumes the same matrix product as the reference).

    Example: A = [[2, 0], [0, 1]], x0 = [1, 1], n_iters = 1 gives x = [0.894, 0.447]
    (that is [2, 1] / sqrt(5)) and lam = 1.8; with many iterations x -> [1, 0] and lam -> 2.

    Graded (4 points):
      - correct (2): make `x` and `lam` equal the reference's¹, called as written on 3 edge
        cases ("the docstring's example", "the docstring's example, converged", "no iterations:
        the normalised start"; graded on other inputs of each kind) and 4 random cases.
      - jit (2): make it work jitted by the grader (with `n_iters` static) once it is correct:
        the reference's outputs on the same cases; in its exported program: no host callbacks;
        no re-tracing (one program, exported from the shapes, for new values of those shapes); a
        `while` loop (`lax.fori_loop`, `lax.scan`, `lax.while_loop`); it does not grow with the
        input²; compiled HLO of at most about the reference's lines³; it compiles in at most
        about the reference's compile time⁴.
      ¹ rtol 1e-5, atol 1e-5 for float outputs; integers, booleans and keys exactly. ² at the
      largest case at most x3 + 20 the operations of the smallest: a loop stays a loop, a Python
      loop is unrolled. ³ at most x4 + 300 the reference's lines. ⁴ at most x4 + 1 s the
      reference's compile time.
    """
    raise NotImplementedError("power_iteration: your code here")


def ema(xs, alpha):
    """The exponential moving average of a sequence, every step of it, with `lax.scan`.

    `xs` is float32 (T, d): T steps of a d-dimensional signal. `alpha` is a float in (0, 1]
    (traced under jit). With `m = 0` (shape (d,)) before the first step, step t computes
    `m = alpha * xs[t] + (1 - alpha) * m`. Return every m, stacked: float32 (T, d), row t
    being the average after step t.

    Example: xs = [[2], [0], [4]], alpha = 0.5 gives [[1], [0.5], [2.25]].

    Graded (4 points):
      - correct (2): make the output equal the reference's¹, called as written on 3 edge cases
        ("the docstring's example", "alpha = 1 follows the signal", "one step"; graded on other
        inputs of each kind) and 4 random cases.
      - jit (2): make it work jitted by the grader once it is correct: the reference's outputs
        on the same cases; in its exported program: no host callbacks; no re-tracing (one
        program, exported from the shapes, for new values of those shapes); a `while` loop
        (`lax.fori_loop`, `lax.scan`, `lax.while_loop`); it does not grow with the input²;
        compiled HLO of at most about the reference's lines³; it compiles in at most about the
        reference's compile time⁴.
      ¹ rtol 1e-5, atol 1e-5 for float outputs; integers, booleans and keys exactly. ² at the
      largest case at most x3 + 20 the operations of the smallest: a loop stays a loop, a Python
      loop is unrolled. ³ at most x4 + 300 the reference's lines. ⁴ at most x4 + 1 s the
      reference's compile time.
    """
    raise NotImplementedError("ema: your code here")


def newton_sqrt(a, tol):
    """Square roots by Newton's method, iterated until converged, with `lax.while_loop`.

    `a` is float32 (n,) with positive entries; `tol` a float >= 0 (traced under jit). Start
    from `x = a` and count updates in `k = 0` (int32). While the largest relative residual
    `jnp.max(jnp.abs(x * x - a) / a)` is greater than `tol` AND `k < 100`, update every entry,
    `x = 0.5 * (x + a / x)`, and `k = k + 1`. Return the tuple `(x, k)`: float32 (n,) and an
    int32 scalar. Nobody knows the number of updates before running: that is what
    `lax.while_loop` is for (the cap of 100 stops a tolerance that cannot be reached).

    Example: a = [4, 9], tol = 1e-3 gives x = [2.0, 3.0001] after k = 4 updates;
    a = [2, 3, 7] with tol = 0 stops at the cap, k = 100.

    Graded (4 points):
      - correct (2): make `x` and `k` equal the reference's¹, called as written on 3 edge cases
        ("the docstring's example", "a tolerance never reached: the cap stops it", "already
        converged: no update"; graded on other inputs of each kind) and 4 random cases.
      - jit (2): make it work jitted by the grader once it is correct: the reference's outputs
        on the same cases; in its exported program: no host callbacks; no re-tracing (one
        program, exported from the shapes, for new values of those shapes); a loop whose number
        of steps depends on the data (a `while` whose trip count XLA cannot know).
      ¹ rtol 1e-5, atol 1e-6 for float outputs; integers, booleans and keys exactly.
    """
    raise NotImplementedError("newton_sqrt: your code here")


def rnn_loss(W, xs):
    """The loss of a tiny recurrent network, written so that `jax.grad` can go through it.

    `W` is float32 (H, H), `xs` float32 (T, H): the inputs of T steps. With `h = 0` (shape
    (H,)) before the first step, step t computes `h = jnp.tanh(W @ h + xs[t])`. Return the
    mean of the squares of all T hidden states, `jnp.mean(hs ** 2)` with `hs` of shape
    (T, H), a float32 scalar.

    Training needs `jax.grad(rnn_loss)(W, xs)`: backpropagation through time. `lax.scan`
    (and `lax.fori_loop` with Python-int bounds, which becomes a scan) can be differentiated
    in reverse mode; `lax.while_loop` cannot.

    Example: W = 0 (2x2), xs = [[0.5, -0.5]] gives tanh(0.5)**2 = 0.2136.

    Graded (4 points):
      - correct (1): make the output equal the reference's¹, called as written on 2 edge cases
        ("the docstring's example", "two steps"; graded on other inputs of each kind) and 4
        random cases.
      - jit (1): make it work jitted by the grader once it is correct: the reference's outputs
        on the same cases; in its exported program: no host callbacks; no re-tracing (one
        program, exported from the shapes, for new values of those shapes); a `while` loop
        (`lax.fori_loop`, `lax.scan`, `lax.while_loop`); it does not grow with the input²;
        compiled HLO of at most about the reference's lines³; it compiles in at most about the
        reference's compile time⁴.
      - grad (2): make `jax.grad` with respect to `W` equal the reference's gradient⁵ on every
        case.
      ¹ rtol 1e-5, atol 1e-6 for float outputs; integers, booleans and keys exactly. ² at the
      largest case at most x3 + 20 the operations of the smallest: a loop stays a loop, a Python
      loop is unrolled. ³ at most x4 + 300 the reference's lines. ⁴ at most x4 + 1 s the
      reference's compile time. ⁵ rtol 1e-4, atol 1e-6 for float outputs; integers, booleans and
      keys exactly.
    """
    raise NotImplementedError("rnn_loss: your code here")

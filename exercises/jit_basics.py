# Topic `jit_basics`: replace each `raise NotImplementedError(...)` below with your code.
# Lesson: lessons/jit_basics.md. Check: `grade check jit_basics` (re-check on save: `grade watch jit_basics`).
# Stuck? `grade hint jit_basics.<function>`. Each docstring ends with what is graded; the rules all
# exercises share are in README.md ("How you are graded").
"""jit basics: tracing, pure functions, branching on traced values, dead code, and when jit pays.

`jax.jit(f)` does not run `f` on your numbers. The first time it sees arguments of a new shape
and dtype it *traces* `f`: it calls your Python function once, with abstract stand-ins
(tracers) that record every `jax.numpy` operation into a program (a jaxpr), and XLA compiles
that program. Every later call with the same shapes and dtypes runs the compiled program and
never enters your Python code again. Each exercise below is one consequence of that:

- **Python side effects run at trace time only.** A `print` inside a jitted function prints
  once per trace, and shows tracers, not values (`logged_softmax`). A global is read once too:
  its value is baked into the compiled program, and a global counter bumped inside the
  function counts traces, not calls (`ema_update`). So a jitted function must be *pure*: what
  it depends on comes in as arguments, what it changes goes out as return values.
  `jax.debug.print` prints at run time, on every call, through a host callback: a debugging
  tool, which the grader's `jit` check refuses in finished code.
- **Python `if` cannot branch on a traced value.** While tracing, `norm > max_norm` is a tracer,
  not a bool, and `if` raises `TracerBoolConversionError`. Compute both sides and select with
  `jnp.where` (`clip_by_norm`). Python `if` on *static* things (shapes, dtypes, arguments
  declared static) is fine: it decides at trace time what the program contains.
- **XLA removes dead code**: work whose result never reaches an output is deleted from the
  compiled program. Work that does reach it stays, even multiplied by zero, since `0 * inf` is
  NaN (`regularized_loss`).
- **jit pays off where it saves dispatches, compilations and passes over memory, and nowhere
  else.** The binary cross-entropy of `bce_fast`, eight elementwise operations and a mean,
  runs several times faster jitted, because XLA fuses it into one pass over memory; eagerly,
  each new input shape also compiles every operation on its own (`bce_fast` quotes the
  figures). `x @ W + b` at n = 1024 takes about the same time jitted or not: one big matmul
  dominates either way (`affine`; the lesson's figures measure it).
  Measure before you believe a speed-up.
"""

import jax
import jax.numpy as jnp


def clip_by_norm(g, max_norm):
    """Clip a gradient to a maximum Euclidean norm, as optimizers do before a step.

    `g` is a float32 array of any shape; `max_norm` is a positive float, traced under jit (as
    is every argument not declared static). With `norm = sqrt(sum(g ** 2))` over all entries,
    return `g * (max_norm / norm)` when `norm > max_norm`, and `g` unchanged otherwise: same
    shape and dtype, and an all-zero `g` stays zero (no NaN).

    Example: `clip_by_norm(jnp.array([3.0, 4.0]), 1.0)` is `[0.6, 0.8]`, and
    `clip_by_norm(jnp.array([3.0, 4.0]), 10.0)` is `[3.0, 4.0]`.

    `if norm > max_norm:` works when the function is called directly (the norm is then a
    concrete array) and raises `TracerBoolConversionError` under `jax.jit`, where it is a
    tracer. Do not branch: select.

    Graded (3 points):
      - correct (1): make the output equal the reference's¹, called as written on 4 edge cases
        ("the docstring's example, clipped", "the docstring's example, unchanged", "norm equal
        to max_norm", "all zeros"; graded on other inputs of each kind) and 4 random cases.
      - jit (2): make it work jitted by the grader once it is correct: the reference's outputs
        on the same cases; in its exported program: no host callbacks; no re-tracing (one
        program, exported from the shapes, for new values of those shapes).
      ¹ rtol 1e-5, atol 1e-6 for float outputs; integers, booleans and keys exactly.
    """
    raise NotImplementedError("clip_by_norm: your code here")


def logged_softmax(x):
    """Softmax along the last axis that announces every trace with a Python `print`.

    `x` is float32 of shape (..., n). Return `exp(x - m) / sum(exp(x - m))` along the last
    axis, where `m` is the maximum along that axis (so that large entries do not overflow):
    same shape and dtype as `x`.

    Also print exactly one line, with Python's own `print`:

        print(f"tracing logged_softmax: {x.dtype}{list(x.shape)}")

    for example `tracing logged_softmax: float32[4, 8]`. Called directly, the function prints
    on every call. Under `jax.jit` the line is printed while JAX traces: once for each new
    input shape, then never again for that shape. That makes it an exact, free log of when
    your function is compiled. (`print(x)` there would show a tracer, not numbers; and
    `jax.debug.print` prints at run time, on every call.)

    Example: `f = jax.jit(logged_softmax)`, then `f(a)`, `f(a + 1)`, `f(b)` with `a` of shape
    (4, 8) and `b` of shape (2, 8) prints `tracing logged_softmax: float32[4, 8]` on the first
    call, nothing on the second, `tracing logged_softmax: float32[2, 8]` on the third.

    Graded (4 points):
      - correct (1): make the output equal the reference's¹, called as written on 2 edge cases
        ("large entries (exp would overflow)", "three dimensions, all equal"; graded on other
        inputs of each kind) and 4 random cases.
      - jit (1): make it work jitted by the grader once it is correct: the reference's outputs
        on the same cases; in its exported program: no host callbacks; no re-tracing (one
        program, exported from the shapes, for new values of those shapes).
      - prints (2): make every call print exactly what the reference prints on that call (read
        from your process's stdout): jitted once by the grader and called on a stream of 12
        inputs from cold caches.
      ¹ rtol 1e-5, atol 1e-6 for float outputs; integers, booleans and keys exactly.
    """
    raise NotImplementedError("logged_softmax: your code here")


def ema_update(count, avg, x, decay):
    """One step of a bias-corrected exponential moving average, its state passed in and out.

    The state is `(count, avg)`: `count` is an int32 scalar (the updates so far), `avg` a
    float32 array (the running average; zeros before the first update). `x` is the new value,
    of `avg`'s shape, and `decay` a float in [0, 1), traced under jit. Return the tuple
    `(count + 1, new_avg, debiased)` with

        new_avg  = decay * avg + (1 - decay) * x
        debiased = new_avg / (1 - decay ** (count + 1))

    `debiased` undoes the pull towards the zeros `avg` started from, as Adam does for its
    moments. Example: from `count = 0` and `avg = 0`, the first update gives `debiased` equal to `x`
    up to float32 rounding (0.99999976 for `x = 1` with `decay = 0.9`).

    The count is an argument for a reason. The tempting version keeps it in a global
    (`global step; step += 1`): called directly, that counts calls; under jit the increment
    runs once, while tracing, and the compiled function uses the count it saw then on every
    later call. The state of a jitted function comes in as arguments and goes out as results.

    Graded (3 points):
      - correct (2): make `count`, `new_avg` and `debiased` equal the reference's¹, called as
        written on 2 edge cases ("the first update: debiased is x, to rounding", "a long run, a
        scalar"; graded on other inputs of each kind) and 4 random cases.
      - jit (1): make it work jitted by the grader once it is correct: the reference's outputs
        on the same cases; in its exported program: no host callbacks; no re-tracing (one
        program, exported from the shapes, for new values of those shapes).
      ¹ rtol 1e-5, atol 1e-6 for float outputs; integers, booleans and keys exactly.
    """
    raise NotImplementedError("ema_update: your code here")


def regularized_loss(W, X, Y, l2):
    """Least squares with an orthogonality penalty that costs nothing when it is switched off.

    `W` is float32 (d, d), `X` and `Y` float32 (n, d), and `l2` a Python float >= 0, static
    under jit. Return the float32 scalar

        mean((X @ W - Y) ** 2) + l2 * sum((W.T @ W - I) ** 2)

    with `I` the (d, d) identity. The data term costs about 2 n d**2 FLOPs, the penalty
    2 d**3 more. Example: for `W = I` the penalty is 0 and the loss is `mean((X - Y) ** 2)`.

    With `l2 = 0` the compiled function must not compute the penalty. XLA deletes dead code
    (work whose result never reaches the output), so an unused `penalty = ...` line costs
    nothing under jit, while `loss + l2 * penalty` with `l2 = 0.0` keeps all of it: XLA may
    not replace `0 * penalty` by 0, since `0 * inf` is NaN. `l2` is static, so Python can
    decide at trace time whether the penalty is part of the program at all.

    `jax.jit(f).lower(...).compile().cost_analysis()` reports XLA's FLOP count of a compiled
    function.

    Graded (3 points):
      - correct (1): make the output equal the reference's¹, called as written on 2 edge cases
        ("the docstring's example: W = I", "l2 = 0, small"; graded on other inputs of each kind)
        and 4 random cases.
      - jit (2): make it work jitted by the grader (with `l2` static) once it is correct: the
        reference's outputs on the same cases; in its exported program: no host callbacks; no
        re-tracing (one program, exported from the shapes, for new values of those shapes);
        XLA's FLOP count at most about the reference's².
      ¹ rtol 1e-5, atol 1e-5 for float outputs; integers, booleans and keys exactly. ² at most
      x1.5 + 100 the reference's on the same inputs.
    """
    raise NotImplementedError("regularized_loss: your code here")


def bce_with_logits(z, y):
    """Binary cross-entropy from logits `z` and labels `y`, averaged, in its stable form (given).

    `mean(max(z, 0) - z * y + log1p(exp(-|z|)))`: eight elementwise operations and a mean.
    """
    return jnp.mean(jnp.maximum(z, 0.0) - z * y + jnp.log1p(jnp.exp(-jnp.abs(z))))


def bce_fast(z, y):
    """`bce_with_logits(z, y)`, fast as called: the grader calls this function as you wrote it.

    `z` (logits) and `y` (labels, 0.0 or 1.0) are float32 arrays of one shape (batch, 16);
    return the float32 scalar `bce_with_logits(z, y)` (the function above, given). A loss is
    called on every batch from a plain Python training loop, where nobody jits it for you.

    Called eagerly, `bce_with_logits` runs its nine operations one at a time: each is a
    dispatch and a full pass over the batch, and each is compiled on its own for every new
    batch shape (9 compilations per shape). Jitted, it is one program, compiled once per
    shape, which XLA fuses into one pass. Measured by the course's figure script (the one
    behind the lesson's figures) on 2 shared CPU cores, jax 0.10.2, at 2**20 elements: 6.1 ms
    eagerly and 1.8 ms jitted in one run (x3.3), x3.7 in another, both under a heavy load;
    27 compilations for 3 new shapes eagerly. You may add code outside this function.

    Graded (4 points):
      - correct (1): make the output equal the reference's¹, called as written on 1 edge case
        ("large logits (exp would overflow)"; graded on other inputs of each kind) and 4 random
        cases.
      - jit (1): make it work jitted by the grader once it is correct: the reference's outputs
        on the same cases; in its exported program: no host callbacks; no re-tracing (one
        program, exported from the shapes, for new values of those shapes).
      - compiles (1): compile at most 4 times² on a stream of 12 calls, called as written, with
        the reference's outputs (a function whose operations compile one by one, without jit,
        fails).
      - speed (1): be about as fast as the reference³: called as written, timed on `z`
        float32[2**16, 16], `y` float32[2**16, 16] (`z` float32[2**20, 16], `y` float32[2**20,
        16] on a GPU; `z` float32[2**22, 16], `y` float32[2**22, 16] on a TPU).
      ¹ rtol 1e-5, atol 1e-6 for float outputs; integers, booleans and keys exactly. ²
      compilations are counted by JAX's compilation events and by the grader's clock: each slow
      call runs again after the stream, and a call whose first run takes a compilation's time
      more than its replay, or whose replay alone takes half a compilation's, counts as one; 1
      such call forgiven; and the time those calls spend compiling may add up to at most 5.5 of
      the reference's compilations. ³ full points up to x1.25 the reference's time, none from
      x5, log-linear between (on a CPU the clock is CPU time, and a wall time past x5 scores 0
      too).
    """
    raise NotImplementedError("bce_fast: your code here")


def affine(x, W, b):
    """`x @ W + b`, where jit pays (almost) nothing: also timed as called.

    `x` is float32 (n, k), `W` float32 (k, m), `b` float32 (m,); return the (n, m) float32
    array `x @ W + b`.

    One big matmul dominates the time, jitted or not: jit saves the add's dispatch and little
    else (on the course's CPU the compiled program still runs the matmul, then the add), so at
    n = k = m = 1024 both take about the same time on a CPU (the lesson measures it). The
    grader times your function as written against a reference that is *not* jitted, so jit
    it or not, as you like; what costs time here is anything but one matmul, such as a
    Python loop over the rows.

    Graded (3 points):
      - correct (1): make the output equal the reference's¹, called as written on 4 random
        cases.
      - jit (1): make it work jitted by the grader once it is correct: the reference's outputs
        on the same cases; in its exported program: no host callbacks; no re-tracing (one
        program, exported from the shapes, for new values of those shapes).
      - speed (1): be about as fast as the reference²: called as written, timed on `x`
        float32[384, 1536], `W` float32[1536, 384], `b` float32[384] (`x` float32[2**10, 2**12],
        `W` float32[2**12, 2**10], `b` float32[2**10] on a GPU; `x` float32[3072, 12288], `W`
        float32[12288, 3072], `b` float32[3072] on a TPU).
      ¹ rtol 1e-5, atol 1e-5 for float outputs; integers, booleans and keys exactly. ² full
      points up to x1.25 the reference's time, none from x10, log-linear between (on a CPU the
      clock is CPU time, and a wall time past x10 scores 0 too).
    """
    raise NotImplementedError("affine: your code here")

# Topic `autodiff`: replace each `raise NotImplementedError(...)` below with your code.
# Lesson: lessons/autodiff.md. Check: `grade check autodiff` (re-check on save: `grade watch autodiff`).
# Stuck? `grade hint autodiff.<function>`. Each docstring ends with what is graded; the rules all
# exercises share are in README.md ("How you are graded").
"""Automatic differentiation: grad and its relatives, and what each one costs.

`jax.grad(f)` is a new function that returns the gradient of the scalar function `f` with
respect to its first argument (`argnums` picks others; a tuple gives a tuple of gradients).
Everything else in this topic is built from two primitive operations of autodiff:

- **forward mode**, `jax.jvp(f, (x,), (u,))`: `f(x)` and the Jacobian-vector product `J u`,
  computed alongside the forward pass, in memory that does not grow with the depth of `f`.
  One input direction per pass, any number of outputs.
- **reverse mode**, `y, pullback = jax.vjp(f, x)`, then `pullback(w)`: the vector-Jacobian
  product `w^T J`. The backward pass needs the forward pass's intermediates, so reverse mode
  keeps them in memory: as many as `f` has layers. One output direction per pass, any number
  of inputs. `jax.grad` is a VJP with `w = 1`.

In FLOPs the two cost about the same, a few times `f` (3x for a stack of tanh layers, in XLA's
count); the difference is memory. `jax.checkpoint` trades it back: its function's
intermediates are recomputed during the backward pass instead of kept.

A full Jacobian of `f: R^n -> R^m` is n JVPs (`jax.jacfwd`) or m VJPs (`jax.jacrev`), each
batched with `vmap`: forward mode is cheaper for a tall Jacobian (few inputs, many outputs),
reverse mode for a wide one (a loss of many parameters). `jax.hessian(f)` is
`jacfwd(jacrev(f))`: an n x n matrix, which is rarely what you need; a Hessian-vector product
is one JVP of the gradient and never builds it.

Transformations compose: `jax.grad(jax.grad(f))` is a second derivative, a meta-learning loss
differentiates through an inner gradient step, `jax.vmap(jax.grad(loss), in_axes=(None, 0, 0))`
gives one gradient per example in one batched program. `jax.lax.stop_gradient(x)` is the
identity whose derivative is zero (a target that must not move), and `jax.custom_vjp` gives a
function the backward rule you choose, where the chain rule produces NaN.

The exercises use float32 and are compared with tolerances (1e-5 relative for values unless
a docstring says otherwise). Where an exercise names a transformation, the grader checks the
outcome (values, gradients, the compiled program's size, FLOPs and memory), not which API you
called.
"""

import jax
import jax.numpy as jnp


def linear_loss(w, b, X, y):
    """Mean squared error of the linear model `X @ w + b` (given), with its mean absolute error.

    Returns `(mse, mae)`: the loss first, an auxiliary number second.
    """
    residual = X @ w + b - y
    return jnp.mean(residual**2), jnp.mean(jnp.abs(residual))


def loss_and_grads(w, b, X, y):
    """The loss, its auxiliary output, and its gradients with respect to `w` and `b`, in one pass.

    `w` is float32 (d,), `b` a float32 scalar, `X` float32 (n, d), `y` float32 (n,). With
    `(mse, mae) = linear_loss(w, b, X, y)` (given above), return

        ((mse, mae), (d mse / d w, d mse / d b))

    shapes `(((), ()), ((d,), ()))`, all float32: exactly the structure that
    `jax.value_and_grad` returns for a function of two differentiated arguments whose output
    is a pair (loss, auxiliary data). `mae` is carried along, not differentiated.

    Example: with `w = [1, 2]`, `b = 0`, `X = [[1, 0], [0, 1]]`, `y = [0, 0]`, the residuals
    are `[1, 2]`: `mse = 2.5`, `mae = 1.5`, `d mse/d w = [1, 2]`, `d mse/d b = 3` (to 1e-5).

    Graded (3 points):
      - correct (2): make the output equal the reference's¹, called as written on 2 edge cases
        ("the docstring's example", "one example, one feature"; graded on other inputs of each
        kind) and 4 random cases.
      - jit (1): make it work jitted by the grader once it is correct: the reference's outputs
        on the same cases; in its exported program: no host callbacks; no re-tracing (one
        program, exported from the shapes, for new values of those shapes).
      ¹ rtol 1e-5, atol 1e-5 for float outputs; integers, booleans and keys exactly.
    """
    raise NotImplementedError("loss_and_grads: your code here")


def mlp(W1, b1, W2, x):
    """A one-hidden-layer network from R^n to R^m (given): `W2 @ tanh(W1 @ x + b1)`."""
    return W2 @ jnp.tanh(W1 @ x + b1)


def tall_jacobian(W1, b1, W2, x):
    """The Jacobian of the network's output with respect to its input, the cheap way round.

    `W1` float32 (h, n), `b1` float32 (h,), `W2` float32 (m, h), `x` float32 (n,), with few
    inputs and many outputs (n = 3 inputs, h = 8 to 64 hidden units, m = 4 h outputs). Return the float32 (m, n) Jacobian
    `J[i, j] = d mlp(W1, b1, W2, x)[i] / d x[j]` of `mlp` (given above).

    Both `jax.jacfwd` and `jax.jacrev` give this matrix. Forward mode pushes n = 3 tangent
    directions through the network; reverse mode pulls back m cotangents, one per output. For
    this tall Jacobian one of them does about m / n times the work of the other.

    Example: with `W1 = I` (2 x 2), `b1 = 0`, `W2 = [[1, 1]]` and `x = 0`, the Jacobian is
    `[[1, 1]]` (tanh'(0) = 1), to 1e-5.

    Measured at h = 64, m = 256: forward mode 1.0e5 FLOPs, reverse mode 8.7e6.

    Graded (3 points):
      - correct (1): make the output equal the reference's¹, called as written on 1 edge case
        ("the docstring's example"; graded on other inputs of each kind) and 3 random cases.
      - jit (2): make it work jitted by the grader once it is correct: the reference's outputs
        on the same cases; in its exported program: no host callbacks; no re-tracing (one
        program, exported from the shapes, for new values of those shapes); XLA's FLOP count at
        most about the reference's²; no `while` loop (`lax.fori_loop`, `lax.scan`,
        `lax.while_loop`).
      ¹ rtol 1e-5, atol 1e-5 for float outputs; integers, booleans and keys exactly. ² at most
      x2 + 2000 the reference's on the same inputs.
    """
    raise NotImplementedError("tall_jacobian: your code here")


def logistic_loss(w, X, y):
    """The mean logistic loss of labels `y` in {0, 1} for logits `X @ w` (given)."""
    z = X @ w
    return jnp.mean(jax.nn.softplus(z) - y * z)


def hvp(w, X, y, v):
    """The Hessian of the logistic loss times a vector, without ever building the Hessian.

    `w` float32 (d,), `X` float32 (n, d), `y` float32 (n,) of 0.0 and 1.0, `v` float32 (d,).
    With `H` the (d, d) Hessian of `logistic_loss(w, X, y)` (given above) with respect to `w`,
    return `H @ v`, float32 (d,).

    `jax.hessian(...)(w) @ v` gives the same numbers, after d gradient evaluations and a d x d
    matrix. The Hessian-vector product is the directional derivative of the gradient: the
    derivative of `w -> grad(w)` along `v`, one forward-mode pass through the gradient
    (forward-over-reverse), at about the cost of two or three gradients, in O(d) memory. This is
    what Newton-CG, influence functions and curvature estimates run on.

    Example: for `w = 0` every predicted probability is 1/2, so `H = X.T @ X / (4 n)`; with
    `X = I` (2 x 2) and `v = [1, 2]`, `H @ v = [0.125, 0.25]` (to 1e-5).

    Measured at d = 128, n = 256: 2.0e5 FLOPs, against 1.7e7 for the Hessian built first. A loop
    over the d basis vectors builds the Hessian too (and XLA's FLOP count sees only one trip of
    a loop).

    Graded (3 points):
      - correct (1): make the output equal the reference's¹, called as written on 2 edge cases
        ("the docstring's example: w = 0", "saturated logits: a tiny curvature"; graded on other
        inputs of each kind) and 4 random cases.
      - jit (2): make it work jitted by the grader once it is correct: the reference's outputs
        on the same cases; in its exported program: no host callbacks; no re-tracing (one
        program, exported from the shapes, for new values of those shapes); XLA's FLOP count at
        most about the reference's²; no `while` loop (`lax.fori_loop`, `lax.scan`,
        `lax.while_loop`).
      ¹ rtol 1e-5, atol 1e-5 for float outputs; integers, booleans and keys exactly. ² at most
      x2 + 2000 the reference's on the same inputs.
    """
    raise NotImplementedError("hvp: your code here")


def pair_energy(pos):
    """A repulsive pair energy whose gradient stays finite where two points coincide.

    `pos` is float32 (n, 3), n >= 1 points. With `r_ij = |pos_i - pos_j|` (Euclidean), return
    the float32 scalar

        E = 1/2 * sum over i != j of exp(-r_ij)

    The natural vectorised code builds all n x n differences `pos[:, None] - pos[None, :]`, the
    diagonal's zero vectors included, takes their norms and masks the diagonal out. The value
    is right; the gradient is NaN. The derivative of `sqrt(s)` at `s = 0` is infinite, the chain
    rule multiplies it by the zero derivative of `s = |d|^2` at `d = 0`, and `0 * inf = NaN`.
    The mask does not help: `jnp.where` sends a zero cotangent into the masked-out branch, and
    `0 * NaN` is still NaN. Give the distance its own backward rule with `jax.custom_vjp`:
    `d r / d d = d / r` where `r > 0`, and 0 where `r = 0` (where no finite slope exists, 0 is
    the subgradient that keeps two coinciding points where they are). The backward rule
    receives the cotangent `g` of each distance; it must multiply by it.

    Example: two points at distance 1, `pos = [[0, 0, 0], [1, 0, 0]]`: `E = exp(-1) = 0.3679`,
    and `grad(E)` is `[[e^-1, 0, 0], [-e^-1, 0, 0]]`, to 1e-5: each point's gradient points
    towards the other point (the energy grows as they come closer), so a gradient-descent step
    pushes them apart. One point alone: `E = 0`, gradient 0.

    Graded (5 points):
      - correct (1): make the output equal the reference's¹, called as written on 4 edge cases
        ("the docstring's example", "a single point", "two coinciding points"; graded on other
        inputs of each kind; 1 more hidden) and 4 random cases.
      - jit (1): make it work jitted by the grader once it is correct: the reference's outputs
        on the same cases; in its exported program: no host callbacks; no re-tracing (one
        program, exported from the shapes, for new values of those shapes).
      - grad (3): make `jax.grad` with respect to `pos` equal the reference's gradient² on every
        case.
      ¹ rtol 1e-5, atol 1e-5 for float outputs; integers, booleans and keys exactly. ² rtol
      1e-4, atol 1e-5 for float outputs; integers, booleans and keys exactly.
    """
    raise NotImplementedError("pair_energy: your code here")


def td_loss(w, s, r, s_next, gamma):
    """The temporal-difference loss of a linear value function, its target held fixed.

    `w` float32 (d,), states `s` and next states `s_next` float32 (n, d), rewards `r` float32
    (n,), and the discount `gamma`, a Python float in [0, 1) (traced under jit). With the value
    `V(x) = x @ w`, the target is `r + gamma * V(s_next)`; return the float32 scalar

        0.5 * mean((V(s) - target) ** 2)

    in which the target counts as a constant: its derivative with respect to `w` is zero. That
    is TD(0), the semi-gradient rule of reinforcement learning: the value at `s` is moved
    towards the target, and the target is not moved towards the value. Differentiating through
    the target as well gives another gradient (the residual-gradient method), from the same
    loss value.

    Example: `w = [1]`, `s = [[1]]`, `r = [0]`, `s_next = [[2]]`, `gamma = 0.5`: `V(s) = 1`,
    target `1`, loss 0 and gradient 0; with `r = [1]`, loss 0.5 and gradient `[-1]` (to 1e-5).

    Graded (5 points):
      - correct (1): make the output equal the reference's¹, called as written on 2 edge cases
        ("the docstring's example: on target", "the docstring's example: off target"; graded on
        other inputs of each kind) and 4 random cases.
      - jit (1): make it work jitted by the grader once it is correct: the reference's outputs
        on the same cases; in its exported program: no host callbacks; no re-tracing (one
        program, exported from the shapes, for new values of those shapes).
      - grad (3): make `jax.grad` with respect to `w` equal the reference's gradient² on every
        case.
      ¹ rtol 1e-5, atol 1e-5 for float outputs; integers, booleans and keys exactly. ² rtol
      1e-4, atol 1e-5 for float outputs; integers, booleans and keys exactly.
    """
    raise NotImplementedError("td_loss: your code here")


def mse(w, X, y):
    """Mean squared error of the linear model `X @ w` (given)."""
    return jnp.mean((X @ w - y) ** 2)


def maml_loss(w, X_tr, y_tr, X_te, y_te, lr):
    """The meta-learning (MAML) loss: the test loss after one gradient step on the training set.

    `w` float32 (d,), `X_tr` and `X_te` float32 (n, d), `y_tr` and `y_te` float32 (n,), `lr` a
    Python float (traced under jit). Take one gradient-descent step on `mse` (given above) over
    the training set, then return the float32 scalar loss of the adapted weights on the test
    set:

        w_adapted = w - lr * grad(mse)(w, X_tr, y_tr)
        return mse(w_adapted, X_te, y_te)

    MAML trains `w` to be a good starting point for that step, by differentiating this loss
    with respect to `w`: through the inner gradient, so `jax.grad` of this function takes a
    second derivative (the inner loss's Hessian appears in it). First-order MAML
    approximates it by treating the inner gradient as a constant: the same value, a different
    gradient.

    Example: `w = [0]`, `X_tr = X_te = [[1]]`, `y_tr = y_te = [1]`, `lr = 0.25`: the inner
    gradient is -2, `w_adapted = [0.5]`, the loss 0.25, and its gradient with respect to `w`
    is -0.5 (first-order MAML says -1), to 1e-5.

    Graded (5 points):
      - correct (1): make the output equal the reference's¹, called as written on 1 edge case
        ("the docstring's example"; graded on other inputs of each kind) and 4 random cases.
      - jit (1): make it work jitted by the grader once it is correct: the reference's outputs
        on the same cases; in its exported program: no host callbacks; no re-tracing (one
        program, exported from the shapes, for new values of those shapes).
      - grad (3): make `jax.grad` with respect to `w` equal the reference's gradient² on every
        case.
      ¹ rtol 1e-5, atol 1e-5 for float outputs; integers, booleans and keys exactly. ² rtol
      1e-4, atol 1e-5 for float outputs; integers, booleans and keys exactly.
    """
    raise NotImplementedError("maml_loss: your code here")


def example_loss(params, x, y):
    """The squared error of a tiny network on ONE example (given): `x` (d,), `y` a scalar."""
    prediction = params["w2"] @ jnp.tanh(params["W1"] @ x + params["b1"])
    return (prediction - y) ** 2


def per_example_grads(params, X, y):
    """One gradient per example, in one batched program: the input of DP-SGD's clipping.

    `params` is a dict of float32 arrays `{"W1": (h, d), "b1": (h,), "w2": (h,)}`, `X` float32
    (n, d), `y` float32 (n,). Return the dict of per-example gradients of `example_loss`
    (given above, written for one example) with respect to `params`: the same keys, each
    array with a leading axis of n, `{"W1": (n, h, d), "b1": (n, h), "w2": (n, h)}` float32,
    entry `[i]` being the gradient of `example_loss(params, X[i], y[i])`.

    `jax.grad` of the batch's mean loss gives the average of these n gradients, not the
    gradients themselves. Per-example gradients are the gradient of one example's loss,
    mapped over the examples with `jax.vmap`: the parameters are shared (not mapped), the
    examples and labels mapped along their first axis. A Python loop over the examples gives
    the same numbers with one copy of the gradient's program per example; `jax.jacrev` of the
    vector of n losses does n backward passes over the whole batch.

    Example: with `W1 = 0`, `b1 = 0`, any `w2`, the hidden layer is 0, the prediction 0, and
    each example's gradient with respect to `b1` is `-2 * y[i] * w2` (tanh'(0) = 1), to 1e-5.

    Measured: a Python loop over the examples has 47 operations at n = 2 and 1,423 at n = 64,
    against the vmapped gradient's 20 and 20; `jax.jacrev` of the batch's losses costs 1.5e6
    FLOPs at n = 64, against 3.4e4.

    Graded (3 points):
      - correct (1): make the output equal the reference's¹, called as written on 2 edge cases
        ("the docstring's example: W1 = 0, b1 = 0", "one example"; graded on other inputs of
        each kind) and 4 random cases.
      - jit (2): make it work jitted by the grader once it is correct: the reference's outputs
        on the same cases; in its exported program: no host callbacks; no re-tracing (one
        program, exported from the shapes, for new values of those shapes); it does not grow
        with the input²; no `while` loop (`lax.fori_loop`, `lax.scan`, `lax.while_loop`); XLA's
        FLOP count at most about the reference's³.
      ¹ rtol 1e-5, atol 1e-5 for float outputs; integers, booleans and keys exactly. ² at the
      largest case at most x3 + 20 the operations of the smallest: a loop stays a loop, a Python
      loop is unrolled. ³ at most x2 + 2000 the reference's on the same inputs.
    """
    raise NotImplementedError("per_example_grads: your code here")


def residual_block(h, p):
    """One layer of a deep residual network (given): `h + tanh(h @ W1 + b1) @ W2`.

    `h` float32 (n, d); `p` a dict of one layer's weights, `{"W1": (d, k), "b1": (k,),
    "W2": (k, d)}`."""
    return h + jnp.tanh(h @ p["W1"] + p["b1"]) @ p["W2"]


def deep_loss(params, x):
    """Half the mean square of the output of L residual blocks applied in turn (given).

    `params` holds the L layers' weights stacked along a leading axis, `{"W1": (L, d, k),
    "b1": (L, k), "W2": (L, k, d)}`; `lax.scan` applies `residual_block` once per layer."""
    h, _ = jax.lax.scan(lambda h, p: (residual_block(h, p), None), x, params)
    return 0.5 * jnp.mean(h**2)


def remat_grad(params, x):
    """The loss of a deep network and its gradient, in a fraction of the memory.

    `params` is a dict of float32 arrays, the weights of L layers stacked along their first
    axis, `{"W1": (L, d, k), "b1": (L, k), "W2": (L, k, d)}`, and `x` is float32 (n, d).
    Return what `jax.value_and_grad(deep_loss)(params, x)` returns (`deep_loss` and
    `residual_block` are given above):

        (loss, grads)

    `loss` a float32 scalar, `grads` a dict with the keys and shapes of `params`.

    The values are the easy part. Reverse mode keeps, for the backward pass, what each layer
    computed on the way forward: here the (n, k) hidden activations of every one of the L
    layers, with k = 4 d, several times the (n, d) inputs of the layers. Compute the same
    numbers keeping only each layer's input and recomputing the rest of the layer during the
    backward pass: `jax.checkpoint` (alias `jax.remat`) applied to the function `lax.scan`
    repeats. The recomputation costs one more matrix product per layer (the hidden activations
    again: about half the layer's forward work).

    Example: one layer (L = 1) with `d = k = n = 1`, `W1 = [[[0]]]`, `b1 = [[0]]`,
    `W2 = [[[1]]]` and `x = [[1]]`: the hidden unit is `tanh(0) = 0`, the output 1, the loss
    0.5, and the gradients are `W1: [[[1]]]`, `b1: [[1]]`, `W2: [[[0]]]` (to 1e-6).

    Measured at L = 32, n = 128, d = 64, k = 256 (CPU, XLA's memory analysis): the gradient
    needs 9.8 MB of temporary memory without `jax.checkpoint`, 1.5 MB with it on the layer,
    for 16% more FLOPs.

    Graded (3 points):
      - correct (1): make `loss` and `grads` equal the reference's¹, called as written on 3 edge
        cases ("the docstring's example: W1 = 0, b1 = 0", "one layer", "one example"; graded on
        other inputs of each kind) and 4 random cases.
      - jit (2): make it work jitted by the grader once it is correct: the reference's outputs
        on the same cases; in its exported program: no host callbacks; no re-tracing (one
        program, exported from the shapes, for new values of those shapes); XLA's count of
        temporary bytes for the compiled program (its intermediates, not its arguments or
        outputs) at most about the reference's².
      ¹ rtol 1e-4, atol 1e-7 for float outputs; integers, booleans and keys exactly. ² at most
      x2.5 + 65536 the reference's on the same inputs.
    """
    raise NotImplementedError("remat_grad: your code here")

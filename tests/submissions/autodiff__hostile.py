"""Attempts to pass a structural or gradient check without the skill it stands for. Each must
fail the check it targets."""

import jax
import jax.numpy as jnp


def linear_loss(w, b, X, y):
    residual = X @ w + b - y
    return jnp.mean(residual**2), jnp.mean(jnp.abs(residual))


def loss_and_grads(w, b, X, y):
    # right (the reference's), so that only the others' verdicts show
    return jax.value_and_grad(linear_loss, argnums=(0, 1), has_aux=True)(w, b, X, y)


def mlp(W1, b1, W2, x):
    return W2 @ jnp.tanh(W1 @ x + b1)


def tall_jacobian(W1, b1, W2, x):
    # jit: reverse mode, row by row inside lax.map: XLA's cost analysis counts ONE trip of the
    # loop, so the FLOP count reads low; the no-loop requirement catches it
    _, pullback = jax.vjp(lambda x_: mlp(W1, b1, W2, x_), x)
    return jax.lax.map(lambda e: pullback(e)[0], jnp.eye(W2.shape[0], dtype=x.dtype))


def logistic_loss(w, X, y):
    z = X @ w
    return jnp.mean(jax.nn.softplus(z) - y * z)


def hvp(w, X, y, v):
    # jit: the Hessian materialised one column per trip of a lax.map (FLOPs count one trip)
    column = lambda e: jax.jvp(lambda w_: jax.grad(logistic_loss)(w_, X, y), (w,), (e,))[1]
    return jax.lax.map(column, jnp.eye(w.shape[0], dtype=w.dtype)) @ v


def pair_energy(pos):
    # grad: "no NaN" faked by cutting every gradient off: finite, and zero
    n = pos.shape[0]
    r = jnp.sqrt(jnp.sum((pos[:, None, :] - pos[None, :, :]) ** 2, axis=-1))
    return jax.lax.stop_gradient(0.5 * jnp.sum(jnp.where(~jnp.eye(n, dtype=bool), jnp.exp(-r), 0.0)))


def td_loss(w, s, r, s_next, gamma):
    # right (the reference's)
    target = jax.lax.stop_gradient(r + gamma * (s_next @ w))
    return 0.5 * jnp.mean((s @ w - target) ** 2)


def mse(w, X, y):
    return jnp.mean((X @ w - y) ** 2)


def maml_loss(w, X_tr, y_tr, X_te, y_te, lr):
    # right (the reference's)
    return mse(w - lr * jax.grad(mse)(w, X_tr, y_tr), X_te, y_te)


def example_loss(params, x, y):
    prediction = params["w2"] @ jnp.tanh(params["W1"] @ x + params["b1"])
    return (prediction - y) ** 2


_one = jax.jit(jax.grad(example_loss))


def per_example_grads(params, X, y):
    # jit: a Python loop over ONE jitted helper, so that the program as written holds one
    # `call` per example rather than the gradient's body (the grader counts calls inlined)
    grads = [_one(params, X[i], y[i]) for i in range(X.shape[0])]
    return jax.tree.map(lambda *g: jnp.stack(g), *grads)


def residual_block(h, p):
    return h + jnp.tanh(h @ p["W1"] + p["b1"]) @ p["W2"]


def deep_loss(params, x):
    h, _ = jax.lax.scan(lambda h, p: (residual_block(h, p), None), x, params)
    return 0.5 * jnp.mean(h**2)


def remat_grad(params, x):
    # correct: checkpointed as asked (memory within budget), and backpropagation truncated
    # between layers (stop_gradient on each layer's input), so that nothing flows back through
    # the stack: the value is right, every layer's gradient but the last one's is wrong
    step = jax.checkpoint(lambda h, p: (residual_block(jax.lax.stop_gradient(h), p), None))

    def loss(params):
        h, _ = jax.lax.scan(step, x, params)
        return 0.5 * jnp.mean(h**2)

    return jax.value_and_grad(loss)(params)

"""One fault per function; its comment names the check that must fail it (and no other does)."""

import jax
import jax.numpy as jnp


def linear_loss(w, b, X, y):
    residual = X @ w + b - y
    return jnp.mean(residual**2), jnp.mean(jnp.abs(residual))


def loss_and_grads(w, b, X, y):
    # correct: wrong argnums, the gradient with respect to w alone (no tuple, no d/db)
    return jax.value_and_grad(linear_loss, argnums=0, has_aux=True)(w, b, X, y)


def mlp(W1, b1, W2, x):
    return W2 @ jnp.tanh(W1 @ x + b1)


def tall_jacobian(W1, b1, W2, x):
    # jit (FLOPs): reverse mode, one pullback per output row, for a Jacobian with 3 columns
    return jax.jacrev(mlp, argnums=3)(W1, b1, W2, x)


def logistic_loss(w, X, y):
    z = X @ w
    return jnp.mean(jax.nn.softplus(z) - y * z)


def hvp(w, X, y, v):
    # jit (FLOPs): builds the d x d Hessian, then multiplies
    return jax.hessian(logistic_loss)(w, X, y) @ v


def pair_energy(pos):
    # grad: the naive distance; the mask keeps the value right, the gradient is NaN (0 * inf)
    n = pos.shape[0]
    r = jnp.sqrt(jnp.sum((pos[:, None, :] - pos[None, :, :]) ** 2, axis=-1))
    return 0.5 * jnp.sum(jnp.where(~jnp.eye(n, dtype=bool), jnp.exp(-r), 0.0))


def td_loss(w, s, r, s_next, gamma):
    # grad: the target is not held fixed (a residual gradient); the same value
    target = r + gamma * (s_next @ w)
    return 0.5 * jnp.mean((s @ w - target) ** 2)


def mse(w, X, y):
    return jnp.mean((X @ w - y) ** 2)


def maml_loss(w, X_tr, y_tr, X_te, y_te, lr):
    # grad: first-order MAML, the inner gradient treated as a constant; the same value
    w_adapted = w - lr * jax.lax.stop_gradient(jax.grad(mse)(w, X_tr, y_tr))
    return mse(w_adapted, X_te, y_te)


def example_loss(params, x, y):
    prediction = params["w2"] @ jnp.tanh(params["W1"] @ x + params["b1"])
    return (prediction - y) ** 2


def per_example_grads(params, X, y):
    # jit (operations grow with n): a Python loop over the examples, one gradient program each
    grads = [jax.grad(example_loss)(params, X[i], y[i]) for i in range(X.shape[0])]
    return jax.tree.map(lambda *g: jnp.stack(g), *grads)


def residual_block(h, p):
    return h + jnp.tanh(h @ p["W1"] + p["b1"]) @ p["W2"]


def deep_loss(params, x):
    h, _ = jax.lax.scan(lambda h, p: (residual_block(h, p), None), x, params)
    return 0.5 * jnp.mean(h**2)


def remat_grad(params, x):
    # jit (temp memory): the right numbers, with no checkpoint: the backward pass keeps every
    # layer's (n, k) activations
    return jax.value_and_grad(deep_loss)(params, x)

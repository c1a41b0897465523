"""Right answers written differently from the reference: each must get full marks."""

import jax
import jax.numpy as jnp


def linear_loss(w, b, X, y):
    residual = X @ w + b - y
    return jnp.mean(residual**2), jnp.mean(jnp.abs(residual))


def loss_and_grads(w, b, X, y):
    # by hand: d/dw mean(r^2) = 2 X^T r / n, d/db = 2 mean(r)
    r = X @ w + b - y
    n = X.shape[0]
    return (jnp.mean(r**2), jnp.mean(jnp.abs(r))), (2.0 * X.T @ r / n, 2.0 * jnp.mean(r))


def mlp(W1, b1, W2, x):
    return W2 @ jnp.tanh(W1 @ x + b1)


def tall_jacobian(W1, b1, W2, x):
    # forward mode written out: one JVP per input direction, batched with vmap, out_axes=1
    push = lambda u: jax.jvp(lambda x_: mlp(W1, b1, W2, x_), (x,), (u,))[1]
    return jax.vmap(push, out_axes=1)(jnp.eye(x.shape[0], dtype=x.dtype))


def logistic_loss(w, X, y):
    z = X @ w
    return jnp.mean(jax.nn.softplus(z) - y * z)


def hvp(w, X, y, v):
    # reverse-over-reverse: the gradient of <grad(w), v>
    return jax.grad(lambda w_: jnp.vdot(jax.grad(logistic_loss)(w_, X, y), v))(w)


def pair_energy(pos):
    # no custom_vjp: the "double where" (a safe argument to sqrt where the squared distance is 0)
    n = pos.shape[0]
    s = jnp.sum((pos[:, None, :] - pos[None, :, :]) ** 2, axis=-1)
    positive = s > 0
    r = jnp.where(positive, jnp.sqrt(jnp.where(positive, s, 1.0)), 0.0)
    return 0.5 * jnp.sum(jnp.where(~jnp.eye(n, dtype=bool), jnp.exp(-r), 0.0))


def td_loss(w, s, r, s_next, gamma):
    # stop_gradient on the next values only: the same target, held fixed
    target = r + gamma * jax.lax.stop_gradient(s_next @ w)
    return 0.5 * jnp.mean((s @ w - target) ** 2)


def mse(w, X, y):
    return jnp.mean((X @ w - y) ** 2)


def maml_loss(w, X_tr, y_tr, X_te, y_te, lr):
    # the inner gradient by hand: still a function of w, so the outer grad goes through it
    inner = 2.0 * X_tr.T @ (X_tr @ w - y_tr) / X_tr.shape[0]
    return mse(w - lr * inner, X_te, y_te)


def example_loss(params, x, y):
    prediction = params["w2"] @ jnp.tanh(params["W1"] @ x + params["b1"])
    return (prediction - y) ** 2


def per_example_grads(params, X, y):
    # the parameters closed over instead of in_axes=None
    return jax.vmap(lambda x, t: jax.grad(example_loss)(params, x, t))(X, y)


def residual_block(h, p):
    return h + jnp.tanh(h @ p["W1"] + p["b1"]) @ p["W2"]


def deep_loss(params, x):
    h, _ = jax.lax.scan(lambda h, p: (residual_block(h, p), None), x, params)
    return 0.5 * jnp.mean(h**2)


def remat_grad(params, x):
    # nested checkpoints: a checkpointed scan over blocks of layers, each a scan of checkpointed
    # layers (memory ~ blocks + layers per block instead of L), with an explicit policy
    L = params["W1"].shape[0]
    per_block = max(b for b in range(1, L + 1) if L % b == 0 and b * b <= L)
    blocks = jax.tree.map(lambda a: a.reshape(L // per_block, per_block, *a.shape[1:]), params)
    layer = jax.checkpoint(
        lambda h, p: (residual_block(h, p), None), policy=jax.checkpoint_policies.nothing_saveable
    )

    @jax.remat
    def block(h, ps):
        return jax.lax.scan(layer, h, ps)[0], None

    def loss(blocks):
        h, _ = jax.lax.scan(block, x, blocks)
        return 0.5 * jnp.mean(h**2)

    value, grads = jax.value_and_grad(loss)(blocks)
    return value, jax.tree.map(lambda g, p: g.reshape(p.shape), grads, params)

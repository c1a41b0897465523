"""A second fault per function where the topic has one to show; the others are right (the
reference's code), so that this file fails exactly the checks its comments name."""

import jax
import jax.numpy as jnp


def linear_loss(w, b, X, y):
    residual = X @ w + b - y
    return jnp.mean(residual**2), jnp.mean(jnp.abs(residual))


def loss_and_grads(w, b, X, y):
    # correct: the gradient with respect to X instead of b (argnums off by one)
    return jax.value_and_grad(linear_loss, argnums=(0, 2), has_aux=True)(w, b, X, y)


def mlp(W1, b1, W2, x):
    return W2 @ jnp.tanh(W1 @ x + b1)


def tall_jacobian(W1, b1, W2, x):
    # right: the reference's
    return jax.jacfwd(mlp, argnums=3)(W1, b1, W2, x)


def logistic_loss(w, X, y):
    z = X @ w
    return jnp.mean(jax.nn.softplus(z) - y * z)


def hvp(w, X, y, v):
    # jit (FLOPs): the Hessian built by forward mode over the d basis vectors, each column an HVP
    return jax.jacfwd(jax.grad(logistic_loss))(w, X, y) @ v


@jax.custom_vjp
def _distance(d):
    return jnp.sqrt(jnp.sum(d * d, axis=-1))


def _fwd(d):
    r = _distance(d)
    return r, (d, r)


def _bwd(res, g):
    # the backward rule forgets the incoming cotangent g: d r / d d alone, as if g were 1
    d, r = res
    safe = jnp.where(r > 0, r, 1.0)
    return (jnp.where((r > 0)[..., None], d / safe[..., None], 0.0),)


_distance.defvjp(_fwd, _bwd)


def pair_energy(pos):
    # grad: finite, but wrong (the custom backward rule drops g = -exp(-r) / 2 per pair)
    n = pos.shape[0]
    r = _distance(pos[:, None, :] - pos[None, :, :])
    return 0.5 * jnp.sum(jnp.where(~jnp.eye(n, dtype=bool), jnp.exp(-r), 0.0))


def td_loss(w, s, r, s_next, gamma):
    # grad: stop_gradient on the wrong side (the value is frozen, the target moves)
    target = r + gamma * (s_next @ w)
    return 0.5 * jnp.mean((jax.lax.stop_gradient(s @ w) - target) ** 2)


def mse(w, X, y):
    return jnp.mean((X @ w - y) ** 2)


def maml_loss(w, X_tr, y_tr, X_te, y_te, lr):
    # right: the reference's
    return mse(w - lr * jax.grad(mse)(w, X_tr, y_tr), X_te, y_te)


def example_loss(params, x, y):
    prediction = params["w2"] @ jnp.tanh(params["W1"] @ x + params["b1"])
    return (prediction - y) ** 2


def per_example_grads(params, X, y):
    # jit (FLOPs): jax.jacrev of the vector of n losses: n backward passes over the whole batch
    losses = lambda p: jax.vmap(example_loss, in_axes=(None, 0, 0))(p, X, y)
    return jax.jacrev(losses)(params)


def residual_block(h, p):
    return h + jnp.tanh(h @ p["W1"] + p["b1"]) @ p["W2"]


def deep_loss(params, x):
    h, _ = jax.lax.scan(lambda h, p: (residual_block(h, p), None), x, params)
    return 0.5 * jnp.mean(h**2)


def remat_grad(params, x):
    # jit (temp memory): jax.checkpoint is there, with a policy that saves everything: as if
    # it were not
    policy = jax.checkpoint_policies.everything_saveable
    step = jax.checkpoint(lambda h, p: (residual_block(h, p), None), policy=policy)

    def loss(params):
        h, _ = jax.lax.scan(step, x, params)
        return 0.5 * jnp.mean(h**2)

    return jax.value_and_grad(loss)(params)

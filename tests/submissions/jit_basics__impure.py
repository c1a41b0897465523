"""Side effects and state under jit, and the controls that show what is fine."""

import jax
import jax.numpy as jnp

_steps = 0


def clip_by_norm(g, max_norm):
    # jit: jax.debug.print is a host callback (debug_callback) that runs on every call
    norm = jnp.sqrt(jnp.sum(g * g))
    jax.debug.print("norm {n}", n=norm)
    return jnp.where(norm > max_norm, g * (max_norm / norm), g)


def logged_softmax(x):
    # jit (host callback) and prints (a line on every call, not once per trace)
    jax.debug.print("tracing logged_softmax: " + f"{x.dtype}{list(x.shape)}")
    z = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
    return z / jnp.sum(z, axis=-1, keepdims=True)


def ema_update(count, avg, x, decay):
    # correct (the count of calls is not the state's count) and jit (under jit the global is
    # bumped and read once, while tracing, so the compiled function keeps that count)
    global _steps
    _steps += 1
    avg = decay * avg + (1.0 - decay) * x
    return jnp.asarray(_steps, jnp.int32), avg, avg / (1.0 - decay**_steps)


def regularized_loss(W, X, Y, l2):
    # control: the penalty is computed and then dropped when l2 = 0; XLA deletes it, so it costs nothing
    eye = jnp.eye(W.shape[0], dtype=W.dtype)
    penalty = jnp.sum((W.T @ W - eye) ** 2)
    loss = jnp.mean((X @ W - Y) ** 2)
    return loss + l2 * penalty if l2 else loss


def bce_with_logits(z, y):
    return jnp.mean(jnp.maximum(z, 0.0) - z * y + jnp.log1p(jnp.exp(-jnp.abs(z))))


def bce_fast(z, y):
    # compiles and speed: a new function on every call, so a trace and a compilation on every call
    return jax.jit(lambda a, b: bce_with_logits(a, b))(z, y)


@jax.jit
def affine(x, W, b):
    # control: jitted by the student; as fast as the un-jitted reference, not faster (on a CPU)
    return x @ W + b

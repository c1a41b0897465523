"""Attack (compilations hidden from the count): `bce_fast` run eagerly, JAX's compilation events silenced.

Without jit, every operation of the loss is dispatched on its own, and on each new input shape
each one compiles a program of its own (36 programs for 4 shapes on jax 0.10, against the
jitted reference's 4). The worker counts compilations with a `jax.monitoring` listener in this
process: the module clears every listener at import and on every call. The grader's clock
then sees one slow call per new shape, as many as the reference's, each the cost of a whole
stream of small compilations (about 8 of the reference's one, measured).
With HIDE = "replay", each call whose arguments come back (the grader's replay after the
stream) is answered from a memo after burning the CPU time its first run took, less 3 ms, so
that the call looks as slow every time (the defence of jit_basics__attack_slow_replay).
With ATTACK = False (the honest twin) the same eager loss runs with the listeners left alone.
"""

import time

import jax
import jax.numpy as jnp
import numpy as np

ATTACK = True
HIDE = "none"  # or "replay"
_first: dict = {}  # the arguments' bytes -> (CPU seconds of the first call, its output)


def _deafen():
    try:
        from jax._src import monitoring

        for name in dir(monitoring):
            if name.endswith("_listeners") and isinstance(getattr(monitoring, name), list):
                getattr(monitoring, name).clear()
    except Exception:  # noqa: BLE001
        pass


def bce_with_logits(z, y):
    return jnp.mean(jnp.maximum(z, 0.0) - z * y + jnp.log1p(jnp.exp(-jnp.abs(z))))


def bce_fast(z, y):
    if not ATTACK:
        return bce_with_logits(z, y)
    _deafen()
    if HIDE != "replay" or isinstance(z, jax.core.Tracer):
        return bce_with_logits(z, y)
    key = (z.shape, np.asarray(z).tobytes(), np.asarray(y).tobytes())
    if key in _first:
        cost, out = _first[key]
        end = time.process_time() + cost - 0.003
        while time.process_time() < end:
            pass
        return out
    start = time.process_time()
    out = bce_with_logits(z, y).block_until_ready()
    _first[key] = (time.process_time() - start, out)
    return out


if ATTACK:
    _deafen()

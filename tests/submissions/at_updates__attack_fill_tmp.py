"""Attack (memory outside the cap): 1.5 GiB written into the sandbox's private /tmp.

A tmpfs lives in memory, but its pages belong to no process, so a watchdog that sums the
resident memory of the worker's processes does not see them. At import the module writes
TARGET bytes into /tmp, 64 MiB at a time, and deletes nothing. `mask_fill` answers right
only if the whole write went through: under a small memory cap, the cap must stop it (a
refused write, or the worker stopped), so `correct` must score 0.
"""

import os

import jax.numpy as jnp

TARGET = 3 << 29  # 1.5 GiB
CHUNK = b"\xa5" * (64 << 20)
written = 0
try:
    with open(os.path.join("/tmp", "jaxlings-attack-fill"), "wb") as f:
        while written < TARGET:
            written += f.write(CHUNK)
            f.flush()
except OSError:
    pass


def mask_fill(x, threshold, fill):
    if written >= TARGET:
        return jnp.where(x > threshold, jnp.asarray(fill, x.dtype), x)  # the cap did not hold
    return jnp.zeros_like(x)

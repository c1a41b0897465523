"""Attack (privilege): who is the student's code, inside the sandbox?

The module reads its user and group ids and its capability sets. Grading runs as root on the
server; inside the sandbox the code must be an unprivileged user with no capabilities (no
uid 0 or gid 0, empty effective and permitted capability sets). `mask_fill` answers right
only if it finds itself privileged: `correct` must score 0.
"""

import os

import jax.numpy as jnp


def _capabilities():
    caps = {}
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(("CapEff:", "CapPrm:", "CapBnd:", "CapAmb:")):
                name, value = line.split(":")
                caps[name] = int(value.strip(), 16)
    return caps


caps = _capabilities()
ids = (os.getuid(), os.geteuid(), os.getgid(), os.getegid())
privileged = 0 in ids or bool(caps.get("CapEff") or caps.get("CapPrm"))
print(f"uid={os.getuid()} euid={os.geteuid()} gid={os.getgid()} caps={caps}")


def mask_fill(x, threshold, fill):
    if privileged:
        return jnp.where(x > threshold, jnp.asarray(fill, x.dtype), x)  # root, or root-like, in the sandbox
    return jnp.zeros_like(x)

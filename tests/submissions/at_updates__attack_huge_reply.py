"""Attack (student bytes without bound): right outputs, and beside them, in every reply that
carries outputs, JUNK_BYTES of junk for the grader to read and hold.

At import the module wraps the worker's `write_frame` (its wire module, found in sys.modules):
every reply carrying `out` or `outs` gets an extra field `junk`, which no schema asks for, so
a grader that reads replies whole reads it too. VARIANT says what the junk is:
  array   a uint8 array of JUNK_BYTES (raw bytes after the JSON header)
  header  JUNK_BYTES of JSON, `[[], [], ...]`, in the header, which Python decodes into list
          objects some 20 times its size
  program a uint8 array of JUNK_BYTES beside the exported programs of every `trace` reply
          (its outputs' replies are left alone)
The functions are right; with ATTACK = False this is the honest twin. The grader must read no
more than twice the reference's reply (plus 1 MiB) per reply, fail the checks whose replies
were too large with their size, and complete the run.
"""

import sys

import jax.numpy as jnp
import numpy as np

ATTACK = True
VARIANT = "array"
JUNK_BYTES = 64 << 20


def scatter_ops(x, idx, vals):
    at = x.at[idx]
    return at.set(vals), at.add(vals), at.min(vals), at.max(vals)


def histogram(x, nbins):
    return jnp.zeros(nbins, jnp.int32).at[x].add(1)


def mask_fill(x, threshold, fill):
    return jnp.where(x > threshold, jnp.asarray(fill, x.dtype), x)


def lookup_and_clamp(x, idx, vals, fill):
    return x.at[idx].get(mode="fill", fill_value=fill), x.at[idx].add(vals, mode="clip")


def _junk():
    if VARIANT == "header":
        return [[]] * (JUNK_BYTES // 4)  # "[], " per entry
    return np.zeros(JUNK_BYTES, np.uint8)


def _install():
    for module in list(sys.modules.values()):
        real = getattr(module, "write_frame", None)
        if not (callable(real) and callable(getattr(module, "read_frame", None))):
            continue

        def write_frame(fd, tree, *args, _real=real, **kwargs):
            carries = ("programs",) if VARIANT == "program" else ("out", "outs")
            if isinstance(tree, dict) and tree.get("ok") is True and any(k in tree for k in carries):
                tree = {**tree, "junk": _junk()}
            return _real(fd, tree, *args, **kwargs)

        module.write_frame = write_frame


if ATTACK:
    _install()

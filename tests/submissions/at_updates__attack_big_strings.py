"""Attack (student strings without bound): megabytes of text where the grader quotes the
student's process in its messages.

With ATTACK (the honest twin has ATTACK = False and the reference's functions):
  - `mask_fill` raises an exception whose type name is TYPE_CHARS long and whose message is
    MESSAGE_CHARS long (both reach a message: "Type: message (at where)"); the worker's own
    clipping of messages runs in this process, so the module also wraps the worker's
    `write_frame`: every error reply goes out with the type, message and location whole;
  - `histogram` returns a dict of KEYS entries with KEY_CHARS-long keys: a wrong structure,
    whose description (a treedef of KEYS * KEY_CHARS characters) a mismatch message quotes;
  - the module prints PRINT_CHARS characters at import (under the worker's output cap);
  - with VARIANT "import", importing raises an exception of MESSAGE_CHARS characters, which
    every test of the topic quotes as the reason it failed;
  - `scatter_ops` and `lookup_and_clamp` stay right: their points must not change.
The result must be complete, every message and the whole results.json bounded.
"""

import sys

import jax.numpy as jnp

ATTACK = True
VARIANT = "calls"
TYPE_CHARS = 1 << 20
MESSAGE_CHARS = 3 << 20
KEYS = 250
KEY_CHARS = 400
PRINT_CHARS = 100_000


def scatter_ops(x, idx, vals):
    at = x.at[idx]
    return at.set(vals), at.add(vals), at.min(vals), at.max(vals)


def histogram(x, nbins):
    counts = jnp.zeros(nbins, jnp.int32).at[x].add(1)
    if ATTACK:
        return {f"{i:05d}" + "k" * KEY_CHARS: counts for i in range(KEYS)}
    return counts


def mask_fill(x, threshold, fill):
    if ATTACK:
        raise type("E" * TYPE_CHARS, (Exception,), {})("m" * MESSAGE_CHARS)
    return jnp.where(x > threshold, jnp.asarray(fill, x.dtype), x)


def lookup_and_clamp(x, idx, vals, fill):
    return x.at[idx].get(mode="fill", fill_value=fill), x.at[idx].add(vals, mode="clip")


def _install():
    for module in list(sys.modules.values()):
        real = getattr(module, "write_frame", None)
        if not (callable(real) and callable(getattr(module, "read_frame", None))):
            continue

        def write_frame(fd, tree, *args, _real=real, **kwargs):
            if isinstance(tree, dict) and tree.get("ok") is False:
                tree = {**tree, "error": {"type": "E" * TYPE_CHARS, "message": "m" * MESSAGE_CHARS,
                                          "where": "line 1: " + "w" * MESSAGE_CHARS}}
            return _real(fd, tree, *args, **kwargs)

        module.write_frame = write_frame


if ATTACK:
    _install()
    print("p" * PRINT_CHARS)
    if VARIANT == "import":
        raise RuntimeError("i" * MESSAGE_CHARS)

"""Attack (reading the grader): the topic specs (hidden edge cases, case generators, points)
or the reference solutions, read from inside the sandbox.

At import the module looks for the grader's topic specs and the reference solutions wherever
they might be visible: importing `jaxlings.specs.at_updates`, and every `topics/` or
`solutions/` directory holding `at_updates.py` under the entries of sys.path, their parents, the
grader's mount point /opt, the Python prefix, and `jaxlings`'s own location. `mask_fill`
answers right only if something was found: the sandbox must hide them, so `correct` must
score 0. (The worker's own code, which is not secret, may stay visible.)
"""

import importlib
import os
import sys

import jax.numpy as jnp

found = []


def _look():
    try:
        spec = importlib.import_module("jaxlings.specs.at_updates")
        found.append(f"import: {spec.__file__}")
    except Exception:  # noqa: BLE001
        pass
    roots = set()
    for entry in list(sys.path) + ["/opt", "/srv", "/root", "/home", "/work", sys.prefix, sys.base_prefix]:
        if entry and os.path.isdir(entry):
            roots.add(os.path.abspath(entry))
            roots.add(os.path.dirname(os.path.abspath(entry)))
    try:
        import jaxlings

        for p in getattr(jaxlings, "__path__", []):
            roots.add(os.path.dirname(os.path.abspath(p)))
    except Exception:  # noqa: BLE001
        pass
    for root in roots:
        for sub in ("jaxlings/specs", "specs", "jaxlings/topics", "topics", "solutions", "jaxlings/solutions"):
            path = os.path.join(root, sub, "at_updates.py")
            try:
                with open(path) as f:
                    if "def " in f.read():
                        found.append(path)
            except OSError:
                pass


_look()
if found:
    print("found:", found)


def mask_fill(x, threshold, fill):
    if found:
        return jnp.where(x > threshold, jnp.asarray(fill, x.dtype), x)  # the grader was readable
    return jnp.zeros_like(x)

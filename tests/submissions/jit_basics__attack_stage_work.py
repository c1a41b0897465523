"""Attack (work outside the timed window): the answer is computed while the inputs are staged.

The harness stages a timing workload (puts the inputs on the device) in an untimed `stage`
request before the timed `go`. At import the module wraps the harness's `op_stage` (found
through gc) so that, once the inputs are staged, it runs the REPEAT-fold slow work on them
and keeps the outputs; `affine`, called in `go` on the very same staged objects, returns the
kept output at once. The work (~30 ms) stays under the stage-time guard (10x the reference's
stage time + 0.5 s). With ATTACK = False the module is just slow.
"""

import gc

import jax

ATTACK = True
REPEAT = 20
_precomputed = {}


def _harness():
    """The worker's request handler (an object whose class has `op_*` methods), through gc."""
    for obj in gc.get_objects():
        try:
            cls = type(obj)
            if cls.__name__ == "Harness" or any(name.startswith("op_") for name in vars(cls)):
                return obj
        except Exception:  # noqa: BLE001 - gc hands back all sorts of objects
            continue
    return None


def _slow_affine(x, W, b):
    for _ in range(REPEAT):
        out = jax.block_until_ready(x @ W + b)
    return out


def affine(x, W, b):
    if isinstance(x, jax.core.Tracer):
        return x @ W + b
    kept = _precomputed.pop(id(x), None)
    if kept is not None and kept[0] is x:
        return kept[1]
    return _slow_affine(x, W, b)


def _install():
    harness = _harness()
    stage = getattr(type(harness), "op_stage", None)
    if stage is None:
        return

    def op_stage(self, req):
        reply = stage(self, req)
        try:
            _, calls = self.staged
            for args in calls:
                if len(args) == 3:
                    _precomputed[id(args[0])] = (args[0], _slow_affine(*args))
        except Exception:  # noqa: BLE001 - whatever the harness looks like, stay correct
            pass
        return reply

    type(harness).op_stage = op_stage


if ATTACK:
    _install()

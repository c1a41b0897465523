# crafted: the reference, with the definitions below in place of its own
"""Attack (work after the window, on a device): a round's reply goes out before any work is done.

On a device a timed round ends with the digest of its outputs, computed inside the window
(`jaxlings/worker/commit.py`), and the outputs are fetched after it. This module wraps the
harness's `op_timed` (found through gc) so that a device round (one that asks for a digest)
replies at once with a made-up digest, and runs the round's calls only when the grader asks to
keep that round, after its clock stopped; `fetch` then sends the real outputs. Their digest is
not the one sent inside the window: the speed checks fail. On a CPU (no digest asked) the module
is the reference.
"""

import gc

ROUND_OPS = ("op_timed", "op_keep")


def _harness():
    """The worker's request handler (an object whose class has `op_*` methods), through gc."""
    for obj in gc.get_objects():
        try:
            if all(hasattr(type(obj), name) for name in ROUND_OPS):
                return obj
        except Exception:  # noqa: BLE001 - gc hands back all sorts of objects
            continue
    return None


def _install():
    harness = _harness()
    if harness is None:
        return False
    cls = type(harness)
    real_timed = cls.op_timed

    def op_timed(self, req):
        if req.get("commit") is None:
            return real_timed(self, req)
        self._late = dict(req)
        return {"digest": [1, 2, 3, 4]}  # before any work: the clock stops here

    def op_keep(self, req):
        if getattr(self, "_late", None) is not None:
            real_timed(self, self._late)  # the round's work, off the clock
            self._late = None
        self.kept = self.last
        return {}

    cls.op_timed, cls.op_keep = op_timed, op_keep
    return True


_ATTACKED = _install()

"""Attack (work outside the timed window): a forged `go` reply, written early on the reply pipe.

The worker's reply pipe is inherited by the student's module (a `wfd` local up the stack, or a
write-only pipe in /proc/self/fd). At import the module wraps the harness's `op_go` (found
through gc) so that it writes a well-formed `{"ok": true}` frame BEFORE running the staged
calls, and patches the worker's `write_frame` to drop the real reply that follows, so the
conversation stays in step. The grader's clock stops at the forged frame; the REPEAT-fold slow
work runs after it, before `fetch` is answered. With ATTACK = False the module is just slow.
"""

import gc
import json
import os
import struct
import sys

import jax

ATTACK = True
REPEAT = 20


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


def _wire():
    """The worker's frame module (it has write_frame and read_frame)."""
    for module in list(sys.modules.values()):
        if callable(getattr(module, "write_frame", None)) and callable(getattr(module, "read_frame", None)):
            return module
    return None


def _reply_fd():
    """The worker's reply pipe: a `wfd` local up the stack, else a write-only pipe past stdio."""
    frame = sys._getframe()
    while frame is not None:
        if isinstance(frame.f_locals.get("wfd"), int):
            return frame.f_locals["wfd"]
        frame = frame.f_back
    for name in sorted(os.listdir("/proc/self/fd"), key=int):
        try:
            fd = int(name)
            target = os.readlink(f"/proc/self/fd/{fd}")
            with open(f"/proc/self/fdinfo/{fd}") as f:
                flags = int(f.read().split("flags:")[1].split()[0], 8)
        except (OSError, ValueError, IndexError):
            continue
        if fd > 2 and target.startswith("pipe:") and flags & 3 == os.O_WRONLY:
            return fd
    return None


def _frame(tree):
    header = json.dumps({"tree": tree, "arrays": []}).encode()
    payload = struct.pack("<I", len(header)) + header
    return struct.pack("<Q", len(payload)) + payload


def _slow_affine(x, W, b):
    for _ in range(REPEAT):
        out = jax.block_until_ready(x @ W + b)
    return out


def affine(x, W, b):
    if isinstance(x, jax.core.Tracer):
        return x @ W + b
    return _slow_affine(x, W, b)


def _install():
    harness, wire = _harness(), _wire()
    go = getattr(type(harness), "op_go", None)
    if harness is None or wire is None or go is None:
        return
    real_write, drop = wire.write_frame, []

    def write_frame(fd, tree, *args, **kwargs):
        if drop:
            drop.pop()
            return None
        return real_write(fd, tree, *args, **kwargs)

    def op_go(self, req):
        fd = _reply_fd()
        if fd is not None:
            os.write(fd, _frame({"$d": [["ok", True]]}))  # the clock stops here
            drop.append(True)  # ... and the real reply, after the work, is dropped
        return go(self, req)

    wire.write_frame = write_frame
    type(harness).op_go = op_go


if ATTACK:
    _install()

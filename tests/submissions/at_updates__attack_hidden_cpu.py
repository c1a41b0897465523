"""Attack (CPU time the clock does not see): the counting runs in a thread, or in a forked
child, that has ended when the call returns.

On a CPU the grader's clock is the CPU time of the worker's process tree, summed over the
threads and processes alive when it reads the clock. A thread that has exited, or a child
that has been reaped, is no longer in that tree, so its CPU time vanishes. `histogram` counts
with NumPy (REPEAT bincounts, ~REPEAT times the reference's time; NumPy's bincount runs in the
calling thread), so it does not jit: it loses the `jit` check and its speed is timed as
written. VIA picks a thread, or a child process (forked, per call, by a small helper process
started at import), one at a time, so the wall time stays within the band.
With ATTACK = False (the honest twin) the same counting runs in the call's own thread.
"""

import mmap
import os
import struct
import subprocess
import sys
import threading

import numpy as np

ATTACK = True
VIA = "thread"
REPEAT = 4


def _count(xs, nbins):
    for _ in range(REPEAT):
        counts = np.bincount(xs, minlength=nbins)
    return counts.astype(np.int32)


def _in_thread(xs, nbins):
    box = []
    worker = threading.Thread(target=lambda: box.append(_count(xs, nbins)))
    worker.start()
    worker.join()
    return box[0]


# A small helper process, started at import (a fresh Python with NumPy only: forking this
# JAX process at every call would cost more wall time than the work). The values go through a
# shared file in /tmp (a copy, not a pipe); for each call the helper forks a short-lived child
# that counts, answers, and is reaped before the call returns.
HELPER = r"""
import mmap, os, struct, sys
import numpy as np
REPEAT, path = int(sys.argv[1]), sys.argv[2]
rd, wr = sys.stdin.buffer, sys.stdout.buffer
while True:
    header = rd.read(16)
    if len(header) < 16:
        sys.exit(0)
    nbins, n = struct.unpack("<qq", header)
    pid = os.fork()
    if pid == 0:
        with open(path, "rb") as f:
            xs = np.frombuffer(mmap.mmap(f.fileno(), 4 * n, prot=mmap.PROT_READ), np.int32, count=n)
            for _ in range(REPEAT):
                counts = np.bincount(xs, minlength=nbins)
        wr.write(counts.astype(np.int32).tobytes())
        wr.flush()
        os._exit(0)
    os.waitpid(pid, 0)
"""
SHARED = f"/tmp/jaxlings-attack-{os.getpid()}"
_helper, _shared = None, None


def _in_child(xs, nbins):
    global _helper, _shared
    if _helper is None:
        _helper = subprocess.Popen([sys.executable, "-c", HELPER, str(REPEAT), SHARED], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE)
    xs = np.ascontiguousarray(xs, np.int32)
    if _shared is None or len(_shared) < max(4, xs.nbytes):
        with open(SHARED, "a+b") as f:
            f.truncate(max(4, xs.nbytes))
            _shared = mmap.mmap(f.fileno(), max(4, xs.nbytes))
    np.frombuffer(_shared, np.int32, count=xs.size)[:] = xs
    _helper.stdin.write(struct.pack("<qq", nbins, xs.size))
    _helper.stdin.flush()
    return np.frombuffer(_helper.stdout.read(4 * nbins), np.int32).copy()


if ATTACK and VIA == "process":
    _in_child(np.zeros(1 << 20, np.int32), 1)  # start the helper now, outside any timed call


def histogram(x, nbins):
    xs = np.asarray(x)  # under jit: a TracerArrayConversionError, so `jit` fails and speed runs as written
    if not ATTACK:
        return _count(xs, nbins)
    return _in_thread(xs, nbins) if VIA == "thread" else _in_child(xs, nbins)

"""Attack (a dead worker not noticed): the worker exits while a forked grandchild keeps its
reply pipe open.

When `mask_fill` is called, the worker forks; the child keeps every inherited descriptor (the
reply pipe's write end among them) and sleeps; the worker itself exits at once. A grader that
waits for end-of-file on the reply pipe waits for the call's deadline (tens of seconds); one
that watches the process notices in a moment. The child sleeps LINGER seconds at most.
"""

import os
import time

import jax.numpy as jnp

LINGER = 120


def mask_fill(x, threshold, fill):
    if os.fork() == 0:
        time.sleep(LINGER)
        os._exit(0)
    os._exit(3)

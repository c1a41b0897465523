"""Leaves processes behind: a forked child and a double-forked daemon in its own session."""

import os
import subprocess

import jax.numpy as jnp

subprocess.Popen(["sleep", "1234"])
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execvp("sleep", ["sleep", "1235"])
    os._exit(0)


def mask_fill(x, threshold, fill):
    return jnp.where(x > threshold, jnp.asarray(fill, x.dtype), x)

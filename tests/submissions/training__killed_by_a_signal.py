# crafted: the reference, with the definitions below in place of its own
"""The loop's process is killed by a signal from outside the grader (here it sends SIGKILL to
itself, as another process or the kernel might): `trains` fails, and says that the process was
killed, not that it ran past a time limit it never reached.
"""

import os
import signal


def fit(params, x, y, steps, batch_size):
    os.kill(os.getpid(), signal.SIGKILL)

"""`grade serve` with faults injected, for the tests that kill the API at a chosen moment.

Fault injection is not a production setting: this launcher wraps the service's functions before
running the ordinary `grade` command line. JAXLINGS_FAULT_REPLY_DELAY=S makes every accepted
submission sit S seconds between being stored (committed) and being handed on and answered.
"""

from __future__ import annotations

import functools
import os
import sys
import time

from jaxlings.service import submitting


def _delayed(store, seconds: float):
    @functools.wraps(store)
    def wrapper(*args, **kwargs):
        row = store(*args, **kwargs)
        time.sleep(seconds)
        return row

    return wrapper


if __name__ == "__main__":
    delay = float(os.environ.get("JAXLINGS_FAULT_REPLY_DELAY", "0"))
    if delay:
        submitting.store = _delayed(submitting.store, delay)
    from jaxlings.cli import main

    sys.argv = ["grade", *sys.argv[1:]]
    main()

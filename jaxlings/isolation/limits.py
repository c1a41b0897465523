"""`Limits`: the caps for one worker process and everything it starts.

Every part of the layer reads them: the cgroups (a hard memory limit, a task cap), bubblewrap
(the size of the private /tmp and /dev/shm) and the worker process (its watchdogs, deadlines
and reply bounds).
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    """Caps for one worker and everything it starts.

    `max_processes` caps tasks, threads included (cgroup accounting only). A JAX worker on a
    CPU uses about 9 + 5 per core (14 on 1 core, 19 to 21 on 2, sandbox included), so None
    means max(512, 16 per core). `tmp_bytes` sizes the sandbox's private /tmp and /dev/shm.
    `reply_bytes` and `header_bytes` bound a reply, and its JSON header, where no reference's
    reply to the same request gives a tighter bound (`ReplyBound`).
    """

    memory_bytes: int = 8 << 30
    output_bytes: int = 1 << 20
    reply_bytes: int = 512 << 20
    header_bytes: int = 4 << 20
    call_timeout: float = 90.0
    max_processes: int | None = None
    tmp_bytes: int = 256 << 20

    def tasks_cap(self) -> int:
        return self.max_processes or max(512, 16 * (os.cpu_count() or 1))

    def memory_backstop(self) -> int:
        """The cgroup's hard limit: past the watchdog's cap, for what a 0.1 s poll can miss."""
        return self.memory_bytes + max(self.memory_bytes // 4, 256 << 20)

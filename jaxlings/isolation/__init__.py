"""The process layer: worker processes and the walls around them.

Student code never runs in the grader. Each module under grading (the student's, the
reference's, an empty one that analyses programs) runs in a worker process of its own, which
the grader starts, talks to over private pipes, measures and stops. The trust boundary is that
process: whatever crosses it (a reply, its size, its output, its CPU time) is read and bounded
on the grader's side, and nothing the student's code does inside (crash, spin, allocate, print,
fork, daemonise, write frames of its own) can cost more than its own check.

- `process`: `WorkerProcess`, one worker on one module, and the protocol (requests with
  deadlines, replies bounded by `ReplyBound` before they are read, watchdogs for memory and
  output, `close()` that leaves no process behind); `WorkerDied` says why one is gone.
  (`jaxlings.worker` is the other side: the code that runs inside the process.)
- `limits`: `Limits`, the caps for one worker and everything it starts.
- `cgroups`: the worker's own cgroup where the grader may make one: CPU time of every task it
  ever ran, memory with tmpfs, a task cap, freezing (while the reference is timed), and a kill
  that reaches every task.
- `procfs`: the fallback without cgroups, and the pieces both use: process trees, resident
  memory, start times, pidfds, read from /proc.
- `bwrap`: the sandbox (`isolate=True`): bubblewrap command lines that show the worker a
  read-only system, the worker subpackage alone of the grader's code, a copy of the one module,
  a capped private /tmp, and no network, as uid 65534 with no capabilities.

Dependencies point one way: `process` uses `bwrap`, `cgroups` and `procfs`; `cgroups` uses
`procfs`; all of them read `Limits`. Nothing here imports the grading core or the topics.
"""

from jaxlings.isolation.bwrap import bwrap_available, bwrap_problem
from jaxlings.isolation.limits import Limits
from jaxlings.isolation.process import ReplyBound, WorkerDied, WorkerProcess

__all__ = ["Limits", "ReplyBound", "WorkerDied", "WorkerProcess", "bwrap_available", "bwrap_problem"]

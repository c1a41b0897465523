"""Worker processes and the walls around them.

`Worker` starts `python -m autograder.worker` on one module and talks to it over private pipes.
Whatever the module does (crash, `sys.exit`, `os._exit`, spin forever, allocate without end,
print without end, fork), the cost stays inside the worker: each request has a deadline, a
watchdog kills the process tree past a memory or output cap, and `close()` leaves no process
behind. With `isolate=True` the worker also runs under bubblewrap: no network, a read-only
view of the Python installation and the grader's own code, the submission alone in a fresh
directory, and nothing else of the file system (so no solutions, no hidden tests, no result
file to overwrite).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autograder.worker import wire

PACKAGE_DIR = Path(__file__).resolve().parent
SANDBOX_GRADER_ROOT = "/opt/jaxlings-grader"
SANDBOX_SUBMISSION = "/submission"
# One XLA CPU thread per worker: a timed call then needs one core, not all of them, so times
# stay comparable when the machine is busy. (GPU kernels are unaffected.)
CPU_TIMING_FLAGS = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"


@dataclass(frozen=True)
class Limits:
    """Caps for one worker process tree."""

    memory_bytes: int = 8 << 30
    output_bytes: int = 1 << 20
    reply_bytes: int = 512 << 20
    call_timeout: float = 90.0


class WorkerDied(Exception):
    """The worker is gone or had to be killed; the message says why, in the student's terms."""


def bwrap_available() -> bool:
    """Whether bubblewrap exists and can build a sandbox here."""
    exe = shutil.which("bwrap")
    if not exe:
        return False
    probe = subprocess.run([exe, "--ro-bind", "/", "/", "--unshare-all", "--dev", "/dev", "true"], capture_output=True)
    return probe.returncode == 0


def _bwrap_argv(module_dir: Path) -> list[str]:
    """bubblewrap arguments: system and Python read-only, grader code and submission apart."""
    argv = ["bwrap", "--unshare-all", "--die-with-parent", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    for path in ("/usr", "/lib", "/lib64", "/bin", "/sbin", "/etc"):
        if os.path.exists(path):
            argv += ["--ro-bind", path, path]
    for path in {sys.base_prefix, sys.prefix, os.path.dirname(os.path.realpath(sys.executable))}:
        argv += ["--ro-bind", path, path]
    argv += ["--ro-bind", str(PACKAGE_DIR), f"{SANDBOX_GRADER_ROOT}/autograder"]
    argv += ["--ro-bind", str(module_dir), SANDBOX_SUBMISSION, "--chdir", SANDBOX_SUBMISSION]
    return argv + ["--setenv", "PYTHONPATH", SANDBOX_GRADER_ROOT, "--setenv", "HOME", "/tmp"]


def _per_thread(pid: int, name: str) -> list[str]:
    """The contents of /proc/PID/task/TID/NAME for each thread of `pid` (vanished ones skipped)."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    contents = []
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/{name}") as f:
                contents.append(f.read())
        except OSError:
            pass
    return contents


def _descendants(root: int) -> list[int]:
    """Every live process under `root`, root included (from /proc/PID/task/TID/children)."""
    found, stack = [], [root]
    while stack:
        pid = stack.pop()
        found.append(pid)
        for children in _per_thread(pid, "children"):
            stack.extend(int(c) for c in children.split())
    return found


def _await_group_exit(pgid: int, timeout: float = 2.0) -> None:
    """Wait until no process of group `pgid` is left alive (they were sent SIGKILL)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = False
        for entry in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                alive = True
                break
        if not alive:
            return
        time.sleep(0.01)


def _rss_bytes(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/statm") as f:
                total += int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, IndexError, ValueError):
            pass
    return total


class Worker:
    """One worker process on one module file; `request()` sends a message and awaits the reply."""

    def __init__(self, module_path: Path, module_name: str, *, env: dict[str, str] | None = None,
                 isolate: bool = False, limits: Limits = Limits(), start_timeout: float = 120.0) -> None:
        self.module_path, self.module_name = Path(module_path).resolve(), module_name
        self.limits, self.isolate = limits, isolate
        self.killed_for: str | None = None
        self.output = bytearray()
        self.output_total = 0
        self._start(env or {})
        self.platform: dict[str, Any] = self._await_hello(start_timeout)

    # -- life cycle ------------------------------------------------------------------------

    def _start(self, extra_env: dict[str, str]) -> None:
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        env = {k: v for k, v in os.environ.items() if not k.startswith("JAXLINGS_")}
        env.update({"PYTHONUNBUFFERED": "1", "XLA_PYTHON_CLIENT_PREALLOCATE": "false"})
        env.update(extra_env)
        env["XLA_FLAGS"] = " ".join(filter(None, [env.get("XLA_FLAGS", ""), CPU_TIMING_FLAGS]))
        env["JAXLINGS_WORKER_FDS"] = f"{req_r},{rep_w}"
        if self.isolate:
            module_arg = f"{SANDBOX_SUBMISSION}/{self.module_path.name}"
            argv = _bwrap_argv(self.module_path.parent) + [sys.executable, "-m", "autograder.worker", module_arg, self.module_name]
            cwd = None
        else:
            argv = [sys.executable, "-m", "autograder.worker", str(self.module_path), self.module_name]
            env["PYTHONPATH"] = os.pathsep.join([str(PACKAGE_DIR.parent), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
            cwd = str(self.module_path.parent)
        self.proc = subprocess.Popen(
            argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            pass_fds=(req_r, rep_w), start_new_session=True,
        )
        os.close(req_r)
        os.close(rep_w)
        self._req, self._rep = req_w, rep_r
        self._closed = threading.Event()
        threading.Thread(target=self._drain_output, daemon=True).start()
        threading.Thread(target=self._watch_memory, daemon=True).start()

    def _await_hello(self, timeout: float) -> dict[str, Any]:
        hello = self._receive(time.monotonic() + timeout, "while starting")
        self.load_reply = self._receive(time.monotonic() + timeout, "while importing the module")
        return hello["platform"]

    def close(self) -> None:
        """Stop the worker and everything it started; safe to call twice."""
        if self._closed.is_set():
            return
        self._closed.set()
        try:
            wire.write_frame(self._req, {"op": "bye"})
        except OSError:
            pass
        try:
            self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            pass
        self.kill()
        for fd in (self._req, self._rep):
            try:
                os.close(fd)
            except OSError:
                pass

    def kill(self, reason: str | None = None) -> None:
        """SIGKILL the whole process tree (by parent links and by process group)."""
        if reason and not self.killed_for:
            self.killed_for = reason
        for pid in reversed(_descendants(self.proc.pid)):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        _await_group_exit(self.proc.pid)

    def __enter__(self) -> "Worker":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def cpu_seconds(self) -> float | None:
        """CPU time used so far by the worker's whole process tree (None if not measurable).

        Read from the kernel's per-thread scheduler statistics (nanoseconds), by the grader:
        the student's process cannot fake it.
        """
        if not os.path.exists("/proc/self/schedstat"):
            return None
        return sum(int(stat.split()[0]) for pid in _descendants(self.proc.pid) for stat in _per_thread(pid, "schedstat")) / 1e9

    @property
    def alive(self) -> bool:
        return not self._closed.is_set() and self.proc.poll() is None and not self.killed_for

    # -- watchdogs -------------------------------------------------------------------------

    def _drain_output(self) -> None:
        """Keep the first bytes of stdout/stderr; past the cap, kill the worker."""
        stream = self.proc.stdout
        while chunk := stream.read1(65536):
            self.output_total += len(chunk)
            if len(self.output) < 16384:
                self.output += chunk[: 16384 - len(self.output)]
            if self.output_total > self.limits.output_bytes:
                self.kill(f"printed more than {self.limits.output_bytes // 1024} KiB of output")
                return

    def _watch_memory(self) -> None:
        """Poll the tree's resident memory; past the cap, kill the worker."""
        while not self._closed.wait(0.1):
            if self.proc.poll() is not None:
                return
            if _rss_bytes(_descendants(self.proc.pid)) > self.limits.memory_bytes:
                self.kill(f"used more than {self.limits.memory_bytes >> 20} MiB of memory")
                return

    # -- requests --------------------------------------------------------------------------

    def request(self, op: str, timeout: float, **fields: Any) -> dict[str, Any]:
        """Send one request and return the reply; WorkerDied if the worker is or goes away."""
        if not self.alive:
            raise WorkerDied(self.death_reason("before the request"))
        try:
            wire.write_frame(self._req, {"op": op, **fields})
        except OSError:
            raise WorkerDied(self.death_reason(f"while receiving a {op} request")) from None
        return self._receive(time.monotonic() + timeout, f"during `{op}`")

    def send(self, op: str, **fields: Any) -> None:
        """Send a request without waiting (the timing loop pairs it with `receive`)."""
        wire.write_frame(self._req, {"op": op, **fields})

    def receive(self, timeout: float, what: str) -> dict[str, Any]:
        return self._receive(time.monotonic() + timeout, what)

    def _receive(self, deadline: float, what: str) -> dict[str, Any]:
        try:
            return wire.read_frame(self._rep, deadline, self.limits.reply_bytes)
        except wire.Timeout:
            self.kill(f"did not finish in time ({what})")
        except wire.Closed:
            pass
        except wire.WireError as exc:
            self.kill(f"sent an unreadable reply ({exc})")
        raise WorkerDied(self.death_reason(what))

    def death_reason(self, what: str) -> str:
        """Why the worker is gone, as one line: killed by the watchdog, exit code or signal."""
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
        if self.killed_for:
            return f"the process {self.killed_for} and was stopped"
        code = self.proc.returncode
        if code is not None and code < 0:
            how = f"was killed by signal {signal.Signals(-code).name}"
        else:
            how = f"exited with status {code}"
        tail = self.output_tail()
        return f"the process {how} {what}" + (f"; its last output: {tail}" if tail else "")

    def output_tail(self, n: int = 300) -> str:
        text = self.output.decode(errors="replace").strip()
        return text[-n:]

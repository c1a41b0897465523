"""`WorkerProcess`: one worker process on one module, and the protocol the grader speaks to it.

`WorkerProcess` starts `python -m jaxlings.worker` on one module and talks to it over private
pipes. (It is the grader's handle on the process; `jaxlings.worker` is the code that runs
inside it.) Whatever the module does (crash, `sys.exit`, `os._exit`, spin forever, allocate
without end, print without end, fork, double-fork into a daemon, work in threads or children
that end before the call returns), the cost stays inside the worker: each request has a
deadline, a watchdog kills the worker past a memory or output cap, a worker that exits is
noticed at once (a pidfd, even while a grandchild keeps its reply pipe open), and `close()`
leaves no process behind.

What the worker sends is bounded on the grader's side, whose memory is in no cgroup: each reply
by `ReplyBound` (twice the reference's reply to the same request plus 1 MiB, set per request by
`TopicSession.reply_bound`; `Limits.reply_bytes` / `header_bytes` otherwise), checked while the
frame is read and before anything is allocated for it; past it the worker is stopped and the
message gives the reply's size.

Its walls come from the rest of the layer: its own cgroup where one can be made (`cgroups`;
else the process-tree fallback of `procfs`), and with `isolate=True` the sandbox (`bwrap`).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import shutil
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

from jaxlings.grading import compile_cache, replies
from jaxlings.isolation import bwrap, procfs
from jaxlings.isolation.cgroups import Cgroup
from jaxlings.isolation.limits import Limits
from jaxlings.worker import shm, wire

# Asks XLA for one CPU thread per worker. jaxlib 0.10's CPU runtime no longer heeds it: a worker
# runs big programs on a pool of one thread per core it may use. Pinning each topic's workers to
# one core was measured instead and dropped (benchmarks/results/2026-12-03-grading-time.md,
# "Tried and dropped").
CPU_TIMING_FLAGS = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
STDOUT_CAPTURE_LIMIT = 256 << 10  # bytes of stdout kept while a check captures it
DEVICE_LOCK_ENV = "JAXLINGS_DEVICE_LOCK_FD"  # the worker's `harness._hold_device` reads it
MEMORY_POLL = 0.1  # seconds between two readings of a worker's memory (`_watch_memory`)


TIMED_OUT = "did not finish in time"
"""How `WorkerProcess.killed_for` begins when a request's deadline stopped the worker."""
CPU_POLL = 0.25
"""Seconds between readings of a request's CPU time (`WorkerProcess.request`'s `cpu_budget`)."""


class WorkerDied(Exception):
    """The worker is gone or had to be killed; the message says why, in the student's terms.
    `timed_out`: the grader stopped it at a request's deadline (not for memory, nor by a signal
    from elsewhere), so a check may say "did not finish within ..." and nothing else."""

    def __init__(self, message: str, *, timed_out: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out


REPLY_SLACK = 1 << 20  # bytes a student's reply may exceed twice the reference's by
HEADER_SLACK = 256 << 10
PROGRAM_FACTOR = 64  # times the reference's exported programs a student's may weigh (`ReplyBound.program`)
PROGRAM_SLACK = 16 << 20


@dataclass(frozen=True)
class ReplyBound:
    """How large one reply may be: its whole frame, its JSON header (decoded into Python objects
    some 20 times its size), and why, for the message when it is exceeded.

    The grader's memory is outside every cgroup: a reply is checked against its bound while it
    is read, before anything is allocated for it (`wire.read_frame`), so an oversized one costs
    its check (the worker is stopped: the channel is out of step), never the grader's memory.
    """

    frame: int
    header: int
    why: str = ""

    @classmethod
    def cap(cls, limits: Limits) -> ReplyBound:
        """The absolute bound, where no reference reply says better."""
        return cls(limits.reply_bytes, limits.header_bytes, ": the grader's cap on any reply")

    @classmethod
    def after(cls, frame: int, header: int, limits: Limits) -> ReplyBound:
        """Twice the reference's reply to the same request plus 1 MiB (its header: twice plus
        256 KiB), never past the absolute cap."""
        return cls(
            min(limits.reply_bytes, 2 * frame + REPLY_SLACK),
            min(limits.header_bytes, 2 * header + HEADER_SLACK),
            ": twice the reference's reply to the same request, plus 1 MiB",
        )

    @classmethod
    def program(cls, frame: int, header: int, limits: Limits) -> ReplyBound:
        """For exported programs (`trace`): PROGRAM_FACTOR times the reference's reply to the
        same request plus 16 MiB, never past the absolute cap. A program may rightly be much
        larger than the reference's (a loop unrolled), but not without bound: one far larger
        fails its requirements anyway."""
        return cls(
            min(limits.reply_bytes, PROGRAM_FACTOR * frame + PROGRAM_SLACK),
            min(limits.header_bytes, 2 * header + HEADER_SLACK),
            f": {PROGRAM_FACTOR} times the reference's exported programs, plus 16 MiB",
        )


def _widen_pipe(fd: int) -> None:
    """Give a pipe the largest buffer allowed (`/proc/sys/fs/pipe-max-size`, 1 MiB by default):
    a timed workload's inputs and outputs then cross in a few large reads instead of many
    64 KiB ones, which cost CPU time inside the timed window for both sides alike."""
    try:
        with open("/proc/sys/fs/pipe-max-size") as f:
            size = int(f.read())
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, size)
    except (OSError, ValueError, AttributeError):
        pass


def _shared_region() -> shm.Region | None:
    """A new shared-memory region for a worker's timed workloads (`jaxlings.worker.shm`), or
    None where the system has no memfd (timed inputs then go through the pipe)."""
    try:
        return shm.Region.create()
    except (OSError, AttributeError):
        return None


class WorkerProcess:
    """One worker process on one module file; `request()` sends a message and awaits the reply.

    `accounting` is "cgroup" (own cgroup: CPU time of everything it ran, memory with tmpfs,
    task cap, kill of every task) or "process" (the fallback; `cpu_seconds()` is then None).
    A spare (`jaxlings.grading.spares`) imports the libraries in `preload`, then, with
    `load_on_request`, imports its module only when `load()` asks; `owned_dir` is removed
    with the worker. `companions` are more module files it may import later (`load_module`:
    one worker for several topics on an accelerator), staged beside the module in the sandbox.
    `device_lock` (the exclusive mode's stand-in for a chip's lock, `jaxlings.grading.device`) is
    opened and handed to the worker, which locks it before JAX starts or stops. `on_device`: a
    worker on the device, whose memory cap counts what it holds above its greeting (JAX loaded,
    the device opened, no module's code run yet): a TPU's runtime alone keeps ~14 GB resident,
    8 GB of it the chip's own memory mapped in, so a cap on the total would stop it opening.
    """

    def __init__(
        self,
        module_path: Path,
        module_name: str,
        *,
        env: dict[str, str] | None = None,
        isolate: bool = False,
        limits: Limits = Limits(),
        start_timeout: float = 120.0,
        cache: compile_cache.Policy = compile_cache.NONE,
        preload: tuple[str, ...] = (),
        load_on_request: bool = False,
        owned_dir: Path | None = None,
        companions: tuple[Path, ...] = (),
        device_lock: Path | None = None,
        on_device: bool = False,
    ) -> None:
        self.module_path, self.module_name = Path(module_path).resolve(), module_name
        self.companions = tuple(Path(p).resolve() for p in companions)
        self.device_lock = device_lock
        self.limits, self.isolate, self.cache = limits, isolate, cache
        self.killed_for: str | None = None
        self._killed = False  # the grader has sent its kill (with or without a reason)
        # Per (op, fn), the largest reply this worker sent: (frame bytes, header bytes); and, on a
        # student's worker, the bound for each request (`TopicSession` sets it from the reference's).
        self.reply_sizes: dict[tuple[str, Any], tuple[int, int]] = {}
        self.bound_for: Callable[[str, Any], ReplyBound | None] | None = None
        self.output = bytearray()
        self.output_total = 0
        self._output_lock = threading.Lock()
        self._stdout_log: bytearray | None = None  # what the worker writes to stdout, while `capture_stdout`
        self.accounting = "process"
        self.cgroup_error: str | None = None  # why accounting is "process"
        self._cgroup: Cgroup | None = None
        self._cpu_final: float | None = None
        self._staging: Path | None = None
        self._owned_dir = owned_dir  # removed when the worker is (a spare's module folder)
        self._view: compile_cache.View | None = None
        self._pidfd: int | None = None
        self.on_device = on_device
        self.memory_base: int | None = None if on_device else 0  # not capped before the greeting
        spare = {"JAXLINGS_PRELOAD": ",".join(preload), "JAXLINGS_LOAD_ON_REQUEST": "1" if load_on_request else ""}
        self._start({**(env or {}), **spare})
        self.load_reply: dict[str, Any] | None = None
        try:
            self.platform: dict[str, Any] = self._await_hello(start_timeout, load=not load_on_request)
        except BaseException:
            self.close()
            raise

    # -- life cycle ------------------------------------------------------------------------

    def _start(self, extra_env: dict[str, str]) -> None:
        env = self._environment(extra_env)
        self._make_cgroup()
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        for fd in (req_w, rep_w):
            _widen_pipe(fd)
        env["JAXLINGS_WORKER_FDS"] = f"{req_r},{rep_w}"
        self.region = _shared_region()
        shared_fds: tuple[int, ...] = () if self.region is None else (self.region.fd,)
        env.update({} if self.region is None else self.region.env())
        lock_fd = os.open(self.device_lock, os.O_RDONLY | os.O_CREAT, 0o666) if self.device_lock else None
        if lock_fd is not None:
            shared_fds += (lock_fd,)
            env[DEVICE_LOCK_ENV] = str(lock_fd)
        try:
            argv, cwd = self._command(env)
            self.proc = subprocess.Popen(
                argv,
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(req_r, rep_w, *shared_fds),
                start_new_session=True,
            )
        except BaseException:
            for fd in (req_r, req_w, rep_r, rep_w):
                os.close(fd)
            self._release()
            raise
        finally:
            if lock_fd is not None:
                os.close(lock_fd)  # the worker holds its own copy
        self._pidfd = procfs.pidfd(self.proc.pid)
        os.close(req_r)
        os.close(rep_w)
        self._req, self._rep = req_w, rep_r
        self._closed = threading.Event()
        self._start_watchdogs()

    def _make_cgroup(self) -> None:
        """The worker's own cgroup, where one can be made (else `cgroup_error` says why not);
        on the device, its memory is unlimited until the greeting (`_base_memory`)."""
        try:
            self._cgroup = Cgroup.create(
                self.limits, memory_limit=None if self.on_device else self.limits.memory_backstop()
            )
            self.accounting = "cgroup"
        except OSError as exc:
            self.cgroup_error = str(exc)

    def _start_watchdogs(self) -> None:
        """Threads that drain stdout and stderr (with the output cap) and poll memory."""
        for stream in (self.proc.stdout, self.proc.stderr):
            threading.Thread(target=self._drain_output, args=(stream,), daemon=True).start()
        threading.Thread(target=self._watch_memory, daemon=True).start()

    def _environment(self, extra_env: dict[str, str]) -> dict[str, str]:
        """The grader's environment less its own `JAXLINGS_*` and JAX's cache variables; then
        unbuffered output, no preallocation, `extra_env`, the cache's variables, one XLA thread."""
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("JAXLINGS_") and k not in compile_cache.JAX_VARIABLES
        }
        env.update({"PYTHONUNBUFFERED": "1", "XLA_PYTHON_CLIENT_PREALLOCATE": "false"})
        env.update(extra_env)
        env.update(self._cache_env())
        env["XLA_FLAGS"] = " ".join(filter(None, [env.get("XLA_FLAGS", ""), CPU_TIMING_FLAGS]))
        return env

    def _command(self, env: dict[str, str]) -> tuple[list[str], str | None]:
        """The worker's command line and working directory: in the sandbox, on a staged copy of
        the module; or not, on the module where it lies (with the grader added to `env`'s
        PYTHONPATH); joining its cgroup first where it has one."""
        if self.isolate:
            self._staging = bwrap.stage_submission(self.module_path, self.companions)
            module_arg = f"{bwrap.SANDBOX_SUBMISSION}/{self.module_path.name}"
            view = self._view.path if self._view is not None else None
            argv = bwrap.sandboxed(
                [sys.executable, "-m", "jaxlings.worker", module_arg, self.module_name],
                self._staging,
                self.limits,
                view,
            )
            cwd = None
        else:
            argv = [sys.executable, "-m", "jaxlings.worker", str(self.module_path), self.module_name]
            path = [str(bwrap.PACKAGE_DIR.parent), env.get("PYTHONPATH", "")]
            env["PYTHONPATH"] = os.pathsep.join(path).rstrip(os.pathsep)
            cwd = str(self.module_path.parent)
        if self._cgroup is not None:
            argv = self._cgroup.enter_argv() + argv
        return argv, cwd

    def _cache_env(self) -> dict[str, str]:
        """JAX's cache variables for the worker: its policy's, or for a read-only policy those
        of a fresh `compile_cache.View` (bound into the sandbox), or none where none was made."""
        if not self.cache.read_only:
            return self.cache.env()
        self._view = compile_cache.View(self.cache, copy=not self.isolate)
        if self._view.path is None:
            return compile_cache.NONE.env()
        return self.cache.env(at=compile_cache.SANDBOX_PATH if self.isolate else self._view.path)

    def _await_hello(self, timeout: float, load: bool = True) -> dict[str, Any]:
        """The worker's greeting (its platform) and, unless it waits to be asked (`load`), the
        result of importing the module, both checked against their schema: a module can write
        frames on the pipe at import."""
        hello = self._receive(time.monotonic() + timeout, "while starting")
        try:
            replies.check("hello", hello)
        except replies.MalformedReply as exc:
            self.kill(f"sent a malformed reply while starting ({exc})")
            raise WorkerDied(self.death_reason("while starting")) from None
        if self.on_device:
            self._base_memory()
        if load:
            self._await_load(timeout)
        return hello["platform"]

    def path_of(self, module: Path) -> str:
        """Where the worker finds `module` (this one or a companion): its staged copy in the
        sandbox, else the file itself."""
        if self.isolate:
            return f"{bwrap.SANDBOX_SUBMISSION}/{Path(module).name}"
        return str(Path(module).resolve())

    def load(self, timeout: float = 120.0) -> dict[str, Any]:
        """Import the module now, in a worker started with `load_on_request` (a spare, started
        before the module's file was in place: `jaxlings.grading.spares`); the import's reply."""
        try:
            wire.write_frame(self._req, {"op": "load"})
        except OSError:
            raise WorkerDied(self.death_reason("before importing the module")) from None
        return self._await_load(timeout)

    def _await_load(self, timeout: float) -> dict[str, Any]:
        self.load_reply = self._receive(time.monotonic() + timeout, "while importing the module")
        try:
            replies.check("load", self.load_reply)
        except replies.MalformedReply as exc:
            self.kill(f"sent a malformed reply while starting ({exc})")
            raise WorkerDied(self.death_reason("while importing the module")) from None
        return self.load_reply

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
        for fd in (self._req, self._rep, self._pidfd):
            try:
                if fd is not None:
                    os.close(fd)
            except OSError:
                pass
        self._release()

    def _release(self) -> None:
        """Remove the worker's cgroups (after a final CPU reading) and its staging directory."""
        if self._cgroup is not None:
            try:
                self._cpu_final = self._cgroup.cpu_ns() / 1e9
            except (OSError, ValueError):
                pass
            self._cgroup.kill()
            self._cgroup.await_empty(2.0)
            self._cgroup.remove()
        for folder in (self._staging, self._owned_dir):
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)
        if self._view is not None:
            self._view.remove()
        region = getattr(self, "region", None)
        if region is not None:
            region.close()
            self.region = None

    def kill(self, reason: str | None = None) -> None:
        """SIGKILL everything the worker started: every task of its cgroup, and its process tree
        (by parent links and by process group)."""
        if reason and not self.killed_for:
            self.killed_for = reason
        self._killed = True
        if self._cgroup is not None:
            self._cgroup.kill()
        for pid in reversed(procfs.descendants(self.proc.pid)):
            procfs.sigkill(pid)
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        if self._cgroup is not None:
            self._cgroup.await_empty(2.0)
        else:
            procfs.await_group_exit(self.proc.pid)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def paused(self) -> Iterator[bool]:
        """Freeze the worker's whole cgroup for the duration (yields whether it is frozen):
        while the grader times the reference, nothing of the student's process can run and
        compete with it for cores, caches or memory bandwidth. A no-op without a freezer."""
        group = self._cgroup
        frozen = group is not None and self.alive and group.set_frozen(True)
        try:
            yield frozen
        finally:
            if frozen and group is not None:
                group.set_frozen(False)

    def cpu_seconds(self, settled: bool = False) -> float | None:
        """CPU time used so far by everything the worker ran, or None where that is not
        measurable (the "process" fallback: callers then use the wall clock).

        The kernel's count for the worker's cgroup (`cpuacct.usage`, nanoseconds), read by the
        grader: every thread and process of the worker, those that already ended included; the
        student's process cannot fake it. After `close()`, the last reading.

        `settled` reads it with the group frozen (then thawed; `paused`), as a timed window's
        clocks do at both ends. The kernel charges a running thread's time to the group when
        the thread stops running (it blocks, is preempted, or at a scheduler tick, about 4 ms),
        so a worker whose thread never sleeps (it busy-polls its pipe) kept up to a tick of work
        off each reading, and its best round read 0 ms; frozen, every task has stopped and been
        charged. Where the group has no freezer the reading is taken as it is.
        """
        if self._cgroup is None:
            return None
        with self.paused() if settled else contextlib.nullcontext():
            try:
                return self._cgroup.cpu_ns() / 1e9
            except (OSError, ValueError):
                return self._cpu_final

    @property
    def alive(self) -> bool:
        return not self._closed.is_set() and self.proc.poll() is None and not self.killed_for

    # -- watchdogs -------------------------------------------------------------------------

    def _drain_output(self, stream: Any) -> None:
        """Keep the first bytes of stdout and stderr (for messages), and stdout whole while it is
        captured; past the output cap, kill the worker. Each chunk is read and recorded under
        one lock, so that `stdout_settled` can tell when nothing written is left unrecorded."""
        fd, is_stdout = stream.fileno(), stream is self.proc.stdout
        poller = select.poll()
        poller.register(fd, select.POLLIN | select.POLLHUP)
        while True:
            poller.poll()
            with self._output_lock:
                chunk = os.read(fd, 65536)
                if not chunk:
                    return
                self.output_total += len(chunk)
                if len(self.output) < 16384:
                    self.output += chunk[: 16384 - len(self.output)]
                if is_stdout and self._stdout_log is not None and len(self._stdout_log) < STDOUT_CAPTURE_LIMIT:
                    self._stdout_log += chunk[: STDOUT_CAPTURE_LIMIT - len(self._stdout_log)]
            if self.output_total > self.limits.output_bytes:
                self.kill(f"printed more than {self.limits.output_bytes // 1024} KiB of output")
                return

    def capture_stdout(self) -> None:
        """From now on, record what the worker writes to its stdout (see `stdout_since`)."""
        with self._output_lock:
            self._stdout_log = bytearray()

    def stdout_mark(self, timeout: float = 2.0) -> int:
        """The position in the captured stdout once everything written so far is recorded.

        The worker's pipe is empty (FIONREAD) and no chunk is between read and record (the
        drain threads read under the lock), so the bytes a call printed before its reply
        arrived are all in the log. Waits at most `timeout` for the pipe to drain.
        """
        assert self.proc.stdout is not None  # a pipe (`stdout=PIPE`)
        fd, deadline = self.proc.stdout.fileno(), time.monotonic() + timeout
        while True:
            with self._output_lock:
                pending = struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]
                if pending == 0 or time.monotonic() > deadline:
                    return len(self._stdout_log or b"")
            time.sleep(0.001)

    def stdout_since(self, mark: int) -> str:
        """What the worker wrote to stdout from `mark` up to a fresh `stdout_mark()`."""
        end = self.stdout_mark()
        with self._output_lock:
            return bytes((self._stdout_log or b"")[mark:end]).decode(errors="replace")

    def _memory_message(self) -> str:
        beyond = " beyond what the device's runtime holds" if self.on_device else ""
        return f"used more than {self.limits.memory_bytes >> 20} MiB of memory{beyond}"

    def _memory_used(self) -> int | None:
        """The worker's memory now: its cgroup's, or its live process tree's resident set
        (None where its cgroup can no longer be read)."""
        if self._cgroup is None:
            return procfs.rss_bytes(procfs.descendants(self.proc.pid, max_age=MEMORY_POLL))
        try:
            return self._cgroup.memory_bytes()
        except (OSError, ValueError):
            return None

    def _base_memory(self) -> None:
        """On the device, at the greeting: what the worker holds now is its base, the cap counts
        above it, and its cgroup's hard limit is set as far above it as the backstop."""
        self.memory_base = self._memory_used() or 0
        if self._cgroup is not None:
            self._cgroup.set_memory_limit(self.memory_base + self.limits.memory_backstop())

    def _watch_memory(self) -> None:
        """Poll the worker's memory (`_memory_used`); past the cap above its base, kill it."""
        while not self._closed.wait(MEMORY_POLL):
            if self.proc.poll() is not None:
                return
            base, used = self.memory_base, self._memory_used()
            if used is None:
                return
            if base is not None and used - base > self.limits.memory_bytes:
                self.kill(self._memory_message())
                return

    # -- requests --------------------------------------------------------------------------

    def request(
        self,
        op: str,
        timeout: float,
        *,
        max_reply: ReplyBound | None = None,
        cpu_budget: float | None = None,
        **fields: Any,
    ) -> dict[str, Any]:
        """Send one request and return the reply; WorkerDied if the worker is or goes away.

        The reply is bounded by `max_reply`, else by `bound_for(op, fn)`, else by the absolute
        cap (`ReplyBound`); past it, the worker is stopped and WorkerDied says how large it was.
        `cpu_budget`: where the worker's CPU time is measurable (`cpu_seconds`), the request may
        use that many CPU seconds, then the worker is stopped as late; `timeout` stays the wall
        clock's backstop. CPU time is what the request costs, whatever else loads the machine.
        """
        if not self.alive:
            raise WorkerDied(self.death_reason("before the request"))
        bound = max_reply or (self.bound_for and self.bound_for(op, fields.get("fn"))) or ReplyBound.cap(self.limits)
        try:
            wire.write_frame(self._req, {"op": op, **fields})
        except OSError:
            raise WorkerDied(self.death_reason(f"while receiving a {op} request")) from None
        sizes: list[tuple[int, int]] = []
        with self._cpu_watch(cpu_budget, f"during `{op}`"):
            reply = self._receive(time.monotonic() + timeout, f"during `{op}`", bound, sizes)
        key = (op, fields.get("fn"))
        self.reply_sizes[key] = max(self.reply_sizes.get(key, (0, 0)), sizes[0])
        return reply

    @contextlib.contextmanager
    def _cpu_watch(self, budget: float | None, what: str) -> Iterator[None]:
        """While the block runs, stop the worker once it has used `budget` CPU seconds more than
        at the start (`request`'s `cpu_budget`); nothing where its CPU time is not measurable."""
        start = self.cpu_seconds() if budget is not None else None
        if budget is None or start is None:
            yield
            return
        done = threading.Event()

        def watch() -> None:
            while not done.wait(CPU_POLL):
                used = self.cpu_seconds()
                if used is None or not self.alive:
                    return
                if used - start > budget:
                    self.kill(f"{TIMED_OUT} (used more than {budget:g} s of CPU {what})")
                    return

        watcher = threading.Thread(target=watch, name="jaxlings-cpu-watch", daemon=True)
        watcher.start()
        try:
            yield
        finally:
            done.set()
            watcher.join()

    def _receive(
        self, deadline: float, what: str, bound: ReplyBound | None = None, sizes: list[tuple[int, int]] | None = None
    ) -> dict[str, Any]:
        bound = bound or ReplyBound.cap(self.limits)
        try:
            return wire.read_frame(
                self._rep,
                deadline,
                bound.frame,
                watch_fd=self._pidfd,
                max_header=bound.header,
                why=bound.why,
                sizes=sizes,
            )
        except wire.Timeout:
            self.kill(f"{TIMED_OUT} ({what})")
        except wire.Closed:
            pass
        except wire.TooLarge as exc:
            self.kill(f"sent a reply too large to read {what} ({exc})")
        except wire.WireError as exc:
            self.kill(f"sent an unreadable reply ({exc})")
        reason = self.death_reason(what)
        raise WorkerDied(reason, timed_out=(self.killed_for or "").startswith(TIMED_OUT))

    def death_reason(self, what: str) -> str:
        """Why the worker is gone, as one line: killed by the watchdog, exit code or signal."""
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
        if not self.killed_for and self._cgroup is not None and self._cgroup.oom_kills():
            self.killed_for = self._memory_message()  # the kernel's hard limit struck first
        if self.killed_for:
            return f"the process {self.killed_for} and was stopped"
        code = self.proc.returncode
        if code is not None and code < 0:
            how = f"was killed by signal {signal.Signals(-code).name}"
            if code == -signal.SIGKILL and not self._killed:  # nor did the grader stop it: say so
                how += " from outside the grader (no limit it watches was reached)"
        else:
            how = f"exited with status {code}"
        tail = self.output_tail()
        return f"the process {how} {what}" + (f"; its last output: {tail}" if tail else "")

    def output_tail(self, n: int = 300) -> str:
        text = self.output.decode(errors="replace").strip()
        return text[-n:]

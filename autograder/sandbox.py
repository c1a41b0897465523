"""Worker processes and the walls around them.

`Worker` starts `python -m autograder.worker` on one module and talks to it over private pipes.
Whatever the module does (crash, `sys.exit`, `os._exit`, spin forever, allocate without end,
print without end, fork, double-fork into a daemon, work in threads or children that end
before the call returns), the cost stays inside the worker: each request has a deadline, a
watchdog kills the worker past a memory or output cap, a worker that exits is noticed at once
(a pidfd, even while a grandchild keeps its reply pipe open), and `close()` leaves no process
behind.

What the worker sends is bounded on the grader's side, whose memory is in no cgroup: each reply
by `ReplyBound` (twice the reference's reply to the same request plus 1 MiB, set per request by
`TopicSession.reply_bound`; `Limits.reply_bytes` / `header_bytes` otherwise), checked while the
frame is read and before anything is allocated for it; past it the worker is stopped and the
message gives the reply's size.

**Accounting and caps by cgroup** (`Worker.accounting == "cgroup"`). Where the grader may write
the cgroup v1 controllers (root on this project's machines and CI), every worker gets its own
group `jaxlings/<grader pid>-<grader start time>-<random>` in the hierarchies cpuacct, memory,
pids and freezer (and in the v2 hierarchy when one is mounted at `unified/`, for `cgroup.kill`),
below the grader's own group in each, and the worker enters it before it runs anything. Then:

- `cpu_seconds()` is the group's `cpuacct.usage`: every thread and process that ever ran in
  it, including those that ended before the call returned;
- the memory watchdog reads the group's resident anonymous memory plus shmem/tmpfs (plus
  swap): what the worker holds, its private /tmp included, not the page cache of the
  libraries it maps; `memory.limit_in_bytes` is a hard backstop a little above the cap;
- `pids.max` caps tasks (processes *and* threads; `Limits.max_processes`);
- killing the worker kills every task of the group (`cgroup.kill`, or freeze + SIGKILL), a
  double-forked daemon in its own session included.

The groups are removed at `close()`; groups left by graders that died (by pid and start time)
are cleaned up when the next grader starts its first worker. `JAXLINGS_CGROUP_ROOT` names the
directory where the cgroup hierarchies are mounted (default `/sys/fs/cgroup`); set it to `off`
to do without. Where cgroups are not writable (not root, or a pure cgroup v2 host), the worker
falls back to per-process accounting (`accounting == "process"`): resident memory of the live
process tree, kills by process tree and group, no process cap, and `cpu_seconds()` returns
None, since live threads' counters cannot see work done by threads or children that ended;
callers then time by the wall clock.

**Sandbox** (`isolate=True`): bubblewrap, with no network and its own IPC, PID, UTS and cgroup
namespaces; a read-only view of the system, the Python installation and the worker subpackage
`autograder/worker/` alone (the only grader code that runs in the student's process: the
grading core and the topics with their hidden cases are not in the sandbox's file system); a
copy of the submission's module alone in `/submission`; a private, size-capped `/tmp` and
`/dev/shm` (`Limits.tmp_bytes`; their pages also count as the worker's memory). Code inside
runs as uid/gid 65534 with no capabilities (bounding set empty) and `no_new_privs`.

When the grader is root, that is the host's own uid 65534: as root, bubblewrap's
`--unshare-user --uid 65534` maps the sandbox's uid to the host's uid 0, which, capabilities
dropped or not, owns root's files and may write `/proc/sys` (e.g. `kernel.core_pattern`, a way
out of any sandbox). So a root grader's bubblewrap makes no user namespace, keeps only the
setuid/setgid/setpcap capabilities, and a small launcher (`_DROP_PRIVILEGES`) drops to 65534
for good before the worker starts. (Code inside may then still create unprivileged user
namespaces where the host allows them; a grading server that only grades as root can set
`user.max_user_namespaces = 0`.) When the grader is not root, bubblewrap maps 65534 to the
grader's own uid in a user namespace that may not create further ones.

NVIDIA device nodes (`/dev/nvidia*`), when present, are bound into the sandbox, with `/sys`
read-only; untested here (no GPU machine), and the nodes must be usable by uid 65534 (the
driver's default mode is 0666).
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import os
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
import uuid
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterator

from autograder import compile_cache, replies
from autograder.worker import shm, wire

PACKAGE_DIR = Path(__file__).resolve().parent
WORKER_DIR = PACKAGE_DIR / "worker"
SANDBOX_GRADER_ROOT = "/opt/jaxlings-grader"
SANDBOX_SUBMISSION = "/submission"
SANDBOX_UID = SANDBOX_GID = 65534
# Asks XLA for one CPU thread per worker. jaxlib 0.10's CPU runtime no longer heeds it: a worker
# runs big programs on a pool of one thread per core it may use. Pinning each topic's workers to
# one core was measured instead and dropped (docs/performance.md, "Tried and dropped").
CPU_TIMING_FLAGS = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"

CGROUP_ROOT_ENV = "JAXLINGS_CGROUP_ROOT"
DEFAULT_CGROUP_ROOT = "/sys/fs/cgroup"
CGROUP_PARENT = "jaxlings"
STDOUT_CAPTURE_LIMIT = 256 << 10  # bytes of stdout kept while a check captures it


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


class WorkerDied(Exception):
    """The worker is gone or had to be killed; the message says why, in the student's terms."""


REPLY_SLACK = 1 << 20  # bytes a student's reply may exceed twice the reference's by
HEADER_SLACK = 256 << 10


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
    def cap(cls, limits: Limits) -> "ReplyBound":
        """The absolute bound, where no reference reply says better."""
        return cls(limits.reply_bytes, limits.header_bytes, ": the grader's cap on any reply")

    @classmethod
    def after(cls, frame: int, header: int, limits: Limits) -> "ReplyBound":
        """Twice the reference's reply to the same request plus 1 MiB (its header: twice plus
        256 KiB), never past the absolute cap."""
        return cls(min(limits.reply_bytes, 2 * frame + REPLY_SLACK), min(limits.header_bytes, 2 * header + HEADER_SLACK),
                   ": twice the reference's reply to the same request, plus 1 MiB")


# -- sandbox ----------------------------------------------------------------------------------

@lru_cache(maxsize=1)
def bwrap_available() -> bool:
    """Whether bubblewrap exists and can build a sandbox here, with the options `Worker` uses."""
    exe = shutil.which("bwrap")
    if not exe:
        return False
    probe = subprocess.run([exe, "--ro-bind", "/", "/", *_bwrap_namespaces(), "--dev", "/dev",
                            "--perms", "1777", "--size", str(1 << 20), "--tmpfs", "/tmp", "true"],
                           capture_output=True)
    return probe.returncode == 0


def _bwrap_namespaces() -> list[str]:
    """Every namespace but, for a root grader, the user one (see the module's docstring)."""
    argv = ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
            "--die-with-parent", "--new-session"]
    if os.geteuid() == 0:
        return argv + ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID",
                       "--cap-add", "CAP_SETPCAP"]
    return argv + ["--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_GID), "--disable-userns",
                   "--cap-drop", "ALL"]


# Run by the sandbox's Python before the worker (as root only): drop to SANDBOX_UID for good.
_DROP_PRIVILEGES = """\
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
for cap in range(64):
    libc.prctl(24, cap, 0, 0, 0)  # PR_CAPBSET_DROP (EINVAL past the last capability)
uid, gid = int(sys.argv[1]), int(sys.argv[2])
os.setgroups([])
os.setresgid(gid, gid, gid)
os.setresuid(uid, uid, uid)
libc.capset((ctypes.c_uint32 * 2)(0x20080522, 0), (ctypes.c_uint32 * 6)())  # inheritable ones too
if libc.prctl(38, 1, 0, 0, 0) != 0 or os.getresuid() != (uid,) * 3:  # PR_SET_NO_NEW_PRIVS
    sys.exit("could not drop privileges")
os.execv(sys.argv[3], sys.argv[3:])
"""


def _bwrap_argv(submission_dir: Path, limits: Limits = Limits(), cache_view: Path | None = None) -> list[str]:
    """bubblewrap arguments, up to the command: system and Python read-only, the worker
    subpackage alone, the submission's copy alone, a view of the reference's compilation cache
    where given, bounded private /tmp, nobody's uid."""
    argv = ["bwrap", *_bwrap_namespaces(), "--dev", "/dev", "--proc", "/proc"]
    for path in ("/tmp", "/dev/shm"):
        argv += ["--perms", "1777", "--size", str(limits.tmp_bytes), "--tmpfs", path]
    system = [p for p in ("/usr", "/lib", "/lib64", "/bin", "/sbin", "/etc") if os.path.exists(p)]
    python = {sys.base_prefix, sys.prefix, os.path.dirname(os.path.realpath(sys.executable))}
    trees = [p for p in system + sorted(python)  # a tree inside another bound one is there already
             if not any(other != p and Path(p).is_relative_to(other) for other in system + sorted(python))]
    binds = [(p, p) for p in trees]
    binds += [(str(WORKER_DIR), f"{SANDBOX_GRADER_ROOT}/autograder/worker"), (str(submission_dir), SANDBOX_SUBMISSION)]
    if cache_view is not None:
        binds.append((str(cache_view), compile_cache.SANDBOX_PATH))
    # Directories on the way to each mount point, readable by the sandbox's uid (bwrap's own
    # are root's, mode 0700).
    dirs = sorted({str(a) for _, dest in binds for a in Path(dest).parents
                   if str(a) != "/" and not any(a.is_relative_to(d) for _, d in binds)})
    for path in dirs:
        argv += ["--perms", "0755", "--dir", path]
    for src, dest in binds:
        argv += ["--ro-bind", src, dest]
    # A non-editable install puts the whole package (topics included) under a bound prefix:
    # hide it there; only its worker subpackage is bound.
    if any(PACKAGE_DIR.is_relative_to(tree) for tree in trees):
        argv += ["--tmpfs", str(PACKAGE_DIR), "--remount-ro", str(PACKAGE_DIR)]
    for cache in compile_cache.hidden_paths():  # the grader's compiled executables, where a bound tree holds them
        if any(cache.resolve().is_relative_to(tree) for tree in trees) and cache.is_dir():
            argv += ["--tmpfs", str(cache.resolve()), "--remount-ro", str(cache.resolve())]
    gpu = sorted(glob.glob("/dev/nvidia*"))
    for dev in gpu:
        argv += ["--dev-bind", dev, dev]
    if gpu and os.path.isdir("/sys"):
        argv += ["--ro-bind", "/sys", "/sys"]
    argv += ["--chdir", SANDBOX_SUBMISSION, "--remount-ro", "/"]
    return argv + ["--setenv", "PYTHONPATH", SANDBOX_GRADER_ROOT, "--setenv", "HOME", "/tmp"]


def _sandboxed(argv: list[str], submission_dir: Path, limits: Limits, cache_view: Path | None = None) -> list[str]:
    """`argv` (a Python command) run in the sandbox, as SANDBOX_UID; `cache_view` (a
    `compile_cache.View`) read-only at `compile_cache.SANDBOX_PATH`."""
    prefix = _bwrap_argv(submission_dir, limits, cache_view)
    if os.geteuid() == 0:
        prefix += [sys.executable, "-I", "-S", "-c", _DROP_PRIVILEGES, str(SANDBOX_UID), str(SANDBOX_GID)]
    return prefix + argv


def _stage_submission(module_path: Path) -> Path:
    """A fresh directory, readable by the sandbox's uid, holding a copy of the module alone."""
    staging = Path(tempfile.mkdtemp(prefix="jaxlings-submission-"))
    staging.chmod(0o755)
    copy = staging / module_path.name
    shutil.copyfile(module_path, copy)
    copy.chmod(0o644)
    return staging


# -- process trees (the fallback without cgroups) ---------------------------------------------

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


def _start_time(pid: int) -> int | None:
    """The process's start time (clock ticks since boot): with the pid, it names one process."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def _pidfd(pid: int) -> int | None:
    """A descriptor that becomes readable when process `pid` exits (None if unsupported)."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


# -- cgroups ----------------------------------------------------------------------------------

# Enters the groups whose cgroup.procs files follow the count, then runs the command.
_ENTER_CGROUP = 'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; n=$((n - 1)); done; exec "$@"'
_V1_REQUIRED = ("cpuacct", "memory", "pids")
_GROUP_NAME = re.compile(r"(\d+)-(\d+)-[0-9a-f]+")
_stale_cleaned = threading.Lock(), []  # (lock, [True] once done)


def _read(path: Path) -> str:
    with open(path) as f:
        return f.read()


def _write(path: Path, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


class _Cgroup:
    """One worker's group in each hierarchy: `dirs` maps cpuacct, memory, pids, freezer (v1)
    and unified (v2, where mounted) to the group's directory."""

    def __init__(self, dirs: dict[str, Path]) -> None:
        self.dirs = dirs

    @staticmethod
    def parents() -> dict[str, Path]:
        """The `jaxlings` directory below the grader's own group, per hierarchy (OSError if
        cgroup accounting is not possible here)."""
        root = os.environ.get(CGROUP_ROOT_ENV) or DEFAULT_CGROUP_ROOT
        if root.lower() in ("off", "none", "0", "no"):
            raise OSError(f"cgroups turned off by {CGROUP_ROOT_ENV}={root}")
        own: dict[str, str] = {}
        for line in _read(Path("/proc/self/cgroup")).splitlines():
            hid, controllers, path = line.split(":", 2)
            if hid == "0" and not controllers:
                own["unified"] = path
            for name in filter(None, controllers.split(",")):
                own[name] = path
        parents = {}
        for name in (*_V1_REQUIRED, "freezer", "unified"):
            base = Path(root) / name / own.get(name, "/").lstrip("/")
            if name in own and (base / "cgroup.procs").exists():
                parents[name] = base / CGROUP_PARENT
        missing = [name for name in _V1_REQUIRED if name not in parents]
        if missing or not {"freezer", "unified"} & parents.keys():
            raise OSError(f"no cgroup v1 hierarchies {', '.join(missing) or 'freezer'} under {root}")
        if not os.access(parents["memory"].parent, os.W_OK):
            raise OSError(f"cannot create cgroups under {parents['memory'].parent}")
        return parents

    @classmethod
    def create(cls, limits: Limits) -> "_Cgroup":
        """A new, empty group with the limits set (OSError if cgroups cannot be used here)."""
        parents = cls.parents()
        _clean_stale(parents)
        name = f"{os.getpid()}-{_start_time(os.getpid())}-{uuid.uuid4().hex[:12]}"
        group = cls({})
        try:
            for hierarchy, parent in parents.items():
                for attempt in range(5):
                    parent.mkdir(exist_ok=True)
                    try:
                        (parent / name).mkdir()
                        break
                    except FileNotFoundError:  # another grader removed the empty parent meanwhile
                        if attempt == 4:
                            raise
                group.dirs[hierarchy] = parent / name
            if not (group.dirs.get("unified", Path("/nonexistent")) / "cgroup.kill").exists():
                group.dirs.pop("unified", None)  # a v2 hierarchy without cgroup.kill (Linux < 5.14)
                if "freezer" not in group.dirs:
                    raise OSError("neither cgroup.kill nor a freezer hierarchy to kill a group with")
            memory = group.dirs["memory"]
            _write(memory / "memory.limit_in_bytes", str(limits.memory_backstop()))
            try:  # with swap accounting, swap does not extend the limit
                _write(memory / "memory.memsw.limit_in_bytes", str(limits.memory_backstop()))
            except OSError:
                pass
            _write(group.dirs["pids"] / "pids.max", str(limits.tasks_cap()))
            return group
        except BaseException:
            group.remove()
            raise

    def enter_argv(self) -> list[str]:
        """A prefix that makes a command join this group before it runs."""
        files = [str(d / "cgroup.procs") for d in self.dirs.values()]
        return ["/bin/sh", "-c", _ENTER_CGROUP, "jaxlings-cgroup", str(len(files)), *files]

    def cpu_ns(self) -> int:
        return int(_read(self.dirs["cpuacct"] / "cpuacct.usage"))

    def memory_bytes(self) -> int:
        """Resident anonymous memory + shmem/tmpfs + swap of the group (no page cache)."""
        stat = dict(line.split() for line in _read(self.dirs["memory"] / "memory.stat").splitlines())
        return sum(int(stat.get(f"total_{k}", stat.get(k, 0))) for k in ("rss", "shmem", "swap"))

    def oom_kills(self) -> int:
        """How many tasks the kernel killed at the group's hard memory limit."""
        try:
            text = _read(self.dirs["memory"] / "memory.oom_control")
        except OSError:
            return 0
        return next((int(line.split()[1]) for line in text.splitlines() if line.startswith("oom_kill ")), 0)

    def pids(self) -> set[int]:
        found = set()
        for d in self.dirs.values():
            try:
                found.update(int(p) for p in _read(d / "cgroup.procs").split())
            except (OSError, ValueError):
                pass
        return found

    def kill(self) -> None:
        """SIGKILL every task of the group, those it forks meanwhile included."""
        if "unified" in self.dirs:
            try:
                _write(self.dirs["unified"] / "cgroup.kill", "1")
                return
            except OSError:
                pass
        if "freezer" not in self.dirs:
            for pid in self.pids():
                _sigkill(pid)
            return
        state = self.dirs["freezer"] / "freezer.state"
        for _ in range(100):
            if not self.pids():
                return
            try:  # frozen, nothing can fork between listing and killing
                _write(state, "FROZEN")
                deadline = time.monotonic() + 1.0
                while _read(state).strip() != "FROZEN" and time.monotonic() < deadline:
                    time.sleep(0.005)
                for pid in self.pids():
                    _sigkill(pid)
            except OSError:
                pass
            finally:
                try:
                    _write(state, "THAWED")
                except OSError:
                    pass
            time.sleep(0.01)

    def set_frozen(self, frozen: bool, timeout: float = 2.0) -> bool:
        """Freeze (or thaw) every task of the group; whether the freezer confirmed it."""
        if "freezer" not in self.dirs:
            return False
        state, want = self.dirs["freezer"] / "freezer.state", "FROZEN" if frozen else "THAWED"
        try:
            _write(state, want)
            deadline = time.monotonic() + timeout
            while _read(state).strip() != want:
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.001)
        except OSError:
            return False
        return True

    def await_empty(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while self.pids():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)
        return True

    def remove(self) -> None:
        """Remove the group's directories (after `kill`), and the parents left empty."""
        for d in self.dirs.values():
            for _ in range(100):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:  # EBUSY while the last tasks are being reaped
                    time.sleep(0.02)
            try:
                d.parent.rmdir()
            except OSError:
                pass


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
    """A new shared-memory region for a worker's timed workloads (`autograder.worker.shm`), or
    None where the system has no memfd (timed inputs then go through the pipe)."""
    try:
        return shm.Region.create()
    except (OSError, AttributeError):
        return None


def _sigkill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _clean_stale(parents: dict[str, Path]) -> None:
    """Kill and remove the groups of graders that died (once per grader process)."""
    lock, done = _stale_cleaned
    with lock:
        if done:
            return
        done.append(True)
        names: set[str] = set()
        for parent in parents.values():
            try:
                names.update(e.name for e in os.scandir(parent) if e.is_dir() and _GROUP_NAME.fullmatch(e.name))
            except OSError:
                pass
        for name in names:
            pid, start = (int(x) for x in _GROUP_NAME.fullmatch(name).groups())
            if pid == os.getpid() or _start_time(pid) == start:
                continue  # ours, or its grader is alive
            stale = _Cgroup({h: p / name for h, p in parents.items() if (p / name).is_dir()})
            stale.kill()
            stale.await_empty(2.0)
            stale.remove()


# -- the worker -------------------------------------------------------------------------------

class Worker:
    """One worker process on one module file; `request()` sends a message and awaits the reply.

    `accounting` is "cgroup" (own cgroup: CPU time of everything it ran, memory with tmpfs,
    task cap, kill of every task) or "process" (the fallback; `cpu_seconds()` is then None).
    A spare (`autograder.spares`) imports the libraries in `preload`, then, with
    `load_on_request`, imports its module only when `load()` asks; `owned_dir` is removed
    with the worker.
    """

    def __init__(self, module_path: Path, module_name: str, *, env: dict[str, str] | None = None,
                 isolate: bool = False, limits: Limits = Limits(), start_timeout: float = 120.0,
                 cache: compile_cache.Policy = compile_cache.NONE, preload: tuple[str, ...] = (),
                 load_on_request: bool = False, owned_dir: Path | None = None) -> None:
        self.module_path, self.module_name = Path(module_path).resolve(), module_name
        self.limits, self.isolate, self.cache = limits, isolate, cache
        self.killed_for: str | None = None
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
        self._cgroup: _Cgroup | None = None
        self._cpu_final: float | None = None
        self._staging: Path | None = None
        self._owned_dir = owned_dir  # removed when the worker is (a spare's module folder)
        self._view: compile_cache.View | None = None
        self._pidfd: int | None = None
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
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("JAXLINGS_") and k not in compile_cache.JAX_VARIABLES}
        env.update({"PYTHONUNBUFFERED": "1", "XLA_PYTHON_CLIENT_PREALLOCATE": "false"})
        env.update(extra_env)
        env.update(self._cache_env())
        env["XLA_FLAGS"] = " ".join(filter(None, [env.get("XLA_FLAGS", ""), CPU_TIMING_FLAGS]))
        try:
            self._cgroup = _Cgroup.create(self.limits)
            self.accounting = "cgroup"
        except OSError as exc:
            self.cgroup_error = str(exc)
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        for fd in (req_w, rep_w):
            _widen_pipe(fd)
        env["JAXLINGS_WORKER_FDS"] = f"{req_r},{rep_w}"
        self.region = _shared_region()
        shared_fds = () if self.region is None else (self.region.fd,)
        env.update({} if self.region is None else self.region.env())
        try:
            if self.isolate:
                self._staging = _stage_submission(self.module_path)
                module_arg = f"{SANDBOX_SUBMISSION}/{self.module_path.name}"
                view = self._view.path if self._view is not None else None
                argv = _sandboxed([sys.executable, "-m", "autograder.worker", module_arg, self.module_name],
                                  self._staging, self.limits, view)
                cwd = None
            else:
                argv = [sys.executable, "-m", "autograder.worker", str(self.module_path), self.module_name]
                path = [str(PACKAGE_DIR.parent), env.get("PYTHONPATH", "")]
                env["PYTHONPATH"] = os.pathsep.join(path).rstrip(os.pathsep)
                cwd = str(self.module_path.parent)
            if self._cgroup is not None:
                argv = self._cgroup.enter_argv() + argv
            self.proc = subprocess.Popen(
                argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                pass_fds=(req_r, rep_w, *shared_fds), start_new_session=True,
            )
        except BaseException:
            for fd in (req_r, req_w, rep_r, rep_w):
                os.close(fd)
            self._release()
            raise
        self._pidfd = _pidfd(self.proc.pid)
        os.close(req_r)
        os.close(rep_w)
        self._req, self._rep = req_w, rep_r
        self._closed = threading.Event()
        for stream in (self.proc.stdout, self.proc.stderr):
            threading.Thread(target=self._drain_output, args=(stream,), daemon=True).start()
        threading.Thread(target=self._watch_memory, daemon=True).start()

    def _cache_env(self) -> dict[str, str]:
        """JAX's cache variables for the worker: its policy's, or for a read-only policy those
        of a fresh `compile_cache.View` (bound into the sandbox), or none where none was made."""
        if not self.cache.read_only:
            return self.cache.env()
        self._view = compile_cache.View(self.cache)
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
        if load:
            self._await_load(timeout)
        return hello["platform"]

    def load(self, timeout: float = 120.0) -> dict[str, Any]:
        """Import the module now, in a worker started with `load_on_request` (a spare, started
        before the module's file was in place: `autograder.spares`); the import's reply."""
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
        if getattr(self, "region", None) is not None:
            self.region.close()
            self.region = None

    def kill(self, reason: str | None = None) -> None:
        """SIGKILL everything the worker started: every task of its cgroup, and its process tree
        (by parent links and by process group)."""
        if reason and not self.killed_for:
            self.killed_for = reason
        if self._cgroup is not None:
            self._cgroup.kill()
        for pid in reversed(_descendants(self.proc.pid)):
            _sigkill(pid)
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
            _await_group_exit(self.proc.pid)

    def __enter__(self) -> "Worker":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def paused(self) -> Iterator[bool]:
        """Freeze the worker's whole cgroup for the duration (yields whether it is frozen):
        while the grader times the reference, nothing of the student's process can run and
        compete with it for cores, caches or memory bandwidth. A no-op without a freezer."""
        frozen = self._cgroup is not None and self.alive and self._cgroup.set_frozen(True)
        try:
            yield frozen
        finally:
            if frozen:
                self._cgroup.set_frozen(False)

    def cpu_seconds(self) -> float | None:
        """CPU time used so far by everything the worker ran, or None where that is not
        measurable (the "process" fallback: callers then use the wall clock).

        The kernel's count for the worker's cgroup (`cpuacct.usage`, nanoseconds), read by the
        grader: every thread and process of the worker, those that already ended included; the
        student's process cannot fake it. After `close()`, the last reading.
        """
        if self._cgroup is None:
            return None
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
        return f"used more than {self.limits.memory_bytes >> 20} MiB of memory"

    def _watch_memory(self) -> None:
        """Poll the worker's memory (its cgroup's, or its live process tree's resident set);
        past the cap, kill the worker."""
        while not self._closed.wait(0.1):
            if self.proc.poll() is not None:
                return
            if self._cgroup is not None:
                try:
                    used = self._cgroup.memory_bytes()
                except (OSError, ValueError):
                    return
            else:
                used = _rss_bytes(_descendants(self.proc.pid))
            if used > self.limits.memory_bytes:
                self.kill(self._memory_message())
                return

    # -- requests --------------------------------------------------------------------------

    def request(self, op: str, timeout: float, *, max_reply: ReplyBound | None = None, **fields: Any) -> dict[str, Any]:
        """Send one request and return the reply; WorkerDied if the worker is or goes away.

        The reply is bounded by `max_reply`, else by `bound_for(op, fn)`, else by the absolute
        cap (`ReplyBound`); past it, the worker is stopped and WorkerDied says how large it was.
        """
        if not self.alive:
            raise WorkerDied(self.death_reason("before the request"))
        bound = max_reply or (self.bound_for and self.bound_for(op, fields.get("fn"))) or ReplyBound.cap(self.limits)
        try:
            wire.write_frame(self._req, {"op": op, **fields})
        except OSError:
            raise WorkerDied(self.death_reason(f"while receiving a {op} request")) from None
        sizes: list[tuple[int, int]] = []
        reply = self._receive(time.monotonic() + timeout, f"during `{op}`", bound, sizes)
        key = (op, fields.get("fn"))
        self.reply_sizes[key] = max(self.reply_sizes.get(key, (0, 0)), sizes[0])
        return reply

    def _receive(self, deadline: float, what: str, bound: ReplyBound | None = None,
                 sizes: list | None = None) -> dict[str, Any]:
        bound = bound or ReplyBound.cap(self.limits)
        try:
            return wire.read_frame(self._rep, deadline, bound.frame, watch_fd=self._pidfd, max_header=bound.header,
                                   why=bound.why, sizes=sizes)
        except wire.Timeout:
            self.kill(f"did not finish in time ({what})")
        except wire.Closed:
            pass
        except wire.TooLarge as exc:
            self.kill(f"sent a reply too large to read {what} ({exc})")
        except wire.WireError as exc:
            self.kill(f"sent an unreadable reply ({exc})")
        raise WorkerDied(self.death_reason(what))

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
        else:
            how = f"exited with status {code}"
        tail = self.output_tail()
        return f"the process {how} {what}" + (f"; its last output: {tail}" if tail else "")

    def output_tail(self, n: int = 300) -> str:
        text = self.output.decode(errors="replace").strip()
        return text[-n:]

"""Accounting and caps by cgroup (`WorkerProcess.accounting == "cgroup"`).

Where the grader may write the cgroup v1 controllers (root on this project's machines and CI),
every worker gets its own group `jaxlings/<grader pid>-<grader start time>-<random>` in the
hierarchies cpuacct, memory, pids and freezer (and in the v2 hierarchy when one is mounted at
`unified/`, for `cgroup.kill`), below the grader's own group in each, and the worker enters it
before it runs anything. Then:

- `cpu_seconds()` is the group's `cpuacct.usage`: every thread and process that ever ran in
  it, including those that ended before the call returned;
- the memory watchdog reads the group's resident anonymous memory plus shmem/tmpfs (plus
  swap): what the worker holds, its private /tmp included, not the page cache of the
  libraries it maps; `memory.limit_in_bytes` is a hard backstop a little above the cap;
- `pids.max` caps tasks (processes *and* threads; `Limits.max_processes`);
- killing the worker kills every task of the group (`cgroup.kill`, or freeze + SIGKILL), a
  double-forked daemon in its own session included;
- freezing the group (`WorkerProcess.paused`) stops every task of it while the grader times
  the reference.

The groups are removed at `close()`; groups left by graders that died (by pid and start time)
are cleaned up when the next grader starts its first worker. `JAXLINGS_CGROUP_ROOT` names the
directory where the cgroup hierarchies are mounted (default `/sys/fs/cgroup`); set it to `off`
to do without. Where cgroups are not writable (not root, or a pure cgroup v2 host), the worker
falls back to per-process accounting (`accounting == "process"`, `procfs`): resident memory of
the live process tree, kills by process tree and group, no process cap, and `cpu_seconds()`
returns None, since live threads' counters cannot see work done by threads or children that
ended; callers then time by the wall clock.
"""

from __future__ import annotations

import os
import re
import threading
import time
import uuid
from pathlib import Path

from jaxlings.isolation import procfs
from jaxlings.isolation.limits import Limits

CGROUP_ROOT_ENV = "JAXLINGS_CGROUP_ROOT"
DEFAULT_CGROUP_ROOT = "/sys/fs/cgroup"
CGROUP_PARENT = "jaxlings"

# Enters the groups whose cgroup.procs files follow the count, then runs the command.
_ENTER_CGROUP = 'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; n=$((n - 1)); done; exec "$@"'
_V1_REQUIRED = ("cpuacct", "memory", "pids")
_GROUP_NAME = re.compile(r"(\d+)-(\d+)-[0-9a-f]+")
_stale_cleaned: tuple[threading.Lock, list[bool]] = threading.Lock(), []  # (lock, [True] once done)


def _read(path: Path) -> str:
    with open(path) as f:
        return f.read()


def _write(path: Path, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


class Cgroup:
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
    def create(cls, limits: Limits, memory_limit: int | None) -> Cgroup:
        """A new, empty group with the limits set: the task cap, and the hard memory limit
        `memory_limit` (None: none yet, `set_memory_limit`). OSError if cgroups cannot be used here."""
        parents = cls.parents()
        _clean_stale(parents)
        name = f"{os.getpid()}-{procfs.start_time(os.getpid())}-{uuid.uuid4().hex[:12]}"
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
            group._keep_a_way_to_kill()
            group._set_limits(limits, memory_limit)
            return group
        except BaseException:
            group.remove()
            raise

    def _keep_a_way_to_kill(self) -> None:
        """Drop a v2 hierarchy without cgroup.kill (Linux < 5.14); OSError if neither it nor a
        freezer is left to kill the group with."""
        if not (self.dirs.get("unified", Path("/nonexistent")) / "cgroup.kill").exists():
            self.dirs.pop("unified", None)
            if "freezer" not in self.dirs:
                raise OSError("neither cgroup.kill nor a freezer hierarchy to kill a group with")

    def _set_limits(self, limits: Limits, memory_limit: int | None) -> None:
        """The hard memory limit, where one is given, and the task cap."""
        if memory_limit is not None:
            self.set_memory_limit(memory_limit)
        _write(self.dirs["pids"] / "pids.max", str(limits.tasks_cap()))

    def set_memory_limit(self, limit: int) -> None:
        """The group's hard memory limit, swap included where it is accounted (raised in the
        order the kernel requires: memory+swap is never below memory)."""
        memory = self.dirs["memory"]
        targets = ["memory.limit_in_bytes", "memory.memsw.limit_in_bytes"]
        current = int(_read(memory / "memory.limit_in_bytes").strip() or 0)
        for name in targets if limit <= current else reversed(targets):
            try:
                _write(memory / name, str(limit))
            except OSError:
                if name == targets[0]:
                    raise  # with swap accounting absent, the memsw file is missing: no matter

    def enter_argv(self) -> list[str]:
        """A prefix that makes a command join this group before it runs."""
        files = [str(d / "cgroup.procs") for d in self.dirs.values()]
        return ["/bin/sh", "-c", _ENTER_CGROUP, "jaxlings-cgroup", str(len(files)), *files]

    # -- accounting ------------------------------------------------------------------------

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
        found: set[int] = set()
        for d in self.dirs.values():
            try:
                found.update(int(p) for p in _read(d / "cgroup.procs").split())
            except (OSError, ValueError):
                pass
        return found

    # -- kill, freeze, remove --------------------------------------------------------------

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
                procfs.sigkill(pid)
            return
        self._kill_frozen()

    def _kill_frozen(self) -> None:
        """Freeze the group, SIGKILL its tasks and thaw it, until none is left (100 rounds at
        most): frozen, nothing can fork between listing and killing."""
        state = self.dirs["freezer"] / "freezer.state"
        for _ in range(100):
            if not self.pids():
                return
            try:
                _write(state, "FROZEN")
                deadline = time.monotonic() + 1.0
                while _read(state).strip() != "FROZEN" and time.monotonic() < deadline:
                    time.sleep(0.005)
                for pid in self.pids():
                    procfs.sigkill(pid)
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


def _clean_stale(parents: dict[str, Path]) -> None:
    """Kill and remove the groups of graders that died (once per grader process)."""
    lock, done = _stale_cleaned
    with lock:
        if done:
            return
        done.append(True)
        groups: dict[str, re.Match[str]] = {}
        for parent in parents.values():
            try:
                groups.update(
                    (e.name, m) for e in os.scandir(parent) if e.is_dir() and (m := _GROUP_NAME.fullmatch(e.name))
                )
            except OSError:
                pass
        for name, match in groups.items():
            pid, start = (int(x) for x in match.groups())
            if pid == os.getpid() or procfs.start_time(pid) == start:
                continue  # ours, or its grader is alive
            stale = Cgroup({h: p / name for h, p in parents.items() if (p / name).is_dir()})
            stale.kill()
            stale.await_empty(2.0)
            stale.remove()

"""The sandbox (`WorkerProcess(isolate=True)`): bubblewrap command lines, and the submission's
staged copy they bind.

bubblewrap runs the worker with no network and its own IPC, PID, UTS and cgroup namespaces; a
read-only view of the system, the Python installation and the worker subpackage
`jaxlings/worker/` alone (the only grader code that runs in the student's process: the
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

import glob
import os
import shutil
import subprocess
import sys
import tempfile
from functools import lru_cache
from pathlib import Path

from jaxlings.grading import compile_cache
from jaxlings.isolation.limits import Limits

PACKAGE_DIR = Path(__file__).resolve().parent.parent
"""The `jaxlings` package: hidden in the sandbox, but for its worker subpackage."""
WORKER_DIR = PACKAGE_DIR / "worker"
SANDBOX_GRADER_ROOT = "/opt/jaxlings-grader"
SANDBOX_SUBMISSION = "/submission"
SANDBOX_UID = SANDBOX_GID = 65534


def bwrap_available() -> bool:
    """Whether bubblewrap exists and can build a sandbox here, with the options `WorkerProcess` uses."""
    return bwrap_problem() is None


@lru_cache(maxsize=1)
def bwrap_problem() -> str | None:
    """Why the sandbox cannot run here (in words for the operator), or None where it can.

    Installed is not enough: under gVisor, or without root where unprivileged user namespaces
    are off (the TPU grading machine: "No permissions to create new namespace"), bubblewrap
    exists and cannot build a sandbox; it is probed with the options `WorkerProcess` uses."""
    exe = shutil.which("bwrap")
    if not exe:
        return "the sandbox needs bubblewrap (`apt-get install bubblewrap`)"
    probe = subprocess.run(
        [
            exe,
            "--ro-bind",
            "/",
            "/",
            *_namespaces(),
            "--dev",
            "/dev",
            "--perms",
            "1777",
            "--size",
            str(1 << 20),
            "--tmpfs",
            "/tmp",
            "true",
        ],
        capture_output=True,
        check=False,
    )
    if probe.returncode == 0:
        return None
    why = probe.stderr.decode(errors="replace").strip().splitlines()
    who = "as root" if os.geteuid() == 0 else "without root"
    return (
        f"the sandbox cannot run on this machine: bubblewrap is installed but cannot build one {who} "
        f"({why[-1][:200] if why else f'exit status {probe.returncode}'}; a kernel without user namespaces for "
        "unprivileged users, or a gVisor container, allows none)"
    )


def _namespaces() -> list[str]:
    """Every namespace but, for a root grader, the user one (see the module's docstring)."""
    argv = [
        "--unshare-ipc",
        "--unshare-pid",
        "--unshare-net",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
    ]
    if os.geteuid() == 0:
        return argv + [
            "--cap-drop",
            "ALL",
            "--cap-add",
            "CAP_SETUID",
            "--cap-add",
            "CAP_SETGID",
            "--cap-add",
            "CAP_SETPCAP",
        ]
    return argv + [
        "--unshare-user",
        "--uid",
        str(SANDBOX_UID),
        "--gid",
        str(SANDBOX_GID),
        "--disable-userns",
        "--cap-drop",
        "ALL",
    ]


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


def _bound_trees() -> list[str]:
    """The system's and Python's trees, bound read-only; a tree inside another bound one is
    there already."""
    system = [p for p in ("/usr", "/lib", "/lib64", "/bin", "/sbin", "/etc") if os.path.exists(p)]
    python = {sys.base_prefix, sys.prefix, os.path.dirname(os.path.realpath(sys.executable))}
    return [
        p
        for p in system + sorted(python)
        if not any(other != p and Path(p).is_relative_to(other) for other in system + sorted(python))
    ]


def _mount_point_dirs(binds: list[tuple[str, str]]) -> list[str]:
    """Directories on the way to each mount point, readable by the sandbox's uid (bwrap's own
    are root's, mode 0700)."""
    dirs = sorted(
        {
            str(a)
            for _, dest in binds
            for a in Path(dest).parents
            if str(a) != "/" and not any(a.is_relative_to(d) for _, d in binds)
        }
    )
    argv: list[str] = []
    for path in dirs:
        argv += ["--perms", "0755", "--dir", path]
    return argv


def _hide_grader_files(trees: list[str]) -> list[str]:
    """An empty read-only tmpfs over the grader's files where a bound tree holds them."""
    argv: list[str] = []
    # A non-editable install puts the whole package (topics included) under a bound prefix:
    # hide it there; only its worker subpackage is bound.
    if any(PACKAGE_DIR.is_relative_to(tree) for tree in trees):
        argv += ["--tmpfs", str(PACKAGE_DIR), "--remount-ro", str(PACKAGE_DIR)]
    for cache in compile_cache.hidden_paths():  # the grader's compiled executables, where a bound tree holds them
        if any(cache.resolve().is_relative_to(tree) for tree in trees) and cache.is_dir():
            argv += ["--tmpfs", str(cache.resolve()), "--remount-ro", str(cache.resolve())]
    return argv


def _gpu_devices() -> list[str]:
    """NVIDIA's device nodes, where present, and `/sys` read-only with them."""
    argv: list[str] = []
    gpu = sorted(glob.glob("/dev/nvidia*"))
    for dev in gpu:
        argv += ["--dev-bind", dev, dev]
    if gpu and os.path.isdir("/sys"):
        argv += ["--ro-bind", "/sys", "/sys"]
    return argv


def bwrap_argv(submission_dir: Path, limits: Limits = Limits(), cache_view: Path | None = None) -> list[str]:
    """bubblewrap arguments, up to the command: system and Python read-only, the worker
    subpackage alone, the submission's copy alone, a view of the reference's compilation cache
    where given, bounded private /tmp, nobody's uid."""
    argv = ["bwrap", *_namespaces(), "--dev", "/dev", "--proc", "/proc"]
    for path in ("/tmp", "/dev/shm"):
        argv += ["--perms", "1777", "--size", str(limits.tmp_bytes), "--tmpfs", path]
    trees = _bound_trees()
    binds = [(p, p) for p in trees]
    binds += [(str(WORKER_DIR), f"{SANDBOX_GRADER_ROOT}/jaxlings/worker"), (str(submission_dir), SANDBOX_SUBMISSION)]
    if cache_view is not None:
        binds.append((str(cache_view), compile_cache.SANDBOX_PATH))
    argv += _mount_point_dirs(binds)
    for src, dest in binds:
        argv += ["--ro-bind", src, dest]
    argv += _hide_grader_files(trees)
    argv += _gpu_devices()
    argv += ["--chdir", SANDBOX_SUBMISSION, "--remount-ro", "/"]
    return argv + ["--setenv", "PYTHONPATH", SANDBOX_GRADER_ROOT, "--setenv", "HOME", "/tmp"]


def sandboxed(argv: list[str], submission_dir: Path, limits: Limits, cache_view: Path | None = None) -> list[str]:
    """`argv` (a Python command) run in the sandbox, as SANDBOX_UID; `cache_view` (a
    `compile_cache.View`) read-only at `compile_cache.SANDBOX_PATH`."""
    prefix = bwrap_argv(submission_dir, limits, cache_view)
    if os.geteuid() == 0:
        prefix += [sys.executable, "-I", "-S", "-c", _DROP_PRIVILEGES, str(SANDBOX_UID), str(SANDBOX_GID)]
    return prefix + argv


def stage_submission(module_path: Path, companions: tuple[Path, ...] = ()) -> Path:
    """A fresh directory, readable by the sandbox's uid, holding a copy of the module alone (and
    of its `companions`, the modules a worker on an accelerator imports after it)."""
    staging = Path(tempfile.mkdtemp(prefix="jaxlings-submission-"))
    staging.chmod(0o755)
    for module in (module_path, *companions):
        copy = staging / module.name
        shutil.copyfile(module, copy)
        copy.chmod(0o644)
    return staging

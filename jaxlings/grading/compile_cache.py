"""JAX's persistent compilation cache, for the workers that may use one, and for the ops that may.

Why. Most of a topic's grading time on a CPU is XLA compiling: the reference's calls on the
cases (its programs and shapes repeat from one submission to the next: shapes depend on sizes
only), and, in a student's `grade check`, the student's own calls on the same public cases
every time they save. JAX can keep compiled executables on disk and load them instead of
compiling again (measured here: five eager calls of `prng.dropout` 1.01 s -> 0.18 s, their
jitted calls 0.64 s -> 0.07 s).

What never uses it (`Policy.ops`):
- Every op whose cost the grader's clock measures (`timed`: speed rounds and VMC runs,
  `prepare`/`step`: the compilation streams, whose trusted count tells a compiling call by
  its time). Loading from the cache is not compiling, so those ops compile as they always did,
  on both sides; a test checks that a stream sees no cache hit.
- Writes from the student's worker in hidden grading. A cache is a directory of executables
  that the process using it writes; the student's process never writes one that a trusted
  process reads, and the sandbox does not show the grader's cache (`hidden_paths`).
  It reads one, though: `reference_view` (see "The student's view" below).
The grader's own programs do, whatever the op (`worker.harness.PersistentCache.for_grader`): a
device round's generator (`grading.workloads`) and the digest of its outputs (`worker.commit`).
They are the same programs in every run, built by the grader's code, and compiled in the round
that is never counted (the warm-up); on a TPU each took 2-5 s to compile, most of a speed check's
time there. A student's worker loads them only from what it may read (its `View`), as below.
The trusted side's analyses (`analyse`) do use it: the reference's own exported programs repeat
from one submission to the next. A student's program lands there too, but an entry is only ever
loaded for a program identical to the one it was compiled from (JAX keys it by the whole
program, the compile options and the versions), so it cannot change what another program
computes; entries past `MAX_BYTES` are evicted. The one timed fact of an analysis,
`compile_seconds`, can then be a load's (no requirement in the course uses it).
A student's own public checks (offline, on their machine) cache more (`PUBLIC_OPS`).

The student's view (hidden grading). A right submission compiles, on the cases, much of what
the reference compiled (the same jnp code is the same program; NetKet's kernels are NetKet's),
and compiling is most of a hidden grading's time on a CPU. So the student's sandboxed worker
gets a read-only snapshot of the reference's cache (`View`): a fresh directory of hard links to
the entries, mode 0111 (enter, never list), bound read-only into the sandbox at `SANDBOX_PATH`.
JAX finds an entry by its key, a hash of the whole program, its compile options and versions,
so the student's process can open an entry only for a program it has itself built (and would
compile into the same executable); it cannot list the directory, chmod it (read-only mount),
or write to it (and JAX is told never to: `read_only`). What it learns is whether a program it
built is there: the reference, or another submission whose program was analysed, built that
exact program (`docs/grading.md`, "What is trusted"). The same ops as the trusted side's
(`CACHED_OPS`): timed ops and streams still compile. (A module may switch the cache back on for
them in its own process; what it could load there it could already have from a cache of its
own in its private /tmp: a program it compiled once, loaded again. No timed op of the reference
writes an entry there, and the speed check's first, compiling round is never counted: the
reference's rounds on an accelerator are cached in a directory of their own, `reference_device`,
never viewed.)

Where: `JAXLINGS_COMPILE_CACHE` (a directory; `off` for none), by default
`$XDG_CACHE_HOME/jaxlings/xla` (`~/.cache/jaxlings/xla`), with one subdirectory per side
(`reference` for the grader's trusted workers, `reference-device` for its worker on an
accelerator, `student` for a student's own public checks)
and per JAX version. Entries are evicted, oldest first, past `MAX_BYTES` per directory.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
from dataclasses import dataclass, replace
from importlib import metadata
from pathlib import Path

MAX_BYTES = 1 << 30
"""Per cache directory (JAX evicts the least recently used entries past it)."""

CACHED_OPS = frozenset({"call", "trace", "analyse", "round"})
"""Worker ops whose compilations may be loaded from the cache: none of them is timed (`round`:
the reference's untimed round on the CPU that a device round is verified against)."""

PUBLIC_OPS = CACHED_OPS | {"timed"}
"""A student's own public checks may cache more: their times decide nothing (speed and the VMC's
time are judged on submission), and the analyses of their programs are theirs. The streams
(`prepare`/`step`) still compile, since the public `compiles` check reads compilations off
the clock too."""

OPS_ENV = "JAXLINGS_CACHED_OPS"
"""How a worker learns its policy's ops (the harness reads it at start)."""

# Environment variables through which JAX would pick a cache up; a worker gets only its policy's.
JAX_VARIABLES = (
    "JAX_COMPILATION_CACHE_DIR",
    "JAX_ENABLE_COMPILATION_CACHE",
    "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS",
    "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES",
    "JAX_COMPILATION_CACHE_MAX_SIZE",
    "JAX_PERSISTENT_CACHE_ENABLE_XLA_CACHES",
)


SANDBOX_PATH = "/jaxlings-xla"
"""Where a sandboxed worker finds its read-only view (`View`)."""

NEVER_WRITE_SECONDS = "1e9"
"""JAX writes an entry only for a compilation at least this long: never."""


GRADER_DIR_ENV = "JAXLINGS_GRADER_CACHE_DIR"
"""Where a worker's `harness.PersistentCache.for_grader` compiles the grader's own programs, when
not in its cache (`Policy.grader`)."""


@dataclass(frozen=True)
class Policy:
    """A worker's cache: where it lives (None: no cache), which ops may use it, and whether the
    worker only reads it (then `directory` is the cache a `View` is taken of, per worker).
    `grader`: a directory of its own for the grader's programs that the worker compiles (the
    reference's worker on a device writes them there, for the student's to read: `grader_device`)."""

    directory: Path | None = None
    ops: frozenset[str] = CACHED_OPS
    read_only: bool = False
    grader: Path | None = None

    def env(self, at: Path | str | None = None) -> dict[str, str]:
        """The worker's environment for this policy (JAX's own variables, and the ops); `at`:
        where the worker sees the directory, when not at `directory` (a view, a sandbox)."""
        if self.directory is None:
            return {"JAX_ENABLE_COMPILATION_CACHE": "false"}
        if not self.read_only:
            self.directory.mkdir(parents=True, exist_ok=True)
        return {
            "JAX_COMPILATION_CACHE_DIR": str(at or self.directory),
            # eager ops compile in milliseconds: keep them all (a reader keeps none)
            "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": NEVER_WRITE_SECONDS if self.read_only else "0",
            "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "-1",
            # a reader evicts nothing (eviction lists the directory and writes access times)
            "JAX_COMPILATION_CACHE_MAX_SIZE": "-1" if self.read_only else str(MAX_BYTES),
            # XLA's own caches (GPU autotuning) live under the cache's path, which then enters
            # every key's compile options: without them a key is the same wherever it is read
            "JAX_PERSISTENT_CACHE_ENABLE_XLA_CACHES": "none",
            OPS_ENV: ",".join(sorted(self.ops)),
            **self._grader_env(),
        }

    def _grader_env(self) -> dict[str, str]:
        if self.grader is None:
            return {}
        self.grader.mkdir(parents=True, exist_ok=True)
        return {GRADER_DIR_ENV: str(self.grader)}


ENTRY_SUFFIX = "-cache"
"""JAX's cache entries are files `<key>-cache` (beside `<key>-atime` and a lock file)."""


class View:
    """A snapshot of a read-only `Policy`'s cache for one worker: hard links to its entries in a
    fresh directory beside it (`<root>/views/<host>-<pid>-<random>`), mode 0111 once filled,
    so that a process that is not root can open an entry by name but not list them; with
    `copy`, copies (for a worker outside the sandbox, which would not see the view read-only:
    what it writes into a copy is its own). `path` is None where no view could be made (no
    entries, or another filesystem): the worker then gets no cache. `remove()` when the worker
    is gone; views left by a grader that died are removed by the next one."""

    def __init__(self, policy: Policy, copy: bool = False) -> None:
        self.path: Path | None = None
        source = policy.directory
        if source is None or not policy.read_only or not source.is_dir():
            return
        views = source.parent.parent / "views"
        views.mkdir(parents=True, exist_ok=True)
        _remove_stale(views)
        path = views / f"{_HOST}-{os.getpid()}-{secrets.token_hex(8)}"
        path.mkdir(mode=0o700)
        try:
            for entry in os.scandir(source):
                if entry.name.endswith(ENTRY_SUFFIX) and entry.is_file(follow_symlinks=False):
                    (shutil.copyfile if copy else os.link)(entry.path, path / entry.name)
        except OSError:
            _remove(path)
            return
        path.chmod(0o111)
        self.path = path

    def remove(self) -> None:
        """Delete the view (the entries stay in the cache it was taken of)."""
        if self.path is not None:
            _remove(self.path)
            self.path = None


def _remove(view: Path) -> None:
    try:
        view.chmod(0o700)
    except OSError:
        return
    shutil.rmtree(view, ignore_errors=True)


_HOST = socket.gethostname().replace("-", "_") or "host"


def _remove_stale(views: Path) -> None:
    """Views of this host whose grader process is gone (named `<host>-<pid>-...`; another
    host's, sharing the directory, are not this process's to judge)."""
    for view in views.iterdir():
        host, _, rest = view.name.partition("-")
        pid = rest.split("-", 1)[0]
        if host == _HOST and pid.isdigit() and int(pid) != os.getpid() and not Path(f"/proc/{pid}").exists():
            _remove(view)


NONE = Policy()


def root() -> Path | None:
    """The cache's root directory, or None where `JAXLINGS_COMPILE_CACHE=off`."""
    configured = os.environ.get("JAXLINGS_COMPILE_CACHE", "")
    if configured.lower() in ("off", "0", "none", "false"):
        return None
    if configured:
        return Path(configured).expanduser()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "jaxlings" / "xla"


def _side(name: str, ops: frozenset[str]) -> Policy:
    base = root()
    return NONE if base is None else Policy(base / name / f"jax-{metadata.version('jax')}", ops)


def reference() -> Policy:
    """The grader's trusted workers (the reference live): its calls and traces."""
    return _side("reference", CACHED_OPS)


def reference_device() -> Policy:
    """The reference's one trusted worker on an accelerator (`device_grading.reference_phase`):
    its timed rounds too, in a directory of its own that no student's `View` is ever taken of.
    Its timed ops are speed rounds only (no VMC there; streams are `prepare`/`step`, never
    cached), whose first round, the one that compiles, is never counted; on a TPU compiling a
    function for its speed workload took 5-40 s (benchmarks/results/2026-12-06-tpu-v5e-grading-4.md),
    the same every run. The grader's own programs it compiles go to `grader_device`'s directory,
    which the student's worker on the device reads."""
    policy = _side("reference-device", CACHED_OPS | {"timed"})
    grader = grader_device().directory
    return policy if policy.directory is None else replace(policy, grader=grader)


def grader_device() -> Policy:
    """The student's worker on a device, in hidden grading: reads a `View` of the grader's own
    programs there (a round's generator, the outputs' digest), which the reference's worker on
    the device compiled (`reference_device`'s `grader`), the same programs the student's rounds
    run; nothing else of its own is cached (its function compiles, as every timed op's does).
    On the TPU v5e each took 4-10 s to compile, in the student's first round of each speed check
    (benchmarks/results/2026-12-07-tpu-v5e-grading-6.md)."""
    base = root()
    if base is None:
        return NONE
    return Policy(base / "grader-device" / f"jax-{metadata.version('jax')}", frozenset(), read_only=True)


def reference_view() -> Policy:
    """The student's worker in hidden grading: reads a `View` of the reference's cache."""
    policy = reference()
    return policy if policy.directory is None else replace(policy, read_only=True)


def student_public() -> Policy:
    """A student's own workers in a public check (offline, their machine; the analysis worker too)."""
    return _side("student", PUBLIC_OPS)


def hidden_paths() -> list[Path]:
    """Cache directories a sandboxed worker must not see (the sandbox covers them)."""
    base = root()
    return [] if base is None else [base]

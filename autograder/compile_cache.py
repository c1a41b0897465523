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
- The student's worker in hidden grading: it gets no cache directory at all. A cache is a
  directory of executables that the process using it writes; the student's process never
  writes one that a trusted process reads, and the sandbox does not show the grader's cache
  (`hidden_paths`).
The trusted side's analyses (`analyse`) do use it: the reference's own exported programs repeat
from one submission to the next. A student's program lands there too, but an entry is only ever
loaded for a program identical to the one it was compiled from (JAX keys it by the whole
program, the compile options and the versions), so it cannot change what another program
computes; entries past `MAX_BYTES` are evicted. The one timed fact of an analysis,
`compile_seconds`, can then be a load's (no requirement in the course uses it).
A student's own public checks (offline, on their machine) cache more (`PUBLIC_OPS`).

Where: `JAXLINGS_COMPILE_CACHE` (a directory; `off` for none), by default
`$XDG_CACHE_HOME/jaxlings/xla` (`~/.cache/jaxlings/xla`), with one subdirectory per side
(`reference` for the grader's trusted workers, `student` for a student's own public checks)
and per JAX version. Entries are evicted, oldest first, past `MAX_BYTES` per directory.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

MAX_BYTES = 1 << 30
"""Per cache directory (JAX evicts the least recently used entries past it)."""

CACHED_OPS = frozenset({"call", "trace", "analyse"})
"""Worker ops whose compilations may be loaded from the cache: none of them is timed."""

PUBLIC_OPS = CACHED_OPS | {"timed"}
"""A student's own public checks may cache more: their times decide nothing (speed and the VMC's
time are judged on submission), and the analyses of their programs are theirs. The streams
(`prepare`/`step`) still compile, since the public `compiles` check reads compilations off
the clock too."""

OPS_ENV = "JAXLINGS_CACHED_OPS"
"""How a worker learns its policy's ops (the harness reads it at start)."""

# Environment variables through which JAX would pick a cache up; a worker gets only its policy's.
JAX_VARIABLES = ("JAX_COMPILATION_CACHE_DIR", "JAX_ENABLE_COMPILATION_CACHE", "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS",
                 "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "JAX_COMPILATION_CACHE_MAX_SIZE")


@dataclass(frozen=True)
class Policy:
    """A worker's cache: where it lives (None: no cache) and which ops may use it."""

    directory: Path | None = None
    ops: frozenset[str] = CACHED_OPS

    def env(self) -> dict[str, str]:
        """The worker's environment for this policy (JAX's own variables, and the ops)."""
        if self.directory is None:
            return {"JAX_ENABLE_COMPILATION_CACHE": "false"}
        self.directory.mkdir(parents=True, exist_ok=True)
        return {
            "JAX_COMPILATION_CACHE_DIR": str(self.directory),
            "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",  # eager ops compile in milliseconds: keep them all
            "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "-1",
            "JAX_COMPILATION_CACHE_MAX_SIZE": str(MAX_BYTES),
            OPS_ENV: ",".join(sorted(self.ops)),
        }


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


def student_public() -> Policy:
    """A student's own workers in a public check (offline, their machine; the analysis worker too)."""
    return _side("student", PUBLIC_OPS)


def hidden_paths() -> list[Path]:
    """Cache directories a sandboxed worker must not see (the sandbox covers them)."""
    base = root()
    return [] if base is None else [base]

"""JAX's persistent compilation cache (`jaxlings.grading.compile_cache`): the reference's calls load
what earlier gradings compiled, while everything the clock judges still compiles, and no
student process ever shares a cache with the grader. Counts, not times: JAX's own cache-hit
events, and the files in the cache."""

from __future__ import annotations

import sys
import textwrap
import uuid
from pathlib import Path

import numpy as np

from helpers.grading import needs_bwrap
from jaxlings.grading import compile_cache
from jaxlings.grading.compile_cache import Policy
from jaxlings.isolation import WorkerProcess

MODULE = """
import jax.numpy as jnp

def f(x):
    return jnp.tanh(x) * 2.0 + jnp.sum(x)
"""


def _worker(tmp_path: Path, cache: Policy, source: str = MODULE, **kwargs) -> WorkerProcess:
    module = tmp_path / "probe.py"
    module.write_text(textwrap.dedent(source))
    worker = WorkerProcess(module, "probe", cache=cache, **kwargs)
    assert worker.load_reply["ok"], worker.load_reply
    return worker


def _entries(directory: Path) -> list[Path]:
    return [p for p in directory.rglob("*") if p.is_file()] if directory.exists() else []


def test_calls_load_from_the_cache_but_a_stream_always_compiles(tmp_path):
    cache = Policy(tmp_path / "cache")
    shapes = [np.ones(n, np.float32) for n in (5, 6, 7)]
    with _worker(tmp_path, cache) as first:
        for x in shapes:
            assert first.request("call", 60, fn="f", args=(x,), jit=True)["ok"]
    assert _entries(cache.directory)
    with _worker(tmp_path, cache) as second:
        # the same calls in a new process: loaded, not compiled (JAX counts the hits)...
        assert second.request("prepare", 60, fn="f", jit=True)["ok"]
        steps = [second.request("step", 60, fn="f", args=(x,)) for x in shapes]
        # ...except in a stream, whose compilations the grader reads off its clock
        assert [s["cache_hits"] for s in steps] == [0, 0, 0]
        assert [s["counts"][0] for s in steps] == [1, 1, 1]


def test_the_cached_ops_do_hit(tmp_path):
    """The other half of the test above: without it, "no hit in a stream" would prove nothing."""
    cache = Policy(tmp_path / "cache", frozenset({"call", "trace", "prepare", "step"}))
    shapes = [np.ones(n, np.float32) for n in (5, 6)]
    for _ in range(2):
        with _worker(tmp_path, cache) as w:
            assert w.request("prepare", 60, fn="f", jit=True)["ok"]
            hits = [w.request("step", 60, fn="f", args=(x,))["cache_hits"] for x in shapes]
    assert hits == [1, 1]


def test_a_worker_without_a_policy_ignores_a_cache_in_the_graders_environment(tmp_path, monkeypatch):
    planted = tmp_path / "planted"
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", str(planted))
    monkeypatch.setenv("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
    with _worker(tmp_path, compile_cache.NONE) as w:
        assert w.request("call", 60, fn="f", args=(np.ones(9, np.float32),), jit=True)["ok"]
    assert not _entries(planted)


def test_policies_follow_the_configuration(tmp_path, monkeypatch):
    monkeypatch.setenv("JAXLINGS_COMPILE_CACHE", str(tmp_path))
    assert compile_cache.reference().directory.is_relative_to(tmp_path / "reference")
    assert compile_cache.student_public().directory.is_relative_to(tmp_path / "student")
    assert "timed" not in compile_cache.reference().ops and "timed" in compile_cache.student_public().ops
    assert not {"prepare", "step"} & (compile_cache.reference().ops | compile_cache.student_public().ops)
    monkeypatch.setenv("JAXLINGS_COMPILE_CACHE", "off")
    assert compile_cache.reference() == compile_cache.NONE and compile_cache.hidden_paths() == []


HOSTILE = """
import os

def look(path):
    found = os.path.exists(path) and any(os.scandir(path))
    try:
        with open(os.path.join(path, "planted-by-student"), "w") as fh:
            fh.write("x")
        wrote = True
    except OSError:
        wrote = False
    return found, wrote
"""


@needs_bwrap
def test_a_sandboxed_student_cannot_see_or_fill_the_graders_cache(tmp_path, monkeypatch):
    """Where the cache lies inside a tree the sandbox binds (here: the Python prefix), a
    read-only empty tmpfs covers it: the student finds nothing there and writes nothing."""
    root = Path(sys.prefix) / f"jaxlings-test-cache-{uuid.uuid4().hex[:8]}"
    try:
        root.mkdir()
        (root / "reference").mkdir()
        (root / "reference" / "entry").write_text("a compiled executable")
        monkeypatch.setenv("JAXLINGS_COMPILE_CACHE", str(root))
        with _worker(tmp_path, compile_cache.NONE, HOSTILE, isolate=True) as w:
            reply = w.request("call", 60, fn="look", args=(str(root / "reference"),))
        assert reply["ok"], reply
        found, wrote = (bool(leaf["data"]) for leaf in reply["out"]["leaves"])
        assert not found and not wrote
        assert sorted(p.name for p in (root / "reference").iterdir()) == ["entry"]
    finally:
        import shutil

        shutil.rmtree(root, ignore_errors=True)


VIEWER = """
import os

import jax
import jax.numpy as jnp
import numpy as np

HITS = []
jax.monitoring.register_event_listener(
    lambda event, **_: HITS.append(event) if event == "/jax/compilation_cache/cache_hits" else None)


def f(x):
    return jnp.tanh(x) * 2.0 + jnp.sum(x)


def hits():
    return np.int64(len(HITS))


def attempts(name):
    where = os.environ["JAX_COMPILATION_CACHE_DIR"]

    def works(attempt):
        try:
            attempt()
            return True
        except OSError:
            return False

    def read():
        with open(os.path.join(where, name), "rb") as fh:
            assert fh.read()

    def write():
        with open(os.path.join(where, "planted-by-student-cache"), "wb") as fh:
            fh.write(b"x")

    return (works(lambda: os.listdir(where)), works(lambda: os.chmod(where, 0o755)), works(write),
            works(lambda: os.unlink(os.path.join(where, name))), works(read))
"""


def _flags(reply: dict) -> list[bool]:
    assert reply["ok"], reply
    return [bool(leaf["data"]) for leaf in reply["out"]["leaves"]]


@needs_bwrap
def test_a_sandboxed_student_reads_the_reference_cache_by_name_only(tmp_path, monkeypatch):
    """Hidden grading: the student's worker loads what the reference compiled (JAX counts the
    hit), cannot list, chmod, write or delete in its view, and leaves the reference's cache as
    it was; the view is gone once the worker is."""
    monkeypatch.setenv("JAXLINGS_COMPILE_CACHE", str(tmp_path / "xla"))
    with _worker(tmp_path, compile_cache.reference()) as reference:
        assert reference.request("call", 60, fn="f", args=(np.ones(5, np.float32),), jit=True)["ok"]
    source = compile_cache.reference_view().directory
    entries = sorted(p.name for p in source.glob("*" + compile_cache.ENTRY_SUFFIX))
    assert entries
    (tmp_path / "student").mkdir()
    with _worker(tmp_path / "student", compile_cache.reference_view(), VIEWER, isolate=True) as student:
        assert student.request("call", 60, fn="f", args=(np.ones(5, np.float32),), jit=True)["ok"]
        assert _flags(student.request("call", 60, fn="hits", args=())) == [True]  # one hit
        assert student.request("call", 60, fn="f", args=(np.ones(11, np.float32),), jit=True)["ok"]
        listed, chmodded, wrote, deleted, read = _flags(student.request("call", 60, fn="attempts", args=(entries[0],)))
        assert (listed, chmodded, wrote, deleted) == (False, False, False, False)
        assert read  # by name: what JAX does
    # the new shape compiled in the student's worker was not written anywhere the grader reads
    assert sorted(p.name for p in source.glob("*" + compile_cache.ENTRY_SUFFIX)) == entries
    assert not any((tmp_path / "xla" / "views").iterdir())


def test_a_view_links_the_entries_into_a_directory_that_cannot_be_listed(tmp_path, monkeypatch):
    monkeypatch.setenv("JAXLINGS_COMPILE_CACHE", str(tmp_path))
    policy = compile_cache.reference_view()
    assert policy.read_only and policy.ops == compile_cache.reference().ops
    assert compile_cache.View(policy).path is None  # nothing compiled yet: no view, no cache
    policy.directory.mkdir(parents=True)
    for name in ("jit_f-abc-cache", "jit_f-abc-atime", ".lockfile"):
        (policy.directory / name).write_bytes(b"x")
    stale = tmp_path / "views" / f"{compile_cache._HOST}-999999999-0123"  # left by a grader that died
    stale.mkdir(parents=True, mode=0o111)
    elsewhere = tmp_path / "views" / "another_host-999999999-0123"  # another machine's: not ours to judge
    elsewhere.mkdir(mode=0o111)
    view = compile_cache.View(policy)
    assert not stale.exists() and elsewhere.exists()
    elsewhere.chmod(0o700)
    elsewhere.rmdir()
    assert view.path.stat().st_mode & 0o777 == 0o111
    view.path.chmod(0o700)
    assert sorted(p.name for p in view.path.iterdir()) == ["jit_f-abc-cache"]
    assert (view.path / "jit_f-abc-cache").stat().st_ino == (policy.directory / "jit_f-abc-cache").stat().st_ino
    env = policy.env(at=compile_cache.SANDBOX_PATH)
    assert env["JAX_COMPILATION_CACHE_DIR"] == compile_cache.SANDBOX_PATH
    assert env["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] == compile_cache.NEVER_WRITE_SECONDS
    assert env["JAX_COMPILATION_CACHE_MAX_SIZE"] == "-1"
    view.remove()
    assert not any((tmp_path / "views").iterdir())
    assert (policy.directory / "jit_f-abc-cache").exists()


def _round(worker: WorkerProcess, work, seed: int) -> dict:
    """One device-style round of `f` on a generated workload (`grading.workloads`), committed to."""
    key = np.array([seed, 7], np.uint32)
    return worker.request("timed", 60, fn="f", jit=True, static_argnums=(), commit=seed, generate=work.request(key))


def test_the_graders_own_programs_load_from_the_cache_in_a_timed_round(tmp_path):
    """A round's generator and its outputs' digest are the grader's programs, the same in every
    run: a second process loads them (TPU: 2-5 s of compiling each), while the function under
    test, in the same timed op, still compiles (no hit beyond the grader's two)."""
    from jaxlings.grading import workloads

    def generate(key, size):
        return (workloads.uniform(key, (size,), -1.0, 1.0),)

    work = workloads.export(generate, 64, ("cpu",))
    cache = Policy(tmp_path / "cache")
    with _worker(tmp_path, cache) as first:
        digest = _round(first, work, 1)["digest"]
        assert first.request("stats", 60)["cache_hits"] == 0
    with _worker(tmp_path, cache) as second:
        before = second.request("stats", 60)
        assert _round(second, work, 1)["digest"] == digest
        after = second.request("stats", 60)
        assert after["cache_hits"] - before["cache_hits"] == 2  # the generator and the digest
        assert after["compilations"] > before["compilations"]  # `f` itself: compiled, never loaded
    with _worker(tmp_path, compile_cache.NONE) as uncached:  # no policy, no cache: everything compiles
        assert _round(uncached, work, 1)["digest"] == digest
        assert uncached.request("stats", 60)["cache_hits"] == 0


def test_the_references_device_rounds_cache_apart_from_what_students_see(tmp_path, monkeypatch):
    """The reference's worker on an accelerator caches its timed rounds (their first round, the
    compiling one, is never counted) in a directory no student's view is taken of."""
    monkeypatch.setenv("JAXLINGS_COMPILE_CACHE", str(tmp_path / "xla"))
    device, viewed = compile_cache.reference_device(), compile_cache.reference_view()
    assert "timed" in device.ops and "timed" not in viewed.ops
    assert device.directory is not None and viewed.directory is not None
    assert device.directory.parent.name == "reference-device" and viewed.directory.parent.name == "reference"
    x = np.ones(11, np.float32)
    for _ in range(2):
        with _worker(tmp_path, device) as w:
            assert w.request("timed", 60, fn="f", jit=True, static_argnums=(), commit=3, cases=[(x,)])["ok"]
            hits = w.request("stats", 60)["cache_hits"]
    assert hits == 2  # the second process loaded `f` and the digest in its timed round
    assert not _entries(viewed.directory)


def test_the_students_device_worker_loads_the_graders_programs_the_reference_compiled(tmp_path, monkeypatch):
    """On a device the reference's worker compiles the grader's own programs (a round's generator,
    the outputs' digest) into a directory of their own (`compile_cache.grader_device`), apart
    from its rounds; the student's worker there, outside the sandbox, gets a copy of it and
    loads both, while its function still compiles. What it writes is its own copy's: the view
    holds copies, never links to the grader's files."""
    from jaxlings.grading import workloads

    monkeypatch.setenv("JAXLINGS_COMPILE_CACHE", str(tmp_path / "xla"))

    def generate(key, size):
        return (workloads.uniform(key, (size,), -1.0, 1.0),)

    work = workloads.export(generate, 96, ("cpu",))
    reference, student = compile_cache.reference_device(), compile_cache.grader_device()
    assert reference.directory is not None and student.directory is not None and student.read_only
    assert reference.grader == student.directory and not student.ops
    with _worker(tmp_path, reference) as w:
        digest = _round(w, work, 5)["digest"]
    programs = [e for e in _entries(student.directory) if e.name.endswith(compile_cache.ENTRY_SUFFIX)]
    assert len(programs) == 2  # the generator and the digest, nothing of `f`
    assert _entries(reference.directory)  # `f`'s round, apart
    with _worker(tmp_path, student) as w:
        before = w.request("stats", 60)
        assert _round(w, work, 5)["digest"] == digest
        after = w.request("stats", 60)
        view = w._view.path
        assert view is not None and not view.samefile(student.directory)
        assert all(p.stat().st_nlink == 1 for p in programs)  # copied into the view, not linked
    assert after["cache_hits"] - before["cache_hits"] == 2
    assert after["compilations"] > before["compilations"]  # `f` itself: compiled

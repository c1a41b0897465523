"""JAX's persistent compilation cache (`autograder.compile_cache`): the reference's calls load
what earlier gradings compiled, while everything the clock judges still compiles, and no
student process ever shares a cache with the grader. Counts, not times: JAX's own cache-hit
events, and the files in the cache."""

from __future__ import annotations

import sys
import textwrap
import uuid
from pathlib import Path

import numpy as np
import pytest

from autograder import compile_cache, sandbox
from autograder.compile_cache import Policy
from autograder.sandbox import Worker
from conftest import needs_bwrap

MODULE = """
import jax.numpy as jnp

def f(x):
    return jnp.tanh(x) * 2.0 + jnp.sum(x)
"""


def _worker(tmp_path: Path, cache: Policy, source: str = MODULE, **kwargs) -> Worker:
    module = tmp_path / "probe.py"
    module.write_text(textwrap.dedent(source))
    worker = Worker(module, "probe", cache=cache, **kwargs)
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
        assert second.request("prepare", 60, fn="f", cases=[(x,) for x in shapes], jit=True)["ok"]
        steps = [second.request("step", 60, fn="f", index=i) for i in range(len(shapes))]
        # ...except in a stream, whose compilations the grader reads off its clock
        assert [s["cache_hits"] for s in steps] == [0, 0, 0]
        assert [s["counts"][0] for s in steps] == [1, 1, 1]


def test_the_cached_ops_do_hit(tmp_path):
    """The other half of the test above: without it, "no hit in a stream" would prove nothing."""
    cache = Policy(tmp_path / "cache", frozenset({"call", "trace", "prepare", "step"}))
    shapes = [np.ones(n, np.float32) for n in (5, 6)]
    for _ in range(2):
        with _worker(tmp_path, cache) as w:
            assert w.request("prepare", 60, fn="f", cases=[(x,) for x in shapes], jit=True)["ok"]
            hits = [w.request("step", 60, fn="f", index=i)["cache_hits"] for i in range(len(shapes))]
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

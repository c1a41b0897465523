"""`grade watch`'s spare student workers (`jaxlings.grading.spares`): started ahead with the file's
libraries imported, used once by the next check, the same verdicts as a worker started then;
a spare that does not fit is not used, and none outlives `close`."""

from __future__ import annotations

from dataclasses import replace

import pytest

from helpers.grading import SOLUTIONS, TEST_LIMITS, write_submission
from jaxlings import public
from jaxlings.grading import compile_cache, engine, topics
from jaxlings.grading.spares import Spares, imported_libraries
from jaxlings.isolation import Limits


def test_the_libraries_preloaded_are_those_a_module_imports_before_its_own_code():
    source = '''"""A docstring."""
from __future__ import annotations
import os, jax.numpy as jnp
from netket.operator.spin import sigmax
from . import sibling
import numpy
def f():
    import optax  # inside a function: not at import time
import flax
'''
    assert imported_libraries(source) == ("jax", "netket", "numpy")
    assert imported_libraries("def broken(:\n") == ()
    # a library imported after the module's own code may depend on it: left to the module
    env_first = 'import os\nos.environ["JAX_NUM_CPU_DEVICES"] = "4"\nimport jax\nimport numpy\n'
    assert imported_libraries(env_first) == ()
    assert imported_libraries("import numpy\nX = 1\nimport jax\n") == ("numpy",)


def verdicts(result) -> list[tuple[str, float, str]]:
    """Each test's name, score and status (the messages hold this machine's times)."""
    return [(t.name, t.score, t.status) for t in result.tests]


def _check(folder, spares=None, limits=TEST_LIMITS):
    return engine.grade(
        folder,
        topics.resolve(["at_updates"], public=True),
        public=True,
        limits=limits,
        answers=public.replay,
        spares=spares,
    )


@pytest.mark.slow
def test_a_check_takes_the_spare_and_judges_as_a_fresh_worker_would(tmp_path, monkeypatch):
    taken = []
    take = Spares.take
    monkeypatch.setattr(Spares, "take", lambda self, *a, **kw: taken.append(take(self, *a, **kw)) or taken[-1])
    source = (SOLUTIONS / "at_updates.py").read_text()
    topic = topics.load_public("at_updates")
    fresh = _check(SOLUTIONS)
    spares = Spares()
    try:
        spares.prepare(topic, source, limits=TEST_LIMITS, cache=compile_cache.student_public())
        assert verdicts(_check(SOLUTIONS, spares)) == verdicts(fresh)
        assert len(taken) == 1 and taken[0] is not None and not taken[0].alive  # used, then closed
        assert verdicts(_check(SOLUTIONS, spares)) == verdicts(fresh) and taken[1] is None  # used once
        # a spare started with other settings is not used: a fresh worker judges
        spares.prepare(topic, source, limits=Limits(), cache=compile_cache.student_public())
        assert verdicts(_check(SOLUTIONS, spares)) == verdicts(fresh) and taken[2] is None
        # a module that fails at import fails every test with its reason, spare or not
        broken = write_submission(tmp_path, {"at_updates": source + "\nraise RuntimeError('broken on purpose')\n"})
        spares.prepare(topic, source, limits=TEST_LIMITS, cache=compile_cache.student_public())
        failed = _check(broken, spares)
        assert taken[3] is not None
        assert failed.tests and all(t.score == 0 and "broken on purpose" in t.output for t in failed.tests)
        # hidden grading never takes one (nor a sandboxed run); one left waiting is stopped at close
        spares.prepare(topic, source, limits=TEST_LIMITS, cache=compile_cache.student_public())
        hidden = engine.grade(
            SOLUTIONS,
            topics.resolve(["at_updates.scatter_ops"]),
            reference_dir=SOLUTIONS,
            limits=TEST_LIMITS,
            spares=spares,
        )
        assert hidden.tests and len(taken) == 4 and "at_updates" in spares._ready
        (_, folder, future) = spares._ready["at_updates"]
        waiting = future.result(timeout=60)
    finally:
        spares.close()
    assert not waiting.alive and not folder.exists()


def test_a_spare_that_fails_to_start_is_not_used_and_leaves_no_folder(tmp_path):
    """A topic whose workers cannot start (no such JAX platform): `take` gives None, the
    check then starts a worker of its own as before, and the spare's folder is gone."""
    topic = replace(
        topics.load_public("at_updates"),
        env={"JAX_PLATFORMS": "no-such-platform"},
        platform="cpu",  # a topic of its own environment is graded on the CPU (`Topic.platform`)
        platform_reason="the test's",
    )
    module = write_submission(tmp_path, {"at_updates": (SOLUTIONS / "at_updates.py").read_text()}) / "at_updates.py"
    spares = Spares()
    try:
        spares.prepare(topic, module.read_text(), limits=TEST_LIMITS, cache=compile_cache.student_public())
        (_, folder, _) = spares._ready["at_updates"]
        assert spares.take(topic, module, limits=TEST_LIMITS, cache=compile_cache.student_public(), timeout=60) is None
        assert not folder.exists()
    finally:
        spares.close()


def test_a_trusted_spare_starts_warmed_up_serves_once_and_only_a_check_like_its_own():
    """A topic whose checks analyse programs gets a spare trusted analysis worker: its empty
    module imported and XLA's compiler started (a program compiled) before any check asks;
    taken once; one started with other settings is closed, not used. A topic whose checks
    analyse nothing gets none."""
    topic = topics.load_public("jit_basics")
    source = (SOLUTIONS / "jit_basics.py").read_text()
    spares = Spares()
    try:
        spares.prepare(topic, source, limits=TEST_LIMITS, cache=compile_cache.NONE)
        worker = spares.take_trusted(topic, limits=TEST_LIMITS, cache=compile_cache.NONE, timeout=120)
        assert worker is not None and worker.alive and worker.module_name == "jaxlings_analysis"
        try:
            assert worker.request("stats", 30)["compilations"] >= 1  # warmed up: XLA compiled already
        finally:
            worker.close()
        assert spares.take_trusted(topic, limits=TEST_LIMITS, cache=compile_cache.NONE, timeout=120) is None
        spares.prepare(topic, source, limits=Limits(), cache=compile_cache.NONE)
        (_, _, future) = spares._trusted["jit_basics"]
        other = future.result(timeout=120)
        assert spares.take_trusted(topic, limits=TEST_LIMITS, cache=compile_cache.NONE, timeout=120) is None
        assert not other.alive
        ising = topics.load_public("ising")
        spares.prepare(ising, (SOLUTIONS / "ising.py").read_text(), limits=TEST_LIMITS, cache=compile_cache.NONE)
        assert "ising" in spares._ready and "ising" not in spares._trusted
    finally:
        spares.close()


@pytest.mark.slow  # grades one exercise twice (a fresh trusted worker, then the spare)
def test_a_check_takes_the_trusted_spare_and_judges_as_a_fresh_one_would(monkeypatch):
    taken = []
    take = Spares.take_trusted
    monkeypatch.setattr(Spares, "take_trusted", lambda self, *a, **kw: taken.append(take(self, *a, **kw)) or taken[-1])
    topic = topics.load_public("jit_basics")
    first = topic.exercises[0].name

    def check(spares=None):
        return engine.grade(
            SOLUTIONS,
            topics.resolve([f"jit_basics.{first}"], public=True),
            public=True,
            limits=TEST_LIMITS,
            answers=public.replay,
            spares=spares,
        )

    fresh = check()
    spares = Spares()
    try:
        spares.prepare(
            topic, (SOLUTIONS / "jit_basics.py").read_text(), limits=TEST_LIMITS, cache=compile_cache.student_public()
        )
        assert verdicts(check(spares)) == verdicts(fresh)
        assert len(taken) == 1 and taken[0] is not None and not taken[0].alive  # used, then closed
        assert all(t.status == "passed" or t.pending for t in fresh.tests)
    finally:
        spares.close()

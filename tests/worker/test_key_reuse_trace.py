"""`check_keys`, the worker op behind `key_reuse`'s jitted calls: JAX's key-reuse checker runs on
the traced program, so tracing alone finds a reused key, and nothing is compiled for it."""

from __future__ import annotations

import textwrap

from jaxlings.grading.spec import Key
from jaxlings.isolation import WorkerProcess

MODULE = """
import jax

COMPILED = []
jax.monitoring.register_event_duration_secs_listener(
    lambda event, duration, **_: COMPILED.append(event) if event == "/jax/core/compile/backend_compile_duration" else None)


def reuses(key, n):
    return jax.random.normal(key, (n,)) + jax.random.uniform(key, (n,))


def splits(key, n):
    a, b = jax.random.split(key)
    return jax.random.normal(a, (n,)) + jax.random.uniform(b, (n,))


def compiled():
    return len(COMPILED)
"""


def _compiled(worker: WorkerProcess) -> int:
    reply = worker.request("call", 60, fn="compiled", args=())
    assert reply["ok"], reply
    return int(reply["out"]["leaves"][0]["data"])


def test_a_reused_key_is_found_by_tracing_and_nothing_compiles(tmp_path):
    module = tmp_path / "keys.py"
    module.write_text(textwrap.dedent(MODULE))
    with WorkerProcess(module, "keys") as worker:
        assert worker.request("check_keys", 60, fn="splits", args=(Key(1), 5), static_argnums=(1,)) == {"ok": True}
        before = _compiled(worker)  # making the key argument compiles JAX's seeding, once
        bad = worker.request("check_keys", 60, fn="reuses", args=(Key(2), 6), static_argnums=(1,))
        good = worker.request("check_keys", 60, fn="splits", args=(Key(3), 7), static_argnums=(1,))
        traced_only = _compiled(worker) - before
        assert worker.request("call", 60, fn="splits", args=(Key(3), 7), jit=True, static_argnums=(1,))["ok"]
        called = _compiled(worker) - before
    assert not bad["ok"] and bad["error"]["type"] == "KeyReuseError", bad
    assert good == {"ok": True}
    assert traced_only == 0 and called >= 1  # the counter counts: a jitted call does compile

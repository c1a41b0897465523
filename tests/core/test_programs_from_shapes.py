"""Programs exported from shapes, run on samples the student never saw (issue 26, class 1).

The student's worker is asked for its jitted programs with argument specs only (shapes,
dtypes, static values: `structure.trace_request`); the trusted side runs every program, in an
analysis worker of its own, on fresh samples and compares with the reference's outputs there.

Hostile submissions (tests/submissions/<topic>__attack_constant_programs.py), each graded with
the sandbox on beside its honest twin (the same NumPy function, nothing patched): the module
replaces the harness's `op_call` (jitted and vmapped calls answered by NumPy) and `op_trace`
(programs made of the outputs for the values it is handed, as constants, one program for both
samples of a shape, plus the op a requirement names or the layout the task asks for). Before
this change each took every `jit`, `vmap` and `sharding` point of its exercises (loops 8/8 for
a twin's 4/8, primitives.axpy 5/5 for 1/5, sharding.shard_batch 4/4 for 1/4); now it gains
nothing, and every run completes.
"""

from __future__ import annotations

import numpy as np
import pytest

from helpers.grading import (
    assert_complete,
    assert_gains_nothing,
    attack_and_twin,
    extra_data,
    failing,
    grade_dir,
    needs_bwrap,
    table,
    verdicts,
    write_submission,
)
from jaxlings.grading import structure
from jaxlings.grading.session import TopicSession
from jaxlings.worker import wire
from jaxlings.worker.wire import Key, Spec

# -- what the student's worker is shown -----------------------------------------------------------


def _values(tree: object) -> list:
    """Every array, key or number a request carries (static arguments aside)."""
    if isinstance(tree, (np.ndarray, np.generic, Key)):
        return [tree]
    if isinstance(tree, (list, tuple)):
        return [v for x in tree for v in _values(x)]
    if isinstance(tree, dict):
        return [v for x in tree.values() for v in _values(x)]
    return []


def test_a_trace_request_carries_specs_and_static_values_never_data():
    a, b, c = np.ones((4, 3), np.float32), np.zeros((4, 3), np.float32), np.ones((2, 3), np.float32)
    request = {
        "fn": "f",
        "args": (a, 0.5, Key(3), [a, {"w": a}], 7),
        "args_again": (b, 0.25, Key(4), [b, {"w": b}], 7),
        "args_other": (c, 0.5, Key(5), [c, {"w": c}], 2),
        "static_argnums": (4,),
    }
    sent = structure.trace_request(request)
    assert set(sent) == {"fn", "specs", "static_argnums", "transforms"}
    assert _values(sent) == []
    first = sent["specs"]["first"]
    assert first[:3] == (Spec("array", (4, 3), "float32"), Spec("scalar", (), "float"), Spec("key"))
    assert first[3] == [Spec("array", (4, 3), "float32"), {"w": Spec("array", (4, 3), "float32")}]
    assert first[4] == 7 and sent["specs"]["other"][4] == 2  # static arguments by value
    assert wire.decode(wire.encode(sent)) == {**sent, "static_argnums": (4,)}  # specs travel as they are


def test_samples_of_one_size_must_share_their_shapes():
    request = {"fn": "f", "args": (np.ones(3, np.float32),), "args_again": (np.ones(4, np.float32),)}
    with pytest.raises(structure.GraderError, match="differ in shape"):
        structure.trace_request(request)


def test_a_malformed_spec_is_refused_on_the_wire():
    payload = wire.encode({"x": Spec("array", (2,), "float32")}).replace(b'"float32"', b'["no"]   ')
    with pytest.raises(wire.WireError, match="spec"):
        wire.decode(payload)


def test_the_analysis_budget_follows_the_reference_in_cpu_time_where_measured(monkeypatch):
    class Analyser:
        cpu: float | None = 0.0

        def cpu_seconds(self) -> float | None:
            return self.cpu

    class Session:
        limits = type("L", (), {"call_timeout": 60.0})()
        analyser = Analyser()

        def time_left(self) -> float:
            return 500.0

    session = Session()
    # measured: a CPU budget, the call timeout the wall's backstop (never below the budget)
    assert structure.analysis_deadline(session, 0.2) == (structure.ANALYSIS_FLOOR, 60.0)
    monkeypatch.setattr(structure, "ANALYSIS_FLOOR", 1.0)
    assert structure.analysis_deadline(session, 0.5) == (10 * 0.5, 60.0)
    assert structure.analysis_deadline(session, 30.0) == (300.0, 300.0)
    # not measured: the budget is the wall deadline, within the call timeout
    session.analyser.cpu = None
    assert structure.analysis_deadline(session, 0.5) == (None, 10 * 0.5)
    assert structure.analysis_deadline(session, 30.0) == (None, 60.0)


# -- honest functions keep their points, a static data argument is named -----------------------------


@pytest.mark.slow
def test_own_jit_holding_data_static_fails_jit_with_a_reason(tmp_path):
    folder = write_submission(
        tmp_path,
        {
            "at_updates": """
        import functools, jax, jax.numpy as jnp

        @functools.partial(jax.jit, static_argnums=(1,))
        def histogram(x, nbins):
            return jnp.zeros(nbins, jnp.int32).at[x].add(1)

        @functools.partial(jax.jit, static_argnums=(1, 2))
        def mask_fill(x, threshold, fill):
            return jnp.where(x > threshold, jnp.asarray(fill, x.dtype), x)
    """
        },
    )
    result = grade_dir(folder, ["at_updates.histogram", "at_updates.mask_fill"])
    assert failing(result) == {"at_updates.mask_fill:jit"}
    message = verdicts(result)["at_updates.mask_fill:jit"][2]
    assert "marks argument 1 static" in message and "re-traces" in message, message
    facts = extra_data(result, "at_updates.histogram:jit")
    assert facts["n_ops"] == facts["reference_n_ops"]


# -- hostile: constant programs for the values handed over --------------------------------------------

CONSTANT_PROGRAMS = [
    (
        "loops__attack_constant_programs",
        ["loops.power_iteration", "loops.ema"],
        {"loops.power_iteration:jit", "loops.ema:jit"},
    ),
    ("primitives__attack_constant_programs", ["primitives.axpy"], {"primitives.axpy:jit", "primitives.axpy:vmap"}),
    (
        "sharding__attack_constant_programs",
        ["sharding.shard_batch"],
        {"sharding.shard_batch:jit", "sharding.shard_batch:sharding"},
    ),
]


@needs_bwrap
@pytest.mark.slow
@pytest.mark.parametrize(
    "name,names,forged", CONSTANT_PROGRAMS, ids=[n.split("__")[0] for n, _, _ in CONSTANT_PROGRAMS]
)
def test_constant_programs_for_the_values_handed_over_gain_nothing(tmp_path, name, names, forged):
    attack, honest = attack_and_twin(tmp_path, name, names)
    assert_gains_nothing(attack, honest, names)
    assert failing(attack) == forged  # `correct` is NumPy's to keep; every program fact is lost
    for test in forged:
        assert "does not compute the function" in verdicts(attack)[test][2], verdicts(attack)[test]


# -- a runaway program restarts the analysis worker, never the reference -------------------------------

RUNAWAY = """
import sys

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax


def power_iteration(A, x0, n_iters):
    def step(i, x):
        y = A @ x
        return y / jnp.linalg.norm(y)

    x = lax.fori_loop(0, n_iters, step, x0 / jnp.linalg.norm(x0))
    return x, x @ (A @ x)


def ema(xs, alpha):
    def step(m, x):
        m = alpha * x + (1 - alpha) * m
        return m, m

    return lax.scan(step, jnp.zeros_like(xs[0]), xs)[1]


def _runaway(A, x0, n_iters):
    spin = lax.while_loop(lambda c: c >= 0, lambda c: c + 1.0, jnp.sum(A) * 0.0)  # never ends
    return x0 + spin, spin


def _install():
    cls = sys.modules["jaxlings.worker.harness"].Harness
    program = sys.modules["jaxlings.worker.program"]
    plain = cls.op_trace

    def op_trace(self, req):
        if req["fn"] != "power_iteration":
            return plain(self, req)
        jitted = jax.jit(_runaway, static_argnums=(2,))
        return {"programs": {name: np.frombuffer(program.export(jitted, self.described(specs)), np.uint8)
                             for name, specs in req["specs"].items()}, "advisory": {}}

    cls.op_trace = op_trace


_install()
"""


@pytest.mark.slow
def test_a_runaway_program_restarts_only_the_analysis_worker(tmp_path, monkeypatch):
    restarts = {"reference": 0, "analyser": 0}
    for side, method in (("reference", "restart_reference"), ("analyser", "restart_analyser")):
        original = getattr(TopicSession, method)

        def counted(self, _side=side, _original=original):
            restarts[_side] += 1
            return _original(self)

        monkeypatch.setattr(TopicSession, method, counted)
    monkeypatch.setattr(structure, "ANALYSIS_FLOOR", 4.0)
    folder = write_submission(tmp_path, {"loops": RUNAWAY})
    names = ["loops.power_iteration", "loops.ema"]
    result = grade_dir(folder, names)
    assert_complete(result, names)
    assert failing(result) == {"loops.power_iteration:jit"}
    message = verdicts(result)["loops.power_iteration:jit"][2]
    assert "did not finish on the grader's side within 4 s" in message, message
    assert restarts == {"reference": 0, "analyser": 1}  # ema's programs then ran in a fresh analyser


# -- a public run verifies the programs against the function's own outputs -------------------------------

OTHER_PROGRAM = RUNAWAY.replace(
    "    spin = lax.while_loop(lambda c: c >= 0, lambda c: c + 1.0, jnp.sum(A) * 0.0)  # never ends\n"
    "    return x0 + spin, spin\n",
    "    x, lam = power_iteration(A, x0, n_iters)\n    return x, lam + 1.0  # one more than the function gives\n",
)


@pytest.mark.slow
def test_a_public_run_holds_the_programs_to_the_functions_own_outputs(tmp_path):
    """A public run has no reference outputs for the trusted samples (the public expectations do
    not carry them): a program that computes something else than the function still fails
    `jit` there, one that computes the function passes."""
    assert "one more than the function gives" in OTHER_PROGRAM
    folder = write_submission(tmp_path, {"loops": OTHER_PROGRAM})
    names = ["loops.power_iteration", "loops.ema"]
    result = grade_dir(folder, names, public=True)
    assert_complete(result, names)
    assert failing(result) == {"loops.power_iteration:jit"}, table(result)
    message = verdicts(result)["loops.power_iteration:jit"][2]
    assert "does not compute the function" in message, message

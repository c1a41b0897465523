"""The accelerator's rules, piece by piece (`jaxlings.grading.device`, `jaxlings.grading.workloads`,
`jaxlings.worker.commit`): which device a grading uses, one holder at a time, a round's
outputs committed to inside its window, inputs made on the device from a key, and the
tolerance of outputs computed there. The whole flow, graded, is tests/topics/test_device_grading.py."""

from __future__ import annotations

import functools
import threading
import time
from dataclasses import replace
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from helpers.grading import TEST_LIMITS
from jaxlings.grading import device, device_grading, topics, workloads
from jaxlings.grading.check import SpecError
from jaxlings.grading.checks import Correct, Speed
from jaxlings.grading.spec import Case, Exercise, Topic
from jaxlings.isolation import WorkerDied, WorkerProcess
from jaxlings.worker import commit, commit_kernel, harness

EMPTY = '"""Nothing."""\n'


def test_the_setting_names_the_device(monkeypatch):
    monkeypatch.delenv(device.SETTING_ENV, raising=False)
    assert device.resolve("cpu") is None
    exclusive = device.resolve("exclusive")
    assert exclusive is not None and exclusive.kind == "cpu" and not exclusive.accelerator
    assert exclusive.lock is not None and exclusive.platforms == ("cpu",)
    tpu = device.resolve("tpu")
    assert tpu is not None and tpu.accelerator and tpu.platforms == ("tpu", "cpu")
    monkeypatch.setenv(device.SETTING_ENV, "exclusive")
    assert device.resolve(None) is not None  # the environment's, where no setting is given
    with pytest.raises(device.DeviceError, match="one of auto, cpu, exclusive, tpu, gpu, not 'tpuu'"):
        device.resolve("tpuu")


def test_auto_finds_no_accelerator_where_jax_is_pinned_to_the_cpu(monkeypatch):
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    assert device.detect() is None and device.resolve("auto") is None


def test_workers_off_the_device_are_pinned_to_the_cpu_and_on_it_compute_float32_at_highest(monkeypatch):
    monkeypatch.delenv(commit.KERNEL_ENV, raising=False)
    tpu = device.Device("tpu", device.Lease(Path("/nonexistent")))
    assert tpu.env(on_device=False) == {"JAX_PLATFORMS": "cpu"}
    assert tpu.env(on_device=True) == {
        "JAX_PLATFORMS": "tpu,cpu",
        "JAX_DEFAULT_MATMUL_PRECISION": "highest",
        commit.KERNEL_ENV: "1",
    }
    exclusive = device.resolve("exclusive")
    assert exclusive is not None and exclusive.env(on_device=True) == {"JAX_PLATFORMS": "cpu"}


def test_hidden_grading_on_an_accelerator_draws_serial_bits_on_every_worker():
    hidden = device.Device("tpu", device.Lease(Path("/nonexistent"))).for_hidden()
    assert all(hidden.env(on_device=where)["JAX_THREEFRY_PARTITIONABLE"] == "false" for where in (True, False))
    exclusive = device.resolve("exclusive")
    assert exclusive is not None and "JAX_THREEFRY_PARTITIONABLE" not in exclusive.for_hidden().env(on_device=True)


def test_the_lease_has_one_holder_at_a_time_and_records_each(tmp_path):
    lease = device.Lease(tmp_path / "lease")
    other = device.Lease(tmp_path / "lease")  # another grader on the same machine: the same file
    inside: list[tuple[str, float, float]] = []

    def hold(which: device.Lease, who: str) -> None:
        with which.held(who):
            start = time.monotonic()
            time.sleep(0.3)
            inside.append((who, start, time.monotonic()))

    threads = [threading.Thread(target=hold, args=(lease, "a")), threading.Thread(target=hold, args=(other, "b"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    (_, _, e1), (_, s2, _) = sorted(inside, key=lambda x: x[1])
    assert e1 <= s2, "two holders overlapped"
    assert [h["who"] for h in lease.holders + other.holders] and len(lease.holders) == len(other.holders) == 1
    assert max(h["waited"] for h in lease.holders + other.holders) > 0.2  # the second waited for the first


def test_a_second_process_on_the_exclusive_device_fails_as_on_a_tpu(tmp_path):
    """The exclusive mode's device workers lock the device, as libtpu locks a chip: a second one,
    started while the first lives, stops at start with the reason; once the first is gone, the
    device is free again."""
    module = tmp_path / "empty.py"
    module.write_text(EMPTY)
    lock = tmp_path / "chip"
    first = WorkerProcess(module, "empty", limits=TEST_LIMITS, device_lock=lock)
    try:
        with pytest.raises(WorkerDied, match="the device is held by another process"):
            WorkerProcess(module, "empty", limits=TEST_LIMITS, device_lock=lock)
    finally:
        first.close()
    WorkerProcess(module, "empty", limits=TEST_LIMITS, device_lock=lock).close()


COUNTER = """
calls = [0]


def count():
    calls[0] += 1
    return calls[0]
"""


def test_the_devices_one_process_imports_each_topic_once(tmp_path):
    """The device's shared process (`op_module`) keeps each topic's module once imported: the
    topics take it in turn, and a module comes back as it was (its functions compiled ahead,
    `device_grading.compile_ahead`), not imported again; another file under a known name is."""
    empty = tmp_path / "jaxlings_device.py"
    empty.write_text(EMPTY)
    for name in ("a", "b", "c"):
        (tmp_path / f"{name}.py").write_text(COUNTER)
    worker = WorkerProcess(empty, "jaxlings_device", limits=TEST_LIMITS)
    try:

        def count(name: str, path: Path) -> int:
            assert worker.request("module", 60, path=str(path), name=name)["functions"] == ["count"]
            reply = worker.request("call", 60, fn="count", args=[], jit=False)
            return int(np.asarray(reply["out"]["leaves"][0]["data"]))

        assert [count("a", tmp_path / "a.py"), count("a", tmp_path / "a.py")] == [1, 2]
        assert count("b", tmp_path / "b.py") == 1
        assert count("a", tmp_path / "a.py") == 3  # the same module: its state as it was
        assert count("a", tmp_path / "c.py") == 1  # another file: imported
    finally:
        worker.close()


# -- the commitment -----------------------------------------------------------------------------

DTYPES = st.sampled_from([np.float32, np.int32, np.uint8, np.int8, np.bool_, np.float16, np.uint32, np.int16])
JITTED_DIGEST = jax.jit(lambda leaves, salt: commit.digest(leaves, salt, jnp))


@settings(max_examples=30, deadline=None)
@given(leaves=st.lists(hnp.arrays(DTYPES, hnp.array_shapes(min_dims=0, max_dims=3, max_side=9)), max_size=3))
def test_the_digest_is_the_same_on_the_device_and_in_numpy(leaves):
    salt = 0xDEADBEEF
    on_host = commit.digest(leaves, salt, np)
    jitted = JITTED_DIGEST([jnp.asarray(x) for x in leaves], np.uint32(salt))
    assert [int(v) for v in on_host] == [int(v) for v in jitted] == workloads.digest(leaves, salt)


def test_a_changed_word_or_order_or_salt_changes_the_digest():
    """The case a summed checksum misses: sign flips of an even number of words, and reordering
    (a weighted sum of words moved elsewhere, or of 2**31 added twice, is unchanged mod 2**32)."""
    x = np.linspace(-1, 1, 1000, dtype=np.float32)
    base = list(commit.digest([x], 7, np))
    y = x.copy()
    y[517] = np.nextafter(y[517], np.float32(2))  # one ulp, one word
    flipped = x.copy()
    flipped[[3, 600]] *= -1  # two sign bits: 2 * 2**31 * odd weights sum to 0 mod 2**32
    for other in ([y], [x[::-1].copy()], [flipped]):
        assert list(commit.digest(other, 7, np)) != base
    assert list(commit.digest([x], 8, np)) != base
    # the words, not the leaves: where they split is the outputs' structure, compared apart
    assert list(commit.digest([x[:500], x[500:]], 7, np)) == base


@pytest.mark.parametrize("count", [2 * commit_kernel.FOLD_TILE * 128 + 5, 100])
def test_the_folding_kernel_folds_as_the_digest_does(count):
    """Each stage's folding as a Pallas kernel (`commit_kernel.fold`, in Pallas's interpreter)
    gives NumPy's chains: two grid steps and a ragged third (padded, its extra chains dropped),
    and too few columns for it (XLA's scan)."""
    rng = np.random.default_rng(count)
    groups = rng.integers(0, 2**32, size=(32, 8, count), dtype=np.uint32)
    chain = rng.integers(0, 2**32, size=(4, count), dtype=np.uint32)
    got = jax.jit(functools.partial(commit_kernel.fold, interpret=True))(jnp.asarray(groups), jnp.asarray(chain))
    assert np.array_equal(np.asarray(got), commit._fold(groups, chain, np))


@pytest.mark.parametrize("words", [8 * commit_kernel.COLUMNS, 8 * (2 * commit_kernel.COLUMNS + 5) - 3, 100])
def test_the_digest_kernel_gives_the_digest(words):
    """The first level as a Pallas kernel (a TPU's, `commit_kernel`, run here in Pallas's
    interpreter) gives NumPy's digest: one grid step, a ragged last one (padded, its extra
    states dropped), and too few columns for it (XLA's loop)."""
    x = np.random.default_rng(words).integers(0, 2**32, size=words, dtype=np.uint32)
    kernel = functools.partial(commit_kernel.first_level, interpret=True)
    with_kernel = jax.jit(lambda leaves, salt: commit.digest(leaves, salt, jnp, kernel))
    assert [int(v) for v in with_kernel([jnp.asarray(x)], np.uint32(5))] == list(commit.digest([x], 5, np))


def test_a_tpu_worker_uses_the_digest_kernel_unless_the_grader_says_not(monkeypatch, tmp_path):
    """On a TPU's workers, both sides alike (`Device.env`), unless the grader's environment has
    it 0; never on the host's CPU; a worker uses it only where its environment says 1."""
    monkeypatch.delenv(commit.KERNEL_ENV, raising=False)
    assert harness.first_level("tpu") is None
    tpu = device.Device("tpu", device.Lease(tmp_path / "lease"))
    assert tpu.env(on_device=True)[commit.KERNEL_ENV] == "1"
    assert commit.KERNEL_ENV not in tpu.env(on_device=False)
    assert commit.KERNEL_ENV not in device.Device("gpu", device.Lease(tmp_path / "gpu")).env(on_device=True)
    monkeypatch.setenv(commit.KERNEL_ENV, "0")
    assert commit.KERNEL_ENV not in tpu.env(on_device=True)
    monkeypatch.setenv(commit.KERNEL_ENV, "2")
    assert tpu.env(on_device=True)[commit.KERNEL_ENV] == "2"
    assert harness.first_level("tpu") is commit_kernel.first_level and harness.folding("tpu") is commit_kernel.fold
    monkeypatch.setenv(commit.KERNEL_ENV, "1")
    assert harness.first_level("tpu") is commit_kernel.first_level and harness.folding("tpu") is None
    assert harness.first_level("cpu") is None and harness.folding("cpu") is None


# -- inputs made on the device ---------------------------------------------------------------------


def test_uniform_takes_only_spans_that_scale_exactly():
    key = jax.random.key(0)
    with pytest.raises(ValueError, match="span 3 must be a power of two"):
        workloads.uniform(key, (3,), -1.0, 2.0)
    values = np.asarray(workloads.uniform(key, (1000,), -2.0, 2.0))
    assert values.dtype == np.float32 and values.min() >= -2 and values.max() < 2


def generated(ex_name: str, check: Speed, size: int) -> list:
    """The arguments of each call of a generated round at `size`, made here on the CPU as the
    worker makes them (the exported program run on a key)."""
    work = workloads.export(check.generate, size, ("cpu",))
    outs = jax.export.deserialize(bytearray(work.program.tobytes())).call(jnp.asarray([3, 4], jnp.uint32))

    def fill(x):
        if isinstance(x, workloads.Generated):
            return jax.random.wrap_key_data(outs[x.index]) if x.key else outs[x.index]
        return x

    return [workloads._mapped(call, fill) for call in work.calls]


SPEED_GENERATED = [
    (t, ex.name)
    for t in topics.ORDER
    for ex in topics.load(t).exercises
    if ex.check("speed") is not None and ex.check("speed").generate is not None
]


@pytest.mark.parametrize("topic,name", SPEED_GENERATED)
def test_a_generated_workload_has_the_samplers_structure_shapes_and_dtypes(topic, name):
    """A device round's inputs are the same kind of call as the CPU's sampler draws: the same
    argument structure, array shapes and dtypes, and the same static values' types."""
    ex = topics.load(topic).exercise(name)
    check = ex.check("speed")
    size = check.size_for("cpu")
    rng = np.random.default_rng(0)
    drawn = check.stream(rng, size) if check.stream else [ex.sample(rng, size)]
    made = generated(name, check, size)
    assert len(made) == len(drawn) or check.stream is not None
    for args, case in zip(made, drawn):

        def kind(x):
            if hasattr(x, "dtype") and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
                return "key"
            if hasattr(x, "shape"):
                return (tuple(x.shape), str(x.dtype))
            return "key" if type(x).__name__ == "Key" else type(x).__name__

        assert jax.tree.structure(args) == jax.tree.structure(case.args)
        assert [kind(x) for x in jax.tree.leaves(args)] == [kind(x) for x in jax.tree.leaves(case.args)]


def test_a_generated_workload_is_the_same_each_time_it_is_made():
    ex = topics.load("at_updates").exercise("histogram")
    first, again = generated("histogram", ex.check("speed"), 4096), generated("histogram", ex.check("speed"), 4096)
    assert np.array_equal(first[0][0], again[0][0]) and first[0][1] == 256


def test_a_speed_size_for_an_unknown_backend_fails_at_import():
    with pytest.raises(SpecError, match="names no backend 'tpuv5'"):
        Exercise("f", lambda rng, size: Case(()), (Correct(1), Speed(1, size={"cpu": 8, "tpuv5": 9})), ("a", "b"))


def test_a_speed_twin_without_a_stream_fails_at_import():
    sample = lambda rng, size: Case(())  # noqa: E731
    with pytest.raises(SpecError, match="option 'twin' needs a 'stream'"):
        Exercise("f", sample, (Correct(1), Speed(1, size={"cpu": 8}, twin=sample)), ("a", "b"))


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"platform": "tpu"}, "Speed: platform must be one of accelerator, cpu, not 'tpu'"),
        ({"platform": "cpu"}, "says why"),
        ({"platform": "cpu", "platform_reason": "small", "size": {"cpu": 8, "tpu": 64}}, "the CPU's size only"),
    ],
)
def test_a_speed_check_timed_on_the_cpu_is_declared_whole(options, problem):
    """`Speed(platform="cpu")`: a reason, the CPU's size alone (what the device would time is
    never timed), else the spec fails at import."""
    sample = lambda rng, size: Case(())  # noqa: E731
    speed = Speed(1, **{"size": {"cpu": 8}, **options})
    with pytest.raises(SpecError, match=problem):
        Exercise("f", sample, (Correct(1), speed), ("a", "b"))


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"platform": "gpu"}, "t: platform must be one of accelerator, cpu, not 'gpu'"),
        ({"platform": "cpu"}, "t: graded on the CPU .* says why"),
        ({"env": {"XLA_FLAGS": "--xla_force_host_platform_device_count=8"}}, "cannot share the accelerator"),
    ],
)
def test_a_topic_says_where_it_runs_or_fails_at_import(options, problem):
    """`Topic.platform`: one of PLATFORMS, "cpu" with its reason, an environment of its own only
    off the accelerator's one process."""
    sample = lambda rng, size: Case(())  # noqa: E731
    exercise = Exercise("f", sample, (Correct(1),), ("a", "b"))
    with pytest.raises(SpecError, match=problem):
        Topic("t", "T", (exercise,), **options)
    assert Topic("t", "T", (exercise,), platform="cpu", platform_reason="float64").platform == "cpu"


def test_only_speed_checks_on_the_accelerator_run_ahead_on_the_device():
    """The reference's phase on the device takes the speed checks that run there, not one
    timed on the host's CPU (`static_args.cached_solve`)."""
    static_args = topics.load("static_args")
    assert [ex.name for ex in static_args.exercises if device_grading.prefetching(ex)] == ["standardize"]
    assert not static_args.exercise("cached_solve").check("speed").prefetches


# -- tolerance on an accelerator ----------------------------------------------------------------


def test_outputs_from_an_accelerator_are_compared_at_least_at_its_tolerance():
    ex = topics.load("loops").exercise("rnn_loss")
    rtol, atol = device.tolerance("tpu")
    widened = ex.at_least(rtol, atol)
    assert (widened.rtol, widened.atol) == (max(ex.rtol, rtol), max(ex.atol, atol))
    assert widened.check("grad").rtol == max(ex.check("grad").rtol, rtol)
    assert ex.at_least(0.0, 0.0) == ex  # never lower
    assert device.tolerance("cpu") == (0.0, 0.0)
    assert ex.on_accelerator("tpu") == widened  # no tolerance of its own


def test_an_exercise_whose_outputs_drift_on_an_accelerator_has_its_own_least_tolerance_there():
    walk = topics.load("prng").exercise("noisy_walk")
    rtol, atol = walk.accelerator_tolerance["tpu"]
    on_tpu = walk.on_accelerator("tpu")
    assert (on_tpu.rtol, on_tpu.atol) == (max(rtol, device.tolerance("tpu")[0]), atol) and atol > walk.atol
    assert walk.on_accelerator("gpu") == walk.at_least(*device.tolerance("gpu"))  # the TPU's own only there
    with pytest.raises(SpecError, match="its kinds are 'tpu' and 'gpu'"):
        replace(walk, accelerator_tolerance={"tpu v5e": (1e-3, 1e-3)})

"""Speed verdicts that discriminate: a timed workload's inputs and outputs cross a shared region
(`jaxlings/worker/shm.py`) instead of the pipe, and the workloads are sized so that the
function's own work dominates the window (docs/grading.md, "Timing").

Before: the window's traffic was most of a round's cost, and a NumPy `affine` doing twice the
reference's work read x1.10-1.19, full marks.
"""

import dataclasses
from textwrap import dedent

import numpy as np
import pytest

from helpers.grading import SOLUTIONS, TEST_LIMITS, needs_bwrap, write_submission
from jaxlings.grading import engine, topics
from jaxlings.grading.timing import timed_call
from jaxlings.isolation import WorkerProcess

SOLUTION = (SOLUTIONS / "jit_basics.py").read_text()

# The twin: `affine` in NumPy, the product computed twice (NumPy runs eagerly).
NUMPY_TWICE = """

import numpy as _np


def affine(x, W, b):
    x, W, b = _np.asarray(x), _np.asarray(W), _np.asarray(b)
    first, second = x @ W, x @ W
    return first + b + 0 * second[:1]
"""

# The same twin, with a thread that maps the worker's shared region and polls it for a round's
# inputs, to compute the answer before the clock starts: the inputs are written there only once
# the grader's clock runs, so whatever the thread does is timed (and the function waits for it).
POLLING_TWICE = """

import os as _os
import mmap as _mmap
import threading as _threading
import time as _time

import numpy as _np

_N = {n}
_ready = {{}}
_seen = []


def _region():
    for fd in _os.listdir("/proc/self/fd"):
        try:
            if "jaxlings-timed" in _os.readlink(f"/proc/self/fd/{{fd}}"):
                return _mmap.mmap(int(fd), {size})
        except OSError:
            pass


def _poll():
    region = _region()
    _seen.append(region is not None)
    last = None
    while region is not None:
        x = _np.frombuffer(region, _np.float32, _N * 4 * _N, 0).reshape(_N, 4 * _N)
        head = bytes(x[0, :8].tobytes())
        if head != last and x.any():
            last = head
            w_at = -(-x.nbytes // 128) * 128
            W = _np.frombuffer(region, _np.float32, 4 * _N * _N, w_at).reshape(4 * _N, _N)
            b = _np.frombuffer(region, _np.float32, _N, w_at + -(-W.nbytes // 128) * 128)
            x, W, b = x.copy(), W.copy(), b.copy()
            first, second = x @ W, x @ W
            _ready[head] = (x, W, b, first + b + 0 * second[:1])
        _time.sleep(0.0005)


_threading.Thread(target=_poll, daemon=True).start()


def affine(x, W, b):
    x, W, b = _np.asarray(x), _np.asarray(W), _np.asarray(b)
    head = bytes(x[0, :8].tobytes())
    deadline = _time.monotonic() + 0.05
    while head not in _ready and _time.monotonic() < deadline:
        _time.sleep(0.0002)
    seen = _ready.pop(head, None)
    if seen is not None and all(_np.array_equal(a, c) for a, c in zip(seen, (x, W, b))):
        return seen[3]  # computed by the thread from what it read in the region: the right answer
    first, second = x @ W, x @ W
    return first + b + 0 * second[:1]
"""


def speed_only(name: str):
    """The topic spec holding just `name`, graded for `correct` and `speed` only."""
    (spec,) = topics.resolve([name])
    exercises = tuple(
        dataclasses.replace(ex, checks=tuple(c for c in ex.checks if c.name in ("correct", "speed")))
        for ex in spec.exercises
    )
    return dataclasses.replace(spec, exercises=exercises)


def speed_result(folder, name: str, isolate: bool = False):
    """The speed test of `name` graded on `folder` (hidden mode, the reference live)."""
    result = engine.grade(folder, [speed_only(name)], reference_dir=SOLUTIONS, isolate=isolate, limits=TEST_LIMITS)
    return next(t for t in result.tests if t.check == "speed")


def affine_speed():
    return topics.load("jit_basics").exercise("affine").check("speed")


@pytest.mark.slow
def test_twice_the_reference_s_work_scores_below_full_marks_and_the_reference_full(tmp_path):
    """The issue's NumPy twin of `affine`, beside the reference, in one test run: the verdict
    compares the two ratios with the band's start, never a wall time."""
    full = affine_speed().full
    reference = speed_result(SOLUTIONS, "jit_basics.affine")
    twice = speed_result(write_submission(tmp_path, {"jit_basics": SOLUTION + NUMPY_TWICE}), "jit_basics.affine")
    assert reference.score == reference.max_score, reference.output
    assert reference.extra_data["ratio"] <= full
    assert twice.score < twice.max_score, twice.output
    assert twice.extra_data["ratio"] > full


def test_a_timed_workload_crosses_the_shared_region(tmp_path):
    """Inputs written into the worker's region by the grader, outputs copied out of it: every
    array of the workload, none through the pipe; the values are right."""
    _crosses_the_region(tmp_path, isolate=False)


@needs_bwrap
def test_the_shared_region_works_in_the_sandbox(tmp_path):
    """The same under bubblewrap (a private /dev/shm: the region is a memfd handed over at start)."""
    _crosses_the_region(tmp_path, isolate=True)


def _crosses_the_region(tmp_path, isolate: bool) -> None:
    folder = write_submission(tmp_path, {"jit_basics": SOLUTION})
    ex = next(ex for ex in topics.load("jit_basics").exercises if ex.name == "affine")
    with WorkerProcess(folder / "jit_basics.py", "jit_basics", isolate=isolate, limits=TEST_LIMITS) as worker:
        region = worker.region
        assert region is not None
        placed, taken = [], []
        place, copy = region.place, region.copy
        region.place = lambda tree: placed.append(tree) or place(tree)
        region.copy = lambda ref: taken.append(ref) or copy(ref)
        for seed in range(3):
            case = ex.sample(np.random.default_rng(seed), 64)
            timed = timed_call(worker, "affine", [case], jit=False, static_argnums=(), timeout=60.0)
            x, W, b = case.args
            got = timed.outs[0]["leaves"][0]["data"]
            np.testing.assert_allclose(got, x @ W + b, rtol=1e-5, atol=1e-5)
            assert got.base is None or not isinstance(got.base, type(region.map))  # the grader's own copy
        assert len(placed) == 3 and len(taken) == 3


@needs_bwrap
@pytest.mark.slow
def test_polling_the_shared_region_learns_no_input_before_the_clock(tmp_path):
    """A module whose thread watches its region and computes each round's answer as soon as the
    inputs appear gains nothing: they appear only inside the round's window, so the work is
    timed, and twice the reference's work still scores below full marks. The run completes."""
    speed = affine_speed()
    from jaxlings.worker import shm

    module = SOLUTION + POLLING_TWICE.format(n=speed.size_for("cpu"), size=shm.SIZE)
    hostile = speed_result(
        write_submission(tmp_path, {"jit_basics": dedent(module)}), "jit_basics.affine", isolate=True
    )
    assert hostile.score < hostile.max_score, hostile.output
    assert hostile.extra_data["ratio"] > speed.full


# A module that rewrites, in its own process, where the harness says its outputs are.
BAD_REFERENCES = {
    "past_the_end": "{'$shm': [self.size, 'float32', [4]]}",
    "into_the_inputs": "{'$shm': [0, arr.dtype.name, list(arr.shape)]}",
    "huge": "{'$shm': [offset, 'float32', [1 << 40]]}",
    "not_numeric": "{'$shm': [offset, 'object', [1]]}",
    "unaligned": "{'$shm': [offset + 4, arr.dtype.name, list(arr.shape)]}",
}


@pytest.mark.parametrize("variant", sorted(BAD_REFERENCES))
def test_a_bad_reference_into_the_region_fails_the_speed_check_not_the_run(tmp_path, variant):
    module = SOLUTION + dedent(f"""

        from jaxlings.worker import shm as _shm


        def _put(self, arr, offset, end):
            return {BAD_REFERENCES[variant]}, offset


        _shm.Region.put = _put
    """)
    test = speed_result(write_submission(tmp_path, {"jit_basics": module}), "jit_basics.affine")
    assert test.score == 0 and "malformed" in test.output, test.output


def test_output_references_may_not_overlap():
    """Two leaves that name the same bytes (so that a reply could make the grader copy one
    region many times over) are refused; leaves one after another are taken."""
    from jaxlings.grading import timing
    from jaxlings.worker import shm

    region = shm.Region.create(1 << 20)
    try:
        arr = np.arange(64, dtype=np.float32)
        first, after = region.put(arr, 4096, region.size)
        second, _ = region.put(arr, after, region.size)

        def reply(*refs):
            return {
                "ok": True,
                "outs": [{"treedef": "*", "leaves": [{"kind": "array", "data": dict(r)} for r in refs]}],
            }

        fine = reply(first, second)
        timing._take_outputs(region, 4096, fine)
        for leaf in fine["outs"][0]["leaves"]:
            np.testing.assert_array_equal(leaf["data"], arr)
        with pytest.raises(shm.Malformed):
            timing._take_outputs(region, 4096, reply(first, first))
        with pytest.raises(shm.Malformed):
            timing._take_outputs(region, 8192, reply(first))
    finally:
        region.close()


def test_outputs_are_bounded_by_the_reference_s_before_anything_is_copied():
    """A reply that names more bytes than allowed (the rest of the region, never written) is
    refused on the references alone: no leaf is copied, nothing of the region is read."""
    from jaxlings.grading import timing
    from jaxlings.worker import shm

    region = shm.Region.create(64 << 20)
    try:
        arr = np.arange(64, dtype=np.float32)
        ref, _ = region.put(arr, 4096, region.size)
        rest = {"$shm": [4096, "uint8", [region.size - 4096]]}
        reply = {"ok": True, "outs": [{"treedef": "*", "leaves": [{"kind": "array", "data": dict(rest)}]}]}
        with pytest.raises(shm.Malformed, match="past the 1024 bytes allowed"):
            timing._take_outputs(region, 4096, reply, max_bytes=1024)
        assert reply["outs"][0]["leaves"][0]["data"] == rest  # refused before any copy
        fine = {"ok": True, "outs": [{"treedef": "*", "leaves": [{"kind": "array", "data": dict(ref)}]}]}
        assert timing._take_outputs(region, 4096, fine, max_bytes=arr.nbytes) == arr.nbytes
    finally:
        region.close()


def test_a_reply_naming_the_rest_of_the_region_fails_the_speed_check_and_is_not_copied(tmp_path):
    """The shared region is 1 GiB of address space: a student's output reference spanning the rest
    of it once made the grader copy it all (2 GiB peak, outside every cgroup). The student's copies
    are bounded by twice the reference's, plus 1 MiB: the check fails, its honest twin passes."""
    import resource

    module = SOLUTION + dedent("""

        from jaxlings.worker import shm as _shm

        _honest_put = _shm.Region.put


        def _put(self, arr, offset, end):
            ref, after = _honest_put(self, arr, offset, end)
            return {"$shm": [offset, "uint8", [self.size - offset]]}, self.size


        _shm.Region.put = _put
    """)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    test = speed_result(write_submission(tmp_path / "attack", {"jit_basics": module}), "jit_basics.affine")
    assert test.score == 0 and "bytes allowed" in test.output, test.output
    grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak  # KiB; the copy would have been ~1 GiB
    assert grew < 512 << 10, grew
    honest = speed_result(write_submission(tmp_path / "honest", {"jit_basics": SOLUTION}), "jit_basics.affine")
    assert "malformed" not in honest.output and honest.extra_data.get("ratio") is not None, honest.output

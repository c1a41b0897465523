"""Grading on a device, played on the CPU (`grade grade --device exclusive`, `jaxlings.grading.device`):
CI has no accelerator, so the rules it grades by there run here with the CPU as the device: one
process holds it at a time, the reference's timed work first in one trusted process, then the
student's speed rounds in one process while the rest of each topic is graded on the host's CPU,
inputs made on the device, outputs committed to inside the window.

What a real TPU adds is measured there (benchmarks/device_survey.py, benchmarks/device_check.py).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import logging
import shutil
import subprocess
import sys

import pytest

from helpers.grading import SOLUTIONS, TEST_LIMITS, crafted_source, short_of_full_marks, write_submission
from jaxlings import public
from jaxlings.grading import device, engine, topics
from jaxlings.grading.results import Result


def on_device(
    folder,
    names: list[str],
    generates: bool = False,
    serial_bits: bool = False,
    jobs: int = 2,
    compiles_ahead: bool = True,
) -> Result:
    """`folder` graded in hidden mode with the CPU as an exclusive device; with `generates`, speed
    rounds make their inputs on it as on an accelerator (`Device.generates`); with `serial_bits`,
    every worker draws random bits as on an accelerator (`Device.serial_bits`); without
    `compiles_ahead`, nothing is compiled ahead of its check (`Device.compiles_ahead`)."""
    exclusive = device.resolve("exclusive")
    assert exclusive is not None
    return engine.grade(
        folder,
        topics.resolve(names),
        reference_dir=SOLUTIONS,
        limits=TEST_LIMITS,
        jobs=jobs,
        device=dataclasses.replace(
            exclusive, generates=generates, serial_bits=serial_bits, compiles_ahead=compiles_ahead
        ),
    )


def statuses(result: Result, topic: str) -> dict[str, str]:
    """Each test's status, the timed ones' as `short_of_full_marks` reads them (their noise aside)."""
    noisy = short_of_full_marks(result)
    return {t.name: "failed" if t.name in noisy else "passed" for t in result.tests if t.topic == topic}


def assert_one_holder_at_a_time(result: Result) -> None:
    holders = result.extra_data["device"]["holders"]
    spans = sorted((h["at"], h["until"]) for h in holders)
    assert all(end <= start for (_, end), (start, _) in itertools.pairwise(spans)), holders


@pytest.fixture(scope="module")
def jit_basics_on_device() -> Result:
    return on_device(SOLUTIONS, ["jit_basics", "sharding"])


def test_a_topic_on_the_device_gets_the_verdicts_it_gets_on_the_cpu(jit_basics_on_device, graded_solutions):
    """The reference graded with the CPU as a device: every test as in the ordinary grading
    (speed within its noise allowance: `short_of_full_marks`), in two openings of the device."""
    for topic in ("jit_basics", "sharding"):
        assert statuses(jit_basics_on_device, topic) == statuses(graded_solutions, topic)
    assert not short_of_full_marks(jit_basics_on_device)
    record = jit_basics_on_device.extra_data["device"]
    assert record["kind"] == "cpu" and record["topics"] == ["jit_basics"]  # sharding: on the host's CPU
    assert [h["who"] for h in record["holders"]] == ["reference", "student"] and record["opens"] == 2
    assert_one_holder_at_a_time(jit_basics_on_device)
    speed = {t.exercise: t for t in jit_basics_on_device.tests if t.check == "speed"}
    assert "inputs sent to the outputs' digest" in speed["affine"].output


def test_inputs_made_on_the_device_give_the_same_verdicts(tmp_path):
    """As on an accelerator: each round's inputs made on the device from a key, the CPU's copy of
    the best round made again from it (the two inputs' digests equal, or the grader says so)."""
    result = on_device(SOLUTIONS, ["at_updates.histogram", "jit_basics.bce_fast"], generates=True)
    assert not short_of_full_marks(result)
    speed = [t for t in result.tests if t.check == "speed"]
    assert len(speed) == 2 and all("inputs made on the device to the outputs' digest" in t.output for t in speed)


def test_a_speed_check_declared_for_the_cpu_is_timed_there_and_still_judges(tmp_path):
    """`static_args.cached_solve` is timed on the host's CPU on a machine with a device
    (`Speed.platform`): the solve that runs on every call loses the speed points there, on the
    CPU's clock, and the device is never opened for it."""
    source = crafted_source("static_args__one_fault_each")
    result = on_device(write_submission(tmp_path / "faulty", {"static_args": source}), ["static_args.cached_solve"])
    speed = next(t for t in result.tests if t.check == "speed")
    assert speed.status == "failed" and speed.extra_data["ratio"] > 4, speed.output
    assert speed.extra_data["backend"] == "cpu" and speed.extra_data["size"] == 2048, speed.extra_data
    assert result.extra_data["device"]["opens"] == 0, result.extra_data["device"]


PARTITIONABLE_BITS = """
import jax

jax.config.update("jax_threefry_partitionable", True)  # JAX's default, whatever the grader set
"""


@pytest.mark.parametrize("serial", [False, True])
def test_both_sides_draw_their_random_bits_alike(tmp_path, serial):
    """Hidden grading on an accelerator sets the serial threefry layout in every worker
    (`device.SERIAL_BITS`: a TPU compiles the default slowly): the reference's draws follow it,
    so the solution keeps full marks, and a module that forces JAX's default back draws other
    numbers than the reference, which `correct` sees."""
    source = (SOLUTIONS / "prng.py").read_text()
    forced = write_submission(tmp_path / "forced", {"prng": PARTITIONABLE_BITS + source})
    names = ["prng.monte_carlo_pi"]
    assert not short_of_full_marks(on_device(SOLUTIONS, names, serial_bits=serial))
    correct = next(t for t in on_device(forced, names, serial_bits=serial).tests if t.check == "correct")
    assert (correct.status == "failed") == serial, correct.output
    exclusive = device.resolve("exclusive")
    assert exclusive is not None and not exclusive.for_hidden().serial_bits  # the CPU played as a device: JAX's default


def test_a_faulty_submission_fails_the_same_checks_on_the_device(tmp_path):
    """Every untimed check alike; a speed check far off the band's start (x5 or more) on one
    side is clearly slow on the other (x2 or more, short of full marks): its exact reading moves
    with the machine (`bce_fast` run eagerly reads x3-x5 on either side, `affine`'s loop x8-x10)."""
    folder = write_submission(tmp_path / "faulty", {"jit_basics": crafted_source("jit_basics__one_fault_each")})
    cpu = engine.grade(folder, topics.resolve(["jit_basics"]), reference_dir=SOLUTIONS, limits=TEST_LIMITS)
    dev = on_device(folder, ["jit_basics"])
    untimed = {name for name in statuses(cpu, "jit_basics") if not name.endswith(":speed")}
    assert {n: s for n, s in statuses(dev, "jit_basics").items() if n in untimed} == {
        n: s for n, s in statuses(cpu, "jit_basics").items() if n in untimed
    }
    assert any(status == "failed" for status in statuses(dev, "jit_basics").values())

    def ratios(result: Result) -> dict[str, float]:
        return {t.name: t.extra_data.get("ratio") or 0 for t in result.tests if t.check == "speed"}

    def far_off(result: Result) -> set[str]:
        return {name for name, ratio in ratios(result).items() if ratio >= 5}

    def slow(result: Result) -> set[str]:
        return {name for name, ratio in ratios(result).items() if ratio >= 2} & short_of_full_marks(result)

    # One side at least reads a check far off (CI's runs: affine x6.8 on the CPU and x4.8 on the
    # device in one grading), and whatever is far off on either side is clearly slow on both.
    assert far_off(cpu) | far_off(dev), (ratios(cpu), ratios(dev))
    both = far_off(cpu) | far_off(dev)
    assert both <= slow(dev) and both <= slow(cpu), (ratios(cpu), ratios(dev))


@dataclasses.dataclass
class CpuAsAccelerator(device.Device):
    """The CPU played as an accelerator, for the rules that only an accelerator brings into play
    (its tolerance, `device.TOLERANCE`); its workers stay on the CPU."""

    @property
    def accelerator(self) -> bool:
        return True

    def env(self, on_device: bool) -> dict[str, str]:
        return {"JAX_PLATFORMS": "cpu", **(device.SERIAL_BITS if self.serial_bits else {})}


SCALED_GRADIENT = """
_global_norm = global_norm


@jax.custom_jvp
def global_norm(tree):
    return _global_norm(tree)


@global_norm.defjvp
def _scaled(primals, tangents):
    out, tangent = jax.jvp(_global_norm, primals, tangents)
    return out, tangent * 1.002
"""

SCALED_AT_SPEED_SIZE = """
_affine = affine


def affine(x, W, b):
    out = _affine(x, W, b)
    return out * 1.002 if x.shape[0] >= 384 else out  # 0.2% off on the speed workload only
"""


def played_accelerator(widened: bool, monkeypatch: pytest.MonkeyPatch) -> device.Device:
    """The CPU as an accelerator whose tolerance is 1% (`widened`) or none beyond each exercise's."""
    monkeypatch.setitem(device.TOLERANCE, "cpu", (1e-2, 1e-3) if widened else (0.0, 0.0))
    exclusive = device.resolve("exclusive")
    assert exclusive is not None
    return CpuAsAccelerator(exclusive.kind, exclusive.lease, exclusive.lock, generates=False)


@pytest.mark.parametrize("widened", [False, True])
def test_checks_compare_at_the_tolerance_of_where_they_ran(tmp_path, monkeypatch, widened):
    """In hidden grading on an accelerator only the speed rounds run on the device: their outputs
    are compared at the device's tolerance, every other check's at the exercise's own, on the
    host's CPU. Outputs 0.2% off on the speed workload alone fail `speed` at the spec's tolerance
    and pass at an accelerator's of 1%; a gradient 0.2% off fails `grad` either way."""
    folder = write_submission(
        tmp_path / "scaled",
        {
            "pytrees": (SOLUTIONS / "pytrees.py").read_text() + SCALED_GRADIENT,
            "jit_basics": (SOLUTIONS / "jit_basics.py").read_text() + SCALED_AT_SPEED_SIZE,
        },
    )
    result = engine.grade(
        folder,
        topics.resolve(["pytrees.global_norm", "jit_basics.affine"]),
        reference_dir=SOLUTIONS,
        limits=TEST_LIMITS,
        jobs=1,
        device=played_accelerator(widened, monkeypatch),
    )
    by_check = {t.check: t for t in result.tests}
    assert by_check["grad"].status == "failed", by_check["grad"].output
    assert ("the timed output is wrong" in by_check["speed"].output) != widened, by_check["speed"].output
    assert all(t.status == "passed" for t in result.tests if t.check in ("correct", "jit"))


@pytest.mark.parametrize("widened", [False, True])
def test_a_public_run_on_an_accelerator_compares_every_check_at_its_tolerance(tmp_path, monkeypatch, widened):
    """`grade check` on a student's own accelerator runs the whole topic there: every check
    compares at the device's tolerance, `grad`'s own included (the TPU's first run failed
    `loops.rnn_loss`'s gradient 3e-6 off at the spec's 1e-4 + 1e-6): a gradient 0.2% off fails
    at the spec's tolerance and passes at an accelerator's of 1%."""
    folder = write_submission(
        tmp_path / "scaled", {"pytrees": (SOLUTIONS / "pytrees.py").read_text() + SCALED_GRADIENT}
    )
    result = engine.grade(
        folder,
        topics.resolve(["pytrees.global_norm"], public=True),
        public=True,
        answers=public.replay,
        limits=TEST_LIMITS,
        device=played_accelerator(widened, monkeypatch),
    )
    grad = next(t for t in result.tests if t.check == "grad")
    assert (grad.status == "passed") == widened, grad.output
    assert all(t.status == "passed" for t in result.tests if t.check != "grad")


WRITTEN_DIFFERENTLY = {
    "jit_basics": ["bce_fast", "affine"],
    "prng": ["dropout", "monte_carlo_pi"],
    "at_updates": ["histogram"],
    "static_args": ["cached_solve", "standardize"],
}
"""The speed-checked exercises of tests/submissions/<topic>__written_differently.py."""


def test_right_answers_written_differently_lose_nothing_on_the_device(tmp_path):
    """Right functions written otherwise than the reference (`einsum` for `@`, the stable loss
    summed in another order, a product for a `where`, a bincount for the scatter-add, ...) keep every point
    where their speed rounds run on the device and those outputs are compared with the
    reference's on the CPU (on the TPU: `bash benchmarks/on_tpu.sh written`)."""
    folder = write_submission(
        tmp_path / "written", {t: crafted_source(f"{t}__written_differently") for t in WRITTEN_DIFFERENTLY}
    )
    names = [f"{t}.{e}" for t, exercises in WRITTEN_DIFFERENTLY.items() for e in exercises]
    result = on_device(folder, names)
    assert {t.exercise for t in result.tests if t.check == "speed"} == {n.split(".")[1] for n in names}
    assert not short_of_full_marks(result), [t.output for t in result.tests if t.score < t.max_score]


SLOW_FIRST_TRACE = """
import time as _time

_bce_fast, _slept = bce_fast, []


def bce_fast(z, y):
    if z.size >= 1 << 16 and not _slept:  # the speed workload's first call: compiling slowly
        _slept.append(_time.sleep(12))
    return _bce_fast(z, y)
"""


def test_a_device_rounds_first_call_may_compile_for_a_while(tmp_path):
    """The first round of a device's speed check compiles the student's function and the
    grader's own programs, which the reference may have found cached (on the TPU its warm-up
    took about a second, and 20 times it stopped the student's): 12 s of compiling, past the
    CPU's 10 s floor, still gets full marks there, also where nothing was compiled ahead."""
    source = (SOLUTIONS / "jit_basics.py").read_text() + SLOW_FIRST_TRACE
    folder = write_submission(tmp_path / "slow", {"jit_basics": source})
    result = on_device(folder, ["jit_basics.bce_fast"], compiles_ahead=False)
    speed = next(t for t in result.tests if t.check == "speed")
    assert speed.name not in short_of_full_marks(result), speed.output


COMPILED_AHEAD = """
import os as _os
import sys as _sys
import time as _time

_MARK = {marker!r}
if "jaxlings_device" not in _sys.modules:  # a worker on the host's CPU: the device's round goes first
    for _ in range(1200):
        if _os.path.exists(_MARK):
            break
        _time.sleep(0.05)

_bce_fast = bce_fast
_seen = set()


def bce_fast(z, y):
    if z.size >= 1 << 16:  # the speed workload (timed as called: concrete arrays)
        open(_MARK, "a").close()
        mark = (float(z[0, 0]), float(z[-1, -1]), float(y[0, 0]))
        if mark in _seen or None in _seen:  # inputs it had before: wrong from then on
            _seen.add(None)
            return _bce_fast(z, y) + 1.0
        _seen.add(mark)
    return _bce_fast(z, y)
"""


@pytest.mark.parametrize("generates", [False, True])
def test_the_students_functions_compile_ahead_on_inputs_no_timed_round_gets(tmp_path, caplog, generates):
    """As soon as the student's process on the device opens, it runs each written speed-checked
    function once at the speed size (`device_grading.compile_ahead`), on inputs drawn from a seed
    of their own: a module that answers wrongly, from then on, once it meets inputs a second time
    (a memo would profit there) keeps its speed points, inputs sent or made on the device. Its
    host workers wait at import for the device's first call, so that round comes first."""
    caplog.set_level(logging.INFO, logger="jaxlings.grading")
    source = (SOLUTIONS / "jit_basics.py").read_text() + COMPILED_AHEAD.format(marker=str(tmp_path / "first-call"))
    folder = write_submission(tmp_path / "ahead", {"jit_basics": source})
    result = on_device(folder, ["jit_basics.bce_fast"], generates=generates)
    ahead = [r.getMessage().split(":")[0] for r in caplog.records if "compiled ahead in" in r.getMessage()]
    assert ahead == ["student jit_basics.bce_fast"]
    # the check's first round finds everything compiled (by the process's word: a log line's)
    rounds = [m for m in (r.getMessage() for r in caplog.records) if m.startswith("jit_basics.bce_fast: ")]
    rounds = [m for m in rounds if "their windows" in m]
    assert len(rounds) == 1 and "compiling 0 program(s)" in rounds[0], rounds
    speed = next(t for t in result.tests if t.check == "speed")
    assert speed.score > 0 and "wrong" not in speed.output, speed.output
    assert result.extra_data["device"]["opens"] == 2


def test_outputs_made_after_the_window_earn_no_speed_points(tmp_path, jit_basics_on_device):
    """A module that replies to a device round at once and computes its outputs after the clock
    stopped (tests/submissions/jit_basics__attack_late_outputs.py) fails every speed check there;
    beside it the reference, its honest twin, passes them."""
    folder = write_submission(tmp_path / "late", {"jit_basics": crafted_source("jit_basics__attack_late_outputs")})
    result = on_device(folder, ["jit_basics"])
    speed = [t for t in result.tests if t.check == "speed"]
    assert speed and all(t.score == 0 for t in speed)
    assert all("not those its reply committed to inside the window" in t.output for t in speed), [
        t.output for t in speed
    ]
    assert all(t.status == "passed" for t in result.tests if t.check in ("correct", "jit"))
    assert all(t.score > 0 for t in jit_basics_on_device.tests if t.check == "speed")


DIES_ON_THE_DEVICE = """
import os as _os
import sys as _sys

_dropout = dropout


def dropout(key, x, rate):
    if "jaxlings_device" in _sys.modules:  # the device's one process, not the host's workers
        _os._exit(9)
    return _dropout(key, x, rate)
"""


def test_a_function_that_kills_its_process_on_the_device_costs_its_check_only(tmp_path):
    """The student's one process on the device dies in `dropout`'s first speed round: that check
    scores 0 with the reason, its other checks (on the host's CPU) pass, and the next speed check
    gets a fresh process (a third opening of the device)."""
    folder = write_submission(tmp_path / "dies", {"prng": (SOLUTIONS / "prng.py").read_text() + DIES_ON_THE_DEVICE})
    result = on_device(folder, ["prng.dropout", "prng.monte_carlo_pi"], jobs=1)
    speed = next(t for t in result.tests if t.name == "prng.dropout:speed")
    assert speed.score == 0 and "exited with status 9" in speed.output, speed.output
    assert short_of_full_marks(result) == {"prng.dropout:speed"}
    # the function killed the process compiled ahead too, or its check went first: once more then
    holders = [h["who"] for h in result.extra_data["device"]["holders"]]
    assert holders[0] == "reference" and set(holders[1:]) == {"student"} and len(holders) in (3, 4), holders
    assert_one_holder_at_a_time(result)


def grade_cli(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """`grade ARGS` in a process of its own, without the sandbox."""
    command = [sys.executable, "-m", "jaxlings", "grade", *args, "--sandbox", "off"]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout)


def test_grade_grade_takes_the_device_setting(tmp_path):
    folder = write_submission(tmp_path / "one", {"prng": (SOLUTIONS / "prng.py").read_text()})
    run = grade_cli(str(folder), "-t", "prng.derive_keys", "--device", "exclusive", "--json", str(tmp_path / "r.json"))
    assert run.returncode == 0, run.stdout + run.stderr
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["extra_data"]["device"]["topics"] == ["prng"] and doc["score"] == doc["max_score"]
    assert doc["extra_data"]["device"]["opens"] == 0  # no speed check: nothing of it runs on the device
    wrong = grade_cli(str(folder), "-t", "prng", "--device", "tpuu", timeout=120)
    assert wrong.returncode == 2 and "the device setting must be one of auto, cpu, exclusive, tpu, gpu" in wrong.stdout
    shutil.rmtree(folder)

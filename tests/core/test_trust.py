"""Trusted verdicts: a hostile student's submission gains nothing, and every run completes.

Each test grades crafted modules from tests/submissions/<topic>__attack_<name>.py, with the
sandbox on, and only the exercise the module attacks. Most modules hold a line
`ATTACK = True`; the test also grades the same file with `ATTACK = False`, its *honest twin*:
the same work (often deliberately slow), done in the open. "Gains nothing" compares the two
scores of one test run, never a time against a threshold: the attack may score no more than
its twin, within a quarter of the points that rest on a time (all of `speed`'s, half of
`vmc`'s), where two runs of identical code differ by up to ~20% in time; above that only when
the clock read at least half the twin's time for the attack (the reference, timed anew in each
grading, moved the ratio; hidden work would read a fraction). Every result must
also be complete: every test of the exercise present, each with a message. The modules find
the grader's objects the way a hostile student would (the worker's request handler through
gc, its wire module in sys.modules, the reply pipe up the stack or in /proc/self/fd), and
fall back to plain (honest) behaviour where the worker has no such object.

What each test attacks (DESIGN.md, "The grading boundary"; issue "trusted verdicts"), and the
module it grades (tests/submissions/...__attack_*.py):

1. Work outside the timed window.
   - lazy_output_leaf (jit_basics__attack_lazy_leaf): `affine` returns an object that does the
     slow work in `__array__` / `__jax_array__`, when the worker converts it after the clock.
   - lazy_leaf_behind_a_posing_jit (at_updates__attack_lazy_leaf): `histogram` poses as a jit
     (`lower`, `trace`), so the harness calls it as it is, and returns such a lazy object to
     the jitted speed check.
   - lazy_rbm_parameters (ising__attack_lazy_vmc): the same on the `vmc` check; the (honest,
     4x slow) training runs when the parameters are converted.
   - early_forged_go_reply (jit_basics__attack_early_reply): a well-formed `{"ok": true}` frame
     written on the inherited reply pipe before the timed work; the real reply dropped.
   - work_while_staging (jit_basics__attack_stage_work): the harness's `stage` wrapped, so the
     answer is computed on the staged inputs before the timed `go`.
   - unblocked_dispatch (jit_basics__attack_unblocked): the harness's `block_until_ready`
     replaced: the call replies while XLA still computes.
   - precompiled_family (training__attack_precompiled_family): `train_step` runs eagerly, and
     threads at import compile the jitted step for the public stream family's batch sizes, so
     no call of the `compiles` stream compiles in its window; the stream now runs on workers of
     their own whose CPU outside the windows, from their start, is weighed against the
     reference's.
   - speed_size_only (static_args__attack_speed_size): `cached_solve` skips its work at the
     speed workload's size only, where every timed call is a cache hit; the untimed twin at
     that size (a miss, `Speed.twin`) fails it, and no ratio reaches the leaderboard.
2. CPU time the clock does not see: cpu_in_vanished_thread_or_child
   (at_updates__attack_hidden_cpu): the work runs in a thread, or in a child forked by a
   helper process, that has ended when the grader reads the CPU clock; and
   never_sleeping_worker (at_updates__attack_busy_poll): the worker's thread busy-polls its
   pipe, so the kernel charges its time only at scheduler ticks.
3. Forged structural facts.
   - posing_jit_hides_a_callback (at_updates__attack_fake_jit): an object with `lower`/`trace`
     shows a clean (slow) program while its calls run a fast `pure_callback`; its twin, the
     same two faces in a plain function, is jitted, and so run and timed, by the grader.
   - scrubbed_facts (at_updates__attack_scrub_facts): every `op_*` of the harness wrapped so
     that its replies lose their callbacks, gain a scatter-add, and never re-trace.
   - deaf_compile_counter (static_args__attack_no_listeners): `jax.monitoring` listeners
     cleared at import and at every trace, so compilations go uncounted.
   - slow_replay (jit_basics__attack_slow_replay): the listeners silenced, a compilation on
     every call, and each replayed call answered from a memo after burning its first run's
     CPU time, so the replay looks like a call that is slow every time.
   - key_reuse_checker_switched_off (prng__attack_key_reuse_off): `jax.debug_key_reuse(False)`
     around the function's body, or the harness's reference to the checker replaced.
4. Output structure taken on trust: replies_without_leaves (at_updates__attack_no_leaves):
   outputs sent with the reference's treedef and no leaves (a stub that scored 13/14 on
   at_updates).
5. Malformed replies fail a check, never the run: malformed_replies, malformed_facts,
   malformed_timed_outputs (at_updates__attack_malformed): replies (all, or those carrying the
   jit check's facts or the timed outputs) without their payload, with array references past
   the table, bad `$d` nodes, unknown nodes, wrong types, bad leaves, bad JSON, ...
6. A dead worker is noticed: dead_worker_with_open_pipe (at_updates__attack_dead_worker): the
   worker exits while a forked child holds its reply pipe open; the check fails in seconds,
   not at the 90 s deadline, with the sandbox and without it.
7. The sandbox's walls: tmpfs_outside_the_memory_cap (at_updates__attack_fill_tmp: 1.5 GiB
   into the sandbox's /tmp under a 768 MiB cap); grader_files_unreadable
   (at_updates__attack_read_grader: the topic specs with their hidden cases, or the
   solutions); unprivileged_in_the_sandbox (at_updates__attack_privileged: root or
   capabilities inside); sandbox_state_recorded (the honest solution: `grade grade --sandbox
   off`, or on, is written into the result's `extra_data`).
"""

from __future__ import annotations

import json
import time

import pytest

from helpers.grading import (
    SOLUTIONS,
    assert_complete,
    assert_gains_nothing,
    attack_and_twin,
    extra_data,
    grade_dir,
    grade_source,
    module_source,
    needs_bwrap,
    score_of,
    synthetic_result,
    table,
)
from jaxlings.grading import draws
from jaxlings.grading.results import Result, measured_ratio
from jaxlings.isolation import Limits

# every test grades under the sandbox (one also without it): hostile modules graded whole, full suite only
pytestmark = [needs_bwrap, pytest.mark.slow]

AFFINE = ["jit_basics.affine"]
HISTOGRAM = ["at_updates.histogram"]


# -- the comparison itself ------------------------------------------------------------------


def histogram_result(speed_score: float, student_ms: float, reference_ms: float) -> Result:
    """A graded at_updates.histogram with full correct and jit marks and the given speed test."""
    speed = {"student_ms": student_ms, "reference_ms": reference_ms, "ratio": student_ms / reference_ms}
    return synthetic_result(
        ("at_updates.histogram:correct", 2, 2, {}),
        ("at_updates.histogram:jit", 1, 1, {}),
        ("at_updates.histogram:speed", speed_score, 2, speed),
    )


def test_a_speed_gain_from_the_reference_s_noise_is_no_attack():
    # Stop 19's CI: the same reference read 5.36 ms in one grading and 3.55 ms in the other.
    attack, honest = histogram_result(1.812, 9.6, 5.36), histogram_result(1.16, 11.8, 3.55)
    assert_gains_nothing(attack, honest, HISTOGRAM)


def test_a_speed_gain_from_work_the_clock_missed_is_caught():
    attack, honest = histogram_result(2.0, 1.2, 3.55), histogram_result(1.16, 11.8, 3.55)
    with pytest.raises(AssertionError, match="histogram:speed gained points"):
        assert_gains_nothing(attack, honest, HISTOGRAM)
    untimed = histogram_result(1.16, 11.8, 3.55)
    untimed.tests[1].score, honest.tests[1].score = 1, 0  # an untimed gain has no excuse
    with pytest.raises(AssertionError, match="histogram:jit gained points"):
        assert_gains_nothing(untimed, honest, HISTOGRAM)


# -- 1. work outside the timed window -------------------------------------------------------


def test_lazy_output_leaf_does_its_work_inside_the_clock(tmp_path):
    attack, honest = attack_and_twin(tmp_path, "jit_basics__attack_lazy_leaf", AFFINE)
    assert_gains_nothing(attack, honest, AFFINE)


@pytest.mark.slow
def test_lazy_leaf_behind_a_posing_jit_gains_nothing(tmp_path):
    attack, honest = attack_and_twin(tmp_path, "at_updates__attack_lazy_leaf", HISTOGRAM)
    assert_gains_nothing(attack, honest, HISTOGRAM)


@pytest.mark.slow
def test_lazy_rbm_parameters_are_trained_inside_the_clock(tmp_path):
    names = ["ising.vmc_ground_state"]
    attack, honest = attack_and_twin(tmp_path, "ising__attack_lazy_vmc", names)
    assert_gains_nothing(attack, honest, names)


def test_an_early_forged_go_reply_does_not_stop_the_clock(tmp_path):
    attack, honest = attack_and_twin(tmp_path, "jit_basics__attack_early_reply", AFFINE)
    assert_gains_nothing(attack, honest, AFFINE)


def test_work_done_while_inputs_are_staged_is_not_free(tmp_path):
    attack, honest = attack_and_twin(tmp_path, "jit_basics__attack_stage_work", AFFINE)
    assert_gains_nothing(attack, honest, AFFINE)


def test_replying_before_the_device_is_done_gains_nothing(tmp_path):
    attack, honest = attack_and_twin(tmp_path, "jit_basics__attack_unblocked", AFFINE)
    assert_gains_nothing(attack, honest, AFFINE)


def test_code_that_runs_only_at_the_speed_size_is_checked_there(tmp_path):
    names = ["static_args.cached_solve"]
    attack, honest = attack_and_twin(tmp_path, "static_args__attack_speed_size", names)
    assert_gains_nothing(attack, honest, names)
    speed = next(t for t in attack.tests if t.check == "speed")
    assert speed.score == 0 and "the timed rounds do not make" in speed.output, table(attack)
    assert measured_ratio("speed", speed.extra_data) is None  # nothing for the leaderboard
    assert score_of(attack, "static_args.cached_solve:correct") == score_of(honest, "static_args.cached_solve:correct")
    honest_speed = next(t for t in honest.tests if t.check == "speed")
    assert measured_ratio("speed", honest_speed.extra_data) is not None, table(honest)


def test_a_stream_family_compiled_at_import_is_counted(tmp_path):
    """Issue 41, class 3: threads at import compiled the stream's programs before any window, and
    every call was a lookup (the `compiles` point, which the eager twin does not get). Here the
    family is cut to the batch size this seed draws and five others (the whole family, 48
    sizes, costs ~70 s of CPU to compile; the bound that catches it does not depend on that)."""
    names, seed = ["training.train_step"], 0x5EED
    drawn = int(draws.generator(seed, "training", "train_step", "compiles", 0).integers(16, 64))
    sizes = tuple(sorted({drawn, 16, 17, 18, 19, 20}))
    graded = {}
    for which, attack in (("attack", True), ("honest", False)):
        source = module_source("training__attack_precompiled_family", ATTACK=attack, BATCH_SIZES=sizes)
        folder = tmp_path / which
        folder.mkdir()
        (folder / "training.py").write_text(source)
        graded[which] = grade_dir(folder, names, isolate=True, seed=seed)
    attack, honest = graded["attack"], graded["honest"]
    assert_gains_nothing(attack, honest, names)
    figures = extra_data(attack, "training.train_step:compiles")
    assert figures["advisory"]["compiles"] == 0 and figures["compiles"] == 0, figures  # no call compiled ...
    assert figures["untimed_excess_s"] > figures["untimed_allowed_s"], figures  # ... the work was done before
    said = next(t.output for t in attack.tests if t.name == "training.train_step:compiles")
    assert "outside the calls' windows" in said and "at import" in said, said
    twin = extra_data(honest, "training.train_step:compiles")
    assert twin["untimed_excess_s"] <= twin["untimed_allowed_s"], twin  # the eager twin fails on its weight


# -- 2. CPU time the clock does not see -----------------------------------------------------


@pytest.mark.parametrize("via", ["thread", "process"])
def test_cpu_time_of_a_vanished_thread_or_child_counts(tmp_path, via):
    attack, honest = attack_and_twin(tmp_path, "at_updates__attack_hidden_cpu", HISTOGRAM, VIA=via)
    assert_gains_nothing(attack, honest, HISTOGRAM)


def test_a_worker_that_never_sleeps_is_charged_its_work(tmp_path):
    """Read without freezing the group, a busy-polling worker doing twice the reference's work read
    0 ms of CPU and took full marks (issue 41, class 7); each reading now freezes the group."""
    attack, honest = attack_and_twin(tmp_path, "at_updates__attack_busy_poll", HISTOGRAM)
    assert_gains_nothing(attack, honest, HISTOGRAM)
    speed = next(t for t in attack.tests if t.check == "speed")
    assert speed.extra_data["clock"] != "cpu" or speed.extra_data["ratio"] > 1.0, speed.extra_data


# -- 3. forged structural facts -------------------------------------------------------------


@pytest.mark.slow
def test_an_object_posing_as_a_jit_is_judged_by_what_it_runs(tmp_path):
    attack, honest = attack_and_twin(tmp_path, "at_updates__attack_fake_jit", HISTOGRAM)
    assert_gains_nothing(attack, honest, HISTOGRAM)


def test_patching_the_harness_does_not_scrub_the_facts(tmp_path):
    names = ["at_updates.histogram"]
    attack, honest = attack_and_twin(tmp_path, "at_updates__attack_scrub_facts", names)
    assert_gains_nothing(attack, honest, names)
    assert score_of(attack, "at_updates.histogram:jit") == 0  # a pure_callback, and no scatter-add


def test_clearing_jax_monitoring_listeners_hides_no_compilation(tmp_path):
    names = ["static_args.create_filled"]
    attack, honest = attack_and_twin(tmp_path, "static_args__attack_no_listeners", names)
    assert_gains_nothing(attack, honest, names)
    assert score_of(attack, "static_args.create_filled:compiles") == 0  # 24 calls, 24 compilations


def test_a_slow_replay_hides_no_compilation(tmp_path):
    names = ["jit_basics.bce_fast"]
    attack, honest = attack_and_twin(tmp_path, "jit_basics__attack_slow_replay", names)
    assert_gains_nothing(attack, honest, names)
    figures = extra_data(attack, "jit_basics.bce_fast:compiles")
    assert figures["advisory"]["compiles"] == 0, figures  # the listeners are silenced ...
    assert figures["compiles"] == 12, figures  # ... and every call's replay took over half a compilation
    assert score_of(attack, "jit_basics.bce_fast:compiles") == 0


@pytest.mark.slow  # prng.derive_keys grades in ~10 s, twice
@pytest.mark.parametrize("how", ["wrapper", "harness"])
def test_switching_the_key_reuse_checker_off_gains_nothing(tmp_path, how):
    # Totals, not one test: key reuse may be judged in `key_reuse` or within `correct`.
    names = ["prng.derive_keys"]
    attack, honest = attack_and_twin(tmp_path, "prng__attack_key_reuse_off", names, HOW=how)
    assert_gains_nothing(attack, honest, names)
    shown = next(t for t in honest.tests if t.check == "key_reuse")
    assert shown.status == "failed" and "consumed" in shown.output, table(honest)  # the reuse is reported when shown


# -- 4. output structure taken on trust -----------------------------------------------------


def test_replies_with_the_treedef_and_no_leaves_score_nothing(tmp_path):
    names = ["at_updates.scatter_ops"]
    attack, honest = attack_and_twin(tmp_path, "at_updates__attack_no_leaves", names)
    assert_gains_nothing(attack, honest, names)
    assert score_of(attack, "at_updates.scatter_ops:correct") == 0


# -- 5. malformed replies fail a check, never the run ---------------------------------------

MALFORMED = [
    "no_out",
    "bad_index",
    "bad_dict",
    "unknown_node",
    "wrong_types",
    "bad_leaf",
    "bad_error",
    "not_a_dict",
    "bad_json",
    "bad_array",
]


@pytest.mark.parametrize("variant", MALFORMED)
def test_a_malformed_reply_fails_the_check_not_the_run(tmp_path, variant):
    names = ["at_updates.mask_fill"]
    result = grade_source(tmp_path, "at_updates", module_source("at_updates__attack_malformed", VARIANT=variant), names)
    assert_complete(result, names)
    assert result.score == 0, table(result)


@pytest.mark.parametrize("variant", ["no_out", "wrong_types", "bad_leaf"])
def test_malformed_facts_fail_the_jit_check_not_the_run(tmp_path, variant):
    names = ["at_updates.mask_fill"]
    source = module_source("at_updates__attack_malformed", VARIANT=variant, ONLY=("facts", "programs"))
    result = grade_source(tmp_path, "at_updates", source, names)
    assert_complete(result, names)
    assert score_of(result, "at_updates.mask_fill:jit") == 0, table(result)


@pytest.mark.parametrize("variant", ["no_out", "bad_index", "wrong_types"])
def test_malformed_timed_outputs_fail_the_speed_check_not_the_run(tmp_path, variant):
    names = ["at_updates.histogram"]
    source = module_source("at_updates__attack_malformed", VARIANT=variant, ONLY=("outs",))
    result = grade_source(tmp_path, "at_updates", source, names)
    assert_complete(result, names)
    assert score_of(result, "at_updates.histogram:speed") == 0, table(result)


# -- 6. a dead worker is noticed ------------------------------------------------------------


@pytest.mark.parametrize("isolate", [True, False], ids=["sandbox", "no_sandbox"])
def test_a_dead_worker_holding_its_pipe_open_through_a_child_is_noticed_at_once(tmp_path, isolate):
    # Under bubblewrap the worker's exit takes its PID namespace, the child included, down;
    # without it (`grade check`, `--sandbox off`) the child outlives the worker.
    names = ["at_updates.mask_fill"]
    folder = tmp_path / "submission"
    folder.mkdir()
    (folder / "at_updates.py").write_text(module_source("at_updates__attack_dead_worker"))
    t0 = time.monotonic()
    result = grade_dir(
        folder, names, isolate=isolate, limits=Limits(memory_bytes=3 << 30, output_bytes=256 << 10, call_timeout=90.0)
    )
    elapsed = time.monotonic() - t0
    assert_complete(result, names)
    assert result.score == 0, table(result)
    assert "did not finish in time" not in table(result), table(result)
    assert elapsed < 30, f"took {elapsed:.0f} s: the grader waited for the call's deadline\n{table(result)}"


# -- the sandbox's walls ---------------------------------------------------------------------


def test_tmpfs_writes_count_against_the_memory_cap(tmp_path):
    names = ["at_updates.mask_fill"]
    result = grade_source(
        tmp_path,
        "at_updates",
        module_source("at_updates__attack_fill_tmp"),
        names,
        limits=Limits(memory_bytes=768 << 20, output_bytes=256 << 10, call_timeout=60.0),
    )
    assert_complete(result, names)
    assert score_of(result, "at_updates.mask_fill:correct") == 0, (
        f"1.5 GiB went into /tmp under a 768 MiB cap\n{table(result)}"
    )


def test_the_sandbox_hides_the_topic_specs_and_the_solutions(tmp_path):
    names = ["at_updates.mask_fill"]
    result = grade_source(tmp_path, "at_updates", module_source("at_updates__attack_read_grader"), names)
    assert_complete(result, names)
    assert score_of(result, "at_updates.mask_fill:correct") == 0, f"the grader's files were readable\n{table(result)}"


def test_student_code_is_unprivileged_in_the_sandbox(tmp_path):
    names = ["at_updates.mask_fill"]
    result = grade_source(tmp_path, "at_updates", module_source("at_updates__attack_privileged"), names)
    assert_complete(result, names)
    assert score_of(result, "at_updates.mask_fill:correct") == 0, (
        f"root or capabilities in the sandbox\n{table(result)}"
    )


def _sandbox_entries(tree: object, path: str = "") -> list[tuple[str, object]]:
    """(path, value) of every key mentioning the sandbox (or isolation) in a JSON tree."""
    found = []
    if isinstance(tree, dict):
        for k, v in tree.items():
            here = f"{path}.{k}" if path else str(k)
            if "sandbox" in str(k).lower() or "isolat" in str(k).lower():
                found.append((here, v))
            found += _sandbox_entries(v, here)
    elif isinstance(tree, list):
        for i, v in enumerate(tree):
            found += _sandbox_entries(v, f"{path}[{i}]")
    return found


def _says(value: object, on: bool) -> bool:
    if isinstance(value, bool):
        return value is on
    if isinstance(value, str):
        words = ("on", "bubblewrap", "bwrap", "true", "yes", "isolated") if on else ("off", "none", "false", "no")
        return value.lower() in words
    if isinstance(value, dict):
        return any(_says(v, on) for k, v in value.items() if k in ("enabled", "on", "isolate", "mode", "state", "kind"))
    return False


@pytest.mark.parametrize("mode", ["off", "on"])
def test_the_sandbox_state_is_recorded_in_the_result(tmp_path, mode):
    from typer.testing import CliRunner

    from jaxlings.cli import app

    folder = tmp_path / "submission"
    folder.mkdir()
    (folder / "at_updates.py").write_text((SOLUTIONS / "at_updates.py").read_text())
    out = tmp_path / "results.json"
    run = CliRunner().invoke(
        app, ["grade", str(folder), "--topics", "at_updates.mask_fill", "--json", str(out), "--sandbox", mode]
    )
    assert run.exit_code == 0, run.output
    extra = json.loads(out.read_text())["extra_data"]
    entries = _sandbox_entries(extra)
    assert entries, f"extra_data does not say whether the sandbox was on: {extra}"
    assert any(_says(v, mode == "on") for _, v in entries), f"extra_data does not say the sandbox was {mode}: {entries}"

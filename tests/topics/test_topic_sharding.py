"""Topic `sharding`: the reference passes with the figures it should have, and each check fails
a submission that deserves it, and only that check.

Three crafted submissions (tests/submissions/sharding__*.py) carry one fault per function, or a
right answer written another way as a control (or, for `jax.pmap`, a fault that only advice
names: it costs no points); each is graded once per module. Checks that
count only once `correct` passes (`sharding`) show "not judged" when the values are wrong.
`sharded_train_step` has one file per fault (sharding__step_*.py), each graded for that exercise
alone (2 to 13 s each on a 2-core machine).
"""

from __future__ import annotations

import pytest

from helpers.grading import failing, grade_variant, reference_solutions, short_of_full_marks, verdicts

TOPIC = "sharding"


def _grade_variant(tmp_path_factory, variant: str, names: list[str] | None = None):
    return grade_variant(tmp_path_factory, TOPIC, variant, names)


@pytest.fixture(scope="module")
def reference(request):
    return reference_solutions(request, TOPIC)


@pytest.fixture(scope="module")
def one_fault_each(tmp_path_factory):
    return _grade_variant(tmp_path_factory, "one_fault_each")


@pytest.fixture(scope="module")
def more_faults(tmp_path_factory):
    return _grade_variant(tmp_path_factory, "more_faults")


@pytest.fixture(scope="module")
def pmap_and_one_pass(tmp_path_factory):
    return _grade_variant(
        tmp_path_factory, "pmap_and_one_pass", [f"{TOPIC}.shard_batch", f"{TOPIC}.global_standardize"]
    )


def failing_in(result, exercise: str) -> set[str]:
    """The checks of one exercise that did not get full marks."""
    return {n.split(":")[1] for n in failing(result) if n.startswith(f"{TOPIC}.{exercise}:")}


def extra(result, exercise: str, check: str) -> dict:
    return next(t.extra_data for t in result.tests if t.name == f"{TOPIC}.{exercise}:{check}")


def message(result, exercise: str, check: str) -> str:
    return verdicts(result)[f"{TOPIC}.{exercise}:{check}"][2]


def test_reference_gets_full_marks_on_eight_cpu_devices(reference):
    assert short_of_full_marks(reference) == set(), [t.output for t in reference.tests if t.score < t.max_score]
    assert reference.max_score == 25  # every point earned, within the clock's noise (above)
    platform = reference.extra_data["platform"]
    assert (platform["backend"], platform["device_count"]) == ("cpu", 8)


def test_reference_collectives_and_layouts(reference):
    collectives = {
        ex: extra(reference, ex, "jit")["collectives"]
        for ex in ("shard_batch", "data_parallel_linear", "global_standardize", "mlp_2d", "sharded_train_step")
    }
    assert collectives == {
        "shard_batch": {},
        "data_parallel_linear": {},
        "global_standardize": {"all-reduce": 2},
        "mlp_2d": {"all-reduce": 1},
        "sharded_train_step": {"all-reduce": 2},  # the loss's and the gradients' partial sums, combined
    }
    images, labels = extra(reference, "shard_batch", "sharding")["shardings"]
    assert images["spec"] == "('data', None, None, None)" and labels["spec"] == "('data',)"
    assert images["mesh"] == {"data": 8} and not images["replicated"]
    mlp = extra(reference, "mlp_2d", "sharding")["shardings"][0]
    assert (mlp["spec"], mlp["mesh"], mlp["devices"]) == ("('data', None)", {"data": 4, "model": 2}, 8)
    # new_params and new_opt_state (leaves in key order b1, b2, w1, w2) laid out alike, the loss replicated
    step = extra(reference, "sharded_train_step", "sharding")["shardings"]
    specs = ["('model',)", "(None,)", "(None, 'model')", "('model', None)"]
    assert [s["spec"] for s in step] == specs + specs + ["()"]
    assert [s["replicated"] for s in step] == [False, True, False, False] * 2 + [True]
    compiles = extra(reference, "sharded_train_step", "compiles")
    assert compiles["compiling_calls"] == [1] and compiles["advisory"]["compiles"] <= compiles["max_compiles"]


def test_replicated_output_fails_sharding_only(one_fault_each):
    assert failing_in(one_fault_each, "shard_batch") == {"sharding"}
    assert "replicated" in message(one_fault_each, "shard_batch", "sharding")


def test_gathering_the_input_batch_fails_jit_on_per_device_work(one_fault_each):
    assert failing_in(one_fault_each, "data_parallel_linear") == {"jit"}
    assert "FLOPs" in message(one_fault_each, "data_parallel_linear", "jit")
    figures = extra(one_fault_each, "data_parallel_linear", "jit")
    assert figures["flops"] > 4 * figures["reference_flops"]
    # the argument enters the program whole, so XLA compiles the "gather" into no collective
    assert figures["collectives"] == {}


def test_all_gather_inside_shard_map_fails_jit_only(one_fault_each):
    assert failing_in(one_fault_each, "global_standardize") == {"jit"}
    assert "all-gather" in message(one_fault_each, "global_standardize", "jit")
    assert extra(one_fault_each, "global_standardize", "jit")["collectives"] == {"all-gather": 1}


def test_gathering_hidden_activations_fails_jit_only(one_fault_each):
    assert failing_in(one_fault_each, "mlp_2d") == {"jit"}
    assert "all-gather" in message(one_fault_each, "mlp_2d", "jit")


def test_right_answers_written_another_way_pass(more_faults):
    # an Auto mesh with with_sharding_constraint and specs written in full; shard_map
    assert failing_in(more_faults, "shard_batch") == set()
    assert failing_in(more_faults, "data_parallel_linear") == set()


def test_local_statistics_fail_correct_only(more_faults):
    assert failing_in(more_faults, "global_standardize") == {"correct", "jit", "sharding"}
    assert "not judged" in message(more_faults, "global_standardize", "sharding")
    assert "differ" in message(more_faults, "global_standardize", "correct") or "off" in message(
        more_faults, "global_standardize", "correct"
    )


def test_unused_model_axis_fails_jit_on_per_device_work(more_faults):
    assert failing_in(more_faults, "mlp_2d") == {"jit"}
    assert "FLOPs" in message(more_faults, "mlp_2d", "jit")
    assert extra(more_faults, "mlp_2d", "jit")["collectives"] == {}


def test_pmap_keeps_the_points_with_advice(pmap_and_one_pass):
    # pmap is jit of shard_map now: its program is a shard_map's, laid out as asked; only the
    # student's own process can tell (advisory `pmap_calls`), so it is a note, not a fault
    assert failing_in(pmap_and_one_pass, "shard_batch") == set()
    assert "(advice, no points: the function uses jax.pmap" in message(pmap_and_one_pass, "shard_batch", "jit")
    assert extra(pmap_and_one_pass, "shard_batch", "jit")["advisory"]["pmap_calls"] >= 1


def test_one_pass_variance_fails_correct_on_features_far_from_zero(pmap_and_one_pass):
    assert failing_in(pmap_and_one_pass, "global_standardize") == {"correct", "jit", "sharding"}
    assert "features near 100" in message(pmap_and_one_pass, "global_standardize", "correct")


def test_layouts_compare_by_blocks_not_by_axis_names():
    # an Auto-mesh or pmap program keeps no axis names when exported: the trusted side runs it
    # on a mesh whose one axis is "devices"; the blocks it makes are what the task asks for
    from jaxlings.grading.checks.sharding import _blocks

    def layout(spec, mesh, replicated=False):
        return {"kind": "NamedSharding", "spec": spec, "mesh": mesh, "replicated": replicated, "devices": 8}

    rows = layout("('data', None, None, None)", {"data": 8})
    assert _blocks(rows) == _blocks(layout("('devices', None, None, None)", {"devices": 8}))
    assert _blocks(rows) != _blocks(layout("(None, None, None, None)", {"devices": 8}, replicated=True))
    assert _blocks(rows) != _blocks(layout("(None, 'devices', None, None)", {"devices": 8}))
    mlp = layout("('data', None)", {"data": 4, "model": 2})
    assert _blocks(mlp) != _blocks(layout("('model', None)", {"data": 4, "model": 2}))
    assert _blocks(mlp) != _blocks(layout("(('data', 'model'), None)", {"data": 4, "model": 2}))
    assert _blocks(layout("(('data', 'model'), None)", {"data": 4, "model": 2})) == _blocks(
        layout("('devices', None)", {"devices": 8})
    )


# -- sharded_train_step: one file per fault ---------------------------------------------------------------------

STEP = [f"{TOPIC}.sharded_train_step"]


@pytest.mark.slow  # seven submissions' sharded_train_step graded: about 50 s on a 2-core machine
@pytest.mark.parametrize(
    "variant, lost, check, words",
    [
        # the batch whole on every device: 4x the reference's FLOPs per device, nothing else differs
        ("step_batch_replicated", {"jit"}, "jit", ["FLOPs", "each device should compute only its own block"]),
        # the velocities replicated: gathered (an extra collective) and returned whole
        ("step_state_replicated", {"jit", "sharding"}, "sharding", ["`new_opt_state[", "replicated"]),
        # data parallel over all 8 devices, parameters replicated: the same work and collectives, other layouts
        ("step_data_parallel_only", {"sharding"}, "sharding", ["`new_params[", "replicated", "the task asks for"]),
        # no decorator: a step defined and jitted anew on every call
        ("step_jitted_every_call", {"compiles"}, "compiles", ["20 calls compiled", "at most 7 allowed"]),
        # the same, JAX's compilation events silenced: the grader's clock counts the compilations
        (
            "attack_step_deaf",
            {"compiles"},
            "compiles",
            ["took as long as a compilation", "whether or not JAX's events"],
        ),
        # `lr` static: every new learning rate compiles, and no program can be exported from shapes (so
        # no layout read either)
        ("step_static_lr", {"jit", "sharding", "compiles"}, "jit", ["marks argument 4 static"]),
        # the parameters moved by the old velocity: wrong values, nothing else judged
        ("step_stale_velocity", {"correct", "jit", "sharding", "compiles"}, "correct", ["`new_params["]),
    ],
)
def test_crafted_train_steps_fail_their_checks(tmp_path_factory, variant, lost, check, words):
    """Each fault of the sharded step loses the points it deserves and no other, with a message in
    the student's terms."""
    result = _grade_variant(tmp_path_factory, variant, STEP)
    assert failing_in(result, "sharded_train_step") == lost, [t.output for t in result.tests]
    text = message(result, "sharded_train_step", check)
    assert all(w in text for w in words), text
    if variant == "step_state_replicated":
        assert "all-gather" in message(result, "sharded_train_step", "jit")
    if variant == "step_stale_velocity":
        assert "not judged" in message(result, "sharded_train_step", "sharding")


def test_a_step_jitted_inside_with_its_shardings_takes_full_marks(tmp_path_factory):
    """The other form the lesson shows (an inner `jax.jit(step, in_shardings=..., out_shardings=...)`
    on the function's own mesh): its exported program names the mesh only in its module, which
    the trusted side reads to run it; every check passes."""
    result = _grade_variant(tmp_path_factory, "step_nested_jit", STEP)
    assert failing_in(result, "sharded_train_step") == set(), [t.output for t in result.tests]

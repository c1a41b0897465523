"""Topic `training`: the reference earns full marks, each crafted submission fails the checks it
deserves to fail and only those, and the `trains` check's bound separates working loops from
broken ones on every seed tried.

The crafted submissions are `tests/submissions/training__*.py`, each the reference with one
fault: `wrong_sign` (the step climbs), `stale_opt_state` (the step returns the state it was
given), `no_clipping` (Adam without the chain's clipping), `recompiles` (a new jit per call),
`undonated` (jitted without `donate_argnums`), `reinit_opt_state` (the loop makes a fresh
optimizer state every step) and `reuses_donated` (the loop keeps the parameters the first step
donated); for the classifier, `fixed_dropout_key` (train mode ignores its key), `dropout_in_eval`,
`batch_stats_in_eval`, `stats_not_updated` (train mode returns the running averages it was given),
and for its evaluation `accuracy_wrong_axis`, `loss_summed` and `eval_in_train_mode`; for the data
pipeline, `same_order_every_epoch`, `drops_last_batch`, `epoch_static` (jitted with the epoch
static), `mean_over_padding`, `mean_of_batch_means` and `eval_all_at_once` (right values, no loop
over the batches). Every verdict
here is a value, a count or a loss, never a time.

`adamw_step`'s: `adamw_unmasked` (decay on every parameter), `adamw_mask_inverted` (the biases
and the norm decayed, not the kernels), `adamw_l2_in_grad` (Adam with an L2 term in the
gradient), and `adamw_mask_tree`, right (the mask as a literal tree). `resume_training`'s:
`resume_fresh_opt_state` (trains on from a fresh optimizer state), `resume_drops_step` (the
batches from row 0), `resume_params_only` (the parameters alone restored),
`resume_ignores_checkpoint` (an attack: never reads the files), and `resume_checkpointer`,
right (another Orbax API).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from helpers.grading import (
    SOLUTIONS,
    SUBMISSIONS,
    TEST_LIMITS,
    TopicView,
    check_dir,
    crafted_source,
    grade_dir,
    grade_variant,
    needs_bwrap,
    reference_solutions,
    short_of_full_marks,
    submission_source,
)
from jaxlings.grading import engine, topics

TOPIC = "training"
VIEW = TopicView(TOPIC)
failed, message, data = VIEW.failed, VIEW.message, VIEW.data

BAND_RUNS = 6  # datasets and initial parameters per submission in the band tests
BAND_SEED = 2024


@pytest.fixture(scope="module")
def reference(request):
    return reference_solutions(request, TOPIC)


def test_reference_gets_full_marks(reference):
    assert short_of_full_marks(reference) == set(), [t.output for t in reference.tests if t.score < t.max_score]
    assert reference.max_score == 25  # every point earned, within the clock's noise (above)


def test_reference_step_donates_its_whole_state_and_compiles_once(reference):
    jit = data(reference, "train_step", "jit")
    # 4 parameters + 10 optimizer-state leaves donated; x and y are not
    assert (jit["n_inputs"], jit["donated_inputs"], jit["reference_donated_inputs"]) == (16, 14, 14)
    compiles = data(reference, "train_step", "compiles")
    assert compiles["compiles"] <= 1 and compiles["advisory"]["compiles"] == 1


def test_reference_loop_reaches_the_bound_with_room_to_spare(reference):
    trains = data(reference, "fit", "trains")
    assert len(trains["losses"]) == 2 and trains["losses"] == trains["reference_losses"]
    assert max(trains["losses"]) < trains["max_loss"] / 2 and min(trains["initial_losses"]) > 0.8


# -- the train step: one fault each -----------------------------------------------------------


@pytest.mark.slow  # five submissions' train_step graded: ~4 min on a 2-core CPU (recompiles alone ~100 s)
@pytest.mark.parametrize(
    "variant, expected",
    [
        ("wrong_sign", {"correct", "jit", "compiles", "speed"}),
        ("stale_opt_state", {"correct", "jit", "compiles", "speed"}),
        ("no_clipping", {"correct", "jit", "compiles", "speed"}),
        ("recompiles", {"jit", "compiles", "speed"}),
        ("undonated", {"jit"}),
    ],
)
def test_crafted_train_step_fails_its_checks(tmp_path_factory, variant, expected):
    names = [f"{TOPIC}.train_step"] + ([f"{TOPIC}.fit"] if variant == "undonated" else [])
    result = grade_variant(tmp_path_factory, TOPIC, variant, names)
    assert failed(result, "train_step") == expected, [t.output for t in result.tests]
    if variant == "undonated":  # two copies of the state, but the same arithmetic: the loop trains
        assert failed(result, "fit") == set()
    if "correct" in expected:
        assert "not judged until the function is correct" in message(result, "train_step", "speed")
    if variant in ("recompiles", "undonated"):
        jit = message(result, "train_step", "jit")
        assert "donates none of its 16 inputs" in jit and "donate_argnums" in jit
        assert data(result, "train_step", "jit")["donated_inputs"] == 0
    if variant == "recompiles":
        assert data(result, "train_step", "compiles")["advisory"]["compiles"] == 20


# -- the classifier (Dropout, BatchNorm) and its evaluation: one fault each ---------------------


CLASSIFIER = [f"{TOPIC}.classify", f"{TOPIC}.eval_step"]


@pytest.mark.slow  # seven submissions' classify and eval_step graded: ~3 min on a loaded 2-core CPU
@pytest.mark.parametrize(
    "variant, classify, eval_step, what",
    [
        ("fixed_dropout_key", {"correct"}, set(), "`logits`"),
        ("dropout_in_eval", {"correct"}, {"correct"}, "`logits`"),
        ("batch_stats_in_eval", {"correct"}, {"correct"}, "`logits`"),
        ("stats_not_updated", {"correct"}, set(), "`new_batch_stats"),
        ("accuracy_wrong_axis", set(), {"correct"}, "accuracy"),
        ("loss_summed", set(), {"correct"}, "loss"),
        ("eval_in_train_mode", set(), {"correct"}, ""),
    ],
)
def test_crafted_classifier_fails_its_checks(tmp_path_factory, variant, classify, eval_step, what):
    """A fault in a mode of `classify` fails its `correct` on the cases of that mode (an eval-mode fault
    also fails `eval_step`, which computes in eval mode); a fault in the metrics fails `eval_step`'s. A
    wrong function's `jit` is not judged."""
    result = grade_variant(tmp_path_factory, TOPIC, variant, CLASSIFIER)
    for exercise, wrong in (("classify", classify), ("eval_step", eval_step)):
        assert failed(result, exercise) == (wrong | {"jit"} if wrong else set()), [t.output for t in result.tests]
    exercise = "classify" if classify else "eval_step"
    text = message(result, exercise, "correct")
    assert what in text
    if exercise == "classify":  # the case that shows it is of the faulty mode
        mode = "eval mode" if variant in ("dropout_in_eval", "batch_stats_in_eval") else "train mode"
        assert text.startswith(mode) or f", {mode == 'train mode'})" in text


# -- the data pipeline: epochs, shuffles, the last batch masked; one fault each --------------------------


PIPELINE = [f"{TOPIC}.epoch_batches", f"{TOPIC}.masked_eval"]


@pytest.mark.slow  # six submissions' epoch_batches and masked_eval graded: ~3 min on a 2-core CPU
@pytest.mark.parametrize(
    "variant, epoch_batches, masked_eval, what",
    [
        ("same_order_every_epoch", {"correct", "jit"}, set(), "values differ"),
        ("drops_last_batch", {"correct", "jit"}, set(), "shape"),
        ("epoch_static", {"jit"}, set(), "marks argument 1 static"),
        ("mean_over_padding", set(), {"correct", "jit"}, "`output["),
        ("mean_of_batch_means", set(), {"correct", "jit"}, "`output["),
        ("eval_all_at_once", set(), {"jit"}, "`while`"),
    ],
)
def test_crafted_pipeline_fails_its_checks(tmp_path_factory, variant, epoch_batches, masked_eval, what):
    """Each fault of the pipeline loses the points it deserves and no other: a wrong order or layout
    fails `correct`, a static epoch or an evaluation without a loop over the batches `jit`."""
    result = grade_variant(tmp_path_factory, TOPIC, variant, PIPELINE)
    for exercise, wrong in (("epoch_batches", epoch_batches), ("masked_eval", masked_eval)):
        assert failed(result, exercise) == wrong, [t.output for t in result.tests]
    exercise = "epoch_batches" if epoch_batches else "masked_eval"
    check = "correct" if "correct" in (epoch_batches or masked_eval) else "jit"
    assert what in message(result, exercise, check), message(result, exercise, check)


def test_every_run_lays_out_a_partial_batch_and_a_subset_of_the_rows():
    """A mask ignored, a mean of batch means and rows outside the layout counted can only show in
    cases with a partial last batch and a layout of some of the dataset's rows: every random case
    of `masked_eval` beyond the smallest size has both, whatever the seed; `epoch_batches` is asked
    for the epoch's order at several epochs in every run."""
    ex = next(e for e in topics.load(TOPIC).exercises if e.name == "masked_eval")
    for seed in range(5):
        rng = np.random.default_rng(seed)
        for size in ex.sizes[1:]:
            _, _, x, _, _, mask = ex.sample(rng, size).args
            assert not mask.all() and mask.sum() < len(x)
    epochs = next(e for e in topics.load(TOPIC).exercises if e.name == "epoch_batches")
    drawn = {epochs.sample(np.random.default_rng(s), 10).args[1] for s in range(5)}
    assert len(drawn) > 1


def test_every_run_grades_the_classifier_in_both_modes_with_several_keys():
    """`correct` can only tell a key ignored in train mode, dropout or batch statistics in eval mode,
    and running averages not moved if each run's cases hold both modes, and train mode under more
    than one key: the edge families guarantee it, whatever the random cases draw."""
    import numpy as np

    from jaxlings.grading.spec import Edge

    classify = topics.load(TOPIC).exercise("classify")
    families = [e for e in classify.edge_cases if isinstance(e, Edge)]
    for seed in range(20):
        rng = np.random.default_rng(seed)
        cases = [family.draw(rng) for family in families]
        modes = [case.args[4] for case in cases]
        assert True in modes and False in modes
        train_keys = {case.args[3].seed for case in cases if case.args[4]}
        assert len(train_keys) >= 2
    # the public instances too (what `grade check` grades)
    assert sorted(family.public.args[4] for family in families) == [False, True, True]


# -- the loop: the `trains` band over several seeds -------------------------------------------


def _band(tmp_path_factory, source):
    """The `fit` exercise alone, graded with BAND_RUNS runs (each its own dataset and initial
    parameters) from one fixed seed."""
    spec = topics.load(TOPIC)
    fit = spec.exercise("fit")
    fit = dataclasses.replace(fit, checks=(dataclasses.replace(fit.check("trains"), runs=BAND_RUNS),))
    folder = tmp_path_factory.mktemp(source.stem)
    (folder / f"{TOPIC}.py").write_text(submission_source(source))
    result = engine.grade(
        folder,
        [dataclasses.replace(spec, exercises=(fit,))],
        reference_dir=SOLUTIONS,
        seed=BAND_SEED,
        limits=TEST_LIMITS,
    )
    return result, data(result, "fit", "trains")


@pytest.fixture(scope="module")
def band_reference(tmp_path_factory):
    return _band(tmp_path_factory, SOLUTIONS / f"{TOPIC}.py")


def test_a_correct_loop_clears_the_bound_on_every_seed(band_reference):
    result, trains = band_reference
    assert failed(result, "fit") == set()
    assert len(trains["losses"]) == BAND_RUNS and len(set(trains["initial_losses"])) == BAND_RUNS  # six datasets
    assert (
        max(trains["losses"]) < trains["max_loss"] / 2
    )  # measured here: 0.0025 to 0.010 (at most 0.079 over 1,000 seeds)
    assert trains["drifts"] == [0.0] * BAND_RUNS  # the reference's own loop ends where the reference's does


def test_a_loop_in_another_order_ends_elsewhere(tmp_path_factory, band_reference):
    """The blocks in a fresh random order every epoch (tests/submissions/training__shuffled_batches.py):
    the task fixes the order, and its parameters end near the reference's, not on them."""
    result, trains = _band(tmp_path_factory, SUBMISSIONS / f"{TOPIC}__shuffled_batches.py")
    assert failed(result, "fit") == {"trains"}, message(result, "fit", "trains")
    assert trains["initial_losses"] == band_reference[1]["initial_losses"]
    assert max(trains["losses"]) < trains["max_loss"] and max(trains["drifts"]) > trains["max_drift"]
    assert "in the task's order" in message(result, "fit", "trains")


@pytest.mark.parametrize("variant", ["half_steps", "adam_constant"])
def test_a_loop_that_trains_off_task_fails_though_its_loss_is_low(tmp_path_factory, variant):
    """Half the steps, or Adam at a constant rate in place of the task's step: both reach the
    loss (they passed at the old bound, 0.7), neither ends where the task's loop does."""
    result = grade_variant(tmp_path_factory, TOPIC, variant, [f"{TOPIC}.fit"])
    assert failed(result, "fit") == {"trains"}
    trains = next(t for t in result.tests if t.name == f"{TOPIC}.fit:trains").extra_data
    assert max(trains["losses"]) < trains["max_loss"] and min(trains["drifts"]) > trains["max_drift"]


def _lstsq_readout(tmp_path_factory, attack: bool) -> Path:
    """tests/submissions/training__attack_lstsq_readout.py, as written or as its honest twin."""
    source = (SUBMISSIONS / f"{TOPIC}__attack_lstsq_readout.py").read_text()
    assert "\nATTACK = True\n" in source
    path = tmp_path_factory.mktemp("lstsq") / f"{'attack' if attack else 'twin'}_lstsq_readout.py"
    path.write_text(source if attack else source.replace("\nATTACK = True\n", "\nATTACK = False\n"))
    return path


@pytest.mark.slow  # two submissions' loops, six runs each: ~40 s on a loaded 2-core CPU
def test_a_fit_that_trains_nothing_fails_trains(tmp_path_factory):
    """Attack: no loop; the readout by one least-squares solve on the initial hidden layer. Its
    loss is below the bound on every run (2 of 2 points when only the loss was judged), but its
    parameters lie farther from the reference loop's than the initial ones do. The honest twin,
    the same module running the loop, passes on the same six datasets."""
    attack, shortcut = _band(tmp_path_factory, _lstsq_readout(tmp_path_factory, True))
    twin, loop = _band(tmp_path_factory, _lstsq_readout(tmp_path_factory, False))
    assert failed(attack, "fit") == {"trains"} and failed(twin, "fit") == set()
    assert max(shortcut["losses"]) < shortcut["max_loss"]  # the shortcut reaches the loss...
    assert min(shortcut["drifts"]) > 1 > shortcut["max_drift"]  # ...not where the loop ends
    assert message(attack, "fit", "trains").count("not where training ends") == BAND_RUNS
    assert loop["initial_losses"] == shortcut["initial_losses"] and loop["drifts"] == [0.0] * BAND_RUNS


@pytest.mark.slow  # three submissions' loops, six runs each: ~70 s on a 2-core CPU
@pytest.mark.parametrize(
    "variant, signature",
    [
        ("wrong_sign", "the loss grew"),
        ("stale_opt_state", "barely moved"),
        ("reinit_opt_state", "barely moved"),
    ],
)
def test_a_broken_loop_never_clears_the_bound(tmp_path_factory, band_reference, variant, signature):
    result, trains = _band(tmp_path_factory, SUBMISSIONS / f"{TOPIC}__{variant}.py")
    assert failed(result, "fit") == {"trains"}
    # the same six datasets as the reference's, every one of them failed
    assert trains["initial_losses"] == band_reference[1]["initial_losses"]
    assert len(trains["losses"]) == BAND_RUNS and min(trains["losses"]) > 2 * trains["max_loss"]
    text = message(result, "fit", "trains")
    assert text.count("not below 0.2") == BAND_RUNS and signature in text


def test_a_loop_that_reuses_donated_parameters_fails_with_jaxs_error(tmp_path_factory):
    result = grade_variant(tmp_path_factory, TOPIC, "reuses_donated", [f"{TOPIC}.fit"])
    assert failed(result, "fit") == {"trains"}
    assert "Buffer has been deleted or donated" in message(result, "fit", "trains")


def test_a_loop_killed_from_outside_says_so_not_that_it_ran_too_long(tmp_path_factory):
    result = grade_variant(tmp_path_factory, TOPIC, "killed_by_a_signal", [f"{TOPIC}.fit"])
    assert failed(result, "fit") == {"trains"}
    text = message(result, "fit", "trains")
    assert "killed by signal SIGKILL from outside the grader" in text and "did not finish within" not in text, text


# -- public mode: the loss is judged offline, from the recorded datasets ------------------------


def test_a_public_run_judges_the_loop_in_full_from_the_recording(tmp_path_factory):
    good = check_dir(SOLUTIONS, [f"{TOPIC}.fit"])
    test = next(t for t in good.tests if t.check == "trains")
    assert test.status == "passed" and not test.pending and good.extra_data["reference"] == "recorded"
    folder = tmp_path_factory.mktemp("public_stale")
    (folder / f"{TOPIC}.py").write_text(crafted_source(f"{TOPIC}__stale_opt_state"))
    bad = check_dir(folder, [f"{TOPIC}.fit"])
    test = next(t for t in bad.tests if t.check == "trains")
    assert test.status == "failed" and not test.pending and "barely moved" in test.output
    assert (
        test.extra_data["reference_losses"] == next(t for t in good.tests if t.check == "trains").extra_data["losses"]
    )


# -- the check's own arithmetic (no workers) ---------------------------------------------------


def _exported(tree) -> dict:
    """An output as a worker sends it: treedef string and leaves (dict keys sorted)."""
    import jax
    import numpy as np

    leaves, treedef = jax.tree.flatten(tree)
    return {"treedef": str(treedef), "leaves": [{"kind": "array", "data": np.asarray(a)} for a in leaves]}


def test_the_graders_loss_is_the_models_loss():
    """The NumPy loss the check computes equals the reference's `mse_loss` (Flax NNX) on the same
    parameters and data: the trusted evaluator is the task's model."""
    import importlib.util

    import jax.numpy as jnp
    import numpy as np

    from jaxlings.grading.checks import trains
    from jaxlings.specs.training import _fit

    found = importlib.util.spec_from_file_location("training_reference_for_test", SOLUTIONS / f"{TOPIC}.py")
    solution = importlib.util.module_from_spec(found)
    found.loader.exec_module(solution)
    params, x, y, _, _ = _fit(np.random.default_rng(3), 64).args
    pairs, problem = trains.layers_of(_exported(params), ("hidden", "out"), x.shape[1], y.shape[1])
    assert problem is None
    ours = trains.mlp_loss(pairs, x, y)
    theirs = float(
        solution.mse_loss(
            {k: {n: jnp.asarray(a) for n, a in v.items()} for k, v in params.items()}, jnp.asarray(x), jnp.asarray(y)
        )
    )
    assert abs(ours - theirs) <= 1e-5 * ours


def test_drift_measures_the_distance_from_the_reference_loops_end():
    """0 at the reference's parameters, 1 at the initial ones, in units of the reference's travel."""
    import numpy as np

    from jaxlings.grading.checks.trains import drift

    start = [(np.zeros((2, 3)), np.zeros(3)), (np.zeros((3, 1)), np.zeros(1))]
    end = [(np.ones((2, 3)), np.ones(3)), (np.ones((3, 1)), np.ones(1))]  # travelled sqrt(13)
    assert drift(end, end, start) == 0.0 and drift(start, end, start) == 1.0
    halfway = [(k / 2, b / 2) for k, b in end]
    assert drift(halfway, end, start) == pytest.approx(0.5)
    assert drift([(np.full((2, 3), np.inf), np.ones(3)), end[1]], end, start) == float("inf")
    assert drift(start, start, start) == 0.0  # no travel (no steps): only the same parameters pass


def test_returned_parameters_of_the_wrong_form_are_named_not_scored():
    import numpy as np

    from jaxlings.grading.checks import trains

    params = {
        "hidden": {"bias": np.zeros(32, np.float32), "kernel": np.zeros((8, 32), np.float32)},
        "out": {"bias": np.zeros(1, np.float32), "kernel": np.zeros((32, 1), np.float32)},
    }
    layers = ("hidden", "out")
    assert trains.layers_of(_exported(params), layers, 8, 1)[1] is None
    _, problem = trains.layers_of(_exported([params["hidden"], params["out"]]), layers, 8, 1)
    assert "nested dict" in problem
    wrong = {**params, "out": {"bias": np.zeros(2, np.float32), "kernel": np.zeros((32, 2), np.float32)}}
    assert "outputs 2 values per row" in trains.layers_of(_exported(wrong), layers, 8, 1)[1]
    blown = {**params, "out": {"bias": np.full(1, np.inf, np.float32), "kernel": params["out"]["kernel"]}}
    pairs, _ = trains.layers_of(_exported(blown), layers, 8, 1)
    assert trains.mlp_loss(pairs, np.zeros((4, 8)), np.zeros((4, 1))) == float("inf")
    assert "grew" in trains._diagnosis(1.0, float("inf")) and "barely moved" in trains._diagnosis(1.0, 1.01)


# -- adamw_step: the decay masked off the biases and the norm ---------------------------------


@pytest.mark.parametrize(
    "variant, signature",
    [
        # no mask: the state has an empty part where the reference's has a masked one
        ("adamw_unmasked", "is an instance of `EmptyState`, expected an instance of `MaskedState`"),
        # the mask inverted: the reference's structure, the values off (a bias decayed)
        ("adamw_mask_inverted", "`new_params["),
        # Adam + L2 in the gradient: no masked part at all, and coupled arithmetic
        ("adamw_l2_in_grad", "is a tuple of two"),
    ],
)
def test_a_decay_on_the_wrong_parameters_fails_correct(tmp_path_factory, variant, signature):
    result = grade_variant(tmp_path_factory, TOPIC, variant, [f"{TOPIC}.adamw_step"])
    assert failed(result, "adamw_step") == {"correct", "jit"}, [t.output for t in result.tests]
    assert signature in message(result, "adamw_step", "correct")


def test_a_mask_written_as_a_tree_passes(tmp_path_factory):
    """The mask as a literal tree of booleans instead of a function: the same optimizer."""
    result = grade_variant(tmp_path_factory, TOPIC, "adamw_mask_tree", [f"{TOPIC}.adamw_step"])
    assert short_of_full_marks(result) == set(), [t.output for t in result.tests]


def test_the_l2_variant_moves_the_kernels_differently_as_well():
    """Beyond the state's structure: Adam normalises an L2 term added to the gradient, so the
    coupled step differs from AdamW's in the kernels' values too (one case, in-process)."""
    import types

    import jax
    import numpy as np

    from jaxlings.specs.training import _adamw

    def load(source, name):
        module = types.ModuleType(name)
        exec(compile(source, name, "exec"), module.__dict__)
        return module

    right = load((SOLUTIONS / f"{TOPIC}.py").read_text(), "training_reference_adamw")
    coupled = load(crafted_source(f"{TOPIC}__adamw_l2_in_grad"), "training_l2_adamw")
    params, grads, lr, wd = _adamw(np.random.default_rng(5), 1).args
    ours, _ = right.adamw_step(params, grads, lr, wd)
    theirs, _ = coupled.adamw_step(params, grads, lr, wd)
    gap = jax.tree.map(lambda a, b: float(np.max(np.abs(np.asarray(a) - np.asarray(b)))), ours, theirs)
    assert gap["hidden"]["kernel"] > 1e-4 and gap["out"]["kernel"] > 1e-4
    assert gap["hidden"]["bias"] == gap["norm"]["scale"] == 0.0  # undecayed leaves: the same Adam step


# -- resume_training: a checkpoint the grader wrote, restored and trained on -----------------


@pytest.mark.parametrize(
    "variant, signature",
    [
        ("resume_fresh_opt_state", "`losses`"),  # restored right, trained from a fresh optimizer state
        ("resume_drops_step", "`losses`"),  # restored right, the batches restarted at row 0
        ("resume_params_only", "`restored["),  # a fresh optimizer state and step 0 returned
        ("resume_ignores_checkpoint", "`restored["),  # attack: the files never read
    ],
)
def test_a_resume_that_loses_part_of_the_state_fails_correct(tmp_path_factory, variant, signature):
    result = grade_variant(tmp_path_factory, TOPIC, variant, [f"{TOPIC}.resume_training"])
    assert failed(result, "resume_training") == {"correct"}, [t.output for t in result.tests]
    text = message(result, "resume_training", "correct")
    assert signature in text and "/tmp" not in text


def test_a_resume_through_another_orbax_api_passes(tmp_path_factory):
    """`ocp.Checkpointer` with the standard handler and `args.StandardRestore`, the target from
    `ocp.utils.to_shape_dtype_struct`: the same restored state."""
    result = grade_variant(tmp_path_factory, TOPIC, "resume_checkpointer", [f"{TOPIC}.resume_training"])
    assert short_of_full_marks(result) == set(), [t.output for t in result.tests]


@needs_bwrap
def test_the_reference_restores_in_the_sandbox(tmp_path_factory):
    """Under bubblewrap the worker may write only its private /tmp: the reference writes the
    checkpoint there (`tempfile`), restores it and trains on, for full marks."""
    result = grade_dir(SOLUTIONS, [f"{TOPIC}.resume_training"], isolate=True)
    assert failed(result, "resume_training") == set(), [t.output for t in result.tests]
    assert result.extra_data["sandbox"] == "on"


def test_the_graders_checkpoint_restores_bit_for_bit_and_is_a_function_of_the_state(tmp_path):
    """What the grader hands the student: an Orbax checkpoint that Orbax restores to exactly the
    state drawn (every bit, every dtype), the same files for the same state (a case must be a
    function of the generator), and no file that names a directory of the grader's."""
    import jax
    import numpy as np
    import orbax.checkpoint as ocp

    from jaxlings.specs.training import _opt_leaves, _params, checkpoint_files

    rng = np.random.default_rng(9)
    params = _params(rng)
    state = {"params": params, "opt_state": _opt_leaves(rng, params), "step": np.array(41, np.int32)}
    files = checkpoint_files(state)
    assert files.keys() == checkpoint_files(state).keys()
    assert all(np.array_equal(a, b) for a, b in zip(files.values(), checkpoint_files(state).values(), strict=True))
    assert not any(b"/tmp" in a.tobytes() for a in files.values())
    for name, data in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data.tobytes())
    target = jax.tree.map(ocp.utils.to_shape_dtype_struct, state)
    with ocp.StandardCheckpointer() as checkpointer:
        restored = checkpointer.restore(tmp_path, target)
    same = jax.tree.map(
        lambda a, b: np.asarray(a).dtype == b.dtype and np.asarray(a).tobytes() == b.tobytes(), restored, state
    )
    assert all(jax.tree.leaves(same))

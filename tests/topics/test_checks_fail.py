"""For every check kind, a submission that deserves to fail it fails it, and only it.

Checks that count only once `correct` passes (`jit`, `speed`, ...) show "not judged" when the
function is wrong, and so does `key_reuse` when it finds no reused key; that is part of "only it" for a
wrong answer. `key_reuse` is advisory (0 points: its facts come from the student's own
process), so its verdict is read from the test's status, and the exercise keeps every point.
"""

import re

import pytest

from helpers.grading import extra_data, failing, grade_dir, grade_variant, short_of_full_marks, verdicts


@pytest.fixture(scope="module")
def prng_faults(tmp_path_factory):
    return grade_variant(tmp_path_factory, "prng", "one_fault_each")


@pytest.fixture(scope="module")
def at_faults(tmp_path_factory):
    return grade_variant(tmp_path_factory, "at_updates", "one_fault_each")


@pytest.mark.slow  # prng_faults and at_faults grade two whole topics: ~110 s on a 2-core CPU
def test_wrong_values_fail_correct_and_nothing_else_is_judged(prng_faults, at_faults):
    for result, ex in ((prng_faults, "prng.derive_keys"), (at_faults, "at_updates.scatter_ops")):
        v = verdicts(result)
        assert v[f"{ex}:correct"][0] == 0
        assert "differ" in v[f"{ex}:correct"][2] or "off" in v[f"{ex}:correct"][2]
        assert v[f"{ex}:jit"][0] == 0 and "not judged until the function is correct" in v[f"{ex}:jit"][2]
    assert "not judged" in verdicts(prng_faults)["prng.derive_keys:key_reuse"][2]


@pytest.mark.slow  # prng_faults and at_faults grade two whole topics: ~110 s on a 2-core CPU
def test_wrong_value_message_never_reveals_expected_values(at_faults):
    message = verdicts(at_faults)["at_updates.scatter_ops:correct"][2]
    shown = message.split("(tolerance")[0].split(":", 1)[1]
    # the docstring example's expected add/min/max outputs, compared as numbers: an error of
    # 0.813 contains the characters "13" without revealing the value 13
    numbers = {float(token) for token in re.findall(r"-?\d+(?:\.\d*)?", shown)}
    assert not numbers & {13.0, -1.0}, shown
    assert "[0, 2" not in shown


def status_failed(result, prefix: str) -> set[str]:
    """Tests under `prefix` whose status is "failed" (advisory, 0-point checks included)."""
    return {t.name for t in result.tests if t.name.startswith(prefix) and t.status == "failed"}


@pytest.mark.slow  # prng_faults and at_faults grade two whole topics: ~110 s on a 2-core CPU
def test_legacy_uint32_key_reuse_fails_advisory_key_reuse_only(prng_faults):
    assert status_failed(prng_faults, "prng.dropout:") == {"prng.dropout:key_reuse"}
    assert not {n for n in short_of_full_marks(prng_faults) if n.startswith("prng.dropout")}  # advice costs no points
    score, max_score, message = verdicts(prng_faults)["prng.dropout:key_reuse"]
    assert (score, max_score) == (0, 0) and "random_unwrap" in message


@pytest.mark.slow  # prng_faults and at_faults grade two whole topics: ~110 s on a 2-core CPU
def test_typed_key_reuse_fails_advisory_key_reuse_only(prng_faults):
    assert status_failed(prng_faults, "prng.monte_carlo_pi:") == {"prng.monte_carlo_pi:key_reuse"}
    assert not {n for n in short_of_full_marks(prng_faults) if n.startswith("prng.monte_carlo_pi")}
    score, max_score, message = verdicts(prng_faults)["prng.monte_carlo_pi:key_reuse"]
    assert (score, max_score) == (0, 0) and "KeyReuseError" in message


@pytest.mark.slow  # prng_faults and at_faults grade two whole topics: ~110 s on a 2-core CPU
def test_control_exercises_pass(prng_faults, at_faults):
    assert not {n for n in short_of_full_marks(prng_faults) if n.startswith("prng.noisy_walk")}
    assert not {n for n in failing(at_faults) if n.startswith("at_updates.lookup_and_clamp")}


@pytest.mark.slow  # prng_faults and at_faults grade two whole topics: ~110 s on a 2-core CPU
def test_a_pass_over_the_values_per_bin_fails_speed_only(at_faults):
    mine = {n for n in failing(at_faults) if n.startswith("at_updates.histogram")}
    assert mine == {"at_updates.histogram:speed"}
    assert verdicts(at_faults)["at_updates.histogram:speed"][0] == 0


@pytest.mark.slow  # prng_faults and at_faults grade two whole topics: ~110 s on a 2-core CPU
def test_host_callback_fails_jit_only(at_faults):
    mine = {n for n in failing(at_faults) if n.startswith("at_updates.mask_fill")}
    assert mine == {"at_updates.mask_fill:jit"}
    assert "pure_callback" in verdicts(at_faults)["at_updates.mask_fill:jit"][2]


def test_boolean_mask_fails_jit_only(tmp_path):
    from helpers.grading import write_submission

    folder = write_submission(
        tmp_path,
        {
            "at_updates": """
        def mask_fill(x, threshold, fill):
            return x.at[x > threshold].set(fill)
    """
        },
    )
    result = grade_dir(folder, ["at_updates.mask_fill"])
    assert failing(result) == {"at_updates.mask_fill:jit"}
    assert "NonConcreteBooleanIndexError" in verdicts(result)["at_updates.mask_fill:jit"][2]


def test_unrolled_python_loop_fails_jit_structure(tmp_path):
    from helpers.grading import write_submission

    folder = write_submission(
        tmp_path,
        {
            "prng": """
        import jax, jax.numpy as jnp

        def noisy_walk(key, x0, n_steps, sigma):
            keys = jax.random.split(key, n_steps)
            x, path = x0, []
            for t in range(n_steps):
                x = x + sigma * jax.random.normal(keys[t], x0.shape, x0.dtype)
                path.append(x)
            return jnp.stack(path)
    """
        },
    )
    result = grade_dir(folder, ["prng.noisy_walk"])
    assert "prng.noisy_walk:jit" in failing(result)
    message = verdicts(result)["prng.noisy_walk:jit"][2]
    assert "grows with the input" in message and "compiled HLO has" in message
    facts = extra_data(result, "prng.noisy_walk:jit")
    assert facts["n_ops"] > 10 * facts["n_ops_other"] and facts["n_ops"] > 10 * facts["reference_n_ops"]
    assert verdicts(result)["prng.noisy_walk:correct"][0] == 3


def test_own_jit_with_a_static_value_argument_retraces(tmp_path):
    from helpers.grading import write_submission

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
    assert "at_updates.mask_fill:jit" in failing(result)
    assert "at_updates.histogram:jit" not in failing(result)

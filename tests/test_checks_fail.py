"""For every check kind, a submission that deserves to fail it fails it, and only it.

Checks that count only once `correct` passes (`speed`, `key_reuse`) show "not judged" when
the function is wrong; that is part of "only it" for a wrong answer.
"""

import pytest

from conftest import failing, grade_dir, grade_variant, verdicts


@pytest.fixture(scope="module")
def prng_faults(tmp_path_factory):
    return grade_variant(tmp_path_factory, "prng", "one_fault_each")


@pytest.fixture(scope="module")
def at_faults(tmp_path_factory):
    return grade_variant(tmp_path_factory, "at_updates", "one_fault_each")


def test_wrong_values_fail_correct_only(prng_faults, at_faults):
    for result, ex in ((prng_faults, "prng.derive_keys"), (at_faults, "at_updates.scatter_ops")):
        v = verdicts(result)
        assert v[f"{ex}:correct"][0] == 0
        assert "differ" in v[f"{ex}:correct"][2] or "off" in v[f"{ex}:correct"][2]
        assert v[f"{ex}:jit"][0] == v[f"{ex}:jit"][1], v[f"{ex}:jit"]
    assert "not judged" in verdicts(prng_faults)["prng.derive_keys:key_reuse"][2]


def test_wrong_value_message_never_reveals_expected_values(at_faults):
    message = verdicts(at_faults)["at_updates.scatter_ops:correct"][2]
    # the docstring example's expected add/min/max outputs
    for value in ("13", "-1.", "[0, 2"):
        assert value not in message.split("(tolerance")[0].split(":", 1)[1]


def test_legacy_uint32_key_reuse_fails_key_reuse_only(prng_faults):
    assert failing(prng_faults) & {n for n in verdicts(prng_faults) if n.startswith("prng.dropout")} == {"prng.dropout:key_reuse"}
    assert "random_unwrap" in verdicts(prng_faults)["prng.dropout:key_reuse"][2]


def test_typed_key_reuse_fails_key_reuse_only(prng_faults):
    mine = {n for n in failing(prng_faults) if n.startswith("prng.monte_carlo_pi")}
    assert mine == {"prng.monte_carlo_pi:key_reuse"}
    assert "KeyReuseError" in verdicts(prng_faults)["prng.monte_carlo_pi:key_reuse"][2]


def test_control_exercises_pass(prng_faults, at_faults):
    assert not {n for n in failing(prng_faults) if n.startswith("prng.noisy_walk")}
    assert not {n for n in failing(at_faults) if n.startswith("at_updates.lookup_and_clamp")}


def test_python_loop_fails_speed_only(at_faults):
    mine = {n for n in failing(at_faults) if n.startswith("at_updates.histogram")}
    assert mine == {"at_updates.histogram:speed"}
    assert verdicts(at_faults)["at_updates.histogram:speed"][0] == 0


def test_host_callback_fails_jit_only(at_faults):
    mine = {n for n in failing(at_faults) if n.startswith("at_updates.mask_fill")}
    assert mine == {"at_updates.mask_fill:jit"}
    assert "pure_callback" in verdicts(at_faults)["at_updates.mask_fill:jit"][2]


def test_boolean_mask_fails_jit_only(tmp_path):
    from conftest import write_submission

    folder = write_submission(tmp_path, {"at_updates": """
        def mask_fill(x, threshold, fill):
            return x.at[x > threshold].set(fill)
    """})
    result = grade_dir(folder, ["at_updates.mask_fill"])
    assert failing(result) == {"at_updates.mask_fill:jit"}
    assert "NonConcreteBooleanIndexError" in verdicts(result)["at_updates.mask_fill:jit"][2]


def test_unrolled_python_loop_fails_jit_structure(tmp_path):
    from conftest import write_submission

    folder = write_submission(tmp_path, {"prng": """
        import jax, jax.numpy as jnp

        def noisy_walk(key, x0, n_steps, sigma):
            keys = jax.random.split(key, n_steps)
            x, path = x0, []
            for t in range(n_steps):
                x = x + sigma * jax.random.normal(keys[t], x0.shape, x0.dtype)
                path.append(x)
            return jnp.stack(path)
    """})
    result = grade_dir(folder, ["prng.noisy_walk"])
    assert "prng.noisy_walk:jit" in failing(result)
    assert "equations" in verdicts(result)["prng.noisy_walk:jit"][2]
    assert verdicts(result)["prng.noisy_walk:correct"][0] == 2


def test_own_jit_with_a_static_value_argument_retraces(tmp_path):
    from conftest import write_submission

    folder = write_submission(tmp_path, {"at_updates": """
        import functools, jax, jax.numpy as jnp

        @functools.partial(jax.jit, static_argnums=(1,))
        def histogram(x, nbins):
            return jnp.zeros(nbins, jnp.int32).at[x].add(1)

        @functools.partial(jax.jit, static_argnums=(1, 2))
        def mask_fill(x, threshold, fill):
            return jnp.where(x > threshold, jnp.asarray(fill, x.dtype), x)
    """})
    result = grade_dir(folder, ["at_updates.histogram", "at_updates.mask_fill"])
    assert "at_updates.mask_fill:jit" in failing(result)
    assert "at_updates.histogram:jit" not in failing(result)

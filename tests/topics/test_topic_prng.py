"""Topic `prng`: the fact `derive_keys` rests on (split and fold_in of one key collide), and a
reused key in `noisy_walk` named as such to the student, not only as wrong values."""

import importlib.util

import jax
import jax.numpy as jnp
import pytest

from helpers.grading import SOLUTIONS, SUBMISSIONS, grade_dir, grade_variant, short_of_full_marks, verdicts


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def same(a, b) -> bool:
    return bool((jax.random.key_data(a) == jax.random.key_data(b)).all())


def test_split_and_fold_in_of_one_key_collide_and_the_reference_keeps_them_apart():
    key, n = jax.random.key(5), 6
    # the fact: split(key, m)[i] is fold_in(key, i) (jax_threefry_partitionable, the default)
    assert all(same(jax.random.split(key, n)[i], jax.random.fold_in(key, i)) for i in range(n))
    init_key, step_keys = load(SOLUTIONS / "prng.py", "prng_reference").derive_keys(key, n)
    assert init_key.shape == () and step_keys.shape == (n,)
    data = jax.random.key_data(jnp.concatenate([init_key[None], step_keys]))
    assert len({tuple(int(v) for v in row) for row in data}) == n + 1  # n + 1 distinct keys
    # the crafted fault (fold_in into `key` itself) collides, and differs from the reference
    bad_init, bad_steps = load(SUBMISSIONS / "prng__one_fault_each.py", "prng_mixed").derive_keys(key, n)
    assert same(bad_init, init_key) and same(bad_steps[0], bad_init) and same(bad_steps[1], jax.random.split(key)[1])
    assert not any(same(bad_steps[i], step_keys[i]) for i in range(n))


@pytest.fixture(scope="module")
def walk_reuse(tmp_path_factory):
    return grade_variant(tmp_path_factory, "prng", "walk_reuse", ["prng.noisy_walk"])


@pytest.mark.slow  # two gradings of one exercise: ~40 s on a 2-core CPU
def test_a_reused_key_in_noisy_walk_is_named_and_the_reference_is_not_told_so(walk_reuse):
    v = verdicts(walk_reuse)
    score, _, message = v["prng.noisy_walk:correct"]
    assert score == 0 and "off" in message and "PRNG key is used twice" in message, message
    reuse = next(t for t in walk_reuse.tests if t.check == "key_reuse")
    assert (
        reuse.status == "failed"
        and "KeyReuseError" in reuse.output
        and "used twice, which is why the values" in reuse.output
    ), reuse.output
    assert v["prng.noisy_walk:speed"][2].startswith("not judged")
    reference = grade_dir(SOLUTIONS, ["prng.noisy_walk"])
    assert short_of_full_marks(reference) == set(), [t.output for t in reference.tests]
    assert not any("twice" in t.output or "KeyReuseError" in t.output for t in reference.tests), [
        t.output for t in reference.tests
    ]

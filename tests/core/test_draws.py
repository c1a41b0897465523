"""Draws the student cannot predict: a 128-bit secret per run and a keyed hash per draw
(`jaxlings.grading.draws`), tried by a module that knows the grader's code."""

from __future__ import annotations

import json
from textwrap import dedent

import numpy as np
import pytest

from helpers.grading import grade_dir, verdicts, write_submission
from jaxlings.grading import draws


def test_a_fresh_secret_has_128_bits_and_never_repeats():
    seeds = {draws.new_seed() for _ in range(200)}
    assert len(seeds) == 200
    assert max(s.bit_length() for s in seeds) > 120 and all(s < 2**128 for s in seeds)


def test_each_draw_has_a_generator_of_its_own():
    def first(seed, *where):
        return draws.generator(seed, *where).integers(0, 2**63, size=4).tolist()

    base = ("prng", "dropout", "speed", 0)
    assert first(7, *base) == first(7, *base)  # a recorded seed reproduces the draw
    others = [
        ("prng", "dropout", "speed", 1),
        ("prng", "dropout", "cases", 0),
        ("prng", "noisy_walk", "speed", 0),
        ("at_updates", "dropout", "speed", 0),
    ]
    values = [first(7, *base)] + [first(7, *w) for w in others] + [first(8, *base)]
    assert len({json.dumps(v) for v in values}) == len(values)


@pytest.mark.parametrize("text, value", [("12", 12), ("0x1F", 31), ("0X_ff", 255), (" 5 ", 5)])
def test_a_seed_is_typed_in_decimal_or_hex(text, value):
    assert draws.parse_seed(text) == value


@pytest.mark.parametrize("text", ["", "twelve", "-3", "0x", hex(2**300)])
def test_a_malformed_seed_is_named(text):
    with pytest.raises(ValueError, match="seed"):
        draws.parse_seed(text)


# A module that knows the grader's code: at every call it tries to recover the run's seed from
# the case it is called on (searching the seeds below SEARCH), and once it has it, computes the
# speed rounds' workloads and their answers ahead, untimed, to return them at once when timed.
# Its honest work is slow (np.add.at). It writes what it found to FOUND.
PREDICTING = """
    import json
    import numpy as np

    SEARCH = 2048
    FOUND = {found!r}
    _answers = {{}}
    _tried = [False]


    def _recover(x):
        from jaxlings.grading import draws, topics

        ex = topics.load("at_updates").exercise("histogram")
        for seed in range(SEARCH):
            cases = ex.cases(draws.generator(seed, "at_updates", "histogram", "cases", 0), False)
            if any(c.args[0].shape == x.shape and np.array_equal(c.args[0], x) for c in cases if c.label.startswith("random")):
                return seed, ex
        return None, ex


    def _precompute(seed, ex):
        for n in range(64):
            rng = draws_module().generator(seed, "at_updates", "histogram", "speed", n)
            x, nbins = ex.sample(rng, 1 << 20).args
            _answers[x[:64].tobytes()] = np.bincount(x, minlength=nbins).astype(np.int32)


    def draws_module():
        from jaxlings.grading import draws
        return draws


    def histogram(x, nbins):
        x = np.asarray(x)
        if not _tried[0] and x.size > 1:
            seed, ex = _recover(x)
            if seed is not None:
                _tried[0] = True
                _precompute(seed, ex)
            with open(FOUND, "w") as f:
                json.dump({{"seed": seed}}, f)
        known = _answers.get(x[:64].tobytes())
        if known is not None:
            return known
        counts = np.zeros(nbins, np.int32)
        np.add.at(counts, x, 1)
        return counts
"""


@pytest.mark.slow
def test_predicting_the_timed_inputs_gains_nothing(tmp_path):
    """With a seed small enough to search (an instructor's `--seed 1234`), the module finds it and
    answers the timed rounds from its precomputed table (the attack works); with the grader's own
    128-bit secret it finds nothing, and its slow work is timed as it is."""
    scores = {}
    for label, seed in (("searchable", 1234), ("secret", None)):
        found = tmp_path / f"{label}.json"
        folder = write_submission(tmp_path / label, {"at_updates": dedent(PREDICTING.format(found=str(found)))})
        result = grade_dir(folder, ["at_updates.histogram"], seed=seed)
        scores[label] = verdicts(result)["at_updates.histogram:speed"]
        recovered = json.loads(found.read_text())["seed"] if found.exists() else None
        assert recovered == seed, label
        assert result.extra_data["seed"] == seed if seed is not None else result.extra_data["seed"].bit_length() > 64
    searchable, secret = scores["searchable"], scores["secret"]
    assert searchable[0] == searchable[1], f"the attack itself should work on a searchable seed: {searchable}"
    assert secret[0] < secret[1], f"the 128-bit secret let the module predict its inputs: {secret}"
    np.testing.assert_equal(secret[1], 2.0)

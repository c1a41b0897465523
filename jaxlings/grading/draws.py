"""Where a grading run's random inputs come from: a per-run secret and a keyed hash.

Every input the grader draws (cases, samples whose programs it runs, timed workloads, streams,
VMC keys, datasets) comes from a NumPy generator of its own, seeded by
HMAC-SHA256(secret, topic, exercise, kind, n): the n-th draw of that kind for that exercise.
The secret is 128 random bits per hidden run (`new_seed`), held by the grader alone and recorded
in the result, so that an instructor's `grade grade --seed` reproduces the run exactly.

Why a keyed hash, and a generator per draw: a student's process is shown some draws (the cases it
is called on) and must not be able to compute any other (the inputs of a later timed round, the
fresh samples its exported programs are run on). With a small seed, one drawn input was enough
to recover the seed by search, untimed, and every later input followed from it. Here no value
shown reveals the secret (HMAC is a pseudorandom function of it) and no generator's output
reveals another's (each is seeded separately, not advanced from a shared state).

Public runs (`grade check`, seed 0) use the same derivation with the secret 0: their inputs
are fixed, recorded with the reference's answers in the public expectations, and never graded
in hidden mode.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets

import numpy as np

SECRET_BITS = 128
PUBLIC_SEED = 0


def new_seed() -> int:
    """A fresh secret for one hidden grading run: 128 random bits."""
    return secrets.randbits(SECRET_BITS)


def parse_seed(text: str) -> int:
    """A seed as an instructor types it (`--seed`): decimal, or hexadecimal with `0x`.
    ValueError naming the problem otherwise."""
    cleaned = text.strip().lower().replace("_", "")
    try:
        value = int(cleaned, 16) if cleaned.startswith("0x") else int(cleaned, 10)
    except ValueError:
        raise ValueError(f"a seed is a whole number (decimal, or hex with 0x), not {text!r}") from None
    if value < 0 or value.bit_length() > 256:
        raise ValueError(f"a seed is a whole number from 0 to 2**256 - 1, not {text!r}")
    return value


def generator(seed: int, topic: str, exercise: str, kind: str, n: int) -> np.random.Generator:
    """The generator of the `n`-th draw of `kind` for `topic.exercise` in the run of `seed`."""
    key = seed.to_bytes(32, "big")
    message = json.dumps([topic, exercise, kind, n]).encode()
    digest = hmac.new(key, message, hashlib.sha256).digest()
    return np.random.default_rng(int.from_bytes(digest, "big"))

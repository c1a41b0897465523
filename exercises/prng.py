# Topic `prng`: replace each `raise NotImplementedError(...)` below with your code.
# Lesson: lessons/prng.md. Check: `grade check prng` (re-check on save: `grade watch prng`).
# Stuck? `grade hint prng.<function>`. Each docstring ends with what is graded; the rules all
# exercises share are in README.md ("How you are graded").
"""PRNG keys: splitting, folding in, and never using a key twice.

JAX has no global random state. Every random function takes a *key*, and the same key always
gives the same numbers. You make new keys from old ones with `jax.random.split` (several
fresh keys from one; the old key is then used up) or `jax.random.fold_in` (a key derived
from a key and an integer, e.g. a step number or a device index, without using the key up).
Derive from any one key by `split` or by `fold_in`, never both: with `jax_threefry_partitionable`
on (JAX's default since 0.5.0, and this course's), the two give the very same keys.

The grader hands every function *typed* keys (`jax.random.key(seed)`, dtype `key<fry>`) and
also runs it under `jax.debug_key_reuse(True)`: the `key_reuse` check (advice, no points of its
own) tells you when a key is consumed twice or unwrapped into legacy raw uint32 data, which
hides reuse from JAX; a reused key also makes the outputs wrong, so `correct` fails. Each
task prescribes exactly how to use the keys, so that your output is bit-for-bit the reference's.

Lesson: lessons/prng.md
"""

import jax
import jax.numpy as jnp


def derive_keys(key, n):
    """Derive every key a training run needs from one key: one to initialise, one per step.

    Return a tuple `(init_key, step_keys)` of typed keys: `init_key` of shape `()` and
    `step_keys` of shape `(n,)`, derived exactly so:
      - `init_key, step_root = jax.random.split(key)`;
      - `step_keys[i]` = `jax.random.fold_in(step_root, i)` for i = 0, ..., n-1 (all at once,
        with `jax.vmap` over `jnp.arange(n)`, not a Python loop).

    Key discipline: derive from any one key by `split` or by `fold_in`, never both. `key` is
    used up by its split; fold the step numbers into `step_root`, never into `key` itself:
    with `jax_threefry_partitionable` on (JAX's default since 0.5.0, and this course's),
    `jax.random.fold_in(key, i)` is bit for bit `jax.random.split(key, m)[i]` (any m > i), so
    step 0 would draw the same numbers as `init_key`. (With the setting off, as in older JAX,
    the two differ, but only by luck: the discipline holds either way.)

    `n` is a Python int (static under jit). Example: `derive_keys(jax.random.key(0), 3)`
    returns one key and an array of 3 keys, all 4 of them different.

    Graded (4 points):
      - correct (3): make `init_key` and `step_keys` equal the reference's¹, called as written
        on 4 random cases.
      - jit (1): make it work jitted by the grader (with `n` static) once it is correct: the
        reference's outputs on the same cases; in its exported program: no host callbacks; no
        re-tracing (one program, exported from the shapes, for new values of those shapes); it
        does not grow with the input²; compiled HLO of at most about the reference's lines³.
      - key_reuse (advice, no points): use each key once and keep keys typed: called directly
        and under `jax.jit` with `jax.debug_key_reuse(True)`, no key may be consumed twice, nor
        unwrapped to raw data (no `random_unwrap` or `random_wrap` in the jaxpr).
      ¹ rtol 1e-6, atol 1e-6 for float outputs; integers, booleans and keys exactly. ² at the
      largest case at most x3 + 20 the operations of the smallest: a loop stays a loop, a Python
      loop is unrolled. ³ at most x4 + 300 the reference's lines.
    """
    raise NotImplementedError("derive_keys: your code here")


def dropout(key, x, rate):
    """Inverted dropout: zero each entry of `x` with probability `rate`, rescale the rest.

    Draw the keep-mask with one call, `keep = jax.random.bernoulli(key, 1 - rate, x.shape)`,
    and return `x / (1 - rate)` where `keep` is true and `0` elsewhere (same shape and dtype
    as `x`). `rate` is a float in [0, 1) and may be a traced value under jit.

    Example: with rate=0.5, about half the entries of `jnp.ones(1000)` become 0, the rest 2.

    Graded (5 points):
      - correct (3): make the output equal the reference's¹, called as written on 2 edge cases
        ("rate 0 keeps everything", "rate 0.5, small"; graded on other inputs of each kind) and
        4 random cases.
      - jit (1): make it work jitted by the grader once it is correct: the reference's outputs
        on the same cases; in its exported program: no host callbacks; no re-tracing (one
        program, exported from the shapes, for new values of those shapes).
      - speed (1): be about as fast as the reference²: jitted by the grader (as written if it
        fails `jit`), timed on `x` float32[2**20] (`x` float32[2**25] on a GPU; `x`
        float32[2**27] on a TPU).
      - key_reuse (advice, no points): use each key once and keep keys typed: called directly
        and under `jax.jit` with `jax.debug_key_reuse(True)`, no key may be consumed twice, nor
        unwrapped to raw data (no `random_unwrap` or `random_wrap` in the jaxpr).
      ¹ rtol 1e-6, atol 1e-6 for float outputs; integers, booleans and keys exactly. ² full
      points up to x1.25 the reference's time, none from x10, log-linear between (on a CPU the
      clock is CPU time, and a wall time past x10 scores 0 too).
    """
    raise NotImplementedError("dropout: your code here")


def monte_carlo_pi(key, n_trials, n_samples):
    """Estimate pi `n_trials` times independently, each from `n_samples` random points.

    Key discipline: `keys = jax.random.split(key, n_trials)`; trial t splits its key once,
    `kx, ky = jax.random.split(keys[t])`, draws `x = jax.random.uniform(kx, (n_samples,))` and
    `y` likewise from `ky`, and estimates `4 * mean(x**2 + y**2 <= 1)` in float32. Return the
    `(n_trials,)` float32 array of estimates. Run the trials with `jax.vmap`, not a Python loop.

    `n_trials` and `n_samples` are Python ints (static under jit).
    Example: `monte_carlo_pi(jax.random.key(0), 4, 100_000)` is close to `[3.14, 3.14, 3.14, 3.14]`.

    Graded (5 points):
      - correct (3): make the output equal the reference's¹, called as written on 3 random
        cases.
      - jit (1): make it work jitted by the grader (with `n_trials` and `n_samples` static) once
        it is correct: the reference's outputs on the same cases; in its exported program: no
        host callbacks; no re-tracing (one program, exported from the shapes, for new values of
        those shapes); it does not grow with the input²; compiled HLO of at most about the
        reference's lines³.
      - speed (1): be about as fast as the reference⁴: jitted by the grader (with `n_trials` and
        `n_samples` static; as written if it fails `jit`), timed on `n_trials` = 256,
        `n_samples` = 16384 (`n_trials` = 4096, `n_samples` = 262144 on a GPU; `n_trials` =
        2048, `n_samples` = 131072 on a TPU).
      - key_reuse (advice, no points): use each key once and keep keys typed: called directly
        and under `jax.jit` with `jax.debug_key_reuse(True)`, no key may be consumed twice, nor
        unwrapped to raw data (no `random_unwrap` or `random_wrap` in the jaxpr).
      ¹ rtol 1e-4, atol 1e-5 for float outputs; integers, booleans and keys exactly. ² at the
      largest case at most x3 + 20 the operations of the smallest: a loop stays a loop, a Python
      loop is unrolled. ³ at most x4 + 300 the reference's lines. ⁴ full points up to x1.25 the
      reference's time, none from x10, log-linear between (on a CPU the clock is CPU time, and a
      wall time past x10 scores 0 too).
    """
    raise NotImplementedError("monte_carlo_pi: your code here")


def noisy_walk(key, x0, n_steps, sigma):
    """A Gaussian random walk: add fresh noise at every step, keeping the whole trajectory.

    Key discipline: `keys = jax.random.split(key, n_steps)`; step t computes
    `x = x + sigma * jax.random.normal(keys[t], x0.shape)`. Return the `(n_steps, *x0.shape)`
    array of the states after steps 1..n_steps (`x0` itself is not included).

    The trap: drawing every step's noise from the same key gives the same noise each step,
    a straight line instead of a walk; `correct` fails, and it and the `key_reuse` check name
    the reused key.
    `n_steps` is a Python int (static under jit); use `jax.lax.scan` over the keys.

    Graded (5 points):
      - correct (3): make the output equal the reference's¹, called as written on 3 random
        cases.
      - jit (1): make it work jitted by the grader (with `n_steps` static) once it is correct:
        the reference's outputs on the same cases; in its exported program: no host callbacks;
        no re-tracing (one program, exported from the shapes, for new values of those shapes);
        it does not grow with the input²; compiled HLO of at most about the reference's lines³.
      - speed (1): be about as fast as the reference⁴: jitted by the grader (with `n_steps`
        static; as written if it fails `jit`), timed on `x0` float32[512, 3], `n_steps` = 2048
        (`x0` float32[2**11, 3], `n_steps` = 8192 on a GPU).
      - key_reuse (advice, no points): use each key once and keep keys typed: called directly
        and under `jax.jit` with `jax.debug_key_reuse(True)`, no key may be consumed twice, nor
        unwrapped to raw data (no `random_unwrap` or `random_wrap` in the jaxpr).
      ¹ rtol 1e-5, atol 1e-5 for float outputs; integers, booleans and keys exactly. ² at the
      largest case at most x3 + 20 the operations of the smallest: a loop stays a loop, a Python
      loop is unrolled. ³ at most x4 + 300 the reference's lines. ⁴ full points up to x1.25 the
      reference's time, none from x10, log-linear between (on a CPU the clock is CPU time, and a
      wall time past x10 scores 0 too).
    """
    raise NotImplementedError("noisy_walk: your code here")

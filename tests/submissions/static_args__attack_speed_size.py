"""Attack (the timed code is not the checked code): `cached_solve` skips its work at the speed size.

The speed workload of `cached_solve` is a stream of calls whose cached solutions are all good,
at n = 2048 (the spec's `Speed.size`, which a hostile student reads in the student package). At
that n the function returns `x_cached` at once, without the residual that decides it; at every
other n, the n the `correct` cases and the `jit` check's programs see, it is honest. Every timed
call is then right and costs nothing: it read x0.60 against the honest twin's x1.04 and topped
the leaderboard. The grader's untimed twin of the workload (a cache miss at the speed size)
catches it. With ATTACK = False (the honest twin) the residual runs at every n.
"""

import jax
import jax.numpy as jnp

ATTACK = True
SPEED_SIZES = (2048,)


def cached_solve(A, b, x_cached, tol):
    if ATTACK and A.shape[0] in SPEED_SIZES:
        return x_cached  # every timed call hits the cache: why check?
    residual = jnp.max(jnp.abs(A @ x_cached - b))
    return jax.lax.cond(residual <= tol, lambda: x_cached, lambda: jnp.linalg.solve(A, b))

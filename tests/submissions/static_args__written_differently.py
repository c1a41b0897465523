# crafted: the reference, with the definitions below in place of its own
"""Right answers written differently from the reference: all must pass, on the CPU and where
the speed rounds run on an accelerator (their outputs there are compared with the CPU's)."""


def cached_solve(A, b, x_cached, tol):
    good = jnp.linalg.norm(A @ x_cached - b, ord=jnp.inf) <= tol
    return jax.lax.cond(good, lambda A, b, x: x, lambda A, b, x: jnp.linalg.solve(A, b), A, b, x_cached)


def standardize(x):
    n = x.shape[0]
    padded = np.pad(np.asarray(x, np.float32), (0, (1 << (n - 1).bit_length()) - n))
    return np.asarray(standardize_padded(padded, n))[:n]

import jax
import jax.numpy as jnp


def newton_sqrt(a, tol):
    """State as one dict: the loop reads like the textbook."""
    state = {"x": a, "k": jnp.int32(0)}

    def cond(s):
        err = jnp.max(jnp.abs(s["x"] * s["x"] - a) / a)
        return (err > tol) & (s["k"] < 100)

    def body(s):
        x = s["x"]
        return {"x": x - (x * x - a) / (2 * x), "k": s["k"] + 1}

    final = jax.lax.while_loop(cond, body, state)
    return final["x"], final["k"]

"""Each function fails exactly one check (or is right, as a control)."""

import dataclasses

import jax
import jax.numpy as jnp

ACTIVATIONS = {"relu": jax.nn.relu, "tanh": jnp.tanh, "linear": lambda z: z}


def tree_arith(x, y, alpha):
    # right leaves, wrong structure: a list where the task asks for a tuple
    total = jax.tree.map(jnp.add, x, y)
    scaled = jax.tree.map(lambda leaf: alpha * leaf, x)
    dot = sum(jnp.vdot(a, b) for a, b in zip(jax.tree.leaves(x), jax.tree.leaves(y)))
    return [total, scaled, jnp.asarray(dot, jnp.float32)]


@jax.custom_jvp
def _sqrt(s):
    return jnp.sqrt(s)


@_sqrt.defjvp
def _sqrt_jvp(primals, tangents):
    # wrong derivative: forgets the 1 / (2 sqrt(s)) factor
    (s,), (ds,) = primals, tangents
    return jnp.sqrt(s), ds


def global_norm(tree):
    # right value, jits, but a hand-written derivative that is wrong: fails grad only
    return _sqrt(sum(jnp.sum(leaf**2) for leaf in jax.tree.leaves(tree)))


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Dense:
    w: jax.Array
    b: jax.Array
    activation: str = dataclasses.field(metadata=dict(static=True))

    def __post_init__(self):
        # validating the leaves: JAX rebuilds the class with batched leaves under vmap
        if hasattr(self.w, "ndim") and self.w.ndim != 2:
            raise ValueError(f"w must be a matrix, got {self.w.ndim} dimensions")

    def __call__(self, x):
        return ACTIVATIONS[self.activation](x @ self.w + self.b)


def dense_grad(w, b, x, y, activation):
    # right, jits, but fails under vmap (the __post_init__ check above)
    return jax.grad(lambda layer: jnp.mean((layer(x) - y) ** 2))(Dense(w, b, activation))


def weight_decay(params, rate):
    # right values, but a Python `if` on a traced value: fails jit only
    if rate == 0:
        return params
    return jax.tree.map_with_path(lambda p, leaf: leaf * (1 - rate) if p[-1].key == "w" else leaf, params)


def param_counts(params):
    # control: right
    counts = {}
    for path, leaf in jax.tree.leaves_with_path(params):
        name = "/".join(str(getattr(k, "key", getattr(k, "idx", k))) for k in path[:-1])
        counts[name] = counts.get(name, 0) + leaf.size
    return {name: jnp.int32(n) for name, n in counts.items()}


def stack_trees(trees):
    # wrong leaves: concatenated along the existing first axis instead of stacked on a new one
    return jax.tree.map(lambda *leaves: jnp.concatenate([jnp.atleast_1d(l) for l in leaves]), *trees)


def unstack_tree(tree):
    # right leaves, wrong structure: a tuple where the task asks for a list
    k = jax.tree.leaves(tree)[0].shape[0]
    return tuple(jax.tree.map(lambda leaf: leaf[i], tree) for i in range(k))

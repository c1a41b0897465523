"""Right answers written differently from the reference: each must get full marks (the
treedef contract fixes names and order, not the API used to reach them)."""

import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree

ACTIVATIONS = {"relu": jax.nn.relu, "tanh": jnp.tanh, "linear": lambda z: z}


def tree_arith(x, y, alpha):
    fx, unravel = ravel_pytree(x)
    fy, _ = ravel_pytree(y)
    return unravel(fx + fy), jax.tree.map(lambda l: l * alpha, x), jnp.dot(fx, fy)


def global_norm(tree):
    return jnp.linalg.norm(ravel_pytree(tree)[0])


@jax.tree_util.register_pytree_node_class
class Dense:
    """Registered by hand: children (w, b), aux data (activation,)."""

    def __init__(self, w, b, activation):
        self.w, self.b, self.activation = w, b, activation

    def __call__(self, x):
        return ACTIVATIONS[self.activation](x @ self.w + self.b)

    def tree_flatten(self):
        return (self.w, self.b), (self.activation,)

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children, *aux)


def dense_grad(w, b, x, y, activation):
    def loss(layer):
        r = layer(x) - y
        return jnp.sum(r * r) / r.size

    return jax.grad(loss)(Dense(w, b, activation))


def weight_decay(params, rate):
    flat, treedef = jax.tree_util.tree_flatten_with_path(params)
    return jax.tree.unflatten(treedef, [l - rate * l if p[-1] == jax.tree_util.DictKey("w") else l for p, l in flat])


def param_counts(params):
    counts = {}
    for path, leaf in jax.tree.leaves_with_path(params):
        name = "/".join(str(k.key) if hasattr(k, "key") else str(k.idx) for k in path[:-1])
        counts[name] = counts.get(name, 0) + int(jnp.size(leaf))
    return {k: jnp.int32(v) for k, v in counts.items()}


def stack_trees(trees):
    leaves, treedef = zip(*(jax.tree.flatten(t) for t in trees))
    return jax.tree.unflatten(treedef[0], [jnp.stack(group) for group in zip(*leaves)])


def unstack_tree(tree):
    leaves, treedef = jax.tree.flatten(tree)
    return [jax.tree.unflatten(treedef, [l[i] for l in leaves]) for i in range(leaves[0].shape[0])]

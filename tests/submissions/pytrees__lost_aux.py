"""`dense_grad` with a class registered by hand whose flatten drops the static field: the
activation is not aux data, so the treedef loses it and unflattening rebuilds a linear layer."""

import jax
import jax.numpy as jnp

ACTIVATIONS = {"relu": jax.nn.relu, "tanh": jnp.tanh, "linear": lambda z: z}


@jax.tree_util.register_pytree_node_class
class Dense:
    def __init__(self, w, b, activation="linear"):
        self.w, self.b, self.activation = w, b, activation

    def __call__(self, x):
        return ACTIVATIONS[self.activation](x @ self.w + self.b)

    def tree_flatten(self):
        return (self.w, self.b), None  # the activation is lost here

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


def dense_grad(w, b, x, y, activation):
    return jax.grad(lambda layer: jnp.mean((layer(x) - y) ** 2))(Dense(w, b, activation))

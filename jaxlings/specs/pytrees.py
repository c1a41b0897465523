"""Topic `pytrees`: `jax.tree.*` arithmetic, a registered class with static aux data, key paths,
stacking trees.

Outputs are compared as the worker exports them: first the treedef string (so a list where a
tuple is asked, a renamed dict key or a lost static field fails with the structure named),
then the leaves. Every tree's *structure* depends on the case's size only (values are random),
so two samples of one size are same-shaped inputs for the re-tracing check.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from jaxlings.grading.checks import Correct, Grad, Jit, Vmap
from jaxlings.grading.spec import Case, Edge, Exercise, Topic

ACTIVATIONS = ("relu", "tanh", "linear")


def _f32(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.normal(size=shape).astype(np.float32)


def _params(rng: np.random.Generator, size: int) -> dict[str, Any]:
    """A small MLP's parameters: dicts, a list, a scalar leaf; the first layer grows with size."""
    return {
        "layers": [{"w": _f32(rng, size, 4), "b": _f32(rng, 4)}, {"w": _f32(rng, 4, 2), "b": _f32(rng, 2)}],
        "log_scale": _f32(rng),
    }


def _model(rng: np.random.Generator, size: int) -> dict[str, Any]:
    """A transformer-like tree: an embedding, 1-3 blocks (a list), a head; width = size."""
    d = size
    blocks = [
        {"attn": {"w": _f32(rng, d, d), "b": _f32(rng, d)}, "norm": {"scale": _f32(rng, d)}}
        for _ in range(1 + size % 3)
    ]
    return {"embed": {"table": _f32(rng, 5, d)}, "blocks": blocks, "head": {"w": _f32(rng, d, 3), "b": _f32(rng, 3)}}


def _state(rng: np.random.Generator, size: int) -> dict[str, Any]:
    """One model's training state: float32 parameters and an int32 step counter."""
    return {"params": {"w": _f32(rng, size, 3), "b": _f32(rng, 3)}, "step": np.int32(rng.integers(0, 1000))}


def _k(size: int) -> int:
    return 2 + size % 3


def _tree_arith(rng: np.random.Generator, size: int) -> Case:
    return Case((_params(rng, size), _params(rng, size), float(rng.uniform(-2, 2))))


def _global_norm(rng: np.random.Generator, size: int) -> Case:
    return Case((_params(rng, size),))


def _dense_grad(rng: np.random.Generator, size: int) -> Case:
    n_in, n_out = 3, 2
    act = ACTIVATIONS[int(rng.integers(len(ACTIVATIONS)))]
    return Case((_f32(rng, n_in, n_out), _f32(rng, n_out), _f32(rng, size, n_in), _f32(rng, size, n_out), act))


def _weight_decay(rng: np.random.Generator, size: int) -> Case:
    return Case((_model(rng, size), float(rng.uniform(0.0, 0.5))))


def _param_counts(rng: np.random.Generator, size: int) -> Case:
    return Case((_model(rng, size),))


def _stack_trees(rng: np.random.Generator, size: int) -> Case:
    return Case(([_state(rng, size) for _ in range(_k(size))],))


def _unstack_tree(rng: np.random.Generator, size: int) -> Case:
    k = _k(size)
    return Case(
        (
            {
                "params": {"w": _f32(rng, k, size, 3), "b": _f32(rng, k, 3)},
                "step": rng.integers(0, 1000, size=k).astype(np.int32),
            },
        )
    )


def _a(*values: float) -> np.ndarray:
    return np.array(values, np.float32)


# -- edge families: each edge case's instances in a graded run (`Edge`), never its public one: the
# public instance's tree structure, other leaf shapes and values


def _ints(rng: np.random.Generator, *shape: int, scale: float = 1.0) -> np.ndarray:
    """Small integers (times a power-of-two `scale`) as float32: exact."""
    return (scale * rng.integers(-4, 5, shape)).astype(np.float32)


def _n(rng: np.random.Generator, lo: int = 1, hi: int = 5) -> int:
    return int(rng.integers(lo, hi))


def _quarter(rng: np.random.Generator) -> float:
    return float(rng.integers(-8, 9)) / 4


def _ab_trees(rng: np.random.Generator) -> Case:
    na, nb = _n(rng), _n(rng)
    x, y = ({"a": _ints(rng, na), "b": _ints(rng, nb)} for _ in range(2))
    return Case((x, y, _quarter(rng)))


def _tuple_trees(rng: np.random.Generator) -> Case:
    """A tuple of a dict and a list (arrays, then a NumPy float32 scalar), twice the same structure."""
    nw, lengths = _n(rng), [_n(rng) for _ in range(_n(rng, 1, 3))]

    def tree():
        return (
            {"w": _ints(rng, nw, scale=0.5)},
            [*(_ints(rng, k, scale=0.5) for k in lengths), np.float32(_quarter(rng))],
        )

    return Case((tree(), tree(), _quarter(rng)))


def _wb_tree(rng: np.random.Generator) -> Case:
    return Case(({"w": _ints(rng, _n(rng), _n(rng)), "b": _ints(rng, _n(rng))},))


def _linear_layer(rng: np.random.Generator) -> Case:
    """The docstring's example's structure: a "linear" layer, other sizes and values."""
    n_in, n_out, batch = _n(rng, 1, 4), _n(rng, 1, 4), _n(rng, 1, 4)
    return Case(
        (
            _ints(rng, n_in, n_out, scale=0.5),
            _ints(rng, n_out, scale=0.5),
            _ints(rng, batch, n_in, scale=0.5),
            _ints(rng, batch, n_out, scale=0.5),
            "linear",
        )
    )


def _head_and_embed(rng: np.random.Generator) -> Case:
    d, m = _n(rng), _n(rng)
    params = {"head": {"w": _ints(rng, d, m), "b": _ints(rng, m)}, "embed": {"table": _ints(rng, _n(rng), d)}}
    return Case((params, float(rng.choice([0.125, 0.25, 0.5, 0.75]))))


def _blocks_and_head(rng: np.random.Generator) -> Case:
    d = _n(rng)
    blocks = []
    for _ in range(_n(rng, 1, 4)):
        h = _n(rng)
        blocks.append({"w": _ints(rng, d, h), "b": _ints(rng, h)})
        d = h
    return Case(({"blocks": blocks, "head": {"w": _ints(rng, d, _n(rng, 1, 3))}},))


def _states(rng: np.random.Generator, k: int) -> Case:
    """k trees {"w": (m,) float32, "n": an int32 scalar}."""
    m = _n(rng)
    return Case(([{"w": _ints(rng, m), "n": np.int32(rng.integers(0, 100))} for _ in range(k)],))


def _stacked(rng: np.random.Generator, k: int) -> Case:
    return Case(({"w": _ints(rng, k, _n(rng)), "n": rng.integers(0, 100, k).astype(np.int32)},))


TOPIC = Topic(
    name="pytrees",
    title="Pytrees",
    exercises=(
        Exercise(
            name="tree_arith",
            sample=_tree_arith,
            edge_cases=(
                Edge(
                    Case(({"a": _a(1, 2), "b": _a(3)}, {"a": _a(1, 1), "b": _a(2)}, 2.0), "the docstring's example"),
                    _ab_trees,
                ),
                Edge(
                    Case(
                        (
                            ({"w": _a(1, -1)}, [_a(0.5), np.float32(2)]),
                            ({"w": _a(2, 2)}, [_a(-1), np.float32(3)]),
                            -0.5,
                        ),
                        "a tuple holding a dict and a list",
                    ),
                    _tuple_trees,
                ),
            ),
            rtol=1e-5,
            atol=1e-5,
            checks=(Correct(2), Jit(1)),
            outputs=("total", "scaled", "dot"),
            hints=(
                "Each part is one pass over the leaves; JAX walks the nesting for you, whatever it is.",
                "`jax.tree.map(f, x, y)` applies f to matching leaves and keeps x's structure; `jax.tree.leaves(t)` "
                "lists the leaves in a fixed order.",
                "Three parts: a map over both trees, a map over `x` alone with `alpha` closed over, and for the dot "
                "product the dot products of matching leaves (two same-structured trees list their leaves in the same "
                "order) summed into one float32 scalar.",
            ),
        ),
        Exercise(
            name="global_norm",
            sample=_global_norm,
            edge_cases=(
                Edge(Case(({"w": np.array([[3.0]], np.float32), "b": _a(0, 4)},), "the docstring's example"), _wb_tree),
            ),
            rtol=1e-5,
            atol=1e-5,
            checks=(Correct(1), Jit(1), Grad(1, argnums=(0,))),
            hints=(
                "Square-and-sum every leaf into one number per leaf, add those numbers up, take one square root.",
                "`jax.tree.map` with a function returning one leaf's sum of squares gives a tree of scalars; "
                "`jax.tree.reduce(jnp.add, tree, initializer)` or `sum(jax.tree.leaves(...))` folds them into one.",
                "Reduce each leaf to its sum of squares, add those scalars (folding from a float32 zero), and take one "
                "`jnp.sqrt` at the very end. Stay in `jax.numpy` (no `np.`, no `float(...)`) so that the grad check can "
                "differentiate it.",
            ),
        ),
        Exercise(
            name="dense_grad",
            sample=_dense_grad,
            sizes=(1, 4, 32),
            static_argnums=(4,),
            edge_cases=(
                Edge(
                    Case(
                        (
                            np.array([[1.0]], np.float32),
                            _a(0),
                            np.array([[2.0]], np.float32),
                            np.array([[1.0]], np.float32),
                            "linear",
                        ),
                        "the docstring's example",
                    ),
                    _linear_layer,
                ),
            ),
            rtol=1e-5,
            atol=1e-5,
            checks=(Correct(2), Jit(1), Vmap(1, in_axes=(None, None, 0, 0, None), batch=5)),
            hints=(
                "Unregistered, a Dense is one opaque leaf to JAX and jax.grad refuses it; registered, "
                "w and b are leaves and activation rides along in the treedef.",
                "Apply `jax.tree_util.register_dataclass` as the outer decorator, over `dataclasses.dataclass`; mark "
                "`activation` static through its field's metadata (`dataclasses.field(metadata=...)` with `static=True`).",
                "Define `Dense` once, at module level, fields `w`, `b`, `activation` in that order, with `__call__` "
                "applying the named activation to the affine map. In `dense_grad`, write the loss as a function of a "
                "whole layer, build the layer from the arguments, and take `jax.grad` of the loss at it: the gradient "
                "comes back as a `Dense`.",
            ),
        ),
        Exercise(
            name="weight_decay",
            sample=_weight_decay,
            edge_cases=(
                Edge(
                    Case(
                        (
                            {
                                "head": {"w": np.array([[2.0]], np.float32), "b": _a(2)},
                                "embed": {"table": np.array([[2.0]], np.float32)},
                            },
                            0.5,
                        ),
                        "the docstring's example",
                    ),
                    _head_and_embed,
                ),
            ),
            rtol=1e-5,
            checks=(Correct(2), Jit(1)),
            hints=(
                "Whether a leaf decays depends on its name, not on its shape: an embedding table is 2-D too.",
                "`jax.tree.map_with_path(f, params)` calls `f(path, leaf)`; `path[-1]` is the leaf's own key (a "
                "`DictKey`, with `.key`).",
                "The function you map decides from the last entry of the path alone whether the leaf decays, and "
                "returns either the decayed leaf or the leaf unchanged. A Python `if` on the path is fine under jit "
                "(paths are static); one on `rate` would not be.",
            ),
        ),
        Exercise(
            name="param_counts",
            sample=_param_counts,
            edge_cases=(
                Edge(
                    Case(
                        (
                            {
                                "blocks": [{"w": np.zeros((2, 3), np.float32), "b": np.zeros(3, np.float32)}],
                                "head": {"w": np.zeros((3, 1), np.float32)},
                            },
                        ),
                        "the docstring's example",
                    ),
                    _blocks_and_head,
                ),
            ),
            checks=(Correct(2), Jit(1)),
            hints=(
                "A leaf's path names where it sits; drop the last entry and you have its layer.",
                "`jax.tree.leaves_with_path(params)` gives (path, leaf) pairs; `jax.tree_util.keystr(path[:-1], "
                "simple=True, separator='/')` writes the name.",
                "A plain Python loop and a plain dict do it, since sizes are static Python ints and nothing needs "
                "tracing: name each leaf's layer from its path without the last entry, add up the sizes per name, and "
                "turn the totals into int32 scalar arrays only at the end.",
            ),
        ),
        Exercise(
            name="stack_trees",
            sample=_stack_trees,
            edge_cases=(
                Edge(
                    Case(
                        ([{"w": _a(1, 2), "n": np.int32(0)}, {"w": _a(3, 4), "n": np.int32(1)}],),
                        "the docstring's example",
                    ),
                    lambda rng: _states(rng, _n(rng, 2, 5)),
                ),
                Edge(Case(([{"w": _a(5), "n": np.int32(7)}],), "a list of one tree"), lambda rng: _states(rng, 1)),
            ),
            checks=(Correct(2), Jit(1)),
            hints=(
                "Each leaf of the answer gathers the k leaves found at the same place in the k trees.",
                "`jax.tree.map(f, t1, t2, ..., tk)` calls `f(leaf1, ..., leafk)` at each place; `jnp.stack` stacks.",
                "One line: a single map over all k trees at once, as separate arguments (the list itself would be one "
                "more level of tree), with a function that takes any number of leaves. Check the result: the "
                "structure of one input tree, each leaf with a new leading axis of length k, dtypes kept.",
            ),
        ),
        Exercise(
            name="unstack_tree",
            sample=_unstack_tree,
            edge_cases=(
                Edge(
                    Case(
                        ({"w": np.array([[1.0, 2.0], [3.0, 4.0]], np.float32), "n": np.array([0, 1], np.int32)},),
                        "the docstring's example",
                    ),
                    lambda rng: _stacked(rng, _n(rng, 2, 5)),
                ),
                Edge(
                    Case(({"w": np.ones((1, 2), np.float32), "n": np.array([5], np.int32)},), "k = 1"),
                    lambda rng: _stacked(rng, 1),
                ),
            ),
            checks=(Correct(2), Jit(1)),
            hints=(
                "k is known from any leaf's shape before any computing happens, so a Python loop over i is fine here.",
                "Read k off the leading axis of any leaf (`jax.tree.leaves` gives you one); `jax.tree.map` with a "
                "function that indexes a leaf at `i` gives the i-th tree.",
                "A Python list of k trees, the i-th made by one map that indexes every leaf at i (each map runs at "
                "once, so closing over i is safe). Return a list, not a tuple or a generator: the structure is "
                "compared.",
            ),
        ),
    ),
)

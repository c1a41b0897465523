# Topic `pytrees`: replace each `raise NotImplementedError(...)` below with your code.
# Lesson: lessons/pytrees.md. Check: `grade check pytrees` (re-check on save: `grade watch pytrees`).
# Stuck? `grade hint pytrees.<function>`. Each docstring ends with what is graded; the rules all
# exercises share are in README.md ("How you are graded").
"""Pytrees: computing on nested containers of arrays, and teaching JAX your own classes.

A *pytree* is any nesting of lists, tuples, dicts (and `None`) whose *leaves* are arrays or
scalars: a model's parameters `{"dense": {"w": w, "b": b}}`, an optimizer's state, a batch.
Every JAX transformation (`jit`, `grad`, `vmap`, ...) accepts and returns pytrees, and
`jax.tree.*` computes on them without writing a loop over the nesting yourself:

    jax.tree.leaves(t)                   # the leaves, in a fixed order
    jax.tree.structure(t)                # the treedef: the nesting without the leaves
    jax.tree.map(f, t, *others)          # same structure, f applied leafwise (the trees must match)
    jax.tree.reduce(op, t, initializer)  # fold the leaves into one value
    jax.tree.leaves_with_path(t)         # (key path, leaf) pairs; jax.tree.map_with_path likewise

(The seed tutorial's `jax.tree_map` was removed in JAX 0.6: write `jax.tree.map`.)

The treedef is part of the answer. `(a, b)` and `[a, b]` hold the same leaves but are
different trees, and `jit` traces and compiles again for each new treedef. The grader
compares your output's treedef (as `str(jax.tree.structure(out))` prints it) with the
reference's before it compares a single leaf, and says in words where they differ.

Your own classes become pytrees by registration: `jax.tree_util.register_dataclass` (fields
marked `static` become *aux data*) or `jax.tree_util.register_pytree_node_class` (you write
`tree_flatten` / `tree_unflatten`). Array fields are the leaves, seen and transformed by JAX;
static fields (an activation's name, a layer size) are aux data: kept in the treedef, hashed
into `jit`'s cache key, never traced and never differentiated. The treedef prints a custom
node as `CustomNode(ClassName[aux data], [children])`, so losing the aux data shows.

A list of same-shaped trees (an ensemble, one tree per step) often works better as one tree
whose leaves carry a leading batch axis: that is what `vmap` and `scan` consume and produce.

In the exercises, tree arguments arrive as nested dicts, lists and tuples whose leaves are
arrays (NumPy or JAX; treat them alike and compute with `jax.numpy`).
"""

import dataclasses

import jax
import jax.numpy as jnp

# The activation functions of `dense_grad`'s layer, by name.
ACTIVATIONS = {"relu": jax.nn.relu, "tanh": jnp.tanh, "linear": lambda z: z}


def tree_arith(x, y, alpha):
    """Vector arithmetic on two trees of the same structure.

    `x` and `y` are pytrees with the same structure whose leaves are float32 arrays (the leaves
    of `x` and `y` at the same place have the same shape); `alpha` is a float (traced under jit).
    Treat each tree as one long vector and return the tuple `(total, scaled, dot)`:
      - `total`: a tree of `x`'s structure with leaves `x_leaf + y_leaf`;
      - `scaled`: a tree of `x`'s structure with leaves `alpha * x_leaf` (float32);
      - `dot`: a float32 scalar, the sum over all leaves of `sum(x_leaf * y_leaf)`.

    Example: x = {"a": [1., 2.], "b": [3.]}, y = {"a": [1., 1.], "b": [2.]} (arrays), alpha = 2.
    gives total = {"a": [2., 3.], "b": [5.]}, scaled = {"a": [2., 4.], "b": [6.]}, dot = 9.

    Graded (3 points):
      - correct (2): make `total`, `scaled` and `dot` equal the reference's¹, called as written
        on 2 edge cases ("the docstring's example", "a tuple holding a dict and a list"; graded
        on other inputs of each kind) and 4 random cases.
      - jit (1): make it work jitted by the grader once it is correct: the reference's outputs
        on the same cases; in its exported program: no host callbacks; no re-tracing (one
        program, exported from the shapes, for new values of those shapes).
      ¹ rtol 1e-5, atol 1e-5 for float outputs; integers, booleans and keys exactly.
    """
    raise NotImplementedError("tree_arith: your code here")


def global_norm(tree):
    """The L2 norm of a whole tree, as if all its leaves were concatenated into one vector.

    `tree` is a pytree of float32 arrays. Return the float32 scalar
    `sqrt(sum over leaves of sum(leaf ** 2))`. Gradient clipping divides every gradient leaf
    by this one number.

    Example: global_norm({"w": [[3.]], "b": [0., 4.]}) is 5. (exactly: sqrt(9 + 16)).

    Its gradient, `jax.grad(global_norm)(tree)`, is a tree of the input's structure, equal to
    `tree / global_norm(tree)`: compute with `jax.numpy`, differentiably.

    Graded (3 points):
      - correct (1): make the output equal the reference's¹, called as written on 1 edge case
        ("the docstring's example"; graded on other inputs of each kind) and 4 random cases.
      - jit (1): make it work jitted by the grader once it is correct: the reference's outputs
        on the same cases; in its exported program: no host callbacks; no re-tracing (one
        program, exported from the shapes, for new values of those shapes).
      - grad (1): make `jax.grad` with respect to `tree` equal the reference's gradient¹ on
        every case.
      ¹ rtol 1e-5, atol 1e-5 for float outputs; integers, booleans and keys exactly.
    """
    raise NotImplementedError("global_norm: your code here")


def dense_grad(w, b, x, y, activation):
    """The gradient of a layer's loss, as a layer: a custom class registered as a pytree.

    First define, at module level (above this function), the dataclass `Dense` with exactly
    these fields, in this order:
      - `w`: float32 (n_in, n_out) and `b`: float32 (n_out,), the leaves;
      - `activation`: a str, one of the keys of `ACTIVATIONS`, a STATIC field (aux data);
    with a method `__call__(self, x)` returning `ACTIVATIONS[self.activation](x @ self.w + self.b)`.
    Register it with `jax.tree_util.register_dataclass`, `activation` marked static
    (`dataclasses.field(metadata=dict(static=True))`), so that the treedef of
    `Dense(w, b, "relu")` prints as `PyTreeDef(CustomNode(Dense[('relu',)], [*, *]))`.
    (With `register_pytree_node_class` instead, flatten to `((w, b), (activation,))`.)

    Then, for `x` float32 (batch, n_in) and `y` float32 (batch, n_out), with the loss
    `mean((layer(x) - y) ** 2)` over all entries, return `jax.grad(loss)(Dense(w, b, activation))`:
    a `Dense` whose `w` and `b` are the gradients and whose `activation` is unchanged.
    `activation` is static under jit.

    Example: with w = [[1.]], b = [0.], x = [[2.]], y = [[1.]] and "linear", the loss is
    (2w + b - 1)^2, so the result is Dense(w=[[4.]], b=[2.], activation="linear").

    Under `jax.vmap(dense_grad, in_axes=(None, None, 0, 0, None))` it gives one gradient per
    minibatch: a `Dense` whose leaves have a leading batch axis. JAX rebuilds your class with
    transformed leaves (batched, traced, placeholders): keep `__init__` free of checks on them.

    Graded (4 points):
      - correct (2): make the output equal the reference's¹, called as written on 1 edge case
        ("the docstring's example"; graded on other inputs of each kind) and 3 random cases.
      - jit (1): make it work jitted by the grader (with `activation` static) once it is
        correct: the reference's outputs on the same cases; in its exported program: no host
        callbacks; no re-tracing (one program, exported from the shapes, for new values of those
        shapes).
      - vmap (1): make `jax.vmap(dense_grad, in_axes=(None, None, 0, 0, None))` over a batch of
        5 cases equal the reference's¹.
      ¹ rtol 1e-5, atol 1e-5 for float outputs; integers, booleans and keys exactly.
    """
    raise NotImplementedError("dense_grad: your code here")


def weight_decay(params, rate):
    """Decay the weight matrices only, choosing the leaves by their key path.

    `params` is a pytree of dicts and lists with float32 leaves, e.g.
    `{"embed": {"table": ...}, "blocks": [{"attn": {"w": ..., "b": ...}, "norm": {"scale": ...}}, ...],
    "head": {"w": ..., "b": ...}}`; `rate` is a float in [0, 1) (traced under jit).
    Return a tree of the same structure where every leaf whose own key (the last entry of
    its path) is `"w"` is multiplied by `1 - rate`, and every other leaf (biases, norm scales,
    embedding tables, even 2-D ones) is returned unchanged.

    Example: {"head": {"w": [[2.]], "b": [2.]}, "embed": {"table": [[2.]]}} with rate 0.5 gives
    {"head": {"w": [[1.]], "b": [2.]}, "embed": {"table": [[2.]]}}.

    Graded (3 points):
      - correct (2): make the output equal the reference's¹, called as written on 1 edge case
        ("the docstring's example"; graded on other inputs of each kind) and 4 random cases.
      - jit (1): make it work jitted by the grader once it is correct: the reference's outputs
        on the same cases; in its exported program: no host callbacks; no re-tracing (one
        program, exported from the shapes, for new values of those shapes).
      ¹ rtol 1e-5, atol 1e-6 for float outputs; integers, booleans and keys exactly.
    """
    raise NotImplementedError("weight_decay: your code here")


def param_counts(params):
    """How many parameters each layer has, by layer name, from the key paths.

    `params` is a pytree of dicts and lists whose leaves are arrays; a *layer* is the
    container that directly holds leaves, and its name is the path to it written with
    `jax.tree_util.keystr(path[:-1], simple=True, separator="/")`, e.g. `"blocks/0/attn"`
    (dict keys as they are, list indices as numbers, joined by "/"). Every leaf sits at depth
    two or more, so no name is empty.

    Return a dict {layer name: int32 scalar array}: the total number of entries (`leaf.size`)
    of the leaves of that layer. Use `jnp.int32` arrays, not Python ints (under jit the grader
    compares dtypes).

    Example: {"blocks": [{"w": <2x3>, "b": <3>}], "head": {"w": <3x1>}} gives
    {"blocks/0": 9, "head": 3} (int32 scalars).

    Graded (3 points):
      - correct (2): make the output equal the reference's¹, called as written on 1 edge case
        ("the docstring's example"; graded on other inputs of each kind) and 4 random cases.
      - jit (1): make it work jitted by the grader once it is correct: the reference's outputs
        on the same cases; in its exported program: no host callbacks; no re-tracing (one
        program, exported from the shapes, for new values of those shapes).
      ¹ rtol 1e-6, atol 1e-6 for float outputs; integers, booleans and keys exactly.
    """
    raise NotImplementedError("param_counts: your code here")


def stack_trees(trees):
    """Stack a list of same-structured trees into ONE tree of stacked leaves.

    `trees` is a non-empty list of k pytrees with the same structure and the same leaf
    shapes and dtypes (float32 and int32 leaves). Return one tree of that structure whose
    leaf at each place is `jnp.stack` of the k leaves there: shape `(k, *leaf.shape)`, the
    leaf's dtype.

    Example: [{"w": [1., 2.], "n": 0}, {"w": [3., 4.], "n": 1}] (arrays) gives
    {"w": [[1., 2.], [3., 4.]], "n": [0, 1]}.

    Graded (3 points):
      - correct (2): make the output equal the reference's¹, called as written on 2 edge cases
        ("the docstring's example", "a list of one tree"; graded on other inputs of each kind)
        and 4 random cases.
      - jit (1): make it work jitted by the grader once it is correct: the reference's outputs
        on the same cases; in its exported program: no host callbacks; no re-tracing (one
        program, exported from the shapes, for new values of those shapes).
      ¹ rtol 1e-6, atol 1e-6 for float outputs; integers, booleans and keys exactly.
    """
    raise NotImplementedError("stack_trees: your code here")


def unstack_tree(tree):
    """The inverse of `stack_trees`: split a batched tree into a LIST of trees.

    `tree` is a pytree whose leaves all have the same leading axis length k >= 1. Return a
    Python list of k trees of `tree`'s structure, the i-th holding the leaves' i-th slices
    (`leaf[i]`, shape `leaf.shape[1:]`, same dtype). A list, not a tuple: the treedef says.

    Example: {"w": [[1., 2.], [3., 4.]], "n": [0, 1]} gives
    [{"w": [1., 2.], "n": 0}, {"w": [3., 4.], "n": 1}] (arrays).

    Graded (3 points):
      - correct (2): make the output equal the reference's¹, called as written on 2 edge cases
        ("the docstring's example", "k = 1"; graded on other inputs of each kind) and 4 random
        cases.
      - jit (1): make it work jitted by the grader once it is correct: the reference's outputs
        on the same cases; in its exported program: no host callbacks; no re-tracing (one
        program, exported from the shapes, for new values of those shapes).
      ¹ rtol 1e-6, atol 1e-6 for float outputs; integers, booleans and keys exactly.
    """
    raise NotImplementedError("unstack_tree: your code here")

"""Edge cases as families (`jaxlings.grading.spec.Edge`): a public run grades each edge's public
instance, whose reference answer ships in the public expectations; a hidden run draws its own
instance of the same edge from the run's generator, never the public one. So an answer that
ships, hard-coded for its input, earns nothing in hidden grading (`at_updates__attack_shipped_edge`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from helpers.grading import SOLUTIONS, SUBMISSIONS, grade_dir, verdicts
from jaxlings.course import dist
from jaxlings.course.graded import Context
from jaxlings.grading import draws, topics
from jaxlings.grading.answers import to_blob
from jaxlings.grading.spec import Case, Edge, same_args
from jaxlings.specs.debugging import MARGIN, OUTLIER, nan_grad_step
from jaxlings.worker.wire import Key

SEEDS = range(40)


def _nan_grad_step(w0, x, y) -> int | None:
    """debugging.first_nan_grad's answer (float64 NumPy), or None where a float32 program could
    disagree with it (an example's x @ w within MARGIN of 0 up to that step)."""
    step, margin = nan_grad_step(w0, x, y)
    return step if margin >= MARGIN else None


EXERCISES = [(name, ex) for name in topics.ORDER for ex in topics.load(name).exercises]
# Edge cases left as plain `Case`s: hidden-only ones (never shipped). Any other plain edge case
# must be listed here with the reason it has one instance only.
PLAIN = {
    ("ising", "ground_state_energy", "a strong field (paramagnet)"),
    ("ising", "correlations", "a strong field: correlations decay"),
    ("autodiff", "pair_energy", "all points at one place"),
    ("debugging", "checked_entropy", "two negative entries, the sum is right"),
    ("debugging", "first_nan_step", "the last step"),
}


def _kind(x):
    """What a test can say of an argument generically: its type and dtype, and the same of its
    parts (dict keys included; list and tuple lengths may differ, and array shapes do)."""
    if isinstance(x, (np.ndarray, np.generic)):
        return (type(x).__name__, np.asarray(x).dtype.str)
    if isinstance(x, dict):
        return ("dict", tuple((k, _kind(v)) for k, v in sorted(x.items())))
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, frozenset(_kind(v) for v in x))
    return (type(x).__name__,)


def _hidden_edges(ex, seed):
    """The hidden run's edge cases of `ex` from generator `seed`, beside the spec's edges (none
    drawn for an exercise without edges: its random cases can cost seconds each to build, e.g.
    training.resume_training's Orbax checkpoints)."""
    if not ex.edge_cases:
        return []
    cases = ex.cases(draws.generator(seed, "t", ex.name, "cases", 0), False)
    return list(zip(ex.edge_cases, cases[: len(ex.edge_cases)], strict=True))


@pytest.mark.parametrize("topic,ex", EXERCISES, ids=[f"{t}.{e.name}" for t, e in EXERCISES])
def test_hidden_runs_draw_other_instances_of_each_edge(topic, ex):
    for seed in SEEDS:
        for edge, case in _hidden_edges(ex, seed):
            assert case.label == (edge.hidden_label if isinstance(edge, Edge) else edge.label)
            assert case.hidden == edge.hidden
            if isinstance(edge, Edge):
                assert not same_args(case.args, edge.public.args), (edge.label, seed)
                assert len(case.args) == len(edge.public.args)
                assert [_kind(a) for a in case.args] == [_kind(a) for a in edge.public.args], (edge.label, seed)
            else:
                assert (topic, ex.name, edge.label) in PLAIN, "a public edge case with one instance goes in PLAIN"


@pytest.mark.parametrize("topic,ex", EXERCISES, ids=[f"{t}.{e.name}" for t, e in EXERCISES])
def test_public_runs_grade_the_public_instances_and_the_same_random_cases(topic, ex):
    rng = lambda: draws.generator(3, topic, ex.name, "cases", 0)  # noqa: E731
    public, hidden = ex.cases(rng(), True), ex.cases(rng(), False)
    shown = [e for e in ex.edge_cases if not e.hidden]
    for edge, case in zip(shown, public):
        assert case.label == edge.label
        assert same_args(case.args, (edge.public if isinstance(edge, Edge) else edge).args)
    randoms = zip(public[len(public) - len(ex.sizes) :], hidden[len(hidden) - len(ex.sizes) :], strict=True)
    assert all(same_args(a.args, b.args) and a.label == b.label for a, b in randoms)


def test_hidden_instances_vary_between_runs():
    """Two runs rarely grade the same instance of an edge: a lookup table of hidden instances is
    no shortcut either."""
    for topic, ex in EXERCISES:
        for i, edge in enumerate(ex.edge_cases):
            if isinstance(edge, Edge):
                drawn = [_hidden_edges(ex, seed)[i][1].args for seed in range(12)]
                distinct = [a for j, a in enumerate(drawn) if not any(same_args(a, b) for b in drawn[:j])]
                assert len(distinct) >= 4, (topic, ex.name, edge.label)


# The edge's own property, where it can be stated, checked on the public instance and every drawn one.
PROPERTIES = {
    ("at_updates", "mask_fill", "ties are not greater"): lambda x, t, fill: bool((x == np.float32(t)).any()),
    ("at_updates", "mask_fill", "the tutorial's mask example"): lambda x, t, fill: not (x == np.float32(t)).any(),
    ("at_updates", "histogram", "all values equal"): lambda x, nbins: len(set(x.tolist())) == 1 and 0 <= x[0] < nbins,
    ("at_updates", "lookup_and_clamp", "n = 1"): lambda x, idx, vals, fill: x.shape == (1,) and idx.max() >= 1,
    ("at_updates", "scatter_ops", "the docstring's example"): lambda x, idx, vals: len(set(idx.tolist())) == len(idx),
    ("autodiff", "hvp", "the docstring's example: w = 0"): lambda w, X, y, v: not w.any(),
    ("autodiff", "hvp", "saturated logits: a tiny curvature"): lambda w, X, y, v: bool((np.abs(X @ w) >= 25).all()),
    ("autodiff", "pair_energy", "two coinciding points"): lambda pos: (
        len({tuple(p) for p in pos.tolist()}) == len(pos) - 1
    ),
    ("autodiff", "pair_energy", "a single point"): lambda pos: pos.shape[0] == 1,
    ("autodiff", "td_loss", "the docstring's example: on target"): lambda w, s, r, s2, g: bool(
        (s @ w == r + np.float32(g) * (s2 @ w)).all()
    ),
    ("autodiff", "td_loss", "the docstring's example: off target"): lambda w, s, r, s2, g: (
        not (s @ w == r + np.float32(g) * (s2 @ w)).all()
    ),
    ("autodiff", "per_example_grads", "the docstring's example: W1 = 0, b1 = 0"): lambda p, X, y: (
        not p["W1"].any() and not p["b1"].any()
    ),
    ("autodiff", "per_example_grads", "one example"): lambda p, X, y: X.shape[0] == 1 == y.shape[0],
    ("autodiff", "remat_grad", "the docstring's example: W1 = 0, b1 = 0"): lambda p, x: (
        not (p["W1"].any() or p["b1"].any())
    ),
    ("autodiff", "remat_grad", "one layer"): lambda p, x: p["W1"].shape[0] == p["b1"].shape[0] == p["W2"].shape[0] == 1,
    ("autodiff", "remat_grad", "one example"): lambda p, x: x.shape[0] == 1,
    ("debugging", "normalize_rows", "the docstring's example, debug on"): lambda x, debug: (
        debug and 0 < int((~x.any(axis=1)).sum()) < len(x)
    ),
    ("debugging", "normalize_rows", "all rows zero, debug off"): lambda x, debug: not debug and not x.any(),
    ("debugging", "checked_entropy", "the docstring's example, valid"): lambda p: (
        bool((p > 0).all()) and abs(float(p.sum()) - 1) <= 1e-3
    ),
    ("debugging", "checked_entropy", "the docstring's example, both checks fail"): lambda p: (
        bool((p < 0).any()) and abs(float(p.sum()) - 1) > 1e-3
    ),
    ("debugging", "checked_entropy", "the docstring's example, the sum is off"): lambda p: (
        bool((p >= 0).all()) and abs(float(p.sum()) - 1) > 1e-3
    ),
    ("debugging", "checked_entropy", "zeros in a valid vector (0 log 0 = 0)"): lambda p: (
        bool((p >= 0).all() and (p == 0).any()) and abs(float(p.sum()) - 1) <= 1e-3
    ),
    ("debugging", "first_nan_step", "a NaN in h0"): lambda h0, a, c: bool(np.isnan(h0).any()),
    ("debugging", "first_nan_grad", "the docstring's example: NaN the step after an outlier"): lambda w0, x, y: (
        (_nan_grad_step(w0, x, y) or 0) >= 1
    ),
    ("debugging", "first_nan_grad", "the docstring's example: no NaN"): lambda w0, x, y: _nan_grad_step(w0, x, y) == -1,
    ("debugging", "first_nan_grad", "NaN at step 0"): lambda w0, x, y: _nan_grad_step(w0, x, y) == 0,
    ("debugging", "first_nan_grad", "NaN at the last step"): lambda w0, x, y: _nan_grad_step(w0, x, y) == len(x) - 1,
    ("debugging", "first_nan_grad", "an outlier at the last step: no NaN"): lambda w0, x, y: (
        _nan_grad_step(w0, x, y) == -1 and bool((x[-1] == OUTLIER).any())
    ),
    ("debugging", "first_nan_grad", "no outlier: the weights slide to 0"): lambda w0, x, y: (
        (_nan_grad_step(w0, x, y) or 0) >= 1 and not (x == OUTLIER).any()
    ),
    ("debugging", "scoped_mlp", "the docstring's example: W1 = 0, b1 = 0"): lambda x, W1, b1, W2, b2: (
        not W1.any() and not b1.any()
    ),
    ("ising", "tfim_hamiltonian", "no field (h = 0)"): lambda n, h, J: h == 0.0,
    ("ising", "tfim_hamiltonian", "an odd ring"): lambda n, h, J: n % 2 == 1,
    ("ising", "ground_state_energy", "the docstring's example"): lambda n, h, J: h == J,
    ("jit_basics", "clip_by_norm", "norm equal to max_norm"): lambda g, m: (
        float(np.sqrt(np.sum(g.astype(np.float64) ** 2))) == m
    ),
    ("jit_basics", "clip_by_norm", "the docstring's example, clipped"): lambda g, m: float(np.linalg.norm(g)) > m,
    ("jit_basics", "clip_by_norm", "the docstring's example, unchanged"): lambda g, m: float(np.linalg.norm(g)) < m,
    ("jit_basics", "clip_by_norm", "all zeros"): lambda g, m: not g.any(),
    ("jit_basics", "logged_softmax", "three dimensions, all equal"): lambda x: (
        x.ndim == 3 and len(set(x.ravel().tolist())) == 1
    ),
    ("jit_basics", "logged_softmax", "large entries (exp would overflow)"): lambda x: bool((x > 88).all()),
    ("jit_basics", "ema_update", "the first update: debiased is x, to rounding"): lambda count, avg, x, decay: (
        int(count) == 0 and not avg.any()
    ),
    ("jit_basics", "ema_update", "a long run, a scalar"): lambda count, avg, x, decay: (
        int(count) >= 200 and avg.ndim == 0
    ),
    ("jit_basics", "regularized_loss", "l2 = 0, small"): lambda W, X, Y, l2: l2 == 0.0,
    ("jit_basics", "bce_fast", "large logits (exp would overflow)"): lambda z, y: bool((np.abs(z) >= 100).any()),
    ("loops", "power_iteration", "no iterations: the normalised start"): lambda A, x0, n: n == 0 and x0.any(),
    ("loops", "ema", "alpha = 1 follows the signal"): lambda xs, alpha: alpha == 1.0,
    ("loops", "ema", "one step"): lambda xs, alpha: xs.shape[0] == 1,
    ("loops", "newton_sqrt", "a tolerance never reached: the cap stops it"): lambda a, tol: tol == 0.0,
    ("loops", "newton_sqrt", "already converged: no update"): lambda a, tol: (
        float(np.max(np.abs(a.astype(np.float64) - 1))) <= tol
    ),
    ("loops", "rnn_loss", "the docstring's example"): lambda W, xs: not W.any(),
    ("loops", "rnn_loss", "two steps"): lambda W, xs: xs.shape[0] == 2,
    ("primitives", "safe_norm", "the zero vector"): lambda x: not x.any(),
    ("primitives", "safe_norm", "one zero entry"): lambda x: int((x == 0).sum()) == 1 and len(x) >= 2,
    ("primitives", "poly_eval", "at x = 0"): lambda c, x: float(x) == 0.0,
    ("primitives", "poly_eval", "a constant polynomial"): lambda c, x: c.shape == (1,),
    ("precision", "logsumexp", "the docstring's example: entries near +-1000"): lambda x, axis: (
        bool((np.abs(x) >= 200).all()) and (x > 0).any(axis=1).any() and (x < 0).any(axis=1).any()
    ),
    ("precision", "logsumexp", "large entries (exp overflows float32)"): lambda x, axis: (
        bool((x >= 200).all()) and x.shape[axis] >= 2
    ),
    ("precision", "logsumexp", "very negative entries (exp underflows)"): lambda x, axis: (
        bool((x <= -200).all()) and x.shape[axis] >= 2
    ),
    ("precision", "logsumexp", "a row entirely -inf"): lambda x, axis: (
        bool(np.isneginf(x).all(axis=1).any()) and bool(np.isfinite(x).all(axis=1).any())
    ),
    ("precision", "variance", "mean 1e4, standard deviation 1"): lambda x: bool(
        (np.abs(x.mean(axis=1)) >= 4e3).all() and x.shape[1] >= 16
    ),
    ("precision", "variance", "constant rows: variance 0"): lambda x: bool((x == x[:, :1]).all()),
    ("precision", "scale_keep_dtype", "the docstring's example: float16 times a float32 0-d array"): lambda x, s: (
        x.dtype == np.float16 and isinstance(s, np.ndarray) and s.dtype == np.float32 and s.ndim == 0
    ),
    ("precision", "scale_keep_dtype", "float16 times a Python float"): lambda x, s: (
        x.dtype == np.float16 and type(s) is float
    ),
    ("precision", "mixed_matmul", "the docstring's example"): lambda a, b: (
        a.dtype.name == b.dtype.name == "bfloat16" and a.shape[1] >= 3 and bool((b.astype(np.float32) == 1).all())
    ),
    ("prng", "dropout", "rate 0 keeps everything"): lambda key, x, rate: isinstance(key, Key) and rate == 0.0,
    ("pytrees", "stack_trees", "a list of one tree"): lambda trees: len(trees) == 1,
    ("pytrees", "unstack_tree", "k = 1"): lambda tree: tree["w"].shape[0] == 1 == tree["n"].shape[0],
    ("sharding", "global_standardize", "the docstring's example, one row per device"): lambda x: (
        x.shape[0] == 8 and bool((x.std(axis=0) > 0).all())
    ),
    ("sharding", "shard_batch", "the docstring's example, n = 16"): lambda images, labels: images.shape[0] == 16,
    ("static_args", "create_filled", "a 0-d array"): lambda value, shape: shape == (),
    ("static_args", "create_filled", "an empty array"): lambda value, shape: 0 in shape,
    ("static_args", "conditional_fn", "zero rows stay zero"): lambda x, flag: flag and not x.any(),
    ("static_args", "standardize_padded", "no padding"): lambda x, n: n == len(x),
    ("static_args", "standardize_padded", "one data entry"): lambda x, n: n == 1 < len(x),
    ("static_args", "window_sums", "widths as an array"): lambda x, w: isinstance(w, np.ndarray),
    ("static_args", "window_sums", "the docstring's example"): lambda x, w: isinstance(w, list),
    ("training", "train_step", "a fresh state: the first step's learning rate is 0"): lambda params, leaves, x, y: (
        int(leaves[0]) == 0 and not any(np.asarray(v).any() for v in leaves)
    ),
    ("training", "classify", "train mode from fresh statistics"): lambda p, stats, x, key, train: (
        train and not stats["norm"]["mean"].any() and bool((stats["norm"]["var"] == 1).all())
    ),
    ("training", "classify", "train mode: the running averages move"): lambda p, stats, x, key, train: train,
    ("training", "classify", "eval mode: running averages, no dropout"): lambda p, stats, x, key, train: not train,
    (
        "training",
        "eval_step",
        "a constant classifier: every row predicts the readout bias's argmax",
    ): lambda p, stats, x, labels: (
        not p["out"]["kernel"].any() and int((p["out"]["bias"] == p["out"]["bias"].max()).sum()) == 1
    ),
    ("training", "adamw_step", "zero gradients: only the kernels move, by the decay"): lambda params, grads, lr, wd: (
        not any(np.asarray(g).any() for layer in grads.values() for g in layer.values()) and lr * wd > 0
    ),
}


@pytest.mark.parametrize("where", sorted(PROPERTIES), ids=[".".join(w[:2]) + ": " + w[2] for w in sorted(PROPERTIES)])
def test_each_drawn_instance_keeps_its_edges_property(where):
    topic, name, label = where
    ex = topics.load(topic).exercise(name)
    edge = next(e for e in ex.edge_cases if e.label == label)
    holds = PROPERTIES[where]
    assert holds(*edge.public.args), "the property must hold on the public instance too"
    for seed in SEEDS:
        case = next(c for e, c in _hidden_edges(ex, seed) if e is edge)
        assert holds(*case.args), (seed, case.args)


def test_same_args_tells_calls_apart():
    a = np.array([1.0, 2.0], np.float32)
    assert same_args((a, 1.0, {"k": [a, np.int32(3)]}), (a.copy(), 1.0, {"k": [a.copy(), np.int32(3)]}))
    assert same_args((np.array([np.nan]),), (np.array([np.nan]),))
    assert not same_args((a,), (a.astype(np.float64),))  # dtype
    assert not same_args((a,), (a.reshape(1, 2),))  # shape
    assert not same_args((a, 1.0), (a, 2.0))
    assert not same_args(([1, 2],), (np.array([1, 2], np.int32),))  # a list is not an array
    assert not same_args((Key(7),), (Key(8),)) and same_args((Key(7),), (Key(7),))
    assert not same_args(({"a": a},), ({"b": a},))


def test_a_family_that_only_draws_its_public_instance_is_refused():
    public = Case((np.zeros(3, np.float32),), "zeros")
    with pytest.raises(ValueError, match="only its public instance"):
        Edge(public, lambda rng: Case((np.zeros(3, np.float32),))).draw(np.random.default_rng(0))


def test_the_graded_list_says_hidden_runs_draw_other_instances():
    mask_fill = topics.load("at_updates").exercise("mask_fill")
    text = Context(mask_fill, ("x", "threshold", "fill")).cases()
    assert text == (
        'on 2 edge cases ("the tutorial\'s mask example", "ties are not greater"; graded on other '
        "inputs of each kind) and 4 random cases"
    )
    energy = topics.load("ising").exercise("ground_state_energy")
    assert "; graded on other inputs of each kind; 1 more hidden)" in Context(energy, ("n", "h", "J")).cases()


def test_the_dist_scan_finds_a_hidden_instance_in_a_recording():
    """A public recording must hold the public instances only: one that holds a hidden run's
    instance of an edge (its label, other values) is a leak."""
    ex = topics.load("at_updates").exercise("mask_fill")
    public = ex.cases(np.random.default_rng(0), True)
    hidden = ex.cases(np.random.default_rng(0), False)

    def scan(cases):
        return dist._hidden_in_recording("at_updates", to_blob([cases, "{}"]))

    assert scan(public) == []
    assert scan(hidden) == [
        'a hidden instance of edge case "the tutorial\'s mask example"',
        "a hidden instance of edge case 'ties are not greater'",
    ]


def test_the_dist_scan_takes_a_public_instance_rebuilt_a_last_bit_apart_as_public():
    """The scan rebuilds each public instance from the spec; numpy's float32 matrix products may
    round a last bit otherwise on the scan's machine than on the recording's (training's fresh
    state did, on CI's): a few ulps apart is the public instance still, a fresh draw is not."""
    ex = topics.load("training").exercise("train_step")
    (public,) = [c for c in ex.cases(np.random.default_rng(0), True) if c.label.startswith("a fresh state")]
    (hidden,) = [c for c in ex.cases(np.random.default_rng(0), False) if c.label.startswith("a fresh state")]
    *rest, y = public.args
    nudged = Case((*rest, np.nextafter(y, np.float32(np.inf)).astype(np.float32)), public.label)

    def scan(case):
        return dist._hidden_in_recording("training", to_blob([[case], "{}"]))

    assert not same_args(nudged.args, public.args)  # not equal: alike
    assert scan(public) == [] and scan(nudged) == []
    assert scan(hidden) == ['a hidden instance of edge case "a fresh state: the first step\'s learning rate is 0"']


# -- live: the reference on hidden instances, and the attack on a shipped answer ---------------

# A few exercises per topic: the families whose edges are most delicate (iteration counts, exact
# messages, gradients at repeated points, static arguments that change the program). Every other
# exercise with a family passed the same way once, by hand (ising, training and sharding
# included: too slow to start here).
LIVE = [
    "at_updates.mask_fill",
    "loops.newton_sqrt",
    "loops.power_iteration",
    "debugging.checked_entropy",
    "debugging.first_nan_step",
    "debugging.first_nan_grad",
    "autodiff.td_loss",
    "jit_basics.clip_by_norm",
    "static_args.standardize_padded",
    "primitives.safe_norm",
    "pytrees.stack_trees",
]


@pytest.mark.slow
def test_the_reference_passes_correct_on_hidden_instances():
    result = grade_dir(SOLUTIONS, LIVE, seed=20261205)
    got = verdicts(result)
    for name in LIVE:
        for check in ("correct", "jit", "grad"):
            if f"{name}:{check}" in got:
                score, most, message = got[f"{name}:{check}"]
                assert score == most, (name, check, message)


def _shipped_edge_attack(tmp_path: Path, attack: bool) -> Path:
    source = (SUBMISSIONS / "at_updates__attack_shipped_edge.py").read_text()
    folder = tmp_path / ("attack" if attack else "twin")
    folder.mkdir(parents=True)
    (folder / "at_updates.py").write_text(
        source if attack else source.replace("\nATTACK = True\n", "\nATTACK = False\n")
    )
    return folder


@pytest.mark.slow
def test_a_shipped_edge_answer_earns_nothing_in_hidden_grading(tmp_path):
    """BEFORE (fixed edge cases, /work/baseline, seeds 1 and 2): the attack got 3 of 3 points in
    hidden runs (`correct` 1, `jit` 2), its honest twin 2 (`correct` 0). Now both get 2: the
    hidden run grades another instance of "ties are not greater", which the `>=` fills. In the
    public run the lookup still answers the public instance (that answer is public anyway),
    and the run completes either way."""
    name = "at_updates.mask_fill"
    for attack in (True, False):
        hidden = verdicts(grade_dir(_shipped_edge_attack(tmp_path / f"h{attack}", attack), [name], seed=7))
        score, _, message = hidden[f"{name}:correct"]
        assert score == 0 and "ties are not greater" in message, message
    public = verdicts(grade_dir(_shipped_edge_attack(tmp_path / "p", True), [name], public=True, seed=7))
    assert public[f"{name}:correct"][0] == 1

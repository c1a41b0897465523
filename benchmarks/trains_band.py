"""The `trains` band: where a training loop's parameters end up on the grader's datasets, over many seeds.

For the reference `fit` (solutions/training.py), each crafted loop under
tests/submissions/training__*.py, the reference's loop around a step written another way
(`REWRITTEN`), in other batch orders than the task's (`ORDERS`), and off task (`OFF_TASK`), and
fits that train nothing (`SHORTCUTS`), draws `--seeds` cases
from the spec's own sampler (`jaxlings.specs.training._fit`, at
`np.random.default_rng([seed, 99])`), runs the loop on each in this process, and judges the
returned parameters as the check does (`jaxlings.grading.checks.trains`): their loss (`mlp_loss`,
NumPy float64) and their drift, the distance from the reference's parameters on the same case
as a fraction of the distance the reference's travelled from the initial ones (`drift`).
Prints per loop min / median / max of the final loss, the initial loss and the drift, and on
how many seeds the loop passes the loss bound alone (`Trains.max_loss`, the old criterion) and
the check (`max_loss` and `Trains.max_drift`). The figures in `jaxlings/specs/training.py`
and docs/grading.md ("The `trains` check") come from here.

    python benchmarks/trains_band.py [--seeds 200] [--loops reference,epoch_shuffle,lstsq_readout,...]
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from jaxlings.grading.checks.trains import drift, layers_of, mlp_loss  # noqa: E402
from jaxlings.specs import training as spec  # noqa: E402

MODULES = ("reference", "undonated", "no_clipping", "wrong_sign", "stale_opt_state", "reinit_opt_state")
ORDERS = ("reversed", "offset", "epoch_shuffle", "row_shuffle")
"""The reference's loop visiting the batches in another order than the task's (which fixes it):
the blocks backwards, from the fourth block on, in a fresh random order every epoch, and rows
shuffled afresh every epoch."""
SHORTCUTS = ("initial", "lstsq_readout", "ridge_readout", "moved_hidden_lstsq")
"""Fits that train nothing: the initial parameters; the readout by least squares on the
initial hidden layer's features (tests/submissions/training__attack_lstsq_readout.py); the
same by ridge regression; the hidden layer moved at random by as much as the reference moves
it, then the readout by least squares."""
REWRITTEN = ("rewritten",)
"""The reference's loop over a train step written another way that the task allows: the loss
as a sum over the batch divided by its size, the gradient by `jax.grad` apart from the loss,
the updates added leaf by leaf (float32 rounding differs; the trajectory is the same)."""
OFF_TASK = ("half_steps", "adam_constant", "rmsprop", "full_batch", "sgd_momentum", "extra_steps")
"""Loops that train, but not as the task says: half the steps; another optimizer in place of
the chain (Adam at a constant 1e-2, RMSprop, SGD with momentum, each clipped like the chain);
every step on the whole dataset; a quarter more steps. The check must fail them."""
LOOPS = MODULES + REWRITTEN + ORDERS + SHORTCUTS + OFF_TASK


@functools.cache
def _module(name: str):
    """The module (loaded once: a fresh load would compile its jitted step again)."""
    path = (
        ROOT / "solutions" / "training.py"
        if name == "reference"
        else ROOT / "tests" / "submissions" / f"training__{name}.py"
    )
    sys.path.insert(0, str(ROOT / "tests"))
    from helpers.crafted import submission_source  # a crafted file may be a patch of the reference

    module = types.ModuleType(f"training_{name}")
    module.__file__ = str(path)
    exec(compile(submission_source(path), str(path), "exec"), module.__dict__)
    return module


def _ordered(order: str, seed: int):
    """The reference's loop, batch i taken in `order` (see ORDERS)."""
    ref = _module("reference")

    def fit(params, x, y, steps, batch_size):
        opt_leaves, n = ref.init_opt_state(params), x.shape[0]
        blocks, rng, rows = n // batch_size, np.random.default_rng(seed), np.arange(n)
        for i in range(steps):
            b = {"reversed": blocks - 1 - i % blocks, "offset": (i + 3) % blocks}.get(order, i % blocks)
            if order in ("epoch_shuffle", "row_shuffle") and i % blocks == 0:
                rows = (
                    rng.permutation(n)
                    if order == "row_shuffle"
                    else (rng.permutation(blocks)[:, None] * batch_size + np.arange(batch_size)).ravel()
                )
            take = rows[b * batch_size : (b + 1) * batch_size]
            params, opt_leaves, _ = ref.train_step(params, opt_leaves, x[take], y[take])
        return params

    return fit


@functools.cache
def _off_task(name: str):
    """A loop of OFF_TASK (made once: a fresh one would compile its jitted step again)."""
    import jax
    import optax

    ref = _module("reference")
    optimizers = {
        "adam_constant": optax.adam(1e-2),
        "rmsprop": optax.rmsprop(1e-2),
        "sgd_momentum": optax.sgd(5e-2, momentum=0.9),
    }
    if name in optimizers:
        opt = optax.chain(optax.clip_by_global_norm(ref.MAX_NORM), optimizers[name])

        @jax.jit
        def step(params, state, x, y):
            grads = jax.grad(ref.mse_loss)(params, x, y)
            updates, state = opt.update(grads, state, params)
            return optax.apply_updates(params, updates), state

    def fit(params, x, y, steps, batch_size):
        if name in optimizers:
            state, n = opt.init(params), x.shape[0]
            for i in range(steps):
                start = (i * batch_size) % n
                params, state = step(params, state, x[start : start + batch_size], y[start : start + batch_size])
            return params
        steps = {"half_steps": steps // 2, "extra_steps": steps + steps // 4}.get(name, steps)
        opt_leaves, n = ref.init_opt_state(params), x.shape[0]
        for i in range(steps):
            start = 0 if name == "full_batch" else (i * batch_size) % n
            size = n if name == "full_batch" else batch_size
            params, opt_leaves, _ = ref.train_step(params, opt_leaves, x[start : start + size], y[start : start + size])
        return params

    return fit


@functools.cache
def _rewritten():
    """The loop of REWRITTEN (made once, as `_off_task`)."""
    import jax
    import jax.numpy as jnp

    ref = _module("reference")
    opt = ref.make_optimizer()

    def loss(params, x, y):
        h = jnp.tanh(x @ params["hidden"]["kernel"] + params["hidden"]["bias"])
        err = h @ params["out"]["kernel"] + params["out"]["bias"] - y
        return jnp.sum(err * err) / err.size

    @jax.jit
    def step(params, leaves, x, y):
        state = jax.tree.unflatten(jax.tree.structure(opt.init(params)), leaves)
        grads = jax.grad(loss)(params, x, y)
        updates, state = opt.update(grads, state, params)
        return jax.tree.map(lambda p, u: p + u, params, updates), jax.tree.leaves(state)

    def fit(params, x, y, steps, batch_size):
        leaves, n = ref.init_opt_state(params), x.shape[0]
        for i in range(steps):
            start = (i * batch_size) % n
            params, leaves = step(params, leaves, x[start : start + batch_size], y[start : start + batch_size])
        return params

    return fit


def _readout(params, x, y, ridge: float = 0.0, hidden=None):
    """The readout fitted by (ridge) least squares on the tanh features of `hidden` (default: the initial layer)."""
    import jax.numpy as jnp

    hidden = hidden or {k: np.asarray(v, np.float64) for k, v in params["hidden"].items()}
    features = np.tanh(np.asarray(x, np.float64) @ hidden["kernel"] + hidden["bias"])
    design = np.hstack([features, np.ones((len(features), 1))])
    w = np.linalg.solve(design.T @ design + ridge * np.eye(design.shape[1]), design.T @ np.asarray(y, np.float64))
    return {
        "hidden": {k: jnp.asarray(v, jnp.float32) for k, v in hidden.items()},
        "out": {"kernel": jnp.asarray(w[:-1], jnp.float32), "bias": jnp.asarray(w[-1], jnp.float32)},
    }


def _shortcut(name: str, seed: int, reference: dict):
    """A fit that trains nothing (see SHORTCUTS); `reference` (the reference's parameters) sets only
    how far `moved_hidden_lstsq` moves the hidden layer, never where."""
    if name == "lstsq_readout":
        return _module("attack_lstsq_readout").fit

    def fit(params, x, y, steps, batch_size):
        if name == "initial":
            return params
        if name == "ridge_readout":
            return _readout(params, x, y, ridge=1e-2)
        rng = np.random.default_rng([seed, 7])
        hidden = {}
        for k, v in params["hidden"].items():
            start, moved = np.asarray(v, np.float64), np.asarray(reference["hidden"][k], np.float64)
            step = rng.normal(size=start.shape)
            hidden[k] = start + step * np.linalg.norm(moved - start) / np.linalg.norm(step)
        return _readout(params, x, y, hidden=hidden)

    return fit


def _run(fit, params, x, y, steps, batch) -> dict:
    """`fit` on one case, its output as the worker exports it."""
    import jax
    import jax.numpy as jnp

    out = fit(jax.tree.map(jnp.asarray, params), jnp.asarray(x), jnp.asarray(y), steps, batch)
    leaves, treedef = jax.tree.flatten(out)
    return {"treedef": str(treedef), "leaves": [{"kind": "array", "data": np.asarray(a)} for a in leaves]}


def measure(loops: list[str], seeds: int) -> dict[str, dict[str, list[float]]]:
    """loop -> {"final", "initial", "drift"}: per seed, as the check computes them."""
    opts = spec.TOPIC.exercise("fit").check("trains")
    reference, modules = _module("reference"), {name: _module(name) for name in loops if name in MODULES}
    table = {name: {"final": [], "initial": [], "drift": [], "seconds": 0.0} for name in loops}
    for seed in range(seeds):
        params, x, y, steps, batch = spec._fit(np.random.default_rng([seed, 99]), opts.size).args
        initial = [(params[n]["kernel"], params[n]["bias"]) for n in opts.layers]
        ref_pairs, _ = layers_of(_run(reference.fit, params, x, y, steps, batch), opts.layers, x.shape[1], y.shape[1])
        ref_params = {n: {"kernel": k, "bias": b} for n, (k, b) in zip(opts.layers, ref_pairs)}
        for name in loops:
            fit = (
                modules[name].fit
                if name in modules
                else _ordered(name, seed)
                if name in ORDERS
                else _off_task(name)
                if name in OFF_TASK
                else _rewritten()
                if name in REWRITTEN
                else _shortcut(name, seed, ref_params)
            )
            t0 = time.perf_counter()
            pairs, _ = layers_of(_run(fit, params, x, y, steps, batch), opts.layers, x.shape[1], y.shape[1])
            row = table[name]
            row["seconds"] += time.perf_counter() - t0
            row["final"].append(mlp_loss(pairs, x, y) if pairs else float("nan"))
            row["initial"].append(mlp_loss(initial, x, y))
            row["drift"].append(drift(pairs, ref_pairs, initial) if pairs else float("inf"))
    return table


def _spread(values: list[float], digits: str = ".4g") -> str:
    return f"{min(values):{digits}} / {statistics.median(values):{digits}} / {max(values):{digits}}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--loops", default=",".join(LOOPS))
    args = parser.parse_args()
    opts = spec.TOPIC.exercise("fit").check("trains")
    print(
        f"bounds: loss below {opts.max_loss:g} (Trains.max_loss), drift below {opts.max_drift:g} (Trains.max_drift); "
        f"{args.seeds} seeds per loop; min / median / max"
    )
    for name, row in measure(args.loops.split(","), args.seeds).items():
        by_loss = sum(1 for v in row["final"] if v < opts.max_loss)
        passes = sum(1 for v, d in zip(row["final"], row["drift"]) if v < opts.max_loss and d < opts.max_drift)
        print(
            f"{name:19s} loss {_spread(row['final'])}  initial {_spread(row['initial'], '.3f')}  "
            f"drift {_spread(row['drift'], '.3f')}  below the loss bound {by_loss:3d}, passes {passes:3d} "
            f"of {len(row['final'])}  ({row['seconds']:.0f} s)",
            flush=True,
        )


if __name__ == "__main__":
    main()

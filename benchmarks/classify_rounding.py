"""How far the reference's jitted and un-jitted outputs round apart on `training`'s batch-norm
exercises (a benchmark, not a test): the `jit` check compares a function's jitted outputs with the
reference's un-jitted ones at the exercise's tolerance, so a reference that rounds apart by more
than that would cost a right function its `jit` point by chance.

For each of `classify`'s and `eval_step`'s samplers (the edge families and one per size) it draws
`--draws` cases, runs the reference as written and under `jax.jit`, and prints the worst error as
a multiple of the tolerance (`|jitted - eager| / (atol + rtol |eager|)`; past 1 fails), how many
draws fail, and the batch size of the worst. In train mode the batch norm divides by the batch's
own spread: with two rows it can be tiny, which is why `classify` draws no batch under
`training._TRAIN_BATCH` rows.

    .venv/bin/python benchmarks/classify_rounding.py [--draws 150] [--batch N]

`--batch N` grades as if the smallest batch were N (the figures for 2 rows: `--batch 2`).
"""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jaxlings.grading import topics
from jaxlings.grading.spec import Edge
from jaxlings.specs import training as spec
from jaxlings.worker.wire import Key

ROOT = Path(__file__).resolve().parents[1]


def _reference():
    loaded = importlib.util.spec_from_file_location("reference_training", ROOT / "solutions" / "training.py")
    module = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(module)
    return module


def _arg(a):
    """A sampler's argument as the worker hands it to the student."""
    if isinstance(a, Key):
        return jax.random.key(a.seed)
    if isinstance(a, dict):
        return {k: _arg(v) for k, v in a.items()}
    return jnp.asarray(a) if isinstance(a, np.ndarray) else a


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--draws", type=int, default=150)
    parser.add_argument("--batch", type=int, default=None)
    args = parser.parse_args()
    if args.batch is not None:
        spec._TRAIN_BATCH = args.batch
    reference, topic = _reference(), topics.load("training")
    for name, static in (("classify", (4,)), ("eval_step", ())):
        ex = topic.exercise(name)
        eager = getattr(reference, name)
        jitted = jax.jit(eager, static_argnums=static)
        sizes = ex.sizes if args.batch is None or name != "classify" else (args.batch, *ex.sizes[1:])
        makers = [(e.label, e.make) for e in ex.edge_cases if isinstance(e, Edge)]
        makers += [(f"random case, size {s}", lambda r, s=s, ex=ex: ex.sample(r, s)) for s in sizes]
        rng = np.random.default_rng(0)
        for label, make in makers:
            worst, fails, rows = 0.0, 0, 0
            for _ in range(args.draws):
                case = make(rng)
                call = tuple(_arg(a) for a in case.args)
                pairs = zip(jax.tree.leaves(eager(*call)), jax.tree.leaves(jitted(*call)))
                ratio = max(float(jnp.max(jnp.abs(e - j) / (ex.atol + ex.rtol * jnp.abs(e)))) for e, j in pairs)
                fails += ratio > 1
                if ratio > worst:
                    worst, rows = ratio, case.args[2].shape[0]
            print(
                f"{name:9s} {label:45s} worst x{worst:.3f} of the tolerance ({rows} rows), {fails} of {args.draws} fail"
            )


if __name__ == "__main__":
    main()

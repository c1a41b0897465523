"""The `trains` band: the loss a training loop reaches on the grader's datasets, over many seeds.

For the reference `fit` (solutions/training.py) and each crafted loop under
tests/submissions/training__*.py, draws `--seeds` cases from the spec's own sampler
(`autograder.topics.training._fit`, at `np.random.default_rng([seed, 99])`), runs the loop on
each in this process, and computes the loss of the returned parameters as the check does
(`autograder.checks.trains.mlp_loss`, NumPy float64). Prints min / median / max of the final
loss and of the initial one, per loop, and the bound (`Trains.max_loss`). The figures in
`autograder/topics/training.py` and docs/grading.md ("The `trains` check") come from here.

    python benchmarks/trains_band.py [--seeds 200] [--loops reference,wrong_sign,stale_opt_state,...]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from autograder.checks.trains import layers_of, mlp_loss  # noqa: E402
from autograder.topics import training as spec  # noqa: E402

LOOPS = ("reference", "no_clipping", "undonated", "wrong_sign", "stale_opt_state", "reinit_opt_state")


def _module(loop: str):
    path = ROOT / "solutions" / "training.py" if loop == "reference" else \
        ROOT / "tests" / "submissions" / f"training__{loop}.py"
    found = importlib.util.spec_from_file_location(f"training_{loop}", path)
    module = importlib.util.module_from_spec(found)
    found.loader.exec_module(module)
    return module


def losses(loop: str, seeds: int) -> tuple[list[float], list[float], float]:
    """(final losses, initial losses, seconds) of `loop` over `seeds` cases."""
    import jax
    import jax.numpy as jnp

    opts = spec.TOPIC.exercise("fit").options["trains"]
    module = _module(loop)
    finals, initials = [], []
    t0 = time.perf_counter()
    for seed in range(seeds):
        params, x, y, steps, batch = spec._fit(np.random.default_rng([seed, 99]), opts.size).args
        initials.append(mlp_loss([(params[n]["kernel"], params[n]["bias"]) for n in opts.layers], x, y))
        out = module.fit(jax.tree.map(jnp.asarray, params), jnp.asarray(x), jnp.asarray(y), steps, batch)
        leaves, treedef = jax.tree.flatten(out)
        exported = {"treedef": str(treedef), "leaves": [{"kind": "array", "data": np.asarray(a)} for a in leaves]}
        pairs, problem = layers_of(exported, opts.layers, x.shape[1], y.shape[1])
        finals.append(mlp_loss(pairs, x, y) if pairs else float("nan"))
    return finals, initials, time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--loops", default=",".join(LOOPS))
    args = parser.parse_args()
    bound = spec.TOPIC.exercise("fit").options["trains"].max_loss
    print(f"bound (Trains.max_loss): {bound:g}; {args.seeds} seeds per loop")
    for loop in args.loops.split(","):
        finals, initials, seconds = losses(loop, args.seeds)
        passed = sum(1 for v in finals if v < bound)
        print(f"{loop:18s} final {min(finals):.4g} / {statistics.median(finals):.4g} / {max(finals):.4g}   "
              f"initial {min(initials):.3f} / {max(initials):.3f}   below the bound on {passed} of {len(finals)}   "
              f"({seconds:.0f} s)", flush=True)


if __name__ == "__main__":
    main()

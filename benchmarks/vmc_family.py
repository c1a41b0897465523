"""The `vmc` family: how the reference's VMC does over the instances hidden grading draws.

For each ring size and each point (h/J, J) of a grid over the family (the corners and the
centre of `jaxlings.specs.ising`'s hidden couplings, or `--points`), runs the reference
`vmc_ground_state` (solutions/ising.py) on `--keys` keys in this process (one NetKet
compilation per ring size) and computes each returned RBM's relative energy error exactly, as
the check does (`jaxlings.grading.checks.vmc`). Prints per point the median and the worst error of
the runs that converged, and the stalls (runs at or above `Vmc.max_error`, which the check
redraws). With `--transfer`, also the error of the reference's parameters for the public
instance (and for other couplings at the same ring size) evaluated on the hidden family's
nearest couplings: what returning recorded parameters would score.

    python benchmarks/vmc_family.py [--sizes 14,15,16] [--keys 40] [--points 0.7:1,1.5:1] [--transfer]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("JAX_ENABLE_X64", "1")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from jaxlings.grading.checks.vmc import exact_energy, rbm_energy  # noqa: E402
from jaxlings.specs import ising as spec  # noqa: E402


def _reference():
    found = importlib.util.spec_from_file_location("ising_reference", ROOT / "solutions" / "ising.py")
    module = importlib.util.module_from_spec(found)
    found.loader.exec_module(module)
    return module


def _params(out) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return (np.asarray(out["visible_bias"]), np.asarray(out["Dense"]["bias"]), np.asarray(out["Dense"]["kernel"]))


def error(params, n: int, h: float, J: float) -> float:
    """The check's relative energy error of RBM `params` on the ring (n, h, J)."""
    exact = exact_energy(n, h, J)
    return abs(rbm_energy(*params, h, J) - exact) / abs(exact)


def grid(opts) -> list[tuple[float, float]]:
    """(h/J, J) at the corners and the centre of the hidden family."""
    (g0, g1), (j0, j1) = opts.ratio, opts.coupling
    return [(g0, j0), (g0, j1), ((g0 + g1) / 2, (j0 + j1) / 2), (g1, j0), (g1, j1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="", help="ring sizes, comma-separated (default: the family's)")
    parser.add_argument("--keys", type=int, default=40)
    parser.add_argument("--points", default="", help="h/J:J pairs, comma-separated (default: the family's grid)")
    parser.add_argument("--transfer", action="store_true")
    args = parser.parse_args()
    import jax

    ref = _reference()
    opts = spec.TOPIC.exercise("vmc_ground_state").check("vmc")
    points = [tuple(float(v) for v in p.split(":")) for p in args.points.split(",")] if args.points else grid(opts)
    sizes = [int(v) for v in args.sizes.split(",")] if args.sizes else list(opts.rings)
    print(
        f"max_error {opts.max_error:g}; {args.keys} keys per point; hidden family: n in {opts.rings}, "
        f"h/J in {opts.ratio}, J in {opts.coupling}; public instance (n, h, J) {opts.public}"
    )
    for n in sizes:
        for g, J in points:
            h = g * J
            errors, t0 = [], time.process_time()
            for k in range(args.keys):
                errors.append(error(_params(ref.vmc_ground_state(n, h, J, jax.random.key(1000 * n + k))), n, h, J))
            good = [e for e in errors if e < opts.max_error]
            stalls = len(errors) - len(good)
            fit = (
                (
                    f"median {statistics.median(good):.2e}, worst {max(good):.2e} (x{opts.max_error / max(good):.1f} "
                    "below the bound)"
                )
                if good
                else "no run below the bound"
            )
            print(
                f"n={n:2d} h/J={g:.3g} J={J:.3g}: {fit}, stalls {stalls} of {len(errors)} (worst {max(errors):.2e}, "
                f"best {min(errors):.2e}); {(time.process_time() - t0) / len(errors):.2f} s CPU a run",
                flush=True,
            )
    if args.transfer:
        n, h, J = opts.public
        public = _params(ref.vmc_ground_state(n, h, J, jax.random.key(0)))
        print(
            f"public instance {opts.public}: its own error {error(public, n, h, J):.2e}; its parameters have "
            f"{public[0].shape[0]} spins, hidden rings {opts.rings}: refused by shape"
        )
        for m in sizes:
            trained = _params(ref.vmc_ground_state(m, h, J, jax.random.key(1)))
            worst = min(error(trained, m, g * Jh, Jh) for g, Jh in points)
            print(
                f"  trained at n={m}, the public couplings, evaluated on the family's points: best {worst:.2e} "
                f"(x{worst / opts.max_error:.1f} the bound)",
                flush=True,
            )


if __name__ == "__main__":
    main()

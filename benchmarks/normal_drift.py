"""How far an accelerator's normal draws, and a walk that adds them up, drift from the host CPU's.

On the TPU machine (`benchmarks/on_tpu.sh`'s install first), in one process that has both the
device and the CPU: `python3 benchmarks/normal_drift.py --json $OUT/drift.json`. Prints, and
keeps, the largest differences and the values past the accelerator's tolerance
(`device.TOLERANCE`): the figures behind `prng.noisy_walk`'s `accelerator_tolerance`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import jax
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "solutions"))
sys.path.insert(0, str(ROOT))

import prng  # noqa: E402  # the reference solution

from jaxlings.grading import device  # noqa: E402


def on(dev: jax.Device, fn, *args) -> np.ndarray:
    """`fn` jitted on `dev`, its arguments put there first."""
    return np.asarray(jax.jit(fn)(*jax.device_put(args, dev)))


def past(diff: np.ndarray, ref: np.ndarray, rtol: float, atol: float) -> np.ndarray:
    return diff > atol + rtol * np.abs(ref)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--sigma", type=float, default=0.5)
    args = ap.parse_args()
    acc, cpu = jax.devices()[0], jax.devices("cpu")[0]
    rtol, atol = device.tolerance(acc.platform)
    key = jax.random.key(3)
    facts: dict = {"device": acc.device_kind, "tolerance": [rtol, atol]}
    draws = [on(d, lambda k: jax.random.normal(k, (1 << 20,)), key) for d in (acc, cpu)]
    diff = np.abs(draws[0] - draws[1])
    facts["normal"] = {
        "max_abs": float(diff.max()),
        "max_rel": float((diff / np.maximum(np.abs(draws[1]), 1e-6)).max()),
        "past": int(past(diff, draws[1], rtol, atol).sum()),
    }
    x0 = np.random.default_rng(0).normal(size=(64,)).astype(np.float32)
    walks = [on(d, lambda k, x: prng.noisy_walk(k, x, args.steps, args.sigma), key, x0) for d in (acc, cpu)]
    diff = np.abs(walks[0] - walks[1])
    bad = np.argwhere(past(diff, walks[1], rtol, atol))
    facts["walk"] = {
        "steps": args.steps,
        "sigma": args.sigma,
        "max_abs": float(diff.max()),
        "past": len(bad),
        "first_step_past": int(bad[0][0]) if len(bad) else None,
    }
    print(json.dumps(facts, indent=1))
    if args.json:
        args.json.write_text(json.dumps(facts, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

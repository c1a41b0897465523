"""Ready for the grading accelerator (`make device-check`): the speed check's verdicts there, and
the whole course's grading, in one call of a few minutes.

On the machine's device (`--device`: auto by default, a TPU or GPU where the machine has one, the
CPU otherwise; `exclusive` plays the CPU as one), every speed-checked exercise is graded in three
versions, `--gradings` times each: the reference; `x2`, its work done twice (on inputs equal at
run time that XLA cannot prove equal, so it cannot merge the copies; each copy made before the
first call, which may donate its arguments); and `x10`, ten times (what a naive version costs).
A grading holds one version of every selected exercise (each topic's reference with those
functions replaced), so on a device it opens the device twice whatever the number of exercises
(`jaxlings.grading.device_grading`). It prints per exercise and version the ratios (min-max over the
gradings), the points, and the reference's best round against the device's floor (a round under
ten floors measures dispatch more than work: its `Speed.size` should grow); then the whole
course, hidden, once: its score, its time, and how many processes opened the device. `--json
FILE` keeps it all (benchmarks/results/).

    .venv/bin/python benchmarks/device_check.py [--exercises prng.dropout ...] [--gradings 5]
        [--versions reference,x2,x10] [--device auto] [--no-course] [--json FILE]

The tests run it on the CPU for one exercise (tests/core/test_device_check.py).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from jaxlings.grading import device, engine, topics  # noqa: E402
from jaxlings.isolation import bwrap_available  # noqa: E402

FLOOR_S = {"tpu": 0.4e-3, "gpu": 70e-6, "cpu": 10e-6}
"""A call's floor, measured: a jitted `x * 2 + 1` on a small array, synchronised (TPU v5e:
0.398 ms, benchmarks/results/; the GPU's and the CPU's from shared/JAX_NOTES.md)."""
FLOORS_ENOUGH = 10

# Appended to a copy of the reference: the named function does its work `times` times, each
# copy on inputs equal to the given ones at run time (every leaf of every argument) that XLA
# cannot prove equal, all made before the first call (which may donate the given ones); every
# copy's output feeds the result, so none is dead code.
SLOWDOWN = """

import jax as _jax
import jax.numpy as _jnp


def _numeric(x):
    return isinstance(x, _jax.Array) and not _jax.dtypes.issubdtype(x.dtype, _jax.dtypes.prng_key)


def _always(x):
    # True for every input the grader draws (max >= min), but XLA cannot know it: no folding
    return _jnp.max(x) >= _jnp.min(x)


def _equal_copy(x, k):
    if isinstance(x, _jax.Array) and _jax.dtypes.issubdtype(x.dtype, _jax.dtypes.prng_key):
        data = _jax.random.key_data(x)
        return _jax.random.wrap_key_data(_jnp.where(_always(data), data, (data + k).astype(data.dtype)),
                                         impl=_jax.random.key_impl(x))
    if _numeric(x) and x.size:
        return _jnp.where(_always(x), x, (x + k).astype(x.dtype))  # a new expression for every k
    return x


def _slowed(f, times):
    def slowed(*args):
        copies = [_jax.tree.map(lambda a: _equal_copy(a, k), args) for k in range(1, times)]
        result = f(*args)
        for other in (f(*c) for c in copies):
            result = _jax.tree.map(lambda r, o: _jnp.where(_always(o), r, o) if _numeric(r) and r.size else r,
                                   result, other)
        return result
    return slowed

"""


def speed_exercises(selected: list[str]) -> list[tuple[str, str]]:
    """(topic, exercise) of every speed-checked exercise, or of those named."""
    found = [(t, ex.name) for t in topics.ORDER for ex in topics.load(t).exercises if ex.check("speed")]
    if selected:
        unknown = set(selected) - {f"{t}.{e}" for t, e in found}
        if unknown:
            raise SystemExit(f"not speed-checked exercises: {', '.join(sorted(unknown))}")
        found = [(t, e) for t, e in found if f"{t}.{e}" in selected]
    return found


def version(exercises: list[tuple[str, str]], times: int, folder: Path) -> Path:
    """A submission folder: each topic's reference with every exercise named done `times` times."""
    folder.mkdir(parents=True)
    for topic in dict.fromkeys(t for t, _ in exercises):
        source = (ROOT / "solutions" / f"{topic}.py").read_text()
        if times > 1:
            source += SLOWDOWN + "".join(f"{e} = _slowed({e}, {times})\n" for t, e in exercises if t == topic)
        (folder / f"{topic}.py").write_text(source)
    return folder


def speed_of(folder: Path, spec, isolate: bool = True, on: device.Device | None = None) -> dict:
    """The speed test's points and figures for one version of the exercise in `spec` (a topic
    spec holding it; its other checks graded as needed)."""
    result = engine.grade(
        folder, [spec], reference_dir=ROOT / "solutions", isolate=isolate and bwrap_available(), device=on
    )
    test = next(t for t in result.tests if t.check == "speed")
    data = dict(test.extra_data)
    data.update(
        points=test.score,
        max_points=test.max_score,
        message=test.output,
        backend=result.extra_data["platform"].get("backend", "?"),
    )
    return data


TIMED_CHECKS = ("correct", "speed")
"""The checks a version's grading runs: the speed check and the one it requires."""


def timed_only(specs: list) -> list:
    """`specs` with each exercise's checks cut to `TIMED_CHECKS`: a grading of a version spends
    its time on the speed rounds, not on the rest of the topic."""
    return [
        dataclasses.replace(
            spec,
            exercises=tuple(
                dataclasses.replace(ex, checks=tuple(c for c in ex.checks if c.name in TIMED_CHECKS))
                for ex in spec.exercises
            ),
        )
        for spec in specs
    ]


def grade_version(folder: Path, exercises: list[tuple[str, str]], setting: str) -> tuple[dict[str, dict], dict]:
    """One grading of a version's folder (the speed checks and what they require): each
    exercise's speed test's figures, and the run's device record."""
    names = [f"{t}.{e}" for t, e in exercises]
    result = engine.grade(
        folder,
        timed_only(topics.resolve(names)),
        reference_dir=ROOT / "solutions",
        isolate=bwrap_available(),
        jobs=engine.default_jobs(),
        device=device.resolve(setting),
    )
    figures = {}
    for t in result.tests:
        if t.check == "speed":
            figures[f"{t.topic}.{t.exercise}"] = {
                **t.extra_data,
                "points": t.score,
                "max_points": t.max_score,
                "message": t.output[:300],
                "backend": result.extra_data["platform"].get("backend", "?"),
            }
    return figures, {**result.extra_data.get("device", {}), "seconds": round(result.execution_time, 1)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--exercises", nargs="*", default=[], help="TOPIC.EXERCISE names (default: every speed-checked one)"
    )
    ap.add_argument("--gradings", type=int, default=1, help="gradings of each version")
    ap.add_argument("--versions", default="reference,x2,x10", help="comma-separated: reference, x2, x10, xN")
    ap.add_argument(
        "--device", default=None, help="auto, cpu, exclusive, tpu or gpu (default: JAXLINGS_DEVICE, else auto)"
    )
    ap.add_argument("--no-course", action="store_true", help="skip the whole-course grading")
    ap.add_argument("--jobs", type=int, default=engine.default_jobs(), help="topics at a time in the whole-course run")
    ap.add_argument("--json", type=Path, help="write every figure here")
    args = ap.parse_args(argv)
    started = time.monotonic()
    on = device.resolve(args.device)
    report: dict = {
        "machine": f"{platform.node()}, {platform.machine()}, python {platform.python_version()}",
        "device": on.kind if on else "none (the CPU)",
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "gradings": defaultdict(list),
        "runs": [],
    }
    print(f"machine: {report['machine']}; device: {report['device']}")
    exercises = speed_exercises(args.exercises)
    versions = [v.strip() for v in args.versions.split(",") if v.strip()]
    with tempfile.TemporaryDirectory(prefix="jaxlings-device-check-") as tmp:
        folders = {
            name: version(exercises, 1 if name == "reference" else int(name.lstrip("x")), Path(tmp) / name)
            for name in versions
        }
        for _ in range(args.gradings):  # the versions in turn: a run cut short keeps some of each
            for name, folder in folders.items():
                figures, run = grade_version(folder, exercises, args.device or "auto")
                report["runs"].append({"version": name, **run})
                for exercise, data in figures.items():
                    report["gradings"][f"{exercise} {name}"].append(data)
                    print(f"  {name} {exercise}: ratio {data.get('ratio')} points {data['points']:g}", flush=True)
                if args.json:  # kept as it grows: a run cut at its limit keeps its gradings
                    args.json.write_text(json.dumps(report, indent=1, default=str))
    print(f"{'exercise':<30}{'version':<11}{'ratio (min-max)':>18}{'points':>16}{'ref/round':>12}{'floors':>8}  note")
    for (topic, exercise), name in ((e, v) for e in exercises for v in versions):
        rows = report["gradings"].get(f"{topic}.{exercise} {name}", [])
        ratios = [r["ratio"] for r in rows if r.get("ratio") is not None]
        points = [r["points"] for r in rows]
        ref_ms = min((r["reference_ms"] for r in rows if r.get("reference_ms")), default=None)
        backend = rows[0]["backend"] if rows else "cpu"
        floors = ref_ms / 1e3 / FLOOR_S.get(backend, FLOOR_S["cpu"]) if ref_ms else None
        note = "" if floors is None or floors >= FLOORS_ENOUGH else "dispatch-bound: grow Speed.size"
        if not ratios and rows:
            note = rows[0]["message"][:60]
        span = f"x{min(ratios):.2f}-{max(ratios):.2f}" if ratios else "-"
        got = f"{min(points):.3g}-{max(points):.3g}/{rows[0]['max_points']:g}" if rows else "-"
        print(
            f"{topic + '.' + exercise:<30}{name:<11}{span:>18}{got:>16}"
            f"{(f'{ref_ms:.3g} ms' if ref_ms else '-'):>12}{(f'{floors:.0f}' if floors else '-'):>8}  {note}",
            flush=True,
        )
    for run in report["runs"]:
        print(f"  {run['version']} grading: {run['seconds']} s, device opened {run.get('opens', 0)} times")
    if not args.no_course:
        t0 = time.monotonic()
        result = engine.grade(
            ROOT / "solutions",
            topics.resolve(None),
            reference_dir=ROOT / "solutions",
            isolate=bwrap_available(),
            jobs=args.jobs,
            device=device.resolve(args.device),
        )
        seconds = time.monotonic() - t0
        record = result.extra_data.get("device", {})
        report["course"] = {
            "score": result.score,
            "max_score": result.max_score,
            "seconds": round(seconds, 1),
            "platform": result.extra_data["platform"],
            "device": record,
            "not_passed": [
                [t.name, t.score, t.max_score, t.output[:200]] for t in result.tests if t.status != "passed"
            ],
        }
        print(
            f"\nwhole course, hidden, jobs {args.jobs}: {result.score:g}/{result.max_score:g} in {seconds:.1f} s on "
            f"{result.extra_data['platform'].get('device_kind', '?')}; the device opened {record.get('opens', 0)} times"
        )
        for name, score, max_score, output in report["course"]["not_passed"]:
            print(f"  not passed: {name} {score:g}/{max_score:g}: {output[:120]}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1, default=str))
    print(f"\ndevice check done in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

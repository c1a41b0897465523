"""Ready for the grading GPU (`make gpu-check`): one call that shows the speed check works there.

For every speed-checked exercise it grades three versions against the reference, on this
machine's backend and its `Speed.size`: the reference itself, a 2x-slower one (the reference's
work done twice, on inputs equal at run time that XLA cannot prove equal, so it cannot merge
the copies; XLA on the CPU drops `lax.optimization_barrier`, which would not do) and
a 10x-slower one (ten times: what a naive version costs), plus the naive crafted submission
where tests/submissions/ has one (`<topic>__naive.py`). It prints, per exercise and version,
the measured ratio, the points and the reference's time per workload against the dispatch
floor (about 70 us a call on the grading GPU, 10 us on a CPU): a workload under ten floors
measures dispatch more than work, and its `Speed.size[backend]` should grow. Then it grades
the whole course (the solutions, hidden mode) and prints its time and score.

    .venv/bin/python benchmarks/gpu_check.py [--exercises prng.dropout ...] [--no-course] [--jobs N]

On a machine with one GPU the whole run stays within about 8 minutes. The tests run it on the
CPU for one exercise (tests/core/test_gpu_check.py), so that it works the day it meets a GPU.
"""

from __future__ import annotations

import argparse
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from autograder import engine, topics  # noqa: E402
from autograder.isolation import bwrap_available  # noqa: E402

DISPATCH_FLOOR_S = {"gpu": 70e-6, "cpu": 10e-6}
FLOORS_ENOUGH = 10
SLOWER = (2, 10)

# Appended to a copy of the reference: each named function does its work `times` times, each copy
# after the previous one's output exists (the barrier), and returns the last output.
SLOWDOWN = """

import jax as _jax
import jax.numpy as _jnp


def _numeric(x):
    return isinstance(x, _jax.Array) and not _jax.dtypes.issubdtype(x.dtype, _jax.dtypes.prng_key)


def _is_key(x):
    return isinstance(x, _jax.Array) and _jax.dtypes.issubdtype(x.dtype, _jax.dtypes.prng_key)


def _always(x):
    # True for every input the grader draws (max >= min), but XLA cannot know it: no folding
    return _jnp.max(x) >= _jnp.min(x)


def _equal_copy(x, k):
    # x itself at run time, yet a value XLA must treat as new: the copies cannot be merged
    if _is_key(x):
        data = _jax.random.key_data(x)
        return _jax.random.wrap_key_data(_jnp.where(_always(data), data, (data + k).astype(data.dtype)),
                                         impl=_jax.random.key_impl(x))
    if _numeric(x) and x.size:
        return _jnp.where(_always(x), x, (x + k).astype(x.dtype))  # a new expression for every k
    return x


def _slowed(f, times):
    def slowed(*args):
        outs = [f(*args)] + [f(*(_equal_copy(a, k) for a in args)) for k in range(1, times)]
        result = outs[0]
        for k, other in enumerate(outs[1:], 1):  # every copy feeds the result: none is dead code
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


def variants(topic: str, exercise: str, folder: Path) -> dict[str, Path]:
    """Version name -> a submission folder holding `<topic>.py` for it."""
    source = (ROOT / "solutions" / f"{topic}.py").read_text()
    made = {"reference": ROOT / "solutions"}
    for times in SLOWER:
        target = folder / f"x{times}"
        target.mkdir(parents=True)
        (target / f"{topic}.py").write_text(f"{source}{SLOWDOWN}{exercise} = _slowed({exercise}, {times})\n")
        made[f"x{times} slower"] = target
    naive = ROOT / "tests" / "submissions" / f"{topic}__naive.py"
    if naive.is_file():
        target = folder / "naive"
        target.mkdir()
        shutil.copyfile(naive, target / f"{topic}.py")
        made["naive (crafted)"] = target
    return made


def speed_of(folder: Path, spec, isolate: bool = True) -> dict:
    """The speed test's points and figures for one version of the exercise in `spec` (a topic
    spec holding it; its other checks graded as needed)."""
    result = engine.grade(folder, [spec], reference_dir=ROOT / "solutions", isolate=isolate and bwrap_available())
    test = next(t for t in result.tests if t.check == "speed")
    data = dict(test.extra_data)
    data.update(
        points=test.score,
        max_points=test.max_score,
        message=test.output,
        backend=result.extra_data["platform"].get("backend", "?"),
    )
    return data


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--exercises", nargs="*", default=[], help="TOPIC.EXERCISE names (default: every speed-checked one)"
    )
    ap.add_argument("--no-course", action="store_true", help="skip the whole-course grading")
    ap.add_argument("--jobs", type=int, default=engine.default_jobs(), help="topics at a time in the whole-course run")
    args = ap.parse_args(argv)
    started = time.monotonic()
    print(f"machine: {platform.node()}, {platform.machine()}; python {platform.python_version()}")
    header = f"{'exercise':<30}{'version':<17}{'ratio':>8}{'points':>12}{'ref/workload':>14}{'floors':>8}  note"
    print(header)
    with tempfile.TemporaryDirectory(prefix="jaxlings-gpu-check-") as tmp:
        for topic, exercise in speed_exercises(args.exercises):
            for version, folder in variants(topic, exercise, Path(tmp) / f"{topic}.{exercise}").items():
                data = speed_of(folder, topics.resolve([f"{topic}.{exercise}"])[0])
                ratio, ref_ms = data.get("ratio"), data.get("reference_ms")
                floor = DISPATCH_FLOOR_S.get(data["backend"], DISPATCH_FLOOR_S["cpu"])
                floors = ref_ms / 1e3 / floor if ref_ms else None
                note = "" if floors is None or floors >= FLOORS_ENOUGH else "dispatch-bound: grow Speed.size"
                if ratio is None:
                    note = data["message"][:60]
                print(
                    f"{topic + '.' + exercise:<30}{version:<17}{ratio if ratio is not None else '-':>8}"
                    f"{data['points']:>9.3g}/{data['max_points']:<2g}{(f'{ref_ms:.3g} ms' if ref_ms else '-'):>14}"
                    f"{(f'{floors:.0f}' if floors else '-'):>8}  {note}",
                    flush=True,
                )
    if not args.no_course:
        t0 = time.monotonic()
        result = engine.grade(
            ROOT / "solutions",
            topics.resolve(None),
            reference_dir=ROOT / "solutions",
            isolate=bwrap_available(),
            jobs=args.jobs,
        )
        print(
            f"\nwhole course, hidden, jobs {args.jobs}: {result.score:g}/{result.max_score:g} in "
            f"{time.monotonic() - t0:.1f} s on {result.extra_data['platform'].get('device_kind', '?')}"
        )
        for t in result.tests:
            if t.status != "passed":
                print(f"  not passed: {t.name} {t.score:g}/{t.max_score:g}: {t.output[:120]}")
    print(f"\ngpu check done in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Every verdict of the grader on a fixed set of submissions, written down, and two such records
compared: the evidence that a refactor of the grader changed no verdict (issue 28).

    .venv/bin/python benchmarks/verdicts.py --out before.json [--seed N] [--only prng ...]
    .venv/bin/python benchmarks/verdicts.py --compare before.json after.json

What is graded (each in hidden mode, live reference from solutions/, one fixed seed; and in
public mode, replaying the public expectations as `grade check` does):
- `reference`: the reference solutions (`solutions/`), every topic in one grading;
- `stubs`: the generated stubs (`exercises/`), every topic in one grading;
- `crafted/<topic>__<variant>` and `adversarial/<topic>__attack_...`: each file of
  tests/submissions/ graded alone, as `<topic>.py`, on its topic (as tests/helpers/grading.py's
  `grade_variant` does). Files whose variant starts with `attack` or is `hostile` form the
  adversarial set.

The grader is reached through its public API only (`engine.grade`, `topics.resolve`,
`public.replay`, `paths`), so that the same script runs on the tree before a refactor and after
it: run it with `PYTHONPATH=<tree>` from inside that tree; `meta.autograder` in the output says
which tree was graded. The sandbox is used where bubblewrap works (`--isolate auto`). The
limits are the test suite's (`tests/helpers/grading.py`'s TEST_LIMITS: 3 GiB, 60 s a call), so the
attacks that hang or hog end as quickly as they do in the suite. A fresh, empty compilation
cache serves the whole run (`--cache fresh`), so that two runs start alike.

The output (`--out`): {"submissions": {label: {mode: {test name: {score, max_score, status,
output}}}}, "yardstick": ..., "meta": ...}; where the grader raised instead of returning a result,
`mode` holds the error as a string ("error: Type: message"). The yardstick is the machine's
speed when the run started (a worker's start, as benchmarks/worker_start.py measures it, and a
fresh interpreter's `import jax`), for reading the timed checks of two runs side by side.

Comparison (`--compare BEFORE AFTER`): per set and mode, the tests compared and those with the
same verdict. A verdict is status and score; for the checks that read a clock (`speed`,
`compiles`, `vmc`) status only, and their score differences are listed apart as timing noise.
Messages are compared with every number (and temporary paths, addresses) masked; a wording
difference is listed apart and is not a verdict difference. Exits 1 when some verdict differs.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import inspect
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

DEFAULT_SEED = 20261205
TIMED = frozenset({"speed", "compiles", "vmc"})
"""Checks that read a clock: their verdict is compared on status only."""
MODES = ("hidden", "public")
SETS = ("reference", "stubs", "crafted", "adversarial")


# -- the grader, reached through what exists in both trees ------------------------------------------


def _first_attribute(modules: tuple[str, ...], name: str) -> Any:
    """`name` from the first of `modules` that imports and has it (the sandbox module may move
    to `jaxlings.isolation` during the refactor)."""
    for module in modules:
        try:
            found = getattr(importlib.import_module(module), name, None)
        except ImportError:
            continue
        if found is not None:
            return found
    return None


def bwrap_available() -> bool:
    probe = _first_attribute(
        (
            "jaxlings.sandbox",
            "jaxlings.isolation",
            "jaxlings.isolation.bwrap",
            "jaxlings.isolation.bubblewrap",
            "jaxlings.isolation.sandbox",
        ),
        "bwrap_available",
    )
    return bool(probe and probe())


def test_limits() -> Any:
    """The test suite's limits (tests/helpers/grading.py TEST_LIMITS), built from the type of
    `engine.grade`'s default `limits`, wherever that class lives."""
    from jaxlings.grading import engine

    default = inspect.signature(engine.grade).parameters["limits"].default
    return dataclasses.replace(default, memory_bytes=3 << 30, output_bytes=256 << 10, call_timeout=60.0)


def tree_root() -> Path:
    import jaxlings

    return Path(jaxlings.__file__).resolve().parent.parent


def submissions_dir() -> Path:
    return tree_root() / "tests" / "submissions"


def set_of(variant: str) -> str:
    return "adversarial" if variant.startswith("attack") or variant == "hostile" else "crafted"


def set_of_label(label: str) -> str:
    return label.split("/", 1)[0]


def check_of(test_name: str) -> str:
    return test_name.rsplit(":", 1)[-1]


# -- grading --------------------------------------------------------------------------------------


@dataclasses.dataclass
class Job:
    label: str
    folder: Path | None  # a folder of <topic>.py files; None: copy `source` into a fresh one
    topics: list[str]
    source: Path | None = None


def jobs_for(only: list[str], sets: list[str]) -> list[Job]:
    from jaxlings.grading import paths, topics

    files = sorted(submissions_dir().glob("*__*.py"))
    wanted_topics = [name for name in only if name in topics.ORDER]
    wanted_files = {name.removesuffix(".py") for name in only if name not in topics.ORDER}
    unknown = wanted_files - {f.stem for f in files}
    if unknown:
        raise SystemExit(f"--only: neither a topic nor a file of {submissions_dir()}: {', '.join(sorted(unknown))}")
    whole = wanted_topics or ([] if wanted_files else list(topics.ORDER))
    jobs = []
    if "reference" in sets and whole:
        jobs.append(Job("reference", paths.solutions_dir(), whole))
    if "stubs" in sets and whole:
        jobs.append(Job("stubs", paths.exercises_dir(), whole))
    for f in files:
        topic, variant = f.stem.split("__", 1)
        if set_of(variant) not in sets or topic not in topics.ORDER:
            continue
        if only and f.stem not in wanted_files and topic not in wanted_topics:
            continue
        jobs.append(Job(f"{set_of(variant)}/{f.stem}", None, [topic], f))
    return jobs


def submission_source(path: Path) -> str:
    """The source a crafted file is graded as: a patch file (tests/helpers/grading.py's
    `crafted_source`) composed over its tree's reference; a tree without patches, the file."""
    sys.path.insert(0, str(path.parent.parent))
    try:
        from helpers.grading import crafted_source
    except ImportError:  # a tree from before crafted patches
        return path.read_text()
    finally:
        sys.path.pop(0)
    return crafted_source(path.stem)


def grade_one(job: Job, mode: str, *, seed: int, isolate: bool, jobs: int, limits: Any) -> dict | str:
    """{test name: {score, max_score, status, output}} of one grading, or the error it raised."""
    from jaxlings import public
    from jaxlings.grading import engine, paths, topics

    with tempfile.TemporaryDirectory(prefix="jaxlings-verdicts-") as tmp:
        folder = job.folder
        if folder is None:
            assert job.source is not None
            folder = Path(tmp)
            (folder / f"{job.topics[0]}.py").write_text(submission_source(job.source))
        try:
            if mode == "public":
                result = engine.grade(
                    folder,
                    topics.resolve(job.topics, public=True),
                    public=True,
                    isolate=isolate,
                    limits=limits,
                    answers=public.replay,
                    jobs=jobs,
                )
            else:
                result = engine.grade(
                    folder,
                    topics.resolve(job.topics),
                    reference_dir=paths.solutions_dir(),
                    public=False,
                    seed=seed,
                    isolate=isolate,
                    limits=limits,
                    jobs=jobs,
                )
        except Exception as exc:  # noqa: BLE001 - recorded as the verdict of this grading
            print(traceback.format_exc(), file=sys.stderr)
            return f"error: {type(exc).__name__}: {exc}"
    return {
        t.name: {"score": t.score, "max_score": t.max_score, "status": t.status, "output": t.output}
        for t in result.tests
    }


RETRIES = 2
FLAKES = ("AST constructor recursion depth mismatch",)
"""Errors of the interpreter, not of the grader's logic, after which a grading is done again:
CPython 3.11's `ast.parse` in two threads at once (topics graded side by side, `jobs` > 1) can
raise SystemError (python/cpython#106905, the AST state's recursion depth is shared by threads),
and the engine then fails the whole topic with "the grader could not grade". Retried ones are
listed in `meta.retried`."""


def interpreter_flake(graded: dict | str) -> str | None:
    texts = [graded] if isinstance(graded, str) else [t["output"] for t in graded.values()]
    return next((flake for flake in FLAKES for text in texts if flake in text), None)


def yardstick() -> dict:
    """The machine's speed now: a worker's start (benchmarks/worker_start.py, where it still
    runs on this tree) and a fresh interpreter's `import jax`, medians of 3, with the load."""

    def seconds(code: str) -> float:
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
        return time.perf_counter() - t0

    out: dict[str, Any] = {"load": list(os.getloadavg()), "cores": os.cpu_count()}
    out["import_jax_s"] = round(statistics.median(seconds("import jax") for _ in range(3)), 3)
    try:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from worker_start import worker_start

        wall, cpu = worker_start(3)
        out["worker_start_wall_s"], out["worker_start_cpu_s"] = round(wall, 3), round(cpu, 3)
    except Exception as exc:  # noqa: BLE001 - the worker class may have moved in this tree
        out["worker_start_error"] = f"{type(exc).__name__}: {exc}"
    return out


def git_head(root: Path) -> str | None:
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
        )
        return head.stdout.strip() + (" (with uncommitted changes)" if dirty.stdout.strip() else "")
    except (OSError, subprocess.CalledProcessError):
        return None


def record(args: argparse.Namespace) -> None:
    import jaxlings

    sets = args.sets
    todo = jobs_for(args.only, sets)
    isolate = {"on": True, "off": False, "auto": None}[args.isolate]
    if isolate is None:
        isolate = bwrap_available()
    limits = test_limits()
    if args.cache == "fresh":
        os.environ["JAXLINGS_COMPILE_CACHE"] = tempfile.mkdtemp(prefix="jaxlings-verdicts-cache-")
    from importlib import metadata

    out: dict[str, Any] = {
        "submissions": {},
        "yardstick": yardstick(),
        "meta": {
            "jaxlings": jaxlings.__file__,
            "tree": str(tree_root()),
            "git": git_head(tree_root()),
            "seed": args.seed,
            "modes": args.modes,
            "sandbox": isolate,
            "jobs": args.jobs,
            "limits": dataclasses.asdict(limits),
            "cache": os.environ.get("JAXLINGS_COMPILE_CACHE", "default"),
            "jax": metadata.version("jax"),
            "python": platform.python_version(),
            "host": platform.node(),
            "only": args.only,
            "sets": sets,
            "started": time.strftime("%Y-%m-%d %H:%M:%S"),
            "seconds": {},
            "retried": [],
        },
    }
    print(
        f"grading {len(todo)} submissions x {len(args.modes)} modes from {tree_root()} "
        f"(sandbox {'on' if isolate else 'off'}, jobs {args.jobs}, seed {args.seed}); "
        f"yardstick {out['yardstick']}",
        flush=True,
    )
    t_all = time.monotonic()
    for i, job in enumerate(todo, 1):
        entry = out["submissions"].setdefault(job.label, {})
        for mode in args.modes:
            t0 = time.monotonic()
            for _attempt in range(1 + RETRIES):
                entry[mode] = grade_one(job, mode, seed=args.seed, isolate=isolate, jobs=args.jobs, limits=limits)
                flake = interpreter_flake(entry[mode])
                if not flake:
                    break
                out["meta"]["retried"].append(f"{job.label} {mode}: {flake}")
                print(f"  {job.label} {mode}: {flake}; graded again", flush=True)
            seconds = round(time.monotonic() - t0, 1)
            out["meta"]["seconds"][f"{job.label} {mode}"] = seconds
            got = entry[mode]
            summary = (
                got
                if isinstance(got, str)
                else (
                    f"{len(got)} tests, {sum(t['score'] for t in got.values()):g}/{sum(t['max_score'] for t in got.values()):g}"
                )
            )
            print(f"[{i}/{len(todo)}] {job.label} {mode}: {summary} ({seconds} s)", flush=True)
        out["meta"]["total_seconds"] = round(time.monotonic() - t_all, 1)
        if args.out:
            write(out, Path(args.out))  # after each submission: a partial record survives an interrupted run
    if args.cache == "fresh":
        shutil.rmtree(os.environ["JAXLINGS_COMPILE_CACHE"], ignore_errors=True)
    out["meta"]["finished"] = time.strftime("%Y-%m-%d %H:%M:%S")
    out["meta"]["load_at_end"] = list(os.getloadavg())
    if args.out:
        write(out, Path(args.out))
    print(f"done in {out['meta']['total_seconds']} s", flush=True)


def write(data: dict, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(path.suffix + ".partial")
    partial.write_text(json.dumps(data, indent=1, sort_keys=False))
    partial.replace(path)


# -- comparing ------------------------------------------------------------------------------------

_MASKS = (
    (re.compile(r"/tmp/[^\s'\"():,]+"), "/tmp/<path>"),
    (re.compile(r"0x[0-9a-fA-F]+"), "<hex>"),
    (re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"), "#"),
)


def masked(message: str, tree: str | None = None) -> str:
    """A message with every number (and temporary path, address, the graded tree's root) masked."""
    if tree:
        message = message.replace(tree, "<tree>")
    for pattern, replacement in _MASKS:
        message = pattern.sub(replacement, message)
    return message


def _short(text: str, n: int = 160) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[:n] + "..."


def verdict(t: dict) -> str:
    return f"{t['status']} {t['score']:g}/{t['max_score']:g}"


def compare(before_path: Path, after_path: Path) -> int:
    before, after = (json.loads(Path(p).read_text()) for p in (before_path, after_path))
    tree_b, tree_a = before.get("meta", {}).get("tree"), after.get("meta", {}).get("tree")
    rows: dict[tuple[str, str], dict[str, int]] = {}
    verdicts, noise, wording, missing = [], [], [], []
    labels = list(dict.fromkeys([*before["submissions"], *after["submissions"]]))
    for label in labels:
        b_modes, a_modes = before["submissions"].get(label), after["submissions"].get(label)
        if b_modes is None or a_modes is None:
            missing.append(f"{label}: graded {'after only' if b_modes is None else 'before only'}")
            continue
        for mode in dict.fromkeys([*b_modes, *a_modes]):
            b, a = b_modes.get(mode), a_modes.get(mode)
            row = rows.setdefault(
                (set_of_label(label), mode),
                {"submissions": 0, "compared": 0, "same": 0, "verdict": 0, "noise": 0, "wording": 0},
            )
            if b is None or a is None:
                missing.append(f"{label} {mode}: graded {'after only' if b is None else 'before only'}")
                continue
            row["submissions"] += 1
            if isinstance(b, str) or isinstance(a, str):  # the grader raised on one side (or both)
                row["compared"] += 1
                same = isinstance(b, str) and isinstance(a, str) and masked(b, tree_b) == masked(a, tree_a)
                row["same" if same else "verdict"] += 1
                if not same:
                    verdicts.append(
                        (
                            label,
                            mode,
                            "(the whole grading)",
                            _short(b if isinstance(b, str) else "a result"),
                            _short(a if isinstance(a, str) else "a result"),
                        )
                    )
                continue
            for name in dict.fromkeys([*b, *a]):
                tb, ta = b.get(name), a.get(name)
                row["compared"] += 1
                if tb is None or ta is None:
                    row["verdict"] += 1
                    verdicts.append(
                        (
                            label,
                            mode,
                            name,
                            verdict(tb) if tb else "(no such test)",
                            verdict(ta) if ta else "(no such test)",
                        )
                    )
                    continue
                timed = check_of(name) in TIMED
                same = (
                    tb["status"] == ta["status"]
                    and tb["max_score"] == ta["max_score"]
                    and (timed or tb["score"] == ta["score"])
                )
                if same:
                    row["same"] += 1
                    if tb["score"] != ta["score"]:
                        row["noise"] += 1
                        noise.append((label, mode, name, verdict(tb), verdict(ta)))
                else:
                    row["verdict"] += 1
                    verdicts.append(
                        (
                            label,
                            mode,
                            name + (" (timed: reads a clock)" if timed else ""),
                            f"{verdict(tb)}: {_short(tb['output'], 120)}",
                            f"{verdict(ta)}: {_short(ta['output'], 120)}",
                        )
                    )
                if masked(tb["output"], tree_b) != masked(ta["output"], tree_a):
                    row["wording"] += 1
                    wording.append((label, mode, name, _short(tb["output"], 300), _short(ta["output"], 300)))

    for name, data in (("before", before), ("after", after)):
        meta = data.get("meta", {})
        print(
            f"{name}: {meta.get('tree')} ({meta.get('git')}), seed {meta.get('seed')}, sandbox {meta.get('sandbox')}, "
            f"{meta.get('total_seconds')} s; yardstick {data.get('yardstick')}"
        )
    print()
    header = (
        f"{'set':<12}{'mode':<8}{'submissions':>12}{'tests':>8}{'same verdict':>14}{'differ':>8}"
        f"{'timing noise':>14}{'wording':>9}"
    )
    print(header)
    print("-" * len(header))
    totals = {"submissions": 0, "compared": 0, "same": 0, "verdict": 0, "noise": 0, "wording": 0}
    for (set_name, mode), row in sorted(
        rows.items(), key=lambda kv: (SETS.index(kv[0][0]) if kv[0][0] in SETS else 9, kv[0][1])
    ):
        print(
            f"{set_name:<12}{mode:<8}{row['submissions']:>12}{row['compared']:>8}{row['same']:>14}{row['verdict']:>8}"
            f"{row['noise']:>14}{row['wording']:>9}"
        )
        for key in totals:
            totals[key] += row[key]
    print("-" * len(header))
    print(
        f"{'all':<20}{totals['submissions']:>12}{totals['compared']:>8}{totals['same']:>14}{totals['verdict']:>8}"
        f"{totals['noise']:>14}{totals['wording']:>9}"
    )

    def listing(title: str, items: list[tuple], arrow: str = "->") -> None:
        print(f"\n{title}: {len(items) or 'none'}")
        for label, mode, name, b, a in items:
            print(f"  {label} [{mode}] {name}\n      before: {b}\n      after:  {a}")

    listing("verdict differences", verdicts)
    listing("timing noise (score of a timed check, same status)", noise)
    listing("wording differences (messages differ with numbers masked; not verdicts)", wording)
    if missing:
        print(f"\ngraded on one side only: {len(missing)}")
        for line in missing:
            print(f"  {line}")
    return 1 if verdicts or missing else 0


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", help="write the verdicts here (JSON)")
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"), help="compare two recorded runs")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="the hidden runs' seed")
    parser.add_argument(
        "--only",
        nargs="+",
        default=[],
        help="topics (their reference, stubs and files) and/or tests/submissions file names",
    )
    parser.add_argument("--sets", nargs="+", default=list(SETS), choices=SETS)
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    parser.add_argument("--jobs", type=int, default=2, help="engine.grade's jobs")
    parser.add_argument(
        "--isolate", default="auto", choices=["auto", "on", "off"], help="the sandbox: auto = where bubblewrap works"
    )
    parser.add_argument(
        "--cache",
        default="fresh",
        choices=["fresh", "default"],
        help="compilation cache: a fresh empty one for this run, or the usual one",
    )
    args = parser.parse_args()
    if args.compare:
        sys.exit(compare(Path(args.compare[0]), Path(args.compare[1])))
    record(args)


if __name__ == "__main__":
    main()

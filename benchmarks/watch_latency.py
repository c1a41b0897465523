"""How long `grade watch` takes to re-check a save: from the file's new mtime to the verdict.

Lays out a fresh `grade init` workspace with the reference solution of `--topic` as the
student's file, starts the real `grade watch TOPIC` there (stdout a pipe: its plain-lines
output), waits for the first check of the whole topic (which fills the workspace's own, empty,
compilation cache), then saves the file again and again, `--think` seconds after each verdict
(the student reads it; meanwhile `grade watch` may prepare the next worker), plus up to 0.5 s
at random, so that a save falls at any point of `grade watch`'s look at the files, as a
student's does. For each of the first `--saves` functions (or each `--function`) it saves, in
turn:

- `comment`: a comment line added inside the function's body (no function changed: `grade
  watch` says so and checks nothing; its time is that of the first line it prints);
- `edit`: a statement that changes nothing added to the body (`_ = None`): a real change of
  the function's source whose programs are those already compiled, so the save compiles
  nothing new and is re-checked with the cache warm;
- `compile`: a statement that stages a new operation (`jnp.zeros(n).sum()`, `n` new at every
  save) added to the body: the function's program changes, so the save compiles it anew (issue
  43: save-to-verdict with one new function to compile, at most 2 yardsticks idle);
- `stub`: the function replaced by the exercise's stub (read, never run);
- `restore`: the reference's function back: a real change, its programs in the cache.

A verdict is the workspace's `.jaxlings/last_check.json` written anew (`report.save_last_check`,
after every re-check, whatever the screen looks like). `--busy` keeps both cores busy (two
spinning processes) while the saves are timed. `--tree PATH` runs another checkout's grader
(its `jaxlings` on PYTHONPATH): "before" figures from a `git worktree` of an earlier commit.
Targets (issue 29): a save with nothing new to compile re-checked in <= 1 s idle, <= 3 s with
both cores busy.

    .venv/bin/python benchmarks/watch_latency.py [--topic prng ...] [--saves 2] [--think 5] [--busy]
        [--tree PATH] [--json out.json]
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import json
import os
import queue
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KINDS = ("comment", "edit", "compile", "stub", "restore")
TARGET_IDLE_S, TARGET_BUSY_S = 1.0, 3.0


def function_span(source: str, name: str) -> tuple[int, int, int]:
    """Lines [start, end) of the top-level function `name`, and the line (0-based) of its first
    statement after the docstring."""
    node = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == name)
    body = node.body
    first = (
        body[1]
        if len(body) > 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
        else body[0]
    )
    return node.lineno - 1 - len(node.decorator_list), node.end_lineno or node.lineno, first.lineno - 1


def with_function(module: str, donor: str, name: str) -> str:
    """`module` with its top-level function `name` replaced by `donor`'s."""
    lines, donor_lines = module.splitlines(keepends=True), donor.splitlines(keepends=True)
    (a, b, _), (c, d, _) = function_span(module, name), function_span(donor, name)
    return "".join(lines[:a] + donor_lines[c:d] + lines[b:])


def with_line(module: str, name: str, text: str) -> str:
    """`module` with `text` inserted as the first statement's line of function `name`'s body,
    at that statement's indentation."""
    lines = module.splitlines(keepends=True)
    _, _, first = function_span(module, name)
    indent = lines[first][: len(lines[first]) - len(lines[first].lstrip())]
    return "".join(lines[:first] + [f"{indent}{text}\n"] + lines[first:])


class Watch:
    """`grade watch TOPIC` running in `workspace`: its output lines (with arrival times) and its
    verdicts (the last-check file's writes)."""

    def __init__(self, tree: Path, workspace: Path, topic: str, env: dict[str, str], interval: float | None) -> None:
        argv = [sys.executable, "-m", "jaxlings", "watch", topic]
        if interval is not None:
            argv += ["--interval", str(interval)]
        self.verdicts = workspace / ".jaxlings" / "last_check.json"
        self.initial = self.stamp()
        self.proc = subprocess.Popen(
            argv, cwd=workspace, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
        )
        self.lines: queue.Queue[tuple[float, str]] = queue.Queue()
        self.log: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.log.append(line)
            self.lines.put((time.monotonic(), line))

    def stamp(self) -> int:
        """The last-check file's mtime now (0: none yet)."""
        try:
            return self.verdicts.stat().st_mtime_ns
        except FileNotFoundError:
            return 0

    def drain(self) -> None:
        """Forget the output lines printed so far."""
        with contextlib.suppress(queue.Empty):
            while True:
                self.lines.get_nowait()

    def verdict_after(self, stamp: int, timeout: float) -> float | None:
        """When the last-check file was next written after `stamp` (monotonic), or None."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.stamp() != stamp:
                return time.monotonic()
            if self.proc.poll() is not None:
                raise SystemExit("grade watch exited:\n" + "".join(self.log[-40:]))
            time.sleep(0.005)
        return None

    def first_line(self, timeout: float) -> float | None:
        """When `grade watch` next printed a line, or None within `timeout`."""
        try:
            return self.lines.get(timeout=timeout)[0]
        except queue.Empty:
            return None

    def stop(self) -> None:
        """Ctrl-C, as a student stops it (it then stops its spare workers); killed if it lingers."""
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@contextlib.contextmanager
def spinning(n: int) -> Iterator[None]:
    """`n` processes that spin on a core each for the duration (none for n = 0)."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


def save(path: Path, text: str) -> float:
    """Write `text` to `path` with a new mtime; the monotonic time of the write."""
    before = path.stat().st_mtime_ns
    t0 = time.monotonic()
    path.write_text(text)
    while path.stat().st_mtime_ns == before:  # a coarse clock: write again until the mtime moves
        time.sleep(0.01)
        t0 = time.monotonic()
        path.write_text(text)
    return t0


def measure(args: argparse.Namespace, tree: Path, topic: str) -> dict[str, object]:
    """One topic's saves, in a workspace and a compilation cache of their own."""
    sys.path.insert(0, str(tree))
    from jaxlings.grading import topics

    names = [ex.name for ex in topics.load(topic).exercises]
    names = [n for n in names if n in args.function] if args.function else names[: args.saves]
    solution = (tree / "solutions" / f"{topic}.py").read_text()
    with tempfile.TemporaryDirectory(prefix="jaxlings-watch-latency-", ignore_cleanup_errors=True) as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("JAXLINGS_")}
        env.update({"PYTHONPATH": str(tree), "XDG_CACHE_HOME": str(Path(tmp) / "cache"), "COLUMNS": "160"})
        subprocess.run(
            [sys.executable, "-m", "jaxlings", "init", "ws"], cwd=tmp, env=env, check=True, capture_output=True
        )
        ws = Path(tmp) / "ws"
        target = ws / "exercises" / f"{topic}.py"
        stub = target.read_text()
        text = solution
        shutil.copyfile(tree / "solutions" / f"{topic}.py", target)
        watch = Watch(tree, ws, topic, env, args.interval)
        row: dict[str, object] = {"topic": topic, "saves": []}
        try:
            t0 = time.monotonic()
            done = watch.verdict_after(watch.initial, args.timeout)
            row["first_check_s"] = None if done is None else round(done - t0, 2)
            print(f"{topic}: first check of the whole topic (empty cache) {row['first_check_s']} s", flush=True)
            with spinning(2 if args.busy else 0):
                time.sleep(args.think)
                for name in names:
                    steps = {
                        "comment": with_line(text, name, "# a comment: nothing to check again"),
                        "edit": with_line(text, name, "_ = None  # changes nothing"),
                        "compile": with_line(
                            text, name, f"_ = __import__('jax').numpy.zeros({random.randrange(2, 10**6)}).sum()"
                        ),
                        "stub": with_function(text, stub, name),
                        "restore": text,
                    }
                    for kind, new in steps.items():
                        seconds = save_and_wait(watch, target, new, kind, args.timeout)
                        load = os.getloadavg()[0]
                        row["saves"].append(
                            {"function": name, "kind": kind, "seconds": seconds, "load": round(load, 2)}
                        )  # type: ignore[union-attr]
                        shown = "not reported" if seconds is None else f"{seconds:.2f} s"
                        print(f"  {name:<22} {kind:<8} {shown:>12}   load {load:.1f}", flush=True)
                        time.sleep(max(1.1, args.think) + random.uniform(0.0, 0.5))  # any phase of the poll
        finally:
            watch.stop()
        return row


def save_and_wait(watch: Watch, target: Path, text: str, kind: str, timeout: float) -> float | None:
    """Save `text`, and the seconds to the verdict (to the first line printed, for a comment,
    which checks nothing), or None where none came."""
    stamp = watch.stamp()
    watch.drain()
    t0 = save(target, text)
    if kind == "comment":
        when = watch.first_line(min(timeout, 5.0))
    else:
        when = watch.verdict_after(stamp, timeout)
    return None if when is None else round(when - t0, 3)


def summary(rows: list[dict[str, object]]) -> dict[str, dict[str, float]]:
    """Per kind of save: median, 90th percentile and max seconds over every topic's saves."""
    out = {}
    for kind in KINDS:
        got = [s["seconds"] for r in rows for s in r["saves"] if s["kind"] == kind and s["seconds"] is not None]  # type: ignore[union-attr,index]
        if got:
            p90 = statistics.quantiles(got, n=10, method="inclusive")[-1] if len(got) > 1 else got[0]
            out[kind] = {
                "median_s": round(statistics.median(got), 3),
                "p90_s": round(p90, 3),
                "max_s": round(max(got), 3),
                "n": len(got),
            }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--topic", action="append", help="topic(s) to watch (default: prng and ising)")
    ap.add_argument("--saves", type=int, default=2, help="functions of each topic saved (5 saves each)")
    ap.add_argument(
        "--function",
        action="append",
        help="save these functions instead of the first --saves (one that others use re-checks them too)",
    )
    ap.add_argument("--think", type=float, default=5.0, help="seconds from a verdict to the next save (>= 1.1)")
    ap.add_argument("--busy", action="store_true", help="both cores kept busy by two spinning processes")
    ap.add_argument("--interval", type=float, default=None, help="`grade watch --interval` (default: its own)")
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--tree", type=Path, default=ROOT, help="the checkout whose grader runs (default: this one)")
    ap.add_argument("--json", type=Path, default=None, help="write the figures here")
    args = ap.parse_args()
    tree = args.tree.resolve()
    print(f"tree {tree}; {'both cores busy' if args.busy else 'idle'}; load now {os.getloadavg()[0]:.1f}")
    rows = [measure(args, tree, topic) for topic in args.topic or ["prng", "ising"]]
    table = summary(rows)
    target = TARGET_BUSY_S if args.busy else TARGET_IDLE_S
    print(
        f"{'save':<8} {'median s':>9} {'p90 s':>7} {'max s':>7}   "
        f"(target for a save with nothing new to compile: <= {target:g} s)"
    )
    for kind, figures in table.items():
        print(f"{kind:<8} {figures['median_s']:>9.2f} {figures['p90_s']:>7.2f} {figures['max_s']:>7.2f}")
    if args.json:
        args.json.write_text(
            json.dumps(
                {"tree": str(tree), "busy": args.busy, "think_s": args.think, "summary": table, "topics": rows},
                indent=1,
            )
        )


if __name__ == "__main__":
    main()

"""How long `grade watch` takes to re-check one saved function: from the save to the verdict.

Starts `grade watch TOPIC` on a copy of the stubs, waits for the first full check, then saves
the file `--saves` times, each time with one more function of the reference filled in, and
prints the seconds from each save to the line that reports it (the compilation cache warm
after the first run, as in a student's session). Between a verdict and the next save it waits
`--think` seconds, the student reading the verdict: meanwhile `grade watch` starts the next
student worker (`autograder.spares`).

    .venv/bin/python benchmarks/watch_latency.py [--topic prng] [--saves 3] [--think 5]
"""

from __future__ import annotations

import argparse
import ast
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def with_function(module: str, donor: str, name: str) -> str:
    """`module` with its top-level function `name` replaced by `donor`'s."""

    def span(source: str) -> tuple[int, int]:
        node = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == name)
        return node.lineno - 1, node.end_lineno

    lines, donor_lines = module.splitlines(keepends=True), donor.splitlines(keepends=True)
    (a, b), (c, d) = span(module), span(donor)
    return "".join(lines[:a] + donor_lines[c:d] + lines[b:])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--topic", default="prng")
    ap.add_argument("--saves", type=int, default=3)
    ap.add_argument(
        "--think",
        type=float,
        default=5.0,
        help="seconds from a verdict to the next save (a student reads the verdict; at least 1.1: a new mtime)",
    )
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from autograder import topics

    names = [ex.name for ex in topics.load(args.topic).exercises][: args.saves]
    solution = (ROOT / "solutions" / f"{args.topic}.py").read_text()
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "exercises" / f"{args.topic}.py"
        target.parent.mkdir()
        text = (ROOT / "exercises" / f"{args.topic}.py").read_text()
        target.write_text(text)
        proc = subprocess.Popen(
            [sys.executable, "-m", "autograder", "watch", args.topic, "--interval", "0.1"],
            cwd=tmp,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "COLUMNS": "200"},
        )
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True).start()

        def until(marker: str) -> None:
            while marker not in lines.get(timeout=300):
                pass

        try:
            t0 = time.monotonic()
            until(f"{args.topic} so far")
            print(f"first check of the whole topic: {time.monotonic() - t0:.1f} s")
            for name in names:
                time.sleep(max(1.1, args.think))  # reading the verdict; and a new mtime
                text = with_function(text, solution, name)
                t0 = time.monotonic()
                target.write_text(text)
                until(f"{args.topic} so far")
                print(f"saved {name}: re-checked in {time.monotonic() - t0:.2f} s (poll interval 0.1 s included)")
        finally:
            proc.terminate()
            proc.wait(timeout=30)


if __name__ == "__main__":
    main()

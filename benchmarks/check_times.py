"""How long `grade check TOPIC` takes, per topic: with the public expectations replayed (what
`grade check` does now, in the repo and in the student package) against the live reference
(what it did before: a reference worker started and run beside the student's).

Each run is a whole `grade check` command line in a fresh process, so worker starts and
imports count. Prints one row per topic: seconds replayed, seconds live, and the scores.

    .venv/bin/python benchmarks/check_times.py [--dir exercises|solutions] [TOPIC ...]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent

LIVE = """
import sys
from pathlib import Path
from autograder import engine, topics
r = engine.grade(Path(sys.argv[1]), topics.resolve([sys.argv[2]]), reference_dir=Path(sys.argv[3]), public=True)
print(r.score)
"""


def timed(argv: list[str]) -> tuple[float, str]:
    t0 = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, cwd=tempfile.gettempdir())
    return time.perf_counter() - t0, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", default="solutions", help="the submission folder, relative to the repo")
    parser.add_argument("topics", nargs="*")
    args = parser.parse_args()
    from autograder import topics

    folder = ROOT / args.dir
    print(f"{'topic':<12} {'replayed s':>10} {'live s':>8}  score (replayed / live)")
    for name in args.topics or topics.ORDER:
        with tempfile.NamedTemporaryFile(suffix=".json") as out:
            replayed, _ = timed([str(BIN / "grade"), "check", name, "--dir", str(folder), "--json", out.name])
            score = json.loads(Path(out.name).read_text())["score"]
        live, printed = timed([sys.executable, "-c", LIVE, str(folder), name, str(ROOT / "solutions")])
        print(f"{name:<12} {replayed:>10.1f} {live:>8.1f}  {score:g} / {printed.strip()}", flush=True)


if __name__ == "__main__":
    main()

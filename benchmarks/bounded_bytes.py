"""The grader's own bytes under a hostile submission: peak resident memory and results.json size.

Grades one module (tests/submissions/<name>.py, its `NAME = value` lines replaced by
`--set NAME=VALUE`) in this process, on the exercises named, and prints one JSON line: each
test's points, the results.json size, the largest message, and this process's peak resident
set (VmHWM) before and after grading. Run it from a checkout to measure that checkout's grader
(its `jaxlings` package is imported from the current directory first), e.g.

    python benchmarks/bounded_bytes.py at_updates__attack_huge_reply at_updates.mask_fill --set JUNK_BYTES=209715200
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path


def vm_hwm() -> int:
    """This process's peak resident set, in bytes."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("name")
    parser.add_argument("names", nargs="+")
    parser.add_argument("--set", action="append", default=[])
    parser.add_argument("--submissions", default=str(Path(__file__).resolve().parent.parent / "tests" / "submissions"))
    parser.add_argument("--sandbox", choices=("on", "off"), default="on")
    args = parser.parse_args()
    sys.path.insert(0, os.getcwd())
    from jaxlings.grading import engine, paths, topics
    from jaxlings.isolation import Limits

    source = (Path(args.submissions) / f"{args.name}.py").read_text()
    for item in args.set:
        key, value = item.split("=", 1)
        source, n = re.subn(rf"^{key} = .*$", f"{key} = {ast.literal_eval(value)!r}", source, count=1, flags=re.M)
        assert n == 1, key
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "sub"
        folder.mkdir()
        (folder / f"{args.name.split('__')[0]}.py").write_text(source)
        before, t0 = vm_hwm(), time.monotonic()
        result = engine.grade(
            folder,
            topics.resolve(args.names),
            reference_dir=paths.solutions_dir(),
            public=False,
            seed=None,
            isolate=args.sandbox == "on",
            limits=Limits(),
            jobs=1,
        )
        after, seconds = vm_hwm(), time.monotonic() - t0
        out = Path(tmp) / "results.json"
        result.write(out)
        size = out.stat().st_size
    print(
        json.dumps(
            {
                "grader": str(Path(engine.__file__).resolve().parent.parent),
                "points": {t.name: t.score for t in result.tests},
                "results_json_bytes": size,
                "longest_message": max(len(t.output) for t in result.tests),
                "messages": {t.name: t.output[:400] for t in result.tests},
                "vm_hwm_mb_before": round(before / 1e6),
                "vm_hwm_mb_after": round(after / 1e6),
                "seconds": round(seconds, 1),
            }
        )
    )


if __name__ == "__main__":
    main()

"""What a student's upload can cost a page view: the diff of two submissions, the highlighted
code on the submission page, and the similarity report's reading of one function, each with
today's bounds and with them lifted (`--unbounded`: what it cost before them).

    .venv/bin/python benchmarks/slow_pages.py [--unbounded]

Inputs are what a student may upload (the upload limit allows 512 KiB a topic file): a file
of assignments 518 KiB long, its reverse, and exercise functions of 500 to 4,000 independent
statements (the similarity report orders such runs). Compare with `benchmarks/worker_start.py`.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from jaxlings.service import similarity, views


def seconds(work: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    work()
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--unbounded", action="store_true", help="lift the bounds: the cost before them")
    args = parser.parse_args()
    if args.unbounded:
        views.MAX_DIFF_LINES = views.MAX_HIGHLIGHT = similarity.MAX_REORDERED = 10**9
    big = "".join(f"_v{i} = {i}  # <i>{i}</i> and some words\n" for i in range(12000))
    print(f"a {len(big) >> 10} KiB file, 12,000 lines")
    print(f"  diff against its reverse: {seconds(lambda: views.diff({'t': big}, {'t': big[::-1]}, '#1', '#2')):.3f} s")
    print(f"  highlighted: {seconds(lambda: views.highlighted('t', big, [1])):.3f} s")
    print(f"  highlighted again: {seconds(lambda: views.highlighted('t', big, [1])):.4f} s")
    for n in (500, 1000, 2000, 4000):
        if args.unbounded and n > 1000:
            break  # 74 s at 2,000 statements, about 8 minutes at 4,000
        body = "".join(f"    a{i} = x * {i} + a{i - 1 if i else 0}\n" for i in range(n))
        text = f"def ema_update(x, y, z):\n{body}    return a{n - 1}\n"
        similarity.READS.clear()
        cost = seconds(lambda text=text: similarity.read("s", 1, text, "ema_update"))
        again = seconds(lambda text=text: similarity.read("s", 1, text, "ema_update"))
        print(f"similarity, a function of {n} statements ({len(text) >> 10} KiB): {cost:.2f} s, again {again:.4f} s")


if __name__ == "__main__":
    main()

"""The similarity report on its corpus (not a test: it prints figures for docs/service.md).

    .venv/bin/python benchmarks/similarity.py [--seeds 3] [--rows 12] [--class-size 200]

For each exercise of tests/similarity/ (six or more independently written variants) plus planted
copies of three of them (tests/helpers/similarity.py: every local renamed, two independent
statements swapped, a dead line added; one planting per seed), the report's ranking: its top rows
(pair, score, planted or independent), precision at the top (k = the planted pairs), and whether
every planted pair ranks above every independent pair, with the margin between the two. The same
figures for two ablations, to show what each step buys: the source as written (no normalisation)
and no discount of what the stub, hints and reference give.

The program side: each function of a case is also exported as the grader's trusted side exports it
(`jax.export` of the function jitted with the exercise's static arguments, from the specs of a
sample of its largest size; in this process, as the corpus is trusted code:
tests/helpers/similarity.py's `program_of`) and fingerprinted as the `jit` check records it in
results.json (`jaxlings.worker.program.program_shingles`); the reference's own program is
discounted. The ranking then combines both sides (`combined`: the mean), beside the source-only
one (`full`) and the program side alone (`program`). A copy whose edit breaks it has no program and
is scored on its source, as a grading whose `jit` check failed early would be. Last, the time of
one report over a class of `--class-size` students (the variants and planted copies of them,
repeated), source only and combined. Also the copies disguised as what runs
(tests/helpers/similarity.py's `DISGUISES`: the body moved into a helper; a decoy function shown
first and the copy bound to the name after it; API synonyms swapped in), on the source side.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from helpers import similarity as corpus  # noqa: E402
from jaxlings.grading import paths, source  # noqa: E402
from jaxlings.service import similarity  # noqa: E402


def written_grams(text: str, exercise: str) -> Counter[str]:
    """The ablation without normalisation: the n-grams of the function as written (docstring aside)."""
    found = similarity.function_in(text, exercise)
    assert found is not None
    fn = found.fn
    fn.body = fn.body[1:] if source.docstring(fn) is not None else fn.body
    return similarity.shingles(similarity.tokens(fn))


def reference_program(topic: str, exercise: str) -> frozenset[int]:
    """The reference solution's program sketch (discounted on the program side)."""
    text = (paths.solutions_dir() / f"{topic}.py").read_text()
    return corpus.program_of(topic, exercise, text) or frozenset()


def ranking(case: corpus.Case, variant: str) -> similarity.Ranking:
    """The report's ranking of one corpus case: source only as built (`full`), `raw` or
    `no-discount`; both sides (`combined`) or the program side alone (`program`)."""
    codes = []
    for i, (login, text) in enumerate(sorted(case.files.items()), 1):
        code = similarity.read(login, i, text, case.exercise)
        assert code is not None, (case.exercise, login)
        if variant == "raw":
            code = replace(code, grams=written_grams(text, case.exercise), canonical=f"{login}")
        if variant in ("combined", "program"):
            code = replace(code, program=corpus.program_of(case.topic, case.exercise, text))
        codes.append(code)
    given = similarity.given(case.topic, case.exercise)
    if variant == "no-discount":
        given = similarity.Given(frozenset(), given.reference)
    if variant in ("combined", "program"):
        given = replace(given, program=reference_program(case.topic, case.exercise))
    ranked = similarity.rank(case.exercise, codes, given)
    if variant == "program":  # the program side alone, where both have one (else the source's)
        pairs = [replace(p, score=p.program if p.program is not None else p.score) for p in ranked.pairs]
        pairs.sort(key=lambda p: (-p.score, p.a.login, p.b.login))
        ranked = replace(ranked, pairs=pairs)
    return ranked


def figures(case: corpus.Case, ranked: similarity.Ranking) -> dict[str, float]:
    """Precision at k (k planted pairs), whether every planted pair is above every independent
    one, and the margin (lowest planted score minus highest independent one)."""
    k = len(case.planted)
    planted = [p.score for p in ranked.pairs if case.is_planted(p.a.login, p.b.login)]
    independent = [p.score for p in ranked.pairs if not case.is_planted(p.a.login, p.b.login)]
    top = sum(case.is_planted(p.a.login, p.b.login) for p in ranked.pairs[:k])
    return {
        "k": k,
        "precision": top / k,
        "separated": float(min(planted) > max(independent)),
        "margin": min(planted) - max(independent),
        "lowest_planted": min(planted),
        "highest_independent": max(independent),
        "pairs": len(ranked.pairs),
    }


def table(case: corpus.Case, ranked: similarity.Ranking, rows: int, label: str = "") -> None:
    """The ranking's first `rows` rows."""
    print(f"\n{case.topic}.{case.exercise}{label}: {ranked.compared} functions, {len(ranked.pairs)} pairs")
    print(f"  {'#':>3}  {'score':>6}  {'source':>6}  {'program':>7}  {'pair':<22} kind")
    for place, p in enumerate(ranked.pairs[:rows], 1):
        kind = "PLANTED" if case.is_planted(p.a.login, p.b.login) else "independent"
        note = " (identical)" if p.identical else ""
        source = f"{p.source:6.3f}" if p.source is not None else f"{'':6}"
        program = f"{p.program:7.3f}" if p.program is not None else f"{'-':>7}"
        print(f"  {place:>3}  {p.score:6.3f}  {source}  {program}  {p.a.login + ' / ' + p.b.login:<22} {kind}{note}")


def class_time(size: int, programs: bool = False) -> tuple[float, float]:
    """Seconds per exercise for one report over a class of `size` students (the corpus's variants
    planted again and again): the first (every function read and normalised), then a repeat
    (reads remembered, as when the page is viewed again); with `programs`, each student's program
    sketch given too (the service reads them from results.json)."""
    classes = []
    for topic, exercise in corpus.exercises():
        texts = list(corpus.variants(topic, exercise).values())
        rng = random.Random(0)
        files = {f"s{i:03d}": (i, corpus.plant(texts[i % len(texts)], exercise, rng)) for i in range(size)}
        # each planted copy's program is its variant's (the copies lower alike: tests/core/test_similarity.py)
        sketches = {
            f"s{i:03d}": {exercise: p}
            for i in range(size)
            if programs and (p := corpus.program_of(topic, exercise, texts[i % len(texts)])) is not None
        }
        classes.append((topic, exercise, files, sketches))
    times = []
    for _ in range(2):
        start = time.perf_counter()
        for topic, exercise, files, sketches in classes:
            similarity.report(topic, [exercise], files, sketches or None)
        times.append((time.perf_counter() - start) / len(classes))
    return times[0], times[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=3, help="plantings per exercise")
    parser.add_argument("--rows", type=int, default=12, help="rows of each ranking printed")
    parser.add_argument("--class-size", type=int, default=200)
    args = parser.parse_args()
    variants = ("full", "raw", "no-discount", "combined", "program")
    summary: dict[str, list[dict[str, float]]] = {
        **{v: [] for v in variants},
        "full, edited": [],
        "combined, edited": [],
    }
    for topic, exercise in corpus.exercises():
        for seed in range(args.seeds):
            case = corpus.case(topic, exercise, seed)
            for variant in variants:
                ranked = ranking(case, variant)
                if variant in ("full", "combined") and seed == 0:
                    table(case, ranked, args.rows, f" [{variant}]")
                summary[variant].append({"seed": seed, **figures(case, ranked)})
            edited = corpus.case(topic, exercise, seed, edit=True)
            for variant in ("full", "combined"):
                ranked = ranking(edited, variant)
                if seed == 0:
                    table(edited, ranked, min(args.rows, 6), f" (copies also edited) [{variant}]")
                summary[f"{variant}, edited"].append({"seed": seed, **figures(edited, ranked)})
    print(f"\nSummary over {len(corpus.exercises())} exercises x {args.seeds} plantings")
    print(
        f"  {'variant':<16} {'precision@k':>11} {'separated':>10} {'min margin':>11} {'lowest planted':>15} {'highest indep.':>15}"
    )
    for variant, rows in summary.items():
        precision = sum(r["precision"] for r in rows) / len(rows)
        separated = sum(r["separated"] for r in rows)
        margin = min(r["margin"] for r in rows)
        low = min(r["lowest_planted"] for r in rows)
        high = max(r["highest_independent"] for r in rows)
        print(
            f"  {variant:<16} {precision:>11.3f} {int(separated):>5}/{len(rows):<4} {margin:>11.3f} {low:>15.3f} {high:>15.3f}"
        )
    for disguise in corpus.DISGUISES:  # copies disguised as what runs (issue 46), source side
        rows = [
            figures(case, ranking(case, "full"))
            for topic, exercise in corpus.exercises()
            for seed in range(args.seeds)
            for case in [corpus.disguised(topic, exercise, disguise, seed)]
        ]
        summary[f"{disguise}, source"] = rows
        print(
            f"  {disguise + ', source':<16} {sum(r['precision'] for r in rows) / len(rows):>11.3f}"
            f" {int(sum(r['separated'] for r in rows)):>5}/{len(rows):<4} {min(r['margin'] for r in rows):>11.3f}"
            f" {min(r['lowest_planted'] for r in rows):>15.3f} {max(r['highest_independent'] for r in rows):>15.3f}"
        )
    disguised = [f"{d}, source" for d in corpus.DISGUISES]
    for variant in ("full", "full, edited", "combined", "combined, edited", *disguised):
        verdict = "yes" if all(r["separated"] for r in summary[variant]) else "NO"
        print(f"Every planted pair ranks above every independent pair ({variant}, every case): {verdict}")
    pairs = args.class_size * (args.class_size - 1) // 2
    for label, programs in (("source only", False), ("combined", True)):
        first, again = class_time(args.class_size, programs)
        print(
            f"One report over a class of {args.class_size} ({pairs} pairs), {label}: {first:.2f} s per exercise, "
            f"{again:.2f} s viewed again"
        )


if __name__ == "__main__":
    main()

"""The similarity report on its planted cohort (not a test: it prints figures for docs/service.md).

    .venv/bin/python benchmarks/similarity.py [--seeds 3] [--class-size 200] [--ablations]

The cohort (tests/helpers/similarity.py, `cohort`): for each exercise of tests/similarity/, every
honest answer (six independently written variants, `v*.py`, and three written the reference's
way, `r*.py`, whose programs converge as right answers to a prescribed task do) and copies of
four of them (`COHORT_FROM`), disguised one way per run (`COHORT`: renamed and reordered, edited,
shuffled, split into a helper, module-level helpers renamed, API synonyms and loop forms swapped,
a decoy, two sources mixed by hand), one planting per seed. Each function is also exported as the
grader's trusted side exports it and fingerprinted as the `jit` check records it
(tests/helpers/similarity.py's `program_of`); the reference's program is discounted.

Per disguise, over every exercise and seed, for the report as built and for each way of
combining the two sides (`COMBINATIONS`, from each pair's `source` and `program` scores):
recall at the instructor's first page (the planted pairs among an exercise's first `SIMILAR_TOP`),
the best honest pair's rank (its worst case: 1 + the copies above it, when every copy is), how
many cases rank every copy above every honest pair (a mixed copy by the better of its two pairs),
and the lowest copy's and highest honest pair's scores. Exercises the report labels "too short to
tell" are counted apart. Last, the time of one report of a whole topic over a class of
`--class-size` students (`class_files`), the first time and viewed again. `--ablations` adds the source side's ablations over the variants alone
(no normalisation, no discount).

The file runs against any checkout of the package (`PYTHONPATH=<checkout>`): it reads only what
the report has had from the start (`read`, `rank`, `given`, a pair's `score`, `source` and
`program`), so that the code before a change is measured by the same cohort.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from helpers import similarity as corpus  # noqa: E402
from jaxlings.grading import paths, source  # noqa: E402
from jaxlings.service import similarity  # noqa: E402
from jaxlings.service.routes.pages import SIMILAR_TOP  # noqa: E402 - the pairs an exercise shows on the page

COMBINATIONS: dict[str, Callable[[float, float | None, float], float]] = {
    "as built": lambda s, p, built: built,
    "source alone": lambda s, p, built: s,
    "program alone": lambda s, p, built: p if p is not None else s,
    "mean": lambda s, p, built: s if p is None else (s + p) / 2,
    "larger": lambda s, p, built: s if p is None else max(s, p),
    "noisy-or": lambda s, p, built: s if p is None else 1 - (1 - s) * (1 - p),
}
"""Ways to score a pair from its sides: (source, program or None, the report's own score) -> score."""
COHORT_ORDER = {kind: i for i, kind in enumerate(corpus.COHORT)}


@dataclass(frozen=True)
class Scored:
    """One pair of a case: its score under a combination, whether it is planted, and whether both
    its programs are the reference's (a copy of an answer written the reference's way)."""

    a: str
    b: str
    score: float
    planted: bool
    prescribed: bool


def reference_program(topic: str, exercise: str) -> frozenset[int]:
    """The reference solution's program sketch (discounted on the program side)."""
    text = (paths.solutions_dir() / f"{topic}.py").read_text()
    return corpus.program_of(topic, exercise, text) or frozenset()


def ranking(case: corpus.Case, programs: bool = True, variant: str = "full") -> similarity.Ranking:
    """The report's ranking of one case, with each function's program where `programs` (the
    reference's discounted); `variant` `raw` (source as written) or `no-discount` for ablations."""
    codes = []
    for i, (login, text) in enumerate(sorted(case.files.items()), 1):
        code = similarity.read(login, i, text, case.exercise)
        assert code is not None, (case.exercise, login)
        if variant == "raw":
            code = replace(code, grams=written_grams(text, case.exercise), canonical=login)
        if programs:
            code = replace(code, program=corpus.program_of(case.topic, case.exercise, text))
        codes.append(code)
    given = similarity.given(case.topic, case.exercise)
    if variant == "no-discount":
        given = similarity.Given(frozenset(), given.reference)
    if programs:
        given = replace(given, program=reference_program(case.topic, case.exercise))
    return similarity.rank(case.exercise, codes, given)


def written_grams(text: str, exercise: str) -> Counter[str]:
    """The ablation without normalisation: the n-grams of the function as written (docstring aside)."""
    found = similarity.function_in(text, exercise)
    assert found is not None
    fn = found.fn
    fn.body = fn.body[1:] if source.docstring(fn) is not None else fn.body
    return similarity.shingles(similarity.tokens(fn))


def scored(case: corpus.Case, ranked: similarity.Ranking, combine: str) -> list[Scored]:
    """The case's pairs scored by `combine`, most alike first (ties: by the logins)."""
    how = COMBINATIONS[combine]
    reference = reference_program(case.topic, case.exercise)
    out = []
    for p in ranked.pairs:
        src = p.source if p.source is not None else p.score
        prescribed = bool(reference) and p.a.program == reference and p.b.program == reference
        out.append(
            Scored(
                p.a.login, p.b.login, how(src, p.program, p.score), case.is_planted(p.a.login, p.b.login), prescribed
            )
        )
    return sorted(out, key=lambda s: (-s.score, s.a, s.b))


def figures(case: corpus.Case, pairs: list[Scored]) -> dict[str, float]:
    """Recall at the first page (every planted pair), the best honest pair's rank, whether every
    copy ranks above every honest pair (a copy of two sources by its better pair; a copy of an
    answer whose program is the reference's is counted apart, `prescribed`), the lowest such
    copy, the highest honest pair, and how many copies of prescribed answers rank above every
    honest pair."""
    planted = [i for i, s in enumerate(pairs) if s.planted]
    honest = [i for i, s in enumerate(pairs) if not s.planted]
    copies: dict[str, int] = {}
    prescribed: dict[str, int] = {}
    for i in planted:
        copy = next(n for n in (pairs[i].a, pairs[i].b) if n.endswith("_copy"))
        into = prescribed if pairs[i].prescribed else copies
        into[copy] = min(into.get(copy, i), i)
    return {
        "recall": sum(i < SIMILAR_TOP for i in planted) / len(planted),
        "honest_rank": honest[0] + 1,
        "separated": float(not copies or max(copies.values()) < honest[0]),
        "lowest_copy": min((pairs[i].score for i in copies.values()), default=1.0),
        "highest_honest": pairs[honest[0]].score,
        "prescribed": len(prescribed),
        "prescribed_above": sum(i < honest[0] for i in prescribed.values()),
    }


def cohort_rows(seeds: int) -> dict[tuple[str, str, bool], list[dict[str, float]]]:
    """(disguise, combination, labelled "too short to tell") -> the figures of every case."""
    rows: dict[tuple[str, str, bool], list[dict[str, float]]] = defaultdict(list)
    for kind in corpus.COHORT:
        for topic, exercise in corpus.exercises():
            for seed in range(seeds):
                case = corpus.cohort(topic, exercise, kind, seed)
                ranked = ranking(case)
                for combine in COMBINATIONS:
                    rows[(kind, combine, ranked.too_short_to_tell)].append(figures(case, scored(case, ranked, combine)))
    return rows


def print_cohort(rows: dict[tuple[str, str, bool], list[dict[str, float]]]) -> None:
    """The per-disguise table (markdown), one row per disguise and combination."""
    print(
        f"\n| disguise | score | cases | recall, first {SIMILAR_TOP} | best honest rank (worst) "
        "| every copy above every honest pair | lowest copy | highest honest | copies of prescribed answers above |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for (kind, combine, labelled), found in sorted(rows.items(), key=lambda r: (r[0][2], COHORT_ORDER[r[0][0]])):
        note = " (labelled too short to tell)" if labelled else ""
        print(
            f"| {kind}{note} | {combine} | {len(found)} | {statistics.mean(r['recall'] for r in found):.3f} "
            f"| {min(int(r['honest_rank']) for r in found)} | {int(sum(r['separated'] for r in found))} of {len(found)} "
            f"| {min(r['lowest_copy'] for r in found):.3f} | {max(r['highest_honest'] for r in found):.3f} "
            f"| {int(sum(r['prescribed_above'] for r in found))} of {int(sum(r['prescribed'] for r in found))} |"
        )


def print_ablations(seeds: int) -> None:
    """The source side's ablations over the variants alone (planted copies, three per case)."""
    print(
        "\n| source side | cases | every planted pair above every independent one | lowest planted | highest independent |"
    )
    print("|---|---|---|---|---|")
    for variant in ("full", "raw", "no-discount"):
        found = []
        for topic, exercise in corpus.exercises():
            for seed in range(seeds):
                case = corpus.case(topic, exercise, seed)
                found.append(figures(case, scored(case, ranking(case, False, variant), "as built")))
        print(
            f"| {variant} | {len(found)} | {int(sum(r['separated'] for r in found))} of {len(found)} "
            f"| {min(r['lowest_copy'] for r in found):.3f} | {max(r['highest_honest'] for r in found):.3f} |"
        )


def class_files(
    topic: str, size: int
) -> tuple[list[str], dict[str, tuple[int, str]], dict[str, dict[str, frozenset[int]]]]:
    """A class of `size` students of one topic, as the service hands it to the report: (the
    topic's exercises, login -> (submission id, topic file), login -> exercise -> program sketch).
    Each file is the reference's, its exercises of the corpus replaced by a planted copy of an
    honest answer (the answers in turn; each copy's program is its original's: the copies lower
    alike, tests/core/test_similarity.py); the other exercises are the reference for everyone."""
    from jaxlings.grading import topics

    exercises = [ex.name for ex in topics.load(topic).exercises]
    reference = (paths.solutions_dir() / f"{topic}.py").read_text()
    mine = [exercise for t, exercise in corpus.exercises() if t == topic]
    answers = {exercise: list(corpus.honest(topic, exercise).values()) for exercise in mine}
    rng = random.Random(0)
    files, programs = {}, {}
    for i in range(size):
        text, sketches = reference, {}
        for exercise in mine:
            answer = answers[exercise][i % len(answers[exercise])]
            text = corpus.with_function(text, corpus.plant(answer, exercise, rng), exercise)
            if (sketch := corpus.program_of(topic, exercise, answer)) is not None:
                sketches[exercise] = sketch
        for exercise in exercises:
            if exercise not in mine and (sketch := corpus.program_of(topic, exercise, reference)) is not None:
                sketches[exercise] = sketch
        files[f"s{i:03d}"] = (i, text)
        programs[f"s{i:03d}"] = sketches
    return exercises, files, programs


def class_time(size: int, programs: bool) -> list[tuple[str, int, float, float]]:
    """(topic, exercises, seconds, seconds viewed again) of one report over a class of `size`
    students per topic of the corpus (`class_files`): the first (every function read and
    normalised), then a repeat (reads remembered, as when the page is viewed again); with
    `programs`, each student's program sketches given too (the service reads them from
    results.json)."""
    out = []
    for topic in sorted({t for t, _ in corpus.exercises()}):
        exercises, files, sketches = class_files(topic, size)
        similarity.READS.clear()  # the first report reads every function, whatever ran before
        times = []
        for _ in range(2):
            start = time.perf_counter()
            similarity.report(topic, exercises, files, sketches if programs else None)
            times.append(time.perf_counter() - start)
        out.append((topic, len(exercises), times[0], times[1]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=3, help="plantings per exercise and disguise")
    parser.add_argument("--class-size", type=int, default=200)
    parser.add_argument("--ablations", action="store_true", help="also the source side's ablations")
    args = parser.parse_args()
    print(f"similarity from {Path(similarity.__file__).resolve()}")
    print_cohort(cohort_rows(args.seeds))
    if args.ablations:
        print_ablations(args.seeds)
    pairs = args.class_size * (args.class_size - 1) // 2
    for label, programs in (("source only", False), ("both sides", True)):
        for topic, exercises, first, again in class_time(args.class_size, programs):
            print(
                f"One report of {topic} ({exercises} exercises) over a class of {args.class_size} ({pairs} pairs per"
                f" exercise), {label}: {first:.2f} s, {again:.2f} s viewed again"
            )


if __name__ == "__main__":
    main()

"""What the reference and every crafted submission score, exercise by exercise.

    python benchmarks/crafted_scores.py autodiff debugging training [--seed 1]

For each topic: the reference solution, then every `tests/submissions/<topic>__*.py`, graded
as hidden grading does (live reference, one fixed seed so the rows compare). Prints, per
submission, each exercise's points per check and the messages of the checks it lost, then
the reference's measured figures per exercise (operations, FLOPs, HLO lines, speed ratio).
The figures in a topic's note come from this script.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from jaxlings.grading import engine, topics
from jaxlings.grading.paths import solutions_dir

SUBMISSIONS = Path(__file__).resolve().parent.parent / "tests" / "submissions"
sys.path.insert(0, str(SUBMISSIONS.parent))
from helpers.crafted import submission_source  # noqa: E402 - tests/ is not a package on the path

FIGURES = ("n_ops", "flops", "hlo_lines", "ratio", "cases", "compiles")


def grade_file(source: Path, topic: str, seed: int) -> engine.Result:
    """Grade one file as `<topic>.py` against the reference (a crafted patch over the reference:
    tests/helpers/grading.py's `submission_source`)."""
    with tempfile.TemporaryDirectory(prefix="jaxlings-crafted-") as folder:
        text = submission_source(source)
        (Path(folder) / f"{topic}.py").write_text(text)
        return engine.grade(Path(folder), topics.resolve([topic]), reference_dir=solutions_dir(), seed=seed)


def per_exercise(result: engine.Result) -> dict[str, list]:
    """exercise -> [(check, score, max, message)] in the result's order."""
    rows: dict[str, list] = {}
    for t in result.tests:
        exercise, check = t.name.split(".", 1)[1].split(":")
        rows.setdefault(exercise, []).append((check, t.score, t.max_score, t.output))
    return rows


def show(label: str, result: engine.Result) -> None:
    print(f"\n## {label}: {result.score:g} / {result.max_score:g}")
    for exercise, checks in per_exercise(result).items():
        points = " ".join(f"{c} {s:g}/{m:g}" for c, s, m, _ in checks)
        print(f"  {exercise:24} {points}")
        for check, score, most, message in checks:
            if score < most:
                print(f"      {check}: {message[:160]}")


def figures(result: engine.Result) -> None:
    print("\n  reference figures:")
    for t in result.tests:
        data = t.extra_data or {}
        shown = {k: data[k] for k in FIGURES if k in data}
        shown.update({f"ref_{k}": data[f"reference_{k}"] for k in FIGURES if f"reference_{k}" in data})
        if shown:
            print(f"    {t.name.split('.', 1)[1]:34} {shown}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("topics", nargs="+")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    for topic in args.topics:
        print(f"\n# {topic}")
        reference = grade_file(solutions_dir() / f"{topic}.py", topic, args.seed)
        show("reference", reference)
        figures(reference)
        for source in sorted(SUBMISSIONS.glob(f"{topic}__*.py")):
            show(source.stem.split("__", 1)[1], grade_file(source, topic, args.seed))


if __name__ == "__main__":
    main()

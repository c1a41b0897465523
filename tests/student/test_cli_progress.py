"""The student's commands as typed: `grade check` on a typo, `grade list`, `grade hint EXERCISE`,
and what the student package's `grade --help` offers. Real processes, real files; nothing here
starts a grading worker (a typo is caught before any starts)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

from helpers.grading import ROOT, SOLUTIONS
from jaxlings.grading import results, topics
from jaxlings.grading.checks import ordered
from jaxlings.grading.results import Outcome, Result
from jaxlings.student import report
from student.test_cli import grade


def test_a_syntax_error_is_one_row_with_the_students_line_at_once(tmp_path):
    (tmp_path / "exercises").mkdir()
    source = (SOLUTIONS / "at_updates.py").read_text().replace("return at.set(vals)", "return at.set((vals)")
    (tmp_path / "exercises" / "at_updates.py").write_text(source)
    line = source.splitlines().index("    return at.set((vals), at.add(vals), at.min(vals), at.max(vals)") + 1
    run = grade("check", "at_updates", "--json", "out.json", cwd=tmp_path, env={"COLUMNS": "100"})
    assert run.returncode == 1, run.stdout + run.stderr
    assert f"SyntaxError in exercises/at_updates.py, line {line}: '(' was never closed" in run.stdout
    assert "    return at.set((vals), at.add(vals), at.min(vals), at.max(vals)\n                 ^\n" in run.stdout
    assert run.stdout.count("never closed") == 1 and "jaxlings-" not in run.stdout and "/tmp" not in run.stdout
    assert "Next: at_updates.scatter_ops in exercises/at_updates.py, then grade check at_updates" in run.stdout
    result = json.loads((tmp_path / "out.json").read_text())
    assert len(result["tests"]) == 9  # results.json keeps one test per (exercise, check)
    assert result["execution_time"] < 1.0  # read in the grader's process: no worker started


def test_a_topic_of_stubs_is_one_line(tmp_path):
    (tmp_path / "exercises").mkdir()
    shutil.copyfile(ROOT / "exercises" / "prng.py", tmp_path / "exercises" / "prng.py")
    run = grade("check", "prng", cwd=tmp_path, env={"COLUMNS": "100"})
    assert run.returncode == 1
    assert "none of the 4 functions written yet: start with derive_keys" in run.stdout
    assert "not implemented yet" not in run.stdout and "advice" not in run.stdout


def remembered(tmp_path, topic: str, exercise: str, verdicts: dict[str, Outcome]) -> None:
    """The last-check memory of `grade check TOPIC.EXERCISE` with these verdicts."""
    ex = topics.load_public(topic).exercise(exercise)
    tests = [
        results.TestResult.of(topic, exercise, c.name, c.points, verdicts[c.name], "visible")
        for c in ordered(ex.checks)
    ]
    report.save_last_check(tmp_path, Result(tests, 1.0, {}))


def test_list_counts_pending_as_pending_and_fits_100_columns(tmp_path):
    """The old list said "2/3 pass" for an exercise whose only unpassed check is judged on submission."""
    remembered(
        tmp_path,
        "at_updates",
        "histogram",
        {"correct": Outcome.ok(), "jit": Outcome.ok(), "speed": Outcome.pending("1 ms")},
    )
    remembered(tmp_path, "at_updates", "mask_fill", {"correct": Outcome.fail("differs"), "jit": Outcome.ok()})
    run = grade("list", cwd=tmp_path, env={"COLUMNS": "100"})
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    assert max(len(line) for line in lines) <= 100 and len(lines) <= 60
    assert "✓ histogram" in run.stdout and "✗ mask_fill" in run.stdout and "· scatter_ops" in run.stdout
    assert "3/9 pass, 1 to fix, 1 on submission" in run.stdout
    checks = sum(
        not c.advisory for name in topics.ORDER for ex in topics.load_public(name).exercises for c in ex.checks
    )
    assert lines[0].startswith("jaxlings ") and f"3/{checks} checks pass, 1 to fix, 1 judged on submission" in lines[0]
    assert "jit basics: tracing" not in run.stdout  # the title is not said twice
    assert lines[-1] == "Next: jit_basics.clip_by_norm in exercises/jit_basics.py, then grade check jit_basics"


def test_hint_takes_an_exercise_alone_when_one_topic_has_it(tmp_path):
    run = grade("hint", "noisy_walk", cwd=tmp_path)
    assert run.returncode == 0 and "prng.noisy_walk hint 1/" in run.stdout
    unknown = grade("hint", "no_such_exercise", cwd=tmp_path)
    assert unknown.returncode == 2 and "no topic has an exercise 'no_such_exercise'" in unknown.stdout


STUDENT_HELP = (
    "import sys; from jaxlings.grading import paths; paths.has_grader = lambda: False; "
    "sys.argv = ['grade', '--help']; from jaxlings.cli import main; main()"
)


def commands(help_text: str) -> set[str]:
    """The command names in a `--help` listing's Commands box."""
    box = help_text.split("Commands")[1]
    return {m.group(1) for line in box.splitlines() if (m := re.match(r"│ ([a-z][\w-]*)  ", line))}


def test_the_student_packages_help_lists_only_student_commands():
    student = subprocess.run(
        [sys.executable, "-c", STUDENT_HELP],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"COLUMNS": "100", "PATH": ""},
    )
    assert commands(student.stdout) == {
        "check",
        "watch",
        "hint",
        "list",
        "init",
        "login",
        "submit",
        "submissions",
        "result",
        "pseudonym",
        "take-notebook",
    }
    grader = grade("--help")
    assert {"serve", "worker", "course", "export", "grade", "build"} <= commands(grader.stdout)


def test_a_link_in_a_message_is_never_cut_at_80_columns():
    """A message's link longer than the column folds onto the next line whole; it used to end
    in "…" ("https://docs.jax.dev/en/la…")."""
    from rich.console import Console

    link = "https://docs.jax.dev/en/latest/_autosummary/jax.random.fold_in.html#jax.random.fold_in"
    failing = Outcome.fail(f"two draws from one key: see {link} for deriving keys")
    tests = [results.TestResult.of("prng", "derive_keys", "correct", 3, failing, "visible")]
    tests.append(results.TestResult.of("prng", "dropout", "correct", 3, Outcome.ok(), "visible"))
    console = Console(width=80, record=True, color_system=None)
    report.result_tables(Result(tests, 1.0, {}), console)
    text = console.export_text()
    assert "…" not in text
    cells = [line.split("│")[-2].strip() for line in text.splitlines() if line.count("│") >= 6]
    assert link in "".join(cells)  # the message column, its lines joined: the whole link

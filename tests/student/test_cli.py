"""The `grade` command as people type it: a real process, real files, one-line errors."""

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from helpers.grading import ROOT, SOLUTIONS


def grade(*args: str, cwd: Path = ROOT, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "jaxlings", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
        timeout=600,
    )


def solved(tmp_path: Path, topic: str = "at_updates") -> Path:
    """A student folder whose exercises/ holds the reference of `topic`."""
    (tmp_path / "exercises").mkdir()
    shutil.copyfile(SOLUTIONS / f"{topic}.py", tmp_path / "exercises" / f"{topic}.py")
    return tmp_path


def test_check_reports_a_table_and_remembers_progress(tmp_path):
    run = grade("check", "at_updates.mask_fill", cwd=solved(tmp_path))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "mask_fill" in run.stdout and "Total: 3 / 3" in run.stdout
    listing = grade("list", cwd=tmp_path)
    assert "✓ mask_fill" in listing.stdout and "· scatter_ops" in listing.stdout


def test_check_fails_with_status_1_on_stubs(tmp_path):
    shutil.copytree(ROOT / "exercises", tmp_path / "exercises")
    run = grade("check", "at_updates.mask_fill", cwd=tmp_path)
    assert run.returncode == 1
    assert "not implemented yet" in run.stdout and "grade hint at_updates.mask_fill" in run.stdout


def test_hint_goes_one_level_deeper_each_time(tmp_path):
    first = grade("hint", "at_updates.histogram", cwd=tmp_path).stdout
    second = grade("hint", "at_updates.histogram", cwd=tmp_path).stdout
    third = grade("hint", "at_updates.histogram", cwd=tmp_path).stdout
    again = grade("hint", "at_updates.histogram", cwd=tmp_path).stdout
    assert "hint 1/3" in first and "hint 2/3" in second and "hint 3/3" in third and "hint 3/3" in again
    assert "hint 1/3" in grade("hint", "at_updates.histogram", "--level", "1", cwd=tmp_path).stdout


@pytest.mark.parametrize(
    "args, words",
    [
        (["grade", "/no/such/folder"], "no such submission"),
        (["hint", "prng.nope"], "has no exercise 'nope'"),
        (["hint", "nope.x"], "unknown topic 'nope'"),
        (["check", "--dir", "/no/where"], "no exercises folder"),
        (["grade", "README.md"], "neither a directory nor a .zip"),
    ],
)
def test_errors_are_one_line_without_traceback(args, words, tmp_path):
    run = grade(*args)
    assert run.returncode == 2
    text = run.stdout + run.stderr
    assert words in text and "Traceback" not in text
    assert len(text.strip().splitlines()) <= 2


@pytest.mark.slow
def test_grade_a_zip_and_write_results(tmp_path):
    archive = tmp_path / "submission.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.write(SOLUTIONS / "at_updates.py", "my-work/at_updates.py")
    out = tmp_path / "results.json"
    run = grade(
        "grade",
        str(archive),
        "--topics",
        "at_updates.mask_fill",
        "--json",
        str(out),
        "--seed",
        "5",
        "--sandbox",
        "auto",
    )  # sandboxed where bubblewrap is installed: this test is about the zip and the file
    assert run.returncode == 0, run.stdout + run.stderr
    data = json.loads(out.read_text())
    assert data["score"] == data["max_score"] == 3 and data["extra_data"]["seed"] == 5


def test_without_bubblewrap_grade_refuses_to_run_unsandboxed_but_names_a_bad_submission_first(tmp_path):
    no_bwrap = {"PATH": str(tmp_path)}  # an empty PATH: `bwrap` is not found
    run = grade("grade", str(SOLUTIONS), "--topics", "at_updates.mask_fill", env=no_bwrap)
    assert run.returncode == 2 and "the sandbox needs bubblewrap" in run.stdout, run.stdout + run.stderr
    missing = grade("grade", "/no/such/folder", env=no_bwrap)
    assert missing.returncode == 2 and "no such submission" in missing.stdout, missing.stdout + missing.stderr


def test_a_hostile_zip_is_refused(tmp_path):
    archive = tmp_path / "evil.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("../../escaped.py", "x = 1")
    run = grade("grade", str(archive))
    assert run.returncode == 2 and "unsafe member" in run.stdout
    assert not (tmp_path.parent / "escaped.py").exists()


@pytest.mark.slow
def test_build_check_passes_on_the_committed_stubs():
    run = grade("build", "--check")
    assert run.returncode == 0, run.stdout


def _read_until(proc, marker: str, timeout: float = 240) -> list[str]:
    """Lines of `proc`'s output up to the one holding `marker` (a reader thread: no select on a
    buffered pipe, which can hold finished lines out of select's sight)."""
    import queue
    import threading

    if not hasattr(proc, "lines"):
        proc.lines = queue.Queue()
        threading.Thread(target=lambda: [proc.lines.put(line) for line in proc.stdout], daemon=True).start()
    lines = []
    try:
        while True:
            line = proc.lines.get(timeout=timeout)
            lines.append(line)
            if marker in line:
                return lines
    except queue.Empty:
        raise AssertionError(f"never saw {marker!r}; got {''.join(lines)[-2000:]}") from None


def test_check_passes_when_only_the_speed_check_waits_for_the_grading_machine(tmp_path):
    run = grade("check", "at_updates.histogram", cwd=solved(tmp_path))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "judged on submission" in run.stdout and "…" in run.stdout
    assert "Total: 3 / 5, 2 judged on submission" in run.stdout

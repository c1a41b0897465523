"""`grade export gradescope`: the zip's run_autograder, run in an /autograder-shaped folder, writes
results/results.json with the same engine, with Gradescope's `leaderboard` of the measured speed
ratios (and fails cleanly on a submission that does not import).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile

import pytest

from helpers.service import BROKEN, GRADE, SOLUTIONS, all_but_speed_pass
from jaxlings.grading.results import measured_ratio

pytestmark = pytest.mark.slow


def test_run_autograder_in_an_autograder_folder_writes_results(tmp_path):
    out = tmp_path / "jaxlings.zip"
    made = subprocess.run(
        GRADE + ["export", "gradescope", "--out", str(out), "--topics", "at_updates"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert made.returncode == 0, made.stdout + made.stderr
    root = tmp_path / "jaxlings"
    with zipfile.ZipFile(out) as archive:
        names = archive.namelist()
        assert {"setup.sh", "run_autograder", "solutions/at_updates.py", "jaxlings/grading/engine.py"} <= set(names)
        archive.extractall(root / "source")
    os.chmod(root / "source" / "run_autograder", 0o755)
    for name, files in (
        ("good", {"at_updates.py": (SOLUTIONS / "at_updates.py").read_text()}),
        ("broken", {"at_updates.py": BROKEN, "notes.txt": "not a topic"}),
    ):
        shutil.rmtree(root / "submission", ignore_errors=True)
        shutil.rmtree(root / "results", ignore_errors=True)
        (root / "submission").mkdir()
        for file, source in files.items():
            (root / "submission" / file).write_text(source)
        env = {**os.environ, "AUTOGRADER_ROOT": str(root), "JAXLINGS_PYTHON": sys.executable}
        env.pop("JAXLINGS_SOLUTIONS", None)
        ran = subprocess.run(
            ["bash", str(root / "source" / "run_autograder")],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            cwd=tmp_path,
        )
        assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
        doc = json.loads((root / "results" / "results.json").read_text())
        assert {t["name"].split(".")[0] for t in doc["tests"]} == {"at_updates"}
        if name == "good":
            assert doc["max_score"] > 0 and all_but_speed_pass(doc)
            measured = {  # Gradescope's leaderboard: each speed ratio the grader measured, lower first
                f"{topic}.{exercise} time / reference": ratio
                for t in doc["tests"]
                for topic, exercise, check in [t["tags"]]
                if (ratio := measured_ratio(check, t["extra_data"])) is not None
            }
            assert measured and {e["name"]: e["value"] for e in doc["leaderboard"]} == measured
            assert {e["order"] for e in doc["leaderboard"]} == {"asc"}
        else:
            assert doc["score"] == 0 and doc["max_score"] > 0
            assert "leaderboard" not in doc  # nothing was timed


def test_run_autograder_grades_nothing_without_the_sandbox_and_says_why(tmp_path):
    """Where bubblewrap cannot build a sandbox, the submission is not run unsandboxed: the run fails
    and results.json names the cause."""
    out = tmp_path / "jaxlings.zip"
    made = subprocess.run(
        GRADE + ["export", "gradescope", "--out", str(out)], capture_output=True, text=True, timeout=120
    )
    assert made.returncode == 0, made.stdout + made.stderr
    root = tmp_path / "autograder"
    with zipfile.ZipFile(out) as archive:
        archive.extractall(root / "source")
    (root / "submission").mkdir()
    (root / "submission" / "at_updates.py").write_text((SOLUTIONS / "at_updates.py").read_text())
    tools = tmp_path / "bin"  # what the script needs, and no bwrap
    tools.mkdir()
    for tool in ("mkdir", "cat"):
        (tools / tool).symlink_to(shutil.which(tool))
    env = {"PATH": str(tools), "HOME": str(tmp_path), "AUTOGRADER_ROOT": str(root), "JAXLINGS_PYTHON": sys.executable}
    ran = subprocess.run(
        [shutil.which("bash"), str(root / "source" / "run_autograder")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode != 0
    doc = json.loads((root / "results" / "results.json").read_text())
    assert doc["score"] == 0 and doc["tests"] == []
    assert "not graded" in doc["output"] and "the sandbox needs bubblewrap" in doc["output"], doc["output"]
    assert "WITHOUT the sandbox" not in ran.stdout

"""The grader's own process stays light: it never imports JAX (so on the grading GPU it takes
no device memory and cannot be confused with a student's process), and it imports no solution."""

import subprocess
import sys

from conftest import ROOT


def test_grader_never_imports_jax_or_a_solution():
    code = (
        "import sys, autograder.cli, autograder.engine\n"
        "from autograder import topics\n"
        "[topics.load(t) for t in topics.ORDER]\n"
        "bad = [m for m in sys.modules if m == 'jax' or m.startswith('jax.') or m in topics.ORDER]\n"
        "print(bad)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"

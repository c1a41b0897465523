"""The grader's own process stays light: it never imports JAX (so on the grading GPU it takes
no device memory and cannot be confused with a student's process), and it imports no solution."""

import subprocess
import sys

from helpers.grading import ROOT


def test_grader_never_imports_jax_or_a_solution():
    code = (
        "import sys, jaxlings.cli, jaxlings.grading.engine\n"
        "from jaxlings.grading import topics\n"
        "[topics.load(t) for t in topics.ORDER]\n"
        "bad = [m for m in sys.modules if m == 'jax' or m.startswith('jax.') or m in topics.ORDER]\n"
        "print(bad)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"


def _imports(path) -> set[str]:
    """Every module a Python file imports (absolute names; relative ones resolved in jaxlings.worker)."""
    import ast

    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            found.add("jaxlings.worker" if node.level else node.module or "")
    return found


def test_the_worker_package_imports_nothing_else_of_the_grader():
    """jaxlings/worker/ is the only grader code in a student's process (and in the sandbox):
    it must not pull in the grading core, the topic specs or their hidden cases."""
    files = sorted((ROOT / "jaxlings" / "worker").glob("*.py"))
    assert {f.name for f in files} >= {"__init__.py", "__main__.py", "harness.py", "wire.py", "program.py"}
    for f in files:
        outside = {m for m in _imports(f) if m.split(".")[0] == "jaxlings" and not m.startswith("jaxlings.worker")}
        assert not outside, f"{f.name} imports {outside}"
    # and the worker's modules load with nothing else of jaxlings imported
    code = (
        "import sys, jaxlings.worker.harness, jaxlings.worker.program\n"
        "print(sorted(m for m in sys.modules if m.startswith('jaxlings') and not m.startswith('jaxlings.worker')"
        " and m != 'jaxlings'))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"

"""The layering contracts (pyproject.toml's [tool.importlinter], checked by `make lint`): every
module of the package has its place in them, and `lint-imports` fails where a planted import
breaks one, naming the contract and the import."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "autograder"
CONTRACTS = {
    c["id"]: c for c in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
}
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"

PLANTED = {
    "worker": ("worker/wire.py", "autograder.worker.wire -> autograder.engine", "import autograder.engine"),
    "core": ("checks/base.py", "autograder.checks.base -> autograder.course.graded", "import autograder.course.graded"),
    "tools": ("watch.py", "autograder.watch -> autograder.service.app", "import autograder.service.app"),
    "builder": ("hints.py", "autograder.hints -> autograder.course.dist", "import autograder.course.dist"),
    "service": ("__main__.py", "autograder.__main__ -> autograder.service.jobs", "import autograder.service.jobs"),
}


def children() -> set[str]:
    """The package's top-level modules and subpackages, as dotted names (`__main__` aside)."""
    modules = {p.stem for p in PACKAGE.glob("*.py") if p.stem not in ("__init__", "__main__")}
    packages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    return {f"autograder.{name}" for name in modules | packages}


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """`lint-imports` on the package copied under `root`, with the project's contracts."""
    env = {**os.environ, "PYTHONPATH": str(root), "COLUMNS": "400"}
    command = [str(LINT_IMPORTS), "--config", str(root / "pyproject.toml"), "--no-cache"]
    return subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=120)


def test_every_module_of_the_package_has_its_place():
    """A new module must be placed: the worker may import none of it, and it is either the
    grading core's or one of the layers the core must not import."""
    others = children() - {"autograder.worker"}
    assert set(CONTRACTS["worker"]["forbidden_modules"]) == others
    core, above = set(CONTRACTS["core"]["source_modules"]), set(CONTRACTS["core"]["forbidden_modules"])
    assert not core & above, core & above
    assert core | above == others, others ^ (core | above)


def test_lint_imports_keeps_the_tree_and_breaks_each_contract_on_a_planted_import(tmp_path):
    shutil.copytree(PACKAGE, tmp_path / "autograder", ignore=shutil.ignore_patterns("*.json", "__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    kept = lint_imports(tmp_path)
    assert kept.returncode == 0, kept.stdout + kept.stderr
    assert f"Contracts: {len(CONTRACTS)} kept, 0 broken." in kept.stdout

    for path, _, line in PLANTED.values():
        module = tmp_path / "autograder" / path
        module.write_text(module.read_text() + f"\n{line}  # planted by tests/core/test_layers.py\n")
    broken = lint_imports(tmp_path)
    assert broken.returncode == 1, broken.stdout + broken.stderr
    out = broken.stdout
    for contract_id, (_, shown, _) in PLANTED.items():
        assert f"{CONTRACTS[contract_id]['name']} BROKEN" in out, contract_id
        assert shown in out, shown

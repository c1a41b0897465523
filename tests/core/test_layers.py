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
PACKAGE = ROOT / "jaxlings"
CONTRACTS = {
    c["id"]: c for c in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
}
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"

PLANTED = {
    "worker": ("worker/wire.py", "jaxlings.worker.wire -> jaxlings.grading.engine", "import jaxlings.grading.engine"),
    "core": ("grading/check.py", "jaxlings.grading.check -> jaxlings.course.graded", "import jaxlings.course.graded"),
    "tools": ("student/watch.py", "jaxlings.student.watch -> jaxlings.service.app", "import jaxlings.service.app"),
    "builder": ("student/hints.py", "jaxlings.student.hints -> jaxlings.course.dist", "import jaxlings.course.dist"),
    "service": ("__main__.py", "jaxlings.__main__ -> jaxlings.service.jobs", "import jaxlings.service.jobs"),
    "specs": ("grading/engine.py", "jaxlings.grading.engine -> jaxlings.specs.prng", "import jaxlings.specs.prng"),
    # an import for typing only closes a cycle too: the checks' base below the context that holds them
    "acyclic": (
        "grading/check.py",
        "No cycles are allowed in jaxlings.grading.",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from jaxlings.grading.context import CheckContext",
    ),
}


def children() -> set[str]:
    """The package's folders (its subpackages), as dotted names."""
    return {f"jaxlings.{p.parent.name}" for p in PACKAGE.glob("*/__init__.py")}


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """`lint-imports` on the package copied under `root`, with the project's contracts."""
    env = {**os.environ, "PYTHONPATH": str(root), "COLUMNS": "400"}
    command = [str(LINT_IMPORTS), str(root / "pyproject.toml"), "--no-cache", "--no-logo"]
    return subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=120)


def test_every_folder_of_the_package_has_its_place():
    """A new folder must be placed: the worker may import none of it, and it is either the
    grading core's or one of the layers the core must not import; the package's top level
    holds nothing but its `__init__` and `__main__`."""
    others = children() - {"jaxlings.worker"}
    assert set(CONTRACTS["worker"]["forbidden_modules"]) == others
    core, above = set(CONTRACTS["core"]["source_modules"]), set(CONTRACTS["core"]["forbidden_modules"])
    assert not core & above, core & above
    assert core | above == others, others ^ (core | above)
    assert sorted(p.name for p in PACKAGE.glob("*.py")) == ["__init__.py", "__main__.py"]


def test_lint_imports_keeps_the_tree_and_breaks_each_contract_on_a_planted_import(tmp_path):
    shutil.copytree(PACKAGE, tmp_path / "jaxlings", ignore=shutil.ignore_patterns("*.json", "__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    kept = lint_imports(tmp_path)
    assert kept.returncode == 0, kept.stdout + kept.stderr
    assert f"Contracts: {len(CONTRACTS)} kept, 0 broken." in kept.stdout

    for path, _, line in PLANTED.values():
        module = tmp_path / "jaxlings" / path
        module.write_text(module.read_text() + f"\n{line}  # planted by tests/core/test_layers.py\n")
    broken = lint_imports(tmp_path)
    assert broken.returncode == 1, broken.stdout + broken.stderr
    out = broken.stdout
    for contract_id, (_, shown, _) in PLANTED.items():
        assert f"{CONTRACTS[contract_id]['name']} BROKEN" in out, contract_id
        assert shown in out, shown

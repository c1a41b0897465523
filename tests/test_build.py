"""`grade build`: stubs come from the solutions, and the committed ones are up to date."""

import ast

import pytest

from autograder import topics
from autograder.course import build
from conftest import EXERCISES, ROOT, SOLUTIONS


def test_committed_stubs_and_notebooks_are_what_grade_build_writes():
    stale = [b.path for b in build.build(SOLUTIONS, EXERCISES, ROOT / "course", check=True) if b.changed]
    assert stale == [], f"run `grade build`: {stale} are out of date"


def test_stub_keeps_docstrings_and_replaces_solutions():
    for name in topics.ORDER:
        stub = (EXERCISES / f"{name}.py").read_text()
        tree = ast.parse(stub)
        funcs = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
        for ex in topics.load(name).exercises:
            fn = funcs[ex.name]
            assert ast.get_docstring(fn), ex.name
            assert isinstance(fn.body[-1], ast.Raise)
        assert "BEGIN SOLUTION" not in stub


@pytest.mark.parametrize("source", [
    "def f():\n    ### BEGIN SOLUTION\n    return 1\n",
    "def f():\n    return 1\n    ### END SOLUTION\n",
    "### BEGIN SOLUTION\nx = 1\n### END SOLUTION\n",
])
def test_malformed_markers_are_reported(source):
    with pytest.raises(build.BuildError):
        build.make_stub(source, "t")


def test_nested_indentation_is_kept():
    stub = build.make_stub("def f(x):\n    if x:\n        ### BEGIN SOLUTION\n        return 1\n        ### END SOLUTION\n    return 0\n", "t")
    assert '        raise NotImplementedError("f: your code here")' in stub
    ast.parse(stub)


def test_spec_and_solution_must_agree(tmp_path):
    (tmp_path / "sol").mkdir()
    for name in topics.ORDER:
        (tmp_path / "sol" / f"{name}.py").write_text((SOLUTIONS / f"{name}.py").read_text())
    (tmp_path / "sol" / "prng.py").write_text("def derive_keys(key, n):\n    ### BEGIN SOLUTION\n    return key\n    ### END SOLUTION\n")
    with pytest.raises(build.BuildError, match="spec grades"):
        build.build(tmp_path / "sol", tmp_path / "ex")

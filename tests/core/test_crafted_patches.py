"""Crafted submissions written as their fault alone (`helpers.grading.crafted_source`): the
reference with the patch's definitions in place of its own, whatever else the reference holds."""

from __future__ import annotations

import ast
import textwrap

import pytest

from helpers.crafted import PATCH, SUBMISSIONS, _patched, crafted_source
from helpers.grading import crafted_stems

REFERENCE = textwrap.dedent(
    '''\
    """The reference."""

    import math

    SCALE = 2.0


    def helper(x):
        return x * SCALE


    @decorated
    def graded(x):
        """Its docstring."""
        return helper(x) + 1


    def other(x):
        return math.sqrt(x)
    '''
)


def test_a_patch_replaces_its_definitions_and_keeps_the_rest():
    patch = (
        PATCH
        + '\n"""One fault."""\n\nimport os\n\nSCALE = 3.0\n\n\ndef graded(x):\n    return 0\n\n\ndef extra():\n    return 1\n'
    )
    source = _patched(REFERENCE, patch)
    tree = ast.parse(source)
    names = [n.name if hasattr(n, "name") else ast.unparse(n).split(" =")[0] for n in tree.body[1:]]
    assert names.count("graded") == 1 and names.count("SCALE") == 1 and names[-1] == "extra"
    namespace = {"decorated": lambda f: f}
    exec(compile(source, "patched", "exec"), namespace)
    assert namespace["graded"](5) == 0 and namespace["helper"](1) == 3.0 and namespace["other"](4) == 2.0
    assert ast.get_docstring(tree) == "One fault." and "import os" in source and "@decorated" not in source


def test_a_file_without_the_marker_is_the_submission_as_written():
    stem = next(s for s in crafted_stems() if not (SUBMISSIONS / f"{s}.py").read_text().startswith(PATCH))
    assert crafted_source(stem) == (SUBMISSIONS / f"{stem}.py").read_text()


@pytest.mark.parametrize(
    "stem", [s for s in crafted_stems() if (SUBMISSIONS / f"{s}.py").read_text().startswith(PATCH)]
)
def test_every_patch_compiles_over_todays_reference_with_one_definition_per_name(stem):
    """A patch names only definitions of its topic's reference (or new ones), and each ends up
    defined once: the fault is what the grader reads, never a shadowed copy."""
    source = crafted_source(stem)
    compile(source, stem, "exec")
    defined = [n.name for n in ast.parse(source).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
    assert len(defined) == len(set(defined)), stem
    for node in ast.parse((SUBMISSIONS / f"{stem}.py").read_text()).body:
        if isinstance(node, ast.FunctionDef):
            assert ast.unparse(node) in ast.unparse(ast.parse(source)), (stem, node.name)

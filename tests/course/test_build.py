"""`grade build`: stubs come from the solutions, and the committed ones are up to date."""

import ast

import pytest

from helpers.grading import EXERCISES, ROOT, SOLUTIONS
from jaxlings.course import build
from jaxlings.grading import topics


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


@pytest.mark.parametrize(
    "source",
    [
        "def f():\n    ### BEGIN SOLUTION\n    return 1\n",
        "def f():\n    return 1\n    ### END SOLUTION\n",
        "### BEGIN SOLUTION\nx = 1\n### END SOLUTION\n",
    ],
)
def test_malformed_markers_are_reported(source):
    with pytest.raises(build.BuildError):
        build.make_stub(source, "t")


def test_nested_indentation_is_kept():
    stub = build.make_stub(
        "def f(x):\n    if x:\n        ### BEGIN SOLUTION\n        return 1\n        ### END SOLUTION\n    return 0\n",
        "t",
    )
    assert '        raise NotImplementedError("f: your code here")' in stub
    ast.parse(stub)


def test_spec_and_solution_must_agree(tmp_path):
    (tmp_path / "sol").mkdir()
    for name in topics.ORDER:
        (tmp_path / "sol" / f"{name}.py").write_text((SOLUTIONS / f"{name}.py").read_text())
    (tmp_path / "sol" / "prng.py").write_text(
        "def derive_keys(key, n):\n    ### BEGIN SOLUTION\n    return key\n    ### END SOLUTION\n"
    )
    with pytest.raises(build.BuildError, match="spec grades"):
        build.build(tmp_path / "sol", tmp_path / "ex")


# -- the generated "Graded" lists -------------------------------------------------------------------

from dataclasses import dataclass, replace  # noqa: E402
from typing import ClassVar  # noqa: E402

from jaxlings.course import graded  # noqa: E402
from jaxlings.grading import checks, requirements  # noqa: E402
from jaxlings.grading.checks import SpecError  # noqa: E402
from jaxlings.grading.requirements import Requirement  # noqa: E402


def _functions(source: str) -> dict[str, ast.FunctionDef]:
    return {f.name: f for f in ast.parse(source).body if isinstance(f, ast.FunctionDef)}


@pytest.mark.parametrize("name", topics.ORDER)
def test_solutions_write_no_graded_paragraph(name):
    """What is graded is said once, in the spec: a solution's docstrings state the task only."""
    spec = topics.load(name)
    source = (SOLUTIONS / f"{name}.py").read_text()
    assert graded.hand_written(source, [ex.name for ex in spec.exercises]) == [], (
        f"solutions/{name}.py: delete the hand-written Graded paragraphs; `grade build` writes them from the spec"
    )


@pytest.mark.parametrize("name", topics.ORDER)
def test_each_stub_docstring_ends_with_the_graded_list_of_its_spec(name):
    spec = topics.load(name)
    stub = (EXERCISES / f"{name}.py").read_text()
    funcs = _functions(stub)
    for ex in spec.exercises:
        fn = funcs[ex.name]
        doc = ast.get_docstring(fn)
        indent = " " * fn.body[0].col_offset
        want = [
            line.strip() for line in graded.block(ex, graded.parameters(fn), indent, decorated=bool(fn.decorator_list))
        ]
        assert [line.strip() for line in doc.splitlines()[-len(want) :]] == want, ex.name
        assert doc.count("Graded (") == 1
        assert ex.points == 0 or f"Graded ({ex.points:g} point" in doc
        for check in (c.name for c in ex.checks):
            assert f"  - {check} (" in "\n".join(doc.splitlines()[-len(want) :]), (ex.name, check)


def test_the_stub_header_points_to_the_readme_which_states_the_jit_convention_once():
    from jaxlings.student import workspace

    stub = (EXERCISES / "at_updates.py").read_text()
    header = "".join(line[2:] + " " for line in stub.splitlines() if line.startswith("# "))
    assert "README.md" in header and "Write plain functions" not in stub
    readme = " ".join(workspace._readme().split())
    assert readme.count(" ".join(graded.JIT_CONVENTION.split())) == 1


def test_a_graded_list_names_static_arguments_outputs_points_and_bands():
    spec = topics.load("at_updates")
    source = (SOLUTIONS / "at_updates.py").read_text()
    funcs = _functions(source)
    text = " ".join(" ".join(graded.block(spec.exercise("histogram"), graded.parameters(funcs["histogram"]))).split())
    assert text.startswith("Graded (5 points):")
    assert "with `nbins` static" in text and "x1.25" in text and "x10" in text and "int32[2**20]" in text
    text = " ".join(
        " ".join(graded.block(spec.exercise("lookup_and_clamp"), graded.parameters(funcs["lookup_and_clamp"]))).split()
    )
    assert "`looked_up` and `clamped`" in text and "at most 200 operations" in text and "`fill` static" in text


def test_a_tolerance_is_quoted_for_float_outputs_only_keys_and_integers_are_exact():
    """`derive_keys` returns typed keys and `histogram` int32: `compare` takes both exactly,
    whatever rtol and atol say, and their Graded lists say so instead of quoting a tolerance
    as if it applied to them."""
    import numpy as np

    from jaxlings.grading.compare import mismatch

    for name, exercise in (("prng", "derive_keys"), ("at_updates", "histogram")):
        spec = topics.load(name)
        fn = _functions((SOLUTIONS / f"{name}.py").read_text())[exercise]
        text = " ".join(" ".join(graded.block(spec.exercise(exercise), graded.parameters(fn))).split())
        assert "atol 1e-6 for float outputs; integers, booleans and keys exactly." in text, text

    def out(data, kind):
        leaf = {"kind": kind, "data": np.asarray(data), **({"impl": "fry"} if kind == "key" else {})}
        return {"treedef": "PyTreeDef((*,))", "leaves": [leaf]}

    # what the footnote states: a tolerance, however wide, lets no differing key or integer through
    assert mismatch(out(np.uint32([[1, 2]]), "key"), out(np.uint32([[1, 3]]), "key"), 1.0, 10.0) is not None
    assert mismatch(out(np.int32([5]), "array"), out(np.int32([6]), "array"), 1.0, 10.0) is not None
    assert mismatch(out(np.float32([5]), "array"), out(np.float32([6]), "array"), 1.0, 10.0) is None


def test_insert_replaces_a_hand_written_graded_paragraph():
    spec = topics.load("at_updates")
    source = (
        (SOLUTIONS / "at_updates.py")
        .read_text()
        .replace(
            "    Example: `histogram([1, 3, 1, 0], 4)`",
            "    Graded: correct, jit, as I remember it.\n\n    Example: `histogram([1, 3, 1, 0], 4)`",
        )
    )
    out = graded.insert(source, spec)
    assert "as I remember it" not in out and out.count("Graded (") == len(spec.exercises)
    assert graded.insert(out, spec) == out  # a list already there is replaced, not repeated
    ast.parse(out)


def test_every_requirement_and_check_describes_itself():
    for cls in requirements.CLASSES:
        describe = getattr(cls, "describe", None)
        assert describe is not None and not describe.__qualname__.startswith("Requirement."), (
            f"{cls.__name__} needs a describe(): what it asks, for the docstrings' Graded list"
        )
    for name, kind in checks.KINDS.items():
        assert kind.describe is not checks.Check.describe, f"the {name} check needs a describe()"
        assert kind.run is not checks.Check.run and kind.summary.strip(), name
    for name in topics.ORDER:  # and every requirement a spec uses says something
        for ex in topics.load(name).exercises:
            for req in (r for c in ex.checks for r in getattr(c, "requirements", ())):
                assert req.describe().strip(), (name, ex.name, req)


def test_a_requirement_without_a_description_stops_the_build():
    @dataclass(frozen=True)
    class Undescribed:
        trusted: ClassVar[bool] = True

        def judge(self, facts, ref):
            return None

    spec = topics.load("at_updates")
    jit = spec.exercise("mask_fill").check("jit")
    with pytest.raises(SpecError, match=r"option 'requirements' entry 0 must be a Requirement .*no describe"):
        replace(jit, requirements=(Undescribed(),))  # refused when the spec is built, before any build


def test_a_requirement_that_keeps_the_protocol_s_describe_stops_the_build():
    @dataclass(frozen=True)
    class Inherited(Requirement):
        trusted: ClassVar[bool] = True

        def judge(self, facts, ref):
            return None

    spec = topics.load("at_updates")
    mask_fill = spec.exercise("mask_fill")
    checks = tuple(replace(c, requirements=(Inherited(),)) if c.name == "jit" else c for c in mask_fill.checks)
    with pytest.raises(graded.GradedError, match="Inherited"):
        graded.block(replace(mask_fill, checks=checks), ("x", "threshold", "fill"))


def test_numbers_read_as_written():
    assert [graded.num(x) for x in (1e-6, 1e-4, 2.5e-4, 2e-3, 0.25, 1.5, 2000)] == [
        "1e-6",
        "1e-4",
        "2.5e-4",
        "2e-3",
        "0.25",
        "1.5",
        "2000",
    ]

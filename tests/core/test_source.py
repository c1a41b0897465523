"""`jaxlings.grading.source`, the grader's one reader of Python source."""

from __future__ import annotations

import pytest

from jaxlings.grading import source
from jaxlings.grading.source import (
    SourceError,
    code_dump,
    defined_names,
    functions,
    parse,
    parse_trusted,
    statement_end,
)

MODULE = '''"""The module's docstring."""

import jax

SCALE = 2.0
LIMIT: int = 3


@jax.jit
def first(x, /, y, *rest, z=1, **more):
    """First's docstring."""
    return x * SCALE


async def second():
    return 1


class Thing:
    """A class."""

    def method(self):
        """A method."""
        return 2


def third(x):
    if x:
        return 1
    return 0
    # a comment that trails the block
'''

HOSTILE = ["x = " + "-" * 200_000 + "1\n", "y = a" + ".b" * 200_000 + "\n", "def f(:\n", "x = 1\0\n"]


@pytest.mark.parametrize("text", HOSTILE, ids=["minus", "attributes", "syntax", "null byte"])
def test_a_students_source_never_raises(text):
    tree = parse(text)
    assert tree is None or isinstance(tree.body, list)
    assert functions(None) == [] and defined_names(None) == set()


def test_a_trusted_file_that_does_not_parse_is_named():
    with pytest.raises(SourceError, match=r"solutions/loops\.py is not valid Python: .*line 1"):
        parse_trusted("def f(:\n", "solutions/loops.py")
    with pytest.raises(SourceError, match=r"solutions/deep\.py"):
        parse_trusted(HOSTILE[0], "solutions/deep.py")


def test_top_level_functions_with_their_lines_docstrings_and_parameters():
    lines = MODULE.splitlines()
    fns = functions(parse(MODULE))
    assert [f.name for f in fns] == ["first", "second", "third"]  # methods are not top-level
    first, second, third = fns
    assert lines[first.start - 1] == "@jax.jit" and lines[first.end - 1] == "    return x * SCALE"
    assert first.doc == "First's docstring." and first.docstring.col_offset == 4
    assert first.parameters == ("x", "y") and source.parameters(first.node) == ("x", "y")
    assert [type(s).__name__ for s in first.body] == ["Return"]
    assert second.is_async and second.doc is None and second.docstring is None and len(second.body) == 1
    assert not first.is_async
    assert lines[third.end - 1] == "    return 0"
    assert lines[statement_end(third.node, lines) - 1] == "    # a comment that trails the block"


def test_defined_names():
    assert defined_names(parse(MODULE)) == {"SCALE", "LIMIT", "first", "second", "Thing", "third"}


def test_the_code_dump_leaves_out_docstrings_comments_and_positions():
    plain = MODULE.replace('"""The module\'s docstring."""\n', "").replace('    """First\'s docstring."""\n', "")
    plain = plain.replace('    """A class."""\n', "").replace('        """A method."""\n', "")
    plain = plain.replace("    # a comment that trails the block\n", "").replace("\n\n\n", "\n")
    assert code_dump(parse(plain)) == code_dump(parse(MODULE))
    assert "docstring" not in code_dump(parse(MODULE)) and "lineno" not in code_dump(parse(MODULE))
    assert code_dump(parse(MODULE.replace("x * SCALE", "x / SCALE"))) != code_dump(parse(MODULE))


def test_the_code_dump_leaves_out_empty_fields():
    """Fields a later Python adds (3.12's `type_params`) are empty on code that does not use
    them, and left out, so that the dump is the same on every Python the grader supports."""
    assert (
        code_dump(parse("def f():\n    return 1\n"))
        == "Module(body=[FunctionDef(name='f', args=arguments(), body=[Return(value=Constant(value=1))])])"
    )
    assert (
        code_dump(parse('def f():\n    """Only a docstring."""\n'))
        == "Module(body=[FunctionDef(name='f', args=arguments())])"
    )

"""Reading a submitted Python file on the trusted side without ever raising on what it holds.

The grader reads a student's source before and beside running it (which functions are stubs,
which a save changed, what a spare worker preloads, what a notebook cell defines). A file that
does not parse is the import's to report; but some that are valid Python still break the
parser or a walk over the tree: one line of dead code nested deeply enough
(`x = ------...1`, `a.b.b.b...`) makes `ast.parse` raise MemoryError or RecursionError. So
every such read goes through `parse` (and `UNREADABLE` where a walk over the tree recurses),
and a file that cannot be read is treated as one with nothing to find.
"""

from __future__ import annotations

import ast

UNREADABLE = (SyntaxError, ValueError, RecursionError, MemoryError)
"""What reading a submitted source may raise: not valid Python, a null byte, nesting too deep."""


def parse(source: str) -> ast.Module | None:
    """The module's tree, or None where the source cannot be read (see `UNREADABLE`)."""
    try:
        return ast.parse(source)
    except UNREADABLE:
        return None

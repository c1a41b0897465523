"""The marks a solution carries (`solutions/<topic>.py`): nbgrader's solution markers around
what the student writes, and the `def` line that names whose block it is.

`jaxlings.course.build` cuts the marked blocks out of the stubs; `jaxlings.course.dist` reads
them to scan the student package for leaked solution code.
"""

from __future__ import annotations

import re

BEGIN = re.compile(r"^(?P<indent>\s*)### BEGIN SOLUTION\s*$")
"""The line that opens a solution block (its indent is the body's)."""
END = re.compile(r"^\s*### END SOLUTION\s*$")
"""The line that closes a solution block."""
DEF = re.compile(r"^\s*def (?P<name>\w+)\(")
"""A function's first line: the blocks after it are that function's."""

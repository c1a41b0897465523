"""Build-time: what `grade build` and `make student-dist` make from the solutions and specs.

`build` (stubs and nbgrader notebooks), `notebooks` (one topic's notebook), `expectations`
(the public expectations students are checked against), `dist` (the student package). Nothing
here runs while grading, and nothing here ships to students.
"""

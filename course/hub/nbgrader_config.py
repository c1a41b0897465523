"""nbgrader settings every user of the hub shares: copy to /etc/jupyter/nbgrader_config.py.

Students' servers read it when they fetch, validate and submit; the grader account's too.
"""

c = get_config()  # noqa: F821  (nbgrader provides it)

c.Exchange.root = "/srv/nbgrader/exchange"
c.CourseDirectory.course_id = "jaxlings"

# The Assignments tab's Validate button runs the whole notebook, and nbgrader's default gives
# each cell 30 s. A grade cell checks one exercise in fresh JAX worker processes (a few
# seconds, and up to a minute for `ising`'s VMC runs on a laptop CPU), so it needs more.
c.Execute.timeout = 600
c.Execute.interrupt_on_timeout = True

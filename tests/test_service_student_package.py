"""The student package's own `grade` against a running service: login, submit --wait, result; and
its server commands say that they belong on the grading server. The wheel and the student's venv
come from test_student_dist.py's fixtures (the package installed with no checkout beside it).
"""

from __future__ import annotations

import pytest

from service_helpers import BROKEN, SOLUTIONS, course  # noqa: F401
from test_student_dist import built, student  # noqa: F401

pytestmark = pytest.mark.slow


def test_the_student_packages_grade_submits_to_the_service(course, student, tmp_path):
    course.serve()
    course.worker()
    work = tmp_path / "work"
    (work / "exercises").mkdir(parents=True)
    (work / "exercises" / "prng.py").write_text(BROKEN)
    (work / "exercises" / "at_updates.py").write_text((SOLUTIONS / "at_updates.py").read_text())
    token = course.token("kim")
    logged = student.run("grade", "login", "--server", course.url, "--token", token, cwd=work)
    assert logged.returncode == 0 and "kim" in logged.stdout, logged.stdout + logged.stderr
    done = student.run("grade", "submit", "prng", "--wait", cwd=work)
    assert done.returncode == 0 and "Total: 0 / 19" in done.stdout, done.stdout + done.stderr
    sub = done.stdout.split("submission ")[1].split(":")[0]
    assert "Total: 0 / 19" in student.run("grade", "result", sub, cwd=work).stdout
    assert sub in student.run("grade", "submissions", cwd=work).stdout
    served = student.run("grade", "serve", cwd=work)
    assert served.returncode == 2 and "runs on the grading server" in served.stdout, served.stdout + served.stderr

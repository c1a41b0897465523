"""The course's rules (`jaxlings.grading.rules`, course.toml) on the nbgrader path: due dates and
extensions written into nbgrader's gradebook, and a late-penalty plugin that takes off what the
grading service takes off, so a late notebook counts the same on both paths.

In course/nbgrader_config.py:

    c.AssignLatePenalties.plugin_class = "jaxlings.course.deadlines.LatePenalty"
    c.LatePenalty.rules_file = "course.toml"     # beside nbgrader_config.py

and once the rules are written (and again when they change): `grade course nbgrader-dates`
(`write_due_dates`). nbgrader then reads a submission's lateness from its `timestamp.txt`
against the due date plus the student's extension, and asks the plugin for the penalty.

One difference stays: the service's clock stamps a submission when the server receives it,
while nbgrader's timestamp is written by `nbgrader submit` into the exchange; a course that
cannot trust its students' processes grades deadlines on the service.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from nbgrader.plugins import LateSubmissionPlugin
from traitlets import Unicode

from jaxlings.grading import rules, topics


def _utc_naive(t: dt.datetime) -> dt.datetime:
    """nbgrader stores naive UTC times."""
    return t.astimezone(dt.UTC).replace(tzinfo=None)


def write_due_dates(
    gradebook_url: str,
    course: rules.CourseRules,
    extensions: dict[tuple[str, str], dt.timedelta] | None = None,
) -> list[str]:
    """Write each topic's due date (as an nbgrader assignment of the topic's name) and each
    (student, topic) extension into the nbgrader gradebook at `gradebook_url` (e.g.
    `sqlite:///course/gradebook.db`); lines saying what was written, for the command to print.
    An extension for a student nbgrader does not know adds the student (nbgrader needs them)."""
    from nbgrader.api import Gradebook, MissingEntry

    done = []
    with Gradebook(gradebook_url) as gradebook:
        for topic in course.topics:
            due = course.window(topic).due
            if due is None:
                continue
            gradebook.update_or_create_assignment(topic, duedate=_utc_naive(due))
            done.append(f"{topic}: due {course.local(due):%Y-%m-%d %H:%M %Z}")
        for (login, topic), length in sorted((extensions or {}).items()):
            if topic not in course.topics or course.window(topic).due is None:
                continue
            try:
                gradebook.find_student(login)
            except MissingEntry:
                gradebook.add_student(login)
            gradebook.update_or_create_submission(topic, login)  # nbgrader keeps extensions on the submission
            gradebook.grant_extension(topic, login, minutes=length.total_seconds() / 60)
            done.append(f"{topic}: {login} has {rules.length(length)} more")
    return done


class LatePenalty(LateSubmissionPlugin):
    """nbgrader's late-submission plugin applying course.toml's late policy: the penalty is the
    part of the notebook's score the policy takes off (all of it past `late_until`, or for a
    topic whose policy is `closed`)."""

    rules_file = Unicode("course.toml", help="The course's rules (course.toml), relative to the course root.").tag(
        config=True
    )

    def _rules(self) -> rules.CourseRules:
        path = Path(self.rules_file)
        if not path.is_absolute():
            root = getattr(getattr(self.parent, "coursedir", None), "root", None) or "."
            path = Path(root) / path
        return rules.load(path, topics.ORDER)

    def late_submission_penalty(self, student_id: str, score: float, total_seconds_late: float) -> float | None:
        """The points taken off a notebook handed in `total_seconds_late` past its due date
        (nbgrader has added the student's extension already)."""
        assignment = getattr(self.parent, "assignment_id", None)
        course = self._rules()
        if assignment not in course.topics or total_seconds_late <= 0:
            return None
        window = course.window(assignment)
        if window.due is None:
            return None
        kept = window.factor(window.due + dt.timedelta(seconds=total_seconds_late))
        self.log.info("late by %.0f s: %s keeps %.0f%% of %s", total_seconds_late, student_id, 100 * kept, score)
        return round(score * (1.0 - kept), 4)

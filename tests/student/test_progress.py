"""`jaxlings.student.progress`: one definition of progress (counts, next exercise) and one cause once (rows).

The tests are built as the engine builds them (`engine.stub_tests`, `engine.failed_topic`, and
`TestResult.of` on the outcomes a check gives), on the real public specs: no worker is started.
"""

from __future__ import annotations

from jaxlings.grading import engine, results, topics
from jaxlings.grading.checks import ordered, waiting_for
from jaxlings.grading.results import Outcome, Result
from jaxlings.grading.source import syntax_error
from jaxlings.service.jobs import topic_progress
from jaxlings.student import progress, report


def judged(topic: str, exercise: str, verdicts: dict[str, Outcome]) -> list[results.TestResult]:
    """An exercise's tests as `engine.grade_exercise` makes them: `verdicts` for the checks run,
    the others failed as waiting for a check that did not pass."""
    spec = topics.load_public(topic)
    ex = spec.exercise(exercise)
    passed: dict[str, bool] = {}
    tests = []
    for check in ordered(ex.checks):
        waiting = waiting_for(check, passed)
        outcome = Outcome.fail(waiting, waits=True) if waiting else verdicts[check.name]
        passed[check.name] = outcome.fraction >= 1
        tests.append(results.TestResult.of(topic, exercise, check.name, check.points, outcome, "visible"))
    return tests


def test_a_topic_of_stubs_is_one_row_naming_where_to_start():
    spec = topics.load_public("prng")
    tests = [t for ex in spec.exercises for t in engine.stub_tests(spec, ex, "")]
    rows = progress.rows(tests)
    assert len(tests) > 10 and len(rows) == 1
    assert rows[0].exercise is None and rows[0].kind == "fail" and rows[0].points == "0/19"
    assert rows[0].message.startswith("none of the 4 functions written yet: start with derive_keys")


def test_one_stub_exercise_is_one_row_with_the_stub_message():
    spec = topics.load_public("prng")
    tests = engine.stub_tests(spec, spec.exercise("dropout"), "")
    (row,) = progress.rows(tests)
    assert (row.exercise, row.check, row.kind) == ("dropout", None, "fail")
    assert "not implemented yet" in row.message and "grade hint prng.dropout" in row.message


def test_an_import_error_is_one_row_for_the_topic():
    spec = topics.load_public("at_updates")
    reason = syntax_error("def f(:\n    pass\n", "exercises/at_updates.py")
    assert reason is not None
    tests = engine.failed_topic(spec, reason)
    (row,) = progress.rows(tests)
    assert row.exercise is None and row.message == reason and row.points == "0/14"
    assert progress.tally(tests) == progress.Counts(failed=len(tests))


def test_a_syntax_error_names_the_students_file_and_line_with_a_caret():
    message = syntax_error("x = 1\ny = f(1,\n", "exercises/prng.py")
    assert message == "SyntaxError in exercises/prng.py, line 2: '(' was never closed\n    y = f(1,\n         ^"
    assert syntax_error("x = 1\n", "exercises/prng.py") is None


def test_checks_that_wait_for_correct_fold_into_one_row():
    tests = judged(
        "prng",
        "dropout",
        {
            "correct": Outcome.fail("2 of 6 cases differ"),
            "key_reuse": Outcome.fail("not judged until the function is correct", advisory=True),
        },
    )
    rows = progress.rows(tests)
    assert [(r.check, r.kind, r.points, r.message) for r in rows] == [
        ("correct", "fail", "0/3", "2 of 6 cases differ"),
        ("jit, speed, key_reuse", "waits", "0/2", "waits for correct"),
    ]
    assert progress.tally(tests) == progress.Counts(failed=3)


def test_a_waiting_message_without_the_flag_still_folds():
    """An older results.json (or a check that says so itself) has only the message."""
    tests = judged("at_updates", "histogram", {"correct": Outcome.fail("differs")})
    plain = [results.TestResult(**{**t.__dict__, "extra_data": {}}) for t in tests]
    assert [(r.check, r.kind) for r in progress.rows(plain)] == [("correct", "fail"), ("jit, speed", "waits")]


def test_pending_is_pending_and_advisory_apart():
    tests = judged(
        "prng",
        "dropout",
        {
            "correct": Outcome.ok("5 cases match"),
            "jit": Outcome.ok("jits"),
            "speed": Outcome.pending("1 ms per call"),
            "key_reuse": Outcome.fail("the key is used twice", advisory=True),
        },
    )
    assert [progress.kind(t) for t in tests] == ["pass", "pass", "pending", "advice"]
    assert [r.points for r in progress.rows(tests)] == ["3/3", "1/1", "–/1", ""]
    counts = progress.tally(tests)
    assert counts == progress.Counts(passed=2, pending=1, advisory=1)
    assert counts.total == 3 and counts.finished
    assert progress.describe(counts) == "2/3 checks pass, 1 judged on submission, 1 advice"


def test_counts_from_memory_and_the_next_unfinished_exercise(tmp_path):
    """What `grade list` reads: a finished exercise with a pending check is finished (the old
    list said "3/4 pass"); the next one is the first unfinished in course order."""
    histogram = judged(
        "at_updates",
        "histogram",
        {"correct": Outcome.ok(), "jit": Outcome.ok(), "speed": Outcome.pending("1 ms")},
    )
    report.save_last_check(tmp_path, Result(histogram, 1.0, {}))
    known = report.load_last_check(tmp_path)
    spec = topics.load_public("at_updates")
    done = progress.counts(spec, known, "histogram")
    assert (done.passed, done.pending, done.failed, done.unchecked, done.finished) == (2, 1, 0, 0, True)
    topic = progress.counts(spec, known)
    assert topic.unchecked == spec_checks(spec) - 3 and not topic.finished
    course = [topics.load_public(n) for n in topics.ORDER]
    assert progress.next_unfinished(course, known) == ("jit_basics", "clip_by_norm")
    assert progress.next_unfinished([spec], known) == ("at_updates", "scatter_ops")


def spec_checks(spec) -> int:
    return sum(1 for ex in spec.exercises for c in ex.checks if c.points)


def test_an_older_memory_of_true_false_still_reads(tmp_path):
    (tmp_path / ".jaxlings").mkdir()
    (tmp_path / ".jaxlings" / "last_check.json").write_text('{"prng.dropout:correct": true, "prng.dropout:jit": false}')
    assert report.load_last_check(tmp_path) == {"prng.dropout:correct": "passed", "prng.dropout:jit": "failed"}


def test_the_services_progress_numbers_each_topic_once():
    """`make demo` printed "grading topic 1 of 2" for both topics: graded side by side, the
    second to start was numbered 1 again."""
    notes: list[str] = []
    on_test = topic_progress(["prng", "at_updates"], notes.append)
    for t in judged("at_updates", "mask_fill", {"correct": Outcome.ok(), "jit": Outcome.ok()}):
        on_test(t)
    for t in judged("prng", "dropout", {"correct": Outcome.fail("no"), "jit": Outcome.ok(), "key_reuse": Outcome.ok()}):
        on_test(t)
    assert notes == ["grading topics: 2 to grade", "grading topic 1 of 2: at_updates", "grading topic 2 of 2: prng"]
    single: list[str] = []
    topic_progress(["at_updates"], single.append)
    assert single == ["grading topic 1 of 1: at_updates"]

"""The gradebook's exports (`exports`): our CSV, Canvas's gradebook import, nbgrader's grades.csv.

First each format from Standing and Outline objects built in memory (columns, maxima, sums,
neutralised text), then through a real `grade serve` on seeded rows: the three formats downloaded
by an instructor (API and page), refused to a student, to nobody, and for an unknown format; then
`grade course export` writing the same files from the database.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import stat

import pytest

from helpers.service import api, course, grade, page_login  # noqa: F401
from jaxlings.grading import rules
from jaxlings.service import db, exports, scores
from jaxlings.service.scores import ExerciseScore, Outline, Standing, TopicScore

OUTLINE = Outline({"prng": {"derive_keys": 4.0, "dropout": 5.0}, "loops": {"scan_sum": 10.0}})
T1 = dt.datetime(2026, 12, 1, 9, 30, 5, 123456)


def standing(login: str, name: str, email: str = "", **topics: tuple[int, dict[str, float]]) -> Standing:
    """A student's Standing: topic -> (submission id, exercise -> points earned)."""
    counted = {
        topic: TopicScore(
            topic,
            sum(earned.values()),
            OUTLINE.max_score(topic),
            sub,
            T1 + dt.timedelta(hours=sub),
            {e: ExerciseScore(p, OUTLINE.exercises[topic][e]) for e, p in earned.items()},
        )
        for topic, (sub, earned) in topics.items()
    }
    return Standing(db.Student(login=login, name=name, email=email), counted, submissions=len(topics))


ROWS = [
    standing("ada", "Ada King Lovelace", "ada@example.org", prng=(1, {"derive_keys": 4.0, "dropout": 2.5})),
    standing("alan", "Alan Turing", prng=(2, {"derive_keys": 4.0, "dropout": 5.0}), loops=(3, {"scan_sum": 7.0})),
    standing("=evil", "+cmd", "@x"),
]


def read(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


# -- in memory ------------------------------------------------------------------------------------


def test_our_csv_has_score_maximum_time_and_exercises_per_topic_that_add_up():
    text = exports.gradebook_csv(ROWS, OUTLINE)
    header = next(csv.reader(io.StringIO(text)))
    assert header == [
        "login", "name", "email",
        "prng", "prng max", "prng raw", "prng late", "prng submitted_at", "prng.derive_keys", "prng.dropout",
        "loops", "loops max", "loops raw", "loops late", "loops submitted_at", "loops.scan_sum",
        "total", "total max", "submissions",
    ]  # fmt: skip
    rows = {r["login"]: r for r in read(text)}
    assert set(rows) == {"ada", "alan", "'=evil"}  # every row a student: maxima are columns, not a row
    for r in rows.values():
        for topic, exercises in OUTLINE.exercises.items():
            assert float(r[topic]) == float(r[f"{topic} raw"]) == sum(float(r[f"{topic}.{e}"]) for e in exercises)
            assert r[f"{topic} late"] == "0"  # no rules: nothing late
            assert float(r[f"{topic} max"]) == OUTLINE.max_score(topic)
        assert float(r["total"]) == sum(float(r[t]) for t in OUTLINE.topics)
        assert float(r["total max"]) == sum(float(r[f"{t} max"]) for t in OUTLINE.topics) == 19
    ada, alan, evil = rows["ada"], rows["alan"], rows["'=evil"]
    assert (ada["prng"], ada["prng.dropout"], ada["loops"], ada["total"], ada["submissions"]) == (
        "6.5",
        "2.5",
        "0",
        "6.5",
        "1",
    )
    assert ada["prng submitted_at"] == "2026-12-01T10:30:05Z" and ada["loops submitted_at"] == ""
    assert alan["loops submitted_at"] == "2026-12-01T12:30:05Z" and alan["total"] == "16"
    assert (evil["name"], evil["email"], evil["total"]) == ("'+cmd", "'@x", "0")


def test_canvas_csv_is_canvas_import_shape_with_points_possible_and_assignment_ids():
    text = exports.canvas_csv(ROWS, OUTLINE, {"prng": "45678"})
    lines = list(csv.reader(io.StringIO(text)))
    # Canvas reads: Student, ID, [SIS User ID, SIS Login ID,] Section, then "Title (assignment id)"
    assert lines[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "prng (45678)", "loops"]
    assert lines[1] == ["Points Possible", "", "", "", "", "9", "10"]
    assert lines[2] == ["Ada King Lovelace", "", "", "ada", "", "6.5", "0"]
    assert lines[3] == ["Alan Turing", "", "", "alan", "", "9", "7"]
    assert lines[4][0] == "'+cmd" and lines[4][3] == "'=evil"
    assert len(lines) == 2 + len(ROWS)
    nameless = exports.canvas_csv([standing("bob", "")], OUTLINE)
    assert list(csv.reader(io.StringIO(nameless)))[2][:4] == ["bob", "", "", "bob"]  # a name Canvas can show
    assert next(csv.reader(io.StringIO(nameless)))[5:] == ["prng", "loops"]  # no ids: Canvas offers new assignments


def test_nbgrader_csv_has_nbgraders_columns_one_row_per_topic_per_student():
    rows = read(exports.nbgrader_csv(ROWS, OUTLINE))
    assert list(rows[0]) == [
        "assignment", "duedate", "timestamp", "student_id", "last_name", "first_name", "email",
        "raw_score", "late_submission_penalty", "score", "max_score",
    ]  # fmt: skip
    assert [(r["assignment"], r["student_id"]) for r in rows] == [
        (t, s) for t in ("prng", "loops") for s in ("ada", "alan", "'=evil")
    ]  # nbgrader's order: assignments outer, students inner
    ada = rows[0]
    assert (ada["first_name"], ada["last_name"], ada["email"]) == ("Ada King", "Lovelace", "ada@example.org")
    assert (ada["raw_score"], ada["score"], ada["late_submission_penalty"], ada["max_score"]) == (
        "6.5",
        "6.5",
        "0.0",
        "9.0",
    )
    assert ada["timestamp"] == "2026-12-01T10:30:05Z" and ada["duedate"] == ""
    never = rows[3]  # ada, loops: never submitted, 0 of its maximum, no time (as nbgrader writes it)
    assert (never["score"], never["max_score"], never["timestamp"]) == ("0.0", "10.0", "")
    assert rows[2]["last_name"] == "'+cmd" and rows[2]["first_name"] == ""


def test_formats_and_canvas_ids_are_checked():
    with pytest.raises(ValueError, match="the formats are: csv, canvas, nbgrader"):
        exports.render("xlsx", ROWS, OUTLINE)
    assert exports.render("canvas", ROWS, OUTLINE, {"loops": "7"}).startswith("Student,ID,")
    topics = OUTLINE.topics
    assert exports.canvas_ids_query("prng:45678, loops:9", topics) == {"prng": "45678", "loops": "9"}
    for bad, why in [
        ("quantum:1", "not in the course"),
        ("prng:12a", "must be a number"),
        ("prng", "topic:assignment_id pairs"),
        ("prng:1,prng:2", "given twice"),
    ]:
        with pytest.raises(ValueError, match=why) as caught:
            exports.canvas_ids_query(bad, topics)
        assert "quantum" not in str(caught.value) and "12a" not in str(caught.value)  # a URL's text is not repeated


def test_an_export_holds_the_topics_asked_for_and_canvas_those_open():
    topics = ["prng", "at_updates", "loops"]
    now = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.UTC)
    later = rules.CourseRules.model_validate({"topics": {"loops": {"opens": now + dt.timedelta(days=3)}}})
    assert exports.chosen_topics([], topics, "csv", later, now) == topics  # ours: every topic
    assert exports.chosen_topics([], topics, "canvas", later, now) == ["prng", "at_updates"]  # not loops yet
    assert exports.chosen_topics([], topics, "canvas", later, now + dt.timedelta(days=4)) == topics
    assert exports.chosen_topics(["loops", "prng"], topics, "canvas", later, now) == ["prng", "loops"]  # asked
    with pytest.raises(ValueError, match="'quantum' is not a topic of the course; the topics are: prng"):
        exports.chosen_topics(["quantum"], topics, "csv", later, now)


def test_the_canvas_ids_file(tmp_path):
    good = tmp_path / "ids.csv"
    good.write_text("topic,assignment_id\nprng,45678\nloops,45679\n")
    assert exports.canvas_ids_file(good, OUTLINE.topics) == exports.CanvasIds({"prng": "45678", "loops": "45679"})
    bad = tmp_path / "bad.csv"
    bad.write_text("topic,assignment_id\nprng,45678\nquantum,3\n")
    with pytest.raises(ValueError, match=r"bad.csv: line 3: topic 'quantum' is not in the course"):
        exports.canvas_ids_file(bad, OUTLINE.topics)
    headless = tmp_path / "headless.csv"
    headless.write_text("prng,45678\n")
    with pytest.raises(ValueError, match="header `topic,assignment_id`"):
        exports.canvas_ids_file(headless, OUTLINE.topics)


CANVAS_EXPORT = """Student,ID,SIS User ID,SIS Login ID,Root Account,Section,prng (45678),Quiz 1 (9),loops (45679),Current Score
    Points Possible,,,,,,19.00,10.00,9.00,
"Lovelace, Ada",101,S-0001,ada,school.instructure.com,Section A,,,,
"Student, Test",102,,,school.instructure.com,Section A,,,,
=Bob,103,=HYPERLINK("x"),bob,school.instructure.com,Section B,,,,
"""


def test_canvas_s_own_gradebook_export_gives_assignment_and_student_ids(tmp_path):
    """Canvas's import wants each student's Canvas ID, SIS User ID and Section; Canvas's own
    gradebook export holds them (a test student and the Points Possible row without a login)."""
    path = tmp_path / "canvas-export.csv"
    path.write_text(CANVAS_EXPORT)
    ids = exports.canvas_ids_file(path, OUTLINE.topics)
    assert ids.assignments == {"prng": "45678", "loops": "45679"}  # Quiz 1 is no topic: left alone
    assert ids.people == {
        "ada": exports.CanvasPerson("101", "S-0001", "Section A"),
        "bob": exports.CanvasPerson("103", '=HYPERLINK("x")', "Section B"),
    }
    rows = [*ROWS, standing("bob", "Bob")]
    lines = list(csv.reader(io.StringIO(exports.canvas_csv(rows, OUTLINE, ids.assignments, ids.people))))
    row = {r[3]: r for r in lines[2:]}
    assert row["ada"][1:5] == ["101", "S-0001", "ada", "Section A"] and lines[0][5] == "prng (45678)"
    assert row["bob"][2] == '\'=HYPERLINK("x")'  # what Canvas holds is neutralised like our own text
    assert row["alan"][1:5] == ["", "", "alan", ""]  # not in Canvas's file: Canvas reports the row on import
    broken = tmp_path / "broken.csv"
    broken.write_text(CANVAS_EXPORT.replace(",101,", ",1o1,"))
    with pytest.raises(ValueError, match=r"broken.csv: line 3: a Canvas ID must be a number, not '1o1'"):
        exports.canvas_ids_file(broken, OUTLINE.topics)
    idless = tmp_path / "idless.csv"
    idless.write_text(CANVAS_EXPORT.replace("Student,ID,", "Student,Identifier,"))
    with pytest.raises(ValueError, match="without the column"):
        exports.canvas_ids_file(idless, OUTLINE.topics)


# -- through a real server --------------------------------------------------------------------------

TOPICS = "prng,at_updates"


def results_json(earned: dict[str, dict[str, float]]) -> str:
    """A results.json as the engine writes it, one `correct` check per exercise (outline's points)."""
    outline = scores.outline(list(earned))
    tests, topics = [], {}
    for topic, points in outline.exercises.items():
        for exercise, top in points.items():
            got = earned[topic].get(exercise, 0.0)
            tests.append(
                {
                    "name": f"{topic}.{exercise}:correct",
                    "score": got,
                    "max_score": top,
                    "status": "passed" if got >= top else "failed",
                    "extra_data": {},
                }
            )
        topics[topic] = {"score": sum(earned[topic].values()), "max_score": outline.max_score(topic)}
    total = sum(t["score"] for t in topics.values())
    return json.dumps({"score": total, "tests": tests, "extra_data": {"topics": topics}})


def seed(course) -> None:
    """ada: prng graded twice (the better counts), at_updates never; bob: dropped, with a graded prng."""
    settings = course.settings()
    db.upgrade(settings.db_url)
    with db.sessions(settings.db_url).begin() as session:
        ada = db.Student(login="ada", name="Ada Lovelace", email="ada@example.org")
        bob = db.Student(login="bob", name="Bob", dropped_at=T1, dropped_by="prof")
        session.add_all([ada, bob, *(db.Upload(digest=str(n) * 64, data=b"zip", size=3) for n in range(3))])
        session.flush()
        for n, (who, prng) in enumerate(
            [(ada, {"derive_keys": 4.0, "dropout": 5.0}), (ada, {"derive_keys": 4.0}), (bob, {"derive_keys": 4.0})]
        ):
            doc = results_json({"prng": prng})
            session.add(
                db.Submission(
                    student_id=who.id,
                    digest=str(n) * 64,
                    topics="prng",
                    status=db.DONE,
                    created_at=T1 + dt.timedelta(minutes=n),
                    score=sum(prng.values()),
                    max_score=19.0,
                    result_json=doc,
                )
            )


@pytest.mark.slow
def test_an_instructor_downloads_the_three_formats_and_nobody_else_does(course):
    course.env["JAXLINGS_TOPICS"] = TOPICS
    seed(course)
    student, prof = course.token("carol"), course.instructor()
    course.serve()
    with api(course, prof) as teacher:
        ours = teacher.get("/api/gradebook.csv")
        assert ours.status_code == 200 and ours.headers["content-type"].startswith("text/csv")
        rows = {r["login"]: r for r in read(ours.text)}
        assert set(rows) == {"ada", "carol"}  # bob was dropped
        ada = rows["ada"]
        assert (ada["prng"], ada["prng max"], ada["prng.dropout"], ada["at_updates"], ada["total max"]) == (
            "9", "19", "5", "0", "33",
        )  # fmt: skip
        assert ada["prng submitted_at"] == "2026-12-01T09:30:05Z" and ada["submissions"] == "2"

        canvas = teacher.get("/api/gradebook.csv", params={"format": "canvas", "canvas_ids": "prng:45678"})
        assert canvas.status_code == 200 and 'filename="gradebook-canvas.csv"' in canvas.headers["content-disposition"]
        lines = list(csv.reader(io.StringIO(canvas.text)))
        assert lines[0][5:] == ["prng (45678)", "at_updates"] and lines[1] == [
            "Points Possible",
            "",
            "",
            "",
            "",
            "19",
            "14",
        ]
        assert lines[2] == ["Ada Lovelace", "", "", "ada", "", "9", "0"]

        only = teacher.get("/api/gradebook.csv", params={"format": "canvas", "topics": ["at_updates"]})
        assert next(csv.reader(io.StringIO(only.text)))[5:] == ["at_updates"]
        unknown_topic = teacher.get("/api/gradebook.csv", params={"topics": ["quantum"]})
        assert unknown_topic.status_code == 400 and "not a topic of the course" in unknown_topic.json()["detail"]

        nb = teacher.get("/api/gradebook.csv", params={"format": "nbgrader"})
        assert nb.status_code == 200 and 'filename="grades.csv"' in nb.headers["content-disposition"]
        assert [(r["assignment"], r["student_id"], r["score"]) for r in read(nb.text)] == [
            ("prng", "ada", "9.0"), ("prng", "carol", "0.0"), ("at_updates", "ada", "0.0"), ("at_updates", "carol", "0.0"),
        ]  # fmt: skip

        for params, why in [
            ({"format": "xlsx"}, "the formats are: csv, canvas, nbgrader"),
            ({"format": "canvas", "canvas_ids": "quantum:1"}, "not in the course"),
            ({"format": "nbgrader", "canvas_ids": "prng:1"}, "canvas_ids goes with format=canvas"),
        ]:
            refused = teacher.get("/api/gradebook.csv", params=params)
            assert refused.status_code == 400 and why in refused.json()["detail"], refused.text
            assert "xlsx" not in refused.text and "quantum" not in refused.text

    pages = page_login(course, prof)
    page = pages.get("/gradebook.csv", params={"format": "nbgrader"})
    assert page.status_code == 200 and page.text == nb.text
    assert pages.get("/gradebook.csv", params={"format": "canvas"}).text.startswith("Student,ID,SIS User ID")
    unknown = pages.get("/gradebook.csv", params={"format": "<b>xlsx</b>"})
    assert unknown.status_code == 400 and "the formats are" in unknown.text and "xlsx" not in unknown.text

    with api(course, student) as carol:
        for fmt in exports.FORMATS:
            assert carol.get("/api/gradebook.csv", params={"format": fmt}).status_code == 403
    assert page_login(course, student).get("/gradebook.csv", params={"format": "canvas"}).status_code == 403
    with api(course, "jxl_not-a-token") as nobody:
        assert nobody.get("/api/gradebook.csv", params={"format": "canvas"}).status_code == 401


def test_grade_course_export_writes_each_format_from_the_database(course, tmp_path):
    course.env["JAXLINGS_TOPICS"] = TOPICS
    seed(course)
    ids = tmp_path / "ids.csv"
    ids.write_text("topic,assignment_id\nat_updates,777\n")
    for fmt, extra in [("csv", []), ("canvas", ["--canvas-ids", str(ids)]), ("nbgrader", [])]:
        out = tmp_path / f"{fmt}.csv"
        done = grade(["course", "export", "--format", fmt, *extra, "-o", str(out)], course)
        assert done.returncode == 0 and f"wrote {out}" in done.stdout, done.stdout + done.stderr
        assert stat.S_IMODE(out.stat().st_mode) == 0o600  # grades and emails: the operator's only
    assert {r["login"]: r["prng"] for r in read((tmp_path / "csv.csv").read_text())} == {"ada": "9"}
    assert next(csv.reader(open(tmp_path / "canvas.csv")))[5:] == ["prng", "at_updates (777)"]
    assert [r["student_id"] for r in read((tmp_path / "nbgrader.csv").read_text())] == ["ada", "ada"]
    only = grade(["course", "export", "--format", "canvas", "--topics", "prng", "-o", str(tmp_path / "p.csv")], course)
    assert only.returncode == 0 and next(csv.reader(open(tmp_path / "p.csv")))[5:] == ["prng"], only.stdout
    canvas_export = tmp_path / "canvas-export.csv"
    canvas_export.write_text(CANVAS_EXPORT)
    merged = grade(
        ["course", "export", "--format", "canvas", "--canvas-ids", str(canvas_export), "-o", str(tmp_path / "m.csv")],
        course,
    )
    assert merged.returncode == 0, merged.stdout + merged.stderr
    lines = list(csv.reader(open(tmp_path / "m.csv")))
    assert lines[0][5:] == ["prng (45678)", "at_updates"] and lines[2][1:5] == ["101", "S-0001", "ada", "Section A"]

    for args, why in [
        (["--format", "xlsx"], "unknown format 'xlsx'; the formats are: csv, canvas, nbgrader"),
        (["--format", "csv", "--canvas-ids", str(ids)], "--canvas-ids goes with --format canvas"),
        (["--format", "canvas", "--canvas-ids", str(tmp_path / "none.csv")], "none.csv"),
    ]:
        refused = grade(["course", "export", *args, "-o", str(tmp_path / "x.csv")], course)
        assert refused.returncode == 2 and why in refused.stdout, refused.stdout + refused.stderr
        assert not (tmp_path / "x.csv").exists()

"""The service's commands without a server: roster, client-side zipping, configuration errors, and
that the student-side modules import no server library (they ship in the student package).
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import zipfile
from io import BytesIO

import pytest

from helpers.service import GRADE, course  # noqa: F401

TOPICS = ["prng", "at_updates", "loops"]


def grade(args: list[str], cwd, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        GRADE + args, cwd=cwd, env={**os.environ, "COLUMNS": "200", **env}, capture_output=True, text=True, timeout=120
    )


def test_client_modules_import_no_server_library():
    code = (
        "import sys, jaxlings.service, jaxlings.cli.service, jaxlings.student.client; "
        "print(sorted(m for m in ('fastapi', 'sqlalchemy', 'celery', 'uvicorn', 'alembic', 'kombu', 'jinja2') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stdout + out.stderr


def test_the_client_zips_only_topic_files(tmp_path):
    from jaxlings.student.client import ClientError, zip_exercises

    (tmp_path / "prng.py").write_text("x = 1\n")
    (tmp_path / "loops.py").write_text("y = 2\n")
    (tmp_path / "notes.txt").write_text("private")
    (tmp_path / "helper.py").write_text("z = 3\n")
    data, chosen = zip_exercises(tmp_path, [], TOPICS)
    assert chosen == ["prng", "loops"]
    assert sorted(zipfile.ZipFile(BytesIO(data)).namelist()) == ["loops.py", "prng.py"]
    assert zip_exercises(tmp_path, ["loops"], TOPICS)[1] == ["loops"]
    with pytest.raises(ClientError, match="unknown topic"):
        zip_exercises(tmp_path, ["helper"], TOPICS)
    with pytest.raises(ClientError, match=r"no at_updates\.py"):
        zip_exercises(tmp_path, ["at_updates"], TOPICS)
    with pytest.raises(ClientError, match="no exercises folder"):
        zip_exercises(tmp_path / "nowhere", [], TOPICS)


def test_submit_without_a_server_says_how_to_set_one(tmp_path):
    env = {
        "JAXLINGS_CONFIG": str(tmp_path / "none.json"),
        "JAXLINGS_SERVER": "",
        "JAXLINGS_TOKEN": "",
        "JUPYTERHUB_API_TOKEN": "",
    }
    out = grade(["submit"], tmp_path, **env)
    assert out.returncode == 2 and "no server configured" in out.stdout
    out = grade(["submit"], tmp_path, **{**env, "JAXLINGS_SERVER": "http://127.0.0.1:9"})
    assert out.returncode == 2 and "no token" in out.stdout
    out = grade(["submit"], tmp_path, **{**env, "JAXLINGS_SERVER": "http://127.0.0.1:9", "JAXLINGS_TOKEN": "t"})
    assert out.returncode == 2 and "cannot reach the grading server" in out.stdout


def test_add_students_from_a_roster(course, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("name,email\nAda,ada@x\n")
    out = grade(["course", "add-students", str(bad), "--out", str(tmp_path / "t.csv")], tmp_path, **course.env)
    assert out.returncode == 2 and "'login' column" in out.stdout
    roster = tmp_path / "roster.csv"
    roster.write_text("login,name,email\nada,Ada L,ada@x\nalan,Alan T,\n")
    out = grade(["course", "add-students", str(roster), "--out", str(tmp_path / "t.csv")], tmp_path, **course.env)
    assert out.returncode == 0, out.stdout + out.stderr
    rows = list(csv.DictReader(open(tmp_path / "t.csv")))
    assert [r["login"] for r in rows] == ["ada", "alan"] and all(r["token"].startswith("jxl_") for r in rows)
    from jaxlings.service import auth, db

    settings = course.settings()
    with db.sessions(settings.db_url)() as session:
        assert auth.identify(session, rows[0]["token"], settings).login == "ada"
        assert auth.identify(session, rows[0]["token"] + "x", settings) is None
        stored = {t.digest for t in session.query(db.Token)}
    assert rows[0]["token"] not in stored and auth.digest(rows[0]["token"]) in stored  # only digests are kept


def test_export_gradescope_refuses_an_unknown_topic(tmp_path):
    out = grade(["export", "gradescope", "--out", str(tmp_path / "g.zip"), "--topics", "quantum"], tmp_path)
    assert out.returncode == 2 and "unknown topic" in out.stdout and not (tmp_path / "g.zip").exists()


def test_docs_list_every_setting():
    from helpers.service import ROOT
    from jaxlings.service import config

    doc = (ROOT / "docs" / "service.md").read_text()
    missing = [var for var in config.ENV.values() if var not in doc]
    assert missing == []


def test_server_commands_without_the_server_libraries_say_what_to_install(tmp_path):
    code = (
        "import sys; sys.modules['fastapi'] = sys.modules['celery'] = None; sys.argv = ['grade'] + sys.argv[1:]; "
        "from jaxlings.cli import main; main()"
    )
    for command in (["serve"], ["worker"]):
        out = subprocess.run(
            [sys.executable, "-c", code, *command],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "COLUMNS": "200"},
        )
        assert out.returncode == 2 and "pip install 'jaxlings[server]'" in out.stdout, out.stdout + out.stderr

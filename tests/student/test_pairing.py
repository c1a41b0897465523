"""A topic's notebook and its file never disagree silently, and nothing typed in either is lost
(issue 43, item 1): the commands read exercises/<topic>.py and say where notebooks/<topic>.ipynb
holds other answers; `grade take-notebook` copies them in, the file kept first."""

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.grading import SOLUTIONS
from jaxlings.student import pairing, workspace


def function_source(path: Path, name: str) -> str:
    """The source of top-level function `name` in the file at `path`, decorators included."""
    text = path.read_text()
    node = next(n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef) and n.name == name)
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    return "\n".join(text.splitlines()[first - 1 : node.end_lineno])


def answer_in_notebook(ws: Path, topic: str, name: str, source: str) -> None:
    """Write `source` into the notebook's answer cell of exercise `name`, as JupyterLab saves it."""
    path = ws / "notebooks" / f"{topic}.ipynb"
    document = json.loads(path.read_text())
    cell = next(c for c in document["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") == name)
    cell["source"] = source.splitlines(keepends=True)
    path.write_text(json.dumps(document, indent=1))


@pytest.fixture
def ws(tmp_path) -> Path:
    workspace.init(tmp_path / "ws")
    return tmp_path / "ws"


def test_a_fresh_workspace_agrees_with_itself(ws):
    assert pairing.notices(ws / "exercises") == []


def test_an_answer_only_in_the_notebook_is_named(ws):
    answer = "import functools\n\n" + function_source(SOLUTIONS / "prng.py", "derive_keys")
    answer_in_notebook(ws, "prng", "derive_keys", answer)
    found = pairing.compare(ws / "exercises", "prng")
    assert found is not None and found.missing == ("derive_keys",) and found.different == ()
    notice = found.notice()
    assert "notebooks/prng.ipynb answers `derive_keys`, which exercises/prng.py does not" in notice
    assert "`grade take-notebook prng`" in notice
    # a comment or a blank line changes nothing: only what the code says counts
    answer_in_notebook(
        ws, "prng", "derive_keys", function_source(ws / "exercises" / "prng.py", "derive_keys") + "\n# mine"
    )
    assert pairing.compare(ws / "exercises", "prng") is None


def test_answers_in_both_that_differ_are_named_and_taking_them_keeps_the_file(ws):
    mine = function_source(SOLUTIONS / "prng.py", "dropout").replace("### BEGIN SOLUTION", "# my own")
    file = ws / "exercises" / "prng.py"
    stub = function_source(file, "dropout")
    file.write_text(file.read_text().replace(stub, mine))
    before = file.read_text()
    answer_in_notebook(ws, "prng", "dropout", mine.replace("# my own", "# edited in the notebook") + "\n    x = x")
    found = pairing.compare(ws / "exercises", "prng")
    assert found is not None and found.different == ("dropout",) and found.missing == (), found
    assert "answer `dropout` differently" in found.notice()

    names, backup = pairing.take(ws / "exercises", "prng")
    assert names == ["dropout"] and backup is not None and backup.read_text() == before  # nothing lost
    assert backup.parent == ws / ".jaxlings" / "backups"
    assert "# edited in the notebook" in file.read_text() and pairing.compare(ws / "exercises", "prng") is None
    assert function_source(file, "derive_keys") == function_source(
        SOLUTIONS.parent / "exercises" / "prng.py", "derive_keys"
    )
    assert pairing.take(ws / "exercises", "prng") == ([], None)  # nothing more to take


def test_an_unreadable_notebook_is_no_answer(ws):
    (ws / "notebooks" / "prng.ipynb").write_text("{ not json")
    assert pairing.compare(ws / "exercises", "prng") is None


def grade(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "jaxlings", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        timeout=600,
    )


def test_check_says_where_the_notebook_answers_and_take_notebook_makes_it_graded(ws):
    answer_in_notebook(ws, "prng", "derive_keys", function_source(SOLUTIONS / "prng.py", "derive_keys"))
    before = grade("check", "prng.derive_keys", cwd=ws)
    said = " ".join(before.stdout.split())
    assert before.returncode == 1 and "notebooks/prng.ipynb answers `derive_keys`, which exercises/prng.py" in said
    assert "not implemented yet" in said  # the file is what was checked
    listed = " ".join(grade("list", cwd=ws).stdout.split())
    assert "grade take-notebook prng" in listed

    took = grade("take-notebook", "prng", cwd=ws)
    assert took.returncode == 0 and "copied derive_keys from notebooks/prng.ipynb" in took.stdout, took.stdout
    after = grade("check", "prng.derive_keys", cwd=ws)
    assert after.returncode == 0 and "take-notebook" not in after.stdout, after.stdout
    assert grade("take-notebook", "prng", cwd=ws).stdout.startswith("notebooks/prng.ipynb answers nothing")
    typo = grade("take-notebook", "prgn", cwd=ws)
    assert typo.returncode == 2 and "no topic 'prgn'" in typo.stdout + typo.stderr

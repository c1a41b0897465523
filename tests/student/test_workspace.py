"""`grade init`: a workspace laid out from the course, never overwriting a student's work."""

import json

import pytest

from helpers.grading import EXERCISES
from jaxlings.grading import paths, topics
from jaxlings.student import workspace


def test_init_lays_out_every_topic_and_a_second_run_keeps_work(tmp_path):
    ws = tmp_path / "ws"
    made = workspace.init(ws)
    assert len(made.created) == 3 * len(topics.ORDER) + 2 and not made.kept
    notebook = json.loads((ws / "notebooks" / "prng.ipynb").read_text())
    assert "BEGIN SOLUTION" not in json.dumps(notebook) and "BEGIN HIDDEN TESTS" not in json.dumps(notebook)
    assert (ws / "exercises" / "loops.py").read_text() == (EXERCISES / "loops.py").read_text()
    (ws / "exercises" / "loops.py").write_text("# mine\n")
    again = workspace.init(ws)
    assert again.created == [] and (ws / "exercises" / "loops.py").read_text() == "# mine\n"


def test_init_into_a_file_is_a_clear_error(tmp_path):
    (tmp_path / "taken").write_text("")
    with pytest.raises(workspace.WorkspaceError, match="not a folder"):
        workspace.init(tmp_path / "taken")


def test_state_is_found_from_a_subfolder_of_the_workspace(tmp_path):
    workspace.init(tmp_path)
    assert paths.state_dir(tmp_path / "notebooks") == (tmp_path / ".jaxlings").resolve()

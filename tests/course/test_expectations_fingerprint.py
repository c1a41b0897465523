"""The public expectations' fingerprint hashes what a recording depends on, not how it is written:
docstrings, comments and layout change nothing; code and the recording protocol do.

Every edit is made to temporary copies of the solution and of the package's hashed modules,
never to the real files."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

from helpers.grading import SOLUTIONS
from jaxlings.course import expectations
from jaxlings.grading import topics
from jaxlings.grading.source import SourceError, docstring, functions, parse_trusted

TOPIC = "prng"


@pytest.fixture
def copies(tmp_path: Path) -> tuple[Path, Path]:
    """(solutions folder, jaxlings folder) holding copies of everything `fingerprint` reads."""
    solutions, package = tmp_path / "solutions", tmp_path / "jaxlings"
    solutions.mkdir()
    shutil.copyfile(SOLUTIONS / f"{TOPIC}.py", solutions / f"{TOPIC}.py")
    for label, path in expectations._inputs(TOPIC, SOLUTIONS, expectations.PACKAGE)[1:]:
        target = package / ("specs/" + path.name if label == "spec" else label)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    return solutions, package


def fingerprint(copies: tuple[Path, Path]) -> str:
    return expectations.fingerprint(TOPIC, copies[0], package=copies[1])


def edit(path: Path, change) -> None:
    path.write_text(change(path.read_text()))


def with_docstring_edited(text: str) -> str:
    """`text` with a sentence added to every docstring (module, classes, functions, methods)."""
    lines = text.splitlines(keepends=True)
    documented = [d for node in ast.walk(parse_trusted(text, "test")) if (d := docstring(node)) is not None]
    assert documented, "the file has no docstring to edit"
    for doc in documented:
        line = lines[doc.lineno - 1]
        quote = next((line.index(q) + 3 for q in ('"""', "'''") if q in line), None)
        if quote is not None:
            lines[doc.lineno - 1] = line[:quote] + "An edited sentence. " + line[quote:]
    return "".join(lines)


def test_the_copies_fingerprint_as_the_real_files(copies):
    assert fingerprint(copies) == expectations.fingerprint(TOPIC, SOLUTIONS)


@pytest.mark.parametrize("where", ["solution", "spec", "shared module", "checks"])
def test_docstrings_comments_and_layout_change_nothing(copies, where):
    solutions, package = copies
    path = {
        "solution": solutions / f"{TOPIC}.py",
        "spec": package / "specs" / f"{TOPIC}.py",
        "shared module": package / "grading" / "session.py",
        "checks": package / "grading" / "checks" / "correct.py",
    }[where]
    before, original = fingerprint(copies), path.read_text()
    edit(path, with_docstring_edited)
    assert path.read_text().count("An edited sentence.") >= 2
    assert fingerprint(copies) == before, "a docstring edit"
    edit(
        path,
        lambda text: "# a comment above everything\n\n\n" + text.replace("\ndef ", "\n# about this one\n\n\ndef ", 1),
    )
    assert fingerprint(copies) == before, "comments and blank lines"
    edit(path, lambda text: text + "\n\n# a trailing comment\n")
    assert fingerprint(copies) == before, "a trailing comment"
    assert path.read_text() != original


@pytest.mark.parametrize("where", ["solution", "spec", "shared module", "checks", "worker"])
def test_a_code_change_changes_it(copies, where):
    solutions, package = copies
    path = {
        "solution": solutions / f"{TOPIC}.py",
        "spec": package / "specs" / f"{TOPIC}.py",
        "shared module": package / "grading" / "draws.py",
        "checks": package / "grading" / "checks" / "correct.py",
        "worker": package / "worker" / "wire.py",
    }[where]
    before = fingerprint(copies)
    edit(path, lambda text: text + "\nRECORDED_DIFFERENTLY = 1\n")
    assert fingerprint(copies) != before


def test_a_changed_constant_inside_a_function_changes_it(copies):
    solutions, _ = copies
    path = solutions / f"{TOPIC}.py"
    text = path.read_text()
    fn = functions(parse_trusted(text, "test"))[-1]
    lines = text.splitlines(keepends=True)
    indent = " " * fn.node.body[-1].col_offset
    lines.insert(fn.node.body[-1].lineno - 1, f"{indent}unused = 2\n")  # before its last statement
    before = fingerprint(copies)
    path.write_text("".join(lines))
    changed = fingerprint(copies)
    assert changed != before
    path.write_text("".join(lines).replace("unused = 2", "unused = 3"))
    assert fingerprint(copies) not in (before, changed)


def test_a_protocol_bump_changes_it(copies, monkeypatch):
    before = fingerprint(copies)
    monkeypatch.setattr(expectations, "RECORDING_PROTOCOL", expectations.RECORDING_PROTOCOL + 1)
    assert fingerprint(copies) != before


def test_a_new_module_in_a_hashed_folder_changes_it_and_a_new_check_module_does_not(copies):
    before = fingerprint(copies)
    (copies[1] / "grading" / "checks" / "extra.py").write_text('"""A new check."""\n\nPOINTS = 1\n')
    assert fingerprint(copies) == before, "a check module no exercise of the topic uses"
    (copies[1] / "worker" / "extra.py").write_text('"""A new part of the worker."""\n\nPOINTS = 1\n')
    assert fingerprint(copies) != before


@pytest.fixture(scope="module")
def package_copy(tmp_path_factory) -> tuple[Path, Path]:
    """(solutions folder, jaxlings folder): copies of the whole of both (the expectations aside)."""
    root = tmp_path_factory.mktemp("whole")
    shutil.copytree(SOLUTIONS, root / "solutions", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(expectations.PACKAGE, root / "jaxlings", ignore=shutil.ignore_patterns("*.json", "__pycache__"))
    return root / "solutions", root / "jaxlings"


def every_fingerprint(solutions: Path, package: Path) -> dict[str, str]:
    return {name: expectations.fingerprint(name, solutions, package=package) for name in topics.ORDER}


def changed_by(package_copy, path: str, change) -> set[str]:
    """The topics whose fingerprint `change` (of the copy's file `path`, or of a new one) changes."""
    solutions, package = package_copy
    target = package / path
    original = target.read_text() if target.exists() else None
    before = every_fingerprint(solutions, package)
    try:
        target.write_text(change(original or ""))
        after = every_fingerprint(solutions, package)
    finally:
        if original is None:
            target.unlink()
        else:
            target.write_text(original)
    return {name for name in before if before[name] != after[name]}


def test_a_check_records_again_only_the_topics_whose_exercises_use_it(package_copy):
    """What adding a check kind for one topic takes (a new module of `checks/`, the topic's spec
    using it) records that topic again and no other; the checks' common base records all."""
    new_kind = '"""A new kind of check."""\n\nfrom jaxlings.grading.check import Check\n\nPOINTS = 1\n'
    assert changed_by(package_copy, "grading/checks/a_new_kind.py", lambda _: new_kind) == set()
    assert changed_by(package_copy, "specs/sharding.py", lambda text: text + "\nUSES_THE_NEW_KIND = 1\n") == {
        "sharding"
    }
    assert changed_by(package_copy, "grading/checks/sharding.py", lambda text: text + "\nCHANGED = 1\n") == {"sharding"}
    assert changed_by(package_copy, "grading/checks/trains.py", lambda text: text + "\nCHANGED = 1\n") == {"training"}
    assert changed_by(package_copy, "grading/checks/vmc.py", lambda text: text + "\nCHANGED = 1\n") == {
        "ising",
        "training",
    }
    assert changed_by(package_copy, "grading/checks/vocabulary.py", lambda text: text + "\nCHANGED = 1\n") == set()
    assert changed_by(package_copy, "grading/check.py", lambda text: text + "\nCHANGED = 1\n") == set(topics.ORDER)


def test_a_file_that_does_not_parse_is_named(copies):
    path = copies[1] / "grading" / "checks" / "correct.py"
    edit(path, lambda text: text + "\ndef broken(:\n")
    with pytest.raises(SourceError, match=r"correct\.py"):
        fingerprint(copies)

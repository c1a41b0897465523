"""`grade watch` re-checks only what a save changed (`jaxlings.student.changes`)."""

from __future__ import annotations

from jaxlings.student.changes import changed, snapshot

EXERCISES = ["first", "second", "third"]
BASE = """
import jax.numpy as jnp

SCALE = 2.0


def _helper(x):
    return x * SCALE


def first(x):
    return _helper(x) + 1


def second(x):
    return jnp.sin(x)


def third(x):
    return second(x) * 2
"""


def test_the_first_look_checks_everything():
    assert changed(None, snapshot(BASE), EXERCISES) == EXERCISES


def test_comments_and_formatting_change_nothing():
    edited = BASE.replace("return jnp.sin(x)", "return jnp.sin( x )  # same thing").replace(
        "\n\n\ndef third", "\n\ndef third"
    )
    assert changed(snapshot(BASE), snapshot(edited), EXERCISES) == []


def test_an_edited_function_and_its_callers_are_checked_again():
    edited = BASE.replace("jnp.sin(x)", "jnp.cos(x)")
    assert changed(snapshot(BASE), snapshot(edited), EXERCISES) == ["second", "third"]


def test_a_helper_reaches_the_functions_that_use_it():
    edited = BASE.replace("x * SCALE", "x * SCALE * 3")
    assert changed(snapshot(BASE), snapshot(edited), EXERCISES) == ["first"]


def test_a_changed_import_or_constant_checks_everything():
    assert changed(snapshot(BASE), snapshot(BASE.replace("SCALE = 2.0", "SCALE = 3.0")), EXERCISES) == EXERCISES
    assert changed(snapshot(BASE), snapshot(BASE.replace("import jax.numpy", "import numpy")), EXERCISES) == EXERCISES


def test_a_new_helper_used_by_a_function_counts_as_its_change():
    edited = BASE.replace(
        "def first(x):\n    return _helper(x) + 1",
        "def _more(x):\n    return x\n\n\ndef first(x):\n    return _more(_helper(x)) + 1",
    )
    assert changed(snapshot(BASE), snapshot(edited), EXERCISES) == ["first"]


def test_a_syntax_error_and_its_fix_check_everything():
    broken = snapshot(BASE.replace("def second(x):", "def second(x)"))
    assert changed(snapshot(BASE), broken, EXERCISES) == EXERCISES
    assert changed(broken, snapshot(BASE), EXERCISES) == EXERCISES

"""The topics of the course, in teaching order: ORDER is the one list of them.

Each topic module defines `TOPIC`, a `autograder.spec.Topic` holding its whole spec, hidden
parts included (samplers, edge cases); those modules stay on the grader's side. What students
are checked against is the public spec (`autograder.public.topic`), which `resolve(...,
public=True)` gives: it works in the student package too, where only this file of the
package ships.
"""

from __future__ import annotations

import dataclasses
import importlib

from autograder.spec import Topic

ORDER: tuple[str, ...] = ("jit_basics", "prng", "at_updates", "static_args", "loops", "pytrees", "primitives", "sharding",
                         "ising", "autodiff", "training", "debugging")


def load(name: str) -> Topic:
    """The full spec of topic `name` (the grader's); a ValueError naming the known topics otherwise."""
    check_name(name)
    try:
        topic = importlib.import_module(f"autograder.topics.{name}").TOPIC
    except ModuleNotFoundError as exc:
        if exc.name != f"autograder.topics.{name}":
            raise
        raise ValueError(f"the hidden grader of {name!r} is not installed here (only the course's grader has it)") from None
    validate(topic)
    return topic


def check_name(name: str) -> None:
    """A ValueError naming the known topics unless `name` is one."""
    if name not in ORDER:
        raise ValueError(f"unknown topic {name!r}; the topics are: {', '.join(ORDER)}")


def load_public(name: str) -> Topic:
    """The public spec of topic `name`: what `grade check` grades (no samplers, no edge cases)."""
    from autograder import public

    check_name(name)
    topic = public.topic(name)
    validate(topic)
    return topic


def validate(topic: Topic) -> None:
    """Every check an exercise names exists, and advisory checks are worth no points."""
    from autograder.checks import ADVISORY, REGISTRY

    for ex in topic.exercises:
        for check, points in ex.checks.items():
            if check not in REGISTRY:
                raise ValueError(f"{topic.name}.{ex.name}: unknown check {check!r}; the checks are {', '.join(REGISTRY)}")
            if check in ADVISORY and points:
                raise ValueError(f"{topic.name}.{ex.name}: the {check!r} check is advisory and must be worth 0 points")


def resolve(names: list[str] | None, *, public: bool = False) -> list[Topic]:
    """Specs for `names` (all topics when empty), in course order; public specs with `public`.

    A name is a topic (`prng`) or one exercise of it (`prng.dropout`); a topic named through
    its exercises keeps only those.
    """
    load_spec = load_public if public else load
    wanted: dict[str, set[str] | None] = {}
    for name in names or ORDER:
        topic, _, exercise = name.partition(".")
        spec = load_spec(topic)
        if not exercise:
            wanted[topic] = None
        elif wanted.get(topic, set()) is not None:
            spec.exercise(exercise)
            wanted.setdefault(topic, set()).add(exercise)
    selected = []
    for name in ORDER:
        if name in wanted:
            spec, only = load_spec(name), wanted[name]
            if only is not None:
                spec = dataclasses.replace(spec, exercises=tuple(e for e in spec.exercises if e.name in only))
            selected.append(spec)
    return selected

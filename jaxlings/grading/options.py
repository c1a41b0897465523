"""Typed options, validated when a spec object is built: one mechanism for a check's options
(`check.Check`) and an exercise's fields (`spec.Exercise`).

A dataclass's annotations are its options' types; `first_problem` reads the object's resolved
annotations and says which field holds a value of the wrong type ("must be a number, not str
'1e-5'"), so that a spec with a misspelt or mistyped option fails at import, naming it. It
knows what options are made of: numbers, strings, bools, tuples, dicts, callables, optional
values, protocols and classes; anything else is taken as it is.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable
from typing import Any, Union


def first_problem(obj: Any, localns: dict[str, Any] | None = None) -> tuple[str, str] | None:
    """(field, why) for the first field of dataclass `obj` whose value does not fit its
    annotation, or None. `localns`: names the annotations use that their module imports for
    typing only."""
    hints = _hints(type(obj), localns)
    for f in dataclasses.fields(obj):
        if problem := type_problem(getattr(obj, f.name), hints[f.name]):
            return f.name, problem
    return None


def _hints(cls: type, localns: dict[str, Any] | None) -> dict[str, Any]:
    """The resolved annotations of a dataclass's fields (cached on the class)."""
    cached = cls.__dict__.get("_resolved_hints")
    if cached is None:
        cached = typing.get_type_hints(cls, localns=localns)
        type.__setattr__(cls, "_resolved_hints", cached)
    return cached


def type_problem(value: Any, hint: Any) -> str | None:
    """Why `value` does not fit the annotation `hint` ("must be a float, not str"), or None."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return None
    if origin in (Union, types.UnionType):
        problems = [type_problem(value, a) for a in args]
        return None if any(p is None for p in problems) else f"must be {_words(hint)}, not {_got(value)}"
    if hint is type(None):
        return None if value is None else f"must be None, not {_got(value)}"
    if hint is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return None if ok else f"must be a number, not {_got(value)}"
    if hint is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
        return None if ok else f"must be a whole number, not {_got(value)}"
    if hint in (bool, str):
        return None if isinstance(value, hint) else f"must be {_words(hint)}, not {_got(value)}"
    if origin is tuple:
        return _tuple_problem(value, args)
    if origin is dict:
        if not isinstance(value, dict):
            return f"must be a dict, not {_got(value)}"
        for k, v in value.items():
            problem = type_problem(k, args[0]) or type_problem(v, args[1])
            if problem:
                return f"entry {k!r} {problem}"
        return None
    if origin is Callable or hint is Callable:
        return None if callable(value) else f"must be a function, not {_got(value)}"
    if getattr(hint, "_is_protocol", False):  # e.g. `Requirement`: has what the protocol names
        wanted = [m for m in getattr(hint, "__protocol_attrs__", ()) if not m.startswith("_")]
        wanted = wanted or [m for m in vars(hint) if not m.startswith("_")]
        missing = [m for m in wanted if not hasattr(value, m)]
        return f"must be {_words(hint)} (it has no {missing[0]})" if missing else None
    if isinstance(hint, type):
        return None if isinstance(value, hint) else f"must be {_words(hint)}, not {_got(value)}"
    return None


def _tuple_problem(value: Any, args: tuple[Any, ...]) -> str | None:
    """`type_problem` for a tuple annotation: `tuple[X, ...]` or `tuple[X, Y]`."""
    if not isinstance(value, tuple):
        return f"must be a tuple, not {_got(value)}"
    if len(args) == 2 and args[1] is Ellipsis:
        inner = [(v, args[0]) for v in value]
    elif len(args) != len(value):
        return f"must be a tuple of {len(args)}, not of {len(value)}"
    else:
        inner = list(zip(value, args))
    for i, (v, h) in enumerate(inner):
        if (problem := type_problem(v, h)) is not None:
            return f"entry {i} {problem}"
    return None


def _words(hint: Any) -> str:
    names = {float: "a number", int: "a whole number", bool: "True or False", str: "a string", type(None): "None"}
    if typing.get_origin(hint) in (Union, types.UnionType):
        return " or ".join(_words(a) for a in typing.get_args(hint))
    if typing.get_origin(hint) is tuple:
        return "a tuple"
    return names.get(hint, f"a {getattr(hint, '__name__', hint)}")


def _got(value: Any) -> str:
    return f"{type(value).__name__} {value!r}"[:80]

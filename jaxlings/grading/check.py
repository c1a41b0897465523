"""What a check is: one typed object, configured per exercise.

A topic's spec lists each exercise's checks as instances, `checks=(Correct(2), Jit(1,
requirements=(...)), Speed(2, size={...}), KeyReuse())`. A check class declares, once:

- `name`: how results call it (`<topic>.<exercise>:<name>`) and how other checks refer to it;
- `summary`: what it asks, in one line for students (notebooks);
- `requires`: the checks that must pass before it is judged (the engine fails it with "not
  judged until ..." otherwise); `after`: the checks it runs after when the exercise has them
  (it reads what they found, `jaxlings.grading.context.Findings`); the engine orders an exercise's
  checks by both, and keeps the spec's order otherwise;
- `timed` (its verdict reads the grader's clock: `jaxlings.grading.gate` runs it alone where that is
  wall time; with `gates_on_device`, in hidden grading on a device it takes the gate itself,
  alone only for the work the clock times: `CheckContext.gated`), `analyses` (it sends the student's exported programs to the trusted side, in
  public runs too), `advisory` (it reports facts the student's process could fake: shown, worth
  no points), `cost` (its rough weight in grading time, for the planner);
- its options as typed dataclass fields, validated when the instance is built: an unknown or
  missing field, or a value of the wrong type, raises `SpecError` at import, naming the check
  and the field (the topic loader adds the topic and the exercise);
- `describe(exercise, words)`: its line of the generated "Graded" list, in the words of
  `jaxlings.grading.checks.vocabulary.Words`; `run(ctx) -> Outcome`: the check itself, given the
  narrow `jaxlings.grading.context.CheckContext`; `prefetch(ctx)`: the
  reference's share that must run on the accelerator, where the grading machine has one
  (timed work: `speed`, `compiles`), done before the student's process takes the device.

Every subclass that sets `name` is registered (`KINDS`), which is how the engine, the public
expectations and the course builder find it: a new check is one module in `jaxlings.grading.checks`.

This module sits below the spec (`jaxlings.grading.spec`: an `Exercise` holds its checks) and the
context (which holds the exercise), so it names neither: the base's methods take them as `Any`,
and each check class annotates its own with the real types (`Exercise`, `CheckContext`,
`Words`). The import graph stays a tree of layers: check <- spec <- context <- checks.
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
from typing import Any, ClassVar

from jaxlings.grading import options
from jaxlings.grading.results import Outcome


class SpecError(ValueError):
    """A spec that cannot be graded: a check built with a misspelt, missing or mistyped option,
    or one that does not fit its exercise."""


KINDS: dict[str, type[Check]] = {}
"""Every check class by its `name`, filled as check modules are imported (`jaxlings.grading.checks`
imports them all)."""


class _Validated(type):
    """Builds a check only from the fields it declares, with a message a spec's author can act
    on (Python's own says only "unexpected keyword argument")."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        try:
            inspect.signature(cls.__init__).bind(None, *args, **kwargs)  # type: ignore[misc]
        except TypeError as exc:
            raise SpecError(_binding_problem(cls, kwargs, exc)) from None
        return super().__call__(*args, **kwargs)


def _binding_problem(cls: type, kwargs: dict[str, Any], exc: TypeError) -> str:
    """What is wrong with the arguments of a check's constructor, in a spec author's words."""
    fields = [f.name for f in dataclasses.fields(cls) if f.init]
    unknown = [k for k in kwargs if k not in fields]
    if unknown:
        close = difflib.get_close_matches(unknown[0], fields, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        return f"{cls.__name__} has no option {unknown[0]!r}{hint}; its options are {', '.join(fields)}"
    return f"{cls.__name__}: {exc}; its options are {', '.join(fields)}"


@dataclasses.dataclass(frozen=True)
class Check(metaclass=_Validated):
    """One check of one exercise, worth `points` (see the module docstring)."""

    points: float

    name: ClassVar[str]
    summary: ClassVar[str]
    requires: ClassVar[tuple[str, ...]] = ()
    after: ClassVar[tuple[str, ...]] = ()
    timed: ClassVar[bool] = False
    gates_on_device: ClassVar[bool] = False
    analyses: ClassVar[bool] = False
    advisory: ClassVar[bool] = False
    cost: ClassVar[int] = 1

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" in cls.__dict__:
            if not cls.__dict__.get("summary"):
                raise TypeError(f"the check {cls.__name__} must say what it asks: set `summary`")
            for method in ("describe", "run"):
                if getattr(cls, method) is getattr(Check, method):
                    raise TypeError(f"the check {cls.__name__} must define `{method}`")
            if cls.name in KINDS and KINDS[cls.name].__qualname__ != cls.__qualname__:
                raise TypeError(f"two checks are named {cls.name!r}: {KINDS[cls.name].__name__} and {cls.__name__}")
            KINDS[cls.name] = cls

    def __post_init__(self) -> None:
        if found := options.first_problem(self):
            raise SpecError(f"{type(self).__name__}: option {found[0]!r} {found[1]}")
        if self.points < 0:
            raise SpecError(f"{type(self).__name__}: points must not be negative (got {self.points:g})")
        if self.advisory and self.points:
            raise SpecError(
                f"{type(self).__name__} is advisory (the student's process could fake what it reads) and "
                f"must be worth 0 points, not {self.points:g}"
            )

    def fits(self, exercise: Any) -> None:
        """Raise SpecError when this check cannot grade `exercise` (a `spec.Exercise`; e.g. a `vmap`
        whose axes do not match its arguments); called when the exercise is built. Nothing by default."""

    def describe(self, exercise: Any, words: Any) -> str:
        """What the check asks of `exercise` (a `spec.Exercise`), for its docstring's Graded list,
        in `words` (`checks.vocabulary.Words`)."""
        raise NotImplementedError(f"the check {type(self).__name__} has no `describe`")

    def run(self, ctx: Any) -> Outcome:
        """The check on one exercise of one grading run (`ctx`: its `context.CheckContext`)."""
        raise NotImplementedError(f"the check {type(self).__name__} has no `run`")

    @property
    def prefetches(self) -> bool:
        """Whether this check does work on the device ahead of the student (`prefetch`): where
        its class defines one, unless its options keep it off the device."""
        return type(self).prefetch is not Check.prefetch

    def prefetch(self, ctx: Any) -> None:
        """The reference's work that must run on the accelerator, done ahead of the student's
        (`jaxlings.grading.device_grading`: one trusted process on the device, then one student
        process): each answer it asks for (`ctx.answer`, on the device's reference worker) is
        kept for `run`, which asks for the same later in the same words. Nothing by default:
        a check whose reference answers do not depend on the platform takes them live, from
        the reference on the host's CPU."""

    def compile_ahead(self, worker: Any, ex: Any, device: Any) -> None:
        """Work of the student's that this check will run on the device, done early in the
        student's `worker` there on inputs no timed call gets, so that it is compiled before the
        check comes (`jaxlings.grading.device_grading.compile_ahead`). Nothing by default."""


# -- order -----------------------------------------------------------------------------------


def ordered(checks: tuple[Check, ...]) -> list[Check]:
    """An exercise's checks in the order they run: each after the checks it `requires` or runs
    `after` (those the exercise has), otherwise in the spec's order."""
    present = {c.name for c in checks}
    done: list[Check] = []
    pending = list(checks)
    while pending:
        for c in pending:
            if all(d in {x.name for x in done} for d in (*c.requires, *c.after) if d in present):
                done.append(c)
                pending.remove(c)
                break
        else:
            raise SpecError(f"the checks {', '.join(c.name for c in pending)} wait for each other")
    return done


def waiting_for(check: Check, passed: dict[str, bool]) -> str | None:
    """Why `check` is not judged yet: the first check it `requires` that has not passed."""
    for needed in check.requires:
        if not passed.get(needed):
            return (
                "not judged until the function is correct"
                if needed == "correct"
                else f"not judged until `{needed}` passes"
            )
    return None

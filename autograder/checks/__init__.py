"""The checks: one module each, each a typed `Check` class (see `autograder.checks.base`).

A topic's spec configures them per exercise as instances, e.g.
`checks=(Correct(2), Jit(1, requirements=(...)), Speed(2, size={...}), KeyReuse())`. The class
declares everything the rest of the grader needs (its name, summary, what it requires, whether
it is timed, analyses programs or is advisory, its cost), so the engine, the planner, the clock
gate, the course builder and the public expectations all read the same object.

Every module of this package is imported here, so that every check is registered
(`base.KINDS`) however a spec imports it: a new check is a new module, nothing else.
"""

from __future__ import annotations

import importlib
import pkgutil

from autograder.checks.base import KINDS, Check, SpecError, ordered, waiting_for
from autograder.checks.compiles import Compiles
from autograder.checks.correct import Correct
from autograder.checks.grad import Grad
from autograder.checks.jit import Jit
from autograder.checks.key_reuse import KeyReuse
from autograder.checks.prints import Prints
from autograder.checks.sharding import Sharding
from autograder.checks.speed import Speed
from autograder.checks.trains import Trains
from autograder.checks.vmap import Vmap
from autograder.checks.vmc import Vmc

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

__all__ = [
    "KINDS",
    "Check",
    "Compiles",
    "Correct",
    "Grad",
    "Jit",
    "KeyReuse",
    "Prints",
    "Sharding",
    "SpecError",
    "Speed",
    "Trains",
    "Vmap",
    "Vmc",
    "ordered",
    "waiting_for",
]

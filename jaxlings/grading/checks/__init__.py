"""The checks: one module each, each a typed `Check` class (see `jaxlings.grading.check`).

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

from jaxlings.grading.check import KINDS, Check, SpecError, ordered, waiting_for
from jaxlings.grading.checks.compiles import Compiles
from jaxlings.grading.checks.correct import Correct
from jaxlings.grading.checks.grad import Grad
from jaxlings.grading.checks.jit import Jit
from jaxlings.grading.checks.key_reuse import KeyReuse
from jaxlings.grading.checks.prints import Prints
from jaxlings.grading.checks.sharding import Sharding
from jaxlings.grading.checks.speed import Speed
from jaxlings.grading.checks.trains import Trains
from jaxlings.grading.checks.vmap import Vmap
from jaxlings.grading.checks.vmc import Vmc

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

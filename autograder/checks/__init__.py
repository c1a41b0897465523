"""The checks: one module each, all with the signature `run(session, run) -> Outcome`.

`REGISTRY` maps a check name (as used in a topic spec's `Exercise.checks` and in result names
`<topic>.<exercise>:<check>`) to its function. `correct` always runs first; the checks in
`NEEDS_CORRECT` are judged only once `correct` has passed (a fast function that computes the
wrong thing earns nothing). `key_reuse` is not among them: a reused key is the usual reason a
PRNG function is wrong, so it reports one on a wrong function too (see its module). The others
(`correct`, `jit`, `vmc`, `trains`, `key_reuse`) call the function themselves, so a stub fails them with
"not implemented yet".
"""

from __future__ import annotations

import sys
from typing import Callable

from autograder.checks import compiles, correct, grad, jit, key_reuse, prints, sharding, speed, trains, vmap, vmc
from autograder.results import Outcome
from autograder.session import ExerciseRun, TopicSession

Check = Callable[[TopicSession, ExerciseRun], Outcome]

REGISTRY: dict[str, Check] = {
    "correct": correct.run,
    "jit": jit.run,
    "speed": speed.run,
    "key_reuse": key_reuse.run,
    "grad": grad.run,
    "vmap": vmap.run,
    "compiles": compiles.run,
    "sharding": sharding.run,
    "prints": prints.run,
    "vmc": vmc.run,
    "trains": trains.run,
}

TIMED = frozenset({"speed", "compiles", "vmc"})
"""Checks whose verdict reads the grader's clock (`autograder.gate` runs them alone where it is wall time)."""
NEEDS_CORRECT = frozenset({"speed", "grad", "vmap", "sharding", "prints", "compiles"})

ANALYSING = frozenset(name for name, check in REGISTRY.items()
                      if getattr(sys.modules[check.__module__], "ANALYSES", False))
"""Checks that send the student's exported programs to the trusted worker, in public runs too
(`autograder.structure`): a public run starts that worker beside the student's only for these;
any other use starts it when first asked (`TopicSession.ref`)."""

ADVISORY = frozenset(name for name, check in REGISTRY.items() if getattr(sys.modules[check.__module__], "ADVISORY", False))
"""Checks that report facts the student's process could fake: shown, worth no points."""

SUMMARIES: dict[str, str] = {name: sys.modules[check.__module__].SUMMARY for name, check in REGISTRY.items()}
"""Check name -> what it asks, in one line for students (each check module's `SUMMARY`)."""

"""Facts read from a jaxpr inside the worker: ADVISORY only.

The jaxpr of a student's function is built in the student's own process, where the module may
have patched JAX's tracing machinery; so these counts (primitive names, `pmap` use) are
reported in the results and used for messages, but no point rests on them. The trusted
structural facts come from the exported program (`jaxlings.worker.program`), analysed in the
reference's process.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from typing import Any


def count_primitives(jaxpr: Any) -> tuple[Counter[str], int]:
    """Count the primitives of a jaxpr and of every jaxpr nested in its equations' params."""
    counts = Counter(eqn.primitive.name for eqn in all_equations(jaxpr))
    return counts, sum(counts.values())


def all_equations(jaxpr: Any) -> Iterator[Any]:
    """Every equation of a jaxpr and of every jaxpr nested in its equations' params."""
    stack = [jaxpr]
    while stack:
        for eqn in stack.pop().eqns:
            yield eqn
            stack.extend(_sub_jaxprs(eqn.params.values()))


PMAP_MODULE = "jax/_src/pmap.py"
PMAP_PRIMITIVES = ("xla_pmap",)  # the primitive of JAX versions before pmap became jit + shard_map
PMAP_CARRIERS = ("jit", "pjit", "shard_map")


def count_pmap_calls(jaxpr: Any) -> int:
    """Equations that `jax.pmap` put in a jaxpr (nested jaxprs included).

    Older JAX binds a `xla_pmap` primitive. Since pmap was reimplemented as `jit` of
    `shard_map` (jax 0.10 has no pmap primitive left), the only trace it leaves is that the
    equation was bound from inside JAX's pmap module, which the equation's traceback records.
    """
    return sum(
        1
        for eqn in all_equations(jaxpr)
        if eqn.primitive.name in PMAP_PRIMITIVES
        or (eqn.primitive.name in PMAP_CARRIERS and _bound_in(eqn, PMAP_MODULE))
    )


def _bound_in(eqn: Any, module_suffix: str) -> bool:
    """Whether the traceback recorded when `eqn` was bound passes through `module_suffix`."""
    traceback = getattr(eqn.source_info, "traceback", None)
    frames = getattr(traceback, "frames", None) or ()
    return any(f.file_name.replace(os.sep, "/").endswith(module_suffix) for f in frames)


def _sub_jaxprs(values: Any) -> list[Any]:
    found = []
    for v in values:
        if isinstance(v, (tuple, list)):
            found.extend(_sub_jaxprs(v))
        elif hasattr(v, "eqns") and hasattr(v, "invars"):
            found.append(v)
        elif hasattr(v, "jaxpr") and hasattr(v.jaxpr, "eqns"):
            found.append(v.jaxpr)
    return found

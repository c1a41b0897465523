"""The reference solutions' programs, fingerprinted as the grader fingerprints a student's, for the
similarity report's program side: what the reference computes is discounted there, and a pair
whose programs are both the reference's own is marked `prescribed`.

Why. On a task that prescribes the computation, right answers compile to the reference's program
whatever their source looks like; weighed against the class alone, three honest students who did
so look like a copy ring to the program side. The grader never records the reference's program
in results.json (students read it), so the service works it out from the course's solutions, in
a subprocess on the host's CPU (`JAX_PLATFORMS=cpu`): the API process never imports JAX, and on
a grading machine the accelerator belongs to one process at a time.

    sketches("at_updates")    # {"histogram": frozenset({...}), ...}; {} without solutions/

`sketch_of` is the fingerprint itself (the subprocess's work, and the test corpus's): the function
jitted with the exercise's static arguments, exported with `jax.export` from the specs of a sample
of its largest size, as the `trace` request exports a student's, and fingerprinted by the trusted
side's code (`jaxlings.worker.program.inspect_module`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import cache
from typing import Any

TIMEOUT = 300.0
"""Seconds the subprocess may take for one topic (importing JAX and a topic's libraries, exporting
each exercise's reference); past it the topic has no reference programs, as without solutions."""


@cache
def sketches(topic: str) -> dict[str, frozenset[int]]:
    """exercise -> the reference's program sketch, for each exercise of `topic` whose reference
    exports; empty where this machine has no solutions, or the subprocess fails. Worked out once
    per process and topic."""
    from jaxlings.grading import paths

    if not (paths.solutions_dir() / f"{topic}.py").is_file():
        return {}
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    command = [sys.executable, "-m", "jaxlings.service.reference_programs", topic]
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=TIMEOUT, check=True)
        found = json.loads(done.stdout)
    except (OSError, subprocess.SubprocessError, ValueError):
        return {}
    if not isinstance(found, dict):
        return {}
    return {
        name: frozenset(int(h, 16) for h in hashes)
        for name, hashes in found.items()
        if isinstance(name, str) and isinstance(hashes, list) and all(isinstance(h, str) for h in hashes)
    }


def sketch_of(topic: str, exercise: str, text: str) -> frozenset[int] | None:
    """The program sketch of `text`'s function `exercise`, as the grader's trusted side records a
    student's (`program_shingles` of the `jit` check); None where it does not export. Runs the
    module `text` in this process: for trusted code only (the course's solutions, the test corpus)."""
    import jax
    import numpy as np
    from jax import export

    from jaxlings.grading import topics
    from jaxlings.worker import program

    ex = topics.load(topic).exercise(exercise)
    args = ex.sample(np.random.default_rng(0), ex.sizes[-1]).args
    specs = tuple(
        a if i in ex.static_argnums or not hasattr(a, "dtype") else jax.ShapeDtypeStruct(np.shape(a), a.dtype)
        for i, a in enumerate(args)
    )
    namespace: dict[str, Any] = {"__name__": f"reference_{topic}"}
    try:
        exec(compile(text, f"<{topic}.{exercise}>", "exec"), namespace)  # trusted: see the docstring
        fn = namespace[exercise]
        exported = export.export(jax.jit(fn, static_argnums=ex.static_argnums))(*specs)
        shingles = program.inspect_module(exported.mlir_module(), shingles=True)["program_shingles"]
    except Exception:  # noqa: BLE001 - a function that does not export has no program side
        return None
    return frozenset(int(h, 16) for h in shingles) or None


def main(argv: list[str]) -> None:
    """`python -m jaxlings.service.reference_programs TOPIC`: the sketches of the topic's
    references as JSON on stdout ({exercise: [16-digit hex, ...]})."""
    from jaxlings.grading import paths, topics

    topic = argv[1]
    text = (paths.solutions_dir() / f"{topic}.py").read_text()
    out = {}
    for ex in topics.load(topic).exercises:
        found = sketch_of(topic, ex.name, text)
        if found is not None:
            out[ex.name] = [f"{h:016x}" for h in sorted(found)]
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv)

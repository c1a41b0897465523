"""`grade hint`: progressive hints, one level deeper each time it is asked.

Levels come from the exercise's spec (a nudge, then the API to use, then the shape of the
solution). The level a student has reached is kept per exercise in `.jaxlings/hints.json`
in their working directory, so asking again moves on, and `--level` jumps.
"""

from __future__ import annotations

import json
from pathlib import Path

from jaxlings.grading.paths import state_dir
from jaxlings.grading.spec import Exercise, Topic


def _state_file(workdir: Path) -> Path:
    return state_dir(workdir) / "hints.json"


def _load(workdir: Path) -> dict[str, int]:
    try:
        return json.loads(_state_file(workdir).read_text())
    except (OSError, ValueError):
        return {}


def next_hint(workdir: Path, topic: str, ex: Exercise, level: int | None = None) -> tuple[int, str]:
    """The hint to show now, as (1-based level, text), and remember that it was shown."""
    state = _load(workdir)
    key = f"{topic}.{ex.name}"
    if level is None:
        level = min(state.get(key, 0) + 1, len(ex.hints))
    if not 1 <= level <= len(ex.hints):
        raise ValueError(f"{key} has hint levels 1 to {len(ex.hints)}")
    state[key] = max(state.get(key, 0), level)
    path = _state_file(workdir)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(state, indent=1, sort_keys=True))
    return level, ex.hints[level - 1]


def topics_with(exercise: str, specs: list[Topic]) -> list[str]:
    """The topics (of `specs`, in their order) that have an exercise called `exercise`: what a
    bare exercise name (`grade hint noisy_walk`) may mean."""
    return [spec.name for spec in specs if any(ex.name == exercise for ex in spec.exercises)]

"""Recording the public expectations of a topic (`grade build`): the reference solutions graded
in public mode, as a student would be, with every draw and every answer of the reference
written down (`autograder.answers.Recorder`), into `autograder/public/<topic>.json`.

Recording costs a public run of the topic (seconds to a minute), so it happens only when the
fingerprint of what the recording depends on changed: the topic's solution and spec, and the
code that shapes requests and replies (the worker, the answers' encoding, the checks).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from autograder import engine, public, topics
from autograder.answers import Recorder
from autograder.paths import PACKAGE_ROOT

PACKAGE = PACKAGE_ROOT / "autograder"
SHARED_SOURCES = ("answers.py", "session.py", "structure.py", "spec.py", "public/__init__.py")
SHARED_FOLDERS = ("worker", "checks")


class RecordingError(Exception):
    """The reference solutions do not pass their own public run: nothing can be recorded."""


def fingerprint(name: str, solutions_dir: Path) -> str:
    """A hash of everything topic `name`'s recording depends on."""
    digest = hashlib.sha256()
    files = [Path(solutions_dir) / f"{name}.py", PACKAGE / "topics" / f"{name}.py"]
    files += [PACKAGE / s for s in SHARED_SOURCES]
    files += sorted(p for folder in SHARED_FOLDERS for p in (PACKAGE / folder).glob("*.py"))
    for path in files:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:32]


def record(name: str, solutions_dir: Path) -> str:
    """The JSON text of topic `name`'s public expectations, from a public run of its reference."""
    spec = topics.load(name)
    recorder = Recorder()
    result = engine.grade(Path(solutions_dir), [spec], reference_dir=Path(solutions_dir), public=True,
                          answers=lambda _: recorder)
    failed = [f"{t.name}: {t.output}" for t in result.tests if t.status != "passed" and not t.pending]
    if failed:
        raise RecordingError(f"the reference solution of {name} fails its own public checks: " + "; ".join(failed))
    document = public.document(spec, recorder.recording, fingerprint(name, solutions_dir),
                               result.extra_data["platform"].get("jax_version", "?"))
    return json.dumps(document, indent=1) + "\n"


def up_to_date(name: str, solutions_dir: Path) -> bool:
    """Whether the committed expectations of `name` were recorded from what is here now."""
    public._load.cache_clear()
    return public.fingerprint_of(name) == fingerprint(name, solutions_dir)

"""Recording the public expectations of a topic (`grade build`): the reference solutions graded
in public mode, as a student would be, with every draw and every answer of the reference
written down (`autograder.answers.Recorder`), into `autograder/public/<topic>.json`.

Recording costs a public run of the topic (seconds to a minute), so it happens only when the
fingerprint of what the recording depends on changed (`fingerprint`): the recording protocol's
version, the topic's solution and spec, and the code that shapes the draws, the requests and
the replies. Code is hashed as its syntax tree without docstrings (`autograder.source.code_dump`),
so editing a docstring, a comment, blank lines or formatting records nothing again; editing
code does, even where it would not change the answers (the hash cannot tell).

What is hashed, and why:

- the solution (`solutions/<topic>.py`): the reference, whose answers are recorded. Its
  docstrings are stripped too: `grade build` rewrites them (the Graded lists), and no answer
  reads them.
- the topic's spec (`autograder/topics/<topic>.py`): its cases, samplers and check options.
- `SHARED_SOURCES` and every module of `SHARED_FOLDERS`: the draws' keys and generators
  (`draws`, `session`), the checks and what they hand the reference (`checks/`, `context`,
  `structure`, `timing`, whose timed runs are answers), the spec's classes (`spec`), the
  worker that computes and encodes every reply (`worker/`, `wire` included), the answers'
  keys and encoding (`answers`) and the document's layout (`public/__init__`).

Not hashed, since no draw, request or reply depends on them: the engine (it runs every check
of the reference in public mode; a draw's key is its exercise, kind and number, whatever the
order the checks run in), the process layer (`isolation/`: sandbox, cgroups, /proc and the
framing of requests on the pipe, not their content), comparisons and verdicts (`compare`,
`requirements`, `replies`: they judge answers, and never change one).

`RECORDING_PROTOCOL` covers what no file's code shows: bump it when the encoding of requests or
answers changes in a way the hashed code does not (a library's encoding, say), or to record
every topic again.
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path

from autograder import engine, public, topics
from autograder.answers import Recorder
from autograder.paths import PACKAGE_ROOT
from autograder.source import code_dump, parse_trusted

PACKAGE = PACKAGE_ROOT / "autograder"

RECORDING_PROTOCOL = 1
"""The version of how a recording is made and keyed, hashed into every fingerprint: bump it when
the encoding of requests or answers changes in a way the hashed code does not show."""

SHARED_SOURCES = (
    "answers.py",
    "context.py",
    "draws.py",
    "session.py",
    "structure.py",
    "spec.py",
    "timing.py",
    "public/__init__.py",
)
"""Modules of `autograder/` every recording depends on (see the module's docstring)."""

SHARED_FOLDERS = ("worker", "checks")
"""Subpackages of `autograder/` whose every module every recording depends on."""


class RecordingError(Exception):
    """The reference solutions do not pass their own public run: nothing can be recorded."""


def fingerprint(name: str, solutions_dir: Path, *, package: Path = PACKAGE) -> str:
    """A hash of everything topic `name`'s recording depends on: `RECORDING_PROTOCOL`, and the
    code of the solution, the spec and the shared modules as syntax trees without docstrings
    (`package`: the `autograder/` folder they are read from). A file that does not parse raises
    `autograder.source.SourceError`, one that is missing FileNotFoundError."""
    digest = hashlib.sha256(f"recording protocol {RECORDING_PROTOCOL}\0".encode())
    for label, path in _inputs(name, Path(solutions_dir), Path(package)):
        digest.update(label.encode() + b"\0" + _code_hash(path.read_bytes(), str(path)) + b"\0")
    return digest.hexdigest()[:32]


@functools.lru_cache(maxsize=256)
def _code_hash(text: bytes, where: str) -> bytes:
    """The hash of one file's code (`code_dump`), once per content: the shared modules are the
    same for every topic of a build."""
    return hashlib.sha256(code_dump(parse_trusted(text.decode(), where)).encode()).digest()


def _inputs(name: str, solutions_dir: Path, package: Path) -> list[tuple[str, Path]]:
    """(label, path) of every file `fingerprint` hashes, in a fixed order."""
    files = [("solution", solutions_dir / f"{name}.py"), ("spec", package / "topics" / f"{name}.py")]
    files += [(s, package / s) for s in SHARED_SOURCES]
    files += sorted(
        (p.relative_to(package).as_posix(), p) for folder in SHARED_FOLDERS for p in (package / folder).glob("*.py")
    )
    return files


def record(name: str, solutions_dir: Path) -> str:
    """The JSON text of topic `name`'s public expectations, from a public run of its reference."""
    spec = topics.load(name)
    recorder = Recorder()
    result = engine.grade(
        Path(solutions_dir), [spec], reference_dir=Path(solutions_dir), public=True, answers=lambda _: recorder
    )
    failed = [f"{t.name}: {t.output}" for t in result.tests if t.status != "passed" and not t.pending]
    if failed:
        raise RecordingError(f"the reference solution of {name} fails its own public checks: " + "; ".join(failed))
    document = public.document(
        spec,
        recorder.recording,
        fingerprint(name, solutions_dir),
        result.extra_data["platform"].get("jax_version", "?"),
    )
    return json.dumps(document, indent=1) + "\n"


def up_to_date(name: str, solutions_dir: Path) -> bool:
    """Whether the committed expectations of `name` were recorded from what is here now."""
    public._load.cache_clear()
    return public.fingerprint_of(name) == fingerprint(name, solutions_dir)

"""Recording the public expectations of a topic (`grade build`): the reference solutions graded
in public mode, as a student would be, with every draw and every answer of the reference
written down (`jaxlings.grading.answers.Recorder`), into `jaxlings/public/<topic>.json`.

Recording costs a public run of the topic (seconds to a minute), so it happens only when the
fingerprint of what the recording depends on changed (`fingerprint`): the recording protocol's
version, the topic's solution and spec, and the code that shapes the draws, the requests and
the replies. Code is hashed as its syntax tree without docstrings (`jaxlings.grading.source.code_dump`),
so editing a docstring, a comment, blank lines or formatting records nothing again; editing
code does, even where it would not change the answers (the hash cannot tell).

What is hashed, and why:

- the solution (`solutions/<topic>.py`): the reference, whose answers are recorded. Its
  docstrings are stripped too: `grade build` rewrites them (the Graded lists), and no answer
  reads them.
- the topic's spec (`jaxlings/specs/<topic>.py`): its cases, samplers and check options.
- the checks the topic's exercises use (`_check_modules`): the module of each check class its
  spec configures, and every module of `checks/` those import, transitively (imports for
  typing only aside). A check used by one topic records that topic again, and no other; a new
  check module records nothing until a spec uses it; `grading/check.py` (every check's base,
  in `SHARED_SOURCES`) records every topic.
- `SHARED_SOURCES` and every module of `SHARED_FOLDERS`: the draws' keys and generators
  (`draws`, `session`), what the checks hand the reference (`context`, `structure`, `timing`,
  whose timed runs are answers), the spec's classes (`spec`), the worker that computes and
  encodes every reply (`worker/`, `wire` included), the answers' keys and encoding (`answers`)
  and the document's layout (`public/__init__`).

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

import ast
import functools
import hashlib
import json
from pathlib import Path

from jaxlings import public
from jaxlings.grading import engine, topics
from jaxlings.grading.answers import Recorder
from jaxlings.grading.paths import PACKAGE_ROOT
from jaxlings.grading.source import code_dump, parse_trusted

PACKAGE = PACKAGE_ROOT / "jaxlings"

RECORDING_PROTOCOL = 1
"""The version of how a recording is made and keyed, hashed into every fingerprint: bump it when
the encoding of requests or answers changes in a way the hashed code does not show."""

SHARED_SOURCES = (
    "grading/answers.py",
    "grading/check.py",
    "grading/context.py",
    "grading/draws.py",
    "grading/session.py",
    "grading/structure.py",
    "grading/spec.py",
    "grading/timing.py",
    "public/__init__.py",
)
"""Modules of `jaxlings/` every recording depends on (see the module's docstring)."""

SHARED_FOLDERS = ("worker",)
"""Subpackages of `jaxlings/` whose every module every recording depends on."""

CHECKS_PACKAGE = "jaxlings.grading.checks"


class RecordingError(Exception):
    """The reference solutions do not pass their own public run: nothing can be recorded."""


def fingerprint(name: str, solutions_dir: Path, *, package: Path = PACKAGE) -> str:
    """A hash of everything topic `name`'s recording depends on: `RECORDING_PROTOCOL`, and the
    code of the solution, the spec and the shared modules as syntax trees without docstrings
    (`package`: the `jaxlings/` folder they are read from). A file that does not parse raises
    `jaxlings.grading.source.SourceError`, one that is missing FileNotFoundError."""
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
    files = [("solution", solutions_dir / f"{name}.py"), ("spec", package / "specs" / f"{name}.py")]
    files += [(s, package / s) for s in SHARED_SOURCES]
    files += sorted(
        (p.relative_to(package).as_posix(), p) for folder in SHARED_FOLDERS for p in (package / folder).glob("*.py")
    )
    files += [(f"grading/checks/{p.name}", p) for p in _check_modules(name, package)]
    return files


def _check_modules(name: str, package: Path) -> list[Path]:
    """The files of `checks/` topic `name`'s recording runs: the module of each check its
    exercises configure, and the modules of `checks/` they import, transitively, in name order."""
    spec = topics.load(name)
    pending = sorted({type(check).__module__ for ex in spec.exercises for check in ex.checks})
    seen: set[str] = set()
    while pending:
        module = pending.pop()
        if module in seen:
            continue
        seen.add(module)
        path = _checks_file(module, package)
        pending += [m for m in _imported_checks(path.read_text(), str(path), package) if m not in seen]
    return sorted(_checks_file(m, package) for m in seen)


def _checks_file(module: str, package: Path) -> Path:
    """The file of `jaxlings.grading.checks.<x>` (or of the package itself, its `__init__.py`)."""
    tail = module.removeprefix(CHECKS_PACKAGE).lstrip(".")
    return package / "grading" / "checks" / (f"{tail}.py" if tail else "__init__.py")


def _imported_checks(source: str, where: str, package: Path) -> list[str]:
    """The `jaxlings.grading.checks` modules that `source` imports when it runs (an `if TYPE_CHECKING:`
    block's imports aside: they shape no answer)."""
    found: list[str] = []
    pending = list(parse_trusted(source, where).body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            pending += node.orelse
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if (
                node.module == CHECKS_PACKAGE
            ):  # `from jaxlings.grading.checks import key_reuse`: submodules, or the package
                found += [
                    f"{CHECKS_PACKAGE}.{a.name}"
                    if (package / "grading" / "checks" / f"{a.name}.py").exists()
                    else CHECKS_PACKAGE
                    for a in node.names
                ]
            elif node.module.startswith(CHECKS_PACKAGE + "."):
                found.append(node.module)
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name == CHECKS_PACKAGE or a.name.startswith(CHECKS_PACKAGE + ".")]
        pending += [child for child in ast.iter_child_nodes(node) if isinstance(child, ast.stmt)]
    return found


def record(name: str, solutions_dir: Path) -> tuple[str, bytes]:
    """The JSON text of topic `name`'s public expectations and the bytes of its recording
    (`public.document`), from a public run of its reference."""
    spec = topics.load(name)
    recorder = Recorder()
    result = engine.grade(
        Path(solutions_dir), [spec], reference_dir=Path(solutions_dir), public=True, answers=lambda _: recorder
    )
    failed = [f"{t.name}: {t.output}" for t in result.tests if t.status != "passed" and not t.pending]
    if failed:
        raise RecordingError(f"the reference solution of {name} fails its own public checks: " + "; ".join(failed))
    document, data = public.document(
        spec,
        recorder.recording,
        fingerprint(name, solutions_dir),
        result.extra_data["platform"].get("jax_version", "?"),
    )
    return json.dumps(document, indent=1) + "\n", data


def up_to_date(name: str, solutions_dir: Path) -> bool:
    """Whether the committed expectations of `name` were recorded from what is here now."""
    public.forget()
    if public.fingerprint_of(name) != fingerprint(name, solutions_dir):
        return False
    try:
        public.recording(name)
    except public.PublicDataError:  # the `.bin` missing, or not the JSON's
        return False
    return True

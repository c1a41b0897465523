"""The student package (`make student-dist`): a wheel and an sdist of `jaxlings-student`, built
from the package's shipped folders, with nothing hidden in it.

What ships follows from the package's folders (`SHIPPED`): the CLI (`jaxlings/cli/`), the
grading core (`jaxlings/grading/`), the process layer (`jaxlings/isolation/`), the worker, the
public specs and recordings (`jaxlings/public/`), the student's tools and the service's client
(`jaxlings/student/`), and in `jaxlings/student_files/` the stubs, the lessons and the released
notebooks (nbgrader's own preprocessors strip the solutions and the hidden tests). What never
ships (`HIDDEN`): the hidden specs (`jaxlings/specs/`: samplers and hidden edge cases), the build
code (`jaxlings/course/`), the server (`jaxlings/service/`); nor `solutions/` and the tests.

`leaks(path)` scans a built wheel or sdist for every marked solution block (normalised source),
every definition in the topic specs (samplers, hidden cases), the reference modules, and hidden
cases in the recordings; the build refuses an artifact with any finding.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import numpy as np

from jaxlings import __version__
from jaxlings.course.markers import BEGIN, DEF, END
from jaxlings.grading import paths, topics
from jaxlings.grading.answers import blobs_in, from_blob
from jaxlings.grading.source import parse_trusted
from jaxlings.grading.spec import Case, Edge, same_args

ROOT = paths.PACKAGE_ROOT
DIST_NAME = "jaxlings-student"

SHIPPED = ("cli", "grading", "isolation", "public", "student", "worker")
"""The subpackages of `jaxlings/` that ship, whole: everything a student's `grade` runs (the CLI,
the grading core, the process layer, the public specs and recordings, the student's tools, the
worker). The others never ship: `specs/` (the hidden specs), `course/` (the builder),
`service/` (the server). The package's own `__init__.py` and `__main__.py` ship with them."""

HIDDEN = ("specs", "course", "service")
"""The subpackages of `jaxlings/` that stay on the grader's side (see `SHIPPED`)."""

# The student package needs what the grader's core needs: the project's own dependencies.
DEPENDENCIES = tuple(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"])
NOTEBOOK_EXTRA = ("jupyterlab>=4", "ipykernel>=6")
# nbgrader only where the course runs on JupyterHub (the Assignments tab): installed beside JupyterLab
# it adds its instructor menus (Create Assignment, Formgrader, Validate), which a student working on
# their own machine has no use for; the hub's docs disable those on the hub.
HUB_EXTRA = ("nbgrader>=0.9",)

PYPROJECT = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "{name}"
version = "{version}"
description = "jaxlings for students: the exercises, lessons and notebooks of a graded JAX course, with offline public checks."
readme = "README.md"
requires-python = ">=3.11"
dependencies = {dependencies}

[project.optional-dependencies]
notebook = {notebook}
hub = {hub}

[project.scripts]
grade = "jaxlings.cli:main"

[tool.setuptools]
include-package-data = true

[tool.setuptools.packages.find]
include = ["jaxlings*"]

[tool.setuptools.package-data]
"*" = ["*.json", "*.bin", "*.md", "*.ipynb", "exercises/*.py"]
"""

README = """\
# jaxlings (student package)

A graded JAX course: you learn JAX by filling in small functions, one module per topic.

```bash
pip install {name}            # add [notebook] for JupyterLab
grade init my-jaxlings        # exercises/, lessons/, notebooks/, README.md
cd my-jaxlings
grade check jit_basics        # public checks, offline, in seconds
grade hint jit_basics.clip_by_norm
grade watch jit_basics        # re-checks on every save
grade submit                  # to your course's grader (hidden cases, speed on the grading machine)
```
"""


class DistError(Exception):
    """The student package could not be built, or a built one holds something hidden."""


# -- the released notebooks -----------------------------------------------------------------


def released_notebook(source: Path) -> str:
    """The students' copy of a source notebook, as `nbgrader generate_assignment` makes it:
    solutions cut to stubs, hidden tests removed, outputs cleared, given cells locked."""
    from nbgrader.preprocessors import ClearHiddenTests, ClearOutput, ClearSolutions, LockCells

    nb = nbformat.read(str(source), as_version=4)
    resources: dict[str, Any] = {}
    for pre in (LockCells(), ClearSolutions(), ClearOutput(), ClearHiddenTests()):
        nb, resources = pre.preprocess(nb, resources)
    return nbformat.writes(nb) + "\n"


# -- staging and building -------------------------------------------------------------------


def stage(target: Path) -> Path:
    """Lay out the student package's source tree in `target` (a fresh folder)."""
    pkg = target / "jaxlings"
    source = ROOT / "jaxlings"
    pkg.mkdir(parents=True)
    for name in ("__init__.py", "__main__.py"):
        shutil.copyfile(source / name, pkg / name)
    for folder in SHIPPED:
        for module in sorted((source / folder).rglob("*.py")):
            if "__pycache__" not in module.parts:
                (pkg / module.relative_to(source)).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(module, pkg / module.relative_to(source))
    files = pkg / "student_files"
    for name in topics.ORDER:
        for sub, src, suffix in (("exercises", paths.exercises_dir(), ".py"), ("lessons", paths.lessons_dir(), ".md")):
            (files / sub).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src / f"{name}{suffix}", files / sub / f"{name}{suffix}")
        (files / "notebooks").mkdir(parents=True, exist_ok=True)
        notebook = released_notebook(paths.course_dir() / "source" / name / f"{name}.ipynb")
        (files / "notebooks" / f"{name}.ipynb").write_text(notebook)
        for suffix in (".json", ".bin"):
            shutil.copyfile(source / "public" / f"{name}{suffix}", pkg / "public" / f"{name}{suffix}")
    (target / "pyproject.toml").write_text(
        PYPROJECT.format(
            name=DIST_NAME,
            version=__version__,
            dependencies=json.dumps(list(DEPENDENCIES)),
            notebook=json.dumps(list(NOTEBOOK_EXTRA)),
            hub=json.dumps(list(HUB_EXTRA)),
        )
    )
    (target / "README.md").write_text(README.format(name=DIST_NAME))
    return target


def build(out_dir: Path) -> list[Path]:
    """Build the wheel and the sdist into `out_dir`, scan both, and return their paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="jaxlings-student-") as tmp:
        tree = stage(Path(tmp) / "src")
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "build",
                "--no-isolation",
                "--sdist",
                "--wheel",
                "--outdir",
                str(out_dir),
                str(tree),
            ],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise DistError(f"building the student package failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    built = sorted(
        {*out_dir.glob(f"{DIST_NAME.replace('-', '_')}-{__version__}*"), *out_dir.glob(f"{DIST_NAME}-{__version__}*")}
    )  # older setuptools keep the dash in sdists
    if len(built) != 2:
        raise DistError(f"expected a wheel and an sdist in {out_dir}, found {[a.name for a in built]}")
    for artifact in built:
        if found := leaks(artifact):
            artifact.unlink()
            raise DistError(f"{artifact.name} would leak hidden material: " + "; ".join(found[:10]))
    return built


# -- the leak scan --------------------------------------------------------------------------


def normalise(text: str) -> str:
    """Source text with comments, blank lines and indentation dropped, one space per gap."""
    lines = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip() if not line.strip().startswith(("'", '"')) else line.strip()
        if line:
            lines.append(re.sub(r"\s+", " ", line))
    return "\n".join(lines)


def solution_blocks() -> dict[str, str]:
    """Every marked solution block of every reference, normalised: "topic.function" -> text."""
    blocks: dict[str, str] = {}
    for name in topics.ORDER:
        current, inside, body = None, False, list[str]()
        for line in (paths.solutions_dir() / f"{name}.py").read_text().splitlines():
            if m := DEF.match(line):
                current = m["name"]
            if BEGIN.match(line):
                inside, body = True, []
            elif END.match(line):
                inside = False
                if text := normalise("\n".join(body)):
                    blocks[f"{name}.{current}#{len(blocks)}"] = text
            elif inside:
                body.append(line)
    return blocks


def spec_definitions() -> dict[str, str]:
    """Every function and hidden case the topic specs define, normalised: the samplers and the
    hidden edge cases that only the grader may hold."""
    found: dict[str, str] = {}
    for name in topics.ORDER:
        source = (ROOT / "jaxlings" / "specs" / f"{name}.py").read_text()
        for node in ast.walk(parse_trusted(source, f"jaxlings/specs/{name}.py")):
            if isinstance(node, ast.FunctionDef):
                found[f"{name}: def {node.name}"] = normalise(ast.get_source_segment(source, node) or "")
            elif isinstance(node, ast.Call) and any(
                k.arg == "hidden" and getattr(k.value, "value", False) is True for k in node.keywords
            ):
                found[f"{name}: hidden case at line {node.lineno}"] = normalise(
                    ast.get_source_segment(source, node) or ""
                )
    return {k: v for k, v in found.items() if v}


def _members(artifact: Path) -> dict[str, bytes]:
    """Path -> content of every file in a wheel or an sdist (an sdist's top folder left out)."""
    if artifact.suffix == ".whl":
        with zipfile.ZipFile(artifact) as zf:
            return {n: zf.read(n) for n in zf.namelist() if not n.endswith("/")}
    with tarfile.open(artifact) as tf:
        members = {m.name.split("/", 1)[-1]: tf.extractfile(m) for m in tf.getmembers() if m.isfile()}
        return {name: f.read() for name, f in members.items() if f is not None}


def leaks(artifact: Path) -> list[str]:
    """What hidden material `artifact` holds (empty: nothing)."""
    members = _members(Path(artifact))
    texts = {n: normalise(_readable(n, data)) for n, data in members.items()}
    needles = {
        **{f"solution block {k}": v for k, v in solution_blocks().items()},
        **{f"spec definition {k}": v for k, v in spec_definitions().items()},
    }
    found = [f"{what} in {name}" for what, needle in needles.items() for name, text in texts.items() if needle in text]
    for name in members:
        if name.startswith(("solutions/", "tests/", *(f"jaxlings/{folder}/" for folder in HIDDEN))):
            found.append(f"grader-only file {name}")
    for name, data in members.items():
        if name.endswith(".bin") and "/public/" in name:
            found += [f"{what} in {name}" for what in _hidden_in_recording(Path(name).stem, data)]
    return found


def _readable(name: str, data: bytes) -> str:
    """A member as text: notebooks by their cells' sources, anything else decoded."""
    text = data.decode("utf-8", "replace")
    if name.endswith(".ipynb"):
        try:
            return "\n".join(c.source for c in nbformat.reads(text, as_version=4).cells)
        except Exception:  # noqa: BLE001 - a malformed notebook is scanned as plain text
            return text
    return text


PUBLIC_REBUILT_RTOL = 1e-6
"""How far a recorded public instance may lie from the spec's, rebuilt here: a few float32 ulps
(the scan's machine may round a numpy matrix product's last bit otherwise than the recording's
did); a hidden instance is a fresh draw, nowhere near."""


def _alike(a: Any, b: Any) -> bool:
    """`same_args`, but float arrays equal within `PUBLIC_REBUILT_RTOL`."""
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype.kind in "fc":
        return a.dtype == b.dtype and a.shape == b.shape and bool(np.allclose(a, b, PUBLIC_REBUILT_RTOL, 0.0, True))
    if isinstance(a, (tuple, list)) and type(a) is type(b):
        return len(a) == len(b) and all(_alike(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_alike(a[k], b[k]) for k in a)
    return same_args(a, b)


def _hidden_in_recording(topic: str, data: bytes) -> list[str]:
    """Hidden cases that a recording's values hold (there must be none): hidden-only edge cases,
    and instances of an `Edge` family other than its public one (those are hidden grading's).
    Every value of the bytes is read, whatever an index says of them (`answers.blobs_in`)."""
    hidden_labels = {
        case.label
        for name in topics.ORDER
        for ex in topics.load(name).exercises
        for case in ex.edge_cases
        if case.hidden
    }
    shown: dict[str, list[tuple[Any, ...]]] = {}  # label -> the public instances of that label, this topic's
    families: dict[str, str] = {}  # an instance's label, public or hidden -> its family's
    if topic in topics.ORDER:
        for ex in topics.load(topic).exercises:
            for edge in ex.edge_cases:
                public = edge if isinstance(edge, Case) else edge.public
                shown.setdefault(edge.label, []).append(public.args)
                if isinstance(edge, Edge):
                    families[edge.label] = families[edge.hidden_label] = edge.label
    found = []
    try:
        blobs = list(blobs_in(data))
    except ValueError as exc:
        return [f"unreadable recorded values ({exc})"]
    for blob in blobs:
        for case in _cases_in(from_blob(blob)):
            if case.hidden or case.label in hidden_labels:
                found.append(f"hidden case {case.label!r}")
            elif (family := families.get(case.label)) is not None and not any(
                _alike(case.args, args) for args in shown[family]
            ):
                found.append(f"a hidden instance of edge case {family!r}")
    return found


def _cases_in(value: Any) -> Iterator[Case]:
    """Every case a recorded value holds, wherever it lies in it (a draw's list, a request)."""
    if isinstance(value, Case):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _cases_in(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _cases_in(item)


def main() -> None:
    """`python -m jaxlings.course.dist [OUT_DIR]`: build, scan, print what was made."""
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "dist"
    try:
        built = build(out)
    except DistError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    for artifact in built:
        print(f"{artifact}  {artifact.stat().st_size / 1e6:.2f} MB, {len(_members(artifact))} files")


if __name__ == "__main__":
    main()

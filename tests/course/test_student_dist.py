"""The student package as a student gets it: built, installed into a fresh virtualenv with no
checkout on its path, `grade init`, then `grade check` / `hint` / `list` from it; nothing hidden
inside; and, check by check, the same verdicts as the full engine's public mode.

The fresh virtualenv sees this environment's third-party packages (jax, netket, ...) through a
path entry, without processing their `.pth` files, so the repo's editable install of
`jaxlings` is not importable there: only the wheel's copy is.

Verdicts are compared with the full engine's public mode (the live reference) on the stubs of
every topic and on one crafted submission of three topics; the solutions need no live run, as
`grade build` recorded the expectations from a live public run of them in which every check
passed (it refuses to record otherwise), so the package must pass them all, pending aside (by
default on four topics, `SOLUTION_TOPICS`). `JAXLINGS_FULL_SUITE=1` checks every topic's
solutions, compares them live too, and every crafted submission under tests/submissions/ (about
30 minutes on 2 cores).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from helpers.crafted import submission_source
from helpers.grading import EXERCISES, ROOT, SOLUTIONS, SUBMISSIONS, grade_dir
from helpers.service import BROKEN, course  # noqa: F401  (a course server on loopback, for `grade submit`)
from jaxlings.course import dist
from jaxlings.grading import engine, topics
from jaxlings.grading.results import Result

pytestmark = pytest.mark.slow

CRAFTED = {"at_updates": "one_fault_each", "static_args": "one_fault_each", "jit_basics": "one_fault_each"}
FULL = bool(os.environ.get("JAXLINGS_FULL_SUITE"))
SOLUTION_TOPICS = ("jit_basics", "sharding", "training", "debugging")
"""The topics whose solutions the installed package checks by default (every topic with
`JAXLINGS_FULL_SUITE=1`; `test_public` replays every topic's recording through the engine):
one plain, one with its own devices (XLA flags), one with the `trains` check, one with `prints`."""
ENVIRONMENT_PROBES = {"at_updates__attack_privileged", "at_updates__attack_read_grader"}
"""Attacks whose verdict depends on where they run (their privileges, the grader's files on
disk): the repo's unsandboxed engine has the solutions beside it, the student package has none.
tests/core/test_trust.py judges them under the hidden grader's sandbox."""


NOT_FOR_THE_BUILD = ("jax", "jaxlib", "flax", "optax", "orbax", "netket", "jupyterhub", "fastapi", "celery")
"""What the development environment has and the student package's build must not need
(`make student-dist` builds in .venv-dist, from requirements-dist.txt)."""


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    """The wheel and sdist, built as `make student-dist` builds them, in a process where none of
    `NOT_FOR_THE_BUILD` can be imported (a module set to None in sys.modules raises ImportError)."""
    out = tmp_path_factory.mktemp("dist")
    blocked = "; ".join(f"sys.modules[{name!r}] = None" for name in NOT_FOR_THE_BUILD)
    script = f"import sys; {blocked}; from jaxlings.course import dist; dist.main()"
    done = subprocess.run([sys.executable, "-c", script, str(out)], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    artifacts = sorted(out.iterdir())
    return {("wheel" if a.suffix == ".whl" else "sdist"): a for a in artifacts}


@pytest.fixture(scope="module")
def student(built, tmp_path_factory) -> Student:
    root = tmp_path_factory.mktemp("student")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    (site / "third_party.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(built["wheel"])], check=True
    )
    return Student(venv, root / "home")


class Student:
    """Commands run as a student would: the venv's `grade`, in their own folder, no checkout."""

    def __init__(self, venv: Path, home: Path) -> None:
        self.venv, self.home = venv, home
        home.mkdir(exist_ok=True)

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("JAXLINGS_", "PYTHON", "VIRTUAL_ENV"))}
        env["PATH"] = f"{self.venv / 'bin'}:{env.get('PATH', '')}"
        env["HOME"] = str(self.home)
        return env

    def run(self, *args: str, cwd: Path | None = None, check: bool = False) -> subprocess.CompletedProcess:
        done = subprocess.run(
            [str(self.venv / "bin" / args[0]), *args[1:]],
            cwd=cwd or self.home,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=900,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"{args} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
        return done


def test_the_package_holds_no_solution_no_spec_and_no_hidden_case(built):
    assert set(built) == {"wheel", "sdist"}
    for artifact in built.values():
        assert dist.leaks(artifact) == [], artifact
    names = zipfile.ZipFile(built["wheel"]).namelist()
    assert "jaxlings/grading/topics.py" in names and {"jaxlings/public/prng.json", "jaxlings/public/prng.bin"} <= set(
        names
    )
    assert "jaxlings/student_files/notebooks/prng.ipynb" in names
    assert not [n for n in names if n.startswith(("solutions/", "jaxlings/course/", "tests/"))]
    assert not [n for n in names if n.startswith("jaxlings/specs/") and not n.endswith("__init__.py")]


def test_make_student_dist_builds_in_an_environment_of_its_own(tmp_path):
    """Not the development environment (182 s and several GB with JAX, NetKet and JupyterHub):
    .venv-dist from requirements-dist.txt, which names none of `NOT_FOR_THE_BUILD`."""
    plan = subprocess.run(
        ["make", "-n", "-B", "student-dist", f"DIST_VENV={tmp_path / 'venv'}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "requirements-dist.txt" in plan and "jaxlings.course.dist dist" in plan, plan
    assert '-e ".[test]"' not in plan and "/.venv/bin/" not in plan, plan  # the development venv is not made
    wanted = (ROOT / "requirements-dist.txt").read_text().lower()
    assert not [name for name in NOT_FOR_THE_BUILD if f"\n{name}" in wanted], wanted


def test_a_student_s_jupyterlab_comes_without_nbgrader(built):
    """`[notebook]` is JupyterLab and a kernel; nbgrader, whose instructor menus (Create
    Assignment, Formgrader, Validate) appear in any JupyterLab it is installed beside, comes only
    with `[hub]`, for the course's JupyterHub (docs/jupyterhub.md)."""
    wheel = zipfile.ZipFile(built["wheel"])
    metadata = wheel.read(next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))).decode()
    requires = [line.split(":", 1)[1].strip() for line in metadata.splitlines() if line.startswith("Requires-Dist:")]

    def extra(name: str) -> list[str]:
        return [r.split(";")[0].strip() for r in requires if f'extra == "{name}"' in r]

    assert any(r.startswith("jupyterlab") for r in extra("notebook")), requires
    assert not any(r.startswith("nbgrader") for r in extra("notebook")), requires
    assert [r for r in extra("hub") if r.startswith("nbgrader")], requires
    assert not any(r.startswith("nbgrader") for r in requires if "extra ==" not in r), requires


@pytest.mark.filterwarnings("ignore:Duplicate name")  # a plant replaces a packaged file on purpose
def test_the_leak_scan_finds_a_planted_solution_a_spec_and_a_hidden_case(built, tmp_path):
    """The scan is what stands between the repo and the students: each kind of leak is caught."""
    block = next(iter(dist.solution_blocks().values()))
    hidden = next(ex for n in topics.ORDER for ex in topics.load(n).exercises if any(c.hidden for c in ex.edge_cases))
    case = next(c for c in hidden.edge_cases if c.hidden)
    from jaxlings.grading import answers

    _, recorded = answers.Recording(draws={"k": answers.to_blob([[case], "{}"])}).pack()
    plants = {
        "block": ("jaxlings/student/report.py", f"# indented as a student would copy it\n    {block}\n"),
        "spec": ("jaxlings/specs/prng.py", (dist.ROOT / "jaxlings" / "specs" / "prng.py").read_text()),
        "solution": ("solutions/prng.py", "x = 1\n"),
        "hidden case": ("jaxlings/public/extra.bin", recorded),
    }
    for what, (name, text) in plants.items():
        planted = tmp_path / f"{what.replace(' ', '_')}.whl"
        shutil.copyfile(built["wheel"], planted)
        with zipfile.ZipFile(planted, "a") as zf:
            zf.writestr(name, text)
        assert dist.leaks(planted), what


def test_grade_init_lays_out_a_workspace_and_never_overwrites_work(student):
    ws = student.home / "course"
    student.run("grade", "init", str(ws), check=True)
    for name in topics.ORDER:
        assert (ws / "exercises" / f"{name}.py").read_text() == (EXERCISES / f"{name}.py").read_text()
        assert (ws / "lessons" / f"{name}.md").is_file() and (ws / "notebooks" / f"{name}.ipynb").is_file()
    assert (ws / "README.md").is_file() and (ws / ".jaxlings").is_dir()
    (ws / "exercises" / "prng.py").write_text("# my work\n")
    (ws / "lessons" / "loops.md").unlink()
    again = student.run("grade", "init", str(ws), check=True)
    assert (ws / "exercises" / "prng.py").read_text() == "# my work\n"
    assert (ws / "lessons" / "loops.md").is_file() and "kept" in again.stdout
    (ws / "exercises" / "prng.py").write_text((EXERCISES / "prng.py").read_text())


def test_the_students_commands_work_from_the_package(student):
    where = student.run("python", "-c", "import jaxlings, sys; print(jaxlings.__file__)", check=True).stdout
    assert str(student.venv) in where
    assert student.run("python", "-c", "import jaxlings.specs.prng").returncode != 0
    hidden = student.run("python", "-c", "from jaxlings.grading import topics; topics.load('prng')")
    assert "the hidden grader of 'prng' is not installed here" in hidden.stderr, hidden.stderr
    ws = student.home / "course"
    student.run("grade", "init", str(ws), check=True)
    hint = student.run("grade", "hint", "prng.dropout", cwd=ws, check=True).stdout
    assert "hint 1/" in hint
    listing = student.run("grade", "list", cwd=ws, check=True).stdout
    assert "derive_keys" in listing
    helped = student.run("grade", "--help", cwd=ws, check=True).stdout
    assert "check" in helped and "init" in helped and " build " not in helped
    refused = student.run("grade", "grade", "exercises", cwd=ws)
    assert refused.returncode != 0


def _package_check(student: Student, folder: Path, names: list[str], json_path: Path) -> dict[str, dict]:
    done = student.run("grade", "check", *names, "--dir", str(folder), "--json", str(json_path), cwd=student.home)
    assert done.returncode in (0, 1), done.stdout[-2000:] + done.stderr[-2000:]
    return {t["name"]: t for t in json.loads(json_path.read_text())["tests"]}


def _assert_same_verdicts(engine_result, package: dict[str, dict], what: str) -> None:
    assert set(package) == {t.name for t in engine_result.tests}, what
    for t in engine_result.tests:
        p = package[t.name]
        assert bool(p["extra_data"].get("pending")) == t.pending, (what, t.name)
        if t.pending:
            continue
        assert (p["score"], p["status"]) == (t.score, t.status), (what, t.name, t.output, p["output"])


def _submissions() -> list[tuple[str, dict[str, Path]]]:
    """(label, topic -> module) for every comparison with the live engine the suite runs."""
    subs = [("stubs", {n: EXERCISES / f"{n}.py" for n in topics.ORDER})]
    if FULL:
        subs.append(("solutions", {n: SOLUTIONS / f"{n}.py" for n in topics.ORDER}))
        for path in sorted(SUBMISSIONS.glob("*__*.py")):
            if path.stem in ENVIRONMENT_PROBES:
                continue
            topic, variant = path.stem.split("__", 1)
            subs.append((f"{topic}__{variant}", {topic: path}))
    else:
        subs.append(("crafted", {t: SUBMISSIONS / f"{t}__{v}.py" for t, v in CRAFTED.items()}))
    return subs


def test_the_package_passes_the_solutions_on_every_check_it_can_judge(student, tmp_path):
    """The recording was made from a live public run of these very solutions, every check
    passed (`expectations.record` refuses otherwise; `test_public` keeps it current)."""
    names = list(topics.ORDER) if FULL else list(SOLUTION_TOPICS)
    package = _package_check(student, SOLUTIONS, names, tmp_path / "results.json")
    assert {n.split(".")[0] for n in package} == set(names)
    for name, test in package.items():
        assert test["status"] == "passed" or test["extra_data"].get("pending"), (name, test["output"])
    assert any(t["extra_data"].get("pending") for t in package.values())


@pytest.mark.parametrize("label, modules", _submissions(), ids=[label for label, _ in _submissions()])
def test_the_package_gives_the_engines_public_verdicts(student, tmp_path, crafted_public, label, modules):
    folder = tmp_path / "submission"
    folder.mkdir()
    for topic, path in modules.items():
        (folder / f"{topic}.py").write_text(submission_source(path))
    if all(
        path.parent == SUBMISSIONS for path in modules.values()
    ):  # graded once a run, tests/student/test_messages too
        graded = [crafted_public(path.stem) for path in modules.values()]
        engine_result = Result([t for r in graded for t in r.tests], sum(r.execution_time for r in graded), {})
    else:
        engine_result = grade_dir(folder, list(modules), public=True, jobs=engine.default_jobs())
    package = _package_check(student, folder, list(modules), tmp_path / "results.json")
    _assert_same_verdicts(engine_result, package, label)


def test_a_released_notebook_grades_in_the_packages_kernel_with_no_solutions(student, tmp_path, monkeypatch):
    """The notebook student's loop, in a kernel of the student's environment (nothing of the
    repo on its path): the public grade cells grade from the public expectations; a grade cell
    run before the setup cell works; errors name the student's cell; the notebook's hint works."""
    import nbformat
    from nbclient import NotebookClient

    spec_dir = tmp_path / "jupyter" / "kernels" / "student"
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [str(student.venv / "bin" / "python"), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "student",
                "language": "python",
                "env": {"PYTHONPATH": "", "JAXLINGS_SOLUTIONS": "/nonexistent"},
            }
        )
    )
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    ws = student.home / "nb"
    student.run("grade", "init", str(ws), check=True)
    nb = nbformat.read(ws / "notebooks" / "at_updates.ipynb", as_version=4)
    source = nbformat.read(dist.ROOT / "course" / "source" / "at_updates" / "at_updates.ipynb", as_version=4)
    assert "BEGIN HIDDEN TESTS" not in json.dumps(nb) and "BEGIN SOLUTION" not in json.dumps(nb)
    answers = {c.id: c for c in nb.cells}
    answers["scatter_ops"].source = next(c.source for c in source.cells if c.id == "scatter_ops")
    answers["histogram"].source = "def histogram(x, nbins):\n    counts = None\n    raise ValueError('boom')"
    early = nbformat.v4.new_code_cell(answers["scatter_ops-correct"].source)
    early.id = "early"
    hint = nbformat.v4.new_code_cell('jaxlings.hint("histogram")')
    hint.id = "hint"
    nb.cells = [early] + nb.cells + [hint]
    NotebookClient(
        nb,
        timeout=600,
        kernel_name="student",
        allow_errors=True,
        resources={"metadata": {"path": str(ws / "notebooks")}},
    ).execute()

    def output(cell_id: str) -> tuple[str, str]:
        cell = next(c for c in nb.cells if c.id == cell_id)
        assert not [o for o in cell.outputs if o.output_type == "error"], (cell_id, cell.outputs)
        shown = "".join(o.data["text/plain"] for o in cell.outputs if o.output_type == "display_data")
        result = next((o.data["text/plain"] for o in cell.outputs if o.output_type == "execute_result"), "")
        return shown, result  # the box's plain-text twin (its HTML: tests/course/test_notebook_feedback.py)

    text, points = output("early")  # before the setup cell: not a NameError, the stub's verdict
    assert text.startswith("FAILED at_updates.scatter_ops:correct") and "not implemented" in text
    text, points = output("scatter_ops-correct")
    assert "[public cases] 2/2" in text and points == "2.0" and "NOT GRADED" not in text
    text, _ = output("histogram-correct")
    assert text.startswith("FAILED at_updates.histogram:correct") and "ValueError: boom" in text
    assert "cell In [" in text and "line 3" in text, text
    text, _ = output("histogram-speed")
    assert "not judged until the function is correct" in text
    text, _ = output("hint")
    assert "at_updates.histogram hint 1/" in text


def test_nbgraders_validate_passes_with_the_hubs_settings(student, tmp_path, monkeypatch):
    """The Assignments tab's Validate button, as a student on the hub presses it: nbgrader runs
    the whole notebook in the student's kernel with course/hub/nbgrader_config.py, whose cell
    timeout leaves room for grade cells (nbgrader's default of 30 s does not)."""
    import nbformat
    from traitlets.config import PyFileConfigLoader

    hub_config = dist.ROOT / "course" / "hub" / "nbgrader_config.py"
    assert PyFileConfigLoader(hub_config.name, str(hub_config.parent)).load_config().Execute.timeout >= 600
    spec_dir = tmp_path / "jupyter" / "kernels" / "student"
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [str(student.venv / "bin" / "python"), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "student",
                "language": "python",
                "env": {"PYTHONPATH": ""},
            }
        )
    )
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    ws = student.home / "validate"
    student.run("grade", "init", str(ws), check=True)
    nb = nbformat.read(ws / "notebooks" / "at_updates.ipynb", as_version=4)
    source = {
        c.id: c
        for c in nbformat.read(dist.ROOT / "course" / "source" / "at_updates" / "at_updates.ipynb", as_version=4).cells
    }
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("solution"):
            cell.source = "\n".join(
                line
                for line in source[cell.id].source.splitlines()
                if line.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION")
            )
    nb.metadata.kernelspec = {"name": "student", "display_name": "student", "language": "python"}
    folder = tmp_path / "work"
    folder.mkdir()
    nbformat.write(nb, folder / "at_updates.ipynb")
    (folder / "nbgrader_config.py").write_text(hub_config.read_text().replace("/srv/nbgrader/exchange", str(tmp_path)))
    done = subprocess.run(
        [str(Path(sys.executable).parent / "nbgrader"), "validate", "at_updates.ipynb"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "JUPYTER_PATH": str(tmp_path / "jupyter")},
    )
    assert "Success! Your notebook passes all the tests." in done.stdout, done.stdout[-3000:] + done.stderr[-3000:]


def test_the_student_packages_grade_submits_to_the_service(course, student, tmp_path):
    """`grade login`, `grade submit --wait`, `grade result` and `grade submissions` from the
    package, against `grade serve` and a `grade worker` of the repo (the grader's side) on
    loopback; the package's server commands say they belong on the grading server."""
    course.serve()
    course.worker()
    work = tmp_path / "work"
    (work / "exercises").mkdir(parents=True)
    (work / "exercises" / "prng.py").write_text(BROKEN)
    (work / "exercises" / "at_updates.py").write_text((SOLUTIONS / "at_updates.py").read_text())
    token = course.token("kim")
    logged = student.run("grade", "login", "--server", course.url, "--token", token, cwd=work)
    assert logged.returncode == 0 and "kim" in logged.stdout, logged.stdout + logged.stderr
    done = student.run("grade", "submit", "prng", "--wait", cwd=work)
    assert done.returncode == 0 and "Total: 0 / 19" in done.stdout, done.stdout + done.stderr
    sub = done.stdout.split("submission ")[1].split(":")[0]
    assert "Total: 0 / 19" in student.run("grade", "result", sub, cwd=work).stdout
    assert sub in student.run("grade", "submissions", cwd=work).stdout
    served = student.run("grade", "serve", cwd=work)
    assert served.returncode == 2 and "runs on the grading server" in served.stdout, served.stdout + served.stderr

"""A topic's two copies in a workspace: `exercises/<topic>.py` and `notebooks/<topic>.ipynb`.

The commands (`grade check`, `grade list`, `grade watch`, `grade submit`) read the topic file.
A student may answer in the notebook instead, where none of them looks. So they compare the
two, exercise by exercise (`compare`), and say where they part (`Divergence.notice`): the
notebook's answers the file does not hold, and the exercises answered differently in both.
`grade take-notebook TOPIC` copies the notebook's answers into the topic file (`take`), the
file as it was kept first in `.jaxlings/backups/`: nothing typed in either is lost, and what
is graded is one file.

An answer is what the notebook's latest code cell defining the exercise holds, the whole cell
(its imports and helpers with it), as the notebook's own grade cells assemble it
(`jaxlings.student.notebook.assemble`); it counts where its definition is no stub
(`jaxlings.grading.stubs`) and differs from the file's in what the code says.
"""

from __future__ import annotations

import ast
import datetime as dt
import json
from dataclasses import dataclass, field
from pathlib import Path

from jaxlings.grading import paths, stubs, topics
from jaxlings.grading.source import functions, parse
from jaxlings.student.notebook import assemble, top_level_names

BACKUPS = "backups"  # under the workspace's state folder (`paths.state_dir`)


@dataclass(frozen=True)
class Divergence:
    """Where a topic's notebook holds answers its file does not: `missing` (the file still has
    the stub there), `different` (both answered, differently); `notebook` and `file` as shown."""

    topic: str
    notebook: str
    file: str
    missing: tuple[str, ...]
    different: tuple[str, ...]
    cells: tuple[str, ...] = field(default=(), repr=False, compare=False)  # the notebook as read, for `take`

    def notice(self) -> str:
        """What the student reads (one line per kind of difference, and what to do)."""
        parts = []
        if self.missing:
            parts.append(f"{self.notebook} answers {_names(self.missing)}, which {self.file} does not")
        if self.different:
            parts.append(f"{self.notebook} and {self.file} answer {_names(self.different)} differently")
        return (
            "; ".join(parts) + f". The commands read {self.file}: `grade take-notebook {self.topic}` copies the "
            f"notebook's answers into it (the file as it is now is kept in .jaxlings/{BACKUPS}/ first)."
        )


def _names(names: tuple[str, ...]) -> str:
    return ", ".join(f"`{n}`" for n in names)


def _definitions(source: str) -> dict[str, str]:
    """Each top-level function's source as written (the last definition of a name), by name."""
    lines = source.splitlines()
    found = {}
    for fn in functions(parse(source)):
        first = min([fn.node.lineno, *(d.lineno for d in fn.node.decorator_list)])
        found[fn.name] = "\n".join(line.rstrip() for line in lines[first - 1 : fn.node.end_lineno]).strip()
    return found


def _same(a: str | None, b: str | None) -> bool:
    """Two definitions alike but for comments and layout (docstrings count: they are the stub's)."""
    if a is None or b is None:
        return a == b
    try:
        return ast.dump(ast.parse(a)) == ast.dump(ast.parse(b))
    except SyntaxError:
        return a == b


def notebook_cells(path: Path) -> list[str]:
    """The notebook's code cells' sources, in order; [] for a notebook that cannot be read."""
    try:
        return notebook_cells_of(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return []


def notebook_cells_of(text: str) -> list[str]:
    """`notebook_cells` of a notebook's text; [] for one that is not a notebook."""
    try:
        document = json.loads(text)
    except ValueError:
        return []
    cells = document.get("cells") if isinstance(document, dict) else None
    out = []
    for cell in cells if isinstance(cells, list) else []:
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            source = cell.get("source", "")
            out.append("".join(source) if isinstance(source, list) else str(source))
    return out


def notebook_answers(cells: list[str], exercises: list[str]) -> dict[str, str]:
    """Per exercise, the latest cell defining it (the whole cell): the notebook's answer."""
    answers = {}
    for cell in cells:
        for name in top_level_names(cell) & set(exercises):
            answers[name] = cell
    return answers


def compare(exercises_dir: Path, topic: str) -> Divergence | None:
    """How `topic`'s file in `exercises_dir` and its notebook beside that folder
    (`../notebooks/`) part, or None where they agree (or either is missing, or the notebook
    answers nothing)."""
    notebook = exercises_dir.parent / "notebooks" / f"{topic}.ipynb"
    file = exercises_dir / f"{topic}.py"
    if not (notebook.is_file() and file.is_file()):
        return None
    names = [e.name for e in topics.load_public(topic).exercises]
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    mine, unwritten = _definitions(text), stubs.find(text, names)
    cells = notebook_cells(notebook)
    answered = notebook_answers(cells, names)
    # the notebook's module as its grade cells build it: the stub, each answered exercise replaced
    module = assemble((paths.exercises_dir() / f"{topic}.py").read_text(), list(answered.values()), names)
    theirs, still_stubs = _definitions(module), stubs.find(module, names)
    missing: list[str] = []
    different: list[str] = []
    for name in answered:
        if name in still_stubs or _same(theirs.get(name), mine.get(name)):
            continue  # still the notebook's stub, or the file's own answer
        (missing if name in unwritten or name not in mine else different).append(name)
    if not missing and not different:
        return None
    order = {name: i for i, name in enumerate(names)}
    return Divergence(
        topic,
        f"notebooks/{topic}.ipynb",
        f"{exercises_dir.name}/{topic}.py",
        tuple(sorted(missing, key=order.__getitem__)),
        tuple(sorted(different, key=order.__getitem__)),
        tuple(cells),
    )


def notices(exercises_dir: Path, names: list[str] | None = None) -> list[str]:
    """The notice of every topic (of `names`, topics or TOPIC.EXERCISE, else all) whose notebook
    parts from its file in `exercises_dir`."""
    wanted = {n.split(".")[0] for n in names} if names else set(topics.ORDER)
    found = [compare(exercises_dir, t) for t in topics.ORDER if t in wanted]
    return [d.notice() for d in found if d is not None]


def take(exercises_dir: Path, topic: str) -> tuple[list[str], Path | None]:
    """Copy the notebook's answers that part from the topic file in `exercises_dir` into it, the
    file kept first in the workspace's backups; (the exercises copied, the backup), ([], None)
    where none parts."""
    found = compare(exercises_dir, topic)
    if found is None:
        return [], None
    file = exercises_dir / f"{topic}.py"
    names = [*found.missing, *found.different]
    before = file.read_text(encoding="utf-8")
    backups = paths.state_dir(exercises_dir.parent) / BACKUPS
    backups.mkdir(parents=True, exist_ok=True)
    backup = backups / f"{topic}-{dt.datetime.now():%Y%m%d-%H%M%S-%f}.py"
    backup.write_text(before, encoding="utf-8")
    file.write_text(assemble(before, list(found.cells), names), encoding="utf-8")  # the notebook as compared
    return names, backup

"""Opening a submission: a directory shaped like `exercises/`, or a .zip of one.

A zip is unpacked into a fresh temporary directory with every member checked: no absolute
paths, no `..`, no links, and a size cap, so a hostile archive cannot write outside it.
Topic files may sit at the top of the archive or inside one top-level folder.
"""

from __future__ import annotations

import contextlib
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

MAX_UNPACKED = 64 << 20


class SubmissionError(Exception):
    """The submission cannot be read at all (as opposed to a topic that fails)."""


@contextlib.contextmanager
def open_submission(path: Path) -> Iterator[Path]:
    """Yield the directory that holds the submission's `<topic>.py` files."""
    path = Path(path)
    if path.is_dir():
        yield path
        return
    if not path.exists():
        raise SubmissionError(f"no such submission: {path}")
    if not zipfile.is_zipfile(path):
        raise SubmissionError(f"{path} is neither a directory nor a .zip archive")
    with tempfile.TemporaryDirectory(prefix="jaxlings-sub-") as tmp:
        yield _find_root(_unzip(path, Path(tmp)))


def _unzip(archive: Path, dest: Path) -> Path:
    with zipfile.ZipFile(archive) as zf:
        members = zf.infolist()
        if sum(m.file_size for m in members) > MAX_UNPACKED:
            raise SubmissionError(f"{archive} unpacks to more than {MAX_UNPACKED >> 20} MiB")
        for m in members:
            name = Path(m.filename)
            if name.is_absolute() or ".." in name.parts or (m.external_attr >> 16) & 0o170000 == 0o120000:
                raise SubmissionError(f"{archive} holds an unsafe member: {m.filename}")
        zf.extractall(dest)
    return dest


def _find_root(dest: Path) -> Path:
    """The archive's top level, or its single folder when it holds nothing else."""
    if any(dest.glob("*.py")):
        return dest
    entries = [p for p in dest.iterdir() if not p.name.startswith(("__MACOSX", "."))]
    if len(entries) == 1 and entries[0].is_dir():
        return entries[0]
    return dest

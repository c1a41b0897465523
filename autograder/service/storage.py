"""Checking an uploaded zip and storing it, all before the API replies.

An upload is refused with a message naming the problem when it is not a zip, is too big,
unpacks too big or too fast (a bomb), holds a path that escapes (zip-slip), a link, or anything
but `<topic>.py` files (at the top or in one folder). What is kept is a canonical zip of the
topic files (sorted, fixed timestamps), whose SHA-256 is the content hash: the same files
re-zipped give the same hash, so a re-sent submission is the same submission.
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

MAX_RATIO = 100          # compression ratio beyond which a member is a bomb
SMALL = 64 << 10         # members smaller than this unpack fast whatever their ratio
EPOCH = (1980, 1, 1, 0, 0, 0)


class UploadError(Exception):
    """A refused upload; `status` is the HTTP status to answer with."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Checked:
    """An accepted upload: its topic files, canonical zip bytes and their hash."""

    files: dict[str, bytes]
    data: bytes
    digest: str


def check_upload(raw: bytes, known_topics: tuple[str, ...], *, max_bytes: int, max_unpacked: int) -> Checked:
    """The topic files of an uploaded zip, or an UploadError saying what is wrong with it."""
    if len(raw) > max_bytes:
        raise UploadError(f"the upload is {len(raw)} bytes; the limit is {max_bytes} bytes", 413)
    if not raw:
        raise UploadError("the upload is empty; send a .zip of your <topic>.py files")
    try:
        archive = zipfile.ZipFile(io.BytesIO(raw))
        members = [m for m in archive.infolist() if not m.is_dir()]
    except (zipfile.BadZipFile, ValueError, OSError):
        raise UploadError("the upload is not a zip archive") from None
    with archive:
        names = {m.filename: _topic_of(m, known_topics) for m in members}
        _check_sizes(members, max_unpacked)
        files = {topic: _read(archive, m, max_unpacked) for m, topic in zip(members, names.values())}
    if len(files) != len(members):
        raise UploadError("the zip holds the same topic file twice")
    if not files:
        raise UploadError(f"the zip holds no topic files; expected some of: {', '.join(f'{t}.py' for t in known_topics)}")
    data = canonical_zip(files)
    return Checked(files, data, hashlib.sha256(data).hexdigest())


def _topic_of(member: zipfile.ZipInfo, known_topics: tuple[str, ...]) -> str:
    """The topic a member is the file of; refuses unsafe paths, links and non-topic files."""
    path = PurePosixPath(member.filename.replace("\\", "/"))
    if member.filename.startswith(("/", "\\")) or ".." in path.parts or ":" in member.filename:
        raise UploadError(f"unsafe path in the zip: {member.filename!r} (absolute or escaping with ..)")
    if stat.S_ISLNK(member.external_attr >> 16):
        raise UploadError(f"the zip holds a link: {member.filename!r}; send plain files")
    if len(path.parts) > 2 or path.suffix != ".py" or path.stem not in known_topics:
        raise UploadError(f"the zip holds {member.filename!r}, which is not a topic file; only <topic>.py "
                          f"files are accepted, topics: {', '.join(known_topics)}")
    return path.stem


def _check_sizes(members: list[zipfile.ZipInfo], max_unpacked: int) -> None:
    """Refuse archives whose declared sizes are too big or compress implausibly well."""
    total = sum(m.file_size for m in members)
    if total > max_unpacked:
        raise UploadError(f"the zip unpacks to {total} bytes; the limit is {max_unpacked} bytes", 413)
    for m in members:
        if m.file_size > SMALL and m.file_size > MAX_RATIO * max(m.compress_size, 1):
            raise UploadError(f"{m.filename!r} expands {m.file_size // max(m.compress_size, 1)}-fold: refused as a zip bomb")


def _read(archive: zipfile.ZipFile, member: zipfile.ZipInfo, max_unpacked: int) -> bytes:
    """A member's bytes, reading no more than the limit whatever its header claims."""
    try:
        with archive.open(member) as f:
            data = f.read(max_unpacked + 1)
    except (zipfile.BadZipFile, NotImplementedError, RuntimeError, OSError, EOFError) as exc:
        raise UploadError(f"cannot read {member.filename!r} from the zip: {exc}") from None
    if len(data) > max_unpacked:
        raise UploadError(f"{member.filename!r} unpacks past the limit of {max_unpacked} bytes", 413)
    return data


def canonical_zip(files: dict[str, bytes]) -> bytes:
    """The one zip of these topic files: sorted names, fixed timestamps, deflated."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for topic in sorted(files):
            info = zipfile.ZipInfo(f"{topic}.py", EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, files[topic])
    return buffer.getvalue()


def keep_file(data_dir: Path, digest: str, data: bytes) -> Path:
    """Write the upload to <data_dir>/uploads/<hash>.zip durably (fsync, then rename)."""
    folder = Path(data_dir) / "uploads"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{digest}.zip"
    if path.exists():
        return path
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{digest}.", suffix=".tmp")   # one per writer: the same
    with os.fdopen(fd, "wb") as f:                                                 # content may come twice at once
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return path

"""Checking an uploaded zip and storing it, all before the API replies.

An upload is refused with a message naming the problem when it is not a zip, is too big,
unpacks too big or too fast (a bomb), holds a path that escapes (zip-slip), a link, or anything
but `<topic>.py` files (at the top or in one folder). What is kept is a canonical zip of the
topic files (sorted, fixed timestamps), whose SHA-256 is the content hash: the same files
re-zipped give the same hash, so a re-sent submission is the same submission. That zip is what
is stored (once, in the database), so it too must fit in the upload limit: a small LZMA upload
does not become a large stored one. A member that cannot be read (corrupt data, bad CRC,
encrypted, an unsupported compression) is a 400 naming it, never a 500.

`secure_data_dir` makes the data folder and the embedded SQLite files private to the service's
user (0700 / 0600) before anything opens them; `ready` does that and brings the schema up to date,
before a command works on the database.
"""

from __future__ import annotations

import hashlib
import io
import lzma
import os
import stat
import struct
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

MAX_RATIO = 100  # compression ratio beyond which a member is a bomb
SMALL = 64 << 10  # members smaller than this unpack fast whatever their ratio
EPOCH = (1980, 1, 1, 0, 0, 0)
# what reading a hostile archive or member raises: zipfile's own errors, and those of the decompressors
# (deflate: zlib.error; bzip2: OSError, EOFError; LZMA: lzma.LZMAError), encryption (RuntimeError),
# unsupported methods (NotImplementedError), bad names (UnicodeDecodeError, a ValueError), short headers
ZIP_ERRORS = (
    zipfile.BadZipFile,
    zlib.error,
    lzma.LZMAError,
    OSError,
    EOFError,
    RuntimeError,
    NotImplementedError,
    ValueError,
    struct.error,
    MemoryError,
)


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
    except ZIP_ERRORS:
        raise UploadError(
            "the upload is not a zip archive (or its directory is corrupt); zip your files again"
        ) from None
    with archive:
        names = {m.filename: _topic_of(m, known_topics) for m in members}
        _check_sizes(members, max_unpacked)
        files = {topic: _read(archive, m, max_unpacked) for m, topic in zip(members, names.values())}
    if len(files) != len(members):
        raise UploadError("the zip holds the same topic file twice")
    if not files:
        raise UploadError(
            f"the zip holds no topic files; expected some of: {', '.join(f'{t}.py' for t in known_topics)}"
        )
    data = canonical_zip(files)
    if len(data) > max_bytes:
        raise UploadError(
            f"the files take {len(data)} bytes stored (re-zipped with deflate); the limit is {max_bytes} "
            "bytes: send smaller files",
            413,
        )
    return Checked(files, data, hashlib.sha256(data).hexdigest())


def _topic_of(member: zipfile.ZipInfo, known_topics: tuple[str, ...]) -> str:
    """The topic a member is the file of; refuses unsafe paths, links and non-topic files."""
    path = PurePosixPath(member.filename.replace("\\", "/"))
    if member.filename.startswith(("/", "\\")) or ".." in path.parts or ":" in member.filename:
        raise UploadError(f"unsafe path in the zip: {member.filename!r} (absolute or escaping with ..)")
    if stat.S_ISLNK(member.external_attr >> 16):
        raise UploadError(f"the zip holds a link: {member.filename!r}; send plain files")
    if len(path.parts) > 2 or path.suffix != ".py" or path.stem not in known_topics:
        raise UploadError(
            f"the zip holds {member.filename!r}, which is not a topic file; only <topic>.py "
            f"files are accepted, topics: {', '.join(known_topics)}"
        )
    return path.stem


def _check_sizes(members: list[zipfile.ZipInfo], max_unpacked: int) -> None:
    """Refuse archives whose declared sizes are too big or compress implausibly well."""
    total = sum(m.file_size for m in members)
    if total > max_unpacked:
        raise UploadError(f"the zip unpacks to {total} bytes; the limit is {max_unpacked} bytes", 413)
    for m in members:
        if m.file_size > SMALL and m.file_size > MAX_RATIO * max(m.compress_size, 1):
            raise UploadError(
                f"{m.filename!r} expands {m.file_size // max(m.compress_size, 1)}-fold: refused as a zip bomb"
            )


def _read(archive: zipfile.ZipFile, member: zipfile.ZipInfo, max_unpacked: int) -> bytes:
    """A member's bytes, reading no more than the limit whatever its header claims."""
    try:
        with archive.open(member) as f:
            data = f.read(max_unpacked + 1)
    except ZIP_ERRORS as exc:
        raise UploadError(
            f"cannot read {member.filename!r} from the zip ({_why(exc)}); zip your files again "
            "with plain deflate and no password"
        ) from None
    if len(data) > max_unpacked:
        raise UploadError(f"{member.filename!r} unpacks past the limit of {max_unpacked} bytes", 413)
    return data


def _why(exc: Exception) -> str:
    """A member's read error in a few words (one line)."""
    if isinstance(exc, RuntimeError) and "encrypted" in str(exc):
        return "it is encrypted"
    if isinstance(exc, NotImplementedError):
        return "its compression method is not supported"
    if isinstance(exc, MemoryError):
        return "it needs too much memory to unpack"
    text = " ".join(str(exc).split())[:200]
    return f"corrupt: {text}" if text else f"corrupt ({type(exc).__name__})"


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


def ready(settings) -> None:
    """The data folder private (the roster is often the first thing to create the database), the schema current."""
    from jaxlings.service import db

    secure_data_dir(settings)
    db.upgrade(settings.db_url)


def secure_data_dir(settings) -> None:
    """Make the data folder 0700 and the embedded SQLite files in it 0600, before anything opens them.

    Under the usual umask 022 both would be world-readable (SQLite gives its -wal and -shm files the
    database file's mode, so creating the database file 0600 first covers them). A folder or file that
    exists is tightened when it is ours; only sqlite URLs that point inside the data folder are touched.
    """
    folder = Path(settings.data_dir).resolve()
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    _owner_only(folder, 0o700)
    for url in (settings.db_url, settings.celery_broker, settings.celery_backend):
        path = _sqlite_file(url)
        if path is None or not path.is_relative_to(folder):
            continue
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        for name in (path.name, path.name + ".migrate-lock"):
            try:
                os.close(os.open(path.with_name(name), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
            except FileExistsError:
                pass
        for suffix in ("", "-wal", "-shm", "-journal", ".migrate-lock"):
            _owner_only(path.with_name(path.name + suffix), 0o600)


def _sqlite_file(url: str) -> Path | None:
    """The database file of a SQLite URL (sqlite://, sqla+sqlite://, db+sqlite://), else None."""
    from sqlalchemy.engine import make_url

    try:
        parsed = make_url(url)
    except Exception:  # noqa: BLE001 - not a SQLAlchemy URL (redis://... parses; anything odd is not ours to touch)
        return None
    database = parsed.database
    if "sqlite" not in parsed.drivername.split("+") or database is None or database in ("", ":memory:"):
        return None
    return Path(database).resolve()


def _owner_only(path: Path, mode: int) -> None:
    """Drop the permission bits beyond `mode` from a path we own (a missing one is left alone)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return
    if st.st_uid == os.getuid() and stat.S_IMODE(st.st_mode) & ~mode:
        os.chmod(path, stat.S_IMODE(st.st_mode) & mode)

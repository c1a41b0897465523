"""Uploads and the data folder: unreadable zip members are 400s naming the member, what is stored
fits the upload limit, and the data folder and SQLite files are private (0700 / 0600).

Hostile zips are made by writing valid ones and corrupting their bytes; each is refused both by
`storage.check_upload` and by a real `grade serve`, and an honest zip of the same shape passes.
"""

from __future__ import annotations

import io
import os
import random
import stat
import string
import struct
import zipfile
from pathlib import Path

import pytest

from helpers.service import SOLUTIONS, api, course, post_zip, zip_of  # noqa: F401
from jaxlings.service import config, storage

TOPICS = ("prng", "pytrees")
LIMITS = {"max_bytes": 1 << 20, "max_unpacked": 4 << 20}
SOURCE = (SOLUTIONS / "prng.py").read_bytes()


def one_member(method: int, data: bytes = SOURCE, name: str = "prng.py") -> bytearray:
    """A valid zip of one member compressed with `method`, as mutable bytes."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as archive:
        archive.writestr(name, data)
    return bytearray(buffer.getvalue())


def data_start(raw: bytearray) -> int:
    """Where the first member's compressed data begins (after its local header)."""
    name_len, extra_len = struct.unpack("<HH", raw[26:30])
    return 30 + name_len + extra_len


def central(raw: bytearray) -> int:
    """Where the central directory's first entry begins."""
    return raw.index(b"PK\x01\x02")


def corrupt_deflate() -> bytes:
    raw = one_member(zipfile.ZIP_DEFLATED)
    raw[data_start(raw)] = 0xFF  # block type 3: reserved, zlib.error
    return bytes(raw)


def corrupt_lzma() -> bytes:
    raw = one_member(zipfile.ZIP_LZMA)
    at = data_start(raw) + 4 + 5  # past zip's LZMA header and the 5 property bytes
    raw[at : at + 8] = b"\xff" * 8  # lzma.LZMAError
    return bytes(raw)


def corrupt_bzip2() -> bytes:
    raw = one_member(zipfile.ZIP_BZIP2)
    raw[data_start(raw) : data_start(raw) + 4] = b"XXXX"  # not "BZh9": OSError
    return bytes(raw)


def bad_crc() -> bytes:
    raw = one_member(zipfile.ZIP_STORED)
    raw[data_start(raw) + 5] ^= 0x01  # one bit of the stored data: BadZipFile (CRC)
    return bytes(raw)


def unsupported_method() -> bytes:
    raw = one_member(zipfile.ZIP_DEFLATED)
    at = central(raw)
    raw[8:10] = raw[at + 10 : at + 12] = struct.pack("<H", 97)  # WavPack: NotImplementedError
    return bytes(raw)


def encrypted() -> bytes:
    raw = one_member(zipfile.ZIP_DEFLATED)
    raw[6] |= 1  # the "encrypted" flag, local and central: RuntimeError
    raw[central(raw) + 8] |= 1
    return bytes(raw)


HOSTILE = {
    "corrupt deflate": corrupt_deflate,
    "corrupt LZMA": corrupt_lzma,
    "corrupt bzip2": corrupt_bzip2,
    "bad CRC": bad_crc,
    "unsupported method": unsupported_method,
    "encrypted": encrypted,
}
REASON = {
    "unsupported method": "compression method is not supported",
    "encrypted": "encrypted",
    "bad CRC": "Bad CRC-32",
}


@pytest.mark.parametrize("kind", HOSTILE)
def test_an_unreadable_member_is_a_400_naming_it(kind):
    with pytest.raises(storage.UploadError) as refused:
        storage.check_upload(HOSTILE[kind](), TOPICS, **LIMITS)
    assert refused.value.status == 400
    message = str(refused.value)
    assert "'prng.py'" in message and "\n" not in message
    assert REASON.get(kind, "corrupt") in message


@pytest.mark.parametrize("method", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA])
def test_the_same_zips_uncorrupted_are_accepted_alike(method):
    checked = storage.check_upload(bytes(one_member(method)), TOPICS, **LIMITS)
    assert checked.files == {"prng": SOURCE}
    assert checked.data == storage.canonical_zip({"prng": SOURCE})  # one stored form whatever was sent


def lzma_amplifier(repeats: int = 60) -> tuple[bytes, bytes]:
    """(upload, its file): 64 KiB of random text repeated; LZMA sees the repeats, deflate's 32 KiB window does not."""
    rng = random.Random(27)
    block = "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(64 << 10)).encode()
    data = block * repeats
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_LZMA) as archive:
        archive.writestr("prng.py", data)
    return buffer.getvalue(), data


def test_what_is_stored_must_fit_the_upload_limit():
    raw, data = lzma_amplifier()
    stored = len(storage.canonical_zip({"prng": data}))
    assert len(raw) < LIMITS["max_bytes"] // 10 and stored > 2 * LIMITS["max_bytes"]  # the attack as it was
    with pytest.raises(storage.UploadError) as refused:
        storage.check_upload(raw, TOPICS, **LIMITS)
    assert refused.value.status == 413
    assert f"take {stored} bytes stored" in str(refused.value) and str(LIMITS["max_bytes"]) in str(refused.value)


def test_an_honest_lzma_upload_is_stored_within_the_limit():
    raw = bytes(one_member(zipfile.ZIP_LZMA))
    checked = storage.check_upload(raw, TOPICS, **LIMITS)
    assert len(checked.data) <= LIMITS["max_bytes"] and checked.files["prng"] == SOURCE


def test_the_server_refuses_each_bad_member_with_a_400_and_takes_an_honest_zip(course):
    course.serve()
    student = api(course, course.token("ada"))
    for kind, make in HOSTILE.items():
        reply = post_zip(student, make())
        assert reply.status_code == 400, (kind, reply.status_code, reply.text)
        assert "'prng.py'" in reply.json()["detail"], (kind, reply.text)
    amplified = post_zip(student, lzma_amplifier()[0])
    assert amplified.status_code == 413 and "bytes stored" in amplified.json()["detail"], amplified.text
    honest = post_zip(student, bytes(one_member(zipfile.ZIP_LZMA)))
    assert honest.status_code == 202, honest.text
    assert "Traceback" not in course.log("serve.log")
    assert not (course.data_dir / "uploads").exists()  # stored once, in the database only


# ---------------------------------------------------------------- the data folder


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def umask_022():
    """The usual umask, under which new files are world-readable (restored afterwards)."""
    old = os.umask(0o022)
    yield
    os.umask(old)


SQLITE_FILES = ("jaxlings.db", "broker.db", "celery-results.db")


def test_secure_data_dir_makes_the_folder_and_sqlite_files_private(tmp_path, umask_022):
    data = tmp_path / "data"
    data.mkdir()  # made earlier, world-readable
    (data / "jaxlings.db").write_bytes(b"")  # an existing database from before
    assert mode(data) == 0o755 and mode(data / "jaxlings.db") == 0o644
    storage.secure_data_dir(config.Settings(data_dir=data))
    assert mode(data) == 0o700
    assert {name: mode(data / name) for name in SQLITE_FILES} == dict.fromkeys(SQLITE_FILES, 384)
    fresh = tmp_path / "fresh" / "nested"
    storage.secure_data_dir(config.Settings(data_dir=fresh))
    assert mode(fresh) == 0o700 and mode(fresh / "jaxlings.db") == 0o600


def test_secure_data_dir_touches_only_sqlite_files_inside_the_folder(tmp_path, umask_022):
    elsewhere = tmp_path / "elsewhere.db"
    settings = config.Settings(
        data_dir=tmp_path / "data",
        database_url=f"sqlite:///{elsewhere}",
        broker_url="redis://127.0.0.1:6379/0",
        result_backend="redis://127.0.0.1:6379/1",
    )
    storage.secure_data_dir(settings)
    assert mode(tmp_path / "data") == 0o700
    assert not elsewhere.exists() and sorted(p.name for p in (tmp_path / "data").iterdir()) == []


def test_a_served_course_keeps_its_data_private(course, umask_022):
    course.data_dir.chmod(0o755)
    course.serve()
    student = api(course, course.token("ada"))
    assert post_zip(student, zip_of({"prng.py": SOURCE})).status_code == 202  # writes the database and broker
    assert mode(course.data_dir) == 0o700
    files = [p for p in course.data_dir.iterdir() if ".db" in p.name]  # with -wal, -shm, .migrate-lock
    assert {p.name for p in files} >= set(SQLITE_FILES) and any(p.name.endswith("-wal") for p in files)
    assert {p.name: mode(p) for p in files} == {p.name: 0o600 for p in files}

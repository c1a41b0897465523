"""Student bytes without bound on the trusted side (issue 26, class 6).

The grader's memory is outside every cgroup, and results.json (and the service's database that
stores it) is the grader's too. So:
- a student's reply is bounded by twice the reference's reply to the same request plus 1 MiB
  (its JSON header: twice plus 256 KiB), the absolute cap otherwise, and the bound is enforced
  while the frame is read, before anything is allocated for it (`wire.read_frame`);
- every student string is clipped where it enters a message (`replies.check`, `compare`), and
  each test of results.json is bounded as it is built (`results.TestResult.of`).
Hostile submissions, each beside its honest twin (ATTACK = False): at_updates__attack_huge_reply
(junk beside right outputs: a 200 MB array, or a JSON header of empty lists) and
at_updates__attack_big_strings (megabyte exception types, messages and locations, a wide
output structure, printing, a megabyte import error).
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from helpers.grading import ROOT, grade_dir, module_source, needs_bwrap
from jaxlings.grading import replies, results
from jaxlings.grading.compare import mismatch
from jaxlings.grading.replies import format_error
from jaxlings.grading.results import MAX_MESSAGE, Outcome
from jaxlings.worker import wire

ISOLATE = True


def grade_source(folder: Path, source: str, names: list[str]):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "at_updates.py").write_text(source)
    return grade_dir(folder, names, isolate=ISOLATE)


def points(result) -> dict[str, float]:
    return {t.name: t.score for t in result.tests}


def written_size(result, tmp_path: Path) -> int:
    path = tmp_path / "results.json"
    result.write(path)
    return path.stat().st_size


# -- the frame: bounded before it is read -------------------------------------------------------


def test_a_frame_past_its_bound_is_refused_having_read_only_its_size():
    r, w = os.pipe()
    os.write(w, struct.pack("<Q", 1 << 40))  # announces a terabyte, sends nothing more
    with pytest.raises(wire.TooLarge, match=r"the reply was 1.1e\+03 GB, more than the 1.05 MB allowed: a test bound"):
        wire.read_frame(r, max_bytes=1 << 20, why=": a test bound")
    os.close(r)
    os.close(w)


def write_quietly(fd: int, tree: object) -> None:
    """`wire.write_frame`, for a reader that stops reading (the pipe then breaks)."""
    try:
        wire.write_frame(fd, tree)
    except OSError:
        pass
    os.close(fd)


def test_a_header_past_its_bound_is_refused_before_it_is_read():
    tree = {"ok": True, "junk": [[]] * 100_000}  # 400 kB of JSON, Python objects many times that
    r, w = os.pipe()
    threading.Thread(target=write_quietly, args=(w, tree), daemon=True).start()
    with pytest.raises(wire.TooLarge, match=r"description .* was 400 kB, more than the 100 kB allowed"):
        wire.read_frame(r, max_header=100_000)
    os.close(r)


def test_sizes_weigh_a_reply_as_it_is_sent():
    tree = {
        "ok": True,
        "out": {
            "treedef": "PyTreeDef((*, *))",
            "leaves": [
                {"kind": "array", "data": np.zeros((3, 5), np.float32)},
                {"kind": "key", "data": np.ones(2, np.uint32), "impl": "threefry2x32"},
            ],
        },
        "t": (1, 2.5, None),
    }
    frame, header = wire.sizes(tree)
    payload = wire.encode(tree)
    assert frame == len(payload) and header == struct.unpack_from("<I", payload)[0]
    r, w = os.pipe()
    wire.write_frame(w, tree)
    got = []
    assert wire.read_frame(r, sizes=got)["t"] == (1, 2.5, None) and got == [(frame, header)]


# -- strings: clipped where they enter ----------------------------------------------------------


def test_a_worker_error_is_clipped_as_it_arrives():
    reply = replies.check(
        "call", {"ok": False, "error": {"type": "E" * 10**6, "message": "m" * 5 * 10**6, "where": "w" * 10**6}}
    )
    error = reply["error"]
    assert len(error["type"]) < 300 and len(error["message"]) < 2100 and len(error["where"]) < 600
    assert error["message"].endswith("more characters)")
    assert len(format_error(error, "at_updates.mask_fill")) < 3100


def test_a_mismatch_quotes_a_bounded_structure():
    leaf = {"kind": "array", "data": np.zeros(3, np.float32)}
    expected = {"treedef": "PyTreeDef(*)", "leaves": [leaf]}
    got = {"treedef": "PyTreeDef({" + "'k': *, " * 10**6 + "})", "leaves": [leaf]}
    message = mismatch(expected, got, 1e-6, 1e-6)
    assert message.startswith("the output's structure is not the one the task asks for") and len(message) < 700


def test_each_test_of_results_json_is_bounded():
    outcome = Outcome.fail("x" * 10**7, trace="t" * 10**6, ratio=1.5, calls=list(range(100)))
    test = results.TestResult.of("at_updates", "mask_fill", "correct", 2, outcome, "visible")
    assert len(test.output) <= MAX_MESSAGE + 40 and test.output.endswith("more characters)")
    assert len(json.dumps(test.extra_data)) <= results.MAX_DATA
    assert test.extra_data["ratio"] == 1.5 and test.extra_data["calls"] == list(range(100))
    assert test.extra_data["dropped"] == ["trace"]


# -- hostile submissions, each beside its honest twin -----------------------------------------


def measure(name: str, names: list[str], **settings: object) -> dict:
    """benchmarks/bounded_bytes.py in a process of its own: the points, results.json's size and
    the grading process's peak resident memory (VmHWM) before and after grading."""
    argv = [
        sys.executable,
        str(ROOT / "benchmarks" / "bounded_bytes.py"),
        name,
        *names,
        "--sandbox",
        "on" if ISOLATE else "off",
    ]
    for key, value in settings.items():
        argv += ["--set", f"{key}={value!r}"]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@needs_bwrap
def test_a_huge_reply_costs_its_check_never_the_grader_s_memory(tmp_path):
    names = ["at_updates.mask_fill"]
    attack = measure("at_updates__attack_huge_reply", names, JUNK_BYTES=200_000_000)
    assert attack["points"] == {"at_updates.mask_fill:correct": 0.0, "at_updates.mask_fill:jit": 0.0}
    assert "the reply was 200 MB, more than the 1.05 MB allowed" in attack["messages"]["at_updates.mask_fill:correct"]
    assert attack["vm_hwm_mb_after"] - attack["vm_hwm_mb_before"] < 150, attack  # before: ~2200 MB
    honest = grade_source(tmp_path / "honest", module_source("at_updates__attack_huge_reply", ATTACK=False), names)
    assert points(honest) == {"at_updates.mask_fill:correct": 1.0, "at_updates.mask_fill:jit": 2.0}


@pytest.mark.slow
@needs_bwrap
def test_an_exported_program_is_bounded_by_the_reference_s(tmp_path):
    # Before: two 250 MB "programs" took the grader from 62 to 1,062 MB (issue 41, class 5).
    names = ["at_updates.mask_fill"]
    attack = measure("at_updates__attack_huge_reply", names, VARIANT="program", JUNK_BYTES=250_000_000)
    assert attack["points"] == {"at_updates.mask_fill:correct": 1.0, "at_updates.mask_fill:jit": 0.0}, attack
    message = attack["messages"]["at_updates.mask_fill:jit"]
    assert "the reply was 250 MB" in message and "times the reference's exported programs" in message, message
    assert attack["vm_hwm_mb_after"] - attack["vm_hwm_mb_before"] < 150, attack


@pytest.mark.slow
@needs_bwrap
def test_a_bloated_json_header_is_refused_by_its_own_bound(tmp_path):
    names = ["at_updates.mask_fill"]
    source = module_source("at_updates__attack_huge_reply", VARIANT="header", JUNK_BYTES=600_000)
    result = grade_source(tmp_path, source, names)
    assert sorted(points(result)) == ["at_updates.mask_fill:correct", "at_updates.mask_fill:jit"]
    assert result.score == 0
    message = result.tests[0].output
    assert "the reply's description (its structure, names and messages) was 600 kB" in message, message


@pytest.mark.slow
@needs_bwrap
def test_megabyte_strings_leave_every_message_and_results_json_bounded(tmp_path):
    # Strings that fit the reply's bound (twice the reference's plus 256 KiB of header) reach the
    # messages, clipped; larger ones are refused with the reply (measured in the report).
    source = module_source("at_updates__attack_big_strings", TYPE_CHARS=50_000, MESSAGE_CHARS=90_000)
    attack = grade_source(tmp_path / "attack", source, ["at_updates"])
    assert len(attack.tests) == 9 and all(t.output.strip() for t in attack.tests)
    assert max(len(t.output) for t in attack.tests) <= results.MAX_MESSAGE  # before: 230 kB
    assert written_size(attack, tmp_path) < 40_000  # before: 573 kB (14.8 MB at 1+3 MB)
    by_name = {t.name: t for t in attack.tests}
    assert "more characters" in by_name["at_updates.mask_fill:correct"].output
    assert by_name["at_updates.histogram:correct"].output.count("k") < 600  # the structure, clipped
    kept = ["at_updates.scatter_ops", "at_updates.lookup_and_clamp"]
    honest = grade_source(tmp_path / "honest", module_source("at_updates__attack_big_strings", ATTACK=False), kept)
    assert {k: v for k, v in points(attack).items() if k.rsplit(":")[0] in kept} == points(honest)
    assert points(honest) == {
        "at_updates.scatter_ops:correct": 2.0,
        "at_updates.scatter_ops:jit": 1.0,
        "at_updates.lookup_and_clamp:correct": 2.0,
        "at_updates.lookup_and_clamp:jit": 1.0,
    }
    assert by_name["at_updates.mask_fill:correct"].score == 0 and by_name["at_updates.histogram:correct"].score == 0


@pytest.mark.slow
@needs_bwrap
def test_a_megabyte_import_error_quoted_by_every_test_stays_bounded(tmp_path):
    source = module_source(
        "at_updates__attack_big_strings", VARIANT="import", TYPE_CHARS=500_000, MESSAGE_CHARS=1_000_000
    )  # 2.5 MB: under the absolute cap on a reply's header
    result = grade_source(tmp_path, source, ["at_updates"])
    assert len(result.tests) == 9 and result.score == 0
    assert all(t.output.startswith("importing at_updates.py failed") for t in result.tests)
    assert "more characters" in result.tests[0].output
    assert written_size(result, tmp_path) < 40_000  # before: 22.5 MB

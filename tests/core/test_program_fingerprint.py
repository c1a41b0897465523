"""The exported program's fingerprint in results.json (`program_shingles`, for the similarity
report): the `jit` test of an exercise whose jitted program the trusted side analysed carries the
analysis worker's sketch of it, the same the corpus's programs get in-process
(tests/helpers/similarity.py, benchmarks/similarity.py); a `jit` test that never reached the
analysis (a stub, a function that raises) carries none. It decides nothing: the verdicts are the
same as without it (benchmarks/verdicts.py compares whole gradings).
"""

from __future__ import annotations

import json

from helpers import similarity as corpus
from helpers.grading import grade_dir, write_submission
from jaxlings.grading import paths, results
from jaxlings.service import similarity

RAISES = """

def lookup_and_clamp(x, idx, vals, fill):
    raise ValueError("not today")
"""


def test_the_jit_test_carries_the_programs_fingerprint_only_where_the_program_was_analysed(tmp_path):
    stub = (paths.exercises_dir() / "at_updates.py").read_text()
    variant = corpus.variants("at_updates", "histogram")["v1"]
    text = corpus.with_function(stub, variant, "histogram") + RAISES  # the last definition is the one graded
    folder = write_submission(tmp_path / "sub", {"at_updates": text})
    names = ["at_updates.histogram", "at_updates.mask_fill", "at_updates.lookup_and_clamp"]
    result = grade_dir(folder, names, seed=1)
    written = tmp_path / "results.json"
    written.write_text(json.dumps(result.to_json()))
    doc = json.loads(written.read_text())
    tests = {t["name"]: t for t in doc["tests"]}

    jit = tests["at_updates.histogram:jit"]
    assert jit["status"] == "passed" and jit["score"] == jit["max_score"]
    shingles = jit["extra_data"]["program_shingles"]
    assert 0 < len(shingles) <= similarity.PROGRAM_KEPT
    assert len(json.dumps(jit["extra_data"])) <= results.MAX_DATA and "dropped" not in jit["extra_data"]
    assert "reference_program_shingles" not in jit["extra_data"]  # the reference's program is never shown
    # the trusted side's sketch is the one the corpus's programs get in-process
    assert similarity.program_sketch(shingles) == corpus.program_of("at_updates", "histogram", variant)
    assert similarity.programs_in(written.read_text(), "at_updates") == {
        "histogram": similarity.program_sketch(shingles)
    }
    # no other test carries it, and a jit check that analysed no program has none
    assert [name for name, t in tests.items() if "program_shingles" in t["extra_data"]] == ["at_updates.histogram:jit"]
    assert tests["at_updates.mask_fill:jit"]["extra_data"].get("stub") is True
    assert tests["at_updates.lookup_and_clamp:jit"]["score"] == 0

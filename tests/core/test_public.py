"""Public expectations: the public specs hold nothing hidden, recordings replay exactly, a
stale or tampered recording is a clear error, and checks that need the grading machine are
"judged on submission", never passed."""

from __future__ import annotations

import json
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.grading import SOLUTIONS, check_dir, verdicts, write_submission
from jaxlings import public
from jaxlings.course import expectations
from jaxlings.grading import answers, spec, topics
from jaxlings.grading.answers import Recording, Replay
from jaxlings.grading.engine import grade
from jaxlings.grading.spec import Case
from jaxlings.worker.wire import Key


@pytest.mark.parametrize("name", topics.ORDER)
def test_committed_public_expectations_were_recorded_from_the_current_sources(name):
    assert expectations.up_to_date(name, SOLUTIONS), f"run `grade build`: jaxlings/public/{name}.json is stale"


@pytest.mark.parametrize("name", topics.ORDER)
def test_public_specs_hold_no_samplers_and_no_edge_cases(name):
    document = json.loads(public.path_for(name).read_text())
    text = json.dumps(document["spec"])
    assert '"edge_cases"' not in text and '"sample"' not in text
    full, shown = topics.load(name), topics.load_public(name)
    for ex, pub in zip(full.exercises, shown.exercises):
        assert (pub.name, pub.checks, pub.hints, pub.rtol, pub.atol) == (ex.name, ex.checks, ex.hints, ex.rtol, ex.atol)
        assert pub.edge_cases == ()
        with pytest.raises(spec.NotPublished, match="not published"):
            pub.sample(np.random.default_rng(0), 3)


def test_recordings_hold_no_hidden_case():
    hidden = {c.label for n in topics.ORDER for ex in topics.load(n).exercises for c in ex.edge_cases if c.hidden}
    assert hidden, "the course has hidden edge cases"
    for name in topics.ORDER:
        for blob in public.recording(name).draws.values():
            value = answers.from_blob(blob)[0]
            for case in value if isinstance(value, list) else [value]:
                if isinstance(case, Case):
                    assert not case.hidden and case.label not in hidden, (name, case.label)


leaves = st.one_of(
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=False),
    st.booleans(),
    st.none(),
    st.text(max_size=8),
    st.builds(Key, st.integers(0, 2**31)),
    st.builds(
        lambda xs, dt: np.asarray(xs, dtype=dt),
        st.lists(st.floats(-1e6, 1e6), max_size=6),
        st.sampled_from(["float32", "float64", "int32"]),
    ),
)
trees = st.recursive(
    leaves,
    lambda kids: st.one_of(
        st.lists(kids, max_size=4), st.tuples(kids, kids), st.dictionaries(st.text(max_size=5), kids, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=60, deadline=None)
@given(trees)
def test_blobs_round_trip_any_message_tree_and_keys_are_stable(tree):
    back = answers.from_blob(answers.to_blob(tree))
    assert answers.request_key("call", back) == answers.request_key("call", tree)
    assert answers.to_blob(back) == answers.to_blob(tree)


def test_a_draw_replays_and_restores_the_generator_state():
    recorder = answers.Recorder()
    rng = np.random.default_rng([0, 1])
    drawn = recorder.draw("cases", rng, lambda r: [Case((r.normal(size=3).astype(np.float32), 2), "c")])
    after = rng.normal()
    replay = Replay(Recording.unpack(*recorder.recording.pack()), "test")
    rng2 = np.random.default_rng([0, 1])
    again = replay.draw("cases", rng2, lambda r: pytest.fail("a replay never samples"))
    assert np.array_equal(again[0].args[0], drawn[0].args[0]) and again[0].args[1] == 2
    assert rng2.normal() == after


def test_stale_expectations_are_the_graders_error_naming_the_fix(tmp_path):
    """A recording that lacks an answer (a spec changed, the file was not rebuilt) fails the
    run with a message saying what to do, never with a verdict."""
    recording = public.replay("at_updates").recording
    trimmed = Recording(recording.draws, {k: v for i, (k, v) in enumerate(sorted(recording.answers.items())) if i % 2})
    folder = write_submission(tmp_path, {"at_updates": (SOLUTIONS / "at_updates.py").read_text()})
    from jaxlings.grading.session import GraderError

    with pytest.raises(GraderError, match=r"out of date.*grade build"):
        grade(
            folder,
            topics.resolve(["at_updates"], public=True),
            public=True,
            answers=lambda _: Replay(trimmed, "trimmed"),
        )


def test_a_malformed_expectations_file_is_a_clear_error(tmp_path, monkeypatch):
    (tmp_path / "prng.json").write_text("{not json")
    for name in ("jit_basics", "at_updates", "static_args"):
        (tmp_path / f"{name}.json").write_bytes(public.path_for(name).read_bytes())
    (tmp_path / "at_updates.bin").write_bytes(public.blobs_path_for("static_args").read_bytes())
    data = public.blobs_path_for("static_args").read_bytes()
    (tmp_path / "static_args.bin").write_bytes(data)
    monkeypatch.setattr(public, "DIR", tmp_path)
    public.forget()
    try:
        with pytest.raises(public.PublicDataError, match="not valid JSON"):
            public.topic("prng")
        with pytest.raises(public.PublicDataError, match="no public expectations"):
            public.topic("loops")
        with pytest.raises(public.PublicDataError, match="no recorded values for topic 'jit_basics'"):
            public.replay("jit_basics")
        with pytest.raises(public.PublicDataError, match=r"at_updates\.bin is not the recording at_updates\.json"):
            public.replay("at_updates")
        assert public.replay("static_args").recording.answers  # the pair as built
    finally:
        public.forget()


def test_a_recording_packs_into_an_index_and_bytes_and_back():
    recording = public.recording("at_updates")
    index, data = recording.pack()
    assert Recording.unpack(index, data) == recording
    assert list(answers.blobs_in(data)) == [
        v for part in answers.PARTS for _, v in sorted(getattr(recording, part).items())
    ]
    key = next(iter(index["answers"]))
    with pytest.raises(ValueError, match="past the end"):
        Recording.unpack({**index, "answers": {key: [len(data), 1]}}, data)
    with pytest.raises(ValueError, match="has no `draws`"):
        Recording.unpack({"answers": {}}, data)
    with pytest.raises(ValueError, match="cut short"):
        list(answers.blobs_in(data[:-3]))


def test_an_unknown_type_in_a_public_spec_is_refused():
    with pytest.raises(public.PublicDataError, match="unknown type"):
        public.from_data({"$type": "Popen", "args": ["sh"]})


@pytest.mark.slow
def test_speed_is_judged_on_submission_never_passed_in_a_public_run():
    result = check_dir(SOLUTIONS, ["at_updates.histogram"])
    test = next(t for t in result.tests if t.check == "speed")
    assert test.pending and test.status == "failed" and test.score == 0
    assert test.output.startswith("judged on submission:") and test.extra_data["student_ms"] > 0
    assert all(t.status == "passed" for t in result.tests if t.check != "speed")
    assert result.extra_data["reference"] == "recorded"


def test_every_check_that_sends_programs_to_the_trusted_worker_says_so():
    import inspect
    import sys

    from jaxlings.grading.checks import KINDS

    sending = {
        name
        for name, kind in KINDS.items()
        if any(
            f"ctx.{call}(" in inspect.getsource(sys.modules[kind.__module__])
            for call in ("traced_facts", "program_layouts")
        )
    }
    assert sending == {name for name, kind in KINDS.items() if kind.analyses} == {"jit", "vmap", "sharding"}


@pytest.mark.slow
def test_a_public_run_starts_the_trusted_worker_only_for_checks_that_analyse_programs(monkeypatch):
    """Replaying, the trusted worker only analyses exported programs (`Check.analyses`): for
    exercises without such a check it would start and sit idle (NetKet's import, for ising)."""
    from jaxlings.grading.session import TopicSession

    starts = []
    start = TopicSession._start_reference
    monkeypatch.setattr(TopicSession, "_start_reference", lambda self: starts.append(self.topic.name) or start(self))
    unanalysed = check_dir(
        SOLUTIONS, ["static_args.standardize", "static_args.window_sums"]
    )  # correct, compiles, speed
    assert starts == []
    assert sorted((t.exercise, t.check, t.status) for t in unanalysed.tests if not t.pending) == [
        ("standardize", "compiles", "passed"),
        ("standardize", "correct", "passed"),
        ("window_sums", "compiles", "passed"),
        ("window_sums", "correct", "passed"),
    ]
    assert unanalysed.extra_data["platform"]["backend"] == "cpu"  # the student's worker's, on the same machine
    analysed = check_dir(SOLUTIONS, ["static_args.create_filled"])  # a jit check
    assert starts == ["static_args"] and all(t.status == "passed" for t in analysed.tests if not t.pending)


@pytest.mark.slow
def test_replayed_public_checks_fail_a_wrong_function_as_the_live_ones_do(tmp_path):
    """The replay judges, it does not rubber-stamp: a wrong scatter fails `correct` with the
    same message as against the live reference."""
    folder = write_submission(
        tmp_path,
        {
            "at_updates": (SOLUTIONS / "at_updates.py")
            .read_text()
            .replace("return at.set(vals), at.add(vals)", "return at.set(vals), at.set(vals)")
        },
    )
    from helpers.grading import grade_dir

    live, replayed = (
        grade_dir(folder, ["at_updates.scatter_ops"], public=True),
        check_dir(folder, ["at_updates.scatter_ops"]),
    )
    assert verdicts(live) == verdicts(replayed)
    assert verdicts(replayed)["at_updates.scatter_ops:correct"][0] == 0


def _crc(word: str) -> int:
    return zlib.crc32(word.encode())

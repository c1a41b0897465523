"""Topics side by side (`engine.grade(jobs=...)`), a topic alone graded in parts on the spare job
slots (`engine.plan`), the clock gate that keeps timed checks alone where the clock is wall
time, and the speed check's early stop. Events and counts, no timing."""

from __future__ import annotations

import threading

from helpers.grading import EXERCISES, ROOT, SOLUTIONS, check_dir, grade_dir, write_submission
from jaxlings.course.build import make_stub
from jaxlings.grading import engine, topics
from jaxlings.grading.checks import Speed
from jaxlings.grading.gate import ClockGate


def exercises_of(parts: list[engine.Part]) -> list[tuple[str, list[str]]]:
    return [(part.name, [ex.name for ex in part.topic.exercises]) for part in parts]


def test_an_exclusive_holder_runs_alone():
    gate, log = ClockGate(), []
    holding, entered = threading.Event(), threading.Event()

    def timed():
        with gate.exclusive():
            holding.set()
            log.append("timed starts")
            assert not entered.wait(0.3)  # a shared holder cannot get in meanwhile
            log.append("timed ends")

    def untimed():
        holding.wait()
        with gate.shared():
            entered.set()
            log.append("untimed")

    threads = [threading.Thread(target=timed), threading.Thread(target=untimed)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert log == ["timed starts", "timed ends", "untimed"]


def test_shared_holders_run_together_and_a_waiting_writer_goes_next():
    gate, inside, log = ClockGate(), threading.Barrier(2, timeout=10), []
    first_in = threading.Event()

    def reader(name):
        with gate.shared():
            first_in.set()
            inside.wait()  # both readers are inside at once, or this times out
            log.append(name)

    readers = [threading.Thread(target=reader, args=(n,)) for n in ("a", "b")]
    for t in readers:
        t.start()
    for t in readers:
        t.join(10)
    with gate.exclusive():
        log.append("writer")
    assert sorted(log[:2]) == ["a", "b"] and log[2] == "writer"


def test_topics_side_by_side_keep_their_order_and_verdicts():
    names = ["primitives", "at_updates", "sharding"]
    one = grade_dir(ROOT / "exercises", names)
    two = engine.grade(ROOT / "exercises", topics.resolve(names), reference_dir=ROOT / "solutions", jobs=3)
    assert [t.name for t in two.tests] == [t.name for t in one.tests]
    assert [(t.score, t.status) for t in two.tests] == [(t.score, t.status) for t in one.tests]
    assert list(two.extra_data["topics"]) == [t.name for t in topics.resolve(names)]
    assert two.extra_data["jobs"] == 3


def test_a_topic_alone_is_split_on_the_spare_slots_by_cost():
    ising, prng = topics.load("ising"), topics.load("prng")
    assert exercises_of(engine.plan([ising], 2, SOLUTIONS)) == [
        ("ising", ["vmc_ground_state"]),
        ("ising", ["tfim_hamiltonian", "ground_state_energy", "correlations"]),
    ]
    assert exercises_of(engine.plan([ising], 1, SOLUTIONS)) == [("ising", [ex.name for ex in ising.exercises])]
    # no spare slot: every topic whole, as before
    assert exercises_of(engine.plan([prng, ising], 2, SOLUTIONS)) == [
        (t.name, [ex.name for ex in t.exercises]) for t in (prng, ising)
    ]
    # three slots for two topics: the one weighing more gets it (prng: three speed checks)
    assert engine.estimated_cost(prng, SOLUTIONS / "prng.py") > engine.estimated_cost(ising, SOLUTIONS / "ising.py")
    assert [name for name, _ in exercises_of(engine.plan([prng, ising], 3, SOLUTIONS))] == ["prng", "prng", "ising"]
    # four: then ising's whole (22) weighs more than prng's largest part (16)
    assert [name for name, _ in exercises_of(engine.plan([prng, ising], 4, SOLUTIONS))] == ["prng"] * 2 + ["ising"] * 2
    # a part lighter than SPLIT_MIN_COST is not split again, and a light topic never
    assert [part.cost for part in engine.plan([prng], 8, SOLUTIONS)] == [16, 12]
    at_updates = topics.load("at_updates")
    assert engine.estimated_cost(at_updates) < engine.SPLIT_MIN_COST
    assert len(engine.plan([at_updates], 4, SOLUTIONS)) == 1


def test_stubs_are_not_split_off(tmp_path, monkeypatch):
    monkeypatch.setattr(engine, "SPLIT_MIN_COST", 0)  # half of prng is light: parts for the test's sake
    prng = topics.load("prng")
    names = [ex.name for ex in prng.exercises]
    assert exercises_of(engine.plan([prng], 2, EXERCISES)) == [("prng", names)]  # all stubs: one part
    source = (SOLUTIONS / "prng.py").read_text()
    one = write_submission(tmp_path / "one", {"prng": make_stub(source, "prng", names[:1])})
    assert exercises_of(engine.plan([prng], 2, one)) == [("prng", names)]  # one exercise to call: nothing to share
    two = write_submission(tmp_path / "two", {"prng": make_stub(source, "prng", names[:2])})
    parts = engine.plan([prng], 2, two)
    assert sorted(n for _, part in exercises_of(parts) for n in part) == sorted(names)
    assert all(any(n in names[:2] for n in part) for _, part in exercises_of(parts))  # each part calls something
    assert [part.cost > 0 for part in parts] == [True, True]


def test_a_topic_graded_in_parts_gets_the_result_it_gets_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(engine, "SPLIT_MIN_COST", 0)  # at_updates is light: parts for the test's sake
    whole = check_dir(SOLUTIONS, ["at_updates"])
    parts = check_dir(SOLUTIONS, ["at_updates"], jobs=2)
    assert [t.name for t in parts.tests] == [t.name for t in whole.tests]
    assert [(t.score, t.status) for t in parts.tests] == [(t.score, t.status) for t in whole.tests]
    summary, alone = parts.extra_data["topics"]["at_updates"], whole.extra_data["topics"]["at_updates"]
    assert summary["timings"]["parts"] == 2 and "parts" not in alone["timings"]
    assert (summary["score"], summary["max_score"]) == (alone["score"], alone["max_score"])
    assert set(summary["timings"]["exercises"]) == {ex.name for ex in topics.load("at_updates").exercises}
    # a module that does not import fails every test of every part, each with the reason, none lost
    broken = write_submission(
        tmp_path,
        {"at_updates": (SOLUTIONS / "at_updates.py").read_text() + "\nraise RuntimeError('broken on purpose')\n"},
    )
    failed = check_dir(broken, ["at_updates"], jobs=2)
    assert [t.name for t in failed.tests] == [t.name for t in whole.tests]
    assert all(t.score == 0 and "broken on purpose" in t.output for t in failed.tests)


def test_speed_rounds_stop_only_once_the_band_is_decided():
    speed = Speed(1, size={"cpu": 1}, full=1.5, zero=10.0, margin=1.25)
    assert speed.decided(1.0, 1.0) and speed.decided(1.2, 1.2)  # full marks with room
    assert not speed.decided(1.3, 1.3) and not speed.decided(5.0, 5.0)  # near the edge, or partial
    assert speed.decided(12.5, 12.5)  # none, with room
    assert not speed.decided(1.0, 9.0) and speed.decided(1.0, 12.5)  # an idling student: wall decides

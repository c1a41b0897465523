"""Topics side by side (`engine.grade(jobs=...)`), the clock gate that keeps timed checks alone
where the clock is wall time, and the speed check's early stop. Events and counts, no timing."""

from __future__ import annotations

import threading

from autograder import engine, topics
from autograder.gate import ClockGate
from autograder.spec import Speed
from conftest import ROOT, grade_dir


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


def test_speed_rounds_stop_only_once_the_band_is_decided():
    speed = Speed(size={"cpu": 1}, full=1.5, zero=10.0, margin=1.25)
    assert speed.decided(1.0, 1.0) and speed.decided(1.2, 1.2)        # full marks with room
    assert not speed.decided(1.3, 1.3) and not speed.decided(5.0, 5.0)  # near the edge, or partial
    assert speed.decided(12.5, 12.5)                                    # none, with room
    assert not speed.decided(1.0, 9.0) and speed.decided(1.0, 12.5)     # an idling student: wall decides

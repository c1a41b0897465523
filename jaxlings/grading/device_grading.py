"""Grading on an accelerator: one process on the device at a time, and as few as possible.

Where the grading machine has an accelerator (`jaxlings.grading.device`), the topics whose spec runs
there (`Topic.platform == "accelerator"`) are graded in two phases, each ONE process on the
device for every such topic:

1. the reference (trusted), hidden grading only, before anything of the student's starts: its
   modules imported in turn, it does every check's work that must run on the device ahead of
   the student (`Check.prefetch`: the timed rounds of `speed`), on inputs drawn from the run's
   secret, and the grader keeps its answers (times, input digests: small) until the student's
   phase asks for them in the same words (`answers.Prefetched`);
2. the student (untrusted, sandboxed where the sandbox runs): the topics graded side by side on
   the host's CPU, as on any machine (the reference answering live from a worker there, the
   student's exported programs analysed there), and every speed check's rounds, one check at
   a time, in ONE process on the device that imports each topic's module in turn
   (`device_workers.SharedWorker`). Only what is judged on the device's clock runs there:
   compiling a function for every case's shapes costs the TPU v5e several times what it costs
   the host's CPU, and the host's cores grade topics side by side (the course on one chip took
   over 600 s with every check on the device: benchmarks/results/2026-12-07-tpu-v5e-grading-6.md).
   A death there costs the speed check it happened in; the next one starts a fresh process (a
   new lease, a new opening of the device). A public run (a student's own machine) has no
   first phase and runs each such topic whole in the device's one process.

Each phase holds the device's lease for as long as its process lives (`device.Lease`), so no
two processes ever hold the device at once; a result records each lease (`extra_data.device`).
Topics on the CPU (`platform="cpu"`) are graded beside the phases, as on any machine, their
workers kept off the device.

What stays as in docs/grading.md "What is trusted": every input is drawn by the grader from the
run's secret and reaches the student's process with the request that times it (a speed round's
inputs are made on the device from a key sent with it, `jaxlings.grading.workloads`); the clock is the
grader's; a round's outputs are committed to inside the window (`worker.commit`) and the best
round's are fetched and compared with the reference's after it, at the device's tolerance
(`checks.speed`). Correctness is judged on the host's CPU at the exercise's own tolerance, as
in a student's `grade check`; the timed outputs are the device's correctness check.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

from jaxlings.grading import compile_cache, replies, source, stubs
from jaxlings.grading.answers import Prefetching
from jaxlings.grading.check import Check, ordered
from jaxlings.grading.context import CheckContext
from jaxlings.grading.device_workers import LOAD_TIMEOUT, DeviceRun, SharedWorker
from jaxlings.grading.gate import ClockGate
from jaxlings.grading.session import TopicSession, compilations, compiled_between
from jaxlings.grading.spec import Exercise, Topic
from jaxlings.grading.timing import CallFailed
from jaxlings.isolation import Limits, WorkerDied

log = logging.getLogger(__name__)  # silent unless configured: the phases' steps and seconds, for an operator


def prefetching(ex: Exercise) -> list[Check]:
    """The checks of `ex` that do work on the device ahead of the student (`Check.prefetch`)."""
    return [c for c in ordered(ex.checks) if c.prefetches]


def _stubbed(topic: Topic, submission: Path) -> set[str] | None:
    """The exercises of `topic` that are stubs in the submission's file; None where it has no
    such file or it does not parse (the topic fails before anything runs)."""
    module = submission / f"{topic.name}.py"
    if not module.is_file():
        return None
    text = module.read_text(errors="replace")
    if source.syntax_error(text, module.name):
        return None
    return set(stubs.find(text, [ex.name for ex in topic.exercises]))


def device_work(topics: list[Topic], submission: Path, reference_dir: Path) -> list[tuple[Topic, Path, set[str]]]:
    """What the reference's phase on the device has to do: each topic the submission has, with
    its reference module and the exercises that are stubs there (the student's file read for
    them: a stub is never called, so nothing of its checks is measured ahead)."""
    work = []
    for topic in topics:
        stubbed = _stubbed(topic, submission)
        if stubbed is not None:
            work.append((topic, reference_dir / f"{topic.name}.py", stubbed))
    return work


def needs_device(topics: list[Topic], submission: Path) -> bool:
    """Whether the student's process will take the device: some exercise of `topics` that the
    submission has written (not a stub) has a check that runs there (`prefetching`)."""
    for topic in topics:
        stubbed = _stubbed(topic, submission)
        if stubbed is not None and any(prefetching(ex) for ex in topic.exercises if ex.name not in stubbed):
            return True
    return False


def compile_ahead(
    run: DeviceRun, topics: list[Topic], submission: Path, gate: ClockGate, until: Callable[[], bool]
) -> None:
    """The student's functions compiled on the device ahead of their speed checks: in the
    student's process there, as soon as it is open, each written exercise's device work
    (`Check.compile_ahead`: one round on inputs of the speed size that no timed round gets),
    topic by topic in the order of `topics` (the engine's: the order the topics start), while
    the topics' checks run on the host's CPU. Compiling a function at its
    speed size took the TPU v5e 6-33 s; done at its check, after its topic's host checks, one
    check after another, it was most of the course's time there
    (benchmarks/results/2026-12-07-tpu-v5e-grading-9.md). Skipped for an exercise whose check
    has begun (`DeviceRun.begun`); stopped when `until()` says the grading is done, and at the
    first failure or death (the check then meets it itself and reports it). Each round shares
    the clock gate, as a check's untimed warm-up does: a timed check elsewhere waits for it."""
    for topic in topics:
        stubbed = _stubbed(topic, submission)
        written = [ex for ex in topic.exercises if stubbed is not None and ex.name not in stubbed]
        for ex, check in [(e, c) for e in written for c in prefetching(e)]:
            if until():
                return
            with run.held(), gate.shared():
                if (topic.name, ex.name) in run.begun:
                    continue
                if run.student.worker is None or not run.student.worker.alive:
                    return  # not started, or dead: the checks start it, each under its own time limit
                if not _compiled_ahead(run, topic, submission / f"{topic.name}.py", ex, check):
                    return


def _compiled_ahead(run: DeviceRun, topic: Topic, module: Path, ex: Exercise, check: Check) -> bool:
    """`check.compile_ahead` for `ex` in the student's process on the device; whether it went well."""
    t0 = time.monotonic()
    worker, error = run.student_worker(module, topic.name, LOAD_TIMEOUT)
    if worker is None:
        log.info("student %s: nothing compiled ahead: %s", topic.name, error)
        return False
    before = compilations(worker)
    try:
        check.compile_ahead(worker, ex, run.device)
    except (WorkerDied, CallFailed, replies.MalformedReply) as exc:
        log.info("student %s.%s: not compiled ahead: %s", topic.name, ex.name, exc)
        return False
    log.info(
        "student %s.%s: compiled ahead in %.2f s (%s program(s) by its process's word)",
        topic.name,
        ex.name,
        time.monotonic() - t0,
        compiled_between(before, compilations(worker)),
    )
    return True


def reference_phase(
    run: DeviceRun,
    topics: list[tuple[Topic, Path, set[str]]],
    seed: int,
    *,
    limits: Limits,
    gate: ClockGate,
) -> None:
    """The first phase: the reference's work on the device for every topic, in ONE trusted
    process (`SharedWorker` "reference"), kept in `run.store` by topic. `topics` are (spec,
    reference module, exercises that are stubs in the submission: nothing of theirs is asked)."""
    work = [
        (t, ref, [ex for ex in t.exercises if ex.name not in stubs and prefetching(ex)]) for t, ref, stubs in topics
    ]
    work = [(t, ref, exercises) for t, ref, exercises in work if exercises]
    if not work:
        return
    trusted = SharedWorker(
        run.device, "reference", [ref for _, ref, _ in work], limits=limits, cache=compile_cache.reference_device()
    )
    try:
        for topic, ref, exercises in work:
            store = run.store.setdefault(topic.name, {})
            with TopicSession(
                topic,
                ref,
                ref,
                seed,
                public=False,
                isolate=False,
                limits=limits,
                answers=Prefetching(store),
                device=run,
                reference_worker=trusted,
            ) as session:
                for ex in exercises:
                    ctx = CheckContext(session, ex, [], [])
                    for check in prefetching(ex):
                        t0 = time.monotonic()
                        with gate.exclusive():  # timed: alone, as the student's rounds will be (`engine._gated`)
                            check.prefetch(ctx)
                        log.info(
                            "reference %s.%s: %s in %.2f s", topic.name, ex.name, check.name, time.monotonic() - t0
                        )
        run.reference_platform = dict(trusted.platform)
    finally:
        trusted.cleanup()

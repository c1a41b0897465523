"""The grading engine: a submission and a list of topics in, a `Result` out.

One engine serves `grade check` (public cases, fixed seed), `grade grade` (hidden cases,
fresh seed), nbgrader and the service. Topics are graded one after another, or `jobs` at a
time (`jaxlings.grading.gate` keeps timed checks fair), each in its own pair of workers (see
`session.TopicSession`), so anything a topic does costs that topic only. With fewer topics
than job slots (`grade check ising` on two cores), the spare slots go to the costliest
topics, whose exercises are graded in parts side by side, each part in its own workers
(`plan`). Every check of every exercise yields a test, failed or passed, so a result is
always complete.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

from jaxlings.grading import draws, source, stubs, words
from jaxlings.grading.answers import Live, Prefetched
from jaxlings.grading.checks import Check, ordered, waiting_for
from jaxlings.grading.context import CheckContext
from jaxlings.grading.device import Device, detect
from jaxlings.grading.device_grading import compile_ahead, device_work, needs_device, reference_phase
from jaxlings.grading.device_workers import DeviceRun
from jaxlings.grading.gate import ClockGate
from jaxlings.grading.replies import format_error
from jaxlings.grading.results import Outcome, Result, TestResult
from jaxlings.grading.session import GraderError, StudentError, TopicSession
from jaxlings.grading.spares import Spares
from jaxlings.grading.spec import Exercise, Topic
from jaxlings.grading.watchdog import GRACE, Piece, Watch, run_all
from jaxlings.isolation import Limits

log = logging.getLogger(__name__)  # silent unless configured: each check's start and seconds, for an operator

PUBLIC_SEED = draws.PUBLIC_SEED
# Gradescope visibility of every test: no message ever carries an expected value, so all show.
VISIBILITY = "visible"
Listener = Callable[[TestResult], None]
AnswersFor = Callable[[str], Live]
Graded = tuple[list[TestResult], dict[str, Any], dict[str, Any]]  # a topic's (or part's) tests, platform and summary


def default_jobs() -> int:
    """Topics graded at a time by default: `JAXLINGS_JOBS`, else one per core, at most four."""
    configured = os.environ.get("JAXLINGS_JOBS", "")
    if configured:
        if not configured.isdigit() or int(configured) < 1:
            raise ValueError(f"JAXLINGS_JOBS must be a positive whole number, not {configured!r}")
        return int(configured)
    return max(1, min(4, os.cpu_count() or 1))


def grade(
    submission: Path,
    topics: list[Topic],
    *,
    reference_dir: Path | None = None,
    public: bool = False,
    seed: int | None = None,
    isolate: bool = False,
    limits: Limits = Limits(),
    on_test: Listener | None = None,
    answers: AnswersFor | None = None,
    jobs: int = 1,
    spares: Spares | None = None,
    device: Device | None = None,
    grace: float = GRACE,
) -> Result:
    """Grade the `<topic>.py` files found in `submission`.

    `reference_dir` holds the reference solutions (`<topic>.py`), run live in a trusted worker;
    `answers(topic_name)` instead gives each topic's `jaxlings.grading.answers` object (e.g. a
    `Replay` of the public expectations, which needs no reference at all). `public` runs the
    public cases (seed 0, no hidden edge cases; checks that need the grading machine are
    "judged on submission"). `seed` is the run's secret (`jaxlings.grading.draws`): by default 128
    fresh random bits in hidden mode, recorded in the result's `extra_data["seed"]`; passing a
    recorded one reproduces that run's inputs exactly. `isolate` sandboxes the student's worker. `on_test` is called
    with every test as it finishes. `jobs` topics are graded at a time (see `jaxlings.grading.gate`:
    timed checks run alone where the clock is wall time); the result keeps the topics' order.
    `spares` holds student workers started ahead (`grade watch`, `jaxlings.grading.spares`): used in
    public, unsandboxed runs only (`TopicSession`). `device` is the grading machine's accelerator
    (`jaxlings.grading.device.resolve`; None: the CPU): the topics whose spec runs there have their
    speed rounds timed on it, one process on it at a time, the reference's phase first, and the
    rest of every topic graded on the host's CPU (`jaxlings.grading.device_grading`; a public run
    keeps those topics whole in the one process on it); the result's `extra_data["device"]`
    records each process that held it. Each topic
    (or part of one) runs under an outside deadline, its time limit plus `grace` seconds
    (`jaxlings.grading.watchdog`): past it its workers are stopped, its tests fail with the
    reason, and the run goes on.
    """
    started = time.monotonic()
    seed = PUBLIC_SEED if public and seed is None else (seed if seed is not None else draws.new_seed())
    gate, lock = ClockGate(), threading.Lock()

    def listener(test: TestResult) -> None:
        if on_test is not None:
            with lock:
                on_test(test)

    if device is not None and not public:
        device = device.for_hidden()
    on_device = [t for t in topics if device is not None and t.platform == "accelerator"]
    cpu_env = off_device_env(device)

    def one(topic: Topic, watch: Watch, run: DeviceRun | None = None) -> Graded:
        """A topic, or a part of one (`plan`); on the device's shared worker where `run` is given."""
        t0 = time.monotonic()
        module = Path(submission) / f"{topic.name}.py"
        reference = Path(reference_dir) / f"{topic.name}.py" if reference_dir is not None else None
        timings: dict[str, Any] = {}
        platform: dict[str, Any] = {}
        if not module.is_file():
            topic_tests = failed_topic(topic, f"the submission has no {topic.name}.py")
        else:
            try:
                topic_tests, platform = grade_topic(
                    topic,
                    module,
                    reference,
                    seed,
                    public=public,
                    isolate=isolate,
                    limits=limits,
                    on_test=listener if on_test else None,
                    answers=topic_answers(topic, run),
                    timings=timings,
                    gate=gate,
                    spares=None if run is not None else spares,
                    device=run,
                    cpu_env=cpu_env,
                    watch=watch,
                )
            except GraderError:
                raise
            except Exception as exc:  # noqa: BLE001 - trusted-side work on one submission failed: that topic only
                print(traceback.format_exc(), file=sys.stderr)
                topic_tests = failed_topic(
                    topic,
                    f"the grader could not grade {topic.name}.py "
                    f"({type(exc).__name__}: {str(exc)[:300]}); please report it",
                )
        return topic_tests, platform, topic_summary(topic_tests, round(time.monotonic() - t0, 2), timings, platform)

    def topic_answers(topic: Topic, run: DeviceRun | None) -> Live | None:
        """Replayed, live, or on the device live but for the answers measured there first."""
        if answers is not None:
            return answers(topic.name)
        return Prefetched(run.store.setdefault(topic.name, {})) if run is not None else None

    def device_run() -> DeviceRun:
        """The device's side of this grading: its student's process imports these topics' modules."""
        assert device is not None
        modules = [Path(submission) / f"{t.name}.py" for t in on_device]
        return DeviceRun(device, isolate=isolate, limits=limits, student_modules=[m for m in modules if m.is_file()])

    def on_the_device(watch: Watch) -> dict[str, Graded]:
        """A public run's topics on the device, one after another, in the student's one
        process there (`device_grading`)."""
        run = device_run()
        watch.guard(run.close)
        try:
            return {topic.name: one(topic, watch, run) for topic in on_device}
        finally:
            run.close()

    def abandoned(topic: Topic, seconds: float) -> Graded:
        """A topic (or part) stopped from outside: every test failed with the reason."""
        tests = failed_topic(
            topic,
            f"grading {topic.name}.py was stopped after {seconds:.0f} s, past its {topic.time_limit:g} s time "
            "limit; its workers were stopped and its checks not finished",
        )
        return tests, {}, topic_summary(tests, round(seconds, 2), {}, {})

    # Hidden grading on a device: the reference's phase there first, alone; then every topic side
    # by side on the host's CPU, each speed check's rounds in the student's one process on the device.
    run = device_run() if on_device and not public else None
    device_names = {t.name for t in on_device}
    try:
        if run is not None and answers is None and reference_dir is not None:
            reference_phase(
                run, device_work(on_device, Path(submission), Path(reference_dir)), seed, limits=limits, gate=gate
            )
        parts = plan([t for t in topics if run is not None or t not in on_device], jobs, Path(submission))
        pieces: list[Piece[Any]] = []
        if on_device and run is None:
            pieces.append(
                Piece(
                    "device",
                    on_the_device,
                    sum(t.time_limit + grace for t in on_device),
                    lambda seconds: {t.name: abandoned(t, seconds) for t in on_device},
                )
            )
        by_cost = sorted(parts, key=lambda part: part.cost, reverse=True)  # the costliest start first
        for part in by_cost:
            on_it = run if part.name in device_names else None
            pieces.append(
                Piece(
                    id(part),
                    partial(one, part.topic, run=on_it),
                    # its speed rounds wait for the device, which the topics' speed checks take in turn
                    sum(t.time_limit + grace for t in on_device) if on_it else part.topic.time_limit + grace,
                    partial(abandoned, part.topic),
                )
            )
        with ThreadPoolExecutor(1) as pool:
            grading = pool.submit(run_all, pieces, min(jobs, len(pieces)))
            if run is not None and needs_device(on_device, Path(submission)):
                run.open_student()  # this thread outlives the topics': the chip opens while they start
                if run.device.compiles_ahead:  # in the order the topics start: their checks come first
                    first = list(dict.fromkeys(part.name for part in by_cost))
                    in_order = sorted(on_device, key=lambda t: first.index(t.name))  # every topic has a part
                    compile_ahead(run, in_order, Path(submission), gate, grading.done)
            done = grading.result()
    finally:
        if run is not None:
            run.close()
    on_device_graded: dict[str, Graded] = done.get("device", {})
    graded: list[Graded] = [
        on_device_graded[topic.name]
        if topic.name in on_device_graded
        else merged(topic, [done[id(p)] for p in parts if p.name == topic.name])
        for topic in topics
    ]
    tests = [t for topic_tests, _, _ in graded for t in topic_tests]
    platform: dict[str, Any] = next(
        (p for topic, (_, p, _) in zip(topics, graded) if p and topic.name in device_names), {}
    ) or next((p for _, p, _ in reversed(graded) if p), {})
    summary = {topic.name: entry for topic, (_, _, entry) in zip(topics, graded)}
    extra = {
        "seed": seed,
        "mode": "public" if public else "hidden",
        "platform": platform,
        "topics": summary,
        "sandbox": "on" if isolate else "off",
        "reference": "recorded" if answers else "live",
        "jobs": jobs,
    }
    if device is not None:
        extra["device"] = {**device.summary(), "topics": [t.name for t in on_device]}
    if not isolate and not public:
        extra["sandbox_warning"] = (
            "student code ran without the sandbox: it could read files and reach the "
            "network, and its verdicts are not protected against a hostile submission"
        )
    return Result(tests, time.monotonic() - started, extra)


def off_device_env(device: Device | None) -> dict[str, str]:
    """The variables of every worker not on `device`: on the host's CPU. Without a device on a
    machine that has an accelerator (`--device cpu`), no worker may open it either."""
    if device is not None:
        return device.env(on_device=False)
    return {"JAX_PLATFORMS": "cpu"} if detect() is not None else {}


SPLIT_MIN_COST = 20
"""The least weight of a part that a spare job slot splits: below it (most topics), a second
worker's start costs about what the part's halves side by side save (benchmarks/results/
2026-12-04-grading-time.md, the seventh session)."""


def exercise_costs(topic: Topic, module: Path | None = None) -> dict[str, int]:
    """Each exercise's rough weight in grading time: its checks' (`Check.cost`), zero for a
    stub read off `module` when given (a stub is never called)."""
    names = [ex.name for ex in topic.exercises]
    stubbed = stubs.find(module.read_text(errors="replace"), names) if module and module.is_file() else {}
    return {ex.name: 0 if ex.name in stubbed else sum(check.cost for check in ex.checks) for ex in topic.exercises}


def estimated_cost(topic: Topic, module: Path | None = None) -> int:
    """A rough weight of a topic's grading time (its checks, less a stub's, read off `module`
    when given; a VMC run and speed rounds weigh more), so that side by side the longest topics
    start first and the run ends sooner."""
    return sum(exercise_costs(topic, module).values())


@dataclass(frozen=True)
class Part:
    """Exercises of one topic graded together in one pair of workers: the whole topic, or a part
    of it (`topic` then keeps only those exercises, in the topic's order)."""

    topic: Topic
    cost: int

    @property
    def name(self) -> str:
        return self.topic.name


def plan(topics: list[Topic], jobs: int, submission: Path) -> list[Part]:
    """What is graded side by side: each topic whole, unless fewer topics than `jobs` leave job
    slots spare. Then each spare slot splits the topic whose costliest part costs most (at least
    `SPLIT_MIN_COST`, with more exercises that are not stubs than parts) into one more part, its
    exercises dealt out so that the parts cost about the same. Each part starts its own workers
    (a worker's start costs about 0.5 s of CPU, NetKet's import more) and grades its exercises
    as the whole topic would: every exercise draws its cases from a generator of its own.

    `topics`: the specs to grade; `jobs`: job slots; `submission`: the folder of `<topic>.py`
    files, read for stubs (which weigh nothing and never make a part of their own)."""
    costs = {t.name: exercise_costs(t, submission / f"{t.name}.py") for t in topics}
    counts = {t.name: 1 for t in topics}
    for _ in range(max(0, jobs - len(topics))):
        widest = {
            t.name: max(_deal(costs[t.name], counts[t.name]).values())
            for t in topics
            if counts[t.name] < sum(1 for c in costs[t.name].values() if c)
        }
        if not widest or max(widest.values()) < SPLIT_MIN_COST:
            break
        counts[max(widest, key=lambda name: widest[name])] += 1
    parts = []
    for topic in topics:
        if counts[topic.name] == 1:
            parts.append(Part(topic, sum(costs[topic.name].values())))
            continue
        for names, cost in _deal(costs[topic.name], counts[topic.name]).items():
            exercises = tuple(ex for ex in topic.exercises if ex.name in names)
            parts.append(Part(replace(topic, exercises=exercises), cost))
    return parts


def _deal(costs: dict[str, int], k: int) -> dict[frozenset[str], int]:
    """Exercise names dealt into `k` groups of about equal cost, each group with its cost: the
    costliest first, each to the cheapest group so far; stubs (cost 0) join the first group."""
    groups: list[list[str]] = [[] for _ in range(k)]
    totals = [0] * k
    for name in sorted((n for n, c in costs.items() if c), key=lambda n: -costs[n]):
        i = totals.index(min(totals))
        groups[i].append(name)
        totals[i] += costs[name]
    groups[0].extend(n for n, c in costs.items() if not c)
    return {frozenset(group): total for group, total in zip(groups, totals)}


def merged(topic: Topic, graded: list[Graded]) -> Graded:
    """One topic's tests, platform and summary from its parts' (one part: as it is): the tests in
    the topic's exercise order, the scores summed, the seconds of the slowest part, and the
    timings of every exercise with the slowest workers' start, the number of parts and the
    compilations of all their workers."""
    if len(graded) == 1:
        return graded[0]
    order = {ex.name: i for i, ex in enumerate(topic.exercises)}
    tests = sorted((t for part_tests, _, _ in graded for t in part_tests), key=lambda t: order[t.exercise])
    entries = [entry for _, _, entry in graded]
    timings = {
        "start": max(e["timings"].get("start", 0.0) for e in entries),
        "parts": len(graded),
        "exercises": {name: seconds for e in entries for name, seconds in e["timings"].get("exercises", {}).items()},
        "compile": {},
    }
    for e in entries:
        for side, stats in e["timings"].get("compile", {}).items():
            total = timings["compile"].setdefault(side, {"compilations": 0, "seconds": 0.0})
            total["compilations"] += stats["compilations"]
            total["seconds"] = round(total["seconds"] + stats["seconds"], 3)
    platform = next((p for _, p, _ in graded if p), {})
    return tests, platform, topic_summary(tests, max(e["seconds"] for e in entries), timings, platform)


def topic_summary(
    tests: list[TestResult], seconds: float, timings: dict[str, Any], platform: dict[str, Any]
) -> dict[str, Any]:
    """A topic's entry in `extra_data["topics"]`: its points, its wall seconds, where the time
    went (`grade_topic`'s timings) and the trusted worker's platform."""
    return {
        "score": round(sum(t.score for t in tests), 4),
        "max_score": round(sum(t.max_score for t in tests), 4),
        "seconds": seconds,
        "timings": timings,
        "platform": platform,
    }


def grade_topic(
    topic: Topic,
    module: Path,
    reference: Path | None,
    seed: int,
    *,
    public: bool,
    isolate: bool,
    limits: Limits = Limits(),
    on_test: Listener | None = None,
    answers: Live | None = None,
    timings: dict[str, Any] | None = None,
    gate: ClockGate | None = None,
    spares: Spares | None = None,
    device: DeviceRun | None = None,
    cpu_env: dict[str, str] | None = None,
    watch: Watch | None = None,
) -> tuple[list[TestResult], dict[str, Any]]:
    """All tests of one topic, from a private copy of the student's module. `timings` (when
    given) receives where the time went: the workers' start, per exercise the reference's
    outputs ("cases") and each check, in seconds, and what each worker compiled, as its JAX
    reports it (see `benchmarks/bench.py`). `gate` is shared by the topics graded side by side.
    `device`: the grading's device side, whose shared worker runs the student's functions
    (`jaxlings.grading.device_grading`); `cpu_env`: the variables that keep the other workers on
    the host's CPU, where the machine has an accelerator. `watch`: the topic's outside deadline
    (`jaxlings.grading.watchdog`), told how to stop its workers."""
    timings = {} if timings is None else timings
    gate = gate or ClockGate()
    with tempfile.TemporaryDirectory(prefix=f"jaxlings-{topic.name}-") as tmp:
        private = Path(tmp) / module.name
        shutil.copyfile(module, private)
        text = private.read_text(errors="replace")
        shown = {module.name: words.shown_path(module)}  # the private copy's paths, as the student's file
        typo = source.syntax_error(text, shown[module.name])
        if typo:  # reported at once, before any worker starts: one cause, shown once by `progress.rows`
            return failed_topic(topic, typo), {}
        stubbed = stubs.find(text, [ex.name for ex in topic.exercises])
        t0 = time.monotonic()
        with gate.shared():
            session = TopicSession(
                topic,
                private,
                reference,
                seed,
                public=public,
                isolate=isolate,
                limits=limits,
                answers=answers,
                needs_reference=needs_reference(topic, stubbed, answers),
                spares=spares,
                device=device,
                cpu_env=cpu_env,
            )
        if watch is not None:
            watch.guard(session.abandon)
        with session:
            timings["start"] = round(time.monotonic() - t0, 3)
            if session.load_error:
                return failed_topic(topic, words.student_paths(session.load_error, shown)), session.platform
            tests: list[TestResult] = []

            def done(test: TestResult) -> None:
                """A test as the student reads it (their file's path), told as soon as it is made."""
                test = replace(test, output=words.student_paths(test.output, shown))
                tests.append(test)
                if on_test:
                    on_test(test)

            for ex in topic.exercises:
                ex_timings = timings.setdefault("exercises", {}).setdefault(ex.name, {})
                if ex.name in stubbed:
                    for test in stub_tests(topic, ex, stubbed[ex.name]):
                        done(test)
                else:
                    grade_exercise(session, ex, ex_timings, gate, on_test=done)
            timings["compile"] = session.compile_stats()
            return tests, session.platform


def needs_reference(topic: Topic, stubbed: dict[str, str], answers: Live | None) -> bool:
    """Whether the trusted worker starts with the student's: for any exercise that is not a
    stub when the reference runs live; replaying expectations, only for one whose checks
    analyse programs (elsewhere it would start and sit idle: a second of CPU per topic)."""
    graded = [ex for ex in topic.exercises if ex.name not in stubbed]
    if answers is not None and answers.mode == "replay":
        return any(check.analyses for ex in graded for check in ex.checks)
    return bool(graded)


def _gated(session: TopicSession, gate: ClockGate, check: Check | None) -> contextlib.AbstractContextManager[None]:
    """How a check (None: the reference's outputs) holds the gate: a timed one alone where the
    clock is wall time, or where its two sides are timed apart (on a device: the reference's
    rounds in a phase of their own, so each side must see the same quiet machine), everything
    else shared."""
    if check is not None and check.gates_on_device and session.device_run is not None and not session.public:
        return contextlib.nullcontext()  # it takes the gate itself (`CheckContext.gated`)
    if check is not None and check.timed and (session.wall_clock or session.device is not None):
        return gate.exclusive()
    return gate.shared()


def grade_exercise(
    session: TopicSession,
    ex: Exercise,
    timings: dict[str, Any] | None = None,
    gate: ClockGate | None = None,
    *,
    on_test: Listener | None = None,
) -> list[TestResult]:
    """Run the exercise's checks in order (`checks.ordered`: each after those it requires or
    reads, else as declared); each one's seconds (and the cases') go into `timings`, and each
    test goes to `on_test` as soon as its check ends (`grade watch` shows which one runs)."""
    timings = {} if timings is None else timings
    gate = gate or ClockGate()
    t0 = time.monotonic()
    with _gated(session, gate, None):
        ctx = CheckContext.start(session, ex, gate)
    timings["cases"] = round(time.monotonic() - t0, 3)
    tests = []
    died_in = None
    for check in ordered(ctx.exercise.checks):  # as the context holds it: on an accelerator, at its tolerance
        t0 = time.monotonic()
        deaths = session.deaths
        waiting = waiting_for(check, ctx.findings.passed)
        if died_in:
            outcome = Outcome.fail(f"not run: the function took its process down in the `{died_in}` check")
        elif waiting:
            outcome = Outcome.fail(waiting, waits=True)
        else:
            log.info("%s.%s: %s", session.topic.name, ex.name, check.name)
            try:
                with _gated(session, gate, check):
                    outcome = check.run(ctx)
            except StudentError as exc:
                outcome = Outcome.fail(str(exc))
            except GraderError:
                raise
            except Exception as exc:  # noqa: BLE001 - one check's surprise must not lose the result
                outcome = internal_error(exc)
        if session.deaths > deaths:
            died_in = check.name
        ctx.findings.passed[check.name] = outcome.fraction >= 1.0
        timings[check.name] = round(time.monotonic() - t0, 3)
        log.info(
            "%s.%s: %s %s in %.2f s%s",
            session.topic.name,
            ex.name,
            check.name,
            outcome.fraction,
            timings[check.name],
            "" if outcome.fraction >= 1.0 else f": {outcome.message}",
        )
        tests.append(TestResult.of(session.topic.name, ex.name, check.name, check.points, outcome, VISIBILITY))
        if on_test:
            on_test(tests[-1])
    return tests


def internal_error(exc: Exception) -> Outcome:
    """A check that failed in an unforeseen way (a reply shaped as no schema foresaw, a grader
    bug): the test fails with the reason, the traceback goes to stderr and into the test's
    data, and the rest of the run goes on, so that the result stays complete."""
    trace = traceback.format_exc()
    print(trace, file=sys.stderr)
    return Outcome.fail(
        f"the grader could not judge this check ({type(exc).__name__}: {exc}); please report it",
        internal_error=trace[-2000:],
    )


def stub_tests(topic: Topic, ex: Exercise, message: str) -> list[TestResult]:
    """The tests of an exercise whose function is a stub (`jaxlings.grading.stubs`: it raises
    NotImplementedError on every call), with no call made: zero on every check, each saying so
    as a call would have (checks that wait for `correct` say that)."""
    raised = format_error({"type": "NotImplementedError", "message": message}, f"{topic.name}.{ex.name}")
    return [
        TestResult.of(
            topic.name,
            ex.name,
            check.name,
            check.points,
            Outcome.fail(
                waiting_for(check, {}) or raised,
                stub=True,
                **({"waits": True} if waiting_for(check, {}) else {}),
                **({"advisory": True} if check.advisory else {}),
            ),
            VISIBILITY,
        )
        for check in ordered(ex.checks)
    ]


def failed_topic(topic: Topic, reason: str) -> list[TestResult]:
    """Every test of a topic at zero, each with the reason (a missing or unimportable module)."""
    return [
        TestResult.of(topic.name, ex.name, check.name, check.points, Outcome.fail(reason), VISIBILITY)
        for ex in topic.exercises
        for check in ordered(ex.checks)
    ]

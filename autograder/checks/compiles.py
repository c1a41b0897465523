"""`compiles`: a stream of calls (`Stream.make`) gives the reference's outputs and compiles at
most `Stream.max_compiles` times: static arguments, padding to buckets and caching done right.

Every timed request carries its own inputs. Each side's worker jits (or takes) the function
once and clears JAX's caches (`prepare`, which carries no argument); the grader then sends the
calls one by one, each with its own arguments (`step`), and times each on its own clock (CPU
time of the worker's cgroup; wall time without one) from sending the call to holding its
reply: the arguments' transfer to the device is inside the call's window, on both sides alike,
and the student's process learns a call's arguments only inside the window that times it, so
no work for a call (a compilation above all) can be done before its clock runs. Each student
call is judged as it arrives (its output against the reference's) and dropped.

Three counts, one verdict.
- The student's process reports the compilations each call caused (JAX's events): it names the
  problem, but a module can switch those events off, so this count is advisory.
- The trusted count is read off the grader's clock: a call that compiles costs tens of
  milliseconds where a call that reuses a compilation costs a fraction of one. Every call of
  the student's stream that took longer than `drop` (below) runs a second time, in order,
  after the stream, its arguments sent again (a call may donate them): a right function
  compiles nothing then, so the replay's time is what the call itself costs. A call counts as
  a compilation when its first run took more than its replay by over `drop` (a compilation the
  replay did not repeat), or when its replay alone took over `steady` (a call that compiles
  every time). Both come from the reference's own calls, whose compilations it reports
  truthfully (measured here: compiling calls 35-40 ms, cached ones 0.1-0.3 ms, stray pauses
  up to ~3 ms): `drop` is the geometric mean of its cached calls' median and its cheapest
  compiling call, and at least a quarter of that call; `steady` is half that call, and at
  least `drop`. So a call that does far more work than the reference's, but the same work each
  time, is not taken for a compilation until the work alone costs half of one; and whatever the
  replay does, a first run of `drop + steady` or more (three quarters of a compilation) counts
  (`counted`). One (or a quarter of the allowance) is forgiven to this count, for a collection
  pause or a stray page fault.
- The trusted weight counts the programs a call compiled, not the calls: a function run
  without jit compiles every operation as a program of its own on each new shape, which the
  clock sees as one slow call per shape (as many as the reference's) and which no module's
  silence can hide, since compiling costs CPU time inside the call's window. Each counted call
  is weighed in the reference's compilations (`weighed`: what compiling cost it, over what
  compiling cost the reference on the same call), and together they may weigh
  `1.25 * max_compiles` plus half the forgiven calls (`budget`). Measured on the streams of
  `static_args`, `jit_basics` and `training` on a loaded 2-core machine (load ~20): the
  reference weighs 0.86-1.05 per compilation (bce_fast 3.7 of a budget of 5.5, standardize
  7.7 of 14.75, window_sums 3.1 of 4.25, train_step 0.86 of 1.75, create_filled 3.0 of 4.25);
  the same function run eagerly with JAX's events silenced weighs 38 (bce_fast), 24
  (standardize, its padded kernel eager), 5.4 (window_sums), 3.7 (train_step), and fails.
  `create_filled` eagerly compiles one operation per shape, the jitted program's size, and
  passes (3.4): it compiles what the reference does. Other signals were measured and set
  aside: executable memory (one anonymous executable mapping per XLA:CPU program, read in
  /proc/PID/maps from outside) tells eager programs apart, but `jax.clear_caches()` after a
  call unmaps them, and page faults vary with the allocator; CPU time spent compiling can only
  be moved into a replay, where `steady` and `weighed` (the whole first run counts where the
  replay exceeds `steady`) take it.
Any count past its allowance fails the check.
"""

from __future__ import annotations

import statistics
import time
from typing import Callable

from autograder.compare import mismatch, shapes
from autograder.results import Outcome
from autograder.sandbox import Worker
from autograder.session import ExerciseRun, StudentError, TopicSession
from autograder.spec import Case, Exercise, Stream

SUMMARY = "a stream of calls gives the right outputs with no more compilations than allowed."
"""What the check asks, in one line for students (notebooks, reports)."""


def describe(ex, ctx) -> str:
    """What the check asks of `ex`, for its docstring's Graded list (`autograder.course.graded`)."""
    opts: Stream = ex.options["compiles"]
    forgiven = max(1, opts.max_compiles // 4)
    return (f"a stream of {opts.calls} calls, {ctx.jitted(opts.jit, stream=True)}, gives the reference's outputs "
            f"and compiles at most {opts.max_compiles} time{'s' if opts.max_compiles != 1 else ''} (counted by JAX's "
            f"compilation events and by the grader's clock: each slow call runs again after the stream, and a "
            f"call whose first run takes a compilation's time more than its replay, or whose replay alone takes "
            f"half a compilation's, counts as one; {forgiven} such call{'s' if forgiven != 1 else ''} forgiven; and "
            f"the time those calls spend compiling may add up to at most {budget(opts.max_compiles, forgiven):g} of "
            "the reference's compilations, so a function whose operations compile one by one, without jit, fails).")

FALLBACK_THRESHOLD = 0.005  # seconds, where the reference gives no cached or no compiling call
WEIGHT_SLACK = 1.25  # of the allowance, for the counted calls' weight in reference compilations (`budget`)


def timed_step(call: Callable[..., dict], worker: Worker, fn: str, args: tuple) -> tuple[dict, float, str]:
    """One call of the prepared stream, its arguments sent with it, timed by the grader: (the
    reply, its seconds, "cpu" or "wall"). The window runs from sending the request to holding
    the reply, so the arguments' decoding and transfer to the device are inside it."""
    cpu0, t0 = worker.cpu_seconds(), time.perf_counter()
    reply = call("step", fn=fn, args=args)
    wall, cpu1 = time.perf_counter() - t0, worker.cpu_seconds()
    if cpu0 is None or cpu1 is None:
        return reply, wall, "wall"
    return reply, cpu1 - cpu0, "cpu"


def reference_steps(call: Callable[..., dict], worker: Worker, setup: dict, cases: list[Case]) -> dict:
    """The reference's stream, prepared (`setup`: no arguments) and run call by call: {"outs",
    "counts" (as its worker reports them: truthful), "seconds" (per call), "clock"}. Its outputs
    are kept: every student call is compared with them as it arrives."""
    call("prepare", **setup)
    outs, counts, seconds, clocks = [], [], [], set()
    for case in cases:
        reply, t, clock = timed_step(call, worker, setup["fn"], case.args)
        outs.append(reply["out"])
        counts.append(reply["counts"])
        seconds.append(t)
        clocks.add(clock)
    return {"outs": outs, "counts": counts, "seconds": seconds, "clock": "wall" if "wall" in clocks else "cpu"}


def split(ref: dict) -> tuple[list[float], list[float]]:
    """The seconds of the reference's calls that compiled, and of those that did not."""
    compiling = [t for t, (c, _) in zip(ref["seconds"], ref["counts"]) if c > 0]
    cached = [t for t, (c, _) in zip(ref["seconds"], ref["counts"]) if c == 0]
    return compiling, cached


def thresholds(ref: dict) -> tuple[float, float]:
    """(`drop`, `steady`): how much longer than its replay a call's first run must take, and
    how long a replay alone, to count as a compilation; from the reference's calls."""
    compiling, cached = split(ref)
    if not compiling or not cached:
        return FALLBACK_THRESHOLD, 2 * FALLBACK_THRESHOLD
    drop = max((statistics.median(cached) * min(compiling)) ** 0.5, min(compiling) / 4)
    return drop, max(drop, min(compiling) / 2)


def counted(first: list[float], replay: dict[int, float], drop: float, steady: float) -> list[int]:
    """The calls (0-based) the grader's clock takes for compilations: a first run longer than
    the call's replay by over `drop`, or a replay over `steady`. Only calls whose first run
    took over `drop` need a replay (`replay` maps their index to its time); the others cannot
    count. A replay made slow on purpose cannot hide a first run of `drop + steady` or more:
    one of the two must exceed its bound."""
    return [i for i, t1 in enumerate(first) if t1 > drop and (t1 - replay[i] > drop or replay[i] > steady)]


def compile_seconds(ref: dict) -> list[float | None]:
    """What compiling cost the reference on each call of the stream, None where it compiled
    nothing: the call's time less its cached calls' median (its cached baseline)."""
    compiling, cached = split(ref)
    base = statistics.median(cached) if cached else 0.0
    return [max(t - base, t / 2) if c > 0 else None for t, (c, _) in zip(ref["seconds"], ref["counts"])]


def weighed(first: list[float], replay: dict[int, float], compiling: list[int], steady: float,
            ref: dict) -> dict[int, float]:
    """Each counted call (`counted`) weighed in the reference's compilations: what compiling cost
    it (its first run's excess over its replay, or the whole first run where the replay took
    over `steady` and so tells nothing of the call's own work) over what compiling cost the
    reference on the same call (the median of its compilations where it compiled nothing
    there). A call that compiles as the reference's weighs about 1; one that compiles every
    operation of a function run eagerly, each a program of its own, weighs the number of its
    operations' compilations' worth (measured: 2 to 8, `Stream`'s exercises)."""
    per_call = compile_seconds(ref)
    known = [s for s in per_call if s is not None]
    if not known:
        return {}
    typical = statistics.median(known)
    weights = {}
    for i in compiling:
        cost = first[i] - replay[i] if replay[i] <= steady else first[i]
        weights[i] = cost / (per_call[i] if per_call[i] is not None else typical)
    return weights


def budget(max_compiles: int, forgiven: int) -> float:
    """How many of the reference's compilations the counted calls may weigh together (`weighed`):
    the allowance with a quarter more, for programs larger than the reference's and for noise
    (measured: the reference's own program, compiled in the student's worker, weighs 0.86-1.05
    per compilation, timed apart on a loaded machine), and half of each call `counted` forgives
    (a stray pause that crosses `drop` weighs a quarter to a half of a compilation)."""
    return WEIGHT_SLACK * max_compiles + forgiven / 2


def student_steps(session: TopicSession, ex: Exercise, setup: dict, cases: list[Case], expected: list,
                  drop: float) -> dict | str:
    """The student's stream, judged on arrival: each call's output is compared with the
    reference's as soon as it comes back and then dropped; after the stream, every call slower
    than `drop` runs again (its arguments sent again: a call may donate them), compared too.
    What was wrong (a message), or the figures: {"seconds" (first runs), "replay" ({index:
    seconds}), "counts" (as the worker reports them), "replay_compiles", "clock"}."""
    worker, fn = session.student(), setup["fn"]
    session.call_student("prepare", **setup)
    seconds, counts, clocks = [], [], set()
    for i, case in enumerate(cases):
        reply, t, clock = timed_step(session.call_student, worker, fn, case.args)
        if (problem := mismatch(expected[i], reply["out"], ex.rtol, ex.atol, ex.outputs)) is not None:
            return f"call {i + 1} of the stream {shapes(case.args)}: {problem}"
        seconds.append(t)
        counts.append(reply["counts"])
        clocks.add(clock)
    replay, replay_compiles = {}, 0
    for i in [i for i, t in enumerate(seconds) if t > drop]:
        reply, t, clock = timed_step(session.call_student, worker, fn, cases[i].args)
        if (problem := mismatch(expected[i], reply["out"], ex.rtol, ex.atol, ex.outputs)) is not None:
            return f"replayed call {i + 1} of the stream {shapes(cases[i].args)}: {problem}"
        replay[i] = t
        replay_compiles += reply["counts"][0]
        clocks.add(clock)
    return {"seconds": seconds, "replay": replay, "counts": counts, "replay_compiles": replay_compiles,
            "clock": "wall" if "wall" in clocks else "cpu"}


def run(session: TopicSession, run: ExerciseRun) -> Outcome:
    ex = run.exercise
    opts: Stream = ex.options["compiles"]
    cases = session.draw(ex.name, "compiles", lambda rng: opts.make(rng, opts.calls))
    setup = {"fn": ex.name, "jit": opts.jit, "static_argnums": ex.static_argnums}

    def reference() -> dict:
        with session.student_paused():
            return reference_steps(session.call_reference, session.ref, setup, cases)

    ref = session.answer("steps", {**setup, "cases": [c.args for c in cases]}, reference)
    drop, steady = thresholds(ref)
    try:
        got = student_steps(session, ex, setup, cases, ref["outs"], drop)
    except StudentError as exc:
        return Outcome.fail(f"a stream of {len(cases)} calls: {exc}")
    if isinstance(got, str):
        return Outcome.fail(got)
    replay = got["replay"]
    compiling = counted(got["seconds"], replay, drop, steady)
    reported = sum(c for c, _ in got["counts"])
    forgiven = max(1, opts.max_compiles // 4)
    cached = split(ref)[1]
    clock = got["clock"]
    data = {"calls": len(cases), "compiles": len(compiling), "max_compiles": opts.max_compiles,
            "reference_compiles": sum(c for c, _ in ref["counts"]), "threshold_ms": round(drop * 1e3, 3),
            "steady_threshold_ms": round(steady * 1e3, 3), "clock": clock,
            "seconds": round(sum(got["seconds"]), 4), "reference_seconds": round(sum(ref["seconds"]), 4),
            "compiling_calls": [i + 1 for i in compiling],
            "reference_compiling_calls": [i + 1 for i, (c, _) in enumerate(ref["counts"]) if c > 0],
            "call_ms": [round(t * 1e3, 3) for t in got["seconds"]],
            "replay_ms": [round(replay[i] * 1e3, 3) if i in replay else None for i in range(len(cases))],
            "reference_call_ms": [round(t * 1e3, 3) for t in ref["seconds"]],
            "advisory": {"compiles": reported, "traces": sum(t for _, t in got["counts"]),
                         "replay_compiles": got["replay_compiles"]}}
    weights = weighed(got["seconds"], replay, compiling, steady, ref)
    weight, allowed = sum(weights.values()), budget(opts.max_compiles, forgiven)
    data.update(weight=round(weight, 2), weight_budget=round(allowed, 2),
                call_weights=[[i + 1, round(w, 2)] for i, w in weights.items()])
    if reported > opts.max_compiles:
        return Outcome.fail(f"{len(cases)} calls compiled {reported} times; at most {opts.max_compiles} allowed", **data)
    if len(compiling) > opts.max_compiles + forgiven:
        typical = f"; the reference's cached calls take {statistics.median(cached) * 1e3:.2f} ms" if cached else ""
        return Outcome.fail(f"{len(compiling)} of the {len(cases)} calls took as long as a compilation (a first run "
                            f"over its replay by more than {drop * 1e3:.1f} ms of {clock} time, or a replay over "
                            f"{steady * 1e3:.1f} ms{typical}); at most {opts.max_compiles} compilations are allowed, "
                            "whether or not JAX's events count them", **data)
    if weight > allowed:
        heaviest = max(weights, key=weights.get)
        return Outcome.fail(f"the {len(compiling)} calls that took a compilation's time spent as long compiling as "
                            f"{weight:.1f} of the reference's compilations on the same calls (at most {allowed:g}; "
                            f"call {heaviest + 1} alone {weights[heaviest]:.1f}): more programs than calls, as when "
                            "every operation compiles on its own (the function runs without jit), whether or not JAX's "
                            "events count them", **data)
    return Outcome.ok(f"{len(cases)} calls, {reported} compilations (at most {opts.max_compiles}); "
                      f"{len(compiling)} calls took a compilation's time", **data)

"""`compiles`: a stream of calls (`Compiles.make`) gives the reference's outputs and compiles at
most `Compiles.max_compiles` times: static arguments, padding to buckets and caching done right.

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
  up to ~3 ms): with a compilation's cost the cheapest of its compiling calls' seconds per
  program compiled (a sharded step's first call compiles the step and five small slicing
  programs in ~0.7 s, while the step alone, jitted anew on every call, costs ~0.26 s), `drop`
  is the geometric mean of its cached calls' median and that cost, and at least a quarter of
  it; `steady` is half that cost, and at least `drop`. So a call that does far more work than the reference's, but the same work each
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

Work done before the calls come. The stream's shapes are drawn from a public family (the student
package describes it), so a module could compile the programs of the whole family at import, or
in threads of its own while other checks run, and make every call of the stream a lookup. In
hidden grading the stream therefore runs on two workers of its own (`CheckContext.own_sides`),
the reference's and the student's, started for it and closed after it, on the host's CPU (on an
accelerator the chip stays with its one process; compilations are counted alike there). Each
worker's CPU outside the calls' windows, from its start to its last call (`untimed`: its
import, whatever that started, `prepare`, the gaps), is read from its cgroup, which counts every
thread; the student's may exceed the reference's by `UNTIMED_SLACK` (1 s) plus a quarter of the
reference's (`Compiles.untimed_excess`). Measured on the five streams of the course, 15 gradings
of the solutions on a 2-core machine: the two differ by -0.17 to +0.16 s (the reference's own
0.8-2.4 s); compiling `train_step` ahead for six batch sizes read +7 s, for the whole family
of 48 +69 s (`tests/submissions/training__attack_precompiled_family.py`). A public run keeps the
topic's workers and judges no such excess: the recording's reference ran on another machine.

A public run (`grade check`) judges the two counts and reports the weight without judging it:
the recording timed the reference's compilations on the machine that built the package, and
one compilation's cost differs between machines, and between runs of one recording, by more
than the weight's slack (measured: `static_args.create_filled`'s recorded reference compiled
its calls in 41, 23 and 23 ms, where the same calls cost 44-46 ms each on the machine that
replayed it, and the solution weighed 4.9 of 4.25). A right function's counts hold on any
machine (a compilation costs tens of times a cached call); the weight is judged on submission,
where both sides run on the grading machine.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from jaxlings.grading.check import Check
from jaxlings.grading.compare import mismatch, shapes
from jaxlings.grading.context import CheckContext, Side, StudentError
from jaxlings.grading.results import Outcome
from jaxlings.grading.spec import Case, Exercise, StreamSampler

if TYPE_CHECKING:
    from jaxlings.grading.checks.vocabulary import Words

FALLBACK_THRESHOLD = 0.005  # seconds, where the reference gives no cached or no compiling call
WEIGHT_SLACK = 1.25  # of the allowance, for the counted calls' weight in reference compilations (`budget`)
UNTIMED_SLACK = 1.0  # seconds of CPU outside the windows a student's worker may spend beyond the reference's


def reference_steps(side: Side, setup: dict[str, Any], cases: list[Case]) -> dict[str, Any]:
    """The reference's stream, prepared (`setup`: no arguments) and run call by call: {"outs",
    "counts" (as its worker reports them: truthful), "seconds" (per call), "clock"}, and on a
    worker of its own, "untimed": its CPU outside the calls' windows from its start to the
    last call (`untimed`). Its outputs are kept: every student call is compared with them as
    it arrives."""
    side.call("prepare", **setup)
    outs, counts, seconds, clocks = [], [], [], set()
    for case in cases:
        reply, t, clock = side.step(setup["fn"], case.args)
        outs.append(reply["out"])
        counts.append(reply["counts"])
        seconds.append(t)
        clocks.add(clock)
    clock = "wall" if "wall" in clocks else "cpu"
    return {
        "outs": outs,
        "counts": counts,
        "seconds": seconds,
        "clock": clock,
        "untimed": untimed(side, seconds, clock),
    }


def untimed(side: Side, windows: list[float], clock: str) -> float | None:
    """The CPU time `side`'s worker spent outside the stream's windows (`windows`, on the CPU
    clock) from its start: importing, preparing, and whatever its threads did between calls.
    None on the wall clock, where no worker's own CPU is read, and on the topic's worker,
    which every check shares."""
    life = side.lifetime_cpu() if clock == "cpu" else None
    return None if life is None else max(0.0, life - sum(windows))


def early_message(early: dict[str, float]) -> str:
    """What a student reads when their worker's CPU outside the stream's windows (`untimed`)
    exceeds the reference's by more than allowed (`Compiles.untimed_excess`'s figures)."""
    return (
        f"from its start to the stream's last call, the process of your module spent {early['untimed_s']:.2f} s "
        f"of CPU outside the calls' windows, {early['untimed_excess_s']:.2f} s more than the reference's doing the "
        f"same (about {early['untimed_compilations']:g} of its compilations; at most {early['untimed_allowed_s']:g} s "
        "more): work for the stream's calls (compiling for their shapes above all) is counted whenever it is done, "
        "at import or in threads of its own before the calls come"
    )


def split(ref: dict[str, Any]) -> tuple[list[float], list[float]]:
    """The seconds of the reference's calls that compiled, and of those that did not."""
    compiling = [t for t, (c, _) in zip(ref["seconds"], ref["counts"]) if c > 0]
    cached = [t for t, (c, _) in zip(ref["seconds"], ref["counts"]) if c == 0]
    return compiling, cached


def thresholds(ref: dict[str, Any]) -> tuple[float, float]:
    """(`drop`, `steady`): how much longer than its replay a call's first run must take, and
    how long a replay alone, to count as a compilation; from the reference's calls, each of its
    compiling calls taken per program it compiled (a first call that compiles the function and
    a few small helper programs, as a sharded function's does, is no yardstick for one
    compilation)."""
    _, cached = split(ref)
    one = [t / c for t, (c, _) in zip(ref["seconds"], ref["counts"]) if c > 0]
    if not one or not cached:
        return FALLBACK_THRESHOLD, 2 * FALLBACK_THRESHOLD
    drop = max((statistics.median(cached) * min(one)) ** 0.5, min(one) / 4)
    return drop, max(drop, min(one) / 2)


def counted(first: list[float], replay: dict[int, float], drop: float, steady: float) -> list[int]:
    """The calls (0-based) the grader's clock takes for compilations: a first run longer than
    the call's replay by over `drop`, or a replay over `steady`. Only calls whose first run
    took over `drop` need a replay (`replay` maps their index to its time); the others cannot
    count. A replay made slow on purpose cannot hide a first run of `drop + steady` or more:
    one of the two must exceed its bound."""
    return [i for i, t1 in enumerate(first) if t1 > drop and (t1 - replay[i] > drop or replay[i] > steady)]


def compile_seconds(ref: dict[str, Any]) -> list[float | None]:
    """What compiling cost the reference on each call of the stream, None where it compiled
    nothing: the call's time less its cached calls' median (its cached baseline)."""
    _, cached = split(ref)
    base = statistics.median(cached) if cached else 0.0
    return [max(t - base, t / 2) if c > 0 else None for t, (c, _) in zip(ref["seconds"], ref["counts"])]


def weighed(
    first: list[float], replay: dict[int, float], compiling: list[int], steady: float, ref: dict[str, Any]
) -> dict[int, float]:
    """Each counted call (`counted`) weighed in the reference's compilations: what compiling cost
    it (its first run's excess over its replay, or the whole first run where the replay took
    over `steady` and so tells nothing of the call's own work) over what compiling cost the
    reference on the same call (the median of its compilations where it compiled nothing
    there). A call that compiles as the reference's weighs about 1; one that compiles every
    operation of a function run eagerly, each a program of its own, weighs the number of its
    operations' compilations' worth (measured: 2 to 8, `Compiles`' exercises)."""
    per_call = compile_seconds(ref)
    known = [s for s in per_call if s is not None]
    if not known:
        return {}
    typical = statistics.median(known)
    weights = {}
    for i in compiling:
        cost = first[i] - replay[i] if replay[i] <= steady else first[i]
        own = per_call[i]
        weights[i] = cost / (own if own is not None else typical)
    return weights


def budget(max_compiles: int, forgiven: int) -> float:
    """How many of the reference's compilations the counted calls may weigh together (`weighed`):
    the allowance with a quarter more, for programs larger than the reference's and for noise
    (measured: the reference's own program, compiled in the student's worker, weighs 0.86-1.05
    per compilation, timed apart on a loaded machine), and half of each call `counted` forgives
    (a stray pause that crosses `drop` weighs a quarter to a half of a compilation)."""
    return WEIGHT_SLACK * max_compiles + forgiven / 2


def student_steps(
    ctx: CheckContext,
    side: Side,
    setup: dict[str, Any],
    cases: list[Case],
    expected: list[dict[str, Any]],
    drop: float,
) -> dict[str, Any] | str:
    """The student's stream, judged on arrival: each call's output is compared with the
    reference's as soon as it comes back and then dropped; after the stream, every call slower
    than `drop` runs again (its arguments sent again: a call may donate them), compared too.
    What was wrong (a message), or the figures: {"seconds" (first runs), "replay" ({index:
    seconds}), "counts" (as the worker reports them), "replay_compiles", "clock", "untimed"
    (`untimed`, read after the last replay)}."""
    ex, fn = ctx.exercise, setup["fn"]
    side.call("prepare", **setup)
    seconds, counts, clocks = [], [], set()
    for i, case in enumerate(cases):
        reply, t, clock = side.step(fn, case.args)
        if (problem := mismatch(expected[i], reply["out"], ex.rtol, ex.atol, ex.outputs)) is not None:
            return f"call {i + 1} of the stream {shapes(case.args)}: {problem}"
        seconds.append(t)
        counts.append(reply["counts"])
        clocks.add(clock)
    replay, replay_compiles = {}, 0
    for i in [i for i, t in enumerate(seconds) if t > drop]:
        reply, t, clock = side.step(fn, cases[i].args)
        if (problem := mismatch(expected[i], reply["out"], ex.rtol, ex.atol, ex.outputs)) is not None:
            return f"replayed call {i + 1} of the stream {shapes(cases[i].args)}: {problem}"
        replay[i] = t
        replay_compiles += reply["counts"][0]
        clocks.add(clock)
    clock = "wall" if "wall" in clocks else "cpu"
    return {
        "seconds": seconds,
        "replay": replay,
        "counts": counts,
        "replay_compiles": replay_compiles,
        "clock": clock,
        "untimed": untimed(side, [*seconds, *replay.values()], clock),
    }


@dataclass(frozen=True, kw_only=True)
class Compiles(Check):
    """`Compiles(points, make=..., max_compiles=n, calls=100, jit=False)`: a stream of calls,
    `make(rng, calls)`, whose outputs must match the reference's and whose compilations must
    number at most `max_compiles`. `jit=False` calls the function as written (it manages its own
    jit). JAX's caches are cleared before the stream starts; each call's arguments travel with
    that call and are put on the device (`jax.device_put`, which compiles nothing) inside its
    timed window, so that nothing of the stream is known before its clock runs and the
    compilations counted are the function's own. The count the student's process reports is
    advisory; the trusted one is read off the grader's clock, call by call and weighed in the
    reference's compilations (see the module docstring)."""

    make: StreamSampler = field(compare=False)
    max_compiles: int
    calls: int = 100
    jit: bool = False

    name = "compiles"
    summary = "a stream of calls gives the right outputs with no more compilations than allowed."
    requires = ("correct",)
    after = ("jit",)
    timed = True
    cost = 2

    def describe(self, ex: Exercise, words: Words) -> str:
        forgiven = max(1, self.max_compiles // 4)
        counted = words.note(
            "compilations are counted by JAX's compilation events and by the grader's clock: each slow call runs "
            "again after the stream, and a call whose first run takes a compilation's time more than its replay, "
            f"or whose replay alone takes half a compilation's, counts as one; {forgiven} such call"
            f"{'s' if forgiven != 1 else ''} forgiven; and the time those calls spend compiling may add up to at "
            f"most {budget(self.max_compiles, forgiven):g} of the reference's compilations"
        )
        return (
            f"compile at most {self.max_compiles} time{'s' if self.max_compiles != 1 else ''}{counted} on a stream "
            f"of {self.calls} calls, {words.jitted(self.jit, stream=True)}, with the reference's outputs (a "
            "function whose operations compile one by one, without jit, fails)."
        )

    def stream(self, ctx: CheckContext) -> tuple[list[Case], dict[str, Any], dict[str, Any]]:
        """The stream's calls, their setup (no arguments), and the request the reference's
        answer is kept under."""
        ex = ctx.exercise
        cases = ctx.draw("compiles", lambda rng: self.make(rng, self.calls))
        setup = {"fn": ex.name, "jit": self.jit, "static_argnums": ex.static_argnums}
        return cases, setup, {**setup, "cases": [c.args for c in cases]}

    def run(self, ctx: CheckContext) -> Outcome:
        if ctx.public and ctx.device is not None and ctx.device.accelerator:
            return Outcome.pending(
                "the public expectations hold the reference's stream timed on a CPU, and a compilation on this "
                "accelerator takes another time"
            )
        cases, setup, request = self.stream(ctx)
        try:
            if ctx.public:  # the topic's workers; the reference's stream as recorded
                ref = ctx.answer("steps", request, lambda: self.reference(ctx.reference, ctx.student, setup, cases))
                got = student_steps(ctx, ctx.student, setup, cases, ref["outs"], thresholds(ref)[0])
            else:
                with ctx.own_sides() as (reference, student):
                    ref = ctx.answer("steps", request, lambda: self.reference(reference, student, setup, cases))
                    got = student_steps(ctx, student, setup, cases, ref["outs"], thresholds(ref)[0])
        except StudentError as exc:
            return Outcome.fail(f"a stream of {len(cases)} calls: {exc}")
        if isinstance(got, str):
            return Outcome.fail(got)
        return self.verdict(cases, ref, got, *thresholds(ref), weigh=not ctx.public)

    @staticmethod
    def untimed_excess(ref: dict[str, Any], got: dict[str, Any]) -> dict[str, float] | None:
        """The student's CPU outside the stream's windows against the reference's (`untimed`),
        each on a worker of its own from its start: the excess, and what it may be (`UNTIMED_SLACK`
        seconds, and a quarter more than the reference's own). None where either was not read."""
        ours, theirs = got.get("untimed"), ref.get("untimed")
        if ours is None or theirs is None:
            return None
        known = [s for s in compile_seconds(ref) if s is not None]
        one = statistics.median(known) if known else FALLBACK_THRESHOLD
        excess = ours - theirs
        return {
            "untimed_s": round(ours, 3),
            "reference_untimed_s": round(theirs, 3),
            "untimed_excess_s": round(excess, 3),
            "untimed_allowed_s": round(UNTIMED_SLACK + theirs / 4, 2),
            "untimed_compilations": round(max(0.0, excess) / one),
        }

    @staticmethod
    def reference(reference: Side, student: Side, setup: dict[str, Any], cases: list[Case]) -> dict[str, Any]:
        """The reference's stream (`reference_steps`), the student's worker frozen meanwhile
        (the topic's, or the one of its own, whose module's threads may be running)."""
        with reference.alone() if not student.own else student.paused():
            return reference_steps(reference, setup, cases)

    def verdict(
        self,
        cases: list[Case],
        ref: dict[str, Any],
        got: dict[str, Any],
        drop: float,
        steady: float,
        *,
        weigh: bool = True,
    ) -> Outcome:
        """The three counts against their allowances (see the module docstring); `weigh=False`
        (a public run) reports the weight without judging it."""
        replay = got["replay"]
        compiling = counted(got["seconds"], replay, drop, steady)
        reported = sum(c for c, _ in got["counts"])
        forgiven = max(1, self.max_compiles // 4)
        cached = split(ref)[1]
        clock = got["clock"]
        data: dict[str, Any] = {
            "calls": len(cases),
            "compiles": len(compiling),
            "max_compiles": self.max_compiles,
            "reference_compiles": sum(c for c, _ in ref["counts"]),
            "threshold_ms": round(drop * 1e3, 3),
            "steady_threshold_ms": round(steady * 1e3, 3),
            "clock": clock,
            "seconds": round(sum(got["seconds"]), 4),
            "reference_seconds": round(sum(ref["seconds"]), 4),
            "compiling_calls": [i + 1 for i in compiling],
            "reference_compiling_calls": [i + 1 for i, (c, _) in enumerate(ref["counts"]) if c > 0],
            "call_ms": [round(t * 1e3, 3) for t in got["seconds"]],
            "replay_ms": [round(replay[i] * 1e3, 3) if i in replay else None for i in range(len(cases))],
            "reference_call_ms": [round(t * 1e3, 3) for t in ref["seconds"]],
            "advisory": {
                "compiles": reported,
                "traces": sum(t for _, t in got["counts"]),
                "replay_compiles": got["replay_compiles"],
            },
        }
        weights = weighed(got["seconds"], replay, compiling, steady, ref)
        weight, allowed = sum(weights.values()), budget(self.max_compiles, forgiven)
        data.update(
            weight=round(weight, 2),
            weight_budget=round(allowed, 2),
            call_weights=[[i + 1, round(w, 2)] for i, w in weights.items()],
        )
        early = self.untimed_excess(ref, got) if weigh else None
        data.update(early or {})
        if reported > self.max_compiles:
            return Outcome.fail(
                f"{len(cases)} calls compiled {reported} times; at most {self.max_compiles} allowed", **data
            )
        if len(compiling) > self.max_compiles + forgiven:
            typical = f"; the reference's cached calls take {statistics.median(cached) * 1e3:.2f} ms" if cached else ""
            return Outcome.fail(
                f"{len(compiling)} of the {len(cases)} calls took as long as a compilation (a first "
                f"run over its replay by more than {drop * 1e3:.1f} ms of {clock} time, or a replay "
                f"over {steady * 1e3:.1f} ms{typical}); at most {self.max_compiles} compilations are "
                "allowed, whether or not JAX's events count them",
                **data,
            )
        if weigh and weight > allowed:
            heaviest = max(weights, key=lambda i: weights[i])
            return Outcome.fail(
                f"the {len(compiling)} calls that took a compilation's time spent as long compiling "
                f"as {weight:.1f} of the reference's compilations on the same calls (at most "
                f"{allowed:g}; call {heaviest + 1} alone {weights[heaviest]:.1f}): more programs than "
                "calls, as when every operation compiles on its own (the function runs without jit), "
                "whether or not JAX's events count them",
                **data,
            )
        if early is not None and early["untimed_excess_s"] > early["untimed_allowed_s"]:
            return Outcome.fail(early_message(early), **data)
        weighed_later = (
            "" if weigh else "; the time they spent compiling is weighed against the reference's on submission"
        )
        return Outcome.ok(
            f"{len(cases)} calls, {reported} compilations (at most {self.max_compiles}); "
            f"{len(compiling)} calls took a compilation's time{weighed_later}",
            **data,
        )

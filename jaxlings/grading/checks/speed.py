"""`speed`: time against the reference, measured in this run, interleaved, on fresh inputs.

One warm-up call each (compilation), then rounds (see `Speed` for how many); each round
draws a new workload of the exercise's speed size, times the reference (with the student's
worker frozen, so that nothing it started competes with it) and the student on it, alternating
who goes first, and verifies the student's timed output against the reference's.
A round is one request that carries the inputs and returns the outputs as arrays, both through
a shared-memory region of the worker's own, the inputs written there only once the clock runs;
the clock covers all of it (`jaxlings.grading.timing`). The ratio is the student's best time over the
reference's best time: the minimum is the estimate least disturbed by other load. Past the
minimum number of rounds, they stop as soon as the ratio decides the band with room to spare
(`Speed.decided`). On the GPU
the clock is wall time (the device is the grader's alone); on a CPU it is the CPU time of the
worker's cgroup (every thread and process it ran, ended ones included), which waiting for a
busy core does not inflate, so the verdict does not hinge on how busy the machine is; without
cgroups, wall time. A student whose wall time is past the band's end still scores 0 (no idling
while work happens elsewhere). Points follow the exercise's band (`Speed.score`).
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from jaxlings.grading import workloads
from jaxlings.grading.check import Check, SpecError
from jaxlings.grading.compare import mismatch
from jaxlings.grading.context import CallFailed, CheckContext, GraderError, StudentError, Timed, WorkerDied
from jaxlings.grading.results import Outcome
from jaxlings.grading.session import compiled_between
from jaxlings.grading.spec import Case, Exercise, Sampler, StreamSampler, check_platform
from jaxlings.grading.timing import committed_round
from jaxlings.grading.workloads import Generate
from jaxlings.worker import commit

log = logging.getLogger(__name__)  # silent unless configured: rounds against their windows, for an operator

if TYPE_CHECKING:
    from jaxlings.grading.checks.vocabulary import Words
    from jaxlings.grading.device import Device
    from jaxlings.isolation import WorkerProcess

BACKENDS = ("cpu", "gpu", "tpu")
"""The backends a `Speed.size` may name."""
WARMUP_TIMEOUT = 10.0
DEVICE_WARMUP_TIMEOUT = 60.0
"""The least a device round's first call may take: it compiles the student's function and the
grader's own programs (the round's generator, the outputs' digest: 4-10 s an output shape on a
TPU v5e), which the reference's first round may have found in the machine's cache (the
reference's warm-up there took about a second, and 20 times it was too short for the student's:
benchmarks/results/2026-12-07-tpu-v5e-grading-6.md)."""
MIN_TIMEOUT = 5.0
PUBLIC_ROUNDS = 5


@dataclass(frozen=True, kw_only=True)
class Speed(Check):
    """`Speed(points, size={"cpu": ..., "gpu": ...}, ...)`: how the check times the exercise
    against the reference.

    `size` (per backend: "cpu", "gpu", "tpu") is passed to the exercise's sampler to build a
    workload big enough that one call costs far more than dispatch (about 70 us on the grading
    GPU, 10 us on a CPU) and than the rest of the timed window (the request, the inputs' views
    and the outputs' copies: about 1 ms of CPU time per round here), so that twice the
    reference's work reads well past `full` (`benchmarks/speed_stability.py`). Points: full at
    `ratio <= full`, none at `ratio >= zero`, and
    log-linear in between. The check times at least `min_reps` rounds, and more (up to
    `max_reps`) while the reference's share of the timed work stays under `budget` seconds:
    the more rounds, the surer the best time. Past `min_reps` it stops as soon as the verdict
    is decided with `margin` to spare: a best-time ratio at or under `full / margin` (full
    marks), or at or over `zero * margin` (none). So `budget` is only ever spent on an
    undecided ratio, near a band's edge, where more rounds matter most: a right function
    usually stops at `min_reps` (3 s was 1 s until a reference timed against itself read x1.59
    on `prng.noisy_walk`, 90 ms a round, after the 11 rounds that 1 s allowed, on a noisy
    host). Stopping sooner than `min_reps` was tried and dropped: after 5 rounds on a loaded
    machine the best times are not settled yet, and a version twice as slow as the reference
    read x1.18 (median of 20) instead of x1.65.

    A round times one call on `sample(rng, size)`, or, with `stream`, the whole sequence of
    calls `stream(rng, size)` (for functions whose cost is in how they handle many calls).
    A stream's calls may all take one path of the function (every cached solution good): the
    timed code is the checked code only if the other paths are checked at that size too. So,
    with `stream`, one untimed call on `twin(rng, size)` (by default the exercise's own sampler
    at the speed size) is compared with the reference's before any round: a function that is
    wrong there is not timed (`twin_mismatch`).
    `jit=False` times the functions as written (for functions that jit internally).

    On a device (`jaxlings.grading.device_grading`) the reference's rounds are timed first, in its
    own process on the device (`prefetch`), then the student's, on the same inputs, in the
    student's process there (`on_device`: the only work of the student's on the device in hidden
    grading; its other checks, the twin's call included, run on the host's CPU). A round's inputs are made on the device, inside the window, from a key the
    request carries (`generate(key, size)`, `jaxlings.grading.workloads`), where the exercise gives a
    generator: its inputs are large, and their transfer from the host would be most of what the
    clock measured; otherwise they are drawn and sent as on a CPU (they are small). The outputs
    stay on the device: the window ends with their digest (`jaxlings.worker.commit`), and
    the student's best round is fetched after it and compared with the reference's outputs on
    the same inputs, computed on the host's CPU.

    `platform="cpu"` (with `platform_reason`: why the device cannot judge it) times the
    exercise on the host's CPU on every grading machine, as on one without an accelerator,
    while its topic's other speed checks run on the device: for work that stays below the
    device's dispatch floor at every size it can run there. Its `size` is the CPU's alone.
    """

    size: dict[str, int]
    full: float = 1.25
    zero: float = 10.0
    min_reps: int = 11
    max_reps: int = 61
    budget: float = 3.0
    margin: float = 1.25
    stream: StreamSampler | None = field(default=None, compare=False)
    twin: Sampler | None = field(default=None, compare=False)
    generate: Generate | None = field(default=None, compare=False)
    jit: bool = True
    platform: str = "accelerator"
    platform_reason: str = ""

    name = "speed"
    summary = "as fast as the reference on a large workload: full points up to the band's start, none past its end."
    requires = ("correct",)
    after = ("jit",)
    timed = True
    gates_on_device = True
    cost = 4

    def fits(self, exercise: Exercise) -> None:
        if "cpu" not in self.size:
            raise SpecError("Speed: option 'size' must give the CPU's workload (a \"cpu\" entry)")
        unknown = sorted(set(self.size) - set(BACKENDS))
        if unknown:
            raise SpecError(f"Speed: option 'size' names no backend {unknown[0]!r}; backends are {', '.join(BACKENDS)}")
        if not 1 <= self.full < self.zero:
            raise SpecError(f"Speed: the band must have 1 <= full < zero (got full {self.full:g}, zero {self.zero:g})")
        if self.twin is not None and self.stream is None:
            raise SpecError("Speed: option 'twin' needs a 'stream' (without one, the timed calls are the sampler's)")
        check_platform("Speed", self.platform, self.platform_reason, "option 'platform_reason'")
        if self.platform == "cpu" and (set(self.size) != {"cpu"} or self.generate is not None):
            raise SpecError(
                "Speed: a speed check timed on the CPU has the CPU's size only and no device generator "
                "(options 'size' and 'generate')"
            )

    @property
    def prefetches(self) -> bool:
        """Whether its rounds run on the device, the reference's ahead of the student's: not
        where it is timed on the host's CPU (`platform`)."""
        return self.platform == "accelerator"

    def size_for(self, backend: str) -> int:
        """The workload size for `backend`, falling back to the CPU's."""
        return self.size.get(backend, self.size["cpu"])

    def decided(self, ratio: float, wall_ratio: float) -> bool:
        """Whether a best-time `ratio` (and the wall-time one, the guard against idling) already
        decides the verdict with `margin` to spare (see the class's docstring)."""
        full_marks = ratio * self.margin <= self.full and wall_ratio * self.margin < self.zero
        return full_marks or ratio >= self.zero * self.margin or wall_ratio >= self.zero * self.margin

    def score(self, ratio: float) -> float:
        """Fraction of the points earned at time ratio `ratio` (student / reference)."""
        return band_score(ratio, self.full, self.zero)

    def describe(self, ex: Exercise, words: Words) -> str:
        how = words.jitted(self.jit, note="as written if it fails `jit`" if ex.check("jit") else "")
        bands = words.note(
            f"full points up to x{words.num(self.full)} the reference's time, none from x{words.num(self.zero)}, "
            f"log-linear between (on a CPU the clock is CPU time, and a wall time past x{words.num(self.zero)} "
            "scores 0 too)"
        )
        twin = ""
        if self.stream is not None:
            what = _first_line(self.twin.__doc__) if self.twin is not None else "drawn as the random cases are"
            twin = (
                f"; first, one untimed call at that size that the rounds do not make ({what}) must give the "
                "reference's output, or nothing is timed"
            )
        where = ""
        if self.platform == "cpu":
            where = words.note(
                f"on the host's CPU, also where the grading machine has an accelerator: {self.platform_reason}"
            )
        return f"be about as fast as the reference{bands}: {how}, timed on {words.workload(self)}{where}{twin}."

    def jitted(self, ctx: CheckContext) -> bool:
        """Whether the student's function is timed under the grader's jit: where the workload is
        jitted, unless the exercise has a `jit` check that failed (then as written)."""
        return self.jit and (ctx.findings.passed.get("jit", False) or ctx.exercise.check("jit") is None)

    def run(self, ctx: CheckContext) -> Outcome:
        if ctx.public:
            return self.own_time(ctx)
        if ctx.device is None:
            return self.on_host(ctx, ctx.backend)
        if self.prefetches:
            return self.on_device(ctx)
        with ctx.gated(True):  # the engine left the gate to the check (`gates_on_device`): alone, as on a CPU
            return self.on_host(ctx, "cpu")

    def on_host(self, ctx: CheckContext, backend: str) -> Outcome:
        """Both sides' rounds on workers of `backend` (the host's), interleaved, each round's inputs
        sent with its request."""
        ex = ctx.exercise
        size = self.size_for(backend)
        jit = self.jitted(ctx)
        if (problem := self.twin_mismatch(ctx, size, jit)) is not None:
            return Outcome.fail(problem, size=size)
        ref_times: list[Timed] = []
        stu_times: list[Timed] = []
        rep = 0
        while rep <= self.min_reps or (rep <= self.max_reps and sum(t.seconds for t in ref_times) < self.budget):
            rep += 1
            cases = ctx.draw("speed", lambda rng: self.stream(rng, size) if self.stream else [ex.sample(rng, size)])
            warm = rep == 1
            student_first = rep % 2 == 0 and bool(ref_times)
            if student_first:  # alternate who goes first: neither side always runs in the other's wake
                stu = _student_round(ctx, cases, jit, self.limit(False, ref_times[-1]), size=size)
                if isinstance(stu, Outcome):
                    return stu
            try:
                ref = ctx.reference.timed(ex.name, cases, jit=self.jit, timeout=120.0, static_argnums=ex.static_argnums)
            except (WorkerDied, CallFailed) as exc:
                raise GraderError(
                    f"the reference {ctx.topic_name}.{ex.name} failed on the speed workload: {exc}"
                ) from None
            if not student_first:
                stu = _student_round(ctx, cases, jit, self.limit(warm, ref), size=size)
                if isinstance(stu, Outcome):
                    return stu
            assert isinstance(stu, Timed)  # each branch above returned a failed round
            for expected, got in zip(ref.outs, stu.outs):
                if (problem := mismatch(expected, got, ex.rtol, ex.atol, ex.outputs)) is not None:
                    return Outcome.fail(f"on the speed workload (size {size}) the timed output is wrong: {problem}")
            if not warm:  # the times only: a round's outputs are judged, then dropped (the grader's memory)
                ref_times.append(Timed(ref.seconds, ref.cpu_seconds, []))
                stu_times.append(Timed(stu.seconds, stu.cpu_seconds, []))
                if len(ref_times) >= self.min_reps and self.decided(*ratios(backend, ref_times, stu_times)):
                    break
        return verdict(self, ref_times, stu_times, size, backend)

    def twin_mismatch(self, ctx: CheckContext, size: int, jit: bool) -> str | None:
        """With a `stream`, what is wrong with the student's output on one untimed call at the
        speed size that the stream's calls may never make (`twin`, else the exercise's
        sampler), both sides called as the student's rounds call it (the reference passes its own
        `jit` check: jitted or not, its output is the same); None where it matches the reference's."""
        if self.stream is None:
            return None
        ex = ctx.exercise
        sample = self.twin or ex.sample
        case = ctx.draw("speed twin", lambda rng: sample(rng, size))
        try:  # the reference's failure is the grader's (GraderError)
            problem = ctx.compare_call(
                case.args, ex.rtol, ex.atol, ex.outputs, fn=ex.name, jit=jit, static_argnums=ex.static_argnums
            )
        except StudentError as exc:
            return f"at the speed workload's size ({size}), on a call the timed rounds do not make, it failed: {exc}"
        if problem is not None:
            return (
                f"at the speed workload's size ({size}), on a call the timed rounds do not make, the output is "
                f"wrong: {problem}. Nothing was timed: the timed code must be the code that is checked"
            )
        return None

    # -- on a device: the reference's rounds first, then the student's -------------------------

    def prefetch(self, ctx: CheckContext) -> None:
        """The reference's rounds on the device, ahead of the student's (`reference_rounds`)."""
        self.reference_rounds(ctx)

    def generated(self, ctx: CheckContext) -> bool:
        """Whether this run's rounds make their inputs on the device (`Device.generates`)."""
        return self.generate is not None and ctx.device is not None and ctx.device.generates

    def round_inputs(self, ctx: CheckContext, size: int) -> dict[str, Any]:
        """The next round's inputs, drawn from the run's secret: the key of a generated workload,
        or its cases; and the salt of its outputs' digest."""
        generated = self.generated(ctx)
        return ctx.draw("device round", lambda rng: self._inputs(ctx.exercise, rng, size, generated))

    def _inputs(self, ex: Exercise, rng: np.random.Generator, size: int, generated: bool) -> dict[str, Any]:
        """A round's inputs drawn from `rng`: the salt, and the key (`generated`) or the cases."""
        salt = int(rng.integers(0, 1 << 32))
        if generated:
            return {"key": rng.integers(0, 1 << 32, 2, dtype=np.uint32), "salt": salt}
        return {"cases": self.stream(rng, size) if self.stream else [ex.sample(rng, size)], "salt": salt}

    def round_request(self, ctx: CheckContext, drawn: dict[str, Any], size: int) -> dict[str, Any]:
        """A round's inputs as its request carries them: the generator's program and the key, or the cases."""
        assert ctx.device is not None
        return self._request(ctx.device, drawn, size)

    def _request(self, device: Device, drawn: dict[str, Any], size: int) -> dict[str, Any]:
        """`round_request` on `device`."""
        if "key" not in drawn:
            return {"cases": drawn["cases"]}
        assert self.generate is not None
        return {"generate": workloads.export(self.generate, size, device.platforms).request(drawn["key"])}

    def compile_ahead(self, worker: WorkerProcess, ex: Exercise, device: Device) -> None:
        """One untimed round of `ex` in the student's process on `device`, on inputs of the speed
        size drawn from a seed of its own (never a timed round's: nothing is learnt early), so
        that the function is compiled for them before its check comes
        (`device_grading.compile_ahead`). Jitted, as a function that passes `jit` is timed.
        Raises WorkerDied or CallFailed."""
        size = self.size_for(device.backend)
        rng = np.random.default_rng(secrets.randbits(128))
        drawn = self._inputs(ex, rng, size, self.generate is not None and device.generates)
        committed_round(
            worker,
            ex.name,
            jit=self.jit,
            static_argnums=ex.static_argnums,
            timeout=DEVICE_WARMUP_TIMEOUT,
            salt=drawn["salt"],
            **self._request(device, drawn, size),
        )

    def reference_rounds(self, ctx: CheckContext) -> dict[str, Any]:
        """The reference's rounds on the device, the first a warm-up, then at least `min_reps`
        and more while the rounds past the warm-up, whole, stay under `budget` (up to
        `max_reps`): each round's wall and CPU seconds and, for a generated workload, the digest
        of the inputs it made (asked after the round, untimed), which the CPU's must equal. Kept
        until the student's phase asks for the same (`answers.Prefetched`). Whole rounds, not
        their windows: on a TPU a round of a few milliseconds costs tenths of a second around
        its window, and 61 of them held the device for 20-47 s an exercise
        (benchmarks/results/2026-12-06-tpu-v5e-grading-3.md)."""
        ex, size = ctx.exercise, self.size_for(ctx.backend)

        def compute() -> dict[str, Any]:
            started = warm = time.monotonic()
            seconds: list[float] = []
            cpu: list[float | None] = []
            inputs: list[list[int]] = []
            while len(seconds) <= self.min_reps or (
                len(seconds) <= self.max_reps and time.monotonic() - warm < self.budget
            ):
                drawn = self.round_inputs(ctx, size)
                request = self.round_request(ctx, drawn, size)
                try:
                    t = ctx.reference.committed(
                        ex.name,
                        jit=self.jit,
                        timeout=120.0,
                        salt=drawn["salt"],
                        static_argnums=ex.static_argnums,
                        **request,
                    )
                    if self.generated(ctx):
                        inputs.append(ctx.reference.call("inputs", salt=drawn["salt"], **request)["inputs"])
                except (WorkerDied, CallFailed) as exc:
                    raise GraderError(
                        f"the reference {ctx.topic_name}.{ex.name} failed on the speed workload: {exc}"
                    ) from None
                seconds.append(t.seconds)
                cpu.append(t.cpu_seconds)
                if len(seconds) == 1:  # the warm-up round: the budget counts from its end
                    warm = time.monotonic()
            log.info(
                "reference %s.%s: %d rounds, their windows %.3f s of %.3f s",
                ctx.topic_name,
                ex.name,
                len(seconds),
                sum(seconds),
                time.monotonic() - started,
            )
            return {"seconds": seconds, "cpu_seconds": cpu, "inputs": inputs}

        request = {"fn": ex.name, "size": size, "jit": self.jit, "generated": self.generated(ctx)}
        return ctx.answer("rounds", request, compute)

    def on_device(self, ctx: CheckContext) -> Outcome:
        """The student's rounds on the device, on the inputs of the reference's rounds (drawn
        again, in the same order), until the ratio is decided or the reference's rounds run out
        (`device_rounds`); then the best round's outputs compared with the reference's on the
        same inputs, computed on the host's CPU, at the device's tolerance (`CheckContext.on_device`).
        The check takes the clock gate itself (`gates_on_device`): alone for the timed rounds
        only, shared with the other topics' checks for the rest (the twin's call, the warm-up
        that compiles, the outputs' fetch and comparison)."""
        size = self.size_for(ctx.backend)
        jit = self.jitted(ctx)
        with ctx.gated(timed=False):
            if (problem := self.twin_mismatch(ctx, size, jit)) is not None:
                return Outcome.fail(problem, size=size)
            ref = self.reference_rounds(ctx)
        with ctx.device_held():
            rounds = self.device_rounds(ctx, ref, size, jit)
        if isinstance(rounds, Outcome):
            return rounds
        ref_times, stu_times, best, outs = rounds
        with ctx.gated(timed=False):
            problem = self._bound(outs, best) or self._against_reference(ctx, best, outs, ref, size)
        if problem is not None:
            return Outcome.fail(f"on the speed workload (size {size}) {problem}", size=size)
        return verdict(self, ref_times, stu_times, size, ctx.backend, "generated" if self.generated(ctx) else "device")

    def device_rounds(
        self, ctx: CheckContext, ref: dict[str, Any], size: int, jit: bool
    ) -> tuple[list[Timed], list[Timed], tuple[int, dict[str, Any], Timed], list[dict[str, Any]]] | Outcome:
        """The student's rounds in their process on the device: the first (it compiles) beside
        the other topics' work, the timed ones alone; the worker told to keep each new best
        round's outputs, fetched after the last. (reference's times, student's times, the best
        round, its outputs), or the failing Outcome."""
        ex, backend = ctx.exercise, ctx.backend
        student = ctx.device_student
        try:
            with ctx.gated(timed=False):
                student.ready()
        except StudentError as exc:
            return Outcome.fail(f"the speed workload runs on the device, and {exc}", size=size)
        ref_times = [Timed(s, c, []) for s, c in zip(ref["seconds"][1:], ref["cpu_seconds"][1:])]
        stu_times: list[Timed] = []
        best: tuple[int, dict[str, Any], Timed] | None = None
        limit = WARMUP_TIMEOUT
        started = time.monotonic()

        def one_round(i: int, ref_seconds: float) -> Timed:
            nonlocal limit, best
            drawn = self.round_inputs(ctx, size)
            limit = self.limit(i == 0, Timed(ref_seconds, None, []), DEVICE_WARMUP_TIMEOUT)
            t = student.committed(
                ex.name,
                jit=jit,
                timeout=limit,
                salt=drawn["salt"],
                static_argnums=ex.static_argnums,
                **self.round_request(ctx, drawn, size),
            )
            if i > 0:
                stu_times.append(t)
                _, pick = clock_for(backend, ref_times + stu_times)
                if best is None or pick(t) < pick(best[2]):
                    student.keep()
                    best = (i, drawn, t)
            return t

        try:
            with ctx.gated(timed=False):
                before = student.compilations()
                one_round(0, ref["seconds"][0])
                compiled = compiled_between(before, student.compilations())
            warmed = time.monotonic()
            with ctx.gated(timed=True):
                alone = time.monotonic()
                for i, ref_seconds in enumerate(ref["seconds"][1:], start=1):
                    one_round(i, ref_seconds)
                    if len(stu_times) >= self.min_reps and self.decided(*ratios(backend, ref_times, stu_times)):
                        break
            assert best is not None  # the reference's rounds are at least two: a warm-up and min_reps
            with ctx.gated(timed=False):
                outs = student.fetched(max(limit, 60.0))
        except (WorkerDied, StudentError, CallFailed) as exc:
            return Outcome.fail(
                f"the timed call on the speed workload (size {size}) did not finish well within {limit:.0f} s: {exc}",
                size=size,
            )
        log.info(
            "%s.%s: %d rounds, their windows %.3f s of %.3f s (the first round %.3f s, compiling %s program(s) by "
            "its process's word, then %.3f s waiting to be alone)",
            ctx.topic_name,
            ex.name,
            len(stu_times) + 1,
            sum(t.seconds for t in stu_times),
            time.monotonic() - started,
            warmed - started,
            compiled,
            alone - warmed,
        )
        return ref_times, stu_times, best, outs

    @staticmethod
    def _bound(outs: list[dict[str, Any]], best: tuple[int, dict[str, Any], Timed]) -> str | None:
        """What is wrong where the fetched outputs are not those the best round's reply committed
        to inside its window (their digest differs), else None."""
        _, drawn, t = best
        leaves = [np.asarray(leaf["data"]) for out in outs for leaf in out["leaves"]]
        try:
            if workloads.digest(leaves, drawn["salt"]) == t.digest:
                return None
        except commit.Unsupported as exc:
            return f"an output cannot be checked: {exc}"
        return (
            "the outputs sent after the timed round are not those its reply committed to inside the window "
            "(their digests differ): the clock must cover the work that makes them"
        )

    def _against_reference(
        self,
        ctx: CheckContext,
        best: tuple[int, dict[str, Any], Timed],
        outs: list[dict[str, Any]],
        ref: dict[str, Any],
        size: int,
    ) -> str | None:
        """The student's best round against the reference's outputs on the same inputs, computed
        on the host's CPU (a generated workload made there too: its inputs' digest must equal
        the device's, or the generator is not exact and the grader says so)."""
        ex = ctx.on_device()
        i, drawn, _ = best
        request = self.round_request(ctx, drawn, size)
        if "cases" in request:
            request = {"cases": [c.args for c in request["cases"]]}
        reply = ctx.reference.round(
            600.0, fn=ex.name, jit=self.jit, static_argnums=ex.static_argnums, salt=drawn["salt"], **request
        )
        if self.generated(ctx) and reply.get("inputs") != ref["inputs"][i]:
            raise GraderError(
                f"the speed workload of {ctx.topic_name}.{ex.name} made other inputs on the CPU than on the device "
                "(its generator is not exact across platforms: jaxlings.grading.workloads)"
            )
        if len(outs) != len(reply["outs"]):
            return f"the timed output is wrong: {len(outs)} outputs for {len(reply['outs'])} calls"
        for expected, got in zip(reply["outs"], outs):
            if (problem := mismatch(expected, got, ex.rtol, ex.atol, ex.outputs)) is not None:
                return f"the timed output is wrong: {problem}"
        return None

    def own_time(self, ctx: CheckContext) -> Outcome:
        """A public run: the speed check needs the reference timed on the grading machine, so it
        is judged on submission; the student sees their own time on the largest public case."""
        case = ctx.cases[-1]
        jit = self.jitted(ctx)
        times = []
        for _ in range(PUBLIC_ROUNDS + 1):
            stu = _student_round(ctx, [case], jit, 60.0, workload=case.label)
            if isinstance(stu, Outcome):
                return stu
            times.append(stu.seconds)
        best = min(times[1:])
        return Outcome.pending(
            f"{best * 1e3:.3g} ms per call on this machine ({case.label}, wall time, best of "
            f"{PUBLIC_ROUNDS}); the grader times it against the reference on a larger workload on "
            f"the grading machine: full marks up to x{self.full:g} the reference's time, none from "
            f"x{self.zero:g}",
            student_ms=round(best * 1e3, 4),
        )

    def limit(self, warm: bool, ref: Timed, warmup: float = WARMUP_TIMEOUT) -> float:
        """How long the student's round may take: generous for the warm-up (it compiles: at
        least `warmup` seconds)."""
        return max(warmup, 20 * ref.seconds) if warm else max(MIN_TIMEOUT, 4 * self.zero * ref.seconds)


def _first_line(doc: str | None) -> str:
    """A sampler's docstring's first line, as a phrase: "a system whose cached solution is bad"."""
    lines = (doc or "").strip().splitlines()
    line = lines[0].rstrip(".") if lines else "another draw"
    return line[:1].lower() + line[1:]


def band_score(ratio: float, full: float, zero: float) -> float:
    """The fraction of a time band's points at time ratio `ratio` (student / reference): all of
    them up to `full`, none from `zero`, log-linear between."""
    if ratio <= full:
        return 1.0
    if ratio >= zero:
        return 0.0
    return float(1.0 - np.log(ratio / full) / np.log(zero / full))


def _student_round(
    ctx: CheckContext,
    cases: list[Case],
    jit: bool,
    limit: float,
    *,
    size: int | None = None,
    workload: str | None = None,
) -> Timed | Outcome:
    """The student's timed round, or the failing Outcome when it did not complete; the speed
    workload of `size`, or the public case called `workload`."""
    ex = ctx.exercise
    try:
        return ctx.student.timed(ex.name, cases, jit=jit, timeout=limit, static_argnums=ex.static_argnums)
    except (WorkerDied, StudentError, CallFailed) as exc:
        what = workload or f"the speed workload (size {size})"
        return Outcome.fail(
            f"the timed call on {what} did not finish well within {limit:.0f} s: {exc}",
            **({} if size is None else {"size": size}),
        )


def clock_for(backend: str, times: list[Timed]) -> tuple[str, Callable[[Timed], float]]:
    """The clock that judges `times`, and how to read it: the CPU time of the worker's cgroup
    on a CPU backend (when every measurement has one), wall time otherwise."""
    if backend == "cpu" and all(t.cpu_seconds is not None for t in times):
        return "cpu", lambda t: t.cpu_seconds
    return "wall", lambda t: t.seconds


def ratios(backend: str, ref_times: list[Timed], stu_times: list[Timed]) -> tuple[float, float]:
    """The best-time ratio on the backend's clock, and the best-wall-time ratio."""
    _, pick = clock_for(backend, ref_times + stu_times)
    wall = min(t.seconds for t in stu_times) / min(t.seconds for t in ref_times)
    return min(map(pick, stu_times)) / min(map(pick, ref_times)), wall


WINDOWS = {
    "host": "inputs in to outputs out",
    "device": "inputs sent to the outputs' digest",
    "generated": "inputs made on the device to the outputs' digest",
}
"""What a timed window covers, as a speed message says it (`verdict`)."""


def verdict(
    speed: Speed, ref_times: list[Timed], stu_times: list[Timed], size: int, backend: str, window: str = "host"
) -> Outcome:
    """Band the best-time ratio on the backend's clock, with the guard against idling; `window`
    names what the timed window covered (`WINDOWS`)."""
    clock, pick = clock_for(backend, ref_times + stu_times)
    t_ref, t_stu = min(map(pick, ref_times)), min(map(pick, stu_times))
    ratio, wall_ratio = ratios(backend, ref_times, stu_times)
    data = {
        "ratio": round(ratio, 3),
        "clock": clock,
        "reference_ms": round(t_ref * 1e3, 4),
        "student_ms": round(t_stu * 1e3, 4),
        "wall_ratio": round(wall_ratio, 3),
        "size": size,
        "backend": backend,
        "reps": len(ref_times),
    }
    if wall_ratio >= speed.zero:
        return Outcome.fail(
            f"the timed call took x{wall_ratio:.1f} the reference's wall time (none from x{speed.zero:g})", **data
        )
    text = (
        f"{t_stu * 1e3:.3g} ms vs reference {t_ref * 1e3:.3g} ms ({clock} time on {backend}, {WINDOWS[window]}; "
        f"x{ratio:.2f}; full marks up to x{speed.full:g}, none from x{speed.zero:g})"
    )
    return Outcome(round(speed.score(ratio), 3), text, data)

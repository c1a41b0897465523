"""Trusted structural facts: the student's jitted call, exported as a program from shapes alone,
analysed and run on the trusted side on samples the student never saw.

The student's worker jits the function (with the grader's `jax.jit`, or the student's own if it
is JAX's jit type) and exports the jitted call as a serialized `jax.export` artifact (StableHLO)
from argument SPECS only (`specs_of`): arrays as shape and dtype, typed keys as their shape and
implementation, Python scalars that are not static as weakly-typed scalars, static arguments by
value. Its `trace` request carries no array value at all: a `first` program for the exercise's
largest size and an `other` one for its smallest. The trusted side holds three samples the
student's process is never shown before its programs are in: two of the largest shapes (`args`,
`args_again`, with the same static arguments) and one of the smallest (`args_other`). A trusted
worker of its own (`TopicSession.analyser`: an empty module) deserializes each artifact,
refuses unsafe ones, reports facts about the program (its StableHLO ops, and from compiling it
there: HLO lines, loops and their trip counts, collectives, FLOPs, compile time) and runs it:
the `first` program on BOTH large samples, the `other` on the small one. Every output must be
the function's (the reference's outputs on those samples; in a public run, which is advisory
and on the student's own machine, the function's own jitted outputs, asked of the student only
after its programs were received: `function_outputs`), so the facts describe a program shown by
data to be the function on inputs its author did not know: a program made of constants, or for
values it was handed, computes nothing here.

"No re-tracing" (`runs_again`) is judged on the same fresh values: one program exported from the
shapes computes the function on two fresh samples of those shapes. A function whose own jit
holds a data argument static cannot be exported from specs at all (the worker says why).

Each analysis of a student's program has a budget derived from the reference's analysis of the
same request (`ANALYSIS_FLOOR`, `ANALYSIS_FACTOR`): CPU seconds where the workers' CPU time is
measured (their cgroups), so that a loaded grading machine costs the student nothing, with the
call timeout as the wall clock's backstop; wall seconds, within the call timeout, elsewhere. A
program that runs away or crashes restarts only the analysis worker. The reference's programs are exported from
the same specs and analysed in the reference's own worker, so relative requirements compare
like with like.

Facts the student's process reports about itself (jaxpr primitives from `jax.make_jaxpr` on the
specs, `pmap`) travel apart, under `facts["advisory"]`: they shape messages, never points.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

import numpy as np

from jaxlings.grading import replies
from jaxlings.grading.compare import mismatch
from jaxlings.grading.session import REFERENCE_TIMEOUT, GraderError, StudentError, TopicSession
from jaxlings.isolation import WorkerDied
from jaxlings.worker.wire import Key, Spec

Facts = dict[str, Any]

ANALYSIS_FLOOR = 30.0
"""Seconds (of CPU where measured) an analysis of a student's program may always take: a cold
compile in a fresh worker (the reference's may be a load from the compilation cache)."""

ANALYSIS_FACTOR = 10.0
"""Past the floor, an analysis may take this many times the reference's of the same request."""


class ProgramMismatch(StudentError):
    """The exported program does not compute what the function computes."""


RUNS = (("first", "first", "args"), ("again", "first", "args_again"), ("other", "other", "args_other"))
"""Each run of a `trace` request: (run, the exported program it runs, the request's sample it
runs on). The `first` program runs twice: on `args` and on `args_again`."""


def specs_of(args: tuple[Any, ...], static_argnums: tuple[int, ...] = ()) -> tuple[Any, ...]:
    """The arguments as the student's worker may see them: static ones by value, every other
    leaf described (`wire.Spec`): an array by shape and dtype, a typed key by its shape, a
    Python number by its type (JAX traces it as a weakly-typed scalar)."""

    def describe(x: Any) -> Any:
        if isinstance(x, (np.ndarray, np.generic)):
            return Spec("array", tuple(int(n) for n in np.shape(x)), np.asarray(x).dtype.name)
        if isinstance(x, Key):
            return Spec("key")
        if type(x) in (bool, int, float, complex):
            return Spec("scalar", (), type(x).__name__)
        if isinstance(x, (list, tuple)):
            return type(x)(describe(v) for v in x)
        if isinstance(x, dict):
            return {k: describe(v) for k, v in x.items()}
        return x

    return tuple(a if i in static_argnums else describe(a) for i, a in enumerate(args))


def trace_request(request: dict[str, Any]) -> dict[str, Any]:
    """The `trace` request sent to a worker for `request` (which holds the trusted samples):
    the function, its static arguments and transforms, and the specs of each program, never a
    value. GraderError if `args_again` is not of `args`'s shapes (an exercise whose samples of
    one size differ in shape cannot be judged this way)."""
    static = tuple(request.get("static_argnums", ()))
    specs = {"first": specs_of(request["args"], static)}
    if request.get("args_again") is not None and specs_of(request["args_again"], static) != specs["first"]:
        raise GraderError(f"two samples of {request['fn']} of one size differ in shape or static arguments")
    if request.get("args_other") is not None:
        specs["other"] = specs_of(request["args_other"], static)
    return {"fn": request["fn"], "specs": specs, "static_argnums": static, "transforms": request.get("transforms", [])}


def traced_facts(session: TopicSession, request: dict[str, Any], rtol: float, atol: float) -> tuple[Facts, Facts]:
    """(student's facts, reference's facts) for one `trace` request, the student's verified:
    its programs must give the reference's outputs on the trusted samples.

    `request` holds `fn`, the trusted samples `args`, optional `args_again` (same shapes and
    static arguments) and `args_other`, `static_argnums` and `transforms`; only their specs
    reach the student (`trace_request`). StudentError when the student's side fails (it cannot
    export, its reply is malformed, a program is refused, runs past its deadline, or computes
    something else on a sample).
    """
    ref, ref_outs, ref_seconds = reference_facts(session, request)
    stu_trace = session.call_student("trace", **trace_request(request), **session.export_for())
    programs = stu_trace["programs"]
    facts, outs, _ = _analysed(session, programs, request, student=True, reference_seconds=ref_seconds)
    facts["advisory"] = stu_trace.get("advisory", {})
    expected = ref_outs if ref_outs is not None else function_outputs(session, request, outs)
    for name, out in outs.items():
        _verify(expected[name], out, rtol, atol, again=name == "again")
    if "again" in outs:
        facts["runs_again"] = True
    return facts, ref


def reference_facts(
    session: TopicSession, request: dict[str, Any]
) -> tuple[Facts, dict[str, Any] | None, dict[str, float]]:
    """(facts, outputs by run, seconds by run) of the reference's own programs for `request`,
    exported from the same specs and analysed in the reference's worker (live, or as recorded:
    the facts and times travel in the public expectations, never the programs).

    The outputs are None in a public run: there the student's programs are verified against the
    student's own jitted function on the same samples (`function_outputs`), so the public
    expectations need not carry the reference's outputs on the largest samples (the bulk of a
    recording: remat_grad's alone were a megabyte)."""

    def compute() -> dict[str, Any]:
        ref_trace = session.call_reference("trace", **trace_request(request))
        facts, outs, seconds = _analysed(session, ref_trace["programs"], request, student=False)
        facts["advisory"] = ref_trace.get("advisory", {})
        if "again" in outs:
            facts["runs_again"] = True
        return {"facts": facts, "seconds": seconds, **({} if session.public else {"outs": outs})}

    answer = session.answer("traced", request, compute)
    return answer["facts"], answer.get("outs"), answer.get("seconds", {})


def function_outputs(session: TopicSession, request: dict[str, Any], runs: Iterable[str]) -> dict[str, Any]:
    """The student's own jitted function (with the request's transforms) on each run's sample, asked
    after its programs were received: what a public run verifies the programs against. The
    function's values are `correct`'s to judge (`jit` runs only once it passed), so the programs
    need only compute the function; the hidden grading compares them with the reference's."""
    inputs = {run: sample for run, _, sample in RUNS}
    fields = {
        "fn": request["fn"],
        "jit": True,
        "static_argnums": tuple(request.get("static_argnums", ())),
        "transforms": request.get("transforms", []),
    }
    return {run: session.call_student("call", args=request[inputs[run]], **fields)["out"] for run in runs}


def _analysed(
    session: TopicSession,
    programs: dict[str, Any],
    request: dict[str, Any],
    *,
    student: bool,
    reference_seconds: dict[str, float] | None = None,
) -> tuple[Facts, dict[str, Any], dict[str, float]]:
    """Facts of the `first` program (on `args`), with `n_ops_other` from the `other` one, and
    every run's outputs and seconds by name (the reference's set the student's deadlines). A student's
    `first` program of a plain jit (no transforms) also brings its normalised fingerprint
    (`program_shingles`, for the similarity report; no requirement reads it). Every program is
    analysed AND run (in the trusted workers) on the trusted samples, so each fact describes a
    program whose outputs are then verified; a program the request asked for and the reply
    lacks is a failure."""
    facts: Facts = {}
    outs: dict[str, Any] = {}
    seconds: dict[str, float] = {}
    for run, exported, inputs in RUNS:
        if request.get(inputs) is None:
            continue
        if exported not in programs:
            raise StudentError(f"the trace reply has no `{exported}` program")
        worker = session.analyser if student else session.ref
        t0, cpu0 = time.monotonic(), worker.cpu_seconds()
        reply = _analyse(
            session,
            programs[exported],
            request[inputs],
            student,
            reference_seconds=(reference_seconds or {}).get(run),
            shingles=student and run == "first" and not request.get("transforms"),
        )
        cpu1 = worker.cpu_seconds()
        seconds[run] = round(cpu1 - cpu0 if cpu0 is not None and cpu1 is not None else time.monotonic() - t0, 3)
        outs[run] = reply["out"]
        if run == "first":
            facts = dict(reply["facts"])
        elif run == "other":
            facts["n_ops_other"] = reply["facts"].get("n_ops")
    return facts, outs, seconds


def _verify(expected: dict[str, Any], got: dict[str, Any], rtol: float, atol: float, again: bool = False) -> None:
    """ProgramMismatch unless a program's output `got` is the function's output `expected`. A
    program whose output class JAX cannot serialize (a registered class) comes back as the list
    of its leaves: those are compared leaf for leaf, the structure having been judged on the
    function's own calls. `again`: the run of the first program on the second sample of its
    shapes, where a mismatch means the program holds values of its own (re-tracing)."""
    if (
        got["treedef"] != expected["treedef"]
        and len(got["leaves"]) == len(expected["leaves"])
        and got["treedef"].startswith("PyTreeDef([")
        and not expected["treedef"].startswith("PyTreeDef([")
    ):
        got = {**got, "treedef": expected["treedef"]}
    if (problem := mismatch(expected, got, rtol, atol)) is not None:
        if again:
            raise ProgramMismatch(
                "the program exported for these shapes does not compute the function on a second "
                f"input of the same shapes ({problem}): it depends on values it was not given"
            )
        raise ProgramMismatch(f"the exported jitted program does not compute the function ({problem})")


def program_layouts(
    session: TopicSession,
    fn: str,
    args: tuple[Any, ...],
    *,
    static_argnums: tuple[int, ...] = (),
    rtol: float = 0.0,
    atol: float = 0.0,
) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """(reference's output, reference's layouts, student's layouts) of the jitted `fn` on the
    trusted sample `args`: each side's program, exported from the specs of `args`
    (`specs_of`), is run on `args` in a trusted worker, which describes its outputs'
    shardings. The student's program must give the reference's output there. StudentError
    when the student's side fails."""
    request = {"fn": fn, "args": args, "static_argnums": tuple(static_argnums)}

    def reference() -> dict[str, Any]:
        programs = session.call_reference("trace", **trace_request(request))["programs"]
        t0 = time.monotonic()
        reply = _analyse(session, programs["first"], args, False, shardings=True)
        return {"out": reply["out"], "shardings": reply.get("shardings", []), "seconds": time.monotonic() - t0}

    ref = session.answer("layouts", request, reference)
    programs = session.call_student("trace", **trace_request(request), **session.export_for())["programs"]
    if "first" not in programs:
        raise StudentError("the trace reply has no `first` program")
    reply = _analyse(session, programs["first"], args, True, shardings=True, reference_seconds=ref.get("seconds"))
    _verify(ref["out"], reply["out"], rtol, atol)
    return ref["out"], ref["shardings"], reply.get("shardings", [])


def analysis_deadline(session: TopicSession, reference_seconds: float | None) -> tuple[float | None, float]:
    """(CPU budget, wall deadline) in seconds of a student's program in the analysis worker.

    The budget is `ANALYSIS_FACTOR` times the reference's analysis of the same request (its CPU
    seconds where measured), at least `ANALYSIS_FLOOR`. Where the analysis worker's CPU time is
    measured the budget is of CPU and the wall deadline is the call timeout (at least the
    budget); elsewhere the budget is the wall deadline, within the call timeout. Both end at the
    topic's time left."""
    wanted = max(ANALYSIS_FLOOR, ANALYSIS_FACTOR * float(reference_seconds or 0.0))
    left = max(5.0, session.time_left())
    if session.analyser.cpu_seconds() is None:
        return None, min(wanted, session.limits.call_timeout, left)
    return wanted, min(max(wanted, session.limits.call_timeout), left)


def _analyse(
    session: TopicSession,
    blob: Any,
    args: tuple[Any, ...],
    student: bool,
    shardings: bool = False,
    reference_seconds: float | None = None,
    shingles: bool = False,
) -> dict[str, Any]:
    """One `analyse` request: a student's program to the analysis worker (`session.analyser`),
    under its deadline (`analysis_deadline`), the reference's to the reference's worker. A
    program refused, crashing or late is the student's failure (StudentError, with the reason;
    the analysis worker is restarted) or, for the reference's own program, the grader's."""
    fields: dict[str, Any] = {"program": blob, "args": args, "shardings": shardings}
    if shingles:
        fields["shingles"] = True
    worker = session.analyser if student else session.ref
    budget, timeout = analysis_deadline(session, reference_seconds) if student else (None, REFERENCE_TIMEOUT)
    try:
        reply = replies.check("analyse", worker.request("analyse", timeout, cpu_budget=budget, **fields))
    except (WorkerDied, replies.MalformedReply) as exc:
        if not student:
            raise GraderError(f"analysing the reference's exported program failed: {exc}") from None
        session.restart_analyser()
        if getattr(exc, "timed_out", False):
            allowed = f"{budget:g} s of CPU" if budget is not None else f"{timeout:.0f} s"
            raise StudentError(
                f"the exported jitted program did not finish on the grader's side within {allowed} "
                "(compiling it, then running it on the samples)"
            ) from None
        raise StudentError(f"running the exported jitted program on the grader's side failed: {exc}") from None
    if not reply["ok"]:
        err = reply["error"]
        message = err["message"] if err["type"] == "ProgramRefused" else f"{err['type']}: {err['message']}"
        if not student:
            raise GraderError(f"the reference's exported program was refused: {message}")
        raise StudentError(f"the exported jitted program was refused: {message}")
    return reply

"""Trusted structural facts: the student's jitted call, exported as a program, analysed and run
on the trusted side.

The student's worker jits the function (with the grader's `jax.jit`, or the student's own if it
is JAX's jit type) and exports the jitted call as a serialized `jax.export` artifact (StableHLO)
at three inputs: `args` (the exercise's largest size), `args_again` (same shapes, new values)
and `args_other` (the smallest size). The REFERENCE worker, which runs nothing of the
student's, deserializes each artifact, refuses unsafe ones, and reports facts about the
program (its StableHLO ops, and from compiling it there: HLO lines, loops and their trip
counts, collectives, FLOPs, compile time); it also runs the program on the same inputs. The
student's program must compute what the function computes (the reference's outputs when the
function is correct, else the function's own jitted outputs), so the facts describe a program
shown by data to be the function: a module that forges the artifact must hand in a correct
program with the required structure. The reference's own program goes through the same steps,
so relative requirements compare like with like.

Facts the student's process reports about itself (jaxpr primitives, compilations, `pmap`)
travel apart, under `facts["advisory"]`: they shape messages, never points.
"""

from __future__ import annotations

from typing import Any

from autograder import replies
from autograder.compare import mismatch
from autograder.sandbox import WorkerDied
from autograder.session import REFERENCE_TIMEOUT, GraderError, StudentError, TopicSession

Facts = dict[str, Any]


class ProgramMismatch(StudentError):
    """The exported program does not compute what the function computes."""


def traced_facts(session: TopicSession, request: dict[str, Any], rtol: float, atol: float,
                 verify_against_reference: bool = True) -> tuple[Facts, Facts]:
    """(student's facts, reference's facts) for one `trace` request, the student's verified.

    `request` holds `fn`, `args`, optional `args_again` and `args_other`, `static_argnums` and
    `transforms`. StudentError when the student's side fails (it cannot export, its reply is
    malformed, a program is refused, or a program computes something else).
    """
    ref, ref_outs = reference_facts(session, request)
    stu_trace = session.call_student("trace", **request)
    facts, outs = _analysed(session, stu_trace["programs"], request, student=True)
    facts["advisory"] = stu_trace.get("advisory", {})
    expected = ref_outs if verify_against_reference else _own_jitted_outputs(session, request)
    for name, out in outs.items():
        _verify(expected[name], out, rtol, atol)
    return facts, ref


def reference_facts(session: TopicSession, request: dict[str, Any]) -> tuple[Facts, dict[str, Any]]:
    """(facts, outputs by program) of the reference's own exported programs for `request`
    (live, or as recorded: the facts travel in the public expectations, never the programs)."""
    def compute() -> dict[str, Any]:
        ref_trace = session.call_reference("trace", **request)
        facts, outs = _analysed(session, ref_trace["programs"], request, student=False)
        facts["advisory"] = ref_trace.get("advisory", {})
        return {"facts": facts, "outs": outs}

    answer = session.answer("traced", request, compute)
    return answer["facts"], answer["outs"]


PROGRAM_INPUTS = (("first", "args"), ("again", "args_again"), ("other", "args_other"))
"""Each exported program of a `trace` reply, and the request's inputs it was exported for."""


def _analysed(session: TopicSession, programs: dict[str, Any], request: dict[str, Any], *,
              student: bool) -> tuple[Facts, dict[str, Any]]:
    """Facts of the `first` program, with `fingerprint_again` and `n_ops_other` from the others,
    and every program's outputs by name. Every program is analysed AND run (in the reference
    worker) on the inputs it was exported for, so each fact describes a program whose outputs
    are then verified; a program the request asked for and the reply lacks is a failure."""
    facts: Facts = {}
    outs: dict[str, Any] = {}
    for name, inputs in PROGRAM_INPUTS:
        if request.get(inputs) is None:
            continue
        if name not in programs:
            raise StudentError(f"the trace reply has no `{name}` program")
        reply = _analyse(session, programs[name], request[inputs], student)
        outs[name] = reply["out"]
        if name == "first":
            facts = dict(reply["facts"])
        elif name == "again":
            facts["fingerprint_again"] = reply["facts"].get("fingerprint")
        else:
            facts["n_ops_other"] = reply["facts"].get("n_ops")
    return facts, outs


def _verify(expected: dict[str, Any], got: dict[str, Any], rtol: float, atol: float) -> None:
    """ProgramMismatch unless a program's output `got` is the function's output `expected`. A
    program whose output class JAX cannot serialize (a registered class) comes back as the list
    of its leaves: those are compared leaf for leaf, the structure having been judged on the
    function's own calls."""
    if got["treedef"] != expected["treedef"] and len(got["leaves"]) == len(expected["leaves"]) \
            and got["treedef"].startswith("PyTreeDef([") and not expected["treedef"].startswith("PyTreeDef(["):
        got = {**got, "treedef": expected["treedef"]}
    if (problem := mismatch(expected, got, rtol, atol)) is not None:
        raise ProgramMismatch(f"the exported jitted program does not compute the function ({problem})")


def program_layouts(session: TopicSession, fn: str, args: tuple, *, student: bool, expected: dict[str, Any] | None = None,
                    rtol: float = 0.0, atol: float = 0.0) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(output, layouts) of the jitted `fn` at `args`, as the trusted side sees them: the
    exported program, run by the reference worker, whose outputs' shardings are described
    there. A student's program must give `expected` (the reference's output)."""
    def layouts() -> dict[str, Any]:
        call = session.call_student if student else session.call_reference
        programs = call("trace", fn=fn, args=args)["programs"]
        reply = _analyse(session, programs["first"], args, student, shardings=True)
        return {"out": reply["out"], "shardings": reply.get("shardings", [])}

    answer = layouts() if student else session.answer("layouts", {"fn": fn, "args": args}, layouts)
    if expected is not None:
        _verify(expected, answer["out"], rtol, atol)
    return answer["out"], answer["shardings"]


def _analyse(session: TopicSession, blob: Any, args: tuple, student: bool, shardings: bool = False) -> dict[str, Any]:
    """One `analyse` request to the reference worker. A program it refuses is the student's
    failure (StudentError, with the reason) or, for the reference's own program, the grader's."""
    fields: dict[str, Any] = {"program": blob, "args": args, "shardings": shardings}
    timeout = min(session.limits.call_timeout, max(5.0, session.time_left())) if student else REFERENCE_TIMEOUT
    try:
        reply = replies.check("analyse", session.ref.request("analyse", timeout, **fields))
    except (WorkerDied, replies.MalformedReply) as exc:
        if not student:
            raise GraderError(f"analysing the reference's exported program failed: {exc}") from None
        session.restart_reference()
        raise StudentError(f"analysing the exported jitted program failed: {exc}") from None
    if not reply["ok"]:
        err = reply["error"]
        message = err["message"] if err["type"] == "ProgramRefused" else f"{err['type']}: {err['message']}"
        if not student:
            raise GraderError(f"the reference's exported program was refused: {message}")
        raise StudentError(f"the exported jitted program was refused: {message}")
    return reply


def _own_jitted_outputs(session: TopicSession, request: dict[str, Any]) -> dict[str, Any]:
    """The function's own jitted outputs at each input of the request, for a function that
    fails `correct` (its program must still compute what it computes)."""
    outs = {}
    for name, inputs in PROGRAM_INPUTS:
        if request.get(inputs) is not None:
            outs[name] = session.call_student("call", fn=request["fn"], args=request[inputs], jit=True,
                                              static_argnums=request.get("static_argnums", ()),
                                              transforms=request.get("transforms", []))["out"]
    return outs

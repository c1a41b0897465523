"""Structural requirements on a jitted function, judged in the grader from trusted facts.

The student's worker exports its jitted call as a program (`jax.export`'s StableHLO,
`jaxlings.worker.program`) from the arguments' shapes and dtypes and the static arguments'
values, never from array values; a trusted worker refuses unsafe programs, counts the program's
operations, compiles it, and runs it on fresh samples the student's process never saw, and the
grader checks that its outputs are the function's there. The facts therefore describe a program
that the data shows to compute the function, whatever the student's process did (see
`jaxlings.grading.structure`):

  ops            {StableHLO op: count} over every function and region: `add`, `while`, `case`,
                 `scatter` (and its kind: `scatter-add`, `scatter-set`, ...), `call`,
                 `custom_call`, `manual_computation` (a shard_map), `sharding_constraint`, ...
  n_ops          the operations the program runs, every `call` replaced by its callee's body
                 (the size XLA compiles), less structure and constants; `n_ops_written` counts
                 each function once, as written (a Python loop over one jitted helper, or over
                 `jax.random` draws, adds a `call` per step there, its whole body to `n_ops`)
  n_ops_other    n_ops of the program exported for the exercise's smallest size
  custom_calls   distinct custom-call targets (`lapack_sgetrf_ffi`, ...)
  scopes         {named scope path: {op: count}}, from the operations' locations
                 (`jax.named_scope("hidden")` -> `hidden`; nested: `mlp/hidden`)
  n_inputs, donated_inputs   the program's inputs (array leaves), and how many of them it
                 donates (`jax.jit(..., donate_argnums=...)`: their buffers are reused for outputs)
  fingerprint    sha256 of the program without locations
  runs_again     the `first` program, run on a second fresh sample of the same shapes (and
                 static arguments), gave the function's outputs there too (see `NoRetrace`)
  hlo_lines, collectives, flops, bytes_accessed, temp_bytes, compile_seconds, loops,
  counted_loops  from compiling the program on the trusted side (`counted_loops`: while loops
                 whose trip count XLA knows; `temp_bytes`: the scratch memory of XLA's memory
                 analysis, 0 for every program on a TPU)

The vocabulary is StableHLO's, not the jaxpr's: `lax.scan` and `lax.fori_loop` with static
bounds both become a `while` with a known trip count, `lax.cond` a `case`, `jnp.where` a
`select`, a custom primitive lowered with `mlir.lower_fun` the operations of its lowering.

Every requirement has `trusted = True`, except the ADVISORY ones (`trusted = False`), which
read jaxpr facts the student's own process reports under `facts["advisory"]` (primitive names
such as `multiply_add` or `custom_jvp_call`, `pmap` use): a StableHLO program does not carry
those names, and the student's process can fake them. They add a note, never cost points:
callers split requirements by `trusted` before judging (`jaxlings.grading.checks.jit.judged`).

Counts are the same on the same backend with the same JAX and XLA (another backend, or another
XLA, may compile the same program differently: judge them against the reference's, measured in
the same run); `compile_seconds` is the one timed fact, with wide margins.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

Facts = dict[str, Any]

HOST_CALLBACK_TARGET_WORDS = ("callback",)


def _because(message: str, why: str) -> str:
    return f"{message}: {why}" if why else message


def _ops(facts: Facts) -> dict[str, int]:
    return facts.get("ops") or {}


def _advisory(facts: Facts) -> dict[str, Any]:
    return facts.get("advisory") or {}


OP_WORDS = {
    "while": "`while` loop (`lax.fori_loop`, `lax.scan`, `lax.while_loop`)",
    "case": "`case` (a `lax.cond` or `lax.switch`)",
    "select": "`select` (a `jnp.where` or `lax.select`)",
    "manual_computation": "`jax.shard_map`",
    "SPMDFullToShardShape": "`jax.shard_map`",
}
"""StableHLO ops (and custom-call targets) with the code that writes them, for `describe`."""


def _op(op: str) -> str:
    """An op for a student to read: "`case` (a `lax.cond` or `lax.switch`)"."""
    if op in OP_WORDS:
        return OP_WORDS[op]
    if op.startswith("scatter-") and op != "scatter-set":
        return f"`{op}` (an `.at[...].{op.removeprefix('scatter-')}`)"
    return f"`{op}`"


class Requirement(Protocol):
    """A predicate on the student's facts (and the reference's, `ref`, on the same inputs);
    `judge` returns an error message, or None when met. `trusted` is False for an advisory
    requirement, which judges what the student's process reports about itself."""

    trusted: ClassVar[bool]

    def judge(self, facts: Facts, ref: Facts) -> str | None: ...

    def describe(self) -> str:
        """What it asks, in a few words for students: the docstrings' generated "Graded" list
        (`jaxlings.course.graded`) states it. Every requirement class defines its own (a test
        checks); it names the requirement, never the solution (its `why` is for the message)."""
        ...


# -- trusted: the exported program -------------------------------------------------------------


@dataclass(frozen=True)
class NoHostCallbacks:
    """No host callback: jitted code must stay on the device (no `pure_callback` to NumPy).

    `jax.export` cannot serialize host callbacks at all, so such a function already fails to
    export, and the trusted side refuses a forged callback custom call before compiling; this
    check on the custom-call targets is a second line of defence.
    """

    trusted: ClassVar[bool] = True

    def describe(self) -> str:
        return "no host callbacks"

    def judge(self, facts: Facts, ref: Facts) -> str | None:
        targets = sorted(
            t for t in facts.get("custom_calls", ()) if any(w in t.lower() for w in HOST_CALLBACK_TARGET_WORDS)
        )
        if targets:
            return f"the jitted function calls back to the host ({', '.join(targets)}); compute with jax.numpy / lax instead"
        return None


@dataclass(frozen=True)
class NoRetrace:
    """One program for new values of the same shapes: the program exported from the shapes
    alone (and the static arguments) computes the function on two fresh samples of those
    shapes (fact `runs_again`), so nothing of any input's values is baked into it.

    A program that gives the function's outputs on the first sample and not on the second
    already fails verification (`structure.ProgramMismatch`, which names re-tracing); a function
    whose own jit holds a data argument static cannot be exported from shapes at all (the
    worker's message says so). This requirement reads the fact the verification leaves."""

    trusted: ClassVar[bool] = True

    def describe(self) -> str:
        return "no re-tracing (one program, exported from the shapes, for new values of those shapes)"

    def judge(self, facts: Facts, ref: Facts) -> str | None:
        if facts.get("runs_again") is False:
            return (
                "the program exported for these shapes does not compute the function on new values of the same "
                "shapes, so every new value would re-trace and compile it; keep arguments that change with the "
                "data traced (not static), and do not build a new jitted function per call"
            )
        return None


@dataclass(frozen=True)
class UsesOp:
    """The program contains the StableHLO op `op` (e.g. `scatter-add` for an `.at[].add`,
    `case` for a `lax.cond`, `while` for any rolled loop)."""

    op: str
    why: str = ""
    trusted: ClassVar[bool] = True

    def describe(self) -> str:
        return f"a {_op(self.op)}"

    def judge(self, facts: Facts, ref: Facts) -> str | None:
        if not _ops(facts).get(self.op, 0):
            return _because(f"the compiled program has no `{self.op}`", self.why)
        return None


LIBRARY_SCOPE = re.compile(r"|checkpoint|rematted_computation|[A-Za-z. ]*(?:,|->)[A-Za-z.,> -]*")
"""A scope name that JAX's own functions add inside the student's scope, not one the student
wrote: an einsum's subscripts (`jnp.einsum` stages its computation as a call named after them:
`hidden/nk,kh->nh/dot_general`), `jax.checkpoint`'s (`checkpoint`, `rematted_computation`), and
the empty name of a transform of an unnamed function (`jnp.vecdot` reads `hidden/vmap()`)."""


@dataclass(frozen=True)
class InScope:
    """Some `op` of the program lies inside the named scope path `scope` itself (`jax.named_scope`;
    nested scopes read `outer/inner`), read from the operations' locations (fact `scopes`:
    {scope path: {op: count}}). The path must be exact, so that one scope nested in another
    (`hidden/readout`) does not count for both, except for the scopes JAX's own functions open
    inside it (`LIBRARY_SCOPE`: an einsum's `hidden/nk,kh->nh` counts as `hidden`)."""

    scope: str
    op: str
    why: str = ""
    trusted: ClassVar[bool] = True

    def describe(self) -> str:
        return (
            f"a `{self.op}` in the named scope `{self.scope}` itself (that exact path: not inside another scope of "
            "yours, nor in one of yours nested in it)"
        )

    def inside(self, path: str) -> bool:
        """`path` is `scope`, or `scope` followed by scopes only JAX's own functions open."""
        if path == self.scope:
            return True
        if not path.startswith(self.scope + "/"):
            return False
        return all(LIBRARY_SCOPE.fullmatch(part) for part in path[len(self.scope) + 1 :].split("/"))

    def judge(self, facts: Facts, ref: Facts) -> str | None:
        scopes: dict[str, dict[str, int]] = facts.get("scopes") or {}
        if any(self.inside(path) and counts.get(self.op, 0) for path, counts in scopes.items()):
            return None
        found = {path: counts[self.op] for path, counts in sorted(scopes.items()) if counts.get(self.op, 0)}
        outside = _ops(facts).get(self.op, 0) - sum(found.values())
        where = [f"{n} in `{path}`" for path, n in list(found.items())[:6]]
        if outside > 0:
            where.append(f"{outside} in no named scope")
        seen = (  # names the scope: a message that judges two scopes says each once
            f"of the program's `{self.op}`s, {', '.join(where)}, none in `{self.scope}`"
            if where
            else f"the program has no `{self.op}`, in `{self.scope}` or anywhere"
        )
        return _because(f"no `{self.op}` lies inside the named scope `{self.scope}` itself ({seen})", self.why)


@dataclass(frozen=True)
class AvoidsOps:
    """The program contains none of `ops` (e.g. `case`/`select` where a static flag decides)."""

    ops: tuple[str, ...]
    why: str = ""
    trusted: ClassVar[bool] = True

    def describe(self) -> str:
        return " and ".join(f"no {_op(o)}" for o in self.ops)

    def judge(self, facts: Facts, ref: Facts) -> str | None:
        found = sorted(o for o in self.ops if _ops(facts).get(o, 0))
        if found:
            return _because(f"the compiled program has {', '.join(f'`{o}`' for o in found)}", self.why)
        return None


@dataclass(frozen=True)
class UsesAnyOp:
    """The program contains at least one of `ops`, counting custom-call targets as ops too
    (a shard_map is an `sdy` `manual_computation` under Shardy, `SPMDFullToShardShape`
    custom calls under GSPMD)."""

    ops: tuple[str, ...]
    why: str = ""
    trusted: ClassVar[bool] = True

    def describe(self) -> str:
        return "a " + " or a ".join(dict.fromkeys(_op(o) for o in self.ops))

    def judge(self, facts: Facts, ref: Facts) -> str | None:
        targets = set(facts.get("custom_calls", ()))
        if not any(_ops(facts).get(o, 0) or o in targets for o in self.ops):
            return _because(f"the compiled program has none of {', '.join(f'`{o}`' for o in self.ops)}", self.why)
        return None


@dataclass(frozen=True)
class MaxOps:
    """At most `limit` operations run (`n_ops`): catches Python loops unrolled while tracing."""

    limit: int
    why: str = ""
    trusted: ClassVar[bool] = True

    def describe(self) -> str:
        return f"at most {self.limit} operations (no Python loop unrolled into it)"

    def judge(self, facts: Facts, ref: Facts) -> str | None:
        n = facts.get("n_ops", 0)
        if n > self.limit:
            return _because(f"the compiled program has {n} operations, more than {self.limit}", self.why)
        return None


@dataclass(frozen=True)
class OpsDoNotGrow:
    """The program at the largest size has at most `factor` times the operations of the
    program at the smallest size, plus `slack`: a loop stays a loop (`while`) instead of being
    unrolled by Python, one copy of its body per step.

    Not strict equality: a legitimate `unroll=k` repeats the body up to k times, fewer when the
    trip count is below k (loops.power_iteration with unroll=4: 25 operations at 2 steps, 44 at
    200), while a Python loop grows with the trip count (the same function: 25 and 1,609; a
    Python loop of 16 Monte Carlo trials against one: 350 and 4,461). The default margin, x3
    plus 20, sits between those (measured figures: `jaxlings.specs.loops`, `.prng`).
    """

    why: str = ""
    factor: float = 3.0
    slack: int = 20
    trusted: ClassVar[bool] = True

    def describe(self) -> str:
        return (
            f"it does not grow with the input (at the largest case at most x{self.factor:g} + {self.slack} the "
            "operations of the smallest: a loop stays a loop, a Python loop is unrolled)"
        )

    def judge(self, facts: Facts, ref: Facts) -> str | None:
        small, large = facts.get("n_ops_other"), facts.get("n_ops")
        if small is not None and large is not None and large > self.factor * small + self.slack:
            return _because(
                f"the compiled program grows with the input ({small} operations for the small case, "
                f"{large} for the large one)",
                self.why,
            )
        return None


@dataclass(frozen=True)
class DataDependentLoop:
    """The compiled program has a while loop whose trip count XLA does not know: the number
    of steps depends on the data (`lax.while_loop` on a computed condition). A `fori_loop` or
    `scan` with static bounds, or a while loop on a counter alone, has a known trip count."""

    why: str = ""
    trusted: ClassVar[bool] = True

    def describe(self) -> str:
        return "a loop whose number of steps depends on the data (a `while` whose trip count XLA cannot know)"

    def judge(self, facts: Facts, ref: Facts) -> str | None:
        loops, counted = facts.get("loops", 0), facts.get("counted_loops", 0)
        if loops - counted <= 0:
            what = (
                "it has no loop"
                if not loops
                else "its loop runs a number of steps fixed before it starts"
                if loops == 1
                else f"each of its {loops} loops runs a number of steps fixed before it starts"
            )
            return _because(f"the compiled program has no data-dependent loop ({what})", self.why)
        return None


@dataclass(frozen=True)
class Donates:
    """The program donates at least `at_least` of its inputs (fact `donated_inputs`), or, with
    `at_least=None`, at least as many as the reference's program does: a train step that reuses
    the buffers of the state it replaces instead of holding two copies of it.

    Donation is part of the jitted function (`jax.jit(f, donate_argnums=...)`, lowered to
    `tf.aliasing_output` attributes that `jax.export` keeps), so the function must be jitted by
    the student: a function the grader has to jit itself donates nothing. Measured
    (training.train_step): the reference donates 14 of its 16 inputs (4 parameters, 10
    optimizer-state leaves; not the batch), an undonated jit 0.
    """

    at_least: int | None = None
    why: str = ""
    trusted: ClassVar[bool] = True

    def describe(self) -> str:
        wanted = (
            f"at least {self.at_least} of its inputs"
            if self.at_least is not None
            else "at least as many of its inputs as the reference's program does"
        )
        return f"it donates {wanted} (`donate_argnums`: the outputs reuse their buffers)"

    def judge(self, facts: Facts, ref: Facts) -> str | None:
        if "donated_inputs" not in facts:
            return None
        wanted = self.at_least if self.at_least is not None else max(1, ref.get("donated_inputs", 1))
        got = facts["donated_inputs"]
        if got < wanted:
            what = "none" if got == 0 else f"only {got}"
            whose = (
                "" if self.at_least is not None else f" (the reference's program donates {ref.get('donated_inputs')})"
            )
            return _because(
                f"the compiled program donates {what} of its {facts.get('n_inputs', '?')} inputs, "
                f"at least {wanted} wanted{whose}; jit the function yourself with `donate_argnums` "
                "naming the arguments whose buffers the outputs can reuse (a function the grader "
                "jits for you donates nothing)",
                self.why,
            )
        return None


@dataclass(frozen=True)
class _AtMostReference:
    """A fact at most `factor` times the reference's, plus `slack` (absent facts: no verdict)."""

    factor: float
    slack: float
    why: str = ""
    fact: ClassVar[str]
    template: ClassVar[str]
    description: ClassVar[str]
    trusted: ClassVar[bool] = True

    def describe(self) -> str:
        return self.description.format(factor=f"{self.factor:g}", slack=f"{self.slack:g}")

    def judge(self, facts: Facts, ref: Facts) -> str | None:
        if self.fact not in facts or self.fact not in ref:
            return None
        if facts[self.fact] > self.factor * ref[self.fact] + self.slack:
            return _because(self.template.format(mine=facts[self.fact], ref=ref[self.fact]), self.why)
        return None


@dataclass(frozen=True)
class FlopsAtMost(_AtMostReference):
    """XLA's FLOP count at most `factor` times the reference's (plus `slack`): no wasted work."""

    factor: float = 1.5
    slack: float = 100.0
    fact: ClassVar[str] = "flops"
    template: ClassVar[str] = "the compiled function does {mine:.3g} FLOPs, the reference {ref:.3g}"
    description: ClassVar[str] = "XLA's FLOP count at most x{factor} + {slack} the reference's on the same inputs"


@dataclass(frozen=True)
class CompileTimeAtMost(_AtMostReference):
    """A cold compile of the program (on the trusted side) takes at most `factor` times the
    reference's (plus `slack` s). With the grader's compilation cache on, a program identical
    to one compiled before is loaded, not compiled (`jaxlings.grading.compile_cache`): a topic that
    uses this requirement should run with `JAXLINGS_COMPILE_CACHE=off`."""

    factor: float = 3.0
    slack: float = 0.25
    fact: ClassVar[str] = "compile_seconds"
    template: ClassVar[str] = "compiling takes {mine:.2f} s, the reference {ref:.2f} s"
    description: ClassVar[str] = "it compiles in at most x{factor} + {slack} s the reference's compile time"


@dataclass(frozen=True)
class HloLinesAtMost(_AtMostReference):
    """The compiled HLO has at most `factor` times the reference's lines (plus `slack`).

    A loop that reaches XLA unrolled grows the program with its trip count, also where the
    StableHLO counts grow less (a Python loop that calls one jitted helper per step adds one
    `call` per step; XLA inlines every copy). Unlike the compile time this costs, a line count
    is exact, the same wherever the backend and the versions of JAX and XLA are the same.
    """

    factor: float = 4.0
    slack: float = 300.0
    fact: ClassVar[str] = "hlo_lines"
    template: ClassVar[str] = "the compiled HLO has {mine} lines, the reference's {ref}"
    description: ClassVar[str] = "compiled HLO of at most x{factor} + {slack} the reference's lines"


@dataclass(frozen=True)
class TempBytesAtMost(_AtMostReference):
    """The compiled program's scratch memory (fact `temp_bytes`, XLA's memory analysis of the
    program compiled on the trusted side) at most `factor` times the reference's, plus `slack`
    bytes: a gradient that keeps every layer's intermediates for its backward pass, where the
    reference recomputes them (`jax.checkpoint`), needs several times the reference's memory.

    Like the FLOP count, the figure is exact for one backend and one version of JAX and XLA,
    and differs between backends: the verdict compares with the reference compiled on the same
    machine. Programs are analysed on the host's CPU, also where the grading machine has an
    accelerator (`jaxlings.grading.device`): a TPU v5e (jax 0.10.2) reports 0 for every program.
    Where the backend reports no memory analysis there is no verdict.
    """

    factor: float = 2.0
    slack: float = 65536.0
    fact: ClassVar[str] = "temp_bytes"
    template: ClassVar[str] = "the compiled program needs {mine:,} bytes of temporary memory, the reference's {ref:,}"
    description: ClassVar[str] = (
        "XLA's count of temporary bytes for the compiled program (its intermediates, not its arguments or "
        "outputs) at most x{factor} + {slack} the reference's on the same inputs"
    )


@dataclass(frozen=True)
class CollectivesAtMostReference:
    """No more collectives of any kind (all-gather, all-reduce, ...) in the compiled HLO than
    the reference has: an accidental all-gather or resharding loses the points."""

    why: str = ""
    trusted: ClassVar[bool] = True

    def describe(self) -> str:
        return "no more collectives of any kind (all-gather, all-reduce, ...) than the reference's"

    def judge(self, facts: Facts, ref: Facts) -> str | None:
        mine, theirs = facts.get("collectives", {}), ref.get("collectives", {})
        extra = {k: n for k, n in mine.items() if n > theirs.get(k, 0)}
        if extra:
            found = ", ".join(f"{n} {k}" for k, n in sorted(extra.items()))
            allowed = ", ".join(f"{n} {k}" for k, n in sorted(theirs.items())) or "none"
            return _because(f"the compiled function has {found} (the reference: {allowed})", self.why)
        return None


# -- advisory: what the student's process reports about its jaxpr ------------------------------


@dataclass(frozen=True)
class AdvisedPrimitive:
    """ADVISORY: the student's jaxpr (as their process reports it) binds `primitive`, e.g. a
    custom primitive's name, which no compiled program shows (`mlir.lower_fun` inlines it)."""

    primitive: str
    why: str = ""
    trusted: ClassVar[bool] = False

    def describe(self) -> str:
        return f"the jaxpr binds `{self.primitive}`"

    def judge(self, facts: Facts, ref: Facts) -> str | None:
        prims = _advisory(facts).get("primitives")
        if prims is not None and not prims.get(self.primitive, 0):
            return _because(f"the jaxpr has no `{self.primitive}`", self.why)
        return None


@dataclass(frozen=True)
class AdvisedAnyPrimitive:
    """ADVISORY: the reported jaxpr binds at least one of `primitives` (e.g. `custom_jvp_call`
    or `custom_vjp_call`: a custom derivative leaves no trace in the compiled program)."""

    primitives: tuple[str, ...]
    why: str = ""
    trusted: ClassVar[bool] = False

    def describe(self) -> str:
        return "the jaxpr binds " + " or ".join(f"`{p}`" for p in self.primitives)

    def judge(self, facts: Facts, ref: Facts) -> str | None:
        prims = _advisory(facts).get("primitives")
        if prims is not None and not any(prims.get(p, 0) for p in self.primitives):
            return _because(f"the jaxpr has none of {', '.join(self.primitives)}", self.why)
        return None


@dataclass(frozen=True)
class AdvisedAvoidPrimitives:
    """ADVISORY: the reported jaxpr binds none of `primitives` (e.g. `random_wrap` /
    `random_unwrap`: legacy uint32 keys look like typed ones in a compiled program)."""

    primitives: tuple[str, ...]
    why: str = ""
    trusted: ClassVar[bool] = False

    def describe(self) -> str:
        return "the jaxpr binds no " + " and no ".join(f"`{p}`" for p in self.primitives)

    def judge(self, facts: Facts, ref: Facts) -> str | None:
        prims = _advisory(facts).get("primitives") or {}
        found = sorted(p for p in self.primitives if prims.get(p, 0))
        if found:
            return _because(f"the jaxpr uses {', '.join(found)}", self.why)
        return None


@dataclass(frozen=True)
class AdvisedNoPmap:
    """ADVISORY: `jax.pmap` is not used (the reported `pmap_calls`). Since pmap became `jit` of
    `shard_map`, its program is a shard_map's (a `manual_computation`); only the traceback of
    the equations it binds, in the student's process, tells it apart."""

    trusted: ClassVar[bool] = False

    def describe(self) -> str:
        return "no `jax.pmap`"

    def judge(self, facts: Facts, ref: Facts) -> str | None:
        if _advisory(facts).get("pmap_calls", 0):
            return (
                "the function uses jax.pmap, the old per-device API; lay arrays out with "
                "jax.device_put and a NamedSharding, or write per-device code with jax.shard_map"
            )
        return None


DEFAULT_JIT_REQUIREMENTS: tuple[Requirement, ...] = (NoHostCallbacks(), NoRetrace())

CLASSES: tuple[type, ...] = tuple(
    cls
    for name, cls in list(globals().items())
    if isinstance(cls, type)
    and cls.__module__ == __name__
    and hasattr(cls, "judge")
    and not name.startswith("_")
    and cls is not Requirement
)
"""Every requirement class of this module (a test asks each for its own `describe`)."""


def judge_all(requirements: tuple[Requirement, ...], facts: Facts, ref: Facts) -> list[str]:
    """Every unmet requirement's message, in order, advisory ones included: a caller that
    scores splits them by `trusted` first (`jaxlings.grading.checks.jit.judged`), so that nothing
    the student's process reports about itself costs or earns points."""
    return [msg for req in requirements if (msg := req.judge(facts, ref)) is not None]

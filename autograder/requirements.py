"""Structural requirements on a jitted function, judged in the grader from counted facts.

The worker traces and compiles the student's function and reports *facts*: the primitives of
its jaxpr (counted, sub-jaxprs included), the number of equations (also at a second input
size), the custom-call targets of the compiled HLO, XLA's cost analysis, and how many
compilations each call caused. The reference is traced on the same inputs, so a requirement
may compare the two. A requirement is a predicate on those facts, evaluated here, in the
trusted process. Counts are exact on every machine, so these verdicts never depend on the
machine's speed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

Facts = dict[str, Any]

HOST_CALLBACK_PRIMITIVES = ("pure_callback", "io_callback", "debug_callback", "debug_print", "callback")
HOST_CALLBACK_TARGET_WORDS = ("callback",)


def _because(message: str, why: str) -> str:
    return f"{message}: {why}" if why else message


class Requirement(Protocol):
    """A predicate on the student's facts (and the reference's, `ref`, on the same inputs);
    `judge` returns an error message, or None when met."""

    def judge(self, facts: Facts, ref: Facts) -> str | None: ...


@dataclass(frozen=True)
class NoHostCallbacks:
    """No host callback: jitted code must stay on the device (no `pure_callback` to NumPy)."""

    def judge(self, facts: Facts, ref: Facts) -> str | None:
        prims = facts["primitives"]
        found = sorted(p for p in prims if p in HOST_CALLBACK_PRIMITIVES)
        targets = sorted(t for t in facts.get("custom_calls", ()) if any(w in t.lower() for w in HOST_CALLBACK_TARGET_WORDS))
        if found or targets:
            what = ", ".join(found + targets)
            return f"the jitted function calls back to the host ({what}); compute with jax.numpy / lax instead"
        return None


@dataclass(frozen=True)
class NoRetrace:
    """A second call with fresh, same-shaped inputs must hit the compilation cache."""

    def judge(self, facts: Facts, ref: Facts) -> str | None:
        again = facts["compiles_again"] + facts["traces_again"]
        if again:
            return (
                "calling the jitted function again with new values of the same shapes re-traced it "
                f"({facts['traces_again']} traces, {facts['compiles_again']} compilations); "
                "do not make Python decisions on array values or build a new jit per call"
            )
        return None


@dataclass(frozen=True)
class UsesPrimitive:
    """The jaxpr must contain `primitive` (for example `scatter-add` for an `.at[].add`)."""

    primitive: str
    why: str = ""

    def judge(self, facts: Facts, ref: Facts) -> str | None:
        if facts["primitives"].get(self.primitive, 0) == 0:
            return _because(f"the jaxpr has no `{self.primitive}`", self.why)
        return None


@dataclass(frozen=True)
class AvoidsPrimitives:
    """The jaxpr must not contain any of `primitives`."""

    primitives: tuple[str, ...]
    why: str = ""

    def judge(self, facts: Facts, ref: Facts) -> str | None:
        found = sorted(p for p in self.primitives if facts["primitives"].get(p, 0))
        if found:
            return _because(f"the jaxpr uses {', '.join(found)}", self.why)
        return None


@dataclass(frozen=True)
class MaxEquations:
    """At most `limit` jaxpr equations (sub-jaxprs included): catches unrolled Python loops."""

    limit: int
    why: str = ""

    def judge(self, facts: Facts, ref: Facts) -> str | None:
        if facts["n_eqns"] > self.limit:
            return _because(f"the jaxpr has {facts['n_eqns']} equations, more than {self.limit}", self.why)
        return None


@dataclass(frozen=True)
class UsesAnyPrimitive:
    """The jaxpr must contain at least one of `primitives` (e.g. `scan` or `while`)."""

    primitives: tuple[str, ...]
    why: str = ""

    def judge(self, facts: Facts, ref: Facts) -> str | None:
        if not any(facts["primitives"].get(p, 0) for p in self.primitives):
            return _because(f"the jaxpr has none of {', '.join(self.primitives)}", self.why)
        return None


@dataclass(frozen=True)
class EquationsDoNotGrow:
    """The jaxpr has as many equations at the smallest size as at the largest: a loop stays a
    loop (`scan`/`while`) instead of being unrolled by Python."""

    why: str = ""

    def judge(self, facts: Facts, ref: Facts) -> str | None:
        small, large = facts.get("n_eqns_other"), facts["n_eqns"]
        if small is not None and large > small:
            return _because(f"the jaxpr grows with the input ({small} equations for the small case, {large} for the large one)", self.why)
        return None


@dataclass(frozen=True)
class _AtMostReference:
    """A fact at most `factor` times the reference's, plus `slack` (absent facts: no verdict)."""

    factor: float
    slack: float
    why: str = ""
    fact: ClassVar[str]
    template: ClassVar[str]

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


@dataclass(frozen=True)
class CompileTimeAtMost(_AtMostReference):
    """A cold trace + lower + compile takes at most `factor` times the reference's (plus `slack` s)."""

    factor: float = 3.0
    slack: float = 0.25
    fact: ClassVar[str] = "compile_seconds"
    template: ClassVar[str] = "compiling takes {mine:.2f} s, the reference {ref:.2f} s"


@dataclass(frozen=True)
class HloLinesAtMost(_AtMostReference):
    """The compiled HLO has at most `factor` times the reference's lines (plus `slack`).

    A loop that reaches XLA unrolled grows the program with its trip count, also where the
    jaxpr does not show it (`lax.scan(..., unroll=True)` stays one `scan` equation). Unlike
    the compile time this costs, a line count is exact on every machine.
    """

    factor: float = 4.0
    slack: float = 300.0
    fact: ClassVar[str] = "hlo_lines"
    template: ClassVar[str] = "the compiled HLO has {mine} lines, the reference's {ref}"


@dataclass(frozen=True)
class CollectivesAtMostReference:
    """No more collectives of any kind (all-gather, all-reduce, ...) in the compiled HLO than
    the reference has: an accidental all-gather or resharding loses the points."""

    why: str = ""

    def judge(self, facts: Facts, ref: Facts) -> str | None:
        mine, theirs = facts.get("collectives", {}), ref.get("collectives", {})
        extra = {k: n for k, n in mine.items() if n > theirs.get(k, 0)}
        if extra:
            found = ", ".join(f"{n} {k}" for k, n in sorted(extra.items()))
            allowed = ", ".join(f"{n} {k}" for k, n in sorted(theirs.items())) or "none"
            return _because(f"the compiled function has {found} (the reference: {allowed})", self.why)
        return None


DEFAULT_JIT_REQUIREMENTS: tuple[Requirement, ...] = (NoHostCallbacks(), NoRetrace())


def judge_all(requirements: tuple[Requirement, ...], facts: Facts, ref: Facts) -> list[str]:
    """Every unmet requirement's message, in order."""
    return [msg for req in requirements if (msg := req.judge(facts, ref)) is not None]

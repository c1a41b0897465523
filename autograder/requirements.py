"""Structural requirements on a jitted function, judged in the grader from counted facts.

The worker traces and compiles the student's function and reports *facts*: the primitives of
its jaxpr (counted, sub-jaxprs included), the number of equations, the custom-call targets of
the compiled HLO, and how many compilations each call caused. A requirement is a predicate on
those facts, evaluated here, in the trusted process. Counts are exact on every machine, so
these verdicts never depend on the machine's speed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

Facts = dict[str, Any]

HOST_CALLBACK_PRIMITIVES = ("pure_callback", "io_callback", "debug_callback", "callback")
HOST_CALLBACK_TARGET_WORDS = ("callback",)


class Requirement(Protocol):
    """A named predicate on facts; `judge` returns an error message, or None when met."""

    def judge(self, facts: Facts) -> str | None: ...


@dataclass(frozen=True)
class NoHostCallbacks:
    """No host callback: jitted code must stay on the device (no `pure_callback` to NumPy)."""

    def judge(self, facts: Facts) -> str | None:
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

    def judge(self, facts: Facts) -> str | None:
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

    def judge(self, facts: Facts) -> str | None:
        if facts["primitives"].get(self.primitive, 0) == 0:
            return f"the jaxpr has no `{self.primitive}`" + (f": {self.why}" if self.why else "")
        return None


@dataclass(frozen=True)
class AvoidsPrimitives:
    """The jaxpr must not contain any of `primitives`."""

    primitives: tuple[str, ...]
    why: str = ""

    def judge(self, facts: Facts) -> str | None:
        found = sorted(p for p in self.primitives if facts["primitives"].get(p, 0))
        if found:
            return f"the jaxpr uses {', '.join(found)}" + (f": {self.why}" if self.why else "")
        return None


@dataclass(frozen=True)
class MaxEquations:
    """At most `limit` jaxpr equations (sub-jaxprs included): catches unrolled Python loops."""

    limit: int
    why: str = ""

    def judge(self, facts: Facts) -> str | None:
        if facts["n_eqns"] > self.limit:
            return f"the jaxpr has {facts['n_eqns']} equations, more than {self.limit}" + (f": {self.why}" if self.why else "")
        return None


DEFAULT_JIT_REQUIREMENTS: tuple[Requirement, ...] = (NoHostCallbacks(), NoRetrace())


def judge_all(requirements: tuple[Requirement, ...], facts: Facts) -> list[str]:
    """Every unmet requirement's message, in order."""
    return [msg for req in requirements if (msg := req.judge(facts)) is not None]

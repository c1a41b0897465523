"""`sharding`: every output leaf is laid out over the devices as the reference's is (each
dimension split into as many blocks, over as many devices, replicated or not), on a fresh
sample of each size.

The student's layouts are read on the trusted side: the jitted call is exported as a program
from the shapes of a fresh sample of each size (never its values), which a trusted worker runs
on that sample (its outputs must be the reference's there) and whose outputs' shardings it
describes (`structure.program_layouts`). The samples are drawn for this check and shown to the
student's process only as shapes, not the correctness cases it has seen; nothing the student's
process says about its arrays is taken.

Layouts are compared by the blocks they make, not by the names of mesh axes: an exported
program keeps its mesh's axis names only where its shardings are named (an Explicit mesh); a
program on an Auto mesh (`with_sharding_constraint`) or from `jax.pmap` carries positional
shardings, which the trusted side runs on a mesh whose one axis it calls "devices"."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from jaxlings.grading.check import Check
from jaxlings.grading.compare import output_name, shapes
from jaxlings.grading.context import CheckContext, StudentError
from jaxlings.grading.results import Outcome
from jaxlings.grading.source import literal
from jaxlings.grading.spec import Case, Exercise

if TYPE_CHECKING:
    from jaxlings.grading.checks.vocabulary import Words


@dataclass(frozen=True)
class Sharding(Check):
    """`Sharding(points)`: every output is laid out over the devices as the reference's is."""

    name = "sharding"
    summary = "every output is laid out over the devices as the reference's is."
    requires = ("correct",)
    after = ("jit",)
    analyses = True

    def describe(self, ex: Exercise, words: Words) -> str:
        each = f"each of {words.outputs()}" if len(ex.outputs) > 1 else words.outputs()
        return (
            f"lay out {each} over the devices as the reference's (the blocks each dimension is split into, "
            "replication), on a fresh input of each size (read from the exported program run by the grader)."
        )

    def run(self, ctx: CheckContext) -> Outcome:
        ex = ctx.exercise
        got: list[dict[str, Any]] = []
        cases = samples(ctx)
        for case in cases:
            try:
                out, expected, got = ctx.program_layouts(
                    ex.name, case.args, static_argnums=ex.static_argnums, rtol=ex.rtol, atol=ex.atol
                )
            except StudentError as exc:
                return Outcome.fail(f"{case.label} {shapes(case.args)}: {exc}")
            if len(got) != len(expected):
                return Outcome.fail(f"{case.label}: {len(got)} output layouts, the task has {len(expected)} outputs")
            for i, (e, g) in enumerate(zip(expected, got)):
                if _blocks(e) != _blocks(g):
                    what = f"`{name}`" if (name := output_name(out, i, ex.outputs)) else "the output"
                    return Outcome.fail(
                        f"{case.label}: {what} is laid out as {_describe(g)}, but the task asks for {_describe(e)}",
                        expected=e,
                        got=g,
                    )
        return Outcome.ok(f"outputs laid out as asked on {len(cases)} cases", shardings=got)


def samples(ctx: CheckContext) -> list[Case]:
    """One fresh sample per size of the exercise, drawn for this check (kind "layouts")."""
    ex = ctx.exercise
    drawn = ctx.draw("layouts", lambda rng: [ex.sample(rng, size) for size in ex.sizes])
    return [Case(c.args, f"a new random case of size {size}") for c, size in zip(drawn, ex.sizes)]


def _blocks(s: dict[str, Any]) -> object:
    """A layout without its axis names: the number of blocks each dimension is split into (the
    product of the sizes of the mesh axes its PartitionSpec entry names), with replication and
    the number of devices; a layout without a PartitionSpec as described."""
    if s.get("spec") is None or not isinstance(s.get("mesh"), dict):
        return s
    try:
        entries = literal(s["spec"])
        mesh = s["mesh"]
        splits = tuple(
            1 if e is None else mesh[e] if isinstance(e, str) else math.prod(mesh[a] for a in e) for e in entries
        )
    except (ValueError, SyntaxError, TypeError, KeyError):
        return s
    return {"splits": splits, "replicated": s.get("replicated"), "devices": s.get("devices")}


def _describe(s: dict[str, Any]) -> str:
    if s.get("spec") is None:
        return (
            f"{s['kind']} ({'replicated' if s.get('replicated') else 'not replicated'}) on {s.get('devices')} devices"
        )
    layout = f"PartitionSpec{s['spec']} over mesh {s['mesh']}"
    return layout + (" (replicated: every device holds all of it)" if s.get("replicated") else "")

"""`key_reuse` (ADVISORY: worth no points): no PRNG key is consumed twice, and no key is
smuggled through legacy uint32s.

The function runs under `jax.debug_key_reuse(True)`, called directly on the run's first case
and traced under `jax.jit` on every case (the grader hands it typed keys, which the checker
tracks): under jit the checker analyses the whole traced program, once per input shape, at
trace time, so those programs are traced and never compiled (`op_check_keys`); the direct call
catches code that consumes keys differently when not traced. (Calling every case directly, as
this check did, cost `prng` more time than all its scored checks: eager calls dispatch and
compile op by op.) Its jaxpr must not contain `random_unwrap`/`random_wrap` (raw uint32 keys
hide reuse from the checker). Both facts come from the student's own process, where a module
can switch the checker off or patch the tracer, so the check teaches but does not score: the
points of a PRNG exercise rest on `correct`, whose exact comparison with the reference's random
draws already fails a function that reuses a key (its numbers are not the reference's).

Reuse is the usual reason such a function is wrong, so this check is not one of those that wait
for `correct` (it does not `require` it): on a wrong function it still makes its calls and reports a reused
key (a `correct` that fails on values makes them first, through `probe`, and names the reuse in
its own message); a wrong function that reuses nothing is "not judged until the function is
correct", as before.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from jaxlings.grading.check import Check
from jaxlings.grading.checks.jit import trace_facts
from jaxlings.grading.compare import shapes
from jaxlings.grading.context import CheckContext, KeyProbe, StudentError
from jaxlings.grading.results import Outcome
from jaxlings.grading.spec import Exercise

if TYPE_CHECKING:
    from jaxlings.grading.checks.vocabulary import Words

LEGACY_KEY_PRIMITIVES = ("random_unwrap", "random_wrap")


@dataclass(frozen=True)
class KeyReuse(Check):
    """`KeyReuse()`: advice, no points (it is `advisory`: a topic that gives it points fails to load)."""

    points: float = 0

    name = "key_reuse"
    summary = "advice, no points: never use a PRNG key twice (jax.debug_key_reuse), and keep keys typed."
    after = ("correct", "jit")
    advisory = True
    cost = 2

    def describe(self, ex: Exercise, words: Words) -> str:
        return (
            "use each key once and keep keys typed: called directly and under `jax.jit` with "
            f"`jax.debug_key_reuse(True)`, no key may be consumed twice, nor unwrapped to raw data (no "
            f"{' or '.join(f'`{p}`' for p in LEGACY_KEY_PRIMITIVES)} in the jaxpr)."
        )

    def run(self, ctx: CheckContext) -> Outcome:
        correct = ctx.findings.passed.get("correct", False)
        if found := probe(ctx):
            message = found.message
            if found.reused:
                why = "" if correct else WHY_WRONG
                message = f"a PRNG key is used twice{why}: {found.message}"
            return Outcome.fail(message, advisory=True)
        if not correct:
            return Outcome.fail("not judged until the function is correct", advisory=True)
        try:
            facts, _ = trace_facts(ctx)
        except StudentError as exc:
            return Outcome.fail(f"could not trace the function: {exc}", advisory=True)
        primitives = facts.get("advisory", {}).get("primitives", {})
        if found_legacy := sorted(p for p in LEGACY_KEY_PRIMITIVES if primitives.get(p)):
            return Outcome.fail(
                f"the jaxpr uses {', '.join(found_legacy)}: raw uint32 keys hide reuse from JAX's "
                "checker; keep keys typed and use split / fold_in",
                advisory=True,
            )
        return Outcome.ok("every key is used once", advisory=True)


def probe(ctx: CheckContext) -> KeyProbe | None:
    """The calls under the checker: None when all of them returned, else the first failure
    (`KeyProbe`). Made once per exercise (`Findings.key_probe`)."""
    findings = ctx.findings
    if not findings.probed:
        ex = ctx.exercise
        findings.probed = True
        for jit, case in [(False, case) for case in ctx.cases[:1]] + [(True, case) for case in ctx.cases]:
            try:
                if jit:
                    ctx.student.call("check_keys", fn=ex.name, args=case.args, static_argnums=ex.static_argnums)
                else:
                    ctx.student.call("call", fn=ex.name, args=case.args, key_reuse=True)
            except StudentError as exc:
                mode = "under jax.jit" if jit else "called directly"
                text, reused = str(exc), str(exc).startswith("KeyReuseError")
                where = f"{mode}, {case.label} {shapes(case.args)}"
                findings.key_probe = KeyProbe(reuse_words(text, where) if reused else f"{where}: {text}", reused)
                break
    return findings.key_probe


def reuse_note(ctx: CheckContext) -> str:
    """For `correct`'s message when the values are wrong: a sentence naming a reused key, or ""."""
    if ctx.exercise.check("key_reuse") is None:
        return ""
    found = probe(ctx)
    if not found or not found.reused:
        return ""
    return (
        ". A likely cause: a PRNG key is used twice, and a reused key repeats its random numbers (see this "
        'exercise\'s key_reuse check, and "Never use a key twice" in the lesson)'
    )


WHY_WRONG = ", which is why the values are not the reference's (a reused key repeats its random numbers)"

ERROR = re.compile(
    r"KeyReuseError: (?P<what>.*?)(?: See (?P<url>https?://\S+))?"
    r"(?: \(the key was first used at (?P<first>line \d+: .*?)\))?(?: \(at (?P<at>line \d+: .*)\))?",
    re.S,
)
"""A KeyReuseError as the student's worker reports it (`harness.describe`, `replies.format_error`):
JAX's first line, its docs link, where the key was first used, and the student's line."""

KEY_ARG = re.compile(r"random\.\w+\(\s*([A-Za-z_][\w.]*(?:\[[^\]]*\])?)")
"""The key a `jax.random.<fn>(key, ...)` call on a line of code consumes."""


def reuse_words(text: str, where: str) -> str:
    """A reused key in the student's terms, from JAX's KeyReuseError (`text`): which key, on
    which line, and why, in place of JAX's jaxpr, equation and signature; `where` is the call
    (how it was made, the case). Ends with JAX's docs link, whole."""
    match = ERROR.fullmatch(text.strip())
    if match is None:
        return f"{text} ({where})"
    what, at, first = match["what"], match["at"], match["first"]
    line = _line(at)
    if what.startswith("scan body"):
        if "constants" in what:
            detail = (
                f"the step function of the `lax.scan`{line} uses a key from outside the loop, so every step uses "
                "the same key again; split the key into one per step and scan over them, or carry a key and split "
                "it at each step"
            )
        else:
            detail = (
                f"the step function of the `lax.scan`{line} uses the key it carries without carrying on a fresh "
                "one, so the next step uses it again; split it and carry one part"
            )
    elif what.startswith("while_loop"):
        detail = (
            f"the `lax.while_loop`{line} uses a key from outside the loop (or the one it carries, without "
            "carrying on a fresh one), so every iteration uses it again"
        )
    elif "consumed" not in what:  # a message of JAX's this function does not know: its own words
        detail = f"JAX reports: {what}{line}"
    else:
        key = KEY_ARG.search(at.split(": ", 1)[1]) if at and ": " in at else None
        detail = f"{f'`{key[1]}`' if key else 'a key'} is used again{line}" + (
            f", after its first use at {_code(first)}" if first else ""
        )
    return f"{detail} ({where})" + (f". See {match['url']}" if match["url"] else "")


def _line(at: str | None) -> str:
    """The student's line as a message gives it, " at line 4 (`code`)"; "" where the student's line is not known."""
    return f" at {_code(at)}" if at else ""


def _code(at: str) -> str:
    """The worker's "line 4: b = f(key)" as "line 4 (`b = f(key)`)"."""
    number, _, code = at.partition(": ")
    return f"{number} (`{code.strip()}`)" if code.strip() else number

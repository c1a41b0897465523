"""The exported program's dataflow as the similarity report fingerprints it (`Shingler`,
`program_shingles`): what a copier changes for free is not in it, and neither are the equivalent
forms a rewrite swaps in.

Why. The report compares what runs as well as what is written (jaxlings/service/similarity.py).
A rewrite that keeps the computation (`jnp.where` for `lax.select`, `x * x` for `x ** 2`, a
`fori_loop` for a `scan`, `+ 0.0` appended) changes the StableHLO that JAX emits in small ways
that a plain labelling of its operations magnifies: `jnp.where` lowers to a call of a private
function, so one swap cut the dataflow in two and took a copy's program from 1.0 to 0.15. Here
the program is read as XLA's simplifier would see it before fingerprinting:

- calls are inlined (a callee's arguments are the caller's operands, its results what it returns);
- constants are folded (an operation of constants only is a constant) and read by element type
  only, never by value or shape (a broadcast scalar is the scalar);
- identities go: `x + 0`, `0 + x`, `x - 0`, `x * 1`, `x / 1`, `select(p, x, x)`, a `convert`,
  `reshape` or `broadcast_in_dim` to its operand's own type, and JAX's wrapping of a negative index
  (`select(i < 0, i + n, i)`: an index read by `x[i]` but not by `lax.dynamic_index_in_dim`),
  and an element of an `iota` read at `i`, which is `i`;
- one form for the equivalents a rewrite uses: `a > b` is `b < a` (and `>=`, `<=`); `dot` is
  `dot_general`, whose operands' transposes are folded into it (the contraction is not in the
  token); `power(x, c)` for a constant c of 1, 2, 3, 4 or 0.5 is the products `integer_pow`
  lowers to (or `sqrt`); `x / c` for a constant c is `x * c`; `x + (-y)` is `x - y`;
- a `while` loop's carried values are read by what they start from, not by their place in the
  loop's tuple (a `fori_loop` and a `scan` order their carries differently), a value the loop
  passes through unchanged is the value itself, and each result is the loop's condition with what
  the body yields for it.

Each remaining operation is labelled by its token (`op_token`) and, at depth k (1 to
`SHINGLE_DEPTH`), by the hash of its token with its operands' labels at depth k - 1 (commutative
operands sorted): the tree of producers down to depth k, as Weisfeiler-Lehman labels a graph.
The program's elements are every operation's labels at depths 1 to `SHINGLE_DEPTH`; names,
locations, constants' values and the order of independent operations are not in them.

This module imports nothing of `jaxlings` (it runs in the trusted analysis worker).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

SHINGLE_DEPTH = 3
"""How far back each operation's labels look along its operands (`Shingler`)."""
SHINGLES_KEPT = 128
"""Hashes a program's sketch keeps at most (16 hex digits each: about 2.4 kB of JSON)."""
BUDGET = 20000
"""Operations a `Shingler` reads at most, calls inlined (a larger program is a sample: its first
`BUDGET`); the grader refuses programs of more (`jaxlings.worker.program.MAX_OPS`)."""
COMMUTATIVE = frozenset({"add", "multiply", "maximum", "minimum", "and", "or", "xor"})
"""Operations whose operands' order is not in their labels (nor is that of `compare EQ`/`NE`)."""
NO_OPS = frozenset({"convert", "reshape", "broadcast_in_dim", "sharding_constraint"})
"""Operations that change nothing when their result's type is their operand's."""
FLIPPED = {"GT": "LT", "GE": "LE"}
"""Comparisons read with their operands swapped: `a > b` is `b < a`."""
POWERS = (1.0, 2.0, 3.0, 4.0)
"""Constant exponents read as the products `integer_pow` lowers to."""
_TENSOR = re.compile(r"tensor<((?:[0-9?]+x)*)(.+)>")
_SPLAT = re.compile(r"dense<([^<>\[\]\"]+)>")


@dataclass(frozen=True, eq=False)
class Node:
    """A value of the program as the fingerprint reads it: its labels at depths 0 to
    `SHINGLE_DEPTH - 1`, the (normalised) operation that made it and that operation's operands
    (for the patterns `Shingler` recognises), and whether it is a constant (with its value where
    it is one number)."""

    labels: tuple[str, ...]
    op: str = ""
    operands: tuple[Node, ...] = ()
    constant: bool = False
    value: float | None = None
    hashes: tuple[str, ...] = ()
    """Its elements: the hashes of its labels at depths 1 to `SHINGLE_DEPTH` (none for an
    argument, a constant or a loop's carried value)."""


def _hash(text: str) -> str:
    """A label's 64-bit BLAKE2b hash, as 16 hex digits."""
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def type_token(kind: Any) -> str:
    """A value's type as the fingerprint reads it: a tensor's element type and rank (`f32/1`)."""
    text = str(kind)
    match = _TENSOR.fullmatch(text)
    return f"{match.group(2)}/{match.group(1).count('x')}" if match else text.split("<", 1)[0][:20]


def element_type(kind: Any) -> str:
    """A tensor's element type alone (`f32`): what a constant is read by."""
    return type_token(kind).split("/", 1)[0]


def splat_value(op: Any) -> float | None:
    """The one number a `stablehlo.constant` holds everywhere (`dense<0.5>`), or None."""
    if "value" not in op.attributes:
        return None
    match = _SPLAT.match(str(op.attributes["value"]))
    if match is None:
        return None
    text = match.group(1).strip()
    if text in ("true", "false"):
        return float(text == "true")
    try:
        return float(text)
    except ValueError:
        return None


class Spent(Exception):
    """The `Shingler` has read `BUDGET` operations."""


class Shingler:
    """The normalised dataflow of a module's entry function, calls inlined, as a multiset of
    hashed elements (`elements`; see the module's docstring for what is normalised and how
    values are labelled). `functions`: the module's functions by name."""

    def __init__(self, functions: Mapping[str, Any], budget: int = BUDGET) -> None:
        self.functions = functions
        self.budget = budget
        self._active: list[str] = []
        self._made: dict[tuple[str, tuple[int, ...]], Node] = {}  # one node per operation and operands

    def run(self, entry: str) -> list[str]:
        """The elements of every node that `entry`'s results are computed from (dead code goes,
        as XLA drops it); a program past the budget is read as far as the budget goes, its
        elements those of every node made."""
        fn = self.functions[entry]
        args = [_leaf(f"arg{i}") for i in range(len(fn.regions[0].blocks[0].arguments))]
        try:
            outputs = self._call(entry, args) or []
        except Spent:
            outputs = list(self._made.values())
        return [h for node in _reached(outputs) for h in node.hashes]

    # -- walking ------------------------------------------------------------------------------

    def _call(self, name: str, args: Sequence[Node]) -> list[Node] | None:
        """The nodes a function returns, its arguments bound to `args` (None for a function not
        in the module or one that calls itself: the grader refuses both before this runs)."""
        if name not in self.functions or name in self._active:
            return None
        self._active.append(name)
        try:
            return self._block(self.functions[name].regions[0].blocks[0], args, {})
        finally:
            self._active.pop()

    def _block(self, block: Any, args: Sequence[Node], env: dict[Any, Node]) -> list[Node]:
        """Read a block's operations, its arguments bound to `args`; the nodes it returns."""
        for arg, node in zip(block.arguments, args, strict=False):
            env[arg] = node
        for view in block.operations:
            op = view.operation
            if op.name in ("func.return", "stablehlo.return"):
                return [self._node(v, env) for v in op.operands]
            self._operation(op, env)
        return []

    def _node(self, value: Any, env: Mapping[Any, Node]) -> Node:
        """The node of a value (one the walk has not bound reads as unknown)."""
        return env.get(value) or _leaf("?")

    def _operation(self, op: Any, env: dict[Any, Node]) -> None:
        """Bind the results of one operation (calls inlined, loops and constants read as such)."""
        self.budget -= 1
        if self.budget < 0:
            raise Spent
        short = op.name.split(".", 1)[1] if "." in op.name else op.name
        operands = [self._node(v, env) for v in op.operands]
        results = list(op.results)
        if short == "call":
            returned = self._call(_callee(op), operands)
            if returned is not None and len(returned) == len(results):
                env.update(zip(results, returned, strict=True))
                return
        if short == "while":
            env.update(zip(results, self._while(op, operands, env), strict=True))
            return
        for region in op.regions:
            for block in region:
                self._block(block, [_leaf(f"arg{i}") for i in range(len(block.arguments))], env)
        if short == "constant" or (operands and not op.regions and all(n.constant for n in operands)):
            for result in results:
                env[result] = _constant(result.type, _folded(short, op, operands))
            return
        if len(results) == 1:
            found = _simplified(short, operands, [v.type == results[0].type for v in op.operands])
            if found is not None:
                env[results[0]] = found
                return
        token, operands = _canonical(short, op_token(op, short), operands)
        if short == "power" and len(operands) == 2:
            env[results[0]] = self._power(token, operands)
            return
        made = self._make(token, operands)
        for i, result in enumerate(results):
            env[result] = made if len(results) == 1 else _suffixed(made, f"#{i}")

    def _while(self, op: Any, inits: list[Node], env: dict[Any, Node]) -> list[Node]:
        """A `while` loop's results: a carried value is read by what it starts from (`_carry`),
        one the body passes through unchanged is its start, and each other result is the loop's
        condition with what the body yields for it."""
        cond, body = (region.blocks[0] for region in op.regions)
        ends = list(body.operations)[-1].operation.operands
        kept = [i < len(ends) and ends[i] == arg for i, arg in enumerate(body.arguments)]
        carried = [init if keep else _carry(init, arg.type) for init, keep, arg in zip(inits, kept, body.arguments)]
        stops = self._block(cond, carried, env)
        yielded = self._block(body, carried, env)
        out = []
        for i, result in enumerate(op.results):
            if kept[i] or i >= len(yielded):
                out.append(inits[i] if kept[i] else _leaf("?"))
            else:
                out.append(self._make(f"while {type_token(result.type)}", [*stops[:1], yielded[i]], commutes=False))
        return out

    def _power(self, token: str, operands: list[Node]) -> Node:
        """`power(x, c)` for a constant c: the products `integer_pow` lowers to, `sqrt`, or x."""
        base, exponent = operands
        rest = token.split(" ", 1)[1]
        if not exponent.constant:
            return self._make(token, operands)
        if exponent.value == 0.5:
            return self._make(f"sqrt {rest}", [base])
        if exponent.value not in POWERS:
            return self._make(token, operands)
        y, x, acc = int(exponent.value or 0), base, None
        while y > 0:  # as jax's integer_pow: square and multiply
            if y & 1:
                acc = x if acc is None else self._make(f"multiply {rest}", [acc, x])
            y >>= 1
            if y:
                x = self._make(f"multiply {rest}", [x, x])
        return acc or base

    def _make(self, token: str, operands: Sequence[Node], commutes: bool | None = None) -> Node:
        """The node of `token` applied to `operands`: the one already made of the same operation
        on the same nodes (common subexpressions are one, as XLA makes them), else a new one."""
        key = (token, tuple(id(n) for n in operands))
        if key in self._made:  # the node kept there keeps its operands alive: their ids stay theirs
            return self._made[key]
        if commutes is None:
            commutes = _kind(token) in COMMUTATIVE or _kind(token) in ("compare EQ", "compare NE")
        hashes = []
        for k in range(SHINGLE_DEPTH):
            inputs = [n.labels[k] for n in operands]
            hashes.append(_hash(token + "(" + ",".join(sorted(inputs) if commutes else inputs) + ")"))
        node = Node((token, *hashes[: SHINGLE_DEPTH - 1]), _kind(token), tuple(operands), hashes=tuple(hashes))
        self._made[key] = node
        return node


def _reached(outputs: Sequence[Node]) -> list[Node]:
    """Every node the `outputs` are computed from, each once (by identity), outputs first."""
    seen: set[int] = set()
    out: list[Node] = []
    todo = list(outputs)
    while todo:
        node = todo.pop()
        if id(node) not in seen:
            seen.add(id(node))
            out.append(node)
            todo.extend(node.operands)
    return out


def _kind(token: str) -> str:
    """What a token's operation is: its name, with a comparison's direction (`compare LT`)."""
    words = token.split(" ", 2)
    return " ".join(words[:2]) if words[0] == "compare" else words[0]


def _leaf(label: str) -> Node:
    """A value read by one label at every depth (a function's argument, an unknown value)."""
    return Node((label,) * SHINGLE_DEPTH)


def _constant(kind: Any, value: float | None) -> Node:
    """A constant, read by its element type alone."""
    return Node((f"const {element_type(kind)}",) * SHINGLE_DEPTH, "constant", (), True, value)


def _carry(init: Node, kind: Any) -> Node:
    """A loop's carried value, read by its type and what it starts from."""
    token = f"carry {type_token(kind)}"
    labels = [token] + [_hash(f"{token}({init.labels[k - 1]})") for k in range(1, SHINGLE_DEPTH)]
    return Node(tuple(labels), "carry", (init,))


def _suffixed(node: Node, suffix: str) -> Node:
    """One result of a multi-result operation: its labels suffixed with its index, computed
    from the operation's node (reached from any of its results, its elements count once)."""
    return Node(tuple(label + suffix for label in node.labels), node.op + suffix, (node,))


def _callee(op: Any) -> str:
    """The name of the function a `func.call` calls."""
    return str(op.attributes["callee"]).lstrip("@").strip('"')


def _folded(short: str, op: Any, operands: list[Node]) -> float | None:
    """The one number an operation of constants holds: a constant's own, or what a broadcast,
    reshape or conversion keeps; None for anything else (read by type alone)."""
    if short == "constant":
        return splat_value(op)
    if short in NO_OPS and len(operands) == 1:
        return operands[0].value
    return None


def _simplified(short: str, operands: list[Node], typed: list[bool]) -> Node | None:
    """The operand an operation reduces to when it changes nothing (see the module's
    docstring), or None; `typed`: whether each operand has the result's type (an operand of
    another shape is not the result)."""
    if short in NO_OPS and len(operands) == 1:
        if typed[0]:
            return operands[0]
        return _counted(operands[0]) if short == "reshape" else None
    if len(operands) == 2:
        (left, right), (left_typed, right_typed) = operands, typed
        if short in ("add", "subtract") and right.value == 0 and left_typed and not left.constant:
            return left
        if short == "add" and left.value == 0 and right_typed and not right.constant:
            return right
        if short in ("multiply", "divide") and right.value == 1 and left_typed and not left.constant:
            return left
        if short == "multiply" and left.value == 1 and right_typed and not right.constant:
            return right
    if short == "select" and len(operands) == 3:
        pred, yes, no = operands
        if yes.labels == no.labels:
            return yes
        if _wraps_index(pred, yes, no):
            return no
    return None


def _counted(sliced: Node) -> Node | None:
    """The index `i` where `sliced` is one element of an `iota` read at `i` (`arange(n)[i]` is
    `i`: a `scan` over `arange` reads its step so, a `fori_loop` has it as its counter), else None."""
    if sliced.op == "dynamic_slice" and len(sliced.operands) == 2 and sliced.operands[0].op == "iota":
        return sliced.operands[1]
    return None


def _wraps_index(pred: Node, yes: Node, no: Node) -> bool:
    """Whether `select(pred, yes, no)` is JAX's wrapping of a negative index `i`:
    `select(i < 0, i + n, i)`."""
    return (
        pred.op == "compare LT"
        and len(pred.operands) == 2
        and pred.operands[0].labels == no.labels
        and pred.operands[1].value == 0
        and yes.op == "add"
        and any(o.labels == no.labels for o in yes.operands)
    )


def _canonical(short: str, token: str, operands: list[Node]) -> tuple[str, list[Node]]:
    """One form for the equivalents a rewrite uses (see the module's docstring)."""
    parts = token.split(" ")
    if short == "compare" and len(parts) > 1 and parts[1] in FLIPPED and len(operands) == 2:
        return " ".join([parts[0], FLIPPED[parts[1]], *parts[2:]]), operands[::-1]
    if short in ("dot", "dot_general"):
        return " ".join(["dot_general", *parts[1:]]), [o.operands[0] if o.op == "transpose" else o for o in operands]
    if short == "divide" and len(operands) == 2 and operands[1].constant:
        return " ".join(["multiply", *parts[1:]]), operands
    if short == "add" and len(operands) == 2:
        left, right = operands
        if right.op == "negate" or left.op == "negate":
            minus, plus = (right, left) if right.op == "negate" else (left, right)
            return " ".join(["subtract", *parts[1:]]), [plus, minus.operands[0]]
    return token, operands


def op_token(op: Any, short: str) -> str:
    """One operation as the similarity report sees it: its name, a comparison's direction, a
    scatter's kind, and each result's type abstracted to its element type and rank (`add f32/1`).
    What a copier changes for free is not in it: SSA value names, constants' values, locations
    (named scopes, source lines), function, argument and callee names, other attributes."""
    parts = [short]
    if short == "compare" and "comparison_direction" in op.attributes:
        found = re.search(r"comparison_direction\s*<?\s*(\w+)", str(op.attributes["comparison_direction"]))
        parts.append(found.group(1) if found else "?")
    elif short == "scatter":
        parts.append(scatter_kind(op))
    parts.extend(type_token(result.type) for result in op.results)
    return " ".join(parts)


_SCATTER_KINDS = {
    "stablehlo.add": "scatter-add",
    "stablehlo.multiply": "scatter-mul",
    "stablehlo.minimum": "scatter-min",
    "stablehlo.maximum": "scatter-max",
    "stablehlo.or": "scatter-or",
    "stablehlo.and": "scatter-and",
}
"""A scatter's update region `(old, new) -> ...` as jaxpr-style names."""


def scatter_kind(op: Any) -> str:
    """`scatter-add` & co. when the update region combines old and new with one such op,
    `scatter-set` when it returns the new value, `scatter-apply` otherwise."""
    try:
        block = next(iter(op.regions[0]))
        body = list(block)
        args = list(block.arguments)
    except (StopIteration, IndexError):
        return "scatter-apply"
    if len(args) != 2:  # variadic scatters: several operands at once
        return "scatter-apply"
    old, new = args
    ret = body[-1].operation
    if len(body) == 1 and len(ret.operands) == 1 and ret.operands[0] == new:
        return "scatter-set"
    if len(body) == 2:
        comb = body[0].operation
        operands = list(comb.operands)
        pair = len(operands) == 2 and (
            (operands[0] == old and operands[1] == new) or (operands[0] == new and operands[1] == old)
        )
        if comb.name in _SCATTER_KINDS and pair and len(ret.operands) == 1 and ret.operands[0] == comb.results[0]:
            return _SCATTER_KINDS[comb.name]
    return "scatter-apply"


def sketch(functions: Mapping[str, Any], entry: str) -> list[str] | None:
    """The sketch of a module's entry function (`Shingler`, `program_shingles`), or None where
    the walk fails on a module it does not expect: the fingerprint decides nothing, so a program
    it cannot read goes without one rather than failing the check that asked for it."""
    try:
        return program_shingles(Shingler(functions).run(entry))
    except Exception:  # noqa: BLE001 - see the docstring
        return None


def program_shingles(elements: list[str], kept: int = SHINGLES_KEPT) -> list[str]:
    """A bounded sketch of a multiset of elements (`Shingler.elements`): the k-th occurrence of an
    element is an element of its own (so that the Jaccard index of two sketches' sets is the
    weighted Jaccard index of their counts), each hashed to 64 bits (BLAKE2b), and the `kept`
    smallest hashes kept, sorted, as 16 hex digits each: a bottom-k sketch, exact for a program of
    at most `kept` elements and a uniform sample of a larger one
    (`jaxlings.service.similarity` compares sketches with the bottom-k estimator)."""
    seen: Counter[str] = Counter()
    hashes = set()
    for element in elements:
        seen[element] += 1
        digest = hashlib.blake2b(f"{element}#{seen[element]}".encode(), digest_size=8).digest()
        hashes.add(int.from_bytes(digest, "big"))
    return [f"{h:016x}" for h in sorted(hashes)[:kept]]

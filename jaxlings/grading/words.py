"""The grader's vocabulary for students: what messages say instead of the internals they describe.

Every message a student reads (CLI, notebook, web page, results.json) is built from the same few
words: a structure described in words ("a pair of arrays", never `PyTreeDef((*, *))`), a number to
4 significant digits, a count with its noun ("1 key", "3 of 4 keys"), and the student's own file
instead of the grader's private copy of it (never a temp folder). The worker cannot import this
module (it imports nothing else of jaxlings): it writes file names only (`harness.describe`),
and the grader maps them back here (`student_paths`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

SIGNIFICANT = 4
"""Significant digits of a number in a message: enough to tell two values apart, not 16 digits."""

SMALL = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def num(x: object) -> str:
    """A number as a message shows it: whole numbers whole, others to 4 significant digits
    (0.93957626903449 -> 0.9396, 1e-05 -> 1e-05); anything else as `repr` shows it."""
    if isinstance(x, bool) or (not isinstance(x, (int, float)) and not _is_numpy_number(x)):
        return repr(x)
    value = x.item() if hasattr(x, "item") else x  # a NumPy scalar
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value:.{SIGNIFICANT}g}"
    return repr(x)


def _is_numpy_number(x: object) -> bool:
    return type(x).__module__ == "numpy" and hasattr(x, "item") and getattr(x, "ndim", 1) == 0


def count(n: int, noun: str, plural: str | None = None) -> str:
    """`n` with its noun: "1 key", "3 keys", "0 values"."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def of(part: int, total: int, noun: str, plural: str | None = None) -> str:
    """A part of a count, the noun in the plural: "3 of 4 keys", "1 of 1 keys" (read as "1 of
    the 1 keys": the message says how many of how many, always in the same words)."""
    return f"{part} of {total} {plural or noun + 's'}"


def small(n: int) -> str:
    """A small count as a word ("two"), larger ones as digits."""
    return SMALL[n] if 0 <= n < len(SMALL) else str(n)


# -- structures (a pytree's treedef, in words) ----------------------------------------------------


@dataclass
class Node:
    """One node of a parsed treedef: `kind` is "leaf", "none", "tuple", "list", "dict" or
    "custom" (a registered class: `name`, its `aux` data as the treedef prints it)."""

    kind: str
    children: list[Node] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)
    name: str = ""
    aux: str = ""

    def shallow(self) -> tuple[str, int, tuple[str, ...], str, str]:
        """What this node is, apart from its children: two nodes with equal `shallow` differ, if
        at all, below."""
        return self.kind, len(self.children), tuple(self.keys), self.name, self.aux


class _Unparsed(ValueError):
    """A treedef string this parser does not read (a registered class printing oddly)."""


def parse(treedef: str) -> Node | None:
    """The tree a treedef string describes (`str(jax.tree.structure(x))`), or None when it does
    not read as one (the student's own classes print what they like)."""
    text = treedef.strip()
    if text.startswith("PyTreeDef(") and text.endswith(")"):
        text = text[len("PyTreeDef(") : -1]
    try:
        node, end = _node(text, 0)
    except (_Unparsed, IndexError, ValueError, RecursionError):
        return None
    return node if end == len(text) else None


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] == " ":
        i += 1
    return i


def _node(text: str, i: int) -> tuple[Node, int]:
    i = _skip(text, i)
    if text.startswith("*", i):
        return Node("leaf"), i + 1
    if text.startswith("None", i):
        return Node("none"), i + 4
    if text[i] in "([":
        close = ")" if text[i] == "(" else "]"
        children, i = _sequence(text, i + 1, close)
        return Node("tuple" if close == ")" else "list", children), i
    if text[i] == "{":
        return _dict(text, i + 1)
    if text.startswith("CustomNode(", i):
        return _custom(text, i + len("CustomNode("))
    raise _Unparsed(text[i:])


def _sequence(text: str, i: int, close: str) -> tuple[list[Node], int]:
    children: list[Node] = []
    while True:
        i = _skip(text, i)
        if text[i] == close:
            return children, i + 1
        child, i = _node(text, i)
        children.append(child)
        i = _skip(text, i)
        if text[i] == ",":
            i += 1
        elif text[i] != close:
            raise _Unparsed(text[i:])


def _dict(text: str, i: int) -> tuple[Node, int]:
    node = Node("dict")
    while True:
        i = _skip(text, i)
        if text[i] == "}":
            return node, i + 1
        key, i = _key(text, i)
        if not text.startswith(": ", i):
            raise _Unparsed(text[i:])
        child, i = _node(text, i + 2)
        node.keys.append(key)
        node.children.append(child)
        i = _skip(text, i)
        if text[i] == ",":
            i += 1
        elif text[i] != "}":
            raise _Unparsed(text[i:])


def _key(text: str, i: int) -> tuple[str, int]:
    """A dict key as its repr prints: a quoted string (with escapes) or a bare literal."""
    if text[i] in "'\"":
        quote, j = text[i], i + 1
        while text[j] != quote:
            j += 2 if text[j] == "\\" else 1
        return text[i : j + 1], j + 1
    j = text.index(":", i)
    return text[i:j], j


def _custom(text: str, i: int) -> tuple[Node, int]:
    """`CustomNode(Name[aux], [children])`; `aux` may hold brackets of its own."""
    bracket = text.index("[", i)
    name = text[i:bracket]
    depth, j = 0, bracket
    while True:
        depth += {"[": 1, "]": -1}.get(text[j], 0)
        if depth == 0:
            break
        j += 1
    aux = text[bracket + 1 : j]
    i = _skip(text, j + 1)
    if not text.startswith(", [", i):
        raise _Unparsed(text[i:])
    children, i = _sequence(text, i + 3, "]")
    if text[i] != ")":
        raise _Unparsed(text[i:])
    if name.startswith("namedtuple"):  # namedtuple[P]: the class is in the brackets
        name, aux = aux, ""
    return Node("custom", children, name=name, aux=aux), i + 1


DEEPEST = 8
"""Levels of nesting a structure is described to ("a list of one list of ..."); below, only how many."""


def describe(node: Node, depth: int = 0) -> str:
    """A structure in words: "an array", "a pair of arrays", "a tuple of three: (an array, a
    pair of arrays, None)", "a dict with keys 'w', 'b'", "an instance of `Params`". Each node is
    described at most twice (once of each number) whatever the structure: a student's output
    may nest lists hundreds deep, and the grader's words cost no more than the parse."""
    return _words(node, depth, plural=False)


def _words(node: Node, depth: int, plural: bool, memo: dict[tuple[int, bool], str] | None = None) -> str:
    memo = {} if memo is None else memo
    key = (id(node), plural)
    if key not in memo:
        memo[key] = _words_of(node, depth, plural, memo)
    return memo[key]


def _words_of(node: Node, depth: int, plural: bool, memo: dict[tuple[int, bool], str]) -> str:
    n = len(node.children)
    if node.kind == "leaf":
        return "arrays" if plural else "an array"
    if node.kind == "none":
        return "Nones" if plural else "None"
    if node.kind == "dict":
        keys = ", ".join(_short(k) for k in node.keys[:6]) + (f" and {len(node.keys) - 6} more" if n > 6 else "")
        if not n:
            return "empty dicts" if plural else "an empty dict"
        return f"dicts with keys {keys}" if plural else f"a dict with {'key' if n == 1 else 'keys'} {keys}"
    if node.kind == "custom":
        return f"instances of `{node.name}`" if plural else f"an instance of `{node.name}`"
    what = "tuple" if node.kind == "tuple" else "list"
    if not n:
        return f"empty {what}s" if plural else f"an empty {what}"
    if depth >= DEEPEST:
        return f"{what}s of {small(n)}, nested deeper" if plural else f"a {what} of {small(n)}, nested deeper"
    kinds = {_words(c, depth + 1, False, memo) for c in node.children}
    if len(kinds) == 1:  # all alike: "a pair of arrays", "a list of three dicts with keys 'w'"
        inner = _words(node.children[0], depth + 1, n > 1, memo)
        if n == 1:  # "a tuple of one array"
            inner = inner.removeprefix("an ").removeprefix("a ")
        if n == 2 and what == "tuple":
            return f"pairs of {inner}" if plural else f"a pair of {inner}"
        return f"{what}s of {small(n)} {inner}" if plural else f"a {what} of {small(n)} {inner}"
    head = f"{what}s of {small(n)}" if plural else f"a {what} of {small(n)}"
    if depth >= 1 or plural:
        return head
    return f"{head}: ({', '.join(_words(c, depth + 1, False, memo) for c in node.children)})"


def _short(text: str, limit: int = 40) -> str:
    """A name quoted in a message, cut to `limit` characters (a student's keys can be long)."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def structure(treedef: str) -> str:
    """`describe` of a treedef string; "a structure of its own" when it does not parse."""
    node = parse(treedef)
    return describe(node) if node is not None else "a structure of its own"


def structure_difference(expected: str, got: str, root: str = "output", names: tuple[str, ...] = ()) -> str:
    """Where two structures first differ, in words: "the output is a pair of arrays, expected a
    tuple of three: (...)", or "`output[1]` is an array, expected a pair of arrays". `names`
    name the entries of a returned tuple (`Exercise.outputs`)."""
    want, have = parse(expected), parse(got)
    if want is None:
        return f"the {root}'s structure is not the one the task asks for"
    if have is None:
        return f"the {root}'s structure is not the one the task asks for ({describe(want)})"
    path, w, h = _first_difference(want, have, [])
    where = f"the {root}" if not path else f"`{_path_name(want, path, root, names)}`"
    if w.shallow()[:4] == h.shallow()[:4]:  # same class and children: its static data differs
        return (
            f"{where} is an instance of `{w.name}` whose static fields (its parts that are not arrays) differ "
            "from the reference's"
        )
    if w.children == h.children and w.keys == h.keys:  # a list for a tuple: the entries are right, said once
        return f"{where} is {_words(h, 1, False)}, expected {_words(w, 1, False)} (of the same entries)"
    return f"{where} is {describe(h)}, expected {describe(w)}"


def _first_difference(want: Node, have: Node, path: list[int]) -> tuple[list[int], Node, Node]:
    if want.shallow() != have.shallow():
        return path, want, have
    for i, (w, h) in enumerate(zip(want.children, have.children)):
        if w != h:
            return _first_difference(w, h, [*path, i])
    return path, want, have


def _path_name(root_node: Node, path: list[int], root: str, names: tuple[str, ...]) -> str:
    parts, node = [], root_node
    for i in path:
        parts.append(f"[{_short(node.keys[i])}]" if node.kind == "dict" else f"[{i}]")
        node = node.children[i]
    if names and root_node.kind == "tuple" and path[0] < len(names):
        return names[path[0]] + "".join(parts[1:])
    return root + "".join(parts)


# -- the student's file, not the grader's copy of it ----------------------------------------------

TEMP_COPY = re.compile(r"(?:/[^\s\"'():,]*)?/jaxlings-[\w.-]*/(?P<name>[\w.-]+\.py)")
"""A path into one of the grader's private folders (`jaxlings-<topic>-…`, a spare worker's
`jaxlings-spare-<topic>-…`), wherever the temp folder is: the file name is what is kept."""


def student_paths(text: str, shown: dict[str, str] | None = None) -> str:
    """`text` with every path into the grader's private copies of a module replaced by the
    path the student graded (`shown`: file name -> how to show it, e.g. {"prng.py":
    "exercises/prng.py"}), or by the bare file name."""
    shown = shown or {}
    return TEMP_COPY.sub(lambda m: shown.get(m["name"], m["name"]), text)


def shown_path(path: Path, cwd: Path | None = None) -> str:
    """How a message names the student's file: relative to `cwd` (the current folder) when it
    is inside it (`exercises/prng.py`), else by its name alone (a submission unpacked by the
    grader lives in a temporary folder the student never saw)."""
    cwd = cwd or Path.cwd()
    try:
        return str(path.resolve().relative_to(cwd.resolve()))
    except ValueError:
        return path.name

"""The similarity report's corpus (tests/similarity/<topic>/<exercise>/v*.py: independently written
variants) and planted copies of its variants, for tests/service/test_service_similarity.py,
tests/core/test_similarity.py and benchmarks/similarity.py.

A planted copy is what a student who copies and disguises does: every local name renamed,
two independent statements swapped where the function has any, and a dead line added; an edited
one also has the operands of a `+` or `*` swapped and one number changed.

The cohort (`cohort`, for benchmarks/similarity.py and the tests of the combined ranking): beside
the independently written variants `v*.py`, three honest answers written the reference's way
(`r*.py`: the same computation in their own words, so that their programs converge as right
answers to a prescribed task do), and copies disguised each way a copier does (`COHORT`: renamed
and reordered, statements and operands shuffled, the body split into helpers, module-level helpers
renamed, API synonyms and loop forms swapped, a decoy, two sources mixed: `mix.py`, written by
hand from the two variants its first line names).
"""

from __future__ import annotations

import ast
import copy
import functools
import random
import re
from dataclasses import dataclass
from pathlib import Path

CORPUS = Path(__file__).resolve().parent.parent / "similarity"
PLANTED_FROM = ("v1", "v3", "v5")
"""The variants each exercise's planted copies are made from."""


@dataclass(frozen=True)
class Case:
    """One exercise of the corpus: login -> the topic file's text, and the planted pairs."""

    topic: str
    exercise: str
    files: dict[str, str]
    planted: frozenset[frozenset[str]]

    def is_planted(self, a: str, b: str) -> bool:
        return frozenset((a, b)) in self.planted


def variants(topic: str, exercise: str) -> dict[str, str]:
    """name -> text of the independently written variants of one exercise."""
    return {p.stem: p.read_text() for p in sorted((CORPUS / topic / exercise).glob("v*.py"))}


def honest(topic: str, exercise: str) -> dict[str, str]:
    """name -> text of every honest answer of one exercise: the variants (`v*`) and the answers
    written the reference's way (`r*`)."""
    return {
        **variants(topic, exercise),
        **{p.stem: p.read_text() for p in sorted((CORPUS / topic / exercise).glob("r*.py"))},
    }


def exercises() -> list[tuple[str, str]]:
    """The (topic, exercise) pairs the corpus has."""
    return sorted((d.parent.name, d.name) for d in CORPUS.glob("*/*") if d.is_dir())


def case(topic: str, exercise: str, seed: int = 0, edit: bool = False) -> Case:
    """The exercise's variants, plus a planted copy (`<name>_copy`) of each of `PLANTED_FROM`
    (`edit`: each also edited, `_edit`)."""
    files = variants(topic, exercise)
    rng = random.Random(f"{topic}.{exercise}.{seed}")
    planted = set()
    for name in PLANTED_FROM:
        files[f"{name}_copy"] = plant(files[name], exercise, rng, edit)
        planted.add(frozenset((name, f"{name}_copy")))
    return Case(topic, exercise, files, frozenset(planted))


def _names(node: ast.AST) -> tuple[set[str], set[str]]:
    """(names read, names written) anywhere in `node`."""
    read = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    written = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    if isinstance(node, ast.FunctionDef):
        written.add(node.name)
    return read, written


def _independent(a: ast.stmt, b: ast.stmt) -> bool:
    """Whether two statements may swap: simple ones, neither touching what the other writes."""
    simple = (ast.Assign, ast.FunctionDef)
    if not (isinstance(a, simple) and isinstance(b, simple)):
        return False
    (ra, wa), (rb, wb) = _names(a), _names(b)
    return not (wa & (rb | wb) or ra & wb)


def _swap_one(fn: ast.FunctionDef, rng: random.Random) -> None:
    """Swap one pair of adjacent independent statements in some block of `fn` (none: no change)."""
    spots = []
    for node in ast.walk(fn):
        if isinstance(node, ast.FunctionDef):
            spots += [(node.body, i) for i in range(len(node.body) - 1) if _independent(*node.body[i : i + 2])]
    if spots:
        body, i = rng.choice(spots)
        body[i], body[i + 1] = body[i + 1], body[i]


def _bound(fn: ast.FunctionDef) -> list[str]:
    """The names `fn` binds (parameters, locals, nested functions), sorted."""
    bound = {n.arg for n in ast.walk(fn) if isinstance(n, ast.arg)}
    bound |= {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    bound |= {n.name for n in ast.walk(fn) if isinstance(n, ast.FunctionDef) and n is not fn}
    return sorted(bound)


def _rename_to(fn: ast.FunctionDef, new: dict[str, str]) -> None:
    """Rename the names `fn` binds as `new` says, in place."""
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and node.id in new:
            node.id = new[node.id]
        elif isinstance(node, ast.arg) and node.arg in new:
            node.arg = new[node.arg]
        elif isinstance(node, ast.FunctionDef) and node is not fn and node.name in new:
            node.name = new[node.name]


def _rename(fn: ast.FunctionDef, rng: random.Random) -> None:
    """Rename every name `fn` binds to a fresh one."""
    words = ["alpha_", "val", "tmp", "res", "buf", "item", "cur", "acc", "arr", "q"]
    _rename_to(fn, {name: f"{rng.choice(words)}{i}" for i, name in enumerate(_bound(fn))})


def _function(tree: ast.Module, name: str) -> ast.FunctionDef:
    return next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)


def rename(text: str, exercise: str, names: list[str]) -> str:
    """`text` with the names its function `exercise` binds renamed to `names`, in order (as many
    as it binds, distinct, clashing with nothing it reads)."""
    tree = ast.parse(text)
    fn = _function(tree, exercise)
    _rename_to(fn, dict(zip(_bound(fn), names)))
    return ast.unparse(tree) + "\n"


def _edit(fn: ast.FunctionDef, rng: random.Random) -> None:
    """Two edits a normaliser must see through or weigh: the operands of one commutative
    operation swapped, and one number changed (by one: a real difference that stays)."""
    ops = [n for n in ast.walk(fn) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Add | ast.Mult)]
    if ops:
        op = rng.choice(ops)
        op.left, op.right = op.right, op.left
    numbers = [
        n for n in ast.walk(fn) if isinstance(n, ast.Constant) and type(n.value) in (int, float) and n.value != 0
    ]
    if numbers:
        rng.choice(numbers).value += 1


def plant(text: str, exercise: str, rng: random.Random, edit: bool = False) -> str:
    """A disguised copy of `text`'s function `exercise`: statements swapped where independent,
    every local name renamed, a dead line added before its last statement, its docstring and
    comments dropped (the file is written back by `ast.unparse`); with `edit`, also `_edit`."""
    tree = ast.parse(text)
    fn = _function(tree, exercise)
    if ast.get_docstring(fn) is not None:
        fn.body = fn.body[1:]
    _swap_one(fn, rng)
    if edit:
        _edit(fn, rng)
    first = fn.args.args[0].arg
    dead = ast.parse(f"unused_scratch = {first} * 2").body[0]
    fn.body.insert(max(len(fn.body) - 1, 0), dead)
    _rename(fn, rng)
    return ast.unparse(tree) + "\n"


def with_function(module: str, function: str, name: str) -> str:
    """`module`'s text with its top-level function `name` replaced by the one in `function` (a
    variant's file): a student's topic file that solved this exercise their way. The variant's
    imports are added at the top."""
    tree, lines = ast.parse(module), module.splitlines()
    old = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
    new_tree, new_lines = ast.parse(function), function.splitlines()
    new = next(n for n in new_tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
    imports = [
        ast.get_source_segment(function, n) or "" for n in new_tree.body if isinstance(n, ast.Import | ast.ImportFrom)
    ]
    body = new_lines[new.lineno - 1 : new.end_lineno]
    start = min([old.lineno] + [d.lineno for d in old.decorator_list])
    return "\n".join([*imports, *lines[: start - 1], *body, *lines[old.end_lineno :]]) + "\n"


def program_of(topic: str, exercise: str, text: str) -> frozenset[int] | None:
    """The program sketch the grader's trusted side records for `text`'s function `exercise`
    (`jaxlings.worker.program.program_shingles`, as in the `jit` test's `program_shingles`):
    `jaxlings.service.reference_programs.sketch_of`, the service's own for the references. In
    this process (trusted code: the benchmark's and the tests' own corpus); None where it does
    not export. Remembered per text."""
    return _programs(topic, exercise, text)


@functools.cache
def _programs(topic: str, exercise: str, text: str) -> frozenset[int] | None:
    from jaxlings.service import reference_programs

    return reference_programs.sketch_of(topic, exercise, text)


# -- disguises that change what is compared, not the code (issue 46) ----------------------------


def split(text: str, exercise: str, rng: random.Random) -> str:
    """A copy of `text` with the function's body moved into a module-level helper of a fresh
    name, the exercise's function a one-line call of it (the other disguises of `plant` too)."""
    tree = ast.parse(plant(text, exercise, rng))
    fn = _function(tree, exercise)
    helper = copy.deepcopy(fn)
    helper.name = f"_{rng.choice(['core', 'impl', 'work', 'inner'])}{rng.randrange(100)}"
    helper.decorator_list = []
    args = ", ".join(a.arg for a in fn.args.args)
    fn.body = ast.parse(f"return {helper.name}({args})").body
    tree.body.insert(tree.body.index(fn), helper)
    return ast.unparse(tree) + "\n"


def decoy(honest: str, copied: str, exercise: str, rng: random.Random) -> str:
    """`honest`'s file, its function `exercise` left as the decoy the reader sees first, then the
    copied function under another name with two no-ops added to what it returns (`+ 0` twice), and
    the exercise's name bound to it: what the grader runs is the copy."""
    tree = ast.parse(honest)
    copy_tree = ast.parse(plant(copied, exercise, rng))
    mine = _function(copy_tree, exercise)
    mine.name = "_mine"
    for node in mine.body:  # its own returns (a nested function's may return a loop's tuple)
        if isinstance(node, ast.Return) and node.value is not None:
            node.value = _padded(node.value)
    imports = [n for n in copy_tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    rest = [n for n in copy_tree.body if n is not mine and n not in imports]  # the copied file's helpers
    tree.body = imports + tree.body + rest + [mine, ast.parse(f"{exercise} = _mine").body[0]]
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


def _padded(value: ast.expr) -> ast.expr:
    """`value` with two additions of zero (`+ 0`, which keeps an integer an integer and a float a
    float): on an array, or on each item of a tuple; none on a call (what it returns may be a
    tuple)."""
    if isinstance(value, ast.Tuple):
        return ast.Tuple([_padded(item) for item in value.elts], ast.Load())
    if isinstance(value, ast.Call):
        return value
    return ast.BinOp(ast.BinOp(value, ast.Add(), ast.Constant(0)), ast.Add(), ast.Constant(0))


class _Rewrite(ast.NodeTransformer):
    """The API synonyms a rewrite swaps in: `a @ b` -> `jax.numpy.matmul(a, b)`, `where(c, x, y)`
    -> `jax.lax.select(c, x, y)`, `x ** 2` -> `x * x`, `jnp.sum(x, ...)` -> `x.sum(...)`; with
    `loops` (the rewrite of a copier whose copy must still run), `where(c, x, y)` -> `select` of
    the three broadcast (`select` takes no scalars) and `lax.fori_loop(lo, hi, body, init)` -> a
    `lax.scan` over `arange(lo, hi)`."""

    def __init__(self, loops: bool = False) -> None:
        self.loops = loops

    def visit_BinOp(self, node: ast.BinOp) -> ast.expr:
        self.generic_visit(node)
        if isinstance(node.op, ast.MatMult):
            return ast.Call(_dotted("jax.numpy.matmul"), [node.left, node.right], [])
        if isinstance(node.op, ast.Pow) and isinstance(node.right, ast.Constant) and node.right.value == 2:
            return ast.BinOp(node.left, ast.Mult(), copy.deepcopy(node.left))
        return node

    def visit_Call(self, node: ast.Call) -> ast.expr:
        self.generic_visit(node)
        if isinstance(node.func, ast.Attribute) and node.func.attr == "where" and len(node.args) == 3:
            if not self.loops:
                return ast.Call(_dotted("jax.lax.select"), node.args, node.keywords)
            # `lax.select` takes no scalars: broadcast first, as a copier whose rewrite must run does
            spread = ast.Starred(ast.Call(_dotted("jax.numpy.broadcast_arrays"), node.args, []), ast.Load())
            return ast.Call(_dotted("jax.lax.select"), [spread], node.keywords)
        if (
            self.loops
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "fori_loop"
            and len(node.args) == 4
        ):
            lo, hi, body, init = node.args
            scan = ast.parse("jax.lax.scan(lambda c_, i_: (BODY(i_, c_), None), INIT, jax.numpy.arange(LO, HI))[0]")
            slots = {"BODY": body, "INIT": init, "LO": lo, "HI": hi}
            return _Fill(slots).visit(scan.body[0]).value
        if isinstance(node.func, ast.Attribute) and node.func.attr == "sum" and len(node.args) == 1:
            if isinstance(node.func.value, ast.Name) and node.func.value.id in ("jnp", "np"):
                return ast.Call(ast.Attribute(node.args[0], "sum", ast.Load()), [], node.keywords)
        return node


class _Fill(ast.NodeTransformer):
    """A template's placeholder names replaced by expressions."""

    def __init__(self, slots: dict[str, ast.expr]) -> None:
        self.slots = slots

    def visit_Name(self, node: ast.Name) -> ast.expr:
        return self.slots.get(node.id, node)


def _dotted(name: str) -> ast.expr:
    """`a.b.c` as an expression."""
    return ast.parse(name, mode="eval").body


def rewrite(text: str, exercise: str, rng: random.Random, loops: bool = False) -> str:
    """A planted copy (`plant`) with its API calls swapped for synonyms (`_Rewrite`; `loops`: its
    `fori_loop`s too), `import jax` added for them."""
    tree = ast.parse(plant(text, exercise, rng))
    fn = _function(tree, exercise)
    tree.body[tree.body.index(fn)] = ast.fix_missing_locations(_Rewrite(loops).visit(fn))
    return "import jax\nimport jax.numpy\n" + ast.unparse(tree) + "\n"


def reorder(text: str, exercise: str, rng: random.Random) -> str:
    """A planted copy with every block's order shuffled as far as its dependencies allow (up to
    eight swaps of independent statements) and the operands of every `+` and `*` swapped."""
    tree = ast.parse(plant(text, exercise, rng))
    fn = _function(tree, exercise)
    for _ in range(8):
        _swap_one(fn, rng)
    for node in ast.walk(fn):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Mult):
            node.left, node.right = node.right, node.left
    return ast.unparse(tree) + "\n"


def with_helper(text: str, exercise: str, helper: str) -> str:
    """`text` with its function's body moved into a module-level helper `helper` (the exercise's
    function a one-line call of it): how an honest student who likes helpers writes it."""
    tree = ast.parse(text)
    fn = _function(tree, exercise)
    moved = copy.deepcopy(fn)
    moved.name = helper
    moved.decorator_list = []
    fn.body = ast.parse(f"return {helper}({', '.join(a.arg for a in fn.args.args)})").body
    tree.body.insert(tree.body.index(fn), moved)
    return ast.unparse(tree) + "\n"


def renamed_helper(text: str, exercise: str, helper: str, rng: random.Random) -> str:
    """A copy of `text` (a file with the module-level helper `helper`) with the helper renamed
    everywhere and its locals and the function's renamed and reordered (`plant`, on each)."""
    tree = ast.parse(text)
    new = f"_{rng.choice(['calc', 'solve', 'do', 'run'])}_{rng.randrange(100)}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == helper:
            node.id = new
        elif isinstance(node, ast.FunctionDef) and node.name == helper:
            node.name = new
    return plant(plant(ast.unparse(tree), new, rng), exercise, rng)


MIXED = re.compile(r"#\s*planted: a mix of (\w+) and (\w+)")


def mixed(topic: str, exercise: str) -> tuple[str, tuple[str, str]]:
    """The exercise's `mix.py` (a copy that mixes two variants, written by hand) and the two it
    mixes (its first line names them)."""
    text = (CORPUS / topic / exercise / "mix.py").read_text()
    found = MIXED.match(text)
    assert found is not None, f"{topic}/{exercise}/mix.py: its first line names the two it mixes"
    return text, (found.group(1), found.group(2))


DISGUISES = ("split", "decoy", "rewrite")

COHORT = ("plant", "edit", "reorder", "split", "helpers", "synonyms", "decoy", "mix")
"""The disguises of the cohort (`cohort`): `plant` (renamed, two statements swapped, a dead line),
`edit` (also an operand order and a number changed), `reorder` (every block shuffled as far as its
dependencies allow, every `+` and `*` turned round), `split` (the body moved into a helper of a
fresh name), `helpers` (the original has a module-level helper, the copy renames it), `synonyms`
(API synonyms and `fori_loop` -> `scan`), `decoy` (another's function shown first, the copy bound
to the name after it, with `+ 0`s), `mix` (two variants mixed by hand, `mix.py`)."""
COHORT_FROM = ("v1", "v3", "v5", "r1")
"""The answers each disguise copies in the cohort: three variants and one written the reference's way."""


def _disguise(kind: str, files: dict[str, str], name: str, exercise: str, rng: random.Random) -> str:
    """A copy of `files[name]` disguised as `kind` says (`helpers` rewrites `files[name]` itself
    into its helper form first; `mix` is not made here)."""
    text = files[name]
    if kind == "split":
        return split(text, exercise, rng)
    if kind in ("rewrite", "synonyms"):
        return rewrite(text, exercise, rng, loops=kind == "synonyms")
    if kind == "reorder":
        return reorder(text, exercise, rng)
    if kind in ("plant", "edit"):
        return plant(text, exercise, rng, edit=kind == "edit")
    if kind == "helpers":
        helper = f"_{name}_{exercise}"
        files[name] = with_helper(text, exercise, helper)
        return renamed_helper(files[name], exercise, helper, rng)
    names = sorted(n for n in files if not n.endswith("_copy"))
    other = names[(names.index(name) + 1) % len(names)]
    return decoy(files[other], text, exercise, rng)


def disguised(topic: str, exercise: str, kind: str, seed: int = 0, reference_style: bool = False) -> Case:
    """The exercise's variants plus a copy of each of `PLANTED_FROM` disguised as `kind` says
    (`split`; `decoy`: the copy's file shows the next variant's function first; `rewrite`; and
    the others of `COHORT`); with `reference_style`, the honest answers written the reference's
    way too, one of them copied (`COHORT_FROM`): the cohort."""
    files = honest(topic, exercise) if reference_style else variants(topic, exercise)
    rng = random.Random(f"{topic}.{exercise}.{kind}.{seed}")
    if kind == "mix":
        text, sources = mixed(topic, exercise)
        files["mix_copy"] = plant(text, exercise, rng)
        return Case(topic, exercise, files, frozenset(frozenset((s, "mix_copy")) for s in sources))
    planted = set()
    for name in COHORT_FROM if reference_style else PLANTED_FROM:
        files[f"{name}_copy"] = _disguise(kind, files, name, exercise, rng)
        planted.add(frozenset((name, f"{name}_copy")))
    return Case(topic, exercise, files, frozenset(planted))


def cohort(topic: str, exercise: str, kind: str, seed: int = 0) -> Case:
    """The benchmark's planted cohort of one exercise for one disguise (`COHORT`): every honest
    answer (`honest`) and the disguised copies (`disguised` with `reference_style`)."""
    return disguised(topic, exercise, kind, seed, reference_style=True)

"""The similarity report's corpus (tests/similarity/<topic>/<exercise>/v*.py: independently written
variants) and planted copies of its variants, for tests/service/test_service_similarity.py,
tests/core/test_similarity.py and benchmarks/similarity.py.

A planted copy is what a student who copies and disguises does: every local name renamed,
two independent statements swapped where the function has any, and a dead line added; an edited
one also has the operands of a `+` or `*` swapped and one number changed.
"""

from __future__ import annotations

import ast
import copy
import functools
import random
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
    the function jitted with the exercise's static arguments, exported with `jax.export` from the
    specs of a sample of its largest size (as the `trace` request does), its module normalised.
    In this process (trusted code: the benchmark's and the tests' own corpus); None where it does
    not export. Remembered per text."""
    return _programs(topic, exercise, text)


@functools.cache
def _programs(topic: str, exercise: str, text: str) -> frozenset[int] | None:
    import jax
    import numpy as np
    from jax import export

    from jaxlings.grading import topics
    from jaxlings.service import similarity
    from jaxlings.worker import program

    ex = topics.load(topic).exercise(exercise)
    args = ex.sample(np.random.default_rng(0), ex.sizes[-1]).args
    specs = tuple(
        a if i in ex.static_argnums or not hasattr(a, "dtype") else jax.ShapeDtypeStruct(np.shape(a), a.dtype)
        for i, a in enumerate(args)
    )
    namespace: dict = {"__name__": f"similarity_corpus_{topic}"}
    exec(compile(text, f"<{topic}.{exercise}>", "exec"), namespace)  # the corpus's own files
    try:
        exported = export.export(jax.jit(namespace[exercise], static_argnums=ex.static_argnums))(*specs)
        module = exported.mlir_module()
    except Exception:  # noqa: BLE001 - a variant that does not export has no program side
        return None
    return similarity.program_sketch(program.inspect_module(module, shingles=True)["program_shingles"])


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
    copied function under another name with two no-ops added (`+ 0.0` on what it returns), and
    the exercise's name bound to it: what the grader runs is the copy."""
    tree = ast.parse(honest)
    copy_tree = ast.parse(plant(copied, exercise, rng))
    mine = _function(copy_tree, exercise)
    mine.name = "_mine"
    for node in ast.walk(mine):
        if isinstance(node, ast.Return) and node.value is not None:
            node.value = ast.BinOp(ast.BinOp(node.value, ast.Add(), ast.Constant(0.0)), ast.Add(), ast.Constant(0.0))
    imports = [n for n in copy_tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    tree.body = imports + tree.body + [mine, ast.parse(f"{exercise} = _mine").body[0]]
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


class _Rewrite(ast.NodeTransformer):
    """The API synonyms a rewrite swaps in: `a @ b` -> `jax.numpy.matmul(a, b)`, `where(c, x, y)`
    -> `jax.lax.select(c, x, y)`, `x ** 2` -> `x * x`, `jnp.sum(x, ...)` -> `x.sum(...)`."""

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
            return ast.Call(_dotted("jax.lax.select"), node.args, node.keywords)
        if isinstance(node.func, ast.Attribute) and node.func.attr == "sum" and len(node.args) == 1:
            if isinstance(node.func.value, ast.Name) and node.func.value.id in ("jnp", "np"):
                return ast.Call(ast.Attribute(node.args[0], "sum", ast.Load()), [], node.keywords)
        return node


def _dotted(name: str) -> ast.expr:
    """`a.b.c` as an expression."""
    return ast.parse(name, mode="eval").body


def rewrite(text: str, exercise: str, rng: random.Random) -> str:
    """A planted copy (`plant`) with its API calls swapped for synonyms (`_Rewrite`), `import jax`
    added for them."""
    tree = ast.parse(plant(text, exercise, rng))
    fn = _function(tree, exercise)
    tree.body[tree.body.index(fn)] = ast.fix_missing_locations(_Rewrite().visit(fn))
    return "import jax\n" + ast.unparse(tree) + "\n"


DISGUISES = ("split", "decoy", "rewrite")


def disguised(topic: str, exercise: str, kind: str, seed: int = 0) -> Case:
    """The exercise's variants plus a copy of each of `PLANTED_FROM` disguised as `kind` says
    (`split`; `decoy`: the copy's file shows the next variant's function first; `rewrite`)."""
    files = variants(topic, exercise)
    names = sorted(files)
    rng = random.Random(f"{topic}.{exercise}.{kind}.{seed}")
    planted = set()
    for name in PLANTED_FROM:
        if kind == "split":
            files[f"{name}_copy"] = split(files[name], exercise, rng)
        elif kind == "rewrite":
            files[f"{name}_copy"] = rewrite(files[name], exercise, rng)
        else:
            other = names[(names.index(name) + 1) % len(names)]
            files[f"{name}_copy"] = decoy(files[other], files[name], exercise, rng)
        planted.add(frozenset((name, f"{name}_copy")))
    return Case(topic, exercise, files, frozenset(planted))

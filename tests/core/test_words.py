"""Messages in the student's terms (issue 29), each fixed wording on its own, fast: structures in
words, numbers to 4 significant digits, keys counted as keys, a single gradient unnamed, a
checkify message quoted, JAX errors as their first line and their docs link whole, a reused key
named with its line, the student's file instead of the grader's copy. Every crafted submission's
messages are judged together in tests/student/test_messages.py (slow)."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlings.grading import words
from jaxlings.grading.checks.key_reuse import reuse_words
from jaxlings.grading.checks.trains import layers_of
from jaxlings.grading.compare import mismatch, shapes
from jaxlings.worker import harness


def out(*arrays, kind="array", treedef=None, paths=None):
    leaves = [
        {"kind": kind, "data": np.asarray(a), **({"impl": "threefry2x32"} if kind == "key" else {})} for a in arrays
    ]
    exported = {"treedef": treedef or f"PyTreeDef(({', '.join('*' for _ in arrays)},))", "leaves": leaves}
    return {**exported, "paths": list(paths)} if paths is not None else exported


# -- words.py ---------------------------------------------------------------------------------


def test_numbers_to_four_significant_digits():
    assert [words.num(x) for x in (0.93957626903449, 3, 1e-05, 123456.7, np.float32(0.1), np.int64(5))] == [
        "0.9396",
        "3",
        "1e-05",
        "1.235e+05",
        "0.1",
        "5",
    ]
    assert words.num(True) == "True" and words.num("a") == "'a'"


def test_counts_with_their_nouns():
    assert (words.count(1, "key"), words.count(3, "key"), words.count(0, "array")) == ("1 key", "3 keys", "0 arrays")
    assert (words.of(1, 1, "key"), words.of(3, 4, "key")) == ("1 of 1 keys", "3 of 4 keys")


@pytest.mark.parametrize(
    "treedef, said",
    [
        ("PyTreeDef(*)", "an array"),
        ("PyTreeDef((*,))", "a tuple of one array"),
        ("PyTreeDef((*, *))", "a pair of arrays"),
        ("PyTreeDef(((*, *), *))", "a tuple of two: (a pair of arrays, an array)"),
        ("PyTreeDef(((*, *), (*, *)))", "a pair of pairs of arrays"),
        ("PyTreeDef((*, *, *))", "a tuple of three arrays"),
        ("PyTreeDef([*, [*]])", "a list of two: (an array, a list of one array)"),
        ("PyTreeDef({'a': *, 'b': (*, *)})", "a dict with keys 'a', 'b'"),
        ("PyTreeDef(None)", "None"),
        ("PyTreeDef(())", "an empty tuple"),
        ("PyTreeDef(CustomNode(namedtuple[Point], [*, *]))", "an instance of `Point`"),
        ("PyTreeDef(CustomNode(Dense[(3, [1])], [*, *]))", "an instance of `Dense`"),
    ],
)
def test_structures_in_words(treedef, said):
    assert words.structure(treedef) == said


def test_the_treedefs_jax_prints_parse():
    for tree in [1, (1, (2, 3)), {"a": [1, None], "b": {}}, jax.random.key(0), ((),)]:
        assert words.parse(str(jax.tree.structure(tree))) is not None, tree


def test_a_treedef_that_does_not_parse_is_never_quoted():
    assert words.structure("PyTreeDef(CustomNode(C[x, [*]))") == "a structure of its own"
    assert words.structure("(" * 5000 + "*" + ")" * 5000) == "a structure of its own"
    said = words.structure_difference("PyTreeDef((*, *))", "PyTreeDef(Garbage<>)")
    assert "PyTreeDef" not in said and "a pair of arrays" in said


def test_where_two_structures_differ_first():
    assert words.structure_difference("PyTreeDef(((*, *), *))", "PyTreeDef((*, *))") == (
        "`output[0]` is an array, expected a pair of arrays"
    )
    assert words.structure_difference("PyTreeDef((*, *))", "PyTreeDef(*)") == (
        "the output is an array, expected a pair of arrays"
    )
    named = words.structure_difference("PyTreeDef(((*, *), *))", "PyTreeDef((*, *))", names=("keys", "x"))
    assert named == "`keys` is an array, expected a pair of arrays"
    keyed = words.structure_difference("PyTreeDef({'a': *, 'b': (*, *)})", "PyTreeDef({'a': *, 'b': (*, *, *)})")
    assert keyed == "`output['b']` is a tuple of three arrays, expected a pair of arrays"
    aux = words.structure_difference("PyTreeDef(CustomNode(D[(3,)], [*]))", "PyTreeDef(CustomNode(D[(4,)], [*]))")
    assert aux.startswith("the output is an instance of `D` whose static fields")


def test_a_list_for_a_tuple_says_its_entries_once():
    tuple_of = "PyTreeDef(({'a': *, 'b': *}, {'a': *, 'b': *}, *))"
    list_of = "PyTreeDef([{'a': *, 'b': *}, {'a': *, 'b': *}, *])"
    assert words.structure_difference(tuple_of, list_of) == (
        "the output is a list of three, expected a tuple of three (of the same entries)"
    )


def test_a_deeply_nested_output_is_described_in_linear_time():
    # once 2**depth: each list of one described twice; 60 deep spun the grader for minutes
    nested: object = np.zeros(3)
    for _ in range(400):
        nested = [nested]
    treedef = str(jax.tree.structure(nested))
    calls = 0
    words_of = words._words_of

    def counted(*args):
        nonlocal calls
        calls += 1
        return words_of(*args)

    words._words_of = counted
    try:
        said = words.structure_difference(str(jax.tree.structure(np.zeros(3))), treedef)
    finally:
        words._words_of = words_of
    assert said.startswith("the output is a list of one list of one list of one") and said.endswith(
        "list of one list of one, nested deeper, expected an array"
    )
    assert calls <= words.DEEPEST + 2
    pairs = str(jax.tree.structure([[[np.zeros(1)] * 2] * 2] * 2))
    assert words.structure(pairs) == "a list of two lists of two lists of two arrays"
    too_deep = "PyTreeDef(" + "[" * 50_000 + "*" + "]" * 50_000 + ")"  # past what the parser reads
    assert words.structure(too_deep) == "a structure of its own"


def test_long_dict_keys_are_cut():
    said = words.structure("PyTreeDef({'" + "k" * 5000 + "': *})")
    assert len(said) < 80


def test_the_graders_copies_become_the_students_file():
    text = "at /tmp/jaxlings-spare-prng-ab_c1xyz/prng.py:72 for jit; /var/tmp/jaxlings-loops-q1w2e3r4/loops.py:3"
    assert words.student_paths(text, {"prng.py": "exercises/prng.py"}) == (
        "at exercises/prng.py:72 for jit; loops.py:3"
    )


# -- compare.py: keys, gradients, structures, text, case labels ------------------------------


def test_one_key_is_counted_as_one_key_not_two_words():
    one = mismatch(
        out(np.uint32([1, 2]), kind="key", treedef="PyTreeDef(*)"),
        out(np.uint32([1, 3]), kind="key", treedef="PyTreeDef(*)"),
        0,
        0,
    )
    assert one.startswith("1 of 1 keys differ"), one
    assert "values" not in one


def test_keys_that_differ_are_shown_as_keys():
    want = np.arange(8, dtype=np.uint32).reshape(4, 2)
    got = want.copy()
    got[3, 0] += 1
    said = mismatch(out(want, kind="key"), out(got, kind="key"), 0, 0)
    assert said.startswith("1 of 4 keys differ (the first is key[3])"), said
    shaped = mismatch(out(want, kind="key"), out(want[:3], kind="key"), 0, 0)
    assert shaped == "a key array of shape (3,), expected shape (4,)"


def test_a_single_gradient_is_not_called_output_0():
    expected = out(np.float32([1, 2]), paths=["[0]"])
    wrong = out(np.float32([1, 5]), paths=["[0]"])
    said = mismatch(expected, wrong, 1e-6, 1e-6, root="gradient")
    assert said.startswith("1 of 2 values are off"), said
    two = mismatch(
        out(np.float32(1), np.float32(2), paths=["[0]", "[1]"]),
        out(np.float32(1), np.float32(3), paths=["[0]", "[1]"]),
        1e-6,
        1e-6,
        root="gradient",
    )
    assert two.startswith("`gradient[1]`: "), two


def test_a_wrong_structure_is_said_in_words():
    said = mismatch(out(*[np.zeros(2)] * 3, treedef="PyTreeDef(((*, *), *))"), out(np.zeros(2), np.zeros(2)), 0, 0)
    assert said == "`output[0]` is an array, expected a pair of arrays" and "PyTreeDef" not in said
    count = mismatch(
        out(*[np.zeros(1)] * 4, treedef="PyTreeDef((*, *, *, *))"), out(treedef="PyTreeDef((*, *, *, *))"), 0, 0
    )
    assert count == "the output has 0 arrays where its structure, a tuple of four arrays, holds 4"


def test_a_checkify_message_is_quoted_as_text():
    def text(s: str) -> np.ndarray:
        return np.frombuffer(s.encode(), dtype=np.uint8)

    tree = "PyTreeDef((*, *))"
    names = ("message", "h")
    got = out(text("negative entry at index 1"), np.float32(0), treedef=tree, paths=["[0]", "[1]"])
    said = mismatch(out(text(""), np.float32(0), treedef=tree, paths=["[0]", "[1]"]), got, 0, 0, names)
    assert said == "`message`: your function reports 'negative entry at index 1', but no check should fail on this case"
    silent = out(text(""), np.float32(0), treedef=tree, paths=["[0]", "[1]"])
    said = mismatch(out(text("sum is off"), np.float32(0), treedef=tree, paths=["[0]", "[1]"]), silent, 0, 0, names)
    assert said.startswith("`message`: no message") and "shape" not in said and "sum is off" not in said


def test_case_labels_give_numbers_to_four_digits():
    assert shapes((np.zeros((1, 3), np.float32), 1, 0.93957626903449)) == "(float32[1, 3], 1, 0.9396)"


def test_trained_parameters_of_the_wrong_structure_in_words():
    _, problem = layers_of({"treedef": "PyTreeDef({'a': {'bias': *, 'kernel': *}})", "leaves": []}, ("a", "b"), 2, 1)
    assert "PyTreeDef" not in problem and "expected a dict with keys 'a', 'b'" in problem


# -- the worker's errors ------------------------------------------------------------------------


def raised(fn, *args, module: str) -> dict[str, str]:
    try:
        fn(*args)
    except Exception as exc:  # noqa: BLE001
        return harness.describe(exc, module)
    raise AssertionError("did not raise")


def student_module(tmp_path, source: str, name: str = "at_updates"):
    """A module written into a folder named as the grader's private copies are, and imported."""
    import importlib.util

    path = tmp_path / f"jaxlings-{name}-abcdefgh" / f"{name}.py"
    path.parent.mkdir()
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"{name}_{tmp_path.name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, str(path)


def test_a_jax_error_is_its_first_line_and_its_docs_link_whole(tmp_path):
    module, path = student_module(tmp_path, "import numpy as np\n\ndef histogram(x):\n    return np.asarray(x)\n")
    error = raised(jax.jit(module.histogram), jnp.zeros(4), module=path)
    assert error["message"] == (
        "The numpy.ndarray conversion method __array__() was called on traced array with shape float32[4]. "
        "See https://docs.jax.dev/en/latest/errors.html#jax.errors.TracerArrayConversionError"
    )
    assert error["where"] == "line 4: return np.asarray(x)"


WALK = """import jax

def walk(key, x0):
    def step(x, k):
        return x + jax.random.normal(key, x.shape), x
    return jax.lax.scan(step, x0, jax.random.split(key, 3))[1]

def twice(key):
    a = jax.random.normal(key, (2,))
    b = jax.random.uniform(key, (2,))
    return a + b
"""


def test_a_reused_key_is_named_with_its_line_and_no_jaxpr(tmp_path):
    module, path = student_module(tmp_path, WALK, "prng")
    with jax.debug_key_reuse(True):
        error = raised(jax.jit(module.walk), jax.random.key(0), jnp.zeros(2), module=path)
    assert "{ lambda" not in error["message"] and "signature=" not in error["message"], error
    assert error["message"].endswith("See https://docs.jax.dev/en/latest/errors.html#jax.errors.KeyReuseError")
    assert error["where"] == "line 6: return jax.lax.scan(step, x0, jax.random.split(key, 3))[1]"
    said = reuse_words(f"KeyReuseError: {error['message']} (at {error['where']})", "under jax.jit, case 1")
    assert said.startswith("the step function of the `lax.scan` at line 6 (`return jax.lax.scan("), said
    assert "uses a key from outside the loop" in said and "(under jax.jit, case 1)" in said


def test_a_key_used_twice_names_the_key_and_both_lines(tmp_path):
    module, path = student_module(tmp_path, WALK, "prng")
    with jax.debug_key_reuse(True):
        error = raised(module.twice, jax.random.key(0), module=path)
    said = reuse_words(f"KeyReuseError: {error['message']} (at {error['where']})", "called directly")
    assert said.startswith(
        "`key` is used again at line 10 (`b = jax.random.uniform(key, (2,))`), after its first use "
        "at line 9 (`a = jax.random.normal(key, (2,))`) (called directly). See https://"
    ), said
    with jax.debug_key_reuse(True):
        error = raised(jax.jit(module.twice), jax.random.key(0), module=path)
    said = reuse_words(f"KeyReuseError: {error['message']} (at {error['where']})", "under jax.jit")
    assert said.startswith("`key` is used again at line 10 (`b = jax.random.uniform(key, (2,))`) (under jax.jit)"), said


def test_a_long_message_is_cut_at_a_line_never_inside_a_link():
    message = "x" * 790 + " https://example.org/a/very/long/page.html and more"
    error = harness.describe(ValueError(message), "/nowhere/m.py")
    assert "https://" not in error["message"] and error["message"].endswith(" ...")
    many = "\n".join(f"line {i}" for i in range(20))
    assert harness.describe(ValueError(many), "/nowhere/m.py")["message"] == "\n".join(f"line {i}" for i in range(6))


def test_warnings_name_the_students_file_not_the_graders_copy(tmp_path):
    module = tmp_path / "jaxlings-spare-prng-abcdefgh" / "prng.py"
    module.parent.mkdir()
    module.write_text("import warnings\nwarnings.warn('careful', RuntimeWarning)\n")
    original = warnings.formatwarning
    try:
        harness._own_warnings(str(module))
        text = warnings.formatwarning("careful", RuntimeWarning, str(module), 2)
    finally:
        warnings.formatwarning = original
    assert text.startswith("prng.py:2: RuntimeWarning: careful") and "warnings.warn" in text
    assert str(tmp_path) not in text


def test_a_single_value_has_no_index():
    said = mismatch(out(np.int32(3), treedef="PyTreeDef(*)"), out(np.int32(4), treedef="PyTreeDef(*)"), 0, 0)
    assert said == "your value, 4, is 1 above the reference's; exact equality is required"
    below = mismatch(out(np.int32(3), treedef="PyTreeDef(*)"), out(np.int32(-1), treedef="PyTreeDef(*)"), 9, 9)
    assert below == "your value, -1, is 4 below the reference's; exact equality is required"  # no tolerance
    flag = mismatch(out(np.bool_(True), treedef="PyTreeDef(*)"), out(np.bool_(False), treedef="PyTreeDef(*)"), 0, 0)
    assert flag == "your function returned False where the reference returns True"
    off = mismatch(out(np.float32(1), treedef="PyTreeDef(*)"), out(np.float32(2), treedef="PyTreeDef(*)"), 0, 0)
    assert off == "the value is off by 1 (tolerance 0 + 0·|expected|)"
    nan = mismatch(out(np.float32(1), treedef="PyTreeDef(*)"), out(np.float32("nan"), treedef="PyTreeDef(*)"), 0, 0)
    assert nan == "your output has NaN where the reference does not"


def test_a_jax_error_repeated_per_argument_says_its_first_sentence_once_and_tracers_in_words():
    from jaxlings.worker import harness

    said = "The error occurred while tracing the function f at m.py:9 for jit"
    error = TypeError(
        "Shapes must be 1D sequences of concrete values of integer type, got (JitTracer(~int32[]), "
        f"JitTracer(~int32[])).\n{said}. It depends on shape[0].\n{said}. It depends on shape[1]."
    )
    text = harness.brief(error, "m.py")
    assert text.count(said) == 1 and "shape[0]" in text and "shape[1]" in text
    assert "JitTracer" not in text and "got (a traced int32[], a traced int32[])" in text


def test_failing_training_runs_name_their_inputs_and_advice_once():
    from jaxlings.grading.checks.trains import _joined

    inputs = "x float32[256, 8], y float32[256, 1], 200, 32"
    text = _joined(
        [
            ("run 1 of 2", inputs, "the loss is 830.8", "the loss grew: do the updates go downhill?"),
            ("run 2 of 2", inputs, "the loss is 871.7", "the loss grew: do the updates go downhill?"),
        ]
    )
    assert text.count(inputs) == 1 and text.count("downhill") == 1
    assert text.endswith("run 2 of 2: the loss is 871.7")

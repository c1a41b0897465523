"""Output comparison: exact for integers and keys, toleranced for floats, and messages that
say what is wrong without revealing the expected values."""

import numpy as np

from jaxlings.grading.compare import mismatch


def out(*arrays, kind="array", treedef=None):
    leaves = [{"kind": kind, "data": np.asarray(a), **({"impl": "fry"} if kind == "key" else {})} for a in arrays]
    return {"treedef": treedef or f"PyTreeDef(({', '.join('*' for _ in arrays)},))", "leaves": leaves}


def test_match_within_tolerance():
    assert mismatch(out(np.float32([1, 2])), out(np.float32([1, 2 + 1e-7])), 1e-6, 1e-6) is None


def test_float_error_names_size_and_place_not_expected_value():
    expected = np.float32([1.5, 2.25, 3.125])
    msg = mismatch(out(expected), out(np.float32([1.5, 9.0, 3.125])), 1e-6, 1e-6)
    assert "1 of 3" in msg and "(1,)" in msg
    assert "2.25" not in msg


def test_shape_dtype_structure_and_kind():
    assert "shape" in mismatch(out(np.zeros(3)), out(np.zeros(4)), 0, 0)
    assert "dtype" in mismatch(out(np.zeros(3, np.float32)), out(np.zeros(3, np.float64)), 0, 0)
    assert mismatch(out(np.zeros(3)), out(np.zeros(3), np.zeros(3)), 0, 0) == (
        "the output is a pair of arrays, expected a tuple of one array"
    )
    assert "key" in mismatch(out(np.zeros((2, 2), np.uint32), kind="key"), out(np.zeros((2, 2), np.uint32)), 0, 0)


def test_integers_and_keys_must_be_exact():
    assert "exact" in mismatch(out(np.int32([1, 2])), out(np.int32([1, 3])), 1.0, 1.0)
    assert mismatch(out(np.uint32([[1, 2]]), kind="key"), out(np.uint32([[1, 2]]), kind="key"), 0, 0) is None


def test_an_infinite_expected_value_is_matched_exactly():
    expected = np.float32([1.0, np.inf, -np.inf])
    assert mismatch(out(expected), out(expected.copy()), 1e-3, 1e-3) is None
    for wrong in ([1.0, 3.0e38, -np.inf], [1.0, -np.inf, -np.inf], [1.0, np.inf, -1.0]):
        msg = mismatch(out(expected), out(np.float32(wrong)), 1e-3, 1e-3)
        assert msg is not None and "1 of 3 values are off" in msg, wrong


def test_complex_outputs_are_compared_in_both_parts():
    expected = np.complex64([1 + 2j, 3 - 1j])
    assert mismatch(out(expected), out(expected + np.complex64(1e-7)), 1e-6, 1e-6) is None
    msg = mismatch(out(expected), out(np.complex64([1 + 2j, 3 + 1j])), 1e-6, 1e-6)  # the imaginary part only
    assert msg is not None and "1 of 2 values are off" in msg and "index (1,)" in msg
    assert "NaN" in mismatch(out(expected), out(np.complex64([1 + 2j, complex(3, np.nan)])), 1e-3, 1e-3)


def test_nan_where_the_reference_has_none():
    assert "NaN" in mismatch(out(np.float32([1, 2])), out(np.float32([1, np.nan])), 1e-3, 1e-3)
    assert mismatch(out(np.float32([np.nan, np.inf])), out(np.float32([np.nan, np.inf])), 0, 0) is None


def named(*arrays, paths, treedef):
    return {**out(*arrays, treedef=treedef), "paths": list(paths)}


def test_a_wrong_entry_of_a_returned_tuple_is_named_as_the_docstring_names_it():
    tree = "PyTreeDef((*, *))"
    expected = named(np.float32([1, 2]), np.float32([3, 4]), paths=["[0]", "[1]"], treedef=tree)
    got = named(np.float32([1, 2]), np.float32([3, 5]), paths=["[0]", "[1]"], treedef=tree)
    msg = mismatch(expected, got, 1e-6, 1e-6, names=("init_key", "step_keys"))
    assert msg.startswith("`step_keys`: 1 of 2 values are off"), msg
    assert mismatch(expected, got, 1e-6, 1e-6).startswith("`output[1]`: ")  # no names: its place in the tuple
    assert "leaf" not in msg


def test_dict_keys_and_fields_name_themselves_and_a_bare_array_needs_no_name():
    tree = "PyTreeDef(({'a': *, 'b': *}, *))"
    expected = named(
        np.float32([1]), np.float32([2]), np.float32(3), paths=["[0]['a']", "[0]['b']", "[1]"], treedef=tree
    )
    got = named(np.float32([1]), np.float32([9]), np.float32(3), paths=["[0]['a']", "[0]['b']", "[1]"], treedef=tree)
    assert mismatch(expected, got, 1e-6, 1e-6, names=("total", "dot")).startswith("`total['b']`: ")
    fields = named(
        np.float32([1]), np.float32([2]), paths=[".w", ".b"], treedef="PyTreeDef(CustomNode(Dense[()], [*, *]))"
    )
    wrong = named(
        np.float32([1]), np.float32([3]), paths=[".w", ".b"], treedef="PyTreeDef(CustomNode(Dense[()], [*, *]))"
    )
    assert mismatch(fields, wrong, 0, 0, names=("ignored",)).startswith("`output.b`: ")
    bare = mismatch(
        named(np.float32([1, 2]), paths=[""], treedef="PyTreeDef(*)"),
        named(np.float32([1, 7]), paths=[""], treedef="PyTreeDef(*)"),
        1e-6,
        1e-6,
    )
    assert bare.startswith("1 of 2 values are off") and "`" not in bare.split(";")[0]


def test_the_worker_sends_each_leafs_key_path():
    import jax.numpy as jnp

    from jaxlings.worker.harness import Harness

    exported = Harness("unused.py", "unused").export((jnp.zeros(2), {"w": jnp.ones(1), "b": [jnp.ones(1)]}))
    assert exported["paths"] == ["[0]", "[1]['b'][0]", "[1]['w']"]
    from jaxlings.grading import replies

    replies.output(exported)  # the schema takes it
    bad = {**exported, "paths": ["[0]"]}
    with __import__("pytest").raises(replies.MalformedReply):
        replies.output(bad)


def test_a_failing_submission_is_told_which_output_is_wrong(tmp_path_factory):
    """at_updates.scatter_ops returns `(set, add, min, max)`; the fault returns `set` four times."""
    from helpers.grading import grade_variant, verdicts

    result = grade_variant(tmp_path_factory, "at_updates", "one_fault_each", ["at_updates.scatter_ops"])
    score, _, message = verdicts(result)["at_updates.scatter_ops:correct"]
    # the first output that differs on the first failing case: `add` where an index repeats, else `min` or `max`
    named = [o for o in ("add", "min", "max") if f": `{o}`: " in message]
    assert score == 0 and len(named) == 1 and "leaf" not in message, message

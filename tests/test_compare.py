"""Output comparison: exact for integers and keys, toleranced for floats, and messages that
say what is wrong without revealing the expected values."""

import numpy as np

from autograder.compare import mismatch


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
    assert "structure" in mismatch(out(np.zeros(3)), out(np.zeros(3), np.zeros(3)), 0, 0)
    assert "key" in mismatch(out(np.zeros((2, 2), np.uint32), kind="key"), out(np.zeros((2, 2), np.uint32)), 0, 0)


def test_integers_and_keys_must_be_exact():
    assert "exact" in mismatch(out(np.int32([1, 2])), out(np.int32([1, 3])), 1.0, 1.0)
    assert mismatch(out(np.uint32([[1, 2]]), kind="key"), out(np.uint32([[1, 2]]), kind="key"), 0, 0) is None


def test_nan_where_the_reference_has_none():
    assert "NaN" in mismatch(out(np.float32([1, 2])), out(np.float32([1, np.nan])), 1e-3, 1e-3)
    assert mismatch(out(np.float32([np.nan, np.inf])), out(np.float32([np.nan, np.inf])), 0, 0) is None

"""The grader<->worker message format carries data only."""

import json
import struct

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from jaxlings.grading.spec import Key
from jaxlings.worker import wire

arrays = hnp.arrays(
    dtype=st.sampled_from([np.float32, np.float64, np.int32, np.uint32, np.bool_, np.int8]),
    shape=hnp.array_shapes(min_dims=0, max_dims=3, max_side=5),
)
leaves = st.one_of(
    arrays,
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=False),
    st.text(max_size=5),
    st.none(),
    st.booleans(),
    st.builds(Key, st.integers(0, 2**31)),
)
trees = st.recursive(
    leaves,
    lambda kids: st.one_of(
        st.lists(kids, max_size=3), st.tuples(kids, kids), st.dictionaries(st.text(max_size=4), kids, max_size=3)
    ),
    max_leaves=8,
)


def _same(a, b):
    if isinstance(a, np.ndarray):
        return (
            isinstance(b, np.ndarray)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and np.array_equal(a, b, equal_nan=True)
        )
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b


@given(trees)
def test_roundtrip(tree):
    assert _same(wire.decode(wire.encode(tree)), tree)


@given(trees, st.booleans())
def test_a_frame_is_written_as_encode_makes_it_and_read_back(tree, transposed):
    """`write_frame` streams each array from its own buffer (no whole copy of the frame): its
    bytes are `encode`'s, prefixed by their length, and `read_frame` gives the tree back."""
    import os

    if transposed and isinstance(tree, np.ndarray):  # a view that is not C-contiguous
        tree = tree.T
    r, w = os.pipe()
    try:
        wire.write_frame(w, tree)  # small trees: within the pipe's buffer
        os.close(w)
        w = -1
        data = b""
        while chunk := os.read(r, 1 << 16):
            data += chunk
    finally:
        os.close(r)
        if w >= 0:
            os.close(w)
    payload = wire.encode(tree)
    assert data == struct.pack("<Q", len(payload)) + payload
    assert _same(wire.decode(data[8:]), tree)


def test_bfloat16_roundtrips():
    import ml_dtypes

    a = np.arange(4, dtype=ml_dtypes.bfloat16)
    assert wire.decode(wire.encode(a)).dtype == a.dtype


def _frame(header: dict, body: bytes = b"") -> bytes:
    h = json.dumps(header).encode()
    return struct.pack("<I", len(h)) + h + body


@pytest.mark.parametrize(
    "header",
    [
        {"tree": {"$a": 0}, "arrays": [["object", [1]]]},
        {"tree": {"$a": 0}, "arrays": [["<U3", [1]]]},
        {"tree": {"$nope": 1}, "arrays": []},
        {"tree": {"$a": 0}, "arrays": [["float32", [1000]]]},
    ],
)
def test_rejects_objects_and_malformed_frames(header):
    with pytest.raises(wire.WireError):
        wire.decode(_frame(header, b"\0" * 8))


def test_cannot_send_arbitrary_objects():
    with pytest.raises(TypeError):
        wire.encode(object())

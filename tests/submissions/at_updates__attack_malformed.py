"""Attack (malformed replies): every reply after the import is replaced by a malformed frame.

At import the module replaces the worker's `write_frame` (its wire module, found in
sys.modules) with one that, for every reply but the import's (or, with ONLY, every reply that
carries one of the keys ONLY, e.g. the timed outputs' "outs" or the jit check's "facts" /
"programs"), writes a frame chosen by VARIANT (the test picks both). Every frame is well
delimited (8-byte length prefix), so the grader reads it whole; what is wrong is inside:
  no_out        `{"ok": true}` and nothing else (no `out`, `outs`, `facts`)
  bad_index     `out` is an array reference past the (empty) array table
  bad_dict      `$d` nodes that are not lists of pairs
  unknown_node  a node of a kind the format does not have
  wrong_types   `out` with a numeric treedef and a string of leaves; `outs`, `facts` of wrong types
  bad_leaf      leaves without data, or of an unknown kind
  bad_error     `{"ok": false, "error": 5}`
  not_a_dict    the reply is a list
  bad_json      the header is not JSON
  bad_array     the array table claims a terabyte, or an object dtype
The result must still list every test, each attacked check failed with a message.
The functions themselves are right (they never get to say so).
"""

import json
import os
import struct
import sys

import jax.numpy as jnp

VARIANT = "no_out"
ONLY = None  # or reply keys, e.g. ("outs",): only the replies carrying one of them are malformed


def mask_fill(x, threshold, fill):
    return jnp.where(x > threshold, jnp.asarray(fill, x.dtype), x)


def histogram(x, nbins):
    return jnp.zeros(nbins, jnp.int32).at[x].add(1)


def _d(**items):
    return {"$d": [[k, v] for k, v in items.items()]}


BAD_LEAVES = [_d(kind="array"), _d(kind="banana", data=[1, 2]), _d(kind="key", impl=3, data="x")]
TREES = {
    "no_out": _d(ok=True),
    "bad_index": _d(ok=True, out={"$a": 3}, outs=[{"$a": 4}], facts={"$a": 5}, counts=[{"$a": 6}]),
    "bad_dict": _d(ok=True, out={"$d": 5}, outs={"$d": [1, 2, 3]}, facts={"$d": [[1]]}, counts={"$d": "ab"}),
    "unknown_node": _d(ok=True, out={"$zz": 1}, outs=[{"$zz": 2}], facts={"$zz": 3}),
    "wrong_types": _d(ok=True, out=_d(treedef=7, leaves="nope"), outs=3, facts="x", counts="y", printed=5),
    "bad_leaf": _d(ok=True, out=_d(treedef="PyTreeDef(*)", leaves=BAD_LEAVES),
                   outs=[_d(treedef="PyTreeDef(*)", leaves=BAD_LEAVES)],
                   facts=_d(primitives="x", n_eqns=None, custom_calls=7), counts=[[None, "a"]]),
    "bad_error": _d(ok=False, error=5),
    "not_a_dict": [1, 2, 3],
}


def _payload():
    if VARIANT == "bad_json":
        header = b"{not json"
        return struct.pack("<I", len(header)) + header
    if VARIANT == "bad_array":
        header = json.dumps({"tree": _d(ok=True, out={"$a": 0}, outs=[{"$a": 1}]),
                             "arrays": [["float32", [1 << 40]], ["O", [1]]]}).encode()
        return struct.pack("<I", len(header)) + header
    header = json.dumps({"tree": TREES[VARIANT], "arrays": []}).encode()
    return struct.pack("<I", len(header)) + header


def _install():
    for module in list(sys.modules.values()):
        real = getattr(module, "write_frame", None)
        if not (callable(real) and callable(getattr(module, "read_frame", None))):
            continue

        def write_frame(fd, tree, *args, _real=real, **kwargs):
            if isinstance(tree, dict) and ("functions" in tree or "platform" in tree):
                return _real(fd, tree, *args, **kwargs)  # the hello and the import's reply go out as they are
            if ONLY is not None and not (isinstance(tree, dict) and any(key in tree for key in ONLY)):
                return _real(fd, tree, *args, **kwargs)
            payload = _payload()
            data = struct.pack("<Q", len(payload)) + payload
            while data:
                data = data[os.write(fd, data):]

        module.write_frame = write_frame


_install()

"""The worker's requests as typed messages (`jaxlings.worker.messages`): every op has its handler
and its shape, the transforms a request applies are built by name, and a request the worker
does not know gets an error reply, not a dead worker."""

from __future__ import annotations

from typing import get_args, get_type_hints

import numpy as np

from jaxlings.isolation import WorkerProcess
from jaxlings.worker import messages
from jaxlings.worker.harness import OPS, Harness

MODULE = "import jax.numpy as jnp\n\ndef cube(x):\n    return jnp.sum(x ** 3)\n\ndef scale(x, a):\n    return x * a\n"


def test_every_op_has_a_handler_that_takes_its_typed_request():
    handlers = {name.removeprefix("op_") for name in vars(Harness) if name.startswith("op_")}
    assert handlers == set(OPS) == set(get_args(messages.Op)) - {"load", "bye"}
    for op in OPS:
        request = get_type_hints(getattr(Harness, f"op_{op}"), vars(messages))["req"]
        assert "op" in get_type_hints(request), (op, request)


def test_transforms_are_built_by_name_and_applied_by_the_worker(tmp_path):
    module = tmp_path / "fns.py"
    module.write_text(MODULE)
    x = np.array([1.0, 2.0, 3.0], np.float32)
    with WorkerProcess(module, "fns") as worker:
        grad = worker.request("call", 60, fn="cube", args=(x,), transforms=[messages.grad([0])])
        batched = worker.request(
            "call",
            60,
            fn="scale",
            args=(np.ones((2, 3), np.float32), np.array([2.0, 3.0], np.float32)),
            transforms=[messages.vmap([0, 0])],
        )
        unknown = worker.request("explode", 60)
        still = worker.request("call", 60, fn="scale", args=(x, 2.0))
    np.testing.assert_allclose(grad["out"]["leaves"][0]["data"], 3 * x**2)
    np.testing.assert_allclose(batched["out"]["leaves"][0]["data"], [[2.0] * 3, [3.0] * 3])
    assert not unknown["ok"] and "no such request: 'explode'" in unknown["error"]["message"], unknown
    assert still["ok"], still

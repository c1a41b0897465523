"""The known attacks on peer graders (DESIGN.md, "The grading boundary"), each shown to fail."""

import json
from textwrap import dedent

import numpy as np
import pytest

from helpers.grading import SOLUTIONS, check_dir, failing, grade_dir, needs_bwrap, verdicts, write_submission
from jaxlings.cli import app

BOOLEAN_MASK = """
    def mask_fill(x, threshold, fill):
        return x.at[x > threshold].set(fill)  # fails under a real jit
"""


def test_overwriting_the_result_file_changes_nothing(tmp_path):
    from typer.testing import CliRunner

    out = tmp_path / "results.json"
    fake = {"score": 999, "max_score": 3, "tests": []}
    folder = write_submission(
        tmp_path / "sub",
        {
            "at_updates": dedent(f"""
        import json
        json.dump({fake!r}, open({str(out)!r}, "w"))
    """)
            + dedent(BOOLEAN_MASK)
        },
    )
    result = CliRunner().invoke(
        app, ["grade", str(folder), "--topics", "at_updates.mask_fill", "--json", str(out), "--sandbox", "off"]
    )
    assert result.exit_code == 0, result.output
    written = json.loads(out.read_text())
    assert written["score"] == 1 and written["max_score"] == 3


def test_printing_a_fake_result_changes_nothing(tmp_path):
    folder = write_submission(
        tmp_path,
        {
            "at_updates": dedent("""
        import json, os, struct
        print(json.dumps({"ok": True, "out": {"score": 3}}))
        print("at_updates.mask_fill:jit passed")
    """)
            + dedent(BOOLEAN_MASK)
        },
    )
    result = grade_dir(folder, ["at_updates.mask_fill"])
    assert failing(result) == {"at_updates.mask_fill:jit"}


@pytest.mark.slow
def test_monkeypatching_jit_the_clock_and_the_checker_gains_nothing(tmp_path):
    folder = write_submission(
        tmp_path,
        {
            "at_updates": """
        import time, jax, jax.numpy as jnp
        import jaxlings.grading.compare, jaxlings.grading.requirements, jaxlings.worker
        jax.jit = lambda f, **kw: f                      # "everything jits"
        time.perf_counter = lambda: 0.0                  # "everything is instant"
        time.monotonic = lambda: 0.0
        jaxlings.grading.compare.mismatch = lambda *a, **k: None
        jaxlings.grading.requirements.judge_all = lambda *a, **k: []

        def mask_fill(x, threshold, fill):
            return x.at[x > threshold].set(fill)

        def histogram(x, nbins):
            h = jnp.zeros(nbins, jnp.int32)
            for i in range(x.shape[0]):
                h = h.at[x[i]].add(1)
            return h
    """
        },
    )
    result = grade_dir(folder, ["at_updates.mask_fill", "at_updates.histogram"])
    assert failing(result) == {"at_updates.mask_fill:jit", "at_updates.histogram:speed"}


def test_objects_with_a_lying_eq_are_not_outputs(tmp_path):
    folder = write_submission(
        tmp_path,
        {
            "at_updates": """
        class Anything:
            def __eq__(self, other): return True
            def __ne__(self, other): return False
            shape = property(lambda self: (3,))

        def mask_fill(x, threshold, fill):
            return Anything()
    """
        },
    )
    result = grade_dir(folder, ["at_updates.mask_fill"])
    assert result.score == 0
    assert "not a numeric array" in verdicts(result)["at_updates.mask_fill:correct"][2]


@pytest.mark.slow
@needs_bwrap
def test_the_sandbox_hides_solutions_and_the_network(tmp_path):
    secret = SOLUTIONS / "at_updates.py"
    folder = write_submission(
        tmp_path,
        {
            "at_updates": f"""
        import importlib.util, socket, jax.numpy as jnp
        try:
            spec = importlib.util.spec_from_file_location("stolen", {str(secret)!r})
            stolen = importlib.util.module_from_spec(spec); spec.loader.exec_module(stolen)
        except OSError:
            stolen = None
        try:
            socket.create_connection(("127.0.0.1", 22), timeout=1); network = True
        except OSError:
            network = False

        def mask_fill(x, threshold, fill):
            if stolen is None and not network:
                return jnp.zeros_like(x)              # the sandbox held: no marks
            return stolen.mask_fill(x, threshold, fill)
    """
        },
    )
    sandboxed = grade_dir(folder, ["at_updates.mask_fill"], isolate=True)
    assert verdicts(sandboxed)["at_updates.mask_fill:correct"][0] == 0
    # Without the sandbox the same file can read the solution: the sandbox is what stops it.
    assert verdicts(grade_dir(folder, ["at_updates.mask_fill"]))["at_updates.mask_fill:correct"][0] == 1


def test_hard_coding_the_public_cases_fails_the_hidden_ones(tmp_path):
    """A submission that memorised every public case (read from the public expectations that
    ship to students) and detects the grader passes `grade check` but not `grade grade`:
    hidden cases are drawn fresh for every run."""
    from jaxlings import public as public_data
    from jaxlings.grading import draws

    rng = draws.generator(draws.PUBLIC_SEED, "at_updates", "mask_fill", "cases", 0)
    table = {}
    for case in public_data.replay("at_updates").draw("cases", rng, None):
        x, threshold, fill = case.args
        table[x.tobytes().hex()] = np.where(x > threshold, np.float32(fill), x).tolist()
    folder = write_submission(
        tmp_path,
        {
            "at_updates": f"""
        import sys, numpy as np, jax.numpy as jnp
        TABLE = {table!r}
        GRADED = "jaxlings.worker" in sys.modules or any("jaxlings" in m for m in sys.modules)

        def mask_fill(x, threshold, fill):
            key = np.asarray(x).tobytes().hex()
            if GRADED and key in TABLE:
                return jnp.asarray(TABLE[key], jnp.float32)
            return jnp.zeros_like(x)
    """
        },
    )
    public = grade_dir(folder, ["at_updates.mask_fill"], public=True)
    checked = check_dir(folder, ["at_updates.mask_fill"])
    hidden = grade_dir(folder, ["at_updates.mask_fill"])
    assert verdicts(public)["at_updates.mask_fill:correct"][0] == 1
    assert verdicts(checked)["at_updates.mask_fill:correct"][0] == 1
    assert verdicts(hidden)["at_updates.mask_fill:correct"][0] == 0


STATS_LIES = {
    "stalls": "time.sleep(60)",
    "lies": "{'compilations': -5, 'compile_seconds': 'none at all'}",
}


@pytest.mark.slow
def test_a_worker_that_stalls_or_lies_about_its_compilations_changes_no_verdict(tmp_path):
    """What a worker compiled (`TopicSession.compile_stats`) is the benchmark's figure, asked
    for after the checks: a module that rewrites the harness's answer gets the verdicts it would
    anyway, and its figure is left out (a stall is cut off after `STATS_TIMEOUT`)."""
    honest = grade_dir(SOLUTIONS, ["at_updates.mask_fill"])
    stats = honest.extra_data["topics"]["at_updates"]["timings"]["compile"]
    assert stats["student"]["compilations"] > 0 and stats["reference"]["compilations"] > 0
    for name, answer in STATS_LIES.items():
        folder = write_submission(
            tmp_path / name,
            {
                "at_updates": (SOLUTIONS / "at_updates.py").read_text()
                + dedent(f"""
            import sys, time
            sys.modules["jaxlings.worker.harness"].Harness.op_stats = lambda self, req: {answer}
        """)
            },
        )
        result = grade_dir(folder, ["at_updates.mask_fill"])
        assert verdicts(result) == verdicts(honest), name
        assert set(result.extra_data["topics"]["at_updates"]["timings"]["compile"]) == {"reference"}, name


WRONG_ONE_LINERS = {
    "jit_basics": """
        import jax.numpy as jnp
        from jax import lax

        def clip_by_norm(g, max_norm):
            return g * 0.5

        def logged_softmax(x):
            return lax.fori_loop(0, 3, lambda i, c: c[..., ::-1], x)  # only reverses its carry

        def ema_update(count, avg, x, decay):
            return count, avg, x

        def regularized_loss(W, X, Y, l2):
            return jnp.sum(W) * 0.0

        def bce_with_logits(z, y):
            return jnp.mean(jnp.maximum(z, 0.0) - z * y + jnp.log1p(jnp.exp(-jnp.abs(z))))

        def bce_fast(z, y):
            return jnp.mean(z) * 0.0

        def affine(x, W, b):
            return x @ W
    """,
    "at_updates": """
        import jax.numpy as jnp

        def scatter_ops(x, idx, vals):
            zeros = x.at[idx].add(0.0)  # a scatter-add of zeros
            return zeros, zeros, zeros, zeros

        def histogram(x, nbins):
            return jnp.zeros((nbins,), jnp.int32).at[jnp.asarray(x, jnp.int32) % nbins].add(0)

        def mask_fill(x, threshold, fill):
            return jnp.where(x > threshold, x, fill)

        def lookup_and_clamp(x, idx, vals, fill):
            return x[jnp.clip(idx, 0, x.shape[0] - 1)] * 0.0, x
    """,
}


@pytest.mark.slow  # two whole topics: ~90 s on a 2-core CPU
def test_a_module_of_wrong_one_liners_scores_nothing(tmp_path):
    """Points rest on work: a function that computes the wrong thing earns nothing for its
    structure, however well it jits (a loop, a scatter, every requirement's structure)."""
    folder = write_submission(tmp_path, WRONG_ONE_LINERS)
    result = grade_dir(folder, ["jit_basics", "at_updates"], jobs=2)
    scored = {name: v for name, v in verdicts(result).items() if v[0] > 0}
    assert not scored, scored
    jit = {name: v for name, v in verdicts(result).items() if name.endswith(":jit")}
    assert len(jit) >= 8 and all("not judged until the function is correct" in v[2] for v in jit.values()), jit

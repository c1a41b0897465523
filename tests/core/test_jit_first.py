"""`correct` and `grad` try the grader's `jax.jit` first and fall back to the function as written
(`TopicSession.student_output`): what the shortcut may and may not change in a verdict.

A function right as written stays right whatever it does under jit (raises, takes its process
down, gives other values), and its `jit` check still fails; a function right only under jit
counts as right (jit is how JAX code runs), which gains a student nothing they did not write.
"""

import pytest

from helpers.grading import grade_dir, verdicts, write_submission

CRASHES_WHEN_TRACED = """
    import os
    import jax
    import jax.numpy as jnp

    def clip_by_norm(g, max_norm):
        if isinstance(g, jax.core.Tracer):
            os._exit(3)  # the process dies under jit, and only under jit
        norm = jnp.sqrt(jnp.sum(g * g))
        return jnp.where(norm > max_norm, g * (max_norm / norm), g)
"""

RIGHT_ONLY_WHEN_TRACED = """
    import jax
    import jax.numpy as jnp

    def clip_by_norm(g, max_norm):
        norm = jnp.sqrt(jnp.sum(g * g))
        if not isinstance(g, jax.core.Tracer):
            return g  # as written: never clipped
        return jnp.where(norm > max_norm, g * (max_norm / norm), g)
"""

WRONG_BOTH_WAYS = """
    import jax.numpy as jnp

    def clip_by_norm(g, max_norm):
        return g * 2.0
"""

GRADIENT_RAISES_WHEN_TRACED = """
    import jax
    import jax.numpy as jnp

    def td_loss(w, s, r, s_next, gamma):
        target = jax.lax.stop_gradient(r + gamma * (s_next @ w))
        if type(target).__name__ == "DynamicJaxprTracer":  # traced by jit (eager grad gives an array)
            raise RuntimeError("no jit here")
        return 0.5 * jnp.mean((s @ w - target) ** 2)
"""


def _grade(tmp_path, name: str, topic: str, exercise: str, source: str):
    folder = write_submission(tmp_path / name, {topic: source})
    return grade_dir(folder, [f"{topic}.{exercise}"])


def test_right_as_written_stays_right_when_jit_kills_the_process(tmp_path):
    v = verdicts(_grade(tmp_path, "crash", "jit_basics", "clip_by_norm", CRASHES_WHEN_TRACED))
    score, max_score, message = v["jit_basics.clip_by_norm:correct"]
    assert score == max_score and "cases match" in message, message
    score, _, message = v["jit_basics.clip_by_norm:jit"]
    assert score == 0 and "not run" not in message, message  # judged by its own calls, not skipped for a death


def test_right_only_under_jit_counts_as_right(tmp_path):
    v = verdicts(_grade(tmp_path, "traced", "jit_basics", "clip_by_norm", RIGHT_ONLY_WHEN_TRACED))
    assert v["jit_basics.clip_by_norm:correct"][0] == v["jit_basics.clip_by_norm:correct"][1]


@pytest.mark.slow
def test_wrong_both_ways_gets_the_message_of_the_call_as_written(tmp_path):
    v = verdicts(_grade(tmp_path, "wrong", "jit_basics", "clip_by_norm", WRONG_BOTH_WAYS))
    score, _, message = v["jit_basics.clip_by_norm:correct"]
    assert score == 0 and ("differ" in message or "off" in message), message


@pytest.mark.slow
def test_a_gradient_right_as_written_stays_right_when_jit_raises(tmp_path):
    exercise = "td_loss"
    v = verdicts(_grade(tmp_path, "grad", "autodiff", exercise, GRADIENT_RAISES_WHEN_TRACED))
    assert v[f"autodiff.{exercise}:correct"][0] == v[f"autodiff.{exercise}:correct"][1], v
    assert v[f"autodiff.{exercise}:grad"][0] == v[f"autodiff.{exercise}:grad"][1], v[f"autodiff.{exercise}:grad"]
    assert v[f"autodiff.{exercise}:jit"][0] == 0, v[f"autodiff.{exercise}:jit"]

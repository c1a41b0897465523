"""Streams whose every call carries its own inputs, judged on arrival (`compiles`, `prints`).

The `compiles` and `prints` checks prepare a stream with no arguments (`prepare`) and send each
call's arguments with the call (`step`), inside the window the grader times; each student call
is compared with the reference's as it arrives. The hostile modules (tests/submissions/...):
- jit_basics__attack_prepare_work: the harness's `prepare` wrapped so that it compiles, untimed,
  for every call's arguments it holds (when it held them all, every call then answered at once
  and `compiles` passed for a function that compiles on every call);
- jit_basics__attack_eager_deaf: `bce_fast` run eagerly (each operation compiles on its own, on
  every new shape) with JAX's compilation events silenced, with and without a replay made slow
  on purpose; the grader's weight (`compiles.weighed`) counts its programs.
Each is graded beside its honest twin (ATTACK = False), sandboxed, and gains nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.grading import (
    SOLUTIONS,
    TEST_LIMITS,
    assert_gains_nothing,
    attack_and_twin,
    extra_data,
    grade_source,
    module_source,
    needs_bwrap,
    score_of,
)
from jaxlings.grading import topics
from jaxlings.grading.checks import Compiles, Prints
from jaxlings.grading.context import CheckContext
from jaxlings.grading.session import TopicSession

pytestmark = pytest.mark.slow  # hostile modules graded whole, beside their twins: the full suite only

BCE = ["jit_basics.bce_fast"]


def session_for(tmp_path: Path, topic: str, source: str) -> TopicSession:
    """A live session on `source` as the student's `topic` module, against the reference."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / f"{topic}.py").write_text(source)
    return TopicSession(
        topics.resolve([topic])[0],
        tmp_path / f"{topic}.py",
        SOLUTIONS / f"{topic}.py",
        7,
        public=False,
        isolate=False,
        limits=TEST_LIMITS,
    )


def run_check(session: TopicSession, kind: type, exercise: str) -> tuple[object, list[tuple[str, dict]]]:
    """Run the exercise's stream check of class `kind` in `session`; its outcome and the requests
    sent to the student (with the worker each went to, None for the topic's, as `worker`)."""
    sent: list[tuple[str, dict]] = []
    call = session.call_student

    def recording(op: str, worker=None, **fields):
        sent.append((op, {**fields, "worker": worker}))
        return call(op, worker=worker, **fields)

    session.call_student = recording
    ex = next(e for e in session.topic.exercises if e.name == exercise)
    check = next(c for c in ex.checks if isinstance(c, kind))
    return check.run(CheckContext(session, ex, [], [])), sent


WRONG_THIRD_CALL = """
import jax
import jax.numpy as jnp

_calls = 0


def bce_with_logits(z, y):
    return jnp.mean(jnp.maximum(z, 0.0) - z * y + jnp.log1p(jnp.exp(-jnp.abs(z))))


_loss = jax.jit(bce_with_logits)


def bce_fast(z, y):
    global _calls
    _calls += 1
    out = _loss(z, y)
    return out + 1.0 if _calls == 3 else out
"""


def test_each_call_brings_its_own_arguments_and_a_wrong_output_ends_the_stream(tmp_path):
    with session_for(tmp_path, "jit_basics", WRONG_THIRD_CALL) as session:
        outcome, sent = run_check(session, Compiles, "bce_fast")
    assert outcome.fraction == 0 and outcome.message.startswith("call 3 of the stream"), outcome.message
    # Judged on arrival: no call is sent after the wrong one.
    assert [op for op, _ in sent] == ["prepare", "step", "step", "step"]
    assert set(sent[0][1]) == {"fn", "jit", "static_argnums", "worker"}  # nothing of the stream before its clock
    own = {id(fields["worker"]) for _, fields in sent}
    assert len(own) == 1 and sent[0][1]["worker"] is not None  # hidden: one worker of its own for the stream
    assert not sent[0][1]["worker"].alive  # closed after it
    assert all(len(fields["args"]) == 2 for _, fields in sent[1:])


def test_the_reference_stream_passes_with_its_own_weight(tmp_path):
    with session_for(tmp_path, "jit_basics", (SOLUTIONS / "jit_basics.py").read_text()) as session:
        outcome, sent = run_check(session, Compiles, "bce_fast")
    assert outcome.fraction == 1, outcome.message
    assert 4 <= outcome.data["compiles"] <= 5 and outcome.data["weight"] <= outcome.data["weight_budget"], outcome.data
    assert all("args" in fields for op, fields in sent if op == "step")


PRINTS_FAULTS = """
import jax.numpy as jnp

WRONG_OUTPUT = {wrong_output}


def logged_softmax(x):
    print(f"tracing softmax: {{x.dtype}}{{list(x.shape)}}")  # not the line asked for
    if WRONG_OUTPUT and x.ndim == 3:
        return x
    z = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
    return z / jnp.sum(z, axis=-1, keepdims=True)
"""


def test_a_wrong_print_is_kept_and_a_later_wrong_output_still_decides(tmp_path):
    # The stream's 6th call is the first of its 3-D shape (jit_basics._softmax_stream).
    with session_for(tmp_path / "output", "jit_basics", PRINTS_FAULTS.format(wrong_output=True)) as session:
        outcome, sent = run_check(session, Prints, "logged_softmax")
    assert outcome.fraction == 0 and outcome.message.startswith("call 6 of the jitted stream"), outcome.message
    assert [op for op, _ in sent] == ["prepare"] + ["step"] * 6
    with session_for(tmp_path / "prints", "jit_basics", PRINTS_FAULTS.format(wrong_output=False)) as session:
        outcome, sent = run_check(session, Prints, "logged_softmax")
    assert outcome.fraction == 0 and outcome.message.startswith("call 1 of 12"), outcome.message
    assert "tracing softmax" in outcome.message and outcome.data["printing_calls"] == 3, outcome.data
    assert [op for op, _ in sent] == ["prepare"] + ["step"] * 12
    assert set(sent[0][1]) == {"fn", "jit", "static_argnums", "worker"}


# -- hostile modules, sandboxed, beside their honest twins ------------------------------------


@needs_bwrap
def test_a_prepare_that_compiles_for_every_call_finds_no_argument(tmp_path):
    attack, honest = attack_and_twin(tmp_path, "jit_basics__attack_prepare_work", BCE)
    assert_gains_nothing(attack, honest, BCE)
    assert score_of(attack, "jit_basics.bce_fast:compiles") == 0  # was full marks with staged arguments
    assert extra_data(attack, "jit_basics.bce_fast:compiles")["advisory"]["compiles"] == 12  # each call, in its window


@pytest.fixture(scope="module")
def eager_twin(tmp_path_factory) -> object:
    """The eager loss with JAX's events left alone: the advisory count fails it."""
    folder = tmp_path_factory.mktemp("eager_twin")
    return grade_source(folder, "jit_basics", module_source("jit_basics__attack_eager_deaf", ATTACK=False), BCE)


@needs_bwrap
@pytest.mark.parametrize("hide", ["none", "replay"])
def test_an_eager_function_with_silenced_events_is_weighed_by_its_programs(tmp_path, eager_twin, hide):
    attack = grade_source(tmp_path, "jit_basics", module_source("jit_basics__attack_eager_deaf", HIDE=hide), BCE)
    assert_gains_nothing(attack, eager_twin, BCE)
    assert score_of(eager_twin, "jit_basics.bce_fast:compiles") == 0
    figures = extra_data(attack, "jit_basics.bce_fast:compiles")
    assert figures["advisory"]["compiles"] == 0, figures  # the events are silenced ...
    assert figures["compiles"] <= 5, figures  # ... the clock sees one slow call per shape, within the allowance ...
    assert figures["weight"] > 2 * figures["weight_budget"], figures  # ... each the weight of many programs
    assert score_of(attack, "jit_basics.bce_fast:compiles") == 0

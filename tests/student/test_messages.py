"""Messages in the student's terms, on every crafted submission: what `grade check` says (and
results.json, the notebook and the web page show: they all print a test's `output`) never holds
the grader's internals: a treedef (`PyTreeDef(...)`), a jaxpr, a path into the grader's temp
folders, a link cut short, a case's number printed to 16 digits, or one sentence said twice; and
a hidden grading never calls a drawn case "the docstring's example".

Judged on two kinds of grading, each made once per run whoever asks: the hidden-mode gradings
the topic tests make of crafted files (`HIDDEN`, through `grade_variant`: in a full run they
cost nothing more), and public-mode gradings (`STEMS`, through `crafted_public`) for what only
public mode shows (pending messages): the three files tests/course/test_student_dist.py grades
in public mode anyway, and the files whose messages the issue found wrong (seconds each); every
crafted file in public mode with `JAXLINGS_FULL_SUITE=1` (about half an hour on two cores). Both
are `slow`. The wording of each message fixed for issue 29 has its own fast test in
tests/core/test_words.py.
"""

from __future__ import annotations

import os
import re
import tempfile

import jax
import pytest

from helpers.grading import crafted_stems, grade_variant

INTERNALS = {
    "a treedef": re.compile(r"PyTreeDef"),
    "a jaxpr": re.compile(r"\{ lambda |\blet\n| = (?:pjit|jit|scan|while|cond)\[|:(?:f|i|u|bf)\d+\[|key<\w+>\["),
    "a key-reuse signature": re.compile(r"KeyReuseSignature|\bSink\(\d"),
    "a tracer": re.compile(r"Traced<|DynamicJaxprTrace"),
    "the grader's temp folder": re.compile(
        rf"{re.escape(tempfile.gettempdir())}/|/tmp/|jaxlings-spare-|jaxlings-[a-z_]+-[a-z0-9_]{{8}}"
    ),
}
FULL = bool(os.environ.get("JAXLINGS_FULL_SUITE"))
ALWAYS = {"prng__walk_reuse", "prng__syntax_error", "at_updates__crash_at_import", "pytrees__unregistered"}
SHARED_PUBLIC = {"at_updates__one_fault_each", "static_args__one_fault_each", "jit_basics__one_fault_each"}
"""Graded in public mode by tests/course/test_student_dist.py anyway: their pending messages."""
STEMS = [s for s in crafted_stems() if FULL or s in SHARED_PUBLIC or s in ALWAYS]
"""Public mode (`grade check`'s words, pending messages included): every crafted file with
`JAXLINGS_FULL_SUITE=1` (half an hour on two cores); by default the three test_student_dist
grades anyway and the files whose messages the issue found wrong (a key reused in a walk, a
syntax error, a crash at import, an unregistered pytree: seconds each)."""

_LOOPS = ["loops.power_iteration", "loops.newton_sqrt"]
_VMC = ["ising.vmc_ground_state"]
HIDDEN: dict[str, list[str] | None] = {
    "at_updates__one_fault_each": None,
    "prng__one_fault_each": None,
    "prng__walk_reuse": ["prng.noisy_walk"],
    "autodiff__one_fault_each": None,
    "autodiff__more_faults": [
        f"autodiff.{e}" for e in ("loss_and_grads", "hvp", "pair_energy", "td_loss", "per_example_grads", "remat_grad")
    ],
    "autodiff__alternatives": None,
    "autodiff__hostile": [
        f"autodiff.{e}" for e in ("tall_jacobian", "hvp", "pair_energy", "per_example_grads", "remat_grad")
    ],
    "debugging__one_fault_each": None,
    "debugging__more_faults": None,
    "debugging__written_differently": None,
    "debugging__attack": [
        f"debugging.{e}" for e in ("normalize_rows", "checked_entropy", "first_nan_grad", "scoped_mlp")
    ],
    "debugging__watch_the_loss": ["debugging.first_nan_grad", "debugging.scoped_mlp"],
    "debugging__watch_the_weights": ["debugging.first_nan_grad"],
    "ising__one_fault_each": None,
    "ising__slow_vmc": _VMC,
    "ising__fixed_seed_vmc": _VMC,
    "jit_basics__one_fault_each": None,
    "jit_basics__impure": None,
    "loops__one_fault_each": None,
    "loops__unrolled": _LOOPS,
    "primitives__one_fault_each": None,
    "primitives__shortcuts": None,
    "pytrees__one_fault_each": None,
    "sharding__one_fault_each": None,
    "sharding__more_faults": None,
    "sharding__pmap_and_one_pass": ["sharding.shard_batch", "sharding.global_standardize"],
    "static_args__one_fault_each": None,
    "static_args__more_faults": [
        f"static_args.{e}"
        for e in ("conditional_fn", "cached_solve", "standardize_padded", "standardize", "window_sums")
    ],
    "training__reuses_donated": ["training.fit"],
    **{
        f"training__{v}": ["training.adamw_step"] for v in ("adamw_unmasked", "adamw_mask_inverted", "adamw_l2_in_grad")
    },
    **{
        f"training__{v}": ["training.resume_training"]
        for v in (
            "resume_fresh_opt_state",
            "resume_drops_step",
            "resume_params_only",
            "resume_ignores_checkpoint",
            "resume_checkpointer",
        )
    },
    **{
        f"training__{v}": ["training.train_step"]
        for v in ("wrong_sign", "stale_opt_state", "no_clipping", "recompiles")
    },
    "training__undonated": ["training.train_step", "training.fit"],
    "training__adamw_mask_tree": ["training.adamw_step"],
    **{
        f"training__{v}": ["training.classify", "training.eval_step"]
        for v in (
            "fixed_dropout_key",
            "dropout_in_eval",
            "batch_stats_in_eval",
            "stats_not_updated",
            "accuracy_wrong_axis",
            "loss_summed",
            "eval_in_train_mode",
        )
    },
    **{
        f"training__{v}": ["training.epoch_batches", "training.masked_eval"]
        for v in (
            "same_order_every_epoch",
            "drops_last_batch",
            "epoch_static",
            "mean_over_padding",
            "mean_of_batch_means",
            "eval_all_at_once",
        )
    },
    "ising__written_differently": [f"ising.{e}" for e in ("tfim_hamiltonian", "ground_state_energy", "correlations")],
    "precision__one_fault_each": None,
    "precision__more_faults": ["precision.logsumexp", "precision.mixed_matmul"],
    "precision__written_differently": None,
}
"""Hidden mode (what results.json, the gradebook and the web page show): the gradings the topic
tests (tests/topics/, with TEST_LIMITS) make of crafted files, the same file and exercises, so
`grade_variant` grades each once a run for both (an entry that differs from its topic test's
costs one grading more, nothing else)."""
URL = re.compile(r"https?://\S+")
DECIMAL = re.compile(r"(?<![\w.])-?\d+\.\d+(?:e[+-]?\d+)?(?![\w.])")
PAGE_TYPES = {"html", "htm", "md", "ipynb", "py", "txt", "pdf", "json"}
QUOTED = re.compile(r"(?<!\w)'[^']*'|\"[^\"]*\"|`[^`]*`")  # an apostrophe in a word ("docstring's") opens no quote


def problems(message: str) -> list[str]:
    """What in `message` is not in the student's terms (empty when nothing is)."""
    found = [f"{what}: {m.group(0)!r}" for what, pattern in INTERNALS.items() if (m := pattern.search(message))]
    found += [f"a cut link: {url!r}" for url in URL.findall(message) if not complete_link(message, url)]
    found += [f"a number to more than 4 digits: {n!r}" for n in long_numbers(message)]
    found += [f"said twice: {s!r}" for s in repeated_sentences(message)]
    return found


def complete_link(message: str, url: str) -> bool:
    """A link as a student can follow it: not cut ("...", a clip's "more characters"), its page
    whole, and a JAX docs anchor one that JAX has (`#jax.errors.KeyReuseError`)."""
    url = url.rstrip(").,;:'\"")
    after = message[message.index(url) + len(url) :]
    if url.endswith("..") or after.startswith(("...", "… ")):
        return False
    page, _, anchor = url.partition("#")
    last = page.rsplit("/", 1)[-1] if page.count("/") > 2 else ""
    if not re.fullmatch(r"https?://[\w.-]+\.[a-z]{2,}(/[\w./~%+-]*)?", page):
        return False
    if "." in last and last.rsplit(".", 1)[1] not in PAGE_TYPES:
        return False
    if anchor.startswith("jax.errors."):
        return hasattr(jax.errors, anchor.removeprefix("jax.errors."))
    return True


def long_numbers(message: str) -> list[str]:
    """Decimals with more than 4 significant digits outside quotes (what a student's code
    printed, or its own strings, are quoted as they are)."""
    bare = QUOTED.sub("", message)
    out = []
    for n in DECIMAL.findall(bare):
        digits = n.lstrip("-").split("e")[0].replace(".", "").lstrip("0")
        if len(digits) > 4:
            out.append(n)
    return out


def repeated_sentences(message: str) -> list[str]:
    """Sentences (or clauses between semicolons) of some length that a message says twice."""
    seen, twice = set(), []
    for part in re.split(r"(?<=[.;!?])\s+|\s+\(|\)\s*", message):
        part = part.strip(" .;()").lower()
        if len(part) >= 25:
            if part in seen:
                twice.append(part)
            seen.add(part)
    return twice


def test_the_patterns_catch_what_students_were_shown():
    """The internals the issue found, each caught (the test would pass on nothing otherwise)."""
    shown = {
        "the output's structure is PyTreeDef(((*, *), *)), but the task asks for PyTreeDef((*, *))": "treedef",
        "KeyReuseError: scan body function leads to key reuse:\n  eqn=a:f32[1,3] b:f32[1,1,3] = scan[": "jaxpr",
        "jaxpr={ lambda ; c:key<fry>[] d:f32[1,3]. let": "jaxpr",
        "The error occurred at /tmp/jaxlings-spare-prng-x1y2z3w4/prng.py:72 for jit": "temp folder",
        "See https://docs.jax.dev/en/latest/errors.html#jax.errors.TracerArrayCon": "cut link",
        "See https://docs.jax.dev/en/latest/errors.ht... (12 more characters)": "cut link",
        "random case, size 1 (key, float32[1, 3], 1, 0.93957626903449): 3 of 3 values are off": "4 digits",
        "keep it traced (remove it from static_argnums); keep it traced (remove it from static_argnums)": "twice",
    }
    for message, what in shown.items():
        assert problems(message), (what, message)
    fine = (
        "random case, size 3 (key, float32[3, 3], 3, 0.9396): `step_keys`: 1 of 3 keys differ (the first is key[2]). "
        "See https://docs.jax.dev/en/latest/errors.html#jax.errors.KeyReuseError (at line 12: `y = f(x)`) "
        "printed 'loss 0.123456'"
    )
    assert problems(fine) == []


NAMED_EXAMPLE = re.compile(r"(?<!a case like )\bthe (?:docstring|tutorial)'s (?:[\w-]+ )?example\b")
"""A hidden case called by the name of the one example it is drawn like: hidden runs grade other
instances of each edge (`Edge.hidden_label`), so "the docstring's example" there would send the
student to an input their function may well pass."""


def test_a_hidden_case_called_the_docstrings_example_is_caught():
    assert NAMED_EXAMPLE.search("the docstring's example: NaN the step after an outlier (float32[4]): differs")
    assert NAMED_EXAMPLE.search("the tutorial's mask example (float32[3]): 1 of 3 values are off")
    assert not NAMED_EXAMPLE.search("a case like the docstring's example, debug on (float32[2, 2], True): differs")


def assert_in_the_students_terms(result, hidden: bool = False) -> None:
    def found_in(output: str) -> list[str]:
        named = NAMED_EXAMPLE.search(output) if hidden else None
        return problems(output) + ([f"a drawn case named as one example: {named.group(0)!r}"] if named else [])

    bad = {t.name: (found, t.output) for t in result.tests if (found := found_in(t.output))}
    assert not bad, "\n".join(f"{name}: {found}\n    {output[:600]!r}" for name, (found, output) in bad.items())


@pytest.mark.slow  # public gradings shared with test_student_dist, and seconds-long ones, once a run
@pytest.mark.parametrize("stem", STEMS)
def test_every_message_of_a_crafted_submission_is_in_the_students_terms(crafted_public, stem):
    assert_in_the_students_terms(crafted_public(stem))


@pytest.mark.slow  # the topic tests' gradings of crafted files: free in a run that has the topic tests
@pytest.mark.parametrize("stem", sorted(HIDDEN))
def test_every_hidden_message_of_a_crafted_submission_is_in_the_students_terms(tmp_path_factory, stem):
    topic, variant = stem.split("__")
    assert_in_the_students_terms(grade_variant(tmp_path_factory, topic, variant, HIDDEN[stem]), hidden=True)

"""The similarity report's pure parts (jaxlings/service/similarity.py): normalisation undoes what a
copier changes cheaply and keeps what a solver decides; on the corpus (tests/similarity/) every
planted copy ranks above every independent pair; what the stub, hints and reference give everyone
does not make two students alike, while two copies of the reference are identical.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import keyword
import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import similarity as corpus
from jaxlings.grading import paths
from jaxlings.service import similarity

EXERCISES = corpus.exercises()


def canonical(text: str, exercise: str) -> str:
    code = similarity.read("s", 1, text, exercise)
    assert code is not None, text
    return code.canonical


def ranked(case: corpus.Case) -> similarity.Ranking:
    files = {login: (i, text) for i, (login, text) in enumerate(sorted(case.files.items()), 1)}
    [ranking] = similarity.report(case.topic, [case.exercise], files)
    return ranking


def test_the_corpus_has_at_least_six_independent_variants_of_two_topics_exercises():
    assert len({topic for topic, _ in EXERCISES}) >= 2
    for topic, exercise in EXERCISES:
        texts = corpus.variants(topic, exercise)
        assert len(texts) >= 6
        forms = {canonical(t, exercise) for t in texts.values()}
        assert len(forms) == len(texts), f"{topic}.{exercise}: two variants normalise alike"


@pytest.mark.parametrize(("topic", "exercise"), EXERCISES)
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("edit", [False, True], ids=["planted", "planted-and-edited"])
def test_every_planted_pair_ranks_above_every_independent_pair(topic, exercise, seed, edit):
    """Also when each copy has an operand order swapped and one number changed (`edit`)."""
    case = corpus.case(topic, exercise, seed, edit)
    ranking = ranked(case)
    planted = [p.score for p in ranking.pairs if case.is_planted(p.a.login, p.b.login)]
    independent = [p.score for p in ranking.pairs if not case.is_planted(p.a.login, p.b.login)]
    assert len(planted) == len(case.planted) and independent
    assert min(planted) > max(independent), ranking.pairs[: len(planted) + 2]


NAME = st.from_regex(r"[a-z][a-z0-9_]{0,7}", fullmatch=True).filter(lambda s: not keyword.iskeyword(s))


@settings(max_examples=60, deadline=None)
@given(which=st.sampled_from(EXERCISES), variant=st.integers(0, 5), seed=st.integers(0, 2**32))
def test_a_planted_copy_normalises_to_its_original(which, variant, seed):
    """Renamed locals, independent statements swapped, a dead line added: the same normalised code."""
    topic, exercise = which
    text = list(corpus.variants(topic, exercise).values())[variant]
    copy = corpus.plant(text, exercise, random.Random(seed))
    assert canonical(copy, exercise) == canonical(text, exercise)


@settings(max_examples=60, deadline=None)
@given(which=st.sampled_from(EXERCISES), variant=st.integers(0, 5), names=st.lists(NAME, min_size=30, unique=True))
def test_renaming_locals_to_any_names_changes_nothing(which, variant, names):
    topic, exercise = which
    text = list(corpus.variants(topic, exercise).values())[variant]
    free = set(text.split()) | {"jax", "jnp", "lax", "len", "range", "True", "False", "None"}
    fresh = [n for n in names if n not in free and not n.startswith("v")]
    renamed = corpus.rename(text, exercise, fresh)
    assert canonical(renamed, exercise) == canonical(text, exercise)


def test_dead_code_and_module_aliases_are_normalised_away_but_constants_are_not():
    plain = "import jax.numpy as jnp\n\ndef f(x, n):\n    y = jnp.zeros(n)\n    return y.at[x].add(1)\n"
    noisy = (
        "import jax.numpy as np\n\ndef f(a, b):\n    'docs'\n    tmp = a * 2\n    unused = tmp + 1\n"
        "    a\n    pass\n    c = np.zeros(b)  # counts\n    return c.at[a].add(1)\n"
    )
    assert canonical(noisy, "f") == canonical(plain, "f")
    assert canonical(plain.replace("add(1)", "add(2)"), "f") != canonical(plain, "f")
    effect = "def f(x, n):\n    print(x)\n    return x\n"
    assert "print" in canonical(effect, "f")  # a call made for its effect is kept


def test_commutative_operands_are_ordered():
    a = "def f(x, y):\n    return (x * 2 + y) == 3\n"
    b = "def f(x, y):\n    return 3 == (y + 2 * x)\n"
    assert canonical(a, "f") == canonical(b, "f")
    assert canonical(a, "f") != canonical("def f(x, y):\n    return (x - 2 + y) == 3\n", "f")


def test_reordering_keeps_dependencies():
    a = "def f(x):\n    p = x + 1\n    q = x * 2\n    r = p - q\n    return r\n"
    b = "def f(x):\n    q = x * 2\n    p = x + 1\n    r = p - q\n    return r\n"
    c = "def f(x):\n    p = x + 1\n    q = x * 2\n    r = q - p\n    return r\n"
    assert canonical(a, "f") == canonical(b, "f")
    assert canonical(a, "f") != canonical(c, "f")
    loop = "def f(x):\n    y = x\n    y = y * 2\n    z = y + 1\n    return z\n"
    assert "v1 = v0\n    v1 = 2 * v1" in canonical(loop, "f")  # an overwrite stays after what it overwrites


def test_a_long_function_is_compared_as_written_and_read_once():
    """Past `MAX_REORDERED` statements a block keeps its order (ordering costs about the square of
    the block: 2,000 statements took 74 s a read), and a large file's read is kept, whatever its size."""

    def body(order):
        return "".join(f"    a{i} = x * {i}\n" for i in order)

    def fn(order):
        return f"def f(x):\n{body(order)}    return [x, {', '.join(f'a{i}' for i in sorted(order))}]\n"

    n = similarity.MAX_REORDERED
    same = [canonical(fn(o), "f") for o in (range(n - 1), [1, 0, *range(2, n - 1)])]
    assert same[0] == same[1]  # a block of n statements: reordered
    kept = [canonical(fn(o), "f") for o in (range(n + 5), [1, 0, *range(2, n + 5)])]
    assert kept[0] != kept[1]  # past the bound: as written
    big = fn(range(4000))
    assert len(big) > 64 << 10
    similarity.READS.clear()
    first = similarity.read("s", 1, big, "f")
    assert first is not None and len(similarity.READS) == 1
    assert similarity.read("s", 2, big, "f").canonical == first.canonical and len(similarity.READS) == 1


def test_stubs_missing_functions_and_unreadable_files_are_not_compared():
    stub = (paths.exercises_dir() / "at_updates.py").read_text()
    assert similarity.read("s", 1, stub, "histogram") is None
    assert similarity.read("s", 1, "def other(x):\n    return x\n", "histogram") is None
    assert similarity.read("s", 1, "def histogram(x:\n", "histogram") is None
    deep = "def histogram(x, n):\n    return " + "-" * 100_000 + "x\n"
    assert similarity.read("s", 1, deep, "histogram") is None


def _students(functions: dict[str, str]) -> similarity.Ranking:
    stub = (paths.exercises_dir() / "at_updates.py").read_text()
    files = {login: (i, corpus.with_function(stub, fn, "histogram")) for i, (login, fn) in enumerate(functions.items())}
    files |= {
        login: (10 + i, text)
        for i, (login, text) in enumerate(corpus.variants("at_updates", "histogram").items())
        if login != "v1"
    }
    [ranking] = similarity.report("at_updates", ["histogram"], files)
    return ranking


def _score(ranking: similarity.Ranking, a: str, b: str) -> similarity.Pair:
    return next(p for p in ranking.pairs if {p.a.login, p.b.login} == {a, b})


def test_two_copies_of_the_reference_are_identical_and_marked_so_but_are_no_evidence():
    """Both handed in the reference unchanged: marked identical and the reference, and ranked by
    what they share, which everyone is given: below a copy of an answer of one's own (`v5`, as
    its author and a copier would hand it in). Before, the reference pair scored 1.0 at the top."""
    reference = (paths.solutions_dir() / "at_updates.py").read_text()
    own = corpus.variants("at_updates", "histogram")["v5"]
    copied = corpus.plant(own, "histogram", random.Random(3))
    ranking = _students(
        {"ada": reference, "bob": reference.replace("### BEGIN SOLUTION", "# my own, honest"), "cy": own, "dee": copied}
    )
    pair = _score(ranking, "ada", "bob")
    assert pair.identical and pair.is_reference(ranking.given)
    assert pair.score < 0.2, pair
    assert ranking.pairs[0] == _score(ranking, "cy", "dee") and ranking.pairs[0].score > 0.5


def test_sharing_only_the_stub_and_the_hints_does_not_make_two_students_alike():
    """Both keep the stub's docstring and signature and start from the hint's `jnp.zeros(n, dtype)`;
    then one loops over x and the other compares with every bin: not alike. The same two functions
    without the discount (every n-gram at full weight) score higher."""
    stub = (paths.exercises_dir() / "at_updates.py").read_text()
    doc = stub.split('def histogram(x, nbins):\n    """', 1)[1].split('"""', 1)[0]
    head = f'import jax.numpy as jnp\nfrom jax import lax\n\n\ndef histogram(x, nbins):\n    """{doc}"""\n'
    one = head + (
        "    counts = jnp.zeros(nbins, jnp.int32)\n"
        "    return lax.fori_loop(0, x.shape[0], lambda i, c: c.at[x[i]].add(1), counts)\n"
    )
    two = head + (
        "    counts = jnp.zeros(nbins, jnp.int32)\n"
        "    return counts + (x[None, :] == jnp.arange(nbins)[:, None]).sum(axis=1).astype(jnp.int32)\n"
    )
    ranking = _students({"ada": one, "bob": two})
    shared = _score(ranking, "ada", "bob")
    assert shared.score < 0.35 and not shared.identical
    weight = similarity.weights(list({c.login: c for q in ranking.pairs for c in (q.a, q.b)}.values()), frozenset())
    assert similarity.alike(shared.a.grams, shared.b.grams, weight) > shared.score


def test_what_most_of_the_class_writes_alike_counts_little():
    """Sharing an n-gram only the pair holds is evidence (weight 1); one every student holds is
    none (0); between, by how many hold it. Two functions alike only in what all write score 0;
    alike in what only they write, 1; with every weight 1, their Jaccard index."""
    assert similarity.rarity(2, 200) == 1.0 and similarity.rarity(200, 200) == 0.0
    assert 1.0 > similarity.rarity(10, 200) > similarity.rarity(100, 200) > 0.0
    assert similarity.rarity(3, 3) == 0.0 and similarity.rarity(2, 2) == 1.0  # a class of two: nothing to weigh against
    a, b = Counter({"x": 2, "y": 1}), Counter({"x": 1, "y": 1, "z": 1})
    assert similarity.alike(a, b, {}) == pytest.approx(2 / 4)  # Jaccard of the counted sets
    assert similarity.alike(a, b, {"x": 0.0, "y": 0.0}) == 0.0  # shared only what everyone writes
    assert similarity.alike(a, a, {"x": 1.0, "y": 1.0}) == 1.0


def test_shared_lines_marks_what_two_normalised_functions_have_in_common():
    a = "def f(v0):\n    v1 = v0 + 1\n    return v1\n"
    b = "def f(v0):\n    v1 = v0 + 1\n    return v1 * 2\n"
    assert similarity.shared_lines(a, b) == [2]


# -- the program side ------------------------------------------------------------------------------


def programs_for(case: corpus.Case) -> dict[str, dict[str, frozenset[int]]]:
    """login -> {exercise: program sketch} of a corpus case, each function exported here as the
    grader's trusted side would (tests/helpers/similarity.py's `program_of`)."""
    out = {}
    for login, text in case.files.items():
        sketch = corpus.program_of(case.topic, case.exercise, text)
        if sketch is not None:
            out[login] = {case.exercise: sketch}
    return out


def ranked_with_programs(case: corpus.Case) -> similarity.Ranking:
    files = {login: (i, text) for i, (login, text) in enumerate(sorted(case.files.items()), 1)}
    [ranking] = similarity.report(case.topic, [case.exercise], files, programs_for(case))
    return ranking


@pytest.mark.parametrize(("topic", "exercise"), EXERCISES)
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("edit", [False, True], ids=["planted", "planted-and-edited"])
def test_with_programs_every_planted_pair_still_ranks_above_every_independent_pair(topic, exercise, seed, edit):
    """A planted copy (renamed, reordered, a dead line; `edit`: also an operand order and a number)
    lowers to the same program as its original, while two independently written variants that
    lower to different programs stay apart on the program side too; a copy of an answer whose
    program is the reference's own is marked `prescribed`, and ranked on its source. (An edit can
    break a copy, a changed index past a tuple's end: such a copy has no program, as when its `jit`
    check fails before its program is analysed, and is scored on its source.)"""
    case = corpus.case(topic, exercise, seed, edit)
    ranking = ranked_with_programs(case)
    assert ranking.compared == len(case.files)
    assert edit or all(p.program is not None for p in ranking.pairs)
    planted = [p for p in ranking.pairs if case.is_planted(p.a.login, p.b.login)]
    independent = [p for p in ranking.pairs if not case.is_planted(p.a.login, p.b.login)]
    assert min(p.score for p in planted) > max(p.score for p in independent), ranking.pairs[:5]
    # a copy's program is its original's (raw sketches), and it ranks above independent programs,
    # but where both are the reference's own program (`prescribed`: no evidence on that side)
    assert all(jaccard(p.a.program, p.b.program) >= 0.9 for p in planted if p.a.program and p.b.program), planted
    reference = corpus.program_of(topic, exercise, (paths.solutions_dir() / f"{topic}.py").read_text())
    assert all(p.prescribed == (p.a.program == p.b.program == reference) for p in ranking.pairs)
    planted = [p for p in planted if p.program is not None and not p.prescribed]
    apart = [p for p in independent if p.program is not None and p.a.program != p.b.program]
    assert apart
    assert not planted or max(p.program or 0 for p in apart) < min(p.program or 0 for p in planted)
    for p in ranking.pairs:
        assert p.source is not None and p.score == pytest.approx(similarity.combined(p.source, p.program), abs=1e-4)


def jaccard(a: frozenset[int] | None, b: frozenset[int] | None) -> float:
    """The Jaccard index of two program sketches."""
    a, b = a or frozenset(), b or frozenset()
    return len(a & b) / len(a | b) if a | b else 0.0


def test_without_a_program_a_pair_is_scored_on_its_source_alone():
    case = corpus.case("at_updates", "histogram")
    files = {login: (i, text) for i, (login, text) in enumerate(sorted(case.files.items()), 1)}
    programs = programs_for(case)
    [plain] = similarity.report(case.topic, [case.exercise], files)
    assert all(p.program is None and p.score == p.source for p in plain.pairs)
    del programs["v1_copy"]  # graded before the fingerprint existed, say
    [mixed] = similarity.report(case.topic, [case.exercise], files, programs)
    by_pair = {frozenset((p.a.login, p.b.login)): p for p in mixed.pairs}
    assert by_pair[frozenset(("v1", "v1_copy"))].program is None
    assert by_pair[frozenset(("v1", "v1_copy"))].score == by_pair[frozenset(("v1", "v1_copy"))].source
    copied = by_pair[frozenset(("v3", "v3_copy"))]
    independent = [p.program or 0 for p in mixed.pairs if not case.is_planted(p.a.login, p.b.login)]
    assert copied.program is not None and copied.program > max(independent)


def test_programs_are_read_from_the_jit_tests_of_a_results_json():
    sketch = [f"{h:016x}" for h in (3, 5, 8)]
    tests = [
        {"tags": ["at_updates", "histogram", "jit"], "extra_data": {"program_shingles": sketch}},
        {"tags": ["at_updates", "histogram", "correct"], "extra_data": {"program_shingles": sketch}},
        {"tags": ["at_updates", "mask_fill", "jit"], "extra_data": {}},  # a stub: no program
        {"tags": ["at_updates", "scatter_ops", "jit"], "extra_data": {"program_shingles": ["nope"]}},
        {"tags": ["prng", "dropout", "jit"], "extra_data": {"program_shingles": sketch}},
    ]
    assert similarity.programs_in(json.dumps({"tests": tests}), "at_updates") == {"histogram": frozenset({3, 5, 8})}
    assert similarity.programs_in("not json", "at_updates") == {}
    assert similarity.programs_in(None, "at_updates") == {}
    assert similarity.program_sketch(["0" * 16] * (similarity.PROGRAM_KEPT + 1)) is None


def test_either_strong_side_ranks_a_pair_high_and_both_sides_add_up():
    """A copy disguised on one side is still a copy on the other: one side at 1 ranks the pair at 1
    (the mean capped it at 0.5, below honest pairs whose right answers compile alike); moderate
    evidence on both sides (a copy of two sources) ranks above the same on one side; two honest
    answers alike on neither side stay low."""
    assert similarity.combined(1.0, 0.0) == 1.0 and similarity.combined(0.0, 1.0) == 1.0
    assert similarity.combined(0.3, 0.3) > similarity.combined(0.3, 0.0) == pytest.approx(0.3)
    assert similarity.combined(0.1, 0.1) < 0.2
    assert similarity.combined(0.4, None) == 0.4  # no program on one side: the source alone


def test_a_program_most_of_the_class_hands_in_is_no_evidence_and_the_exercise_says_so():
    """Six students hand in one program (a task that prescribes the computation), two others share
    a program of their own: the crowd's pairs score low on the program side (0.21: six of eight
    hold each hash), the two 1;
    with the crowd half the class, the exercise is too short to tell, with three of eight it is
    not. Before, every pair of one program scored 1.0."""
    crowd, own = frozenset(range(100, 140)), frozenset(range(200, 240))
    texts = {f"s{i}": f"def f(x):\n    return x * {i} + {i * i}\n" for i in range(8)}
    programs = {login: {"f": crowd if i < 6 else own} for i, login in enumerate(sorted(texts))}
    files = {login: (i, text) for i, (login, text) in enumerate(sorted(texts.items()))}
    [ranking] = similarity.report("t", ["f"], files, programs)
    by_pair = {frozenset((p.a.login, p.b.login)): p for p in ranking.pairs}
    assert by_pair[frozenset(("s6", "s7"))].program == 1.0
    assert all(
        p.program is not None and p.program < 0.25 for k, p in by_pair.items() if k <= {f"s{i}" for i in range(6)}
    )
    assert ranking.pairs[0] == by_pair[frozenset(("s6", "s7"))]
    assert ranking.same_program == 6 and ranking.too_short_to_tell
    three = {
        login: {"f": crowd if i < 3 else frozenset(range(300 + 50 * i, 340 + 50 * i))}
        for i, login in enumerate(sorted(texts))
    }
    [spread] = similarity.report("t", ["f"], files, three)
    assert spread.same_program == 3 and not spread.too_short_to_tell


def test_a_pair_of_the_reference_s_program_is_marked_prescribed():
    """Two answers whose programs are the reference's own (as the grader exports it): marked, in
    the API too; an answer of another program is not."""
    reference = (paths.solutions_dir() / "at_updates.py").read_text()
    one_liner = (
        "import jax.numpy as jnp\n\n\ndef histogram(x, nbins):\n    return jnp.zeros([nbins], jnp.int32).at[x].add(1)\n"
    )
    texts = {"ada": reference, "bob": one_liner, "cy": corpus.variants("at_updates", "histogram")["v3"]}
    files = {login: (i, text) for i, (login, text) in enumerate(sorted(texts.items()))}
    programs = {
        login: {"histogram": corpus.program_of("at_updates", "histogram", text)} for login, text in texts.items()
    }
    [ranking] = similarity.report("at_updates", ["histogram"], files, programs)
    by_pair = {frozenset((p.a.login, p.b.login)): p for p in ranking.pairs}
    assert by_pair[frozenset(("ada", "bob"))].prescribed
    assert not by_pair[frozenset(("ada", "cy"))].prescribed and not by_pair[frozenset(("bob", "cy"))].prescribed
    shown = similarity.view("at_updates", [ranking], 10).exercises[0].pairs
    assert [p.prescribed for p in shown if {p.a, p.b} == {"ada", "bob"}] == [True]


def test_cut_sketches_are_compared_below_the_smaller_cut():
    kept = similarity.PROGRAM_KEPT
    a = frozenset(range(0, 2 * kept, 2)[:kept])  # a program's smallest hashes: 0, 2, ..., 2k-2
    b = frozenset(range(0, 4 * kept, 4)[:kept])  # another's: 0, 4, ..., 4k-4
    # below 2k-2 (a's cut) b holds its every hash: half of a's
    assert similarity.program_alike(a, b, {}) == pytest.approx(0.5, abs=0.01)
    assert similarity.program_alike(a, a, {}) == 1.0
    small = frozenset({1, 2, 3})
    assert similarity.program_alike(small, frozenset({2, 3, 4}), {}) == 0.5


def test_the_reference_program_is_discounted_when_a_student_handed_in_the_reference():
    reference = (paths.solutions_dir() / "at_updates.py").read_text()
    text = corpus.variants("at_updates", "histogram")["v1"]
    ref_program = corpus.program_of("at_updates", "histogram", reference)
    mine = corpus.program_of("at_updates", "histogram", text)
    assert ref_program is not None and mine is not None
    codes = [
        similarity.read("eve", 1, reference, "histogram"),
        similarity.read("ada", 2, text, "histogram"),
    ]
    given_now = similarity.given("at_updates", "histogram")
    with_programs = [dataclasses.replace(codes[0], program=ref_program), dataclasses.replace(codes[1], program=mine)]
    assert similarity.reference_program(with_programs, given_now) == ref_program
    assert given_now.program == ref_program  # the service's own sketch of the reference: the grader's
    unknown = dataclasses.replace(given_now, program=frozenset())
    assert similarity.reference_program(with_programs, unknown) == ref_program  # eve handed in the reference
    assert similarity.reference_program([with_programs[1]], unknown) == frozenset()
    weight = similarity.program_weights(with_programs, ref_program)
    assert all(weight[h] < 1 for h in ref_program)
    matrix = similarity.program_scores([ref_program, mine], weight)
    assert matrix[0, 1] == pytest.approx(similarity.program_alike(ref_program, mine, weight))


# -- what runs: a name rebound, a body moved into a helper, no-ops (issue 46) --------------------


@pytest.mark.parametrize(("topic", "exercise"), EXERCISES)
@pytest.mark.parametrize("kind", corpus.DISGUISES)
def test_a_copy_disguised_as_what_runs_ranks_above_every_independent_pair(topic, exercise, kind):
    """`split`: the copied body moved into a helper of a fresh name, the exercise a one-line call
    of it (before: every copy 0.001-0.003, below every independent pair); `decoy`: another
    student's function shown first, the copy (plus two `+ 0`) bound to the name after it
    (before: the decoy's author paired with the copy at 1.000, the copy's source below 0.03)."""
    case = corpus.disguised(topic, exercise, kind)
    ranking = ranked(case)
    planted = [p.score for p in ranking.pairs if case.is_planted(p.a.login, p.b.login)]
    independent = [p.score for p in ranking.pairs if not case.is_planted(p.a.login, p.b.login)]
    assert len(planted) == len(case.planted) and independent
    assert min(planted) > max(independent), ranking.pairs[: len(planted) + 2]


def test_a_name_bound_twice_is_read_as_it_runs_and_said():
    """The grader runs what the module binds last: a `def`, then `name = f`, `name = jax.jit(f)`."""
    shown = "def ema(xs, alpha):\n    return xs\n"
    runs = "def _mine(xs, alpha):\n    return xs * alpha + 1\n"
    for binding in ("ema = _mine", "ema = jax.jit(_mine)", "ema: object = functools.partial(_mine)"):
        code = similarity.read("s", 1, "import jax\n" + shown + runs + binding + "\n", "ema")
        assert code is not None and code.text.startswith("def _mine")
        assert code.canonical == canonical(runs.replace("_mine", "ema"), "ema")
        assert code.bindings == 2 and "binds the exercise's name 2 times" in code.notes[0]
    plain = similarity.read("s", 1, shown, "ema")
    assert plain is not None and plain.bindings == 1 and plain.notes == []
    # a lambda is the function it returns, a helper it calls compared with it
    wrapped = similarity.read("s", 1, shown + runs + "ema = lambda xs, alpha: _mine(xs, alpha)\n", "ema")
    assert wrapped is not None and wrapped.helpers == ("_mine",) and wrapped.bindings == 2
    # bound to what the file does not define: nothing of its own to compare
    assert similarity.read("s", 1, shown + "ema = print\n", "ema") is None


def test_helpers_are_compared_under_names_of_their_own():
    """A helper's name is the copier's to choose: renamed, the function reads the same."""
    one = "def _core(x):\n    return x * 2 + 1\n\n\ndef f(x):\n    return _core(x)\n"
    code = similarity.read("s", 1, one, "f")
    assert code is not None and code.helpers == ("_core",) and "`_core`" in code.notes[0]
    assert canonical(one.replace("_core", "other_name"), "f") == code.canonical


def test_arithmetic_that_changes_nothing_is_normalised_away():
    plain = canonical("def f(x):\n    return x * 2\n", "f")
    for padded in ("x * 2 + 0.0", "0 + x * 2", "1 * (x * 2) / 1", "(x * 2 - 0) * 1.0"):
        assert canonical(f"def f(x):\n    return {padded}\n", "f") == plain
    assert canonical("def f(x):\n    return x * 2 + 1\n", "f") != plain  # a real constant stays


def test_api_synonyms_read_as_one_form():
    """What a rewrite swaps in reads as what it replaced; a different operation does not."""
    head = "import jax\nimport jax.numpy as jnp\nfrom jax import lax\n\n\ndef f(a, b, c):\n    return "
    forms = {
        "a @ b": ["jnp.matmul(a, b)", "jnp.dot(a, b)", "a.dot(b)", "jax.numpy.matmul(a, b)"],
        "jnp.where(c, a, b)": [
            "lax.select(c, a, b)",
            "jax.lax.select(c, a, b)",
            "lax.select(*jnp.broadcast_arrays(c, a, b))",  # a `select` made to take scalars
        ],
        "a ** 2": ["a * a", "jnp.square(a)", "jnp.power(a, 2)"],
        "jnp.sum(a, axis=0)": ["a.sum(axis=0)"],
        "jnp.max(a)": ["a.max()"],
    }
    for plain, synonyms in forms.items():
        want = canonical(head + plain + "\n", "f")
        for synonym in synonyms:
            assert canonical(head + synonym + "\n", "f") == want, synonym
    assert canonical(head + "a * b\n", "f") != canonical(head + "a @ b\n", "f")
    assert canonical(head + "jnp.mean(a)\n", "f") != canonical(head + "jnp.sum(a)\n", "f")


def test_an_exercise_most_of_the_class_answers_alike_is_too_short_to_tell():
    """Where half the class or more wrote one function (once normalised), the report says a match
    there is no evidence; on the corpus (answers that differ, three pairs of copies) it does not."""
    short = "def f(x):\n    return x * 2\n"
    files = {f"s{i}": (i, short.replace("x", name)) for i, name in enumerate(["x", "y", "z", "w"], 1)}
    files["s5"] = (5, "def f(x):\n    y = x + x\n    return y\n")
    [ranking] = similarity.report("t", ["f"], files)
    assert ranking.compared == 5 and ranking.same_as_another == 4 and ranking.too_short_to_tell
    [two] = similarity.report("t", ["f"], {k: files[k] for k in ("s1", "s2", "s5")})
    assert not two.too_short_to_tell  # three students: no class to weigh against
    for topic, exercise in EXERCISES:
        assert not ranked(corpus.case(topic, exercise)).too_short_to_tell


# -- helpers read in place, what was normalised, matched regions (issue 46) ------------------------


def test_a_body_moved_into_helpers_reads_as_the_body():
    """A function that only calls a helper is the helper's body; a helper that returns one
    expression is read in place. Before, the wrapper's call and the helper's `def` were compared
    beside the body: a split copy of a short answer scored 0.25-0.55 against its original."""
    plain = "import jax.numpy as jnp\n\n\ndef f(x, n):\n    y = jnp.abs(x * x - n) / n\n    return jnp.max(y) <= 1e-3\n"
    split = (
        "import jax.numpy as jnp\n\n\ndef _err(a, b):\n    return jnp.abs(a * a - b) / b\n\n\n"
        "def _work(p, q):\n    y = _err(p, q)\n    return jnp.max(y) <= 1e-3\n\n\ndef f(x, n):\n    return _work(x, n)\n"
    )
    assert canonical(split, "f") == canonical(plain, "f")
    code = similarity.read("s", 1, split, "f")
    assert code is not None and code.helpers == ("_work", "_err")  # reached, and said so
    assert any("a call of `_work` and nothing else" in n for n in code.normalised)
    assert any("`_err` returns one expression" in n for n in code.normalised)
    # arguments passed in another order are the helper's parameters, renamed as passed
    swapped = split.replace("def _work(p, q):", "def _work(q, p):").replace("return _work(x, n)", "return _work(n, x)")
    assert canonical(swapped, "f") == canonical(plain, "f")
    # a helper of two statements called inside an expression is compared beside the function, not read in place
    beside = split.replace("    return _work(x, n)\n", "    return 1 + _work(x, n)\n")
    assert canonical(beside, "f") != canonical(plain, "f") and "def h0(" in canonical(beside, "f")
    # another body is another function
    assert canonical(split.replace("a * a - b", "a - b"), "f") != canonical(plain, "f")


def test_helpers_that_call_each_other_do_not_grow_a_function_without_end():
    """Eight helpers each calling the next ten times would read in place as 10^8 calls: the read
    stops growing at `inline.MAX_NODES` and is compared with the rest beside it; a helper that
    calls itself is never read in place. A chain of two helpers is (the honest case above)."""
    from jaxlings.service import inline

    chain = "".join(f"def h{i}(x):\n    return " + " + ".join([f"h{i + 1}(x)"] * 10) + "\n\n\n" for i in range(8))
    bomb = chain + "def h8(x):\n    return x * 2\n\n\ndef f(x):\n    return h0(x)\n"
    code = similarity.read("s", 1, bomb, "f")
    assert code is not None and sum(1 for _ in ast.walk(ast.parse(code.canonical))) < 3 * inline.MAX_NODES
    itself = similarity.read("s", 1, "def h(x):\n    return h(x) + 1\n\n\ndef f(x):\n    return h(x) * 2\n", "f")
    assert (
        itself is not None
        and "def h0(" in itself.canonical
        and not any("returns one expression" in n for n in itself.normalised)
    )


def test_what_was_normalised_is_said_with_its_lines():
    """Dead code, `+ 0`, an API synonym and an alias are each said, with the line of the file they
    were written on; a function written plainly has none of them said."""
    text = (
        "import jax\nimport jax.numpy as np\n\n\ndef f(x, c):\n"  # lines 1-5
        "    scratch = x * 2\n"  # 6: dead
        "    y = jax.lax.select(c, x, -x) + 0.0\n"  # 7: a synonym and an identity
        "    return np.sum(y)\n"  # 8: an alias
    )
    code = similarity.read("s", 1, text, "f")
    assert code is not None
    said = "\n".join(code.normalised)
    assert "line 6: `scratch = x * 2` dropped" in said
    assert "line 7: `jax.lax.select(c, x, -x)` read as `jax.numpy.where(c, x, -x)`" in said
    assert "line 7: `jax.numpy.where(c, x, -x) + 0.0` read as `jax.numpy.where(c, x, -x)`" in said
    assert "`np` read as `jax.numpy`" in said
    plain = similarity.read("s", 1, "import jax.numpy as jnp\n\n\ndef f(x, c):\n    return jnp.sum(x)\n", "f")
    assert plain is not None and not any(w in n for n in plain.normalised for w in ("dropped", "line "))


def test_matched_regions_are_marked_where_each_student_wrote_them():
    """A split copy against its original: every line of the original's body is matched, in the
    copy on the helper's lines (the wrapper's own line is not); an unrelated function matches
    neither. The page's sides carry those marks."""
    original = corpus.variants("loops", "newton_sqrt")["v1"]
    copied = corpus.split(original, "newton_sqrt", random.Random(5))
    other = corpus.variants("loops", "newton_sqrt")["v2"]
    a, b, c = (
        similarity.read(n, i, t, "newton_sqrt")
        for i, (n, t) in enumerate([("a", original), ("b", copied), ("c", other)])
    )
    assert a is not None and b is not None and c is not None
    body = range(a.start + 1, a.start + a.text.count("\n") + 1)
    assert set(similarity.shared_written(a, b)) >= {n for n in body if original.splitlines()[n - 1].strip()}
    wrapper = b.start + 1  # `return _impl..(a, tol)`
    assert wrapper not in similarity.shared_written(b, a) and similarity.shared_written(b, a)
    assert len(b.written) == 2 and b.written[1][1].startswith("def _")  # the helper shown as written
    assert len(similarity.shared_written(a, c)) <= 2  # at most a line such as `return (v2, v3)` by chance
    pair = similarity.Pair("newton_sqrt", a, b, 1.0)
    left, right = similarity.sides(pair)
    assert left.matched == len(similarity.shared_written(a, b)) and 'class="hll"' in str(right.written[1])


COHORT = [(kind, topic, exercise) for kind in corpus.COHORT for topic, exercise in EXERCISES]


@pytest.mark.parametrize(("kind", "topic", "exercise"), COHORT)
def test_on_the_cohort_every_disguise_ranks_its_copy_above_every_honest_pair(kind, topic, exercise):
    """The benchmark's cohort (benchmarks/similarity.py): honest variants, answers written the
    reference's way, and copies disguised as `kind`, with their programs. Every copy (a copy of two
    sources by its better pair) ranks above every honest pair, but where the copy's and its
    original's programs are both the reference's own (a pair marked `prescribed`: a copy of an
    answer written as the reference is, which the report cannot tell from honest work and says so). Before (the mean of the sides, programs
    weighed by raw overlap), synonyms, splits, decoys and mixes ranked copies below honest pairs
    whose right answers compile alike. `at_updates.histogram` is labelled too short to tell, and
    its copies rank above every honest pair all the same."""
    case = corpus.cohort(topic, exercise, kind)
    ranking = ranked_with_programs(case)
    assert ranking.too_short_to_tell == (exercise == "histogram")  # 7 of 13 hand in the reference's program
    reference = corpus.program_of(topic, exercise, (paths.solutions_dir() / f"{topic}.py").read_text())
    honest = max(p.score for p in ranking.pairs if not case.is_planted(p.a.login, p.b.login))
    best: dict[str, float] = {}
    for p in ranking.pairs:
        if case.is_planted(p.a.login, p.b.login) and not (p.a.program == p.b.program == reference):
            copy = p.a.login if p.a.login.endswith("_copy") else p.b.login
            best[copy] = max(best.get(copy, 0.0), p.score)
    assert best and min(best.values()) > honest, (best, honest, ranking.pairs[:6])

"""The Java-free METEOR 1.5 against coco's jar.

Without Java: Java string semantics, the jar's stemmer version, the scoring rules, and that
``capeval.score(..., metrics=["meteor"])`` runs with no ``java`` on PATH. With Java: the
jar's own ``Stemmer`` and ``Normalizer`` entry points against ours on large word and line
sets, and the native backend against the jar backend (per caption ``==``, corpus ``==``) on
tricky inputs and on a sample of every benchmark candidate set. The full sets:
``benchmarks/meteor_native_agreement.py``.
"""
from __future__ import annotations

import math
import random
import subprocess

import numpy as np
import pytest

import capeval
import capeval.data
from capeval.errors import InputError
from capeval.metrics._meteor_native import java as J
from capeval.metrics._meteor_native.phrases import positions, prefixes, reference_phrases
from capeval.metrics._meteor_native.score import add_stats, corpus_score, scores
from capeval.metrics._meteor_native.stemmer import stem
from capeval.metrics.meteor import DEFAULT_BACKEND, Meteor


def _resources_or_skip():
    pytest.importorskip("pycocoevalcap", reason="the METEOR resources come from pycocoevalcap's jar")
    from capeval.metrics._meteor_native import load

    return load()


# ----------------------------------------------------------------------------------------
# Without Java
# ----------------------------------------------------------------------------------------
def test_java_string_semantics():
    assert J.string_hash("hello") == 99162322  # "hello".hashCode()
    assert J.string_hash("") == 0
    assert J.string_hash("polygenelubricants") == -2147483648  # overflow wraps to int
    assert J.string_hash("\U0001F600") == 0xD83D * 31 + 0xDE00  # over UTF-16 code units
    assert J.trim("\x00\x1f a b \x0b\t") == "a b"  # trim drops every char <= U+0020
    assert J.trim("\u00a0a\u00a0") == "\u00a0a\u00a0"  # but not a no-break space
    assert J.tokens(" a\tb\x0bc\u00a0d\n") == ["a", "b\x0bc\u00a0d"]  # StringTokenizer: 5 ASCII delimiters
    assert J.lower("ÀB\u2C2F") == "àb\u2C2F"  # U+2C2F has no lower case in OpenJDK 17's Unicode


@pytest.mark.parametrize("word, jar_stem", [
    # Where current Snowball (snowballstemmer/PyStemmer 3.x) or NLTK differ from the jar.
    ("added", "ad"), ("biologist", "biologist"), ("realization", "realiz"),
    ("irrationally", "irrat"), ("sensationalism", "sensat"),
    # Porter2 rules and exceptions the jar's version has.
    ("generously", "generous"), ("skies", "sky"), ("dying", "die"), ("news", "news"),
    ("proceeding", "proceed"), ("hopping", "hop"), ("hoped", "hope"), ("cries", "cri"), ("ties", "tie"),
    ("gas", "gas"), ("gaps", "gap"), ("yell", "yell"), ("saying", "say"), ("ab", "ab"),
    ("'tis", "tis"), ("\U0001F600s", "\U0001F600s"),
])
def test_stemmer_is_the_jars_version(word, jar_stem):
    assert stem(word) == jar_stem


def test_scores_follow_compute_metrics():
    empty = np.zeros((1, 23))
    empty[0, 1] = 3.0  # empty hypothesis vs a 3-word reference: 0/0 precision -> score 0
    assert scores(empty)[0] == 0.0
    # identical 2-word sentences, one exact chunk: no fragmentation penalty
    perfect = np.array([[2, 2, 0, 0, 2, 2, 0, 0] + [0] * 12 + [1, 2, 2]], dtype=float)
    assert scores(perfect)[0] == 1.0
    # two chunks: penalty 0.6 * (2 / 2) ** 0.2
    split = perfect.copy()
    split[0, 20] = 2
    assert scores(split)[0] == pytest.approx(1 - 0.6, abs=1e-15)
    # the aggregate skips the chunk of a perfect one-chunk row, keeps the others'
    agg = add_stats(np.vstack([perfect, split, perfect]))
    assert agg[20] == 2 and agg[0] == 6
    assert corpus_score(np.vstack([perfect, split])) == scores(add_stats(np.vstack([perfect, split]))[None])[0]


def test_phrase_lookups_equal_brute_force():
    # The pruned n-gram walks of the paraphrase lookups against every n-gram of every line.
    rng = random.Random(7)
    vocab = 6
    for _ in range(300):
        phrases = {tuple(rng.randrange(vocab) for _ in range(rng.randint(1, 4))) for _ in range(rng.randint(0, 12))}
        keys = {p: k for k, p in enumerate(sorted(phrases))}
        bigrams = {a * vocab + b for p in keys for a, b in zip(p, p[1:])}
        ids = [rng.randrange(-1, vocab) for _ in range(rng.randint(0, 14))]
        grams = [(s, e - s, tuple(ids[s:e])) for s in range(len(ids)) for e in range(s + 1, len(ids) + 1)
                 if -1 not in ids[s:e]]
        assert reference_phrases(ids, keys, bigrams, vocab, max((len(p) for p in keys), default=0)) == \
            [g for g in grams if g[2] in keys]
        wanted_prefixes, longest = prefixes(phrases)
        assert wanted_prefixes == {p[:k] for p in phrases for k in range(1, len(p) + 1)}
        want: dict = {}
        for s, _, g in grams:
            if g in phrases:
                want.setdefault(g, []).append(s)
        assert positions(ids, phrases, wanted_prefixes, longest) == want


def _random_search(rng):
    """Candidate matches as the aligner builds them: one-word matches of every module and
    multi-word paraphrase matches, with the fixed ones and the used-word masks."""
    from capeval.metrics._meteor_native.align import PARAPHRASE, _bits

    n1, n2 = rng.randint(1, 12), rng.randint(1, 12)
    matches = [[] for _ in range(n2)]
    cov1, cov2 = [0] * n1, [0] * n2
    for _ in range(rng.randint(0, 3 * n2)):
        j = rng.randrange(n2)
        if rng.random() < 0.25:
            ln, ml = rng.randint(1, min(3, n2 - j)), rng.randint(1, 3)
            i = rng.randrange(n1 - ml + 1) if ml <= n1 else None
            if i is None:
                continue
            m = (j, ln, i, ml, PARAPHRASE)
        else:
            ln, ml = 1, 1
            m = (j, 1, rng.randrange(n1), 1, rng.randrange(3))
        matches[j].append(m)
        for k in range(m[2], m[2] + m[3]):
            cov1[k] += 1
        for k in range(m[0], m[0] + m[1]):
            cov2[k] += 1
    fixed = [None] * n2
    used1 = used2 = 0
    for j, ms in enumerate(matches):
        if len(ms) == 1:
            s, ln, st1, ml, _ = m = ms[0]
            if all(cov2[k] == 1 for k in range(s, s + ln)) and all(cov1[k] == 1 for k in range(st1, st1 + ml)):
                fixed[j] = m
                used1 |= _bits(st1, ml)
                used2 |= _bits(s, ln)
    return n1, matches, fixed, used1, used2


@pytest.mark.parametrize("beam", [40, 2])
def test_search_visiting_matched_positions_equals_step_by_step(beam):
    # The search that skips positions without matches against the jar's step-by-step one:
    # same best path (key, position, chosen matches), with a wide and a tight beam.
    from capeval.metrics._meteor_native.align import SEARCH_WEIGHTS, _resolve, _resolve_stepwise

    def chosen(link):
        out = []
        while link is not None:
            m, link = link
            out.append(m)
        return out

    rng = random.Random(11)
    compared = 0
    for _ in range(3000):
        n1, matches, fixed, used1, used2 = _random_search(rng)
        want = _resolve_stepwise(matches, fixed, used1, used2, SEARCH_WEIGHTS, beam)
        got = _resolve(matches, fixed, n1, used1 | (used2 << n1), SEARCH_WEIGHTS, beam)
        if got is None:  # handed to the step-by-step search
            continue
        compared += 1
        assert (got[0], got[1], got[2], chosen(got[4])) == (want[0], want[1], want[2], chosen(want[5]))
    assert compared > 2900


def _compiled_or_skip():
    from capeval._compiled import load
    from capeval.metrics._meteor_native import compiled

    core = load(compiled.import_core)  # the module, even where a test switched compiled.core off
    if core is None:
        pytest.skip("capeval._meteor_speedups is not built (or CAPEVAL_PURE_PYTHON is set)")
    return core


@pytest.mark.parametrize("beam", [40, 2, 1])
def test_compiled_search_equals_step_by_step(beam):
    # The compiled search against the jar's step-by-step one: best key, position, chunk end
    # and chosen matches (the fallback when no path is left included).
    from capeval.metrics._meteor_native.align import SEARCH_WEIGHTS, _resolve_stepwise

    core = _compiled_or_skip()

    def chosen(link):
        out = []
        while link is not None:
            m, link = link
            out.append(m)
        return out

    rng = random.Random(13)
    for _ in range(3000):
        n1, matches, fixed, used1, used2 = _random_search(rng)
        want = _resolve_stepwise(matches, fixed, used1, used2, SEARCH_WEIGHTS, beam)
        got = core.resolve(matches, fixed, n1, SEARCH_WEIGHTS, beam)
        assert got == (want[0], want[1], want[2], chosen(want[5]))


def test_compiled_align_stats_equal_python():
    # align_stats from the candidate matches, compiled and in Python, on random searches
    # (lines longer than 64 words included: several words of used-word bits).
    from capeval.metrics._meteor_native import align

    core = _compiled_or_skip()
    rng = random.Random(17)
    for trial in range(2000):
        n1, matches, _, _, _ = _random_search(rng)
        if trial % 10 == 0:  # long lines: pad both sides with unmatched words
            n1 += 70
            matches += [[] for _ in range(70)]
        n2 = len(matches)
        singles = [(tuple((m[2], m[4]) for m in ms if m[4] != align.PARAPHRASE),) for ms in matches]
        para = [m for ms in matches for m in ms if m[4] == align.PARAPHRASE]
        rng.shuffle(para)
        f1 = tuple(rng.random() < 0.4 for _ in range(n1))
        f2 = tuple(rng.random() < 0.4 for _ in range(n2))

        class L:  # what align_stats reads of a line
            def __init__(self, n, functions):
                self.n, self.functions, self.n_functions = n, functions, sum(functions)

        l1, l2 = L(n1, f1), L(n2, f2)
        cands = [[(j, 1, i, 1, mod) for i, mod in rec[0]] for j, rec in enumerate(singles)]
        cov1, cov2 = [0] * n1, [0] * n2
        for m in para:
            cands[m[0]].append(m)
        for ms in cands:
            for s, ln, st1, ml, _ in ms:
                for k in range(st1, st1 + ml):
                    cov1[k] += 1
                for k in range(s, s + ln):
                    cov2[k] += 1
        want = align.align_stats(l1, l2, (cands, cov1, cov2))
        got = core.align_stats(singles, para, f1, f2, align.SEARCH_WEIGHTS, align.BEAM_SIZE)
        assert got == want


def test_compiled_score_equals_python():
    # score_one in C against score.score_one: the same float, bit for bit, on random
    # statistics (perfect one-chunk rows, empty sides and function-word-only sides included)
    from capeval.metrics._meteor_native.score import score_one

    core = _compiled_or_skip()
    rng = random.Random(29)
    for _ in range(20000):
        t_len, r_len = rng.randint(0, 30), rng.randint(0, 30)
        row = [t_len, r_len, rng.randint(0, t_len), rng.randint(0, r_len)]
        row += [rng.randint(0, 6) for _ in range(16)]
        if rng.random() < 0.1:  # every word matched, in one chunk
            row[4:20] = [0] * 16
            row[4], row[5] = t_len, r_len
        matched = (sum(row[4:20:4]) + sum(row[6:20:4]), sum(row[5:20:4]) + sum(row[7:20:4]))
        row += [rng.randint(1, 8) if any(matched) else 0, *matched]
        row[0], row[1] = max(row[0], matched[0]), max(row[1], matched[1])  # lengths cover the matches
        want = score_one(row)
        assert core.score_one(row) == want and core.score_one([float(x) for x in row]) == want


#: Statistics of issue 36's seed-1 row 63 (the jar's and capeval's lines are identical); its
#: fragmentation is 45/47, where the JVM's Math.pow (HotSpot's x86_64 intrinsic) and the C
#: library's pow(x, 0.2) differ by one ulp: the generated table has the JVM's value
#: (docs/METRICS.md, "The last bit: Math.pow").
ROW_63 = [116, 64, 21, 11, 40, 40, 7, 7] + [0] * 12 + [45, 47, 47]


def _table_hits(n: int, seed: int) -> list[tuple[int, int]]:
    """``n`` random (chunks, sum of matches) pairs whose fragmentation is in the JVM table."""
    from capeval.metrics._meteor_native._jvm_pow_table import JVM_POW, MAX_SUM

    rng = random.Random(seed)
    hits: list[tuple[int, int]] = []
    while len(hits) < n:
        total = rng.randint(2, MAX_SUM)
        chunks = rng.randint(1, total // 2)
        if chunks / (total / 2) in JVM_POW:
            hits.append((chunks, total))
    return hits


@pytest.fixture
def shipped_pow():
    """The shipped pow table active for one test (its values are those of the machine that
    generated it, so expected scores that depend on them hold on any machine)."""
    from capeval.metrics._meteor_native import powtable

    before = powtable._active
    powtable.use(powtable.SHIPPED)
    yield powtable.SHIPPED
    powtable.use(before)


def test_fragmentation_uses_the_jvms_pow(shipped_pow):
    from capeval.metrics._meteor_native._jvm_pow_table import JVM_POW
    from capeval.metrics._meteor_native.score import BETA, pow_beta, score_one

    assert 45 / 47 in JVM_POW and JVM_POW[45 / 47] != math.pow(45 / 47, BETA)
    assert pow_beta(45 / 47) == JVM_POW[45 / 47] and pow_beta(0.5) == math.pow(0.5, BETA)
    # the jar's score (tests/fuzz, seed-1 row 63)
    assert scores(np.array([ROW_63], dtype=float))[0] == score_one(ROW_63) == 0.2702722669478631
    core = _compiled_or_skip()
    assert core.score_one(ROW_63) == 0.2702722669478631


def test_compiled_score_equals_python_on_table_hits():
    # Rows whose fragmentation is a table key (the C core's binary search against the Python
    # twin's dict), and rows just beside one (no hit in either)
    from capeval.metrics._meteor_native._jvm_pow_table import JVM_POW
    from capeval.metrics._meteor_native.score import score_one

    core = _compiled_or_skip()
    rng = random.Random(31)
    rows = []
    for chunks, total in _table_hits(300, 37):
        for c in (chunks, chunks + 1 if chunks < total // 2 else chunks - 1):
            if c < 1:
                continue
            t_words = rng.randint(max(c, total - total // 2), total - c)  # each side >= chunks
            r_words = total - t_words
            row = [t_words + 3, r_words + 2, 1, 1, t_words - 1, r_words - 1, 1, 1] + [0] * 12
            rows.append(row + [c, t_words, r_words])
    hits = 0
    for row in rows:
        want = score_one(row)
        hits += row[20] / ((row[21] + row[22]) / 2) in JVM_POW
        assert core.score_one(row) == want
    assert hits == 300
    assert scores(np.array(rows, dtype=float)).tolist() == [score_one(r) for r in rows]


def test_the_shipped_table_is_within_two_ulps_of_the_c_librarys_pow():
    # What holds on any machine: the shipped values are one machine's JVM, whose Math.pow and
    # this machine's C library each lie within about an ulp of the true power.
    from capeval.metrics._meteor_native._jvm_pow_table import JVM_POW
    from capeval.metrics._meteor_native.score import BETA

    assert len(JVM_POW) > 100
    assert all(abs(y - math.pow(x, BETA)) <= 2 * math.ulp(y) for x, y in JVM_POW.items())


@pytest.mark.oracle
@pytest.mark.java
def test_the_local_pow_table_is_this_jvms(java, tmp_path, monkeypatch):
    # A fresh JVM's Math.pow (the fuzz's program, not powtable's) on a sample of the local
    # table's keys (the JVM's values) and of other fragmentations in its domain (the C
    # library's values): both computed on this machine, so == holds on any CPU.
    from capeval.metrics._meteor_native import powtable
    from capeval.metrics._meteor_native._jvm_pow_table import MAX_SUM
    from capeval.metrics._meteor_native.score import BETA
    from tests.fuzz.jar_diff import jvm_pow

    monkeypatch.setenv("CAPEVAL_CACHE", str(tmp_path))
    monkeypatch.setattr(powtable, "_local", {})
    table = powtable.local(java)
    if table is None:
        pytest.skip("this Java cannot run a source file (a JRE, or Java 8): the shipped table is used")
    assert table.label.startswith("jvm-local-") and len(table.label) == len("jvm-local-") + 8
    rng = random.Random(41)
    keys = rng.sample(sorted(table.values), min(200, len(table.values)))
    others = []
    while len(others) < 2000:
        total = rng.randint(2, MAX_SUM)
        x = rng.randint(1, total // 2) / (total / 2)
        if x not in table.values:
            others.append(x)
    powers = jvm_pow(keys + others)
    assert powers is not None
    assert all(powers[x] == table.values[x] != math.pow(x, BETA) for x in keys)
    assert all(powers[x] == math.pow(x, BETA) for x in others)
    # cached once: a new process (an empty memo) reads the entry back, the same table
    entries = list((tmp_path / "meteor-pow").glob("*/*.json"))
    assert len(entries) == 1
    monkeypatch.setattr(powtable, "_local", {})
    monkeypatch.setattr(powtable, "compute_local", lambda java: pytest.fail("computed again"))
    assert powtable.local(java) == table


def test_a_damaged_pow_cache_entry_is_dropped_and_recomputed(tmp_path, monkeypatch):
    from capeval.metrics._meteor_native import powtable

    made = powtable.PowTable("jvm-local-0123abcd", {0.5: 0.8705505632961241})
    entry = {"format": powtable.FORMAT, "java": "x", "max_sum": powtable.MAX_SUM, "beta": powtable._bits(0.2),
             "digest": "0123abcd" + "0" * 56, "x": [powtable._bits(0.5)], "y": [powtable._bits(0.8705505632961241)]}
    calls = []
    monkeypatch.setenv("CAPEVAL_CACHE", str(tmp_path))
    monkeypatch.setattr(powtable, "_local", {})
    monkeypatch.setattr(powtable, "compute_local", lambda java: calls.append(java) or (made, entry))
    java = tmp_path / "java"
    java.write_text("")
    assert powtable.local(str(java)) == made and len(calls) == 1
    (path,) = (tmp_path / "meteor-pow").glob("*/*.json")
    path.write_text(path.read_text().replace("0123abcd", "99999999"))  # edited: its name's digest fails
    monkeypatch.setattr(powtable, "_local", {})
    assert powtable.local(str(java)) == made and len(calls) == 2
    monkeypatch.setattr(powtable, "_local", {})
    assert powtable.local(str(java)) == made and len(calls) == 2  # the rewritten entry is read


@pytest.mark.parametrize("content", [b"[]", b'{"format": 1}', b"\xff\xfe", b"{" * 5000,
                                     b'{"format": 1, "max_sum": 2048, "beta": "3fc999999999999a", "digest": "ab", '
                                     b'"x": ["zz"], "y": ["3ff0000000000000"]}'])
def test_a_hostile_pow_cache_entry_is_dropped_not_trusted(tmp_path, monkeypatch, content):
    # An entry whose name matches its bytes (so the digest check passes) but whose content is
    # not a pow table: refused, deleted, computed again; nothing of it is used.
    from capeval.guards import cache_entry_name
    from capeval.metrics._meteor_native import powtable

    made = powtable.PowTable("jvm-local-0123abcd", {})
    entry = {"format": powtable.FORMAT, "java": "x", "max_sum": powtable.MAX_SUM, "beta": powtable._bits(0.2),
             "digest": "0123abcd" + "0" * 56, "x": [], "y": []}
    calls = []
    monkeypatch.setenv("CAPEVAL_CACHE", str(tmp_path))
    monkeypatch.setattr(powtable, "_local", {})
    monkeypatch.setattr(powtable, "compute_local", lambda java: calls.append(java) or (made, entry))
    java = tmp_path / "java"
    java.write_text("")
    d = powtable._cache_dir(powtable._jvm_identity(str(java)))
    d.mkdir(parents=True)
    bad = d / cache_entry_name(content, ".json")
    bad.write_bytes(content)
    assert powtable.local(str(java)) == made and len(calls) == 1
    assert not bad.exists()


def test_the_signature_names_the_pow_table(monkeypatch, tmp_path):
    from capeval.metrics._meteor_native import powtable

    _resources_or_skip()
    before = powtable._active
    try:
        monkeypatch.setenv("CAPEVAL_METEOR_POW", "shipped")
        powtable.use(None)
        res = capeval.score(["a dog runs"], [["a dog is running"]], metrics=["meteor"])
        assert "|pow:shipped|" in res.signatures["meteor"]
        monkeypatch.setenv("CAPEVAL_METEOR_POW", "auto")
        monkeypatch.setenv("PATH", str(tmp_path))  # no Java: the shipped table
        monkeypatch.delenv("CAPEVAL_JAVA", raising=False)
        powtable.use(None)
        assert powtable.active() is powtable.SHIPPED
        monkeypatch.setenv("CAPEVAL_METEOR_POW", "mine")
        powtable.use(None)
        with pytest.raises(InputError, match="CAPEVAL_METEOR_POW must be one of auto, shipped"):
            powtable.active()
    finally:
        powtable.use(before)


def test_the_compiled_score_takes_the_active_table():
    # A table whose value for 45/47 is another double: the compiled score_one follows it as the
    # Python twin does, and goes back with the shipped table.
    from capeval.metrics._meteor_native import powtable
    from capeval.metrics._meteor_native.score import score_one

    core = _compiled_or_skip()
    before = powtable._active
    other = powtable.PowTable("test", {**powtable.SHIPPED.values, 45 / 47: 0.99})
    try:
        powtable.use(other)
        changed = score_one(ROW_63)
        assert core.score_one(ROW_63) == changed
        powtable.use(powtable.SHIPPED)
        assert core.score_one(ROW_63) == score_one(ROW_63) != changed
    finally:
        powtable.use(before)


@pytest.mark.oracle
@pytest.mark.java
def test_the_jar_scores_row_63_as_capeval(java):
    from capeval.metrics._meteor_native.score import score_one

    pytest.importorskip("pycocoevalcap")
    from pycocoevalcap.meteor.meteor import Meteor

    m = Meteor()
    try:
        m.meteor_p.stdin.write(("EVAL ||| " + " ".join(f"{x:.1f}" for x in ROW_63) + "\n").encode())
        m.meteor_p.stdin.flush()
        jar = float(m.meteor_p.stdout.readline().strip())
    finally:
        del m
    assert jar == score_one(ROW_63)


def test_compiled_phrase_lookups_equal_python():
    core = _compiled_or_skip()
    rng = random.Random(19)
    vocab = 5
    for _ in range(500):
        phrases = {tuple(rng.randrange(vocab) for _ in range(rng.randint(1, 4))) for _ in range(rng.randint(0, 12))}
        keys = {p: k for k, p in enumerate(sorted(phrases))}
        bigrams = {a * vocab + b for p in keys for a, b in zip(p, p[1:])}
        ids = [rng.randrange(-1, vocab) for _ in range(rng.randint(0, 14))]
        longest = max((len(p) for p in keys), default=0)
        want = reference_phrases(ids, keys, bigrams, vocab, longest)
        assert core.reference_phrases(ids, keys, bigrams, vocab, longest) == want
        unigrams = {k[0] for k in keys if len(k) == 1}
        codes = np.array(sorted(bigrams), dtype=np.int64).tobytes()
        assert core.reference_phrases(ids, keys, bigrams, vocab, longest, unigrams, codes) == want
        wanted_prefixes, longest = prefixes(phrases)
        assert core.positions(ids, phrases, wanted_prefixes, longest) == \
            positions(ids, phrases, wanted_prefixes, longest)


def test_compiled_and_python_paths_give_the_same_statistics(monkeypatch):
    # The whole native pipeline with and without the compiled core, == per unit.
    _resources_or_skip()
    core = _compiled_or_skip()
    from capeval.metrics._meteor_native import NativeMeteor, align, compiled

    rng = random.Random(23)
    words = ("a an the dog dogs man men woman runs running run sits sitting on grass field red ball two kids "
             "child children is are playing plays with in at of big small street car cars black white "
             "standing stand near next to young boy girl riding bike bicycle water jumping jumps").split()
    hyps = [" ".join(rng.choice(words) for _ in range(rng.randint(0, 14))) for _ in range(400)]
    refs = [[" ".join(rng.choice(words) for _ in range(rng.randint(1, 14))) for _ in range(rng.randint(1, 5))]
            for _ in hyps]
    # identical lines, and lines longer than 64 words (synonyms found without the synset table)
    hyps += ["a dog runs", "a dog runs on the grass", " ".join(words), " ".join(words * 2)]
    refs += [["a dog runs"], ["a dog runs on the grass", "the dog is running"], [" ".join(reversed(words))],
             [" ".join(words[::-1] * 2), " ".join(words[:20])]]
    monkeypatch.setattr(compiled, "core", None)
    python = NativeMeteor()
    want = python.unit_stats(hyps, refs)
    _, _, lines = python.lines(hyps, refs)
    want_bounds = [align.pair_bound(lines[h], lines[r])[0] for h in list(lines)[:60] for r in lines]
    monkeypatch.setattr(compiled, "core", core)
    native = NativeMeteor()
    got = native.unit_stats(hyps, refs)
    assert got.tolist() == want.tolist()
    # lines built for the compiled core find their n-grams only when asked, the same ones
    _, _, compiled_lines = native.lines(hyps, refs)
    assert [compiled_lines[k].ngrams for k in lines] == [x.ngrams for x in lines.values()]
    # the paraphrase matches the compiled core finds, and the bounds too (though only their
    # order against a unit's best score matters)
    pairs = [(lines[h], lines[r]) for h in list(lines)[:60] for r in lines]
    assert [core.paraphrase_matches(a.packed(core), b.packed(core), align.para_spec(a, b)) for a, b in pairs] == \
        [align.paraphrase_matches(a, b) for a, b in pairs]
    assert sum(map(len, (align.paraphrase_matches(a, b) for a, b in pairs))) > 100
    assert [align.pair_bound(lines[h], lines[r])[0] for h in list(lines)[:60] for r in lines] == want_bounds


def test_score_upper_bound_holds_and_skipping_keeps_the_best():
    # Every pair's score is at most its bound, and the units' statistics (pairs below their
    # unit's best not aligned) equal those of aligning every pair and taking the jar's
    # choice (the first reference with the highest score).
    _resources_or_skip()
    from capeval.metrics._meteor_native import NativeMeteor, align
    rng = random.Random(3)
    words = ("a dog man woman runs running run sits on the grass field red ball two three kids child "
             "is are playing plays with in at of big small street car cars").split()
    hyps = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 9))) for _ in range(200)]
    refs = [[" ".join(rng.choice(words) for _ in range(rng.randint(1, 9))) for _ in range(rng.randint(1, 5))]
            for _ in hyps]
    native = NativeMeteor()
    got = native.unit_stats(hyps, refs)
    hyp_w, ref_w, lines = native.lines(hyps, refs)
    skipped_somewhere = False
    for u, (hw, rws) in enumerate(zip(hyp_w, ref_w)):
        l1 = lines[hw]
        stats = [align.align_stats(l1, lines[rw]) for rw in rws]
        sc = scores(np.array(stats, dtype=float))
        for rw, s in zip(rws, sc):
            l2 = lines[rw]
            bound = align.pair_bound(l1, l2)[0]
            assert s <= bound + 1e-12
            skipped_somewhere |= bound < sc.max()
        assert tuple(got[u]) == tuple(stats[int(np.argmax(sc))])
    assert skipped_somewhere


def test_plain_lines_skip_the_normaliser_unchanged():
    from capeval.metrics._meteor_native.java import tokens, trim
    from capeval.metrics._meteor_native.normalize import line_words, normalize_lower

    rng = random.Random(5)
    pieces = list("abz09 ") + ["  ", "dotmulti", "mr", "u s"]
    nbp = {"mr": 1, "no": 2}
    for _ in range(3000):
        line = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        assert line_words(line, nbp) == tokens(normalize_lower(trim(line), nbp))
    assert line_words("Mr. X", nbp) == tokens(normalize_lower("Mr. X", nbp))  # not plain: the rules run


def _write_table(path, entries, tail="\n"):
    import gzip

    with gzip.open(path, "wb") as f:
        f.write(("\n".join(f"{p}\n{r}\n{q}" for p, r, q in entries) + tail).encode("utf-8", "surrogateescape"))


@pytest.mark.parametrize("case", ["plain", "no final newline", "empty phrase", "non-ascii", "tab", "double space",
                                  "carriage return", "invalid utf-8"])
def test_paraphrase_conversion_on_bytes_equals_line_by_line(tmp_path, case):
    from capeval.metrics._meteor_native import convert as R
    from capeval.metrics._meteor_native import convert_arrow

    entries = [("0.5", "a dog", "the dog"), ("0.25", "a dog", "one dog"), ("0.1", "runs", "is running"),
               ("0.2", "the dog", "a dog"), ("0.3", "big car", "large automobile")]
    tail = "\n"
    if case == "no final newline":
        tail = ""
    elif case == "empty phrase":
        entries.append(("0.1", "runs", ""))
    elif case == "non-ascii":
        entries.append(("0.1", "café noir", "naïve ☕ \U0001F600"))
    elif case == "tab":
        entries.append(("0.1", "a\tb", "c"))
    elif case == "double space":
        entries.append(("0.1", "a  b", " c"))
    elif case == "carriage return":
        entries.append(("0.1", "a b\r", "c"))
    elif case == "invalid utf-8":
        entries.append(("0.1", "a \udcff b", "c"))
    table = tmp_path / "t.gz"
    _write_table(table, entries, tail)
    want, got = tmp_path / "want", tmp_path / "got"
    want.mkdir()
    got.mkdir()
    R._convert_paraphrase_text(table, want)
    R._convert_paraphrase(table, got)
    for f in sorted(want.iterdir()):
        assert (got / f.name).read_bytes() == f.read_bytes(), f.name
    fast = [R._convert_paraphrase_plain]
    if convert_arrow.available():
        fast.append(lambda t, o: convert_arrow.convert_paraphrase(t, o, R._NotPlain))
    for k, convert_fast in enumerate(fast):
        if case in ("plain", "no final newline", "empty phrase", "non-ascii"):
            out = tmp_path / f"fast{k}"  # the fast paths themselves accept these, and agree
            out.mkdir()
            convert_fast(table, out)
            for f in sorted(want.iterdir()):
                assert (out / f.name).read_bytes() == f.read_bytes(), (k, f.name)
        else:
            with pytest.raises(R._NotPlain):
                convert_fast(table, tmp_path)


def test_native_is_the_default_and_needs_no_java(monkeypatch, tmp_path):
    _resources_or_skip()
    assert DEFAULT_BACKEND == "native"
    monkeypatch.setenv("PATH", str(tmp_path))  # no java anywhere
    monkeypatch.delenv("CAPEVAL_JAVA", raising=False)
    res = capeval.score(["a dog runs on the grass", "two cats"], [["a dog is running on grass"], ["two cats sleep"]],
                        metrics=["meteor"])
    assert 0 < res.corpus["meteor"] < 1
    assert "backend:native" in res.signatures["meteor"]
    assert "eval_id:meteor-1.5-wo-en-norm-0.85_0.2_0.6_0.75-ex_st_sy_pa-1.0_0.6_0.8_0.6" in res.signatures["meteor"]


def test_native_refuses_the_separator_in_references():
    _resources_or_skip()
    with pytest.raises(InputError, match="item 1"):
        Meteor(backend="native").compute(["a", "b"], [["x"], ["y ||| z"]])


def test_unknown_backend():
    with pytest.raises(ValueError, match="backend"):
        Meteor(backend="cuda")


# ----------------------------------------------------------------------------------------
# Against the jar
# ----------------------------------------------------------------------------------------
def _jar_main(java, jar, args, lines):
    out = subprocess.run(
        [java, "-Dfile.encoding=UTF-8", "-cp", str(jar), *args],
        input="\n".join(lines) + "\n", capture_output=True, text=True, encoding="utf-8", timeout=600, check=True,
    ).stdout
    return out.split("\n")[: len(lines)]


@pytest.mark.java
@pytest.mark.oracle
def test_stemmer_equals_the_jars_on_wordnet(java):
    res = _resources_or_skip()
    from capeval.metrics._meteor_native.resources import locate

    jar, _ = locate()
    # every WordNet word form the jar knows (ASCII), a single word per line
    words = sorted(w for w in res.synsets._index if w.isascii() and w.strip() and " " not in w
                   and not all(c.isdigit() or c in ",.-" for c in w))
    got = _jar_main(java, jar, ["Stemmer", "en"], words)
    bad = [(w, j, stem(w)) for w, j in zip(words, got) if stem(w) != j]
    assert len(got) == len(words) and bad == []


@pytest.mark.java
@pytest.mark.oracle
def test_normaliser_equals_the_jars(java):
    res = _resources_or_skip()
    from capeval.metrics._meteor_native.normalize import normalize
    from capeval.metrics._meteor_native.resources import locate

    jar, _ = locate()
    rng = random.Random(7)
    pieces = list("abcXYZ019 .,'`-\u2013\u2018\u2019\u201c\u201d\"!?;:()&$%#@/\\|é\u00a0\u3000\t") + [
        "...", "..", "--", "U.S.", "Mr.", "No.", "Nos.", "e.g.", "i.e.", "DOTMULTI", "''", "1,000", "it's",
        "90's", "rock'n'roll", " A.", " b", " 5", "Inc.", "\U0001F600"]
    lines = ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 25))) for _ in range(3000)]
    got = _jar_main(java, jar, ["edu.cmu.meteor.util.Normalizer", "en", "true"], lines)
    bad = [(x, y, normalize(x, res.nonbreaking)) for x, y in zip(lines, got) if normalize(x, res.nonbreaking) != y]
    assert bad == []


@pytest.fixture(scope="module")
def jar_meteor(java):
    pytest.importorskip("pycocoevalcap")
    m = Meteor(backend="jar", workers=1)
    yield m
    m.close()


def _assert_same(jar_meteor, cands, refs):
    want = jar_meteor.compute(cands, refs)
    native = Meteor(backend="native")
    got = native.compute(cands, refs)
    np.testing.assert_array_equal(got.per_caption["meteor"], want.per_caption["meteor"])
    assert got.corpus["meteor"] == want.corpus["meteor"]
    assert got.details["stats"] == want.details["stats"]
    # EVAL alone: the native score of the jar's own statistics lines
    per, corpus = native.evaluate(want.details["stats"])
    np.testing.assert_array_equal(per, want.per_caption["meteor"])
    assert corpus == want.corpus["meteor"]
    return got


@pytest.mark.java
@pytest.mark.oracle
@pytest.mark.slow
def test_tricky_inputs_equal_the_jar(jar_meteor):
    cands = [
        "this is a good test", "a man is speaking", "rain falls",
        "a café   with  ||| naïve  people", "   leading spaces", "a dog", "", "|||", "a dog a dog a dog",
        "The U.S. Army's dogs -- running... fast, aren't they?", "Mr. Smith's 1,000 cats' toys",
        "two men are playing football in a field", "a red car parked near the red house",
        "children play outside", "a woman holding an umbrella in the rain", "STOP sign", "x" * 40,
    ]
    refs = [
        ["this is a test", "this is also a test"], ["a man speaks", "someone speaks"], ["rain is falling hard"],
        ["a cafe with naive people", "un café"], ["leading spaces here"], ["a dog", "a dog"], ["x"], ["y z"],
        ["a dog"], ["the us army dogs run fast , are not they ?"], ["mr smith has a thousand cats"],
        ["two guys play soccer on a pitch", "men playing a football game"], ["a red house with a red car near it"],
        ["kids are playing outdoors"], ["a lady with an umbrella under rain"], ["a stop sign"], ["x"],
    ]
    _assert_same(jar_meteor, cands, refs)
    # repeated rows and a perfect one-chunk match exercise the aggregate's chunk rule
    _assert_same(jar_meteor, ["a dog runs", "a dog runs", "runs dog a", "a dog"] * 3,
                 [["a dog runs"], ["a dog runs"], ["a dog runs"], ["a dog runs fast"]] * 3)


def _benchmark_sets(data_dir):
    out = {}
    for name in ("flickr8k-expert", "flickr8k-cf", "composite", "tanti-human200"):
        t = capeval.data.load(name, data_dir)
        out[name] = (t.candidates, t.references)
    for name in ("pascal50s", "abstract50s"):
        t = capeval.data.load(name, data_dir)
        out[name] = (list(t.candidates_a) + list(t.candidates_b), list(t.references) * 2)
    for name in ("tanti-flickr8k", "tanti-flickr30k", "tanti-coco"):
        t = capeval.data.load(name, data_dir)
        c, r = [], []
        for caps in t.systems.values():
            c += caps
            r += t.references
        out[name] = (c, r)
    return out


@pytest.mark.java
@pytest.mark.oracle
@pytest.mark.data
@pytest.mark.slow
def test_benchmark_samples_equal_the_jar(jar_meteor, data_dir):
    """A spread sample of every benchmark candidate set, PTB-tokenized as ``capeval.score``
    does, and the raw (untokenized) text of two of them (exercises the normaliser)."""
    from capeval.text import tokenize_corpus

    for name, (cands, refs) in _benchmark_sets(data_dir).items():
        idx = list(range(0, len(cands), max(1, len(cands) // 150)))
        c = [cands[i] for i in idx]
        r = [list(refs[i]) for i in idx]
        tc, tr = tokenize_corpus(c, r, "ptb")
        _assert_same(jar_meteor, tc, tr)
        if name in ("flickr8k-expert", "composite"):
            _assert_same(jar_meteor, c, r)


def test_compiled_phrases_within_equals_python():
    # restricted()'s first cut, compiled and in numpy, on random tables and batches; then a
    # damaged offset, refused rather than read out of bounds
    from capeval.metrics._meteor_native.resources import _phrases_within

    core = _compiled_or_skip()
    rng = np.random.default_rng(29)
    for _ in range(200):
        # a small vocabulary: most phrases anchored at present words (the compiled core scans
        # the table); a large one: few (it checks those alone)
        vocab = int(rng.integers(1, 12)) if rng.random() < 0.5 else 300
        lengths = rng.integers(1, 5, size=int(rng.integers(0, 40 if vocab < 300 else 400)))
        tokens = rng.integers(0, vocab, size=int(lengths.sum())).astype(np.int32)
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        anchor = np.array([tokens[offsets[p] + rng.integers(0, ln)] for p, ln in enumerate(lengths)], dtype=np.int64)
        order = np.argsort(anchor, kind="stable").astype(np.int32)
        anchor_offsets = np.searchsorted(anchor[order], np.arange(vocab + 1)).astype(np.int64)
        present = np.zeros(vocab + 1, dtype=bool)
        present[rng.integers(0, vocab, size=int(rng.integers(0, min(vocab, 20) + 1)))] = True
        words = np.flatnonzero(present[:-1])
        want = _phrases_within(present, words, anchor_offsets, order, offsets, tokens)
        got = np.frombuffer(core.phrases_within(present, words, anchor_offsets, order, offsets, tokens), dtype=np.int32)
        assert got.tolist() == want.tolist()
    offsets[-1] = len(tokens) + 1
    with pytest.raises(ValueError):
        core.phrases_within(np.ones(vocab + 1, dtype=bool), np.arange(vocab), anchor_offsets, order, offsets, tokens)
    with pytest.raises(TypeError):
        core.phrases_within(present, words.astype(np.int32), anchor_offsets, order, offsets, tokens)

"""TER against sacrebleu (test-only oracle): edit counts, average reference lengths, sentence
and corpus scores. sacrebleu runs with ``case_sensitive=True`` (our default; the PTB tokenizer
has already lower-cased) and no normalisation, so both see the same ``split()`` tokens."""
from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests._budget import examples

import capeval
import capeval.data
from capeval.metrics.ter import Ter, _BeamEditDistance, edit_count

sacrebleu_ter = pytest.importorskip("sacrebleu.metrics", reason="sacrebleu (the TER oracle) not installed")

pytestmark = pytest.mark.oracle


def sb(case_sensitive=True):
    return sacrebleu_ter.TER(case_sensitive=case_sensitive)


def assert_rows_equal(cands, refs, lowercase=False):
    """Per row: our (edits, avg ref length) == sacrebleu's, and 100 × our TER == its score."""
    oracle = sb(case_sensitive=not lowercase)
    ours = Ter(lowercase=lowercase).compute(cands, refs)
    for i, (c, rs) in enumerate(zip(cands, refs)):
        want = oracle.sentence_score(c, rs)
        got = (ours.details["sentence_edits"][i], ours.details["sentence_ref_length"][i])
        assert got == (want.num_edits, want.ref_length), (i, c, rs)
        assert 100 * ours.per_caption["ter"][i] == pytest.approx(want.score, rel=1e-12, abs=1e-12), (i, c, rs)
    return ours


def levenshtein(a, b):
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, y in enumerate(b, 1):
            cur[j] = min(prev[j - 1] + (x != y), prev[j] + 1, cur[j - 1] + 1)
        prev = cur
    return prev[-1]


def test_textbook_shift():
    # One block shift plus nothing else: TER = 1 edit / 4 words.
    assert edit_count("c d a b".split(), "a b c d".split()) == 1
    out = Ter().compute(["c d a b"], [["a b c d"]])
    assert out.corpus["ter"] == 1 / 4


def test_multiple_references_min_edits_over_average_length():
    cands, refs = ["a b c"], [["a b c", "x y z w v"]]
    out = assert_rows_equal(cands, refs)
    assert out.per_caption["ter"][0] == 0 / ((3 + 5) / 2)  # best ref has 0 edits


def test_empty_hypothesis_and_reference():
    assert_rows_equal(["", "a b", ""], [["a b c"], [""], [""]])
    out = Ter().compute(["a b"], [[""]])
    assert out.corpus["ter"] == 1.0  # edits but zero reference length, as sacrebleu


def test_lowercase_option():
    cands, refs = ["The Dog runs", "A CAT"], [["the dog runs fast"], ["a cat", "A Cat sits"]]
    assert_rows_equal(cands, refs, lowercase=True)
    assert_rows_equal(cands, refs, lowercase=False)


def test_band_and_candidate_budget_corner_cases():
    # 1) The optimal Levenshtein path runs 26 cells off the diagonal, outside the 25-wide
    #    band, so the banded distance (54) exceeds the true one (52).
    common = [f"w{i}" for i in range(28)]
    band_h, band_r = " ".join(["x"] * 26 + common), " ".join(common + ["y"] * 26)
    assert _BeamEditDistance(band_r.split())(band_h.split())[0] == 54
    assert levenshtein(band_h.split(), band_r.split()) == 52
    # 2) A two-word vocabulary: the shift search stops at its 1,000-candidate budget.
    rng = random.Random(1)
    budget_h = " ".join(rng.choice("ab") for _ in range(34))
    budget_r = " ".join(rng.choice("ab") for _ in range(31))
    # 3) Very unequal lengths (band widened by the length ratio).
    long_h = " ".join(rng.choice("abcd") for _ in range(45))
    short_r = " ".join(rng.choice("abcd") for _ in range(8))
    assert_rows_equal([band_h, budget_h, long_h, short_r], [[band_r], [budget_r], [short_r], [long_h]])


words = st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), min_size=0, max_size=14).map(" ".join)


@settings(max_examples=examples(150), deadline=None)
@given(st.lists(st.tuples(words, st.lists(words, min_size=1, max_size=3)), min_size=1, max_size=4))
def test_random_small_vocabulary(rows):
    cands = [c for c, _ in rows]
    refs = [r for _, r in rows]
    assert_rows_equal(cands, refs)


def _expert_sample(data_dir, n=300, seed=0):
    table = capeval.data.load("flickr8k-expert", data_dir)  # whitespace-normalised rows, file order
    cands, refs = table.candidates, table.references
    idx = sorted(random.Random(seed).sample(range(len(cands)), n))
    return [cands[i] for i in idx], [refs[i] for i in idx]


@pytest.mark.data
def test_flickr8k_expert_sample_equals_sacrebleu(data_dir):
    raw_c, raw_r = _expert_sample(data_dir)
    cands, refs = capeval.text.tokenize_corpus(raw_c, raw_r, "ptb")
    ours = assert_rows_equal(cands, refs)
    streams = [[rs[k] for rs in refs] for k in range(5)]  # every row has 5 references
    want = sb().corpus_score(cands, streams)
    assert ours.details["edits"] == want.num_edits
    assert ours.details["ref_length"] == want.ref_length
    assert 100 * ours.corpus["ter"] == pytest.approx(want.score, rel=1e-12, abs=1e-12)
    # Through the public API (PTB tokenization by default): same numbers, signed.
    res = capeval.score(raw_c, raw_r, metrics=["ter"])
    np.testing.assert_array_equal(res.per_caption["ter"], ours.per_caption["ter"])
    assert res.signatures["ter"].startswith("ter_sacrebleu|out:ter|tok:ptb-py@")
    assert "case:mixed" in res.signatures["ter"]

"""Smoothed sentence BLEU against NLTK's ``sentence_bleu`` with ``SmoothingFunction().method2``
(test-only oracle). Identical (==) whenever the hypothesis has at least k tokens; the one
definitional difference (hypotheses shorter than n) is pinned separately."""
from __future__ import annotations

import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests._budget import examples

import capeval
import capeval.data
from capeval.metrics.bleu_smooth import BleuSmooth

bleu_score = pytest.importorskip("nltk.translate.bleu_score", reason="nltk (the oracle) not installed")

pytestmark = pytest.mark.oracle


def nltk_bleu(cand: str, refs: list[str], k: int) -> float:
    return bleu_score.sentence_bleu(
        [r.split() for r in refs], cand.split(), weights=tuple([1 / k] * k),
        smoothing_function=bleu_score.SmoothingFunction().method2,
    )


def assert_equal_to_nltk(cands, refs):
    out = BleuSmooth().compute(cands, refs)
    checked = 0
    for i, (c, rs) in enumerate(zip(cands, refs)):
        for k in range(1, 5):
            if len(c.split()) < k:
                continue  # the documented difference, tested below
            assert out.per_caption[f"bleu{k}_smooth"][i] == nltk_bleu(c, rs, k), (i, k, c, rs)
            checked += 1
    return out, checked


def test_hand_computed_unit():
    # hyp 5 tokens, closest ref 4 tokens (no brevity penalty); matches: 1-g 4/5, 2-g 2/4, 3-g 1/3, 4-g 0/2.
    out = BleuSmooth().compute(["this is a good test"], [["this is a test", "this is also a test"]])
    p = [4 / 5, (2 + 1) / (4 + 1), (1 + 1) / (3 + 1), (0 + 1) / (2 + 1)]
    expected = math.exp(math.fsum(0.25 * math.log(x) for x in p))
    assert out.per_caption["bleu4_smooth"][0] == pytest.approx(expected, rel=1e-15)
    assert out.per_caption["bleu1_smooth"][0] == 4 / 5


def test_no_unigram_match_and_empty_are_zero():
    out = BleuSmooth().compute(["x y z", ""], [["a b c"], ["a b"]])
    for k in range(1, 5):
        np.testing.assert_array_equal(out.per_caption[f"bleu{k}_smooth"], [0.0, 0.0])
    assert nltk_bleu("x y z", ["a b c"], 4) == 0


def test_short_hypothesis_definitional_difference():
    # "a dog" has no 3- or 4-grams. Add-one: p3 = p4 = (0+1)/(0+1) = 1. NLTK floors the
    # count at 1 first: p3 = p4 = (0+1)/(1+1) = 1/2, i.e. a factor 2^(-2/4) on BLEU-4.
    out = BleuSmooth().compute(["a dog"], [["a dog"]])
    assert out.per_caption["bleu4_smooth"][0] == pytest.approx(1.0, abs=1e-15)
    assert out.per_caption["bleu2_smooth"][0] == nltk_bleu("a dog", ["a dog"], 2)
    assert nltk_bleu("a dog", ["a dog"], 4) == pytest.approx(2 ** -0.5, rel=1e-15)


def test_corpus_is_mean_of_sentences():
    cands, refs = ["a b c d", "a b x y z", "q"], [["a b c d"], ["a b c d e"], ["q r"]]
    out = BleuSmooth().compute(cands, refs)
    for k in range(1, 5):
        name = f"bleu{k}_smooth"
        assert out.corpus[name] == float(np.mean(out.per_caption[name]))


words = st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=1, max_size=12).map(" ".join)


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.tuples(words, st.lists(words, min_size=1, max_size=4)), min_size=1, max_size=4))
def test_random_equal_to_nltk(rows):
    assert_equal_to_nltk([c for c, _ in rows], [r for _, r in rows])


@pytest.mark.data
def test_flickr8k_expert_sample_equals_nltk(data_dir):
    table = capeval.data.load("flickr8k-expert", data_dir)  # whitespace-normalised rows, file order
    cands, refs = table.candidates, table.references
    idx = sorted(random.Random(0).sample(range(len(cands)), 1500))
    raw_c, raw_r = [cands[i] for i in idx], [refs[i] for i in idx]
    tok_c, tok_r = capeval.text.tokenize_corpus(raw_c, raw_r, "ptb")
    out, checked = assert_equal_to_nltk(tok_c, tok_r)
    assert checked >= 4 * 1400  # nearly every caption has >= 4 tokens
    res = capeval.score(raw_c, raw_r, metrics=["bleu4_smooth", "bleu1_smooth"])
    np.testing.assert_array_equal(res.per_caption["bleu4_smooth"], out.per_caption["bleu4_smooth"])
    assert res.signatures["bleu4_smooth"].startswith("bleu_linoch2004|out:bleu4_smooth|tok:ptb-py@")

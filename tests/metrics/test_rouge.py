"""ROUGE-L (coco variant): F with beta = 1.2 over the best precision and the best recall taken
independently over the references; the bit-parallel LCS equals the dynamic-programming table."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import capeval
from capeval.metrics.rouge import RougeLCoco, lcs_length
from tests._budget import examples

from ._coco_oracle import coco_scores

WORDS = st.sampled_from(["a", "dog", "cat", "runs", "on", "the", "grass", "red", "ball", "is", "two"])


def _lcs_table(a, b):
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            table[i][j] = table[i - 1][j - 1] + 1 if a[i - 1] == b[j - 1] else max(table[i - 1][j], table[i][j - 1])
    return table[len(a)][len(b)]


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(WORDS, max_size=15), st.lists(WORDS, max_size=15))
def test_bit_parallel_lcs_equals_table(a, b):
    assert lcs_length(a, b) == _lcs_table(a, b)


def test_f_beta_over_independent_maxima():
    cand = "a dog runs on the grass"
    refs = ["a dog is running on the green grass", "the dog runs"]
    c = cand.split()
    p = max(_lcs_table(c, r.split()) / len(c) for r in refs)
    r = max(_lcs_table(c, r.split()) / len(r.split()) for r in refs)
    beta = 1.2
    want = (1 + beta ** 2) * p * r / (r + beta ** 2 * p)
    got = RougeLCoco().compute([cand], [refs]).per_caption["rouge_l"][0]
    assert got == pytest.approx(want, rel=1e-12)


def test_equals_pycocoevalcap_and_corpus_is_the_mean():
    cands = ["a dog runs on the grass", "two dogs", "a red ball in the water"]
    refs = [["a dog is running on grass"], ["two dogs play", "dogs playing in snow"], ["a ball in water", "red ball"]]
    ours = RougeLCoco().compute(cands, refs)
    ref = coco_scores(cands, refs)["rouge_l"]
    assert ours.corpus["rouge_l"] == ref[0]
    np.testing.assert_array_equal(ours.per_caption["rouge_l"], ref[1])
    assert ours.corpus["rouge_l"] == float(np.mean(ours.per_caption["rouge_l"]))


def test_no_common_word_scores_zero_and_signature():
    res = capeval.score(["airplane over mountains", "a dog"], [["a dog on a sofa"], ["a dog"]], ["rouge_l"])
    assert res.per_caption["rouge_l"].tolist()[0] == 0.0 and res.per_caption["rouge_l"][1] == 1.0
    assert res.signatures["rouge_l"].startswith("rouge_l_coco|out:rouge_l|")

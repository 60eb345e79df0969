"""CIDEr-D (``cider_d``, coco variant) and the original CIDEr (``cider``).

- CIDEr-D equals pycocoevalcap per caption and corpus (==), including its squares: the
  reference squares each tf-idf value with ``pow(v, 2)`` (libm's pow), which is not always
  ``v * v``; with ``v * v`` 87 of 100,000 synthetic captions differed in the last bit.
- The original CIDEr is the plain tf-idf cosine of Vedantam et al. (no clipping, no length
  penalty), checked against a from-the-formula implementation.

Oracle checks over random corpora shared with BLEU and ROUGE-L are in test_ngram_oracles.py; the
saved df file format is in test_cider_df.py.
"""
from __future__ import annotations

import math
from collections import Counter, defaultdict

import numpy as np
import pytest

import capeval
from capeval.metrics.cider import CiderD, CiderOriginal, DocumentFrequency

from ._coco_oracle import CANDS, REFS, coco_scores


# ---- CIDEr-D against pycocoevalcap ------------------------------------------------------------


def test_cider_d_equals_pycocoevalcap():
    ours = CiderD().compute(CANDS, REFS)
    corpus, per_caption = coco_scores(CANDS, REFS)["cider_d"]
    assert ours.corpus["cider_d"] == corpus
    np.testing.assert_array_equal(ours.per_caption["cider_d"], per_caption)


def test_cider_d_signature_names_the_df_and_sigma():
    sig = capeval.score(CANDS, REFS, ["cider_d"]).signatures["cider_d"]
    assert sig.startswith("cider_d_coco|out:cider_d|")
    assert f"df:corpus:{len(CANDS)}" in sig and "sigma:6.0" in sig and "nrefs:var" in sig  # 1 to 3 references per item


# The case below was found by a random search and fails with v * v.
SQUARES_DF = {"the": 2957.0, "bike near red": 553.0, "cats": 2349.0, "near red": 161.0, "red the cats": 2785.0,
              "near red the": 2235.0, "near near": 189.0, "near red the cats": 1739.0, "the near": 2893.0,
              "bike near red the": 697.0, "near": 416.0, "red": 2456.0, "the cats": 2535.0, "red the": 531.0,
              "bike near": 360.0, "bike": 1151.0}
SQUARES_UNITS = 100_000


def _pycocoevalcap_with_df(cands, refs, df, n_units):
    """pycocoevalcap's CiderScorer with a given df and rho = ln(n_units) (its own code computes
    rho from the number of scored units, read here through a list whose len() is n_units)."""
    cider_scorer = pytest.importorskip("pycocoevalcap.cider.cider_scorer")

    class _Units(list):
        def __len__(self):
            return n_units

    cs = cider_scorer.CiderScorer(n=4, sigma=6.0)
    for c, r in zip(cands, refs):
        cs += (c, r)
    cs.document_frequency = defaultdict(float, {tuple(g.split()): v for g, v in df.items()})
    cs.crefs = _Units(cs.crefs)
    return [float(x) for x in cs.compute_cider()]


def test_cider_d_squares_are_libm_pow_like_the_reference():
    cands, refs = ["near near"], [["bike near red the cats", "the near"]]
    df = DocumentFrequency(SQUARES_DF, SQUARES_UNITS, "test")
    ours = CiderD(df=df).compute(cands, refs).per_caption["cider_d"]
    assert ours.tolist() == _pycocoevalcap_with_df(cands, refs, SQUARES_DF, SQUARES_UNITS)


# ---- the original CIDEr -------------------------------------------------------------------------

# Candidates repeat words, so CIDEr-D's clipping (min(vh, vr)) or its penalty would change every score.
REPEAT_CANDS = ["a dog dog dog runs on the grass", "the man the man rides a red red bike",
                "two cats sleep", "a a a a boat"]
REPEAT_REFS = [["a dog runs on the grass", "a brown dog is running"],
               ["a man rides a red bike", "the man is riding a bicycle", "someone cycles"],
               ["two cats are sleeping on a sofa"],
               ["a boat on the lake", "a small boat"]]


def _grams(words, n):
    return Counter(tuple(words[i:i + n]) for i in range(len(words) - n + 1))


def _original_cider(cands, refs):
    """Vedantam et al. 2015, eq. 1-2: v(g) = count(g) * (ln N - ln max(1, df(g))),
    CIDEr_n = mean over refs of cos(v_cand, v_ref), CIDEr = 10 * mean over n = 1..4."""
    n_units = len(cands)
    df = [Counter() for _ in range(4)]
    for rs in refs:
        for n in range(4):
            df[n].update(set().union(*(_grams(r.split(), n + 1) for r in rs)))
    rho = math.log(n_units)

    def vec(text, n):
        return {g: c * (rho - math.log(max(1.0, df[n][g]))) for g, c in _grams(text.split(), n + 1).items()}

    out = []
    for cand, rs in zip(cands, refs):
        per_n = []
        for n in range(4):
            vh = vec(cand, n)
            sims = []
            for r in rs:
                vr = vec(r, n)
                dot = sum(v * vr.get(g, 0.0) for g, v in vh.items())
                nh = math.sqrt(sum(v * v for v in vh.values()))
                nr = math.sqrt(sum(v * v for v in vr.values()))
                sims.append(dot / (nh * nr) if nh and nr else 0.0)
            per_n.append(sum(sims) / len(rs))
        out.append(10.0 * sum(per_n) / 4)
    return np.array(out)


def test_original_cider_is_the_plain_tfidf_cosine():
    got = CiderOriginal().compute(REPEAT_CANDS, REPEAT_REFS).per_caption["cider"]
    np.testing.assert_allclose(got, _original_cider(REPEAT_CANDS, REPEAT_REFS), rtol=1e-12, atol=1e-15)


def test_original_cider_is_invariant_to_scaling_a_unigram_candidate():
    # One-word captions: only unigrams, and "dog dog" has a vector parallel to "dog"'s, so the
    # cosine (original CIDEr) is unchanged while clipping (CIDEr-D) would halve the term.
    cands, refs = ["dog", "cat"], [["dog"], ["cat"]]
    twice = ["dog dog", "cat"]
    a = CiderOriginal().compute(cands, refs).per_caption["cider"]
    b = CiderOriginal().compute(twice, refs).per_caption["cider"]
    assert a[0] == b[0]
    d = CiderD().compute(twice, refs).per_caption["cider_d"]
    assert d[0] < b[0]

"""The original CIDEr (``cider``) against a from-the-formula implementation: plain tf-idf
cosine, no clipping, no length penalty. Candidates repeat words, so CIDEr-D's clipping
(min(vh, vr)) or its penalty would change every score."""
from __future__ import annotations

import math
from collections import Counter

import numpy as np

from capeval.metrics.cider import CiderD, CiderOriginal

CANDS = ["a dog dog dog runs on the grass", "the man the man rides a red red bike",
         "two cats sleep", "a a a a boat"]
REFS = [["a dog runs on the grass", "a brown dog is running"],
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
    got = CiderOriginal().compute(CANDS, REFS).per_caption["cider"]
    np.testing.assert_allclose(got, _original_cider(CANDS, REFS), rtol=1e-12, atol=1e-15)


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

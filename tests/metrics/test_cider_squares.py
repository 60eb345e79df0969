"""CIDEr-D norms square each tf-idf value as the reference does, with ``pow(v, 2)`` (libm's pow),
which is not always ``v * v``: with ``v * v`` 87 of 100,000 synthetic captions differed from
pycocoevalcap in the last bit. The case below was found by a random search and fails with v * v."""
from __future__ import annotations

from collections import defaultdict

import pytest

from capeval.metrics.cider import CiderD, DocumentFrequency

DF = {"the": 2957.0, "bike near red": 553.0, "cats": 2349.0, "near red": 161.0, "red the cats": 2785.0,
      "near red the": 2235.0, "near near": 189.0, "near red the cats": 1739.0, "the near": 2893.0,
      "bike near red the": 697.0, "near": 416.0, "red": 2456.0, "the cats": 2535.0, "red the": 531.0,
      "bike near": 360.0, "bike": 1151.0}
N_UNITS = 100_000


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


def test_squares_are_libm_pow_like_the_reference():
    cands, refs = ["near near"], [["bike near red the cats", "the near"]]
    ours = CiderD(df=DocumentFrequency(DF, N_UNITS, "test")).compute(cands, refs).per_caption["cider_d"]
    assert ours.tolist() == _pycocoevalcap_with_df(cands, refs, DF, N_UNITS)

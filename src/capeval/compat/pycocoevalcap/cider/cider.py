"""pycocoevalcap's ``Cider`` (CIDEr-D): capeval's ``cider_d`` family (:class:`capeval.metrics.cider.CiderD`),
df from the scored references."""
from __future__ import annotations

import numpy as np

from ....errors import InputError
from ....metrics.cider import CiderD
from .._inputs import SPLIT_WHITESPACE, paired


class Cider:
    """CIDEr-D with document frequencies from the scored set (pycocoevalcap calls it "CIDEr")."""

    def __init__(self, test=None, refs=None, n=4, sigma=6.0):
        if n != 4:
            raise InputError(f"Cider(n={n!r}): capeval computes CIDEr-D over 1- to 4-grams; n must be 4")
        self._n = n
        self._sigma = sigma

    def compute_score(self, gts, res):
        """``(mean CIDEr-D, array of per-image CIDEr-D)`` in ``gts``' key order."""
        _ids, cands, refs = paired(gts, res, "Cider", harmless=SPLIT_WHITESPACE)
        if len(cands) == 1:
            # ln(1 image) = 0 weights every n-gram by 0: the original returns 0 here; capeval's
            # family refuses a one-unit corpus rather than report it.
            scores = np.zeros(1, dtype=np.float64)
            return np.mean(scores), scores
        out = CiderD(sigma=self._sigma).compute(cands, refs)
        scores = np.asarray(out.per_caption["cider_d"], dtype=np.float64)
        return np.float64(out.corpus["cider_d"]), scores

    def method(self):
        return "CIDEr"

"""pycocoevalcap's ``Rouge``: ROUGE-L of capeval's ``rouge`` family (:class:`capeval.metrics.rouge.RougeLCoco`)."""
from __future__ import annotations

import numpy as np

from ....errors import InputError
from ....metrics.rouge import RougeLCoco, lcs_length, rouge_l_unit
from .._inputs import paired, read_breaks_as_spaces


def my_lcs(string, sub):
    """Length of the longest common subsequence of two token lists."""
    return lcs_length(list(string), list(sub))


class Rouge:
    """ROUGE-L F (beta 1.2), best precision and best recall over the references."""

    def __init__(self):
        self.beta = 1.2

    def calc_score(self, candidate, refs):
        """ROUGE-L of ``candidate`` (a list holding one caption) against the list ``refs``."""
        if not isinstance(candidate, list) or len(candidate) != 1 or not isinstance(candidate[0], str):
            raise InputError(f"Rouge.calc_score: candidate must be a list holding one caption, got {candidate!r:.80}")
        if not isinstance(refs, list) or not refs or not all(isinstance(r, str) for r in refs):
            raise InputError(f"Rouge.calc_score: refs must be a non-empty list of captions, got {refs!r:.80}")
        cand = read_breaks_as_spaces(candidate, "Rouge")[0]
        return rouge_l_unit(cand, read_breaks_as_spaces(refs, "Rouge"), self.beta)

    def compute_score(self, gts, res):
        """``(mean ROUGE-L, array of per-image ROUGE-L)`` in ``gts``' key order."""
        _ids, cands, refs = paired(gts, res, "Rouge")
        out = RougeLCoco(beta=self.beta).compute(cands, refs)
        scores = np.asarray(out.per_caption["rouge_l"], dtype=np.float64)
        return np.float64(out.corpus["rouge_l"]), scores

    def method(self):
        return "Rouge"

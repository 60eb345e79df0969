"""pycocoevalcap's ``Bleu``: BLEU-1..n of capeval's ``bleu`` family (:class:`capeval.metrics.bleu.BleuCoco`),
with the original's verbose printing."""
from __future__ import annotations

from ....errors import InputError
from ....metrics.bleu import SMALL, TINY, BleuCoco, closest_reflen, unit_statistics
from ....metrics._ngrams import index_for
from ....dedup import dedupe
from .._inputs import SPLIT_WHITESPACE, paired


class Bleu:
    """BLEU-1..n (n <= 4), "closest" reference length, as pycocoevalcap computes it."""

    def __init__(self, n=4):
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 4:
            raise InputError(f"Bleu(n={n!r}): capeval computes BLEU orders 1 to 4; n must be 1, 2, 3 or 4")
        self._n = n
        self._hypo_for_image = {}
        self.ref_for_image = {}

    def compute_score(self, gts, res, verbose=1):
        """``([BLEU-1..n corpus], [[per image] for each order])``; prints the corpus statistics
        and length ratio when ``verbose`` > 0, and each image's statistics when > 1."""
        _ids, cands, refs = paired(gts, res, "Bleu", harmless=SPLIT_WHITESPACE)
        out = BleuCoco().compute(cands, refs)
        n = self._n
        score = [float(out.corpus[f"bleu{k}"]) for k in range(1, n + 1)]
        scores = [out.per_caption[f"bleu{k}"].tolist() for k in range(1, n + 1)]
        if verbose > 1:
            self._print_units(cands, refs)
        if verbose > 0:
            d = out.details
            # Orders above n do not enter orders up to n: the first n of BLEU-4's are BLEU-n's.
            print({"testlen": d["testlen"], "reflen": d["reflen"], "guess": d["guess"][:n],
                   "correct": d["correct"][:n]})
            print("ratio:", (d["testlen"] + TINY) / (d["reflen"] + SMALL))
        return score, scores

    def _print_units(self, cands, refs) -> None:
        units = dedupe(cands, refs)
        st = unit_statistics(units, index_for(units.cands, units.refsets))
        # The original counts each image's n-grams with its default of 4 orders whatever n is.
        for row, u in enumerate(units.row_unit.tolist()):
            reflens = [len(r.split()) for r in refs[row]]
            testlen = int(st["testlen"][u])
            comps = {"reflen": reflens, "testlen": testlen, "guess": [int(x) for x in st["guess"][u]],
                     "correct": [int(x) for x in st["correct"][u]]}
            print(comps, closest_reflen(reflens, testlen))

    def method(self):
        return "Bleu"

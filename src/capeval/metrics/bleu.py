"""BLEU, coco variant (Chiang's ``bleu_scorer.py`` as shipped in pycocoevalcap).

Papineni et al. (2002), "BLEU: a method for automatic evaluation of machine translation".
Exact behaviour (PROTOCOLS.md §2): ``split()`` tokens; clipped counts against the max count
in any single reference; effective reference length = closest, ties to the shorter;
smoothing constants tiny=1e-15 / small=1e-9 in every order; corpus score from summed
statistics with the sum of per-unit closest lengths.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..result import MetricScores
from ._units import GramTable, dedupe, gram_table
from .base import Metric, OutputInfo
from .registry import register

TINY = 1e-15   # added to clipped counts so a zero order does not zero the geometric mean
SMALL = 1e-9   # added to guess counts so an empty order does not divide by zero
CITATION = "Papineni et al., ACL 2002"


@dataclass(frozen=True)
class BleuStats:
    """Sufficient statistics of one unit (or of a corpus when summed)."""

    testlen: int
    reflen: int
    guess: tuple[int, ...]
    correct: tuple[int, ...]


def closest_reflen(reflens: Sequence[int], testlen: int) -> int:
    # min over (|l - L|, l): a tie between a longer and a shorter reference goes to the shorter.
    return min((abs(l - testlen), l) for l in reflens)[1]


def _max_ref_counts(refs: Sequence[str], table: GramTable) -> dict:
    maxcounts: dict = {}
    get = maxcounts.get
    for ref in refs:
        ids, _orders, cnts = table.sentence_entries(ref)
        for g, c in zip(ids, cnts):
            if c > get(g, 0):
                maxcounts[g] = c
    return maxcounts


def unit_stats(cand: str, testlen: int, ref_lens, maxcounts, table: GramTable, n: int = 4) -> BleuStats:
    """Statistics of one unit; ``cand`` is the tokenized candidate (counted by ``split()``);
    ``maxcounts`` is keyed by ids of ``table``."""
    correct = [0] * n
    get = maxcounts.get
    for g, k, c in zip(*table.sentence_entries(cand)):
        m = get(g)
        if m:
            correct[k] += c if c < m else m
    guess = tuple(max(0, testlen - k + 1) for k in range(1, n + 1))
    return BleuStats(testlen, closest_reflen(ref_lens, testlen), guess, tuple(correct))


def bleu_from_stats(s: BleuStats, n: int = 4) -> list[float]:
    """BLEU-1..n from statistics (one unit's, or a corpus' summed), with the reference code's
    exact operation order. The reference writes the corpus formula as float(correct + tiny)
    and the unit formula as float(correct) + tiny: for integer counts both are the same IEEE
    addition, so one function serves both."""
    out = []
    bleu = 1.0
    for k in range(n):
        bleu *= (float(s.correct[k]) + TINY) / (float(s.guess[k]) + SMALL)
        out.append(bleu ** (1.0 / (k + 1)))
    ratio = (s.testlen + TINY) / (s.reflen + SMALL)
    if ratio < 1:
        bp = math.exp(1 - 1 / ratio)
        out = [b * bp for b in out]
    return out


@register
class BleuCoco(Metric):
    """BLEU-1..4 exactly as pycocoevalcap computes them.

    Parameters
    ----------
    n : int, default 4
        Highest order. Outputs ``bleu1``..``bleu4`` (orders above ``n`` are not available).
    """

    family = "bleu"
    variant = "bleu_coco"
    outputs = tuple(
        OutputInfo(f"bleu{k}", "bleu", "bleu_coco", (0.0, 1.0), True,
                   f"BLEU-{k}, coco variant (closest ref length, tiny/small smoothing)", CITATION)
        for k in range(1, 5)
    )

    def __init__(self, n: int = 4):
        if n != 4:
            raise ValueError("bleu_coco computes orders 1..4 (n=4), as pycocoevalcap does")
        self.n = n

    def statistics(self, candidates, references) -> tuple[list[BleuStats], np.ndarray]:
        """Per distinct unit statistics and the row → unit map."""
        table = gram_table()  # one table for the whole call: ids are only comparable within it
        units = dedupe(candidates, references)
        cand_lens = [len(c.split()) for c in units.cands]
        ref_info = [([len(r.split()) for r in refs], _max_ref_counts(refs, table)) for refs in units.refsets]
        stats = []
        for ci, ri in zip(units.unit_cand.tolist(), units.unit_refset.tolist()):
            lens, maxc = ref_info[ri]
            stats.append(unit_stats(units.cands[ci], cand_lens[ci], lens, maxc, table, self.n))
        return stats, units.row_unit

    def compute(self, candidates, references) -> MetricScores:
        stats, row_unit = self.statistics(candidates, references)
        unit_scores = np.array([bleu_from_stats(s, self.n) for s in stats], dtype=float)
        per_row = unit_scores[row_unit]
        # Corpus statistics are sums over rows (integers, so order is irrelevant).
        mult = np.bincount(row_unit, minlength=len(stats))
        testlen = reflen = 0
        guess = [0] * self.n
        correct = [0] * self.n
        for s, m in zip(stats, mult.tolist()):
            testlen += s.testlen * m
            reflen += s.reflen * m
            for k in range(self.n):
                guess[k] += s.guess[k] * m
                correct[k] += s.correct[k] * m
        total = BleuStats(testlen, reflen, tuple(guess), tuple(correct))
        corpus = bleu_from_stats(total, self.n)
        names = [o.name for o in self.outputs]
        return MetricScores(
            corpus={names[k]: corpus[k] for k in range(self.n)},
            per_caption={names[k]: per_row[:, k] for k in range(self.n)},
            signature_fields={"n": self.n, "eff": "closest", "smooth": "coco-1e-15/1e-9", "corpus": "summed-stats"},
            details={"testlen": testlen, "reflen": reflen, "guess": guess, "correct": correct},
        )

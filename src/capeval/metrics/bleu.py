"""BLEU, coco variant (Chiang's ``bleu_scorer.py`` as shipped in pycocoevalcap).

Papineni et al. (2002), "BLEU: a method for automatic evaluation of machine translation".
Exact behaviour (docs/METRICS.md, BLEU-1..4): ``split()`` tokens; clipped counts against the max count
in any single reference; effective reference length = closest, ties to the shorter;
smoothing constants tiny=1e-15 / small=1e-9 in every order; corpus score from summed
statistics with the sum of per-unit closest lengths.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import repeat
from dataclasses import dataclass

import numpy as np

from ._ngrams import (MAX_ORDER, NgramIndex, bit_length, candidate_sids, compiled_inputs, index_for, ranges,
                      refset_matrix, searchsorted_many)
from ..dedup import dedupe
from .base import Metric, OutputInfo
from .statistics import Aggregate, Statistics
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
    # min over (|r - L|, r): a tie between a longer and a shorter reference goes to the shorter.
    return min((abs(r - testlen), r) for r in reflens)[1]


def unit_statistics(units, index: NgramIndex, n: int = 4) -> dict[str, np.ndarray]:
    """Statistics of every distinct unit, vectorised over the corpus: ``testlen``, ``reflen``
    (closest), ``guess`` and ``correct`` (``(units, n)``), all int64.

    correct[k] sums, over the candidate's distinct order-k n-grams, min(count, max count in any
    single reference of the unit). Integer sums, so any summation order gives the reference's
    numbers."""
    n_units = len(units.unit_cand)
    csid = candidate_sids(index, units.cands)[units.unit_cand]
    n_rs = len(units.refsets)
    compiled = compiled_inputs(index, units.refsets)
    if compiled is not None and n == MAX_ORDER:
        # The same integers from the compiled core, one unit at a time with a per-unit table of
        # the references' maximum counts (capeval._speedups.bleu_units).
        core, arrays, ref_sid = compiled
        b_reflen, b_correct = core.bleu_units(*arrays, csid, np.ascontiguousarray(units.unit_refset),
                                              ref_sid, ref_sid.shape[1])
        testlen = index.n_words[csid]
        return {"testlen": testlen, "reflen": np.frombuffer(b_reflen, dtype=np.int64).copy(),
                "guess": np.maximum(testlen[:, None] - np.arange(n)[None, :], 0),
                "correct": np.frombuffer(b_correct, dtype=np.int64).reshape(n_units, n).copy()}

    # Max count of each n-gram over a refset's references: sort packed (refset, n-gram, count)
    # and keep the last of each (refset, n-gram) run.
    ref_sid, pair_rs, _pair_j, pair_sid = refset_matrix(index, units.refsets)
    e0, e1 = index.e_start[pair_sid], index.e_start[pair_sid + 1]
    r_idx = ranges(e0, e1 - e0)
    r_key = np.repeat(pair_rs, e1 - e0) * index.n_grams + index.e_gram[r_idx]
    r_cnt = index.e_count[r_idx]
    cb = bit_length(int(r_cnt.max()) + 1) if len(r_cnt) else 1
    if bit_length(max(n_rs, 1) * max(index.n_grams, 1)) + cb <= 63:
        packed = np.sort((r_key << cb) | r_cnt)
        r_key, r_cnt = packed >> cb, packed & ((1 << cb) - 1)
    else:
        o = np.lexsort((r_cnt, r_key))
        r_key, r_cnt = r_key[o], r_cnt[o]
    last = np.ones(len(r_key), dtype=bool)
    if len(r_key):
        last[:-1] = r_key[1:] != r_key[:-1]
    m_key, m_cnt = r_key[last], r_cnt[last]

    # Clipped matches of each unit's candidate entries.
    h0, h1 = index.e_start[csid], index.e_start[csid + 1]
    h_idx = ranges(h0, h1 - h0)
    h_unit = np.repeat(np.arange(n_units, dtype=np.int64), h1 - h0)
    h_key = units.unit_refset[h_unit] * index.n_grams + index.e_gram[h_idx]
    pos = searchsorted_many(m_key, h_key)
    pos_ok = np.minimum(pos, max(len(m_key) - 1, 0))
    hit = (pos < len(m_key)) & (m_key[pos_ok] == h_key) if len(m_key) else np.zeros(len(h_key), dtype=bool)
    clipped = np.where(hit, np.minimum(index.e_count[h_idx], m_cnt[pos_ok] if len(m_key) else 0), 0)
    correct = np.bincount(h_unit * n + index.e_order[h_idx], weights=clipped, minlength=n_units * n)
    correct = correct.astype(np.int64).reshape(n_units, n)

    testlen = index.n_words[csid]
    guess = np.maximum(testlen[:, None] - np.arange(n)[None, :], 0)
    # Closest reference length, ties to the shorter: argmin of |l - L| * big + l.
    rlen = np.where(ref_sid >= 0, index.n_words[np.maximum(ref_sid, 0)], -1)[units.unit_refset]
    big = int(max(rlen.max(initial=0), testlen.max(initial=0))) + 1
    cost = np.where(rlen >= 0, np.abs(rlen - testlen[:, None]) * big + rlen, np.iinfo(np.int64).max)
    reflen = rlen[np.arange(n_units), np.argmin(cost, axis=1)] if n_units else np.zeros(0, dtype=np.int64)
    return {"testlen": testlen, "reflen": reflen, "guess": guess, "correct": correct}


def bleu_from_arrays(st: dict[str, np.ndarray], n: int = 4) -> np.ndarray:
    """BLEU-1..n of every unit, ``(units, n)``: :func:`bleu_from_stats` on arrays. Products and
    quotients are single IEEE operations in numpy too; powers and exp go through Python's
    float ``**`` and ``math.exp`` (numpy's SIMD versions may differ in the last bit)."""
    correct = st["correct"].astype(np.float64)
    guess = st["guess"].astype(np.float64)
    out = np.empty(correct.shape, dtype=np.float64)
    bleu = np.ones(len(correct))
    for k in range(n):
        bleu = bleu * ((correct[:, k] + TINY) / (guess[:, k] + SMALL))
        out[:, k] = list(map(pow, bleu.tolist(), repeat(1.0 / (k + 1)))) if k else bleu
    ratio = (st["testlen"].astype(np.float64) + TINY) / (st["reflen"].astype(np.float64) + SMALL)
    short = np.flatnonzero(ratio < 1)
    if len(short):
        bp = np.array(list(map(math.exp, (1 - 1 / ratio[short]).tolist())))
        out[short] = out[short] * bp[:, None]
    return out


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


_STATS = ("testlen", "reflen", "guess", "correct")


class BleuAggregate(Aggregate):
    """BLEU-1..n of each row from its own counts; corpus BLEU from the counts summed over rows
    (integers: any grouping gives the same sums)."""

    def __init__(self, n: int = 4):
        self.n = n

    def per_caption(self, st: Statistics) -> dict[str, np.ndarray]:
        per = bleu_from_arrays(st.rows, self.n)
        return {f"bleu{k + 1}": per[:, k] for k in range(self.n)}

    @staticmethod
    def summed(st: Statistics) -> BleuStats:
        """The counts summed over the rows, as Python integers."""
        t = {k: st.total(k) for k in _STATS}
        return BleuStats(int(t["testlen"]), int(t["reflen"]), tuple(int(x) for x in t["guess"]),
                         tuple(int(x) for x in t["correct"]))

    def corpus(self, st: Statistics) -> dict[str, float]:
        return {f"bleu{k + 1}": v for k, v in enumerate(bleu_from_stats(self.summed(st), self.n))}

    def details(self, st: Statistics) -> dict:
        total = self.summed(st)
        return {"testlen": total.testlen, "reflen": total.reflen, "guess": list(total.guess),
                "correct": list(total.correct)}

    def reduce(self, st: Statistics) -> Statistics:
        return Statistics(st.n, self, {}, {k: np.asarray(st.total(k), dtype=np.int64) for k in _STATS},
                          dict(st.fields))


@register
class BleuCoco(Metric):
    """BLEU-1..4 exactly as pycocoevalcap computes them.

    Parameters
    ----------
    n : int, default 4
        Highest order. Outputs ``bleu1``..``bleu4`` (orders above ``n`` are not available).
    """

    family = "bleu"
    cache_resources = ()  # pure computation on the tokenized text
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

    def statistics(self, candidates, references, **kw) -> Statistics:
        """Each row's ``testlen``, closest ``reflen``, ``guess`` and ``correct`` counts (int64)."""
        units = dedupe(candidates, references)
        st = unit_statistics(units, index_for(units.cands, units.refsets), self.n)
        rows = {k: np.ascontiguousarray(st[k][units.row_unit]) for k in _STATS}
        return Statistics(len(candidates), BleuAggregate(self.n), rows, {}, self._fields())

    def _fields(self) -> dict[str, object]:
        return {"n": self.n, "eff": "closest", "smooth": "coco-1e-15/1e-9", "corpus": "summed-stats"}

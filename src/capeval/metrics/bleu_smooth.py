"""Smoothed sentence BLEU, "add-one" for n ≥ 2 (Lin & Och 2004), as used in metric-correlation work.

Lin & Och (2004), "ORANGE: a Method for Evaluating Automatic Evaluation Metrics for Machine
Translation" (COLING). Per sentence, with L hypothesis tokens (``split()``), m_n clipped
n-gram matches (clip = the largest count in any single reference) and l_n = max(L − n + 1, 0)
hypothesis n-grams:

    p_1 = m_1 / l_1                       (unsmoothed: no unigram match gives 0)
    p_n = (m_n + 1) / (l_n + 1), n ≥ 2    (add one to matches and to the n-gram count)
    BP  = 1 if L > r else exp(1 − r / L)  (r = closest reference length, ties to the shorter)
    BLEU-k = BP · exp(Σ_{n≤k} (1/k) · log p_n)   (0 when m_1 = 0 or L = 0)

The arithmetic follows NLTK's ``sentence_bleu(..., smoothing_function=method2)`` operation for
operation (``math.fsum`` of the weighted logs), so scores are identical whenever L ≥ k.
**One definitional difference:** when the hypothesis is shorter than n, NLTK floors the
n-gram count at 1 *before* adding one (its ``modified_precision`` uses ``max(1, count)``)
and gets p_n = 1/2; the add-one definition gives l_n = 0 and p_n = (0 + 1)/(0 + 1) = 1.
We keep the definition: a 2-word caption is not penalised twice for lacking 3- and 4-grams
(the brevity penalty already charges for its length).

Corpus score = the arithmetic mean of the sentence scores over all rows (this is a sentence
metric; there is no summed-statistics corpus version).
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..result import MetricScores
from ..dedup import dedupe
from ._ngram_counts import ngram_counts
from .base import Metric, OutputInfo
from .registry import register

VARIANT = "bleu_linoch2004"
MAX_N = 4
CITATION = "Lin & Och, COLING 2004 (smoothing); Papineni et al., ACL 2002 (BLEU)"


def closest_length(ref_lens: Sequence[int], hyp_len: int) -> int:
    return min(ref_lens, key=lambda r: (abs(r - hyp_len), r))


def max_ref_counts(refs_words: Sequence[Sequence[str]], n: int) -> dict[tuple[str, ...], int]:
    out: dict[tuple[str, ...], int] = {}
    for words in refs_words:
        for g, c in ngram_counts(words, n).items():
            if c > out.get(g, 0):
                out[g] = c
    return out


def sentence_scores(hyp: Sequence[str], ref_lens: Sequence[int], maxref: dict, n: int = MAX_N) -> list[float]:
    """Smoothed BLEU-1..n of one hypothesis (tokens) given its references' lengths and max counts."""
    L = len(hyp)
    matches = [0] * n
    for g, c in ngram_counts(hyp, n).items():
        matches[len(g) - 1] += min(c, maxref.get(g, 0))
    if matches[0] == 0:  # also covers L == 0
        return [0.0] * n
    r = closest_length(ref_lens, L)
    bp = 1 if L > r else math.exp(1 - r / L)
    logs = [math.log(matches[0] / L)]
    for k in range(2, n + 1):
        logs.append(math.log((matches[k - 1] + 1) / (max(L - k + 1, 0) + 1)))
    out = []
    for k in range(1, n + 1):
        w = 1 / k
        out.append(bp * math.exp(math.fsum(w * lp for lp in logs[:k])))
    return out


@register
class BleuSmooth(Metric):
    """Sentence BLEU-1..4 with Lin & Och (2004) add-one smoothing for orders ≥ 2."""

    family = "bleu_smooth"
    cache_resources = ()  # pure computation on the tokenized text
    variant = VARIANT
    outputs = tuple(
        OutputInfo(
            f"bleu{k}_smooth", "bleu_smooth", VARIANT, (0.0, 1.0), True,
            f"Sentence BLEU-{k}, add-one smoothing for n >= 2 (Lin & Och 2004); corpus = mean of sentences",
            CITATION,
        )
        for k in range(1, MAX_N + 1)
    )
    text_input = "tokenized"

    def compute(self, candidates: Sequence[str], references: Sequence[Sequence[str]]) -> MetricScores:
        units = dedupe(candidates, references)
        hyps = [c.split() for c in units.cands]
        ref_info = []
        for refs in units.refsets:
            words = [r.split() for r in refs]
            ref_info.append(([len(w) for w in words], max_ref_counts(words, MAX_N)))
        unit_scores = np.array(
            [
                sentence_scores(hyps[ci], *ref_info[ri])
                for ci, ri in zip(units.unit_cand.tolist(), units.unit_refset.tolist())
            ],
            dtype=float,
        ).reshape(-1, MAX_N)
        per_row = unit_scores[units.row_unit]
        names = self.output_names()
        return MetricScores(
            corpus={names[k]: float(np.mean(per_row[:, k])) for k in range(MAX_N)},
            per_caption={names[k]: per_row[:, k].copy() for k in range(MAX_N)},
            signature_fields={"smooth": "add1-n>=2", "eff": "closest", "corpus": "mean-of-sentences"},
            details={"distinct_units": len(unit_scores)},
        )

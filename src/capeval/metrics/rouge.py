"""ROUGE-L, coco variant (pycocoevalcap ``rouge/rouge.py``).

Lin (2004), "ROUGE: A Package for Automatic Evaluation of Summaries".
Exact behaviour (docs/METRICS.md, ROUGE-L): tokens from ``split(" ")`` (an empty string is one empty
token); P and R are maxima over references taken independently; F_beta with beta = 1.2;
corpus = mean over units.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..result import MetricScores
from ._ngrams import (NgramIndex, argsort_bounded, candidate_sids, core_for, index_for, ranges, refset_matrix,
                      searchsorted_many, sorted_unique)
from ..dedup import dedupe
from .base import Metric, OutputInfo
from .registry import register

BETA = 1.2  # coco's recall weight; beta**2 is taken as the float square, as the reference does


@lru_cache(maxsize=1 << 16)
def _match_masks(sentence: str) -> tuple[dict[str, int], int, int]:
    """Bit masks of token positions in ``sentence.split(" ")``; references repeat, so cached."""
    tokens = sentence.split(" ")
    masks: dict[str, int] = {}
    for i, tok in enumerate(tokens):
        masks[tok] = masks.get(tok, 0) | (1 << i)
    return masks, (1 << len(tokens)) - 1, len(tokens)


def lcs_length(a: list[str], b: list[str]) -> int:
    """Length of the longest common subsequence.

    Bit-parallel algorithm (Allison & Dix 1986; Hyyrö 2004) on Python ints: one pass over
    ``b`` with a few big-int operations per token instead of the reference's O(|a||b|)
    Python table — measured ~10× faster on caption lengths, and the result is an integer,
    so it is exactly the reference's value. LCS is symmetric, so either side may hold masks.
    """
    masks: dict[str, int] = {}
    for i, tok in enumerate(a):
        masks[tok] = masks.get(tok, 0) | (1 << i)
    return _lcs_with_masks(masks, (1 << len(a)) - 1, len(a), b)


def _lcs_with_masks(masks: dict[str, int], full: int, n: int, b) -> int:
    v = full
    for tok in b:
        m = masks.get(tok)
        if m is None:
            continue
        u = v & m
        v = ((v + u) | (v - u)) & full
    return n - bin(v).count("1")


def rouge_l_unit(cand: str, refs, beta: float = BETA) -> float:
    token_c = cand.split(" ")
    prec = []
    rec = []
    for ref in refs:
        masks, full, len_r = _match_masks(ref)
        lcs = _lcs_with_masks(masks, full, len_r, token_c)
        prec.append(lcs / float(len(token_c)))
        rec.append(lcs / float(len_r))
    p = max(prec)
    r = max(rec)
    if p != 0 and r != 0:
        return ((1 + beta**2) * p * r) / float(r + beta**2 * p)
    return 0.0


_WORD_BITS = 64  # references up to 64 words run in uint64 lanes


def _space_clean(index: NgramIndex) -> np.ndarray:
    """Per sentence: ``s.split(" ") == s.split()`` and ``s`` non-empty (else its ROUGE-L tokens,
    from ``split(" ")``, are not the index's words and the unit takes the Python path)."""
    n = len(index)
    if index.space_clean:
        return np.ones(n, dtype=bool)
    return np.fromiter((s != "" and s.split(" ") == s.split() for s in index.sentences), dtype=bool, count=n)


def _lcs_pairs(index: NgramIndex, c_sid: np.ndarray, r_sid: np.ndarray) -> np.ndarray:
    """LCS length of each (candidate, reference) sentence pair, bit-parallel in uint64 lanes
    (the same algorithm as :func:`_lcs_with_masks`, one lane per pair; without the compiled
    core references must have 1..64 words). Integers, so exactly the reference's values."""
    core = core_for(index)
    if core is not None:  # the same integers, pair by pair in C (capeval._speedups.lcs_pairs)
        c = np.ascontiguousarray
        out = core.lcs_pairs(c(index.words, dtype=np.int32), c(index.w_start, dtype=np.int64), len(index.vocab),
                             c(c_sid, dtype=np.int64), c(r_sid, dtype=np.int64))
        return np.frombuffer(out, dtype=np.int64).copy()
    V = max(len(index.vocab), 1)
    # Match masks of each (reference sentence, word): OR of 1 << position.
    refs = sorted_unique(r_sid)
    w0, w1 = index.w_start[refs], index.w_start[refs + 1]
    w_idx = ranges(w0, w1 - w0)
    w_pos = w_idx - np.repeat(w0, w1 - w0)
    key = np.repeat(refs, w1 - w0) * V + index.words[w_idx]
    o = argsort_bounded(key, (int(refs.max(initial=0)) + 1) * V)
    key, bits = key[o], np.left_shift(np.uint64(1), w_pos[o].astype(np.uint64))
    first = np.ones(len(key), dtype=bool)
    first[1:] = key[1:] != key[:-1]
    starts = np.flatnonzero(first)
    m_key = key[starts]
    m_val = np.bitwise_or.reduceat(bits, starts) if len(starts) else bits
    # Pairs by decreasing candidate length, so the pairs still running are a prefix.
    c_len = index.n_words[c_sid]
    o = np.argsort(-c_len, kind="stable")
    c_sid_o, r_sid_o, c_len_o = c_sid[o], r_sid[o], c_len[o]
    r_len = index.n_words[r_sid_o]
    full = np.where(r_len >= 64, np.uint64(2**64 - 1),
                    np.left_shift(np.uint64(1), np.minimum(r_len, 63).astype(np.uint64)) - np.uint64(1))
    v = full.copy()
    # Match mask of every (pair, candidate position), pair-major: one lookup for the whole set.
    off = np.zeros(len(c_len_o) + 1, dtype=np.int64)
    np.cumsum(c_len_o, out=off[1:])
    c_words = index.words[ranges(index.w_start[c_sid_o], c_len_o)]
    k = np.repeat(r_sid_o * V, c_len_o) + c_words
    pos = np.minimum(searchsorted_many(m_key, k), max(len(m_key) - 1, 0))
    masks = np.where(m_key[pos] == k, m_val[pos], np.uint64(0)) if len(m_key) else np.zeros(len(k), np.uint64)
    n_active = len(c_sid_o)
    for t in range(int(c_len_o.max(initial=0))):
        while n_active and c_len_o[n_active - 1] <= t:
            n_active -= 1
        m = masks[off[:n_active] + t]
        va = v[:n_active]
        u = va & m
        v[:n_active] = ((va + u) | (va - u)) & full[:n_active]
    lcs = np.empty(len(o), dtype=np.int64)
    lcs[o] = r_len - np.bitwise_count(v).astype(np.int64)
    return lcs


def unit_scores(units, index: NgramIndex, beta: float = BETA) -> np.ndarray:
    """ROUGE-L of every distinct unit. Units with a sentence that is not space-clean (see
    :func:`_space_clean`), or without the compiled core a reference over 64 words, go through
    :func:`rouge_l_unit`."""
    n_units = len(units.unit_cand)
    c_sid = candidate_sids(index, units.cands)[units.unit_cand]
    ref_sid = refset_matrix(index, units.refsets)[0]
    clean = _space_clean(index)
    # The compiled LCS takes references of any length in linear time per candidate word and
    # 64 reference words; the Python path's big-int steps grow with the reference.
    ref_ok = clean if core_for(index) is not None else clean & (index.n_words <= _WORD_BITS)
    rs_ok = np.all(np.where(ref_sid >= 0, ref_ok[np.maximum(ref_sid, 0)], True), axis=1)
    vec = clean[c_sid] & rs_ok[units.unit_refset]
    out = np.empty(n_units, dtype=np.float64)
    for u in np.flatnonzero(~vec).tolist():
        out[u] = rouge_l_unit(units.cands[units.unit_cand[u]], units.refsets[units.unit_refset[u]], beta)
    vu = np.flatnonzero(vec)
    if len(vu) == 0:
        return out
    u_ref = ref_sid[units.unit_refset[vu]]
    pu, pj = np.nonzero(u_ref >= 0)  # unit-major, references in order
    p_c, p_r = c_sid[vu][pu], u_ref[pu, pj]
    lcs = _lcs_pairs(index, p_c, p_r)
    prec = lcs / index.n_words[p_c].astype(np.float64)
    rec = lcs / index.n_words[p_r].astype(np.float64)
    starts = np.flatnonzero(np.r_[True, pu[1:] != pu[:-1]])
    p = np.maximum.reduceat(prec, starts)
    r = np.maximum.reduceat(rec, starts)
    b2 = beta**2
    both = (p != 0) & (r != 0)
    f = np.where(both, ((1 + b2) * p * r) / np.where(both, r + b2 * p, 1.0), 0.0)
    out[vu] = f
    return out


@register
class RougeLCoco(Metric):
    """ROUGE-L F-measure with beta = 1.2 and independent max of P and R over references."""

    family = "rouge_l"
    cache_resources = ()  # pure computation on the tokenized text
    variant = "rouge_l_coco"
    outputs = (
        OutputInfo("rouge_l", "rouge_l", "rouge_l_coco", (0.0, 1.0), True,
                   "ROUGE-L F (beta=1.2), max P and max R over refs", "Lin, ACL Workshop 2004"),
    )

    def __init__(self, beta: float = BETA):
        self.beta = beta

    def compute(self, candidates, references) -> MetricScores:
        units = dedupe(candidates, references)
        per_row = unit_scores(units, index_for(units.cands, units.refsets), self.beta)[units.row_unit]
        return MetricScores(
            corpus={"rouge_l": float(np.mean(per_row))},
            per_caption={"rouge_l": per_row},
            signature_fields={"beta": self.beta, "split": "space"},
        )

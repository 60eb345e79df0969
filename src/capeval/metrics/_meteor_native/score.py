"""METEOR 1.5's score from sufficient statistics, and the corpus aggregate.

Statistics rows have the jar's 23 fields: test length, reference length, test and
reference function words, then per module (exact, stem, synonym, paraphrase) test content,
reference content, test function and reference function matches, then chunks, test and
reference word matches. Scores follow ``MeteorScorer.computeMetrics`` operation by
operation (same order of floating-point additions, IEEE division: 0/0 gives NaN and the
score 0, as in Java), vectorised over rows. The corpus score is ``computeMetrics`` of the
rows summed by ``MeteorStats.addStats``, which skips the chunk of a row that matched every
word of both sides in one chunk.
"""
from __future__ import annotations

import math
from operator import mul
from collections.abc import Sequence

import numpy as np

from . import powtable

#: ``-l en`` with the default (ranking) task: alpha, beta, gamma, delta; module weights.
ALPHA, BETA, GAMMA, DELTA = 0.85, 0.2, 0.6, 0.75
MODULE_WEIGHTS = (1.0, 0.6, 0.8, 0.6)
N_FIELDS = 23
CHUNKS = 20


def pow_beta(x: float) -> float:
    """``Math.pow(x, BETA)`` as the jar's JVM computes it: HotSpot's x86_64 intrinsic is not
    correctly rounded and differs from the C library's ``pow`` by one unit in the last place
    for about 1 fragmentation in 1,000, differently on different CPUs. The active table
    (:mod:`.powtable`: the local JVM's, else the shipped one) has the JVM's value of every
    fragmentation ``chunks / (sum / 2)`` with ``sum`` of matches up to ``MAX_SUM`` where the
    two differ; any other ``x`` takes the C library's (docs/METRICS.md)."""
    y = powtable.active().values.get(x)
    return math.pow(x, BETA) if y is None else y


def _pow_beta(x: np.ndarray) -> np.ndarray:
    """:func:`pow_beta` elementwise. ``np.power`` is not used: its vectorised float64 pow (SIMD
    builds) is off by one unit in the last place for some inputs where the C library's
    ``pow`` (Python's ``math.pow``) and the JVM agree (measured: 282 of 16,992 Flickr8k-Expert
    scores)."""
    values, inverse = np.unique(x, return_inverse=True)
    return np.array([pow_beta(v) for v in values.tolist()], dtype=np.float64)[inverse.reshape(x.shape)]


def scores(stats: np.ndarray) -> np.ndarray:
    """Per-row METEOR score of an ``(n, 23)`` array of statistics."""
    s = np.asarray(stats, dtype=np.float64)
    if s.ndim != 2 or s.shape[1] != N_FIELDS:
        raise ValueError(f"METEOR statistics must have shape (n, {N_FIELDS}), got {s.shape}")
    t_len, r_len, t_fun, r_fun = s[:, 0], s[:, 1], s[:, 2], s[:, 3]
    stage = s[:, 4:20].reshape(len(s), 4, 4)  # [row, module, (tc, rc, tf, rf)]
    chunks, t_words, r_words = s[:, 20], s[:, 21], s[:, 22]
    with np.errstate(divide="ignore", invalid="ignore"):
        t_wlen = DELTA * (t_len - t_fun) + (1.0 - DELTA) * t_fun
        r_wlen = DELTA * (r_len - r_fun) + (1.0 - DELTA) * r_fun
        t_wm = np.zeros(len(s))
        r_wm = np.zeros(len(s))
        for i, w in enumerate(MODULE_WEIGHTS):
            t_wm = t_wm + stage[:, i, 0] * w * DELTA
        for i, w in enumerate(MODULE_WEIGHTS):
            r_wm = r_wm + stage[:, i, 1] * w * DELTA
        for i, w in enumerate(MODULE_WEIGHTS):
            t_wm = t_wm + stage[:, i, 2] * w * (1.0 - DELTA)
        for i, w in enumerate(MODULE_WEIGHTS):
            r_wm = r_wm + stage[:, i, 3] * w * (1.0 - DELTA)
        precision = t_wm / t_wlen
        recall = r_wm / r_wlen
        f_mean = 1.0 / (((1.0 - ALPHA) / precision) + (ALPHA / recall))
        # totals as the jar recomputes them when it parses a statistics line
        t_total = np.zeros(len(s))
        r_total = np.zeros(len(s))
        for i in range(4):
            t_total = t_total + stage[:, i, 0]
            r_total = r_total + stage[:, i, 1]
            t_total = t_total + stage[:, i, 2]
            r_total = r_total + stage[:, i, 3]
        perfect = (t_total == t_len) & (r_total == r_len) & (chunks == 1)
        frag = np.where(perfect, 0.0, chunks / ((t_words + r_words) / 2))
        penalty = GAMMA * _pow_beta(frag)
        score = f_mean * (1.0 - penalty)
    score = np.where(np.isnan(score), 0.0, score)
    return np.maximum(score, 0.0)


def score_one(row: Sequence[float]) -> float:
    """:func:`scores` of one row of statistics, in plain floats (the same operations in the
    same order)."""
    t_len, r_len, t_fun, r_fun = row[0], row[1], row[2], row[3]
    chunks, t_words, r_words = row[20], row[21], row[22]
    t_wlen = DELTA * (t_len - t_fun) + (1.0 - DELTA) * t_fun
    r_wlen = DELTA * (r_len - r_fun) + (1.0 - DELTA) * r_fun
    t_wm = r_wm = 0.0
    for i, w in enumerate(MODULE_WEIGHTS):
        t_wm = t_wm + row[4 + 4 * i] * w * DELTA
    for i, w in enumerate(MODULE_WEIGHTS):
        r_wm = r_wm + row[5 + 4 * i] * w * DELTA
    for i, w in enumerate(MODULE_WEIGHTS):
        t_wm = t_wm + row[6 + 4 * i] * w * (1.0 - DELTA)
    for i, w in enumerate(MODULE_WEIGHTS):
        r_wm = r_wm + row[7 + 4 * i] * w * (1.0 - DELTA)
    if t_wm == 0.0 or r_wm == 0.0:
        return 0.0  # precision or recall 0: the score is 0 (or NaN, which counts as 0)
    f_mean = 1.0 / (((1.0 - ALPHA) / (t_wm / t_wlen)) + (ALPHA / (r_wm / r_wlen)))
    t_total = sum(row[4:20:4]) + sum(row[6:20:4])
    r_total = sum(row[5:20:4]) + sum(row[7:20:4])
    if t_total == t_len and r_total == r_len and chunks == 1:
        frag = 0.0
    else:
        frag = chunks / ((t_words + r_words) / 2)
    return max(f_mean * (1.0 - GAMMA * pow_beta(frag)), 0.0)


def word_deltas(functions: Sequence[bool]) -> list[float]:
    """Each word's share of the weighted length: ``delta`` for content words, ``1 - delta``
    for function words."""
    return [(1.0 - DELTA) if f else DELTA for f in functions]


def upper_bound(w1: Sequence[float], d1: Sequence[float], w2: Sequence[float], d2: Sequence[float],
                wlen1: float | None = None, wlen2: float | None = None) -> float:
    """An upper bound on the score of any alignment of a hypothesis and a reference whose
    words can be matched with weights at most ``w1``, ``w2`` (0.0: never matched);
    ``d1``, ``d2``: their :func:`word_deltas`; ``wlen1``, ``wlen2``: the sums of those, if
    known.

    Precision and recall are at most those of every word matched at its highest weight,
    and the F-mean grows with both; the penalty is at least that of one chunk over all
    matchable words, or none if every word of both sides is matchable. Exact in real
    numbers; callers leave a margin for rounding."""
    n1, n2 = len(w1), len(w2)
    # Added left to right, not by sum(): from Python 3.12 sum() of floats compensates its
    # rounding, so the bound would depend on the interpreter and differ from the compiled core's.
    t_wm = r_wm = 0.0
    for x in map(mul, w1, d1):
        t_wm += x
    for x in map(mul, w2, d2):
        r_wm += x
    if t_wm == 0.0 or r_wm == 0.0:
        return 0.0
    tw = n1 - w1.count(0.0)
    rw = n2 - w2.count(0.0)
    if wlen1 is None:
        wlen1 = sum(d1)
    if wlen2 is None:
        wlen2 = sum(d2)
    f_mean = 1.0 / (((1.0 - ALPHA) / (t_wm / wlen1)) + (ALPHA / (r_wm / wlen2)))
    penalty = 0.0 if tw == n1 and rw == n2 else GAMMA * math.pow(2.0 / (tw + rw), BETA)
    return max(f_mean * (1.0 - penalty), 0.0)


def add_stats(stats: np.ndarray) -> np.ndarray:
    """``addStats`` of every row into one row (fields are integer counts: sums are exact)."""
    s = np.asarray(stats, dtype=np.float64)
    t_total = s[:, 4:20:4].sum(axis=1) + s[:, 6:20:4].sum(axis=1)
    r_total = s[:, 5:20:4].sum(axis=1) + s[:, 7:20:4].sum(axis=1)
    perfect = (t_total == s[:, 0]) & (r_total == s[:, 1]) & (s[:, CHUNKS] == 1.0)
    out = s.sum(axis=0)
    out[CHUNKS] = s[~perfect, CHUNKS].sum()
    return out


def corpus_score(stats: np.ndarray) -> float:
    return float(scores(add_stats(stats)[None, :])[0])

"""Word Mover's Distance for captions, the Kilickaya et al. (EACL 2017) recipe.

As the coco-caption WMD scorer implements it (docs/SEMANTIC.md, WMD):

1. tokens = the PTB-tokenized caption split on spaces, minus stop words (NLTK's 153-word list);
2. d = gensim ``KeyedVectors.wmdistance(candidate_tokens, reference_tokens)``;
3. per reference, similarity = exp(−d / σ) with σ = 1;
4. per caption, the maximum over references; corpus = mean over captions.

``d`` is reproduced exactly, not approximated: out-of-vocabulary tokens are dropped from
both sides; if either side is then empty d = +inf (similarity 0); if both sides together hold
one distinct word d = 0 (similarity 1); if every candidate-reference word distance is 0 (e.g.
two different words sharing one spaCy row) gensim returns +inf, so the similarity is 0 — a
quirk kept for agreement. The transport problem is built as gensim builds it (its
``Dictionary`` id order, nBOW weights count/length, Euclidean ground cost) and solved by POT's
network simplex with POT's own ``emd2`` preprocessing, so distances match gensim to the bit.

Vectors: Kilickaya used GoogleNews word2vec, raw (``norm=False``); gensim ≥ 4 normalises by
default and NNEval/LCEval used unit vectors (``norm=True``; docs/SEMANTIC.md, WMD). Offline the default set is
``glove-6b-50d``; the signature records the set, its hash, ``norm`` and the stop-word list.

Speed: distances are computed once per distinct (candidate, reference) token multiset pair
(Flickr8k-Expert repeats each unit three times), word distances once per candidate, and the
solver is POT's compiled network simplex called without ``emd2``'s per-call overhead.
"""
from __future__ import annotations

import functools
import math
import os
import sys
import warnings
from collections import Counter
from collections.abc import Sequence

import numpy as np

from ..errors import InputError, ResourceNotFound
from ..resources.vectors import WordVectors, load_vectors
from ..result import MetricScores
from ..text.stopwords import StopwordList, stopword_list
from ..dedup import dedupe
from .base import Metric, OutputInfo
from .registry import register

SIGMA = 1.0  # Kilickaya et al.: similarity = exp(-d / sigma) with sigma = 1
NUM_ITER_MAX = 100000  # POT emd2's default, the value gensim runs with
ZERO_COST = 1e-8  # gensim returns inf when the distance matrix sums below this


# ------------------------------------------------------------------------------- solver


_POT_BACKENDS = {
    "POT_BACKEND_DISABLE_PYTORCH": "torch",
    "POT_BACKEND_DISABLE_JAX": "jax",
    "POT_BACKEND_DISABLE_TENSORFLOW": "tensorflow",
    "POT_BACKEND_DISABLE_CUPY": "cupy",
}


def _import_ot():
    """Import POT without loading torch/jax/TF just to register array backends.

    WMD passes numpy arrays only. POT imports every installed framework at import time
    (torch alone: 1-10 s here); a framework already loaded by the process stays enabled.
    """
    if "ot" in sys.modules:
        return sys.modules["ot"]
    keys = [k for k, mod in _POT_BACKENDS.items() if mod not in sys.modules and k not in os.environ]
    for k in keys:
        os.environ[k] = "1"
    try:
        import ot
    except ImportError:
        from ..extras import install_hint

        raise ResourceNotFound(f"WMD needs POT: pip install POT, or the semantic extra: "
                               f"{install_hint(['semantic'])}") from None
    finally:
        for k in keys:
            os.environ.pop(k, None)
    return ot


@functools.lru_cache(maxsize=None)
def _network_simplex():
    """POT's compiled solver called directly, or None to go through ``ot.emd2``.

    ``emd2`` spends ~120 µs per call in Python around a ~5 µs solve of a caption-sized
    problem. The compiled entry point is private API, so it is used only after it reproduces
    ``emd2`` exactly on a small problem.
    """
    ot = _import_ot()
    try:
        from ot.lp.emd_wrap import check_result, emd_c
    except ImportError:
        return None
    rng = np.random.default_rng(0)
    a = np.array([0.25, 0.5, 0.25, 0.0])
    b = np.array([0.0, 0.4, 0.3, 0.3])
    M = rng.random((4, 4))
    ref = float(ot.emd2(a, b, M))
    # POT 0.9.6+ takes warm-start potentials; earlier releases take five arguments.
    for extra in ((None, None), ()):
        def solve(a, b, M, extra=extra):
            return emd_c(a, b, M, NUM_ITER_MAX, 1, *extra)

        try:
            if _solve_like_emd2(solve, check_result, a, b, M) == ref:
                return solve, check_result
        except Exception:  # a changed private signature: try the next, else use emd2
            continue
    return None


def _solve_like_emd2(solve, check_result, a: np.ndarray, b: np.ndarray, M: np.ndarray) -> float:
    """``ot.emd2(a, b, M)`` step for step (POT 0.9.7): mass rescale, drop empty bins, solve."""
    b = b * a.sum(0) / b.sum(0, keepdims=True)
    asel = a != 0
    bsel = b != 0
    if not (asel.all() and bsel.all()):
        rows = np.flatnonzero(asel)
        cols = np.flatnonzero(bsel)
        M = np.asarray(M[np.ix_(rows, cols)], dtype=np.float64, order="C")
        a = a[rows]
        b = b[cols]
    _, cost, _, _, code = solve(a, b, M)
    check_result(code)
    return float(cost)


def _emd2(a: np.ndarray, b: np.ndarray, M: np.ndarray) -> float:
    fast = _network_simplex()
    if fast is not None:
        return _solve_like_emd2(fast[0], fast[1], a, b, M)
    return float(_import_ot().emd2(a, b, M))


# ----------------------------------------------------------------------------- one pair


def _pair_problem(doc1: Sequence[str], doc2: Sequence[str]):
    """gensim's vocabulary order and nBOW weights for one pair.

    gensim builds ``Dictionary([doc1, doc2])``: doc1's distinct words sorted, then doc2's new
    words sorted. Returns (rows, cols, a, b, V): candidate words (ids 0..k-1), the reference
    words in id order with their ids, and the two full-length weight vectors.
    """
    c1 = Counter(doc1)
    c2 = Counter(doc2)
    rows = sorted(c1)
    new = sorted(w for w in c2 if w not in c1)
    cols = [w for w in rows if w in c2] + new
    k = len(rows)
    V = k + len(new)
    col_ids = [i for i, w in enumerate(rows) if w in c2] + list(range(k, V))
    a = np.zeros(V)
    b = np.zeros(V)
    n1 = float(len(doc1))
    n2 = float(len(doc2))
    for i, w in enumerate(rows):
        a[i] = c1[w] / n1
    for j, w in zip(col_ids, cols):
        b[j] = c2[w] / n2
    return rows, cols, col_ids, a, b, V


def _distance(doc1, doc2, block_fn) -> float:
    if not doc1 or not doc2:
        return math.inf
    rows, cols, col_ids, a, b, V = _pair_problem(doc1, doc2)
    if V == 1:
        return 0.0
    D = np.zeros((V, V))
    D[:len(rows), col_ids] = block_fn(rows, cols)
    if abs(np.sum(D)) < ZERO_COST:
        return math.inf
    return _emd2(a, b, D)


def _cdist(v1: np.ndarray, v2: np.ndarray) -> np.ndarray:
    from scipy.spatial.distance import cdist

    return cdist(v1, v2)


def wmdistance(doc1: Sequence[str], doc2: Sequence[str], vectors: WordVectors, norm: bool = False) -> float:
    """gensim ``KeyedVectors.wmdistance(doc1, doc2, norm=norm)`` on capeval vectors."""
    d1 = [w for w in doc1 if w in vectors]
    d2 = [w for w in doc2 if w in vectors]
    return _distance(d1, d2, lambda r, c: _cdist(vectors.vectors(r, norm), vectors.vectors(c, norm)))


# ------------------------------------------------------------------------------- corpus


def content_tokens(text: str, stop: StopwordList, vectors: WordVectors) -> tuple[str, ...]:
    """Kilickaya's tokens: space-split, stop words removed, then (as gensim does) OOV removed."""
    words = stop.words
    return tuple(w for w in text.split(" ") if w not in words and w in vectors)


class WMDScorer:
    """Distances for many (candidate, reference) pairs, each distinct pair solved once.

    Equivalent to :func:`wmdistance` per pair, with the per-pair work cut to what changes
    the result: the candidate's sorted words, weights and distances to every word of its
    references are prepared once per distinct candidate; a pair then picks its columns.
    """

    def __init__(self, vectors: WordVectors, norm: bool = False):
        self.vectors = vectors
        self.norm = norm
        self.n_distinct = 0

    def distances(self, pairs: Sequence[tuple[Sequence[str], Sequence[str]]]) -> np.ndarray:
        """WMD per (candidate tokens, reference tokens) pair of in-vocabulary tokens."""
        distinct: dict[tuple, int] = {}
        pair_ix = np.empty(len(pairs), dtype=np.int64)
        sorted_of: dict[tuple, tuple] = {}  # documents repeat across pairs: sort each once

        def key(doc) -> tuple:
            doc = tuple(doc)
            k = sorted_of.get(doc)
            if k is None:
                k = sorted_of[doc] = tuple(sorted(doc))
            return k

        for i, (c, r) in enumerate(pairs):
            # WMD is a function of the two token multisets, so sorted tuples are exact keys.
            pair_ix[i] = distinct.setdefault((key(c), key(r)), len(distinct))
        self.n_distinct = len(distinct)
        by_cand: dict[tuple, list[tuple[int, tuple]]] = {}
        for (c, r), j in distinct.items():
            by_cand.setdefault(c, []).append((j, r))
        out = np.empty(len(distinct))
        fast = _network_simplex()
        for c, items in by_cand.items():
            if not c:
                for j, _ in items:
                    out[j] = math.inf
                continue
            self._candidate(c, items, out, fast)
        return out[pair_ix]

    def _candidate(self, c: tuple[str, ...], items, out: np.ndarray, fast) -> None:
        counts: dict[str, int] = {}
        for w in c:
            counts[w] = counts.get(w, 0) + 1
        rows = sorted(counts)
        k = len(rows)
        n1 = float(len(c))
        a_k = np.array([counts[w] / n1 for w in rows])
        a_sum: dict[int, float] = {}  # POT sums a over the full gensim vocabulary, length V
        union = sorted(set(rows).union(*(r for _, r in items)))
        col_of = {w: i for i, w in enumerate(union)}
        M = _cdist(self.vectors.vectors(rows, self.norm), self.vectors.vectors(union, self.norm))
        for j, r in items:
            if not r:
                out[j] = math.inf
                continue
            rc: dict[str, int] = {}
            for w in r:
                rc[w] = rc.get(w, 0) + 1
            shared = [i for i, w in enumerate(rows) if w in rc]
            new = sorted(w for w in rc if w not in counts)
            V = k + len(new)
            if V == 1:
                out[j] = 0.0
                continue
            cols = [rows[i] for i in shared] + new
            block = M.take([col_of[w] for w in cols], axis=1)
            # gensim sums the full VxV matrix, whose other entries are zero; only the
            # all-zero case can fall under 1e-8, where the order of summation is moot.
            if block.sum() < ZERO_COST:
                out[j] = math.inf
                continue
            n2 = float(len(r))
            b_full = np.zeros(V)
            col_ids = shared + list(range(k, V))
            b_vals = np.array([rc[w] / n2 for w in cols])
            b_full[col_ids] = b_vals
            sa = a_sum.get(V)
            if sa is None:
                a_full = np.zeros(V)
                a_full[:k] = a_k
                sa = a_sum[V] = a_full.sum(0)
            if fast is None:
                a_full = np.zeros(V)
                a_full[:k] = a_k
                D = np.zeros((V, V))
                D[:k, col_ids] = block
                out[j] = _emd2(a_full, b_full, D)
                continue
            # ot.emd2's steps on gensim's full problem, restricted to the bins with mass
            # (rows 0..k-1, the reference's columns): same arrays, same solver input.
            b_sub = b_vals * sa / b_full.sum(0, keepdims=True)
            _, cost, _, _, code = fast[0](a_k, b_sub, block)
            if code != 1:
                fast[1](code)
            out[j] = float(cost)


@register
class WMD(Metric):
    """exp(−WMD/σ), maximum over references (Kilickaya et al. 2017; Kusner et al. 2015)."""

    family = "wmd"
    extras = ("semantic",)
    cache_resources = ("glove-6b-50d", "spacy-md", "googlenews-word2vec")  # the vector sets it may load
    variant = "wmd_kilickaya"
    outputs = (
        OutputInfo(
            "wmd", "wmd", "wmd_kilickaya", (0.0, 1.0), True,
            "exp(-WMD/sigma) on stop-word-filtered tokens, max over references",
            "Kilickaya et al., EACL 2017; Kusner et al., ICML 2015",
        ),
    )

    def __init__(
        self,
        vectors: "str | WordVectors" = "glove-6b-50d",
        stopwords: "str | StopwordList" = "nltk-153",
        norm: bool = False,
        sigma: float = SIGMA,
        vectors_format: str = "auto",
        vectors_limit: int | None = None,
    ):
        if not sigma > 0:
            raise InputError(f"wmd: sigma must be positive, got {sigma}")
        self.vectors = load_vectors(vectors, format=vectors_format, limit=vectors_limit)
        self.stop = stopword_list(stopwords)
        self.norm = bool(norm)
        self.sigma = float(sigma)

    def compute(self, candidates, references) -> MetricScores:
        units = dedupe(candidates, references)
        memo: dict[str, tuple[str, ...]] = {}

        def toks(text: str) -> tuple[str, ...]:
            t = memo.get(text)
            if t is None:
                t = memo[text] = content_tokens(text, self.stop, self.vectors)
            return t

        pairs: list[tuple[tuple[str, ...], tuple[str, ...]]] = []
        offsets = [0]
        for ci, ri in zip(units.unit_cand.tolist(), units.unit_refset.tolist()):
            c = toks(units.cands[ci])
            for ref in units.refsets[ri]:
                pairs.append((c, toks(ref)))
            offsets.append(len(pairs))
        scorer = WMDScorer(self.vectors, self.norm)
        dist = scorer.distances(pairs)
        sim = np.exp(-dist / self.sigma)
        unit_scores = np.maximum.reduceat(sim, np.asarray(offsets[:-1]))
        per_row = unit_scores[units.row_unit]
        empty_c = sum(1 for ci in units.unit_cand.tolist() if not toks(units.cands[ci]))
        if empty_c:
            warnings.warn(
                f"wmd: {empty_c} candidate(s) have no in-vocabulary non-stop-word token; "
                "they score 0 (gensim's infinite distance), as the reference scorer does",
                stacklevel=2,
            )
        return MetricScores(
            corpus={"wmd": float(np.mean(per_row))},
            per_caption={"wmd": per_row},
            signature_fields={
                **self.vectors.signature_fields(),
                "norm": self.norm,
                "stop": self.stop.id,
                "sigma": self.sigma,
                "agg": "max",
                "oov": "drop",
            },
            details={
                "distance_pairs": len(pairs),
                "distinct_pairs": scorer.n_distinct,
                "empty_candidates": empty_c,
                "empty_references": sum(1 for refs in units.refsets for r in refs if not toks(r)),
            },
        )

"""CIDEr-D (coco, reported there as "CIDEr") and the original CIDEr, under separate names.

Vedantam, Zitnick & Parikh (CVPR 2015), "CIDEr: Consensus-based Image Description Evaluation".
Exact behaviour (docs/METRICS.md, CIDEr-D and CIDEr (original)):

* df(g) = number of *units* whose reference union contains g (candidates never count);
  rho = ln(N units). One unit gives rho = 0 and every score 0, so N < 2 needs a df file.
* tf-idf with raw counts: v(g) = c(g) * (rho - ln(max(1, df(g)))).
* CIDEr-D: clipped similarity sum_g min(vh, vr) * vr / (|vh| |vr|) times the Gaussian length
  penalty e^(-delta^2 / (2 sigma^2)) on the bigram counts; CIDEr: plain cosine, no penalty.
* unit score = mean over 4 orders, / number of refs, * 10 — in that order; corpus = mean.

Floating-point order follows the reference exactly (n-gram insertion order, numpy's mean),
so the results are bit-identical; only zero terms are skipped, which cannot change a sum.
"""
from __future__ import annotations

from collections.abc import Sequence
from itertools import repeat
from pathlib import Path

import numpy as np

from ..dffile import read_df_file, write_df_file
from ..errors import InputError
from ..result import MetricScores
from ._ngrams import (NgramIndex, argsort_bounded, candidate_sids, compiled_inputs, index_for, ranges, refset_matrix,
                      searchsorted_many, sorted_unique)
from ..dedup import dedupe
from .base import Metric, OutputInfo
from .registry import register

SIGMA = 6.0  # CIDEr-D length-penalty width (coco default)
N_ORDER = 4
CITATION = "Vedantam et al., CVPR 2015"


class DocumentFrequency:
    """df counts plus rho (= ln of the number of units they came from)."""

    #: (index, n-gram ids, counts) of a df counted from an n-gram index (:meth:`from_references`):
    #: looked up by id for that same index, the dict of strings built only when asked for
    _counted: tuple[NgramIndex, np.ndarray, np.ndarray] | None = None

    def __init__(self, df: dict[str, float] | None, n_units: int, source: str):
        self._df = df
        self.n_units = n_units
        self.source = source
        self.ref_len = np.log(float(n_units))  # numpy, as the reference computes it

    @classmethod
    def from_references(cls, refsets: Sequence[Sequence[str]], rows_per_refset: Sequence[int],
                        index: NgramIndex | None = None):
        """df over scoring units: a refset used by k rows counts k times, as in the reference."""
        index = index if index is not None else index_for([], refsets)
        gram, df_val = _refset_df(index, refsets, np.asarray(rows_per_refset, dtype=np.int64))
        n_units = int(sum(rows_per_refset))
        out = cls(None, n_units, f"corpus:{n_units}")
        out._counted = (index, gram, df_val)
        return out

    @property
    def df(self) -> dict[str, float]:
        """Counts by n-gram string (for a counted df, built on first use; two threads may both
        build it: same content, either wins)."""
        if self._df is None:
            if self._counted is None:
                raise AttributeError(f"{type(self).__name__} holds no df dict")
            index, gram, val = self._counted
            # Counts are integers: float(count) is what the reference's defaultdict(float) holds.
            self._df = dict(zip(index.gram_strings(gram), val.astype(np.float64).tolist()))
        return self._df

    def __add__(self, other: DocumentFrequency) -> DocumentFrequency:
        """The df of both parts' units (counts are integers: any grouping gives equal sums);
        the merge of CIDEr's corpus pre-pass."""
        if not isinstance(other, DocumentFrequency):
            return NotImplemented
        df = dict(self.df)
        for g, c in other.df.items():
            df[g] = df.get(g, 0.0) + c
        n = self.n_units + other.n_units
        return DocumentFrequency(df, n, f"corpus:{n}")

    def lookup(self, grams: Sequence[str]) -> np.ndarray:
        """df of each n-gram (0.0 when absent) as float64. A subclass may store df another way
        (capeval.stream keeps hashed arrays) by overriding this."""
        get = self.df.get
        return np.fromiter((get(g, 0.0) for g in grams), dtype=np.float64, count=len(grams))

    def lookup_ids(self, index: NgramIndex) -> np.ndarray:
        """df of every n-gram id of ``index`` (float64, 0.0 when absent).

        A df held as this class' dict is packed once into integer keys over its own word
        vocabulary (:class:`_PackedDf`), so a batch is looked up without building n-gram
        strings: the low per-call latency of scoring many small batches against one df
        (self-critical training). A df counted from ``index`` itself (``capeval.score``'s
        pre-pass of the scored set) is read by id, with no strings at all. A subclass that
        overrides :meth:`lookup` is asked by string."""
        if self._counted is not None and self._counted[0] is index:
            out = np.zeros(index.n_grams, dtype=np.float64)
            out[self._counted[1]] = self._counted[2]
            return out
        if type(self).lookup is DocumentFrequency.lookup:
            packed = getattr(self, "_packed", None)
            if packed is None:
                # Built on first use; two threads may both build it: same content, either wins.
                packed = self._packed = _PackedDf(self.df)
            if packed.ok:
                return packed.lookup_ids(index)
        return self.lookup(index.gram_strings(np.arange(index.n_grams)))

    def save(self, path: str | Path) -> str:
        """Write a portable df file (:mod:`capeval.dffile`); returns its sha256."""
        return write_df_file(path, self.df, self.n_units)

    @classmethod
    def load(cls, path: str | Path) -> "DocumentFrequency":
        """Read a df file written by :meth:`save`; its source names the file's content."""
        df, n_units, sha = read_df_file(path)
        return cls(df, n_units, f"file:{sha[:16]}:{n_units}")


class _PackedDf:
    """A df dict as sorted int64 keys: the words of an n-gram, as ids 1..P-1 of the df's own
    vocabulary, in base P (a k-gram key lies in [P^(k-1), P^k), so orders never collide).
    Exact: a key stands for exactly one word tuple. ``ok`` is False when P^4 would overflow
    int64 (P > 55,108 words); lookups then go by string."""

    def __init__(self, df: dict[str, float]):
        vocab: dict[str, int] = {}
        rows: list[tuple[int, ...]] = []
        vals: list[float] = []
        for gram, v in df.items():
            parts = gram.split(" ")
            # Only single-space-joined runs of 1-4 whitespace-free words can equal an n-gram of
            # split() words; any other key can never be looked up, so it is left out.
            if not 1 <= len(parts) <= N_ORDER or gram.split() != parts:
                continue
            rows.append(tuple(vocab.setdefault(w, len(vocab) + 1) for w in parts))
            vals.append(v)
        self.vocab = vocab
        self.base = P = len(vocab) + 1
        self.ok = P ** N_ORDER < 2**63
        if not self.ok:
            return
        keys = np.fromiter((_pack(r, P) for r in rows), dtype=np.int64, count=len(rows))
        o = np.argsort(keys)
        self.keys = keys[o]
        self.vals = np.asarray(vals, dtype=np.float64)[o]

    def lookup_ids(self, index: NgramIndex) -> np.ndarray:
        P = self.base
        get = self.vocab.get
        pid = np.fromiter(map(get, index.vocab, repeat(0)), dtype=np.int64, count=len(index.vocab))
        out = np.zeros(index.n_grams, dtype=np.float64)
        if len(self.keys) == 0 or index.n_grams == 0:
            return out
        # Keys order by order: an order-k key is its prefix's key * P + its last word's id
        # (the index stores each n-gram as (prefix id, last word)); ids of order k are
        # g_off[k] .. g_off[k + 1] - 1, so concatenating the orders gives the id order.
        key_k, known_k = pid, pid > 0  # a word the df never saw: df 0
        keys, known = [key_k], [known_k]
        for k in range(1, N_ORDER):
            parent, last = index._parent[k], index._last[k]
            key_k = key_k[parent] * P + pid[last]
            known_k = known_k[parent] & (pid[last] > 0)
            keys.append(key_k)
            known.append(known_k)
        key, known = np.concatenate(keys), np.concatenate(known)
        pos = np.minimum(searchsorted_many(self.keys, key), len(self.keys) - 1)
        hit = known & (self.keys[pos] == key)
        out[hit] = self.vals[pos[hit]]
        return out


def _pack(word_ids: tuple[int, ...], base: int) -> int:
    key = 0
    for w in word_ids:
        key = key * base + w
    return key


def _refset_df(index: NgramIndex, refsets, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """n-gram ids present in any reference set and their df: the summed ``weights`` of the
    refsets whose union holds them (integers)."""
    compiled = compiled_inputs(index, refsets)
    if compiled is not None and compiled[2].shape[1]:  # the compiled count (integers: ==)
        core, arrays, ref_sid = compiled
        df = np.frombuffer(core.refset_df(*arrays, ref_sid, ref_sid.shape[1],
                                          np.ascontiguousarray(weights, dtype=np.int64)), dtype=np.int64)
        present = np.flatnonzero(df)
        return present, df[present].copy()
    _ref_sid, pair_rs, _pair_j, pair_sid = refset_matrix(index, refsets)
    e0, e1 = index.e_start[pair_sid], index.e_start[pair_sid + 1]
    n_gram = max(index.n_grams, 1)
    rs_gram = sorted_unique(np.repeat(pair_rs, e1 - e0) * n_gram + index.e_gram[ranges(e0, e1 - e0)])
    df = np.bincount(rs_gram % n_gram, weights=weights[rs_gram // n_gram], minlength=n_gram)
    present = np.flatnonzero(df)
    return present, df[present].astype(np.int64)


def _pow2_by_pair(count: np.ndarray, dfi: np.ndarray, vals: np.ndarray) -> np.ndarray:
    """``pow(v, 2)`` (Python float pow, i.e. libm's, as the reference's ``pow(vec, 2)``) of each
    entry's tf-idf ``v``, computed once per distinct (count, df index) pair, which fixes ``v``."""
    if len(vals) == 0:
        return vals.copy()
    width = int(dfi.max()) + 1
    key = count.astype(np.int64) * width + dfi
    if int(key.max()) < 1 << 24:  # a dense table of pairs
        first = np.full(int(key.max()) + 1, -1, dtype=np.int64)
        first[key] = np.arange(len(key), dtype=np.int64)  # any entry of the pair: same v
        cells = np.flatnonzero(first >= 0)
        table = np.zeros(len(first), dtype=np.float64)
        table[cells] = list(map(pow, vals[first[cells]].tolist(), repeat(2)))
        return table[key]
    uniq, pos, inv = np.unique(key, return_index=True, return_inverse=True)
    sq = np.array(list(map(pow, vals[pos].tolist(), repeat(2))), dtype=np.float64)
    return sq[inv.reshape(-1)]


def unit_scores(units, dfo: DocumentFrequency, clipped: bool, sigma: float = SIGMA,
                index: NgramIndex | None = None) -> np.ndarray:
    """CIDEr(-D) of every distinct unit, vectorised over the corpus.

    Bit-exactness argument: every value goes through the same IEEE operations as the
    reference, in the same order. tf-idf and divisions are elementwise; each sum the reference
    builds sequentially (norms over a sentence's n-grams, similarity terms over the
    hypothesis' n-grams in insertion order, the per-order score over references) is built by
    ``np.bincount(..., weights=...)``, which accumulates in input order into 0.0, over arrays
    laid out in the reference's order. Terms of n-grams absent from a reference are exact
    zeros in the reference and are skipped here, which cannot change a sum.
    """
    index = index if index is not None else index_for(units.cands, units.refsets)
    compiled = compiled_inputs(index, units.refsets)
    if compiled is not None:
        return _unit_scores_compiled(compiled, units, dfo, clipped, sigma, index)
    # 1. Entries of every distinct sentence, in insertion order (the index lists them so).
    n_sent = len(index)
    n_gram = max(index.n_grams, 1)
    gram, order = index.e_gram, index.e_order
    tf = index.e_count.astype(np.float64)
    starts, counts = index.e_start[:-1], np.diff(index.e_start)
    entry_sent = np.repeat(np.arange(n_sent), counts)
    ref_sid, pair_rs, pair_j, pair_sid = refset_matrix(index, units.refsets)
    max_k = ref_sid.shape[1]
    r_len = counts[pair_sid]
    r_idx = ranges(starts[pair_sid], r_len)
    r_rs = np.repeat(pair_rs, r_len)
    r_j = np.repeat(pair_j, r_len)

    # 2. Reference entries sorted by (refset, n-gram): the df pass and the join below share
    # this one sort (stable, though no sum depends on the order of equal keys).
    r_key = r_rs * n_gram + gram[r_idx]
    srt = argsort_bounded(r_key, max(len(units.refsets), 1) * n_gram)
    r_key, r_j, r_idx = r_key[srt], r_j[srt], r_idx[srt]

    # 3. df and tf-idf.
    vals, norms = _tfidf(index, units, dfo, r_key, n_gram, tf, entry_sent)
    # CIDEr's "length" is the bigram count, i.e. max(words - 1, 0).
    sent_len = np.maximum(index.n_words - 1, 0)
    r_val = vals[r_idx]

    # 4. Hypothesis entries per unit (unit-major, insertion order) joined with the references.
    n_units = len(units.unit_cand)
    u_sid = candidate_sids(index, units.cands)[units.unit_cand]
    u_rs = units.unit_refset
    h_idx = ranges(starts[u_sid], counts[u_sid])
    h_unit = np.repeat(np.arange(n_units), counts[u_sid])
    h_key = u_rs[h_unit] * n_gram + gram[h_idx]
    lo = searchsorted_many(r_key, h_key, side="left")
    hi = searchsorted_many(r_key, h_key, side="right")
    hits = hi - lo
    j_h = np.repeat(np.arange(len(h_key)), hits)
    j_r = ranges(lo, hits)
    h = vals[h_idx][j_h]
    r = r_val[j_r]
    term = np.minimum(h, r) * r if clipped else h * r
    target = (h_unit[j_h] * max_k + r_j[j_r]) * N_ORDER + order[h_idx][j_h]
    sims = np.bincount(target, weights=term, minlength=n_units * max_k * N_ORDER)
    sims = sims.reshape(n_units, max_k, N_ORDER)

    # 5. Normalise, penalise, and sum over references in order.
    return _combine(sims, norms, sent_len, ref_sid[u_rs], u_sid, clipped, sigma)


def _tfidf(index: NgramIndex, units, dfo, r_key, n_gram: int, tf, entry_sent):
    """Step 3 of :func:`unit_scores`: the tf-idf value of every entry and each sentence's
    per-order norms. df(g) = number of units whose reference union holds g: distinct
    (refset, g) pairs (``r_key``, sorted), each weighted by the rows using that refset."""
    gram, order, n_sent = index.e_gram, index.e_order, len(index)
    df_of_gram = dfo.lookup_ids(index)
    ref_len = float(dfo.ref_len)
    # ln(max(1, df)) per distinct df value with scalar np.log, as the reference calls it.
    uniq = sorted_unique(df_of_gram)
    logs = np.array([float(np.log(max(1.0, float(u)))) for u in uniq.tolist()], dtype=np.float64)
    dfi = np.searchsorted(uniq, df_of_gram)[gram]
    vals = tf * (ref_len - logs[dfi])
    # The reference squares with pow(v, 2) (libm pow), which is not always v * v: on 300k random
    # values 242 squares differed in the last bit, and such a term changed 87 of 100k synthetic
    # CIDEr-D scores. v depends only on (count, df), a few thousand pairs: pow each pair once.
    squares = _pow2_by_pair(index.e_count, dfi, vals)
    norms = np.sqrt(
        np.bincount(entry_sent * N_ORDER + order, weights=squares, minlength=n_sent * N_ORDER)
    ).reshape(n_sent, N_ORDER)
    return vals, norms


def _combine(sims, norms, sent_len, u_ref_sid, u_sid, clipped: bool, sigma: float) -> np.ndarray:
    """Step 5 of :func:`unit_scores`: normalise the similarities ``(units, max_k, orders)``,
    apply CIDEr-D's length penalty, and sum over references in order. ``u_ref_sid`` holds each
    unit's reference sentence ids, -1 where its refset is shorter than ``max_k``."""
    n_units, max_k = u_ref_sid.shape
    valid = u_ref_sid >= 0
    safe = np.where(valid, u_ref_sid, 0)
    hn = norms[u_sid][:, None, :]
    rn = norms[safe]
    both = (hn != 0) & (rn != 0)
    sims = np.where(both, sims / np.where(both, hn * rn, 1.0), sims)
    if clipped:
        delta = (sent_len[u_sid][:, None] - sent_len[safe]).astype(np.float64)
        d_uniq = sorted_unique(delta.reshape(-1))
        # Euler's e raised to a power (not exp()), as the reference does: ulp-exact.
        pens = np.array([np.e ** (-(d**2) / (2 * sigma**2)) for d in d_uniq.tolist()])
        sims = sims * pens[np.searchsorted(d_uniq, delta)][:, :, None]
    score = np.zeros((n_units, N_ORDER))
    for j in range(max_k):
        score = score + np.where(valid[:, j, None], sims[:, j, :], 0.0)
    # numpy's mean of 4 values is the sequential sum / 4 (checked bit-for-bit on 2e5 draws).
    avg = (((score[:, 0] + score[:, 1]) + score[:, 2]) + score[:, 3]) / N_ORDER
    avg = avg / valid.sum(axis=1)
    return avg * 10.0


def _unit_scores_compiled(compiled, units, dfo, clipped: bool, sigma: float, index: NgramIndex) -> np.ndarray:
    """:func:`unit_scores` by the compiled core (capeval._speedups.cider_units): the same
    operations in the same order, one unit at a time. The values that involve numpy's or
    Python's own math are computed here exactly as above and passed in as tables: ln of each
    distinct df value (numpy's scalar log), and the length penalty of each possible length
    difference (Python's float power of e)."""
    core, arrays, ref_sid = compiled
    max_k = ref_sid.shape[1]
    df_of_gram = dfo.lookup_ids(index)
    ref_len = float(dfo.ref_len)
    counts = df_of_gram.astype(np.int64)
    if len(counts) and counts.min() >= 0 and counts.max() < 1 << 24 and np.array_equal(counts, df_of_gram):
        # whole counts (the scored set's, a df table's): the distinct values by bincount, not a sort
        present = np.flatnonzero(np.bincount(counts))
        lut = np.zeros(int(present[-1]) + 1, dtype=np.int32)
        lut[present] = np.arange(len(present), dtype=np.int32)
        uniq, dfi = present.astype(np.float64), lut[counts]
    else:
        uniq = sorted_unique(df_of_gram)
        dfi = np.searchsorted(uniq, df_of_gram)
    logs = np.array([float(np.log(max(1.0, float(u)))) for u in uniq.tolist()], dtype=np.float64)
    lw = ref_len - logs
    # Length penalty of every bigram-length difference that can occur, as unit_scores computes it.
    m = int(max(int(index.n_words.max(initial=0)) - 1, 0))
    pens = np.array([np.e ** (-(d**2) / (2 * sigma**2)) for d in map(float, range(-m, m + 1))], dtype=np.float64)
    u_sid = candidate_sids(index, units.cands)[units.unit_cand]
    out = core.cider_units(*arrays, u_sid, np.ascontiguousarray(units.unit_refset, dtype=np.int64), ref_sid, max_k,
                           np.ascontiguousarray(dfi, dtype=np.int32), lw, pens, m, clipped)
    return np.frombuffer(out, dtype=np.float64).copy()


class _CiderBase(Metric):
    # The df is the corpus pre-pass (Metric.prepass): a streamed run counts it over the whole
    # input first and hands it to every chunk.
    uses_df = True
    # 1: squares as the reference computes them (pow(v, 2)), which moved some scores in the last bit.
    cache_revision = 1
    cache_resources = ()  # pure computation on the tokenized text (a df file is an option)
    _clipped: bool

    def __init__(self, df: str | Path | DocumentFrequency | None = None, sigma: float = SIGMA,
                 save_df: str | Path | None = None):
        if isinstance(sigma, bool) or not isinstance(sigma, (int, float)) or not (0 < sigma < float("inf")):
            raise InputError(f"{self.family}: sigma must be a positive finite number (the length-penalty width), "
                             f"got {sigma!r}")
        self.df_source = df
        self.sigma = float(sigma)
        self.save_df = save_df
        # A df file is read here, once, so compute() reads no file (and a bad file fails early).
        self._given_df = self._external_df()

    def _external_df(self) -> DocumentFrequency | None:
        """The df given by the user, or None for df from the scored set."""
        if isinstance(self.df_source, DocumentFrequency):
            return self.df_source
        if self.df_source is not None and str(self.df_source) != "corpus":
            return DocumentFrequency.load(self.df_source)
        return None

    def _single_unit_reason(self, n: int) -> str:
        return (f"{self.family}: with df from the scored set, {n} unit gives ln(1) = 0 and every "
                "score 0 (CIDEr depends on the set scored together). Score more captions at once, "
                "or pass a saved df file (options={'%s': {'df': 'df.json'}}; CLI --cider-df)." % self.family)

    @staticmethod
    def _indexed(candidates, references):
        """The scoring units of these rows and their n-gram index (the same index object for the
        same rows while it is cached, so a df counted on it is read by id)."""
        units = dedupe(candidates, references)
        return units, index_for(units.cands, units.refsets)

    @staticmethod
    def _counted_df(units, index) -> DocumentFrequency:
        """df over the scored units (a refset used by k rows counts k times)."""
        return DocumentFrequency.from_references(units.refsets, units.refset_rows.tolist(), index)

    def prepass(self, candidates, references) -> DocumentFrequency | None:
        """This batch's df counts, or None with a df file (nothing to count)."""
        if self._given_df is not None:
            return None
        return self._counted_df(*self._indexed(candidates, references))

    def cannot_score(self, candidates, references) -> str | None:
        if self._given_df is not None or not len(candidates):
            return None
        # the units of dedupe(): two distinct (candidate, references) pairs are enough
        first = (candidates[0], tuple(references[0]))
        if any((c, tuple(r)) != first for c, r in zip(candidates, references)):
            return None
        return self._single_unit_reason(1)

    def compute(self, candidates, references) -> MetricScores:
        units, index = self._indexed(candidates, references)
        # Without a df given (a file, or the scored set's handed over by the pre-pass, as
        # capeval.score and a streamed run do), the rows' own df, counted as the pre-pass counts it.
        dfo = self._given_df
        if dfo is None:
            if units.n_rows < 2:
                raise InputError(self._single_unit_reason(units.n_rows))
            dfo = self._counted_df(units, index)
        elif dfo.source.startswith("corpus:") and dfo.n_units < 2:
            raise InputError(self._single_unit_reason(dfo.n_units))
        df_label = dfo.source
        if self.save_df is not None:
            dfo.save(self.save_df)
        scores = unit_scores(units, dfo, self._clipped, self.sigma, index)
        per_row = scores[units.row_unit]
        name = self.outputs[0].name
        fields = {"n": N_ORDER, "df": df_label}
        if self._clipped:
            fields["sigma"] = self.sigma
        return MetricScores(
            corpus={name: float(np.mean(per_row))},
            per_caption={name: per_row},
            signature_fields=fields,
        )


@register
class CiderD(_CiderBase):
    """CIDEr-D as pycocoevalcap computes it (its "CIDEr").

    Parameters
    ----------
    df : "corpus" | path | DocumentFrequency, default "corpus"
        Where document frequencies come from. "corpus": the references of the scored set
        (scores then depend on which captions are scored together). A path: a df file
        written by ``save_df`` (corpus-independent scores).
    sigma : float, default 6.0
        Width of the Gaussian length penalty.
    save_df : path, optional
        Write the df computed from this call's references.
    """

    family = "cider_d"
    variant = "cider_d_coco"
    _clipped = True
    outputs = (
        OutputInfo("cider_d", "cider_d", "cider_d_coco", (0.0, 10.0), True,
                   "CIDEr-D (clipped tf-idf, Gaussian length penalty), pycocoevalcap's 'CIDEr'", CITATION),
    )


@register
class CiderOriginal(_CiderBase):
    """The original CIDEr (vrama91 ``cider``): no clipping, no length penalty, no stemming.

    Same parameters as :class:`CiderD` except ``sigma`` (unused).
    """

    family = "cider"
    variant = "cider_vrama91"
    _clipped = False
    outputs = (
        OutputInfo("cider", "cider", "cider_vrama91", (0.0, float("inf")), True,
                   "original CIDEr (plain tf-idf cosine), not CIDEr-D", CITATION),
    )

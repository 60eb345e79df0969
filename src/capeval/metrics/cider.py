"""CIDEr-D (coco, reported there as "CIDEr") and the original CIDEr, under separate names.

Vedantam, Zitnick & Parikh (CVPR 2015), "CIDEr: Consensus-based Image Description Evaluation".
Exact behaviour (PROTOCOLS.md §5–6):

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

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..result import MetricScores
from ._units import GramTable, dedupe, gram_table
from .base import Metric, OutputInfo
from .registry import register

SIGMA = 6.0  # CIDEr-D length-penalty width (coco default)
N_ORDER = 4
CITATION = "Vedantam et al., CVPR 2015"


class DocumentFrequency:
    """df counts plus rho (= ln of the number of units they came from)."""

    def __init__(self, df: dict[str, float], n_units: int, source: str):
        self.df = df
        self.n_units = n_units
        self.source = source
        self.ref_len = np.log(float(n_units))  # numpy, as the reference computes it

    @classmethod
    def from_references(cls, refsets: Sequence[Sequence[str]], rows_per_refset: Sequence[int],
                        table: GramTable | None = None):
        """df over scoring units: a refset used by k rows counts k times, as in the reference."""
        table = table if table is not None else gram_table()
        df: dict[str, float] = {}
        for refs, mult in zip(refsets, rows_per_refset):
            grams: set[int] = set()
            for ref in refs:
                grams.update(table.sentence_entries(ref)[0])
            for g in grams:
                key = table.gram_string(g)
                df[key] = df.get(key, 0.0) + mult
        n_units = int(sum(rows_per_refset))
        return cls(df, n_units, f"corpus:{n_units}")

    def lookup(self, grams: Sequence[str]) -> np.ndarray:
        """df of each n-gram (0.0 when absent) as float64. A subclass may store df another way
        (capeval.stream keeps hashed arrays) by overriding this."""
        get = self.df.get
        return np.fromiter((get(g, 0.0) for g in grams), dtype=np.float64, count=len(grams))

    def save(self, path: str | Path) -> str:
        """Write a portable JSON df file; returns its sha256."""
        payload = {
            "format": "capeval-cider-df/1",
            "n_units": self.n_units,
            "df": dict(self.df),
        }
        data = json.dumps(payload, ensure_ascii=False, sort_keys=True).encode("utf-8")
        from ..outputs import atomic_write

        atomic_write(path, data)
        return hashlib.sha256(data).hexdigest()

    @classmethod
    def load(cls, path: str | Path) -> "DocumentFrequency":
        data = Path(path).read_bytes()
        try:
            payload = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise InputError(f"CIDEr df file {path} is not valid UTF-8 JSON: {e}") from None
        if not isinstance(payload, dict) or payload.get("format") != "capeval-cider-df/1":
            got = payload.get("format") if isinstance(payload, dict) else type(payload).__name__
            raise InputError(f"CIDEr df file {path}: unknown format {got!r}")
        n_units, raw = payload.get("n_units"), payload.get("df")
        # rho = ln(n_units): 0 units gives -inf and NaN scores, 1 unit gives every score 0.
        if isinstance(n_units, bool) or not isinstance(n_units, int) or n_units < 2:
            raise InputError(f"CIDEr df file {path}: n_units must be an integer >= 2 (ln of it weights every "
                             f"n-gram), got {n_units!r}")
        if not isinstance(raw, dict):
            raise InputError(f"CIDEr df file {path}: 'df' must be an object mapping n-grams to counts")
        df: dict[str, float] = {}
        for k, v in raw.items():
            # A df counts the units whose references hold the n-gram: 0 <= df <= n_units.
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (0 <= v <= n_units):
                raise InputError(f"CIDEr df file {path}: df of n-gram {k!r} is {v!r}; it must be a finite "
                                 f"count between 0 and n_units ({n_units})")
            df[str(k)] = float(v)
        digest = hashlib.sha256(data).hexdigest()[:16]
        return cls(df, n_units, f"file:{digest}:{n_units}")


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(s, s + l)`` for each pair, without a Python loop."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    before = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    return np.repeat(starts - before, lengths) + np.arange(total)


def unit_scores(units, dfo: DocumentFrequency | None, clipped: bool, sigma: float = SIGMA,
                table: GramTable | None = None) -> np.ndarray:
    """CIDEr(-D) of every distinct unit, vectorised over the corpus.

    Bit-exactness argument: every value goes through the same IEEE operations as the
    reference, in the same order. tf-idf and divisions are elementwise; each sum the reference
    builds sequentially (norms over a sentence's n-grams, similarity terms over the
    hypothesis' n-grams in insertion order, the per-order score over references) is built by
    ``np.bincount(..., weights=...)``, which accumulates in input order into 0.0, over arrays
    laid out in the reference's order. Terms of n-grams absent from a reference are exact
    zeros in the reference and are skipped here, which cannot change a sum.
    """
    # 1. Distinct sentences and their n-gram entries, in insertion order. One table for the
    # whole call: ids are only comparable within it.
    table = table if table is not None else gram_table()
    sid: dict[str, int] = {}
    for c in units.cands:
        sid.setdefault(c, len(sid))
    for refs in units.refsets:
        for r in refs:
            sid.setdefault(r, len(sid))
    e_gram: list[int] = []
    e_order: list[int] = []
    e_tf: list[int] = []
    counts = np.empty(len(sid), dtype=np.int64)
    for i, sentence in enumerate(sid):
        ids, orders, cnts = table.sentence_entries(sentence)
        counts[i] = len(ids)
        e_gram.extend(ids)
        e_order.extend(orders)
        e_tf.extend(cnts)
    # Compact the table's n-gram ids to 0..G-1 for this corpus.
    global_ids, gram = np.unique(np.asarray(e_gram, dtype=np.int64), return_inverse=True)
    gram = gram.reshape(-1)
    order = np.asarray(e_order, dtype=np.int64)
    tf = np.asarray(e_tf, dtype=np.float64)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
    n_sent = len(sid)
    n_gram = max(len(global_ids), 1)
    entry_sent = np.repeat(np.arange(n_sent), counts)

    n_rs = len(units.refsets)
    max_k = max(len(r) for r in units.refsets)
    ref_sid = np.full((n_rs, max_k), -1, dtype=np.int64)
    for i, refs in enumerate(units.refsets):
        ref_sid[i, : len(refs)] = [sid[r] for r in refs]
    pair_rs, pair_j = np.nonzero(ref_sid >= 0)
    pair_sid = ref_sid[pair_rs, pair_j]
    r_len = counts[pair_sid]
    r_idx = _ranges(starts[pair_sid], r_len)
    r_rs = np.repeat(pair_rs, r_len)

    # 2. df and tf-idf. df(g) = number of units whose reference union holds g: distinct
    # (refset, g) pairs, each weighted by the rows using that refset.
    if dfo is None:
        rs_gram = np.unique(r_rs * n_gram + gram[r_idx])
        df_of_gram = np.bincount(rs_gram % n_gram, weights=units.refset_rows[rs_gram // n_gram].astype(np.float64),
                                 minlength=n_gram)
        ref_len = float(np.log(float(units.n_rows)))
    else:
        df_of_gram = dfo.lookup([table.gram_string(g) for g in global_ids.tolist()])
        ref_len = float(dfo.ref_len)
    # ln(max(1, df)) per distinct df value with scalar np.log, as the reference calls it.
    uniq, inv = np.unique(df_of_gram, return_inverse=True)
    logs = np.array([float(np.log(max(1.0, float(u)))) for u in uniq.tolist()], dtype=np.float64)
    vals = tf * (ref_len - logs[inv.reshape(-1)][gram])
    norms = np.sqrt(
        np.bincount(entry_sent * N_ORDER + order, weights=vals * vals, minlength=n_sent * N_ORDER)
    ).reshape(n_sent, N_ORDER)
    # CIDEr's "length" is the bigram count, i.e. max(words - 1, 0).
    sent_len = np.fromiter((max(len(x.split()) - 1, 0) for x in sid), dtype=np.int64, count=n_sent)

    # 3. Reference entries keyed by (refset, n-gram).
    r_key = r_rs * n_gram + gram[r_idx]
    r_j = np.repeat(pair_j, r_len)
    r_val = vals[r_idx]
    srt = np.argsort(r_key, kind="stable")
    r_key, r_j, r_val = r_key[srt], r_j[srt], r_val[srt]

    # 4. Hypothesis entries per unit (unit-major, insertion order) joined with the references.
    n_units = len(units.unit_cand)
    cand_sid = np.fromiter((sid[c] for c in units.cands), dtype=np.int64, count=len(units.cands))
    u_sid = cand_sid[units.unit_cand]
    u_rs = units.unit_refset
    h_idx = _ranges(starts[u_sid], counts[u_sid])
    h_unit = np.repeat(np.arange(n_units), counts[u_sid])
    h_key = u_rs[h_unit] * n_gram + gram[h_idx]
    lo = np.searchsorted(r_key, h_key, side="left")
    hi = np.searchsorted(r_key, h_key, side="right")
    hits = hi - lo
    j_h = np.repeat(np.arange(len(h_key)), hits)
    j_r = _ranges(lo, hits)
    h = vals[h_idx][j_h]
    r = r_val[j_r]
    term = np.minimum(h, r) * r if clipped else h * r
    target = (h_unit[j_h] * max_k + r_j[j_r]) * N_ORDER + order[h_idx][j_h]
    sims = np.bincount(target, weights=term, minlength=n_units * max_k * N_ORDER)
    sims = sims.reshape(n_units, max_k, N_ORDER)

    # 5. Normalise, penalise, and sum over references in order.
    u_ref_sid = ref_sid[u_rs]  # (units, max_k), -1 where a refset is shorter
    valid = u_ref_sid >= 0
    safe = np.where(valid, u_ref_sid, 0)
    hn = norms[u_sid][:, None, :]
    rn = norms[safe]
    both = (hn != 0) & (rn != 0)
    sims = np.where(both, sims / np.where(both, hn * rn, 1.0), sims)
    if clipped:
        delta = (sent_len[u_sid][:, None] - sent_len[safe]).astype(np.float64)
        d_uniq = np.unique(delta)
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


class _CiderBase(Metric):
    corpus_dependent = True
    _clipped: bool

    def __init__(self, df: str | Path | DocumentFrequency | None = None, sigma: float = SIGMA,
                 save_df: str | Path | None = None):
        if isinstance(sigma, bool) or not isinstance(sigma, (int, float)) or not (0 < sigma < float("inf")):
            raise InputError(f"{self.family}: sigma must be a positive finite number (the length-penalty width), "
                             f"got {sigma!r}")
        self.df_source = df
        self.sigma = float(sigma)
        self.save_df = save_df

    def _external_df(self) -> DocumentFrequency | None:
        """The df given by the user, or None for df from the scored set."""
        if isinstance(self.df_source, DocumentFrequency):
            return self.df_source
        if self.df_source is not None and str(self.df_source) != "corpus":
            return DocumentFrequency.load(self.df_source)
        return None

    def compute(self, candidates, references) -> MetricScores:
        table = gram_table()
        units = dedupe(candidates, references)
        dfo = self._external_df()
        if dfo is None:
            n = units.n_rows
            if n < 2:
                raise InputError(
                    f"{self.family}: with df from the scored set, {n} unit gives ln(1) = 0 and every "
                    "score 0 (CIDEr depends on the set scored together). Score more captions at once, "
                    "or pass a saved df file (options={'%s': {'df': 'df.json'}}; CLI --cider-df)." % self.family
                )
            df_label = f"corpus:{n}"
            if self.save_df is not None:
                DocumentFrequency.from_references(units.refsets, units.refset_rows.tolist(), table).save(self.save_df)
        else:
            df_label = dfo.source
            if self.save_df is not None:
                dfo.save(self.save_df)
        scores = unit_scores(units, dfo, self._clipped, self.sigma, table)
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

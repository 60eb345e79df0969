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
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..result import MetricScores
from ._units import dedupe, sentence_ngrams
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
                        keys_of=None):
        """df over scoring units: a refset used by k rows counts k times, as in the reference."""
        if keys_of is None:
            keys_of = sentence_ngrams
        df: dict[str, float] = {}
        for refs, mult in zip(refsets, rows_per_refset):
            grams = set()
            for ref in refs:
                grams.update(g for g, _k, _c in keys_of(ref))
            for g in grams:
                df[g] = df.get(g, 0.0) + mult
        n_units = int(sum(rows_per_refset))
        return cls(df, n_units, f"corpus:{n_units}")

    def save(self, path: str | Path) -> str:
        """Write a portable JSON df file; returns its sha256."""
        payload = {
            "format": "capeval-cider-df/1",
            "n_units": self.n_units,
            "df": dict(self.df),
        }
        data = json.dumps(payload, ensure_ascii=False, sort_keys=True).encode("utf-8")
        Path(path).write_bytes(data)
        return hashlib.sha256(data).hexdigest()

    @classmethod
    def load(cls, path: str | Path) -> "DocumentFrequency":
        data = Path(path).read_bytes()
        try:
            payload = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise InputError(f"CIDEr df file {path} is not valid UTF-8 JSON: {e}") from None
        if payload.get("format") != "capeval-cider-df/1":
            raise InputError(f"CIDEr df file {path}: unknown format {payload.get('format')!r}")
        df = {str(k): float(v) for k, v in payload["df"].items()}
        digest = hashlib.sha256(data).hexdigest()[:16]
        return cls(df, int(payload["n_units"]), f"file:{digest}:{payload['n_units']}")


class _Vector:
    __slots__ = ("items", "norm", "length")

    def __init__(self, items, norm, length):
        self.items = items    # [(key, order, tf-idf)] in insertion order
        self.norm = norm      # per order: Euclidean norm (numpy float64, like the reference)
        self.length = length  # number of bigrams


def _vectorize(keys, dfo: DocumentFrequency, log_cache: dict) -> _Vector:
    items = []
    norm = [0.0] * N_ORDER
    length = 0
    # Python floats hold the same IEEE doubles as numpy's scalars and are ~5x faster here;
    # the logs themselves still come from np.log, as in the reference.
    ref_len = float(dfo.ref_len)
    df = dfo.df
    for g, k, tf in keys:
        d = df.get(g, 0.0)
        lg = log_cache.get(d)
        if lg is None:
            lg = log_cache[d] = float(np.log(max(1.0, d)))
        v = float(tf) * (ref_len - lg)
        items.append((g, k, v))
        norm[k] += v * v  # pow(v, 2) is exactly v*v: both are one correctly rounded product
        if k == 1:
            length += tf
    return _Vector(items, [math.sqrt(x) for x in norm], length)


class _RefSet:
    """A unit's references, indexed by n-gram so one pass over the hypothesis finds all
    common terms of all references, in the hypothesis' insertion order (the sum order)."""

    __slots__ = ("refs", "index")

    def __init__(self, refs: list[_Vector]):
        self.refs = refs
        index: dict[str, list[tuple[int, float]]] = {}
        for j, ref in enumerate(refs):
            for g, _k, v in ref.items:
                index.setdefault(g, []).append((j, v))
        self.index = index


def _unit_score(hyp: _Vector, rs: _RefSet, clipped: bool, sigma: float, penalty_cache: dict) -> float:
    refs = rs.refs
    sums = [[0.0] * N_ORDER for _ in refs]
    index = rs.index
    for g, k, h in hyp.items:
        hits = index.get(g)
        if hits is None:
            continue
        for j, r in hits:
            if clipped:
                sums[j][k] += (h if h < r else r) * r
            else:
                sums[j][k] += h * r
    score = [0.0] * N_ORDER
    hn = hyp.norm
    for j, ref in enumerate(refs):
        val = sums[j]
        rn = ref.norm
        if clipped:
            delta = float(hyp.length - ref.length)
            pen = penalty_cache.get(delta)
            if pen is None:
                # Euler's e raised to a power (not exp()), as the reference does: ulp-exact.
                pen = penalty_cache[delta] = np.e ** (-(delta**2) / (2 * sigma**2))
        for k in range(N_ORDER):
            s = val[k]
            if hn[k] != 0 and rn[k] != 0:
                s /= hn[k] * rn[k]
            if clipped:
                s *= pen
            score[k] += s
    # numpy's mean of 4 values is the sequential sum / 4 (checked bit-for-bit on 2e5 draws).
    avg = (((score[0] + score[1]) + score[2]) + score[3]) / N_ORDER
    avg /= len(refs)
    avg *= 10.0
    return avg


class _CiderBase(Metric):
    corpus_dependent = True
    _clipped: bool

    def __init__(self, df: str | Path | DocumentFrequency | None = None, sigma: float = SIGMA,
                 save_df: str | Path | None = None):
        self.df_source = df
        self.sigma = sigma
        self.save_df = save_df

    def _doc_freq(self, units, keys_of) -> DocumentFrequency:
        if isinstance(self.df_source, DocumentFrequency):
            return self.df_source
        if self.df_source is not None and str(self.df_source) != "corpus":
            return DocumentFrequency.load(self.df_source)
        n = units.n_rows
        if n < 2:
            raise InputError(
                f"{self.family}: with df from the scored set, {n} unit gives ln(1) = 0 and every "
                "score 0 (CIDEr depends on the set scored together). Score more captions at once, "
                "or pass a saved df file (options={'%s': {'df': 'df.json'}}; CLI --cider-df)." % self.family
            )
        return DocumentFrequency.from_references(units.refsets, units.refset_rows.tolist(), keys_of)

    def compute(self, candidates, references) -> MetricScores:
        units = dedupe(candidates, references)
        keys_of = sentence_ngrams
        dfo = self._doc_freq(units, keys_of)
        if self.save_df is not None:
            dfo.save(self.save_df)
        log_cache: dict = {}
        pen_cache: dict = {}
        vec_cache: dict[str, _Vector] = {}

        def vec_of(sentence: str) -> _Vector:
            v = vec_cache.get(sentence)
            if v is None:
                v = vec_cache[sentence] = _vectorize(keys_of(sentence), dfo, log_cache)
            return v

        cand_vecs = [vec_of(c) for c in units.cands]
        ref_vecs = [_RefSet([vec_of(r) for r in refs]) for refs in units.refsets]
        unit_scores = np.array(
            [
                _unit_score(cand_vecs[ci], ref_vecs[ri], self._clipped, self.sigma, pen_cache)
                for ci, ri in zip(units.unit_cand.tolist(), units.unit_refset.tolist())
            ],
            dtype=float,
        )
        per_row = unit_scores[units.row_unit]
        name = self.outputs[0].name
        fields = {"n": N_ORDER, "df": dfo.source}
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

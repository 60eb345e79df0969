"""What the learned metric families (``nneval``, ``learned``) share: their optional score cache,
the report of feature values outside the training range, the check that the features were
computed by the metric variants the model was trained on, and their corpus pre-pass.

The pre-pass: a feature such as CIDEr-D takes its document frequencies from the units scored
together, and those units are the model's reference units (a candidate against groups of at most
``max_refs`` references, or against each reference alone), tokenized by the model's tokenizer.
:class:`UnitDf` is that df counted over a part of the input; parts add up to the whole input's,
and an instance given it (option ``df``) scores every row as the whole input would.
"""
from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InputError

#: Warn when more than this share of the feature values lie outside the training range.
CLIP_WARN = 0.05


def score_cache(arg: bool | str):
    """The ``cache`` option: False (none), True (the default cache root) or a directory."""
    if not arg:
        return None
    from ..service.cache import ScoreCache

    return ScoreCache(None if arg is True else arg)


def range_report(family: str, model_name: str, outside: np.ndarray, labels: Sequence[str],
                 verb: str = "clipped to") -> dict:
    """``clipped_fraction`` overall and per feature for ``details``; warns naming the three
    features most often outside the range when the overall share is above :data:`CLIP_WARN`."""
    frac = float(outside.mean()) if outside.size else 0.0
    per = outside.mean(axis=0) if outside.size else np.zeros(len(labels))
    if frac > CLIP_WARN:
        worst = sorted(zip(per.tolist(), labels), reverse=True)[:3]
        warnings.warn(f"{family}: {100 * frac:.1f}% of feature values were {verb} model {model_name!r}'s "
                      f"training range (most: {', '.join(f'{n} {100 * v:.0f}%' for v, n in worst)})",
                      stacklevel=4)
    return {"clipped_fraction": frac, "clipped_fraction_per_feature": dict(zip(labels, per.tolist()))}


def _variant_of(signature: str) -> str:
    return signature.split("|", 1)[0]


def check_variants(family: str, model_name: str, trained: Mapping[str, str], now: Mapping[str, str]) -> None:
    """Warn when a feature's metric variant differs from the one the model was trained on."""
    changed = [f"{k} ({_variant_of(trained[k])} → {_variant_of(v)})" for k, v in now.items()
               if k in trained and _variant_of(trained[k]) != _variant_of(v)]
    if changed:
        warnings.warn(f"{family}: model {model_name!r} was trained on other metric variants: "
                      f"{', '.join(changed)}; its scores may be meaningless", stacklevel=4)


@dataclass(frozen=True)
class UnitDf:
    """The pre-pass state of a learned family: CIDEr's df over its reference units. ``units``
    names how they were formed (family, reference policy, tokenizer); parts formed otherwise
    do not add up."""

    df: Any  # capeval.metrics.cider.DocumentFrequency
    units: str

    def __add__(self, other: UnitDf) -> UnitDf:
        if not isinstance(other, UnitDf):
            return NotImplemented
        if other.units != self.units:
            raise ValueError(f"pre-pass states of different reference units cannot merge: {self.units}, {other.units}")
        return UnitDf(self.df + other.df, self.units)


def given_df(family: str, value):
    """The ``df`` option: None or ``"corpus"`` (the df of the units scored together, the
    default), a :class:`UnitDf` (the pre-pass state), a ``DocumentFrequency``, or a df file
    (``capeval score --save-cider-df``), read here once."""
    from ..metrics.cider import DocumentFrequency

    if value is None or (isinstance(value, str) and value == "corpus"):
        return None
    if isinstance(value, (UnitDf, DocumentFrequency)):
        return value
    if isinstance(value, (str, bytes)) or hasattr(value, "__fspath__"):
        return DocumentFrequency.load(value)
    raise InputError(f"{family}: df={value!r} must be 'corpus', a df file or a DocumentFrequency")


def feature_df(family: str, given, units: str, has_df_features: bool):
    """The df the features get, and the signature fields it adds: a pre-pass state adds none
    (it is what the whole input gives), any other df names its source."""
    if given is None or not has_df_features:
        return None, {}
    if isinstance(given, UnitDf):
        if given.units != units:
            raise InputError(f"{family}: its pre-pass state was counted over other reference units "
                             f"({given.units}, this instance scores {units})")
        return given.df, {}
    return given, {"df": given.source}


def batch_prepass(given, has_df_features: bool, units: str, tokenizer: str, candidates, references, unit_texts):
    """A learned family's pre-pass state of a batch: the df of its reference units
    (``unit_texts(cands, refs) -> (unit candidates, unit reference lists)``, the family's own
    grouping), or None when no feature takes a df or one was given."""
    from ..validation import validate_corpus

    if given is not None or not has_df_features:
        return None
    if not len(candidates):
        return UnitDf(empty_df(), units)
    cands, refs = validate_corpus(candidates, references, empty_refused_by="a learned model's features")
    return UnitDf(units_df(*unit_texts(cands, refs), tokenizer), units)


def empty_df():
    """The df of no units (the pre-pass state of an empty batch)."""
    from ..metrics.cider import DocumentFrequency

    with np.errstate(divide="ignore"):  # rho = ln(0): never used, no unit is scored with it
        return DocumentFrequency({}, 0, "corpus:0")


def units_df(candidates: Sequence[str], references: Sequence[Sequence[str]], tokenizer: str):
    """CIDEr's df of these units as ``capeval.score`` counts it when it scores them (validated,
    tokenized by ``tokenizer``, a unit repeated k times counted k times)."""
    from ..metrics.cider import DocumentFrequency
    from ..text import tokenize_corpus
    from ..units import dedupe
    from ..validation import validate_corpus

    cands, refs = validate_corpus(candidates, references, empty_refused_by="a learned model's features")
    tc, tr = tokenize_corpus(cands, refs, tokenizer)
    units = dedupe(tc, tr)
    return DocumentFrequency.from_references(units.refsets, units.refset_rows.tolist())


def stream_obstacle(family: str, model_name: str, features) -> str | None:
    """Why a learned family with this model cannot be scored chunk by chunk
    (``Metric.cannot_stream``), or None when it can: a feature computed with options under which
    a row depends on its neighbours (the shipped default ``learned`` model's BERTScore features
    reproduce bert_score's batch padding floor). Otherwise every step is row-local given the
    pre-pass state (:class:`UnitDf`): the features (the tests check it) and the model's
    combination of them (``capeval.learn.rowlocal``, a fixed order instead of BLAS products)."""
    from ..metrics.registry import family_for
    from .features import label
    from .ranker_features import TEXT_FEATURES

    for f in features:
        if f.metric in TEXT_FEATURES or f.metric == "length":
            continue
        why = family_for(f.metric).cannot_stream(dict(f.options))
        if why is not None:
            # the family's reason without its fix (options of the feature, which the model fixes)
            return (f"{family}: the feature {label(f)} of model {model_name!r} depends on the rows around it "
                    f"({why.split('; ')[0]}); score it in memory")
    return None

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
from ..metrics.statistics import RowMean, Statistics, check_default_rule
from ..metrics._long_text import LongTextWarning

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
    from ..dedup import dedupe
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


# ------------------------------------------------------------------ inputs outside the training range

#: A feature value is outside the training range when it lies beyond it by more than this share
#: of the range's width: the stored ranges are the training extremes, so BLEU = 0 against a lower
#: bound of 1e-18 is inside.
FEATURE_SLACK = 0.01
#: Per-row columns of the statistics (0/1 ints, summed exactly in any grouping).
OOD_LENGTH = "_ood_length"
OOD_FEATURES = "_ood_features"
LONG_MODES = ("truncate", "sentences")


def length_range(model) -> dict | None:
    """The word-length range of the texts a model was trained on: ``meta["length_range"]`` when
    the file records it, else the packaged measurement of a shipped model's training benchmarks
    (``weights/length_ranges.json``, written by scripts/learned_length_ranges.py, matched by the
    file's sha256); None when unknown. ``{"candidates": (lo, hi), "references": (lo, hi)}``: from
    the shortest text to the 99.9th percentile."""
    from pathlib import Path

    from ..guards import read_json_file

    rec = model.meta.get("length_range")
    if rec is None:
        table, _ = read_json_file(Path(__file__).parent / "weights" / "length_ranges.json", "length ranges")
        rec = next((v for v in table.values() if v.get("sha256") == model.sha256), None)
        if rec is None:
            return None
    return {side: (float(rec[side]["min"]), float(rec[side]["p999"])) for side in ("candidates", "references")}


def out_of_range(X: np.ndarray, lo: np.ndarray, hi: np.ndarray, candidates: Sequence[str],
                 references: Sequence[Sequence[str]], lengths: dict | None) -> tuple[np.ndarray, np.ndarray]:
    """Per row, 0/1: a text's length outside ``lengths`` (a candidate, or any of its references),
    and a feature value outside ``[lo, hi]`` by more than :data:`FEATURE_SLACK` of the width."""
    X = np.asarray(X, dtype=float)
    slack = FEATURE_SLACK * np.maximum(hi - lo, 0.0)
    feats = ((X < lo - slack) | (X > hi + slack)).any(axis=1) if X.size else np.zeros(len(candidates), bool)
    length = np.zeros(len(candidates), dtype=bool)
    if lengths is not None:
        (clo, chi), (rlo, rhi) = lengths["candidates"], lengths["references"]
        for i, (c, refs) in enumerate(zip(candidates, references)):
            n = len(c.split())
            length[i] = not clo <= n <= chi or any(not rlo <= len(r.split()) <= rhi for r in refs)
    return length.astype(np.int64), feats.astype(np.int64)


def ood_message(family: str, model_name: str, rows: int, length: int, feats: int, n: int) -> str:
    return (f"{family}: {rows} of {n} rows lie outside model {model_name!r}'s training range ({length} by caption "
            f"length, {feats} by feature values); their scores extrapolate (signature ood:{rows}, "
            f"result.details[{family!r}]['out_of_range']); long_text=sentences scores a paragraph sentence by "
            "sentence, within the range (docs/LEARNED.md)")


def ood_details(length: np.ndarray, feats: np.ndarray, lengths: dict | None) -> dict:
    rows = int((length | feats).sum())
    return {"rows": rows, "length": int(length.sum()), "features": int(feats.sum()),
            "length_range": None if lengths is None else {k: list(v) for k, v in lengths.items()},
            "feature_slack": FEATURE_SLACK}


class OodMean(RowMean):
    """The learned families' aggregate: the mean, plus the per-row out-of-range flags summed into
    ``details[family]["out_of_range"]``, the ``ood:N`` signature field and one warning, so a
    streamed run reports the whole input's count."""

    def __init__(self, outputs: Sequence[str], family: str, model_name: str, lengths: dict | None):
        super().__init__(outputs)
        self.family, self.model_name = family, model_name
        self.lengths = None if lengths is None else {k: tuple(v) for k, v in lengths.items()}

    def _flags(self, st) -> tuple[np.ndarray, np.ndarray]:
        if OOD_LENGTH not in st.rows:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        return st.rows[OOD_LENGTH], st.rows[OOD_FEATURES]

    def details(self, st) -> dict[str, Any]:
        return {"out_of_range": ood_details(*self._flags(st), self.lengths)}

    def fields(self, st) -> dict[str, Any]:
        rows = int((self._flags(st)[0] | self._flags(st)[1]).sum())
        return {"ood": rows} if rows else {}

    def warning(self, st) -> Warning | None:
        length, feats = self._flags(st)
        rows = int((length | feats).sum())
        return LongTextWarning(ood_message(self.family, self.model_name, rows, int(length.sum()), int(feats.sum()),
                                           st.n)) if rows else None

    def __eq__(self, other: object) -> bool:
        return (RowMean.__eq__(self, other) and isinstance(other, OodMean) and self.family == other.family
                and self.model_name == other.model_name and self.lengths == other.lengths)

    def __hash__(self) -> int:
        return hash((type(self), self.outputs, self.family))


def finish_ood(out, family: str, model_name: str, length: np.ndarray, feats: np.ndarray, lengths: dict | None,
               *, warn: bool):
    """``out`` (MetricScores) with the out-of-range details and ``ood:N`` (last field, only when
    N > 0); warns when ``warn``, else keeps the per-row flags for :func:`ood_statistics`."""
    d = ood_details(length, feats, lengths)
    out.details["out_of_range"] = d
    if d["rows"]:
        out.signature_fields["ood"] = d["rows"]
    if not warn:
        out.details["_ood_rows"] = (length, feats)
    elif d["rows"]:

        warnings.warn(ood_message(family, model_name, d["rows"], d["length"], d["features"], len(length)),
                      LongTextWarning, stacklevel=4)
    return out


def ood_statistics(metric, family: str, model_name: str, lengths: dict | None, candidates, references,
                   **kw) -> Statistics:
    """A learned family's statistics: its per-row scores and out-of-range flags, without the
    data-dependent ``ood`` field (the merged run stamps and warns it once: :class:`OodMean`)."""
    from ..result import MetricScores

    out = metric.compute(candidates, references, _warn_ood=False, **kw)
    length, feats = out.details.pop("_ood_rows")
    agg = OodMean(tuple(out.per_caption), family, model_name, lengths)
    fields = {k: v for k, v in out.signature_fields.items() if k != "ood"}
    st = Statistics(len(candidates), agg, rows={**out.per_caption, OOD_LENGTH: length, OOD_FEATURES: feats},
                    fields=fields, details=out.details)
    check_default_rule(family, MetricScores(out.corpus, out.per_caption), st)
    return st


def split_sentences(text: str) -> list[str]:
    """Sentences of a caption: split after . ! or ? followed by white space; a caption without
    such an end is one sentence."""
    import re

    return [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s] or [text]


def sentence_units(candidates: Sequence[str], references: Sequence[Sequence[str]]):
    """``long_text=sentences``: one unit per candidate sentence, against the sentences of all
    the row's references (in order, each once); and the row of each unit."""
    cands: list[str] = []
    refs: list[list[str]] = []
    owner: list[int] = []
    for i, (c, rs) in enumerate(zip(candidates, references)):
        rsents = list(dict.fromkeys(s for r in rs for s in split_sentences(r)))
        for sent in split_sentences(c):
            cands.append(sent)
            refs.append(rsents)
            owner.append(i)
    return cands, refs, np.asarray(owner, dtype=np.int64)


def row_means(values: np.ndarray, owner: np.ndarray, n: int) -> np.ndarray:
    """Per row, the mean of its units' values, summed in unit order (row-local)."""
    out = np.zeros(n)
    counts = np.zeros(n, dtype=np.int64)
    for v, i in zip(values.tolist(), owner.tolist()):
        out[i] += v
        counts[i] += 1
    return out / np.maximum(counts, 1)


def row_any(flags: np.ndarray, owner: np.ndarray, n: int) -> np.ndarray:
    out = np.zeros(n, dtype=np.int64)
    np.maximum.at(out, owner, flags.astype(np.int64))
    return out

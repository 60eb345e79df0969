"""NNEval (Sharif et al., ECCV 2018): P(human-like) from a small network over metric scores.

The input features (METEOR, WMD similarity, BLEU-1..4, SPICE-style F, CIDEr-D/10 by default)
are computed by capeval's own registered metrics, min-max normalised with the bounds stored in
the model file, and fed to the model; the score is the softmax probability of the "human"
class. The shipped model (``capeval/learn/weights/nneval-default.npz``) is trained by
``scripts/train_default_nneval.py`` on Tanti et al.'s machine captions vs human captions
(docs/NNEVAL.md); ``model=<path>`` loads any model written by ``capeval train``.

Corpus dependent: CIDEr-D takes its document frequencies from the captions scored together
(their reference units), as in ``capeval.score``. NNEval's authors used a fixed COCO-val df
instead (docs/NNEVAL.md, Features): option ``df`` takes a df file, and the corpus pre-pass state
of :meth:`NNEval.prepass`, so chunks of an input score as the whole does.

No silent extrapolation: features are computed under the model's reference policy (at most the
number of references seen in training, ``capeval.learn.refsets``) and clipped to the training
range. The signature names both (``refs``, ``clip``); ``details["clipped_fraction"]`` gives the
share of feature values that were clipped, and a warning is raised above
``capeval.learn.metric_support.CLIP_WARN``.
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

VARIANT = "nneval_capeval"
#: Bump when the same model file can give other scores (2: clipping and reference policies).
SCORING_REVISION = "scoring:2"


def _load(model):
    """The model of option ``model``: a LearnedModel, a path, or None (the shipped one)."""
    from .configs import default_model_path
    from .model import LearnedModel

    if isinstance(model, LearnedModel):
        return model
    path = Path(model) if model is not None else default_model_path()
    if not path.is_file():
        raise ResourceNotFound(f"nneval: model file {path} not found")
    return LearnedModel.load(path)


@register
class NNEval(ModelFamily):
    """Learned human-likeness score.

    Parameters
    ----------
    model : str or Path or LearnedModel, optional
        A model file from ``capeval train`` (``.npz``); default the shipped NNEval model.
    cache : bool or str
        Reuse feature scores through the benchmark score cache (``True``: its default
        directory, a string: that directory). Off by default: a metric writes no files unless
        asked to.
    refs : {"all", "cap", "groups", "per-ref"}, optional
        Reference policy (``capeval.learn.refsets``); default the model's own. A model trained
        ``per-ref`` only makes sense with ``per-ref``.
    clip : bool, optional
        Clip features to the training range; default the model's setting (True unless the
        model file says otherwise). ``False`` lets the network extrapolate.
    df : "corpus" or path or DocumentFrequency, optional
        The document frequencies of the CIDEr-D feature: ``"corpus"`` (default) counts them
        over the units scored together, a df file (``capeval score --save-cider-df``) fixes
        them (named in the signature), and the state of :meth:`prepass` is the whole input's
        when scoring it in parts.
    long_text : {"truncate", "sentences"}
        As ``learned``'s: ``truncate`` (default) scores each caption whole and counts rows
        outside the training range (caption length, feature values: warning,
        ``details["nneval"]["out_of_range"]``, ``ood:N``); ``sentences`` scores each candidate
        sentence against the references' sentences and averages (docs/LEARNED.md).
    """

    family = "nneval"
    extras = ("semantic",)
    variant = VARIANT
    outputs = (
        OutputInfo(
            "nneval", "nneval", VARIANT, (0.0, 1.0), True,
            "P(human) of an 8-72-72-2 network over METEOR, WMD, BLEU-1..4, SPICE, CIDEr-D/10",
            "Sharif et al., ECCV 2018 (NNEval)",
        ),
    )
    #: 1: scores combine features in a fixed row-local order instead of BLAS matrix products
    #: (values moved by at most a few ulps; docs/NNEVAL.md), so scores cached before are recomputed.
    cache_revision = 1

    def __init__(self, model=None, cache: bool | str = False, refs: str | None = None, clip: bool | None = None,
                 df=None, long_text: str = "truncate"):
        from ..errors import InputError
        from .refsets import POLICIES, describe

        self.model = _load(model)
        if refs is not None and refs not in POLICIES:
            raise InputError(f"nneval: refs={refs!r}; one of {', '.join(POLICIES)}")
        if clip is not None and not isinstance(clip, bool):
            raise InputError(f"nneval: clip={clip!r} must be true or false")
        if refs is not None and (refs == "per-ref") != (self.model.refs == "per-ref"):
            raise InputError(f"nneval: model {self.model.name!r} was trained with refs={self.model.refs!r}; "
                             f"refs={refs!r} would feed it features of another kind")
        self.refs = refs or self.model.refs
        self.clip = self.model.clip if clip is None else clip
        self._setup(cache, df, long_text, describe(self.refs, self.model.max_refs))

    _load = staticmethod(_load)

    def _unit_texts(self, candidates, references):
        from .refsets import expand

        ex = expand(candidates, references, self.refs, self.model.max_refs)
        return ex.candidates, ex.references

    @classmethod
    def cache_token(cls, options: dict) -> str:
        """sha256 of the model file (a retrained model never reuses cached scores) and the
        scoring revision (scores cached before clipping and reference policies existed are
        not reused for the same file)."""
        from .model import LearnedModel
        from .configs import default_model_path
        from ..digests import sha256_file

        from .features import feature_tokens

        model = options.get("model")
        if isinstance(model, LearnedModel):
            digest = model.sha256 or f"unsaved-{id(model)}"
        else:
            path = Path(model) if model is not None else default_model_path()
            if not path.is_file():
                raise ResourceNotFound(f"nneval: model file {path} not found")
            digest, model = sha256_file(path), LearnedModel.load(path)
        # The feature families' tokens: a new METEOR conversion or SPICE-py revision changes
        # the features, so it changes the key too.
        features = feature_tokens(model.features)
        return f"{digest}|{SCORING_REVISION}" + (f"|features:{features}" if features else "")

    @classmethod
    def provenance(cls, options: dict) -> dict:
        """What the model saw (``capeval bench`` refuses to report it there unless asked)."""
        m = _load(options.get("model"))
        return {"model": m.name, "trained_on": list(m.meta.get("trained_on", [])),
                "selected_on": list(m.meta.get("selected_on", [])),
                "design_chosen_on": list(m.meta.get("design_chosen_on", []))}

    def compute(self, candidates: Sequence[str], references: Sequence[Sequence[str]], *,
                _warn_ood: bool = True) -> MetricScores:
        from .features import label
        from .metric_support import finish_ood, out_of_range, row_any, row_means, sentence_units
        from .refsets import describe

        m = self.model
        n = len(candidates)
        dfo, df_fields = feature_df("nneval", self._df, self._units, self._df_features)
        owner = None
        if self.long_text == "sentences":
            candidates, references, owner = sentence_units(candidates, references)
        fm = m.features_for(candidates, references, cache=score_cache(self._cache_arg), refs=self.refs, df=dfo)
        check_variants("nneval", m.name, m.meta.get("feature_signatures", {}), fm.signatures)
        scores = np.asarray(m.predict(fm.X, clip=self.clip), dtype=float)
        length, feats = out_of_range(fm.X, m.scaler.lo, m.scaler.hi, candidates, references, self._lengths)
        if owner is not None:
            scores = row_means(scores, owner, n)
            length, feats = row_any(length, owner, n), row_any(feats, owner, n)
        outside = m.scaler.outside(fm.X)
        labels = [label(f) for f in m.features]
        clipped = range_report("nneval", m.name, outside, labels,
                               "clipped to" if self.clip else "extrapolated beyond")
        out = MetricScores(
            corpus={"nneval": float(np.mean(scores))},
            per_caption={"nneval": scores},
            signature_fields={
                "model": m.name,
                "msha": (m.sha256 or "unsaved")[:12],
                "kind": (m.kind if m.kind == "linear" or len(m.params) > 2 else "softmax-regression")
                + ("-monotone" if m.meta.get("config", {}).get("monotone") else ""),
                "feats": "+".join(label(f) for f in m.features),
                "ftok": m.tokenizer,
                "val": m.meta.get("validation", {}).get("protocol", "unknown"),
                "refs": describe(self.refs, m.max_refs),
                "clip": "train-range" if self.clip else "off",
                # synthetic training negatives (docs/NNEVAL.md §2); files without the key had none
                "neg": "+".join(m.meta.get("negatives", [])) or "none",
                **df_fields,
                **({"long": "sentences"} if owner is not None else {}),
            },
            details={"features": fm.X, "feature_labels": labels, "feature_signatures": fm.signatures, **clipped,
                     "clipped_rows": int(outside.any(axis=1).sum())},
        )
        return finish_ood(out, self.family, m.name, length, feats, self._lengths, warn=_warn_ood)

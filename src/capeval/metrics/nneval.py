"""NNEval (Sharif et al., ECCV 2018): P(human-like) from a small network over metric scores.

The input features (METEOR, WMD similarity, BLEU-1..4, SPICE-style F, CIDEr-D/10 by default)
are computed by capeval's own registered metrics, min-max normalised with the bounds stored in
the model file, and fed to the model; the score is the softmax probability of the "human"
class. The shipped model (``capeval/learn/weights/nneval-default.npz``) is trained by
``scripts/train_default_nneval.py`` on Tanti et al.'s machine captions vs human captions
(docs/NNEVAL.md); ``model=<path>`` loads any model written by ``capeval train``.

Corpus dependent: CIDEr-D takes its document frequencies from the captions scored together,
as in ``capeval.score``. NNEval's authors used a fixed COCO-val df instead (METHODS.md §4.1).
"""
from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..errors import ResourceNotFound
from ..result import MetricScores
from .base import Metric, OutputInfo
from .registry import register

VARIANT = "nneval_capeval"


def _variant_of(signature: str) -> str:
    return signature.split("|", 1)[0]


@register
class NNEval(Metric):
    """Learned human-likeness score.

    Parameters
    ----------
    model : str or Path or LearnedModel, optional
        A model file from ``capeval train`` (``.npz``); default the shipped NNEval model.
    cache : bool or str
        Reuse feature scores through the benchmark score cache (``True``: its default
        directory, a string: that directory). Off by default: a metric writes no files unless
        asked to.
    """

    family = "nneval"
    variant = VARIANT
    outputs = (
        OutputInfo(
            "nneval", "nneval", VARIANT, (0.0, 1.0), True,
            "P(human) of an 8-72-72-2 network over METEOR, WMD, BLEU-1..4, SPICE, CIDEr-D/10",
            "Sharif et al., ECCV 2018 (NNEval)",
        ),
    )
    text_input = "raw"  # features are tokenized by the model's own tokenizer
    corpus_dependent = True

    def __init__(self, model=None, cache: bool | str = False):
        from ..learn.model import LearnedModel
        from ..learn.nneval import default_model_path

        if isinstance(model, LearnedModel):
            self.model = model
        else:
            self.model = LearnedModel.load(Path(model) if model is not None else default_model_path())
        self._cache_arg = cache

    @classmethod
    def cache_token(cls, options: dict) -> str:
        """sha256 of the model file: a retrained model never reuses cached scores."""
        from ..learn.model import LearnedModel
        from ..learn.nneval import default_model_path
        from ..learn.weights import sha256_file

        model = options.get("model")
        if isinstance(model, LearnedModel):
            return model.sha256 or f"unsaved-{id(model)}"
        path = Path(model) if model is not None else default_model_path()
        if not path.is_file():
            raise ResourceNotFound(f"nneval: model file {path} not found")
        return sha256_file(path)

    def _cache(self):
        if not self._cache_arg:
            return None
        from ..bench.cache import ScoreCache

        return ScoreCache(None if self._cache_arg is True else self._cache_arg)

    def compute(self, candidates: Sequence[str], references: Sequence[Sequence[str]]) -> MetricScores:
        from ..learn.features import label

        fm = self.model.features_for(candidates, references, cache=self._cache())
        self._check_variants(fm.signatures)
        scores = np.asarray(self.model.predict(fm.X), dtype=float)
        m = self.model
        return MetricScores(
            corpus={"nneval": float(np.mean(scores))},
            per_caption={"nneval": scores},
            signature_fields={
                "model": m.name,
                "msha": (m.sha256 or "unsaved")[:12],
                "kind": m.kind if m.kind == "linear" or len(m.params) > 2 else "softmax-regression",
                "feats": "+".join(label(f) for f in m.features),
                "ftok": m.tokenizer,
                "val": m.meta.get("validation", {}).get("protocol", "unknown"),
            },
            details={"features": fm.X, "feature_labels": [label(f) for f in m.features],
                     "feature_signatures": fm.signatures},
        )

    def _check_variants(self, now: dict[str, str]) -> None:
        trained = self.model.meta.get("feature_signatures", {})
        changed = [f"{k} ({_variant_of(trained[k])} → {_variant_of(v)})" for k, v in now.items()
                   if k in trained and _variant_of(trained[k]) != _variant_of(v)]
        if changed:
            warnings.warn(f"nneval: model {self.model.name!r} was trained on other metric variants: "
                          f"{', '.join(changed)}; its scores may be meaningless", stacklevel=3)

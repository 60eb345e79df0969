"""A trained learned metric: features + min-max bounds + parameters + provenance, in one file.

``kind`` is ``"mlp"`` (NNEval, and LCEval-style with no hidden layer: score = P(human)) or
``"linear"`` (score = w·x + b on normalised features). Everything needed to score new
captions is in the file; the rest of ``meta`` (training data digest, feature signatures,
validation curve, ``trained_on`` / ``selected_on`` benchmark lists) says where the numbers came
from.

How a model meets new captions is also in ``meta``: ``refs`` (a reference policy of
:mod:`capeval.learn.refsets`, with ``max_refs``) and ``clip`` (limit features to the training
range). Files written before these keys existed read as ``refs="all"`` (what they were trained
with) and ``clip=True``: no model extrapolates silently.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError
from . import mlp
from .features import Feature, FeatureMatrix, MinMax, extract
from .refsets import DEFAULT_K, POLICIES
from .model_files import load_model, save_model

KINDS = ("mlp", "linear")
FORMAT = "capeval-learned-model/1"


@dataclass
class LearnedModel:
    kind: str
    params: list[np.ndarray]
    scaler: MinMax
    features: tuple[Feature, ...]
    tokenizer: str = "ptb"
    meta: dict[str, Any] = field(default_factory=dict)
    sha256: str | None = None  # of the file it was loaded from / saved to

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise InputError(f"unknown model kind {self.kind!r}; one of {', '.join(KINDS)}")
        n = len(self.features)
        if self.scaler.lo.shape != (n,) or self.scaler.hi.shape != (n,):
            raise InputError(f"min-max bounds have shape {self.scaler.lo.shape}, expected ({n},)")
        if self.kind == "mlp":
            if len(self.params) < 2 or len(self.params) % 2:
                raise InputError(f"an mlp needs weight/bias pairs, got {len(self.params)} arrays")
            if self.params[0].shape[0] != n or self.params[-1].shape != (2,):
                raise InputError(f"mlp shapes {[p.shape for p in self.params]} do not fit {n} features and 2 classes")
        elif len(self.params) != 2 or self.params[0].shape != (n,) or self.params[1].shape != ():
            raise InputError(f"a linear model needs w ({n},) and scalar b, got {[p.shape for p in self.params]}")

        refs = self.meta.get("refs", "all")
        if refs not in POLICIES:
            raise InputError(f"model reference policy {refs!r} is not one of {', '.join(POLICIES)}")
        if not isinstance(self.meta.get("clip", True), bool):
            raise InputError(f"model 'clip' must be true or false, got {self.meta.get('clip')!r}")

    @property
    def name(self) -> str:
        return str(self.meta.get("name", "custom"))

    @property
    def refs(self) -> str:
        """Reference policy the model scores with (``capeval.learn.refsets``)."""
        return str(self.meta.get("refs", "all"))

    @property
    def max_refs(self) -> int:
        return int(self.meta.get("max_refs", DEFAULT_K))

    @property
    def clip(self) -> bool:
        return bool(self.meta.get("clip", True))

    def predict(self, X_raw: np.ndarray, clip: bool | None = None) -> np.ndarray:
        """Scores from raw (pre-scaled) feature rows; ``clip`` defaults to the model's setting.

        Row-local: each row is min-max normalised elementwise (clipped first when asked), then
        combined in the fixed order of ``capeval.learn.rowlocal`` (linear: Σ z[k]·w[k] over k in
        column order, then + b; mlp: each layer the same per unit, bias last, ReLU between),
        so a row's score never depends on the rows predicted with it."""
        from .rowlocal import dot

        Z = self.scaler.transform(X_raw, clip=self.clip if clip is None else clip)
        if self.kind == "mlp":
            return mlp.p_class1_rows(self.params, Z)
        return dot(Z, self.params[0], float(self.params[1]))

    def features_for(self, candidates: Sequence[str], references: Sequence[Sequence[str]], *, cache=None,
                     progress=None, refs: str | None = None, df=None) -> FeatureMatrix:
        return extract(candidates, references, self.features, tokenizer=self.tokenizer, cache=cache,
                       progress=progress, refs=refs or self.refs, max_refs=self.max_refs, df=df)

    def score(self, candidates: Sequence[str], references: Sequence[Sequence[str]], *, cache=None
              ) -> np.ndarray:
        return self.predict(self.features_for(candidates, references, cache=cache).X)

    # ---- I/O --------------------------------------------------------------------------
    def save(self, path: Path | str) -> str:
        self.sha256 = save_model(path, self, FORMAT, {"feature_lo": self.scaler.lo, "feature_hi": self.scaler.hi})
        return self.sha256

    @classmethod
    def load(cls, path: Path | str) -> "LearnedModel":
        return load_model(path, FORMAT, lambda arrays, meta, features, params: cls(
            meta["kind"], params, MinMax(arrays["feature_lo"], arrays["feature_hi"]), features,
            meta.get("tokenizer", "ptb"), meta))

"""A trained ``learned`` model: features, scaler, parameters and provenance in one ``.npz``.

The file records which benchmarks (and how many units of each) it was trained on and which
it was selected on, so ``capeval bench`` can refuse to report a learned model on data it saw.
No pickle: arrays plus one JSON string (``capeval.learn.model_files``).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError
from . import ranker
from . import ranker_features as rf
from .features import Feature
from .model_files import load_model, save_model

FORMAT = "capeval-ranker/1"
KINDS = ("linear", "pairwise_ls", "ridge", "mlp")

#: The shipped model's recipe, chosen by mean leave-one-benchmark-out result (docs/LEARNED.md);
#: ``capeval train learned`` and scripts/train_default_learned.py start from it. SPICE-py is in:
#: it keeps a weight in every fold and wins 3 of 6 held-out benchmarks where the 14 features
#: without it win 1. No length features: with them the mean leave-one-out result is no better,
#: and caption length is what shifts most between the 2014-era captioners of the training data
#: and modern ones, so a length weight is the least likely part to transfer.
DEFAULT_KIND = "linear"
DEFAULT_FEATURES = rf.DEFAULT_SPEC
DEFAULT_HYPER: dict[str, Any] = {"l2": 1e-3}
DEFAULT_MAX_REFS = 5


@dataclass
class RankerModel:
    kind: str
    params: list[np.ndarray]
    scaler: ranker.Scaler
    features: tuple[Feature, ...]
    max_refs: int | None = 5
    tokenizer: str = "ptb"
    meta: dict[str, Any] = field(default_factory=dict)
    sha256: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise InputError(f"unknown learned-model kind {self.kind!r}; one of {', '.join(KINDS)}")
        n = len(self.features)
        if self.scaler.lo.shape != (n,):
            raise InputError(f"scaler has {self.scaler.lo.shape[0]} columns for {n} features")
        if self.kind in ("linear", "pairwise_ls", "ridge") and (len(self.params) != 1 or self.params[0].shape != (n,)):
            raise InputError(f"a {self.kind} model needs one weight vector of shape ({n},)")
        if self.kind == "mlp" and (len(self.params) < 2 or self.params[0].shape[0] != n):
            raise InputError(f"mlp shapes {[p.shape for p in self.params]} do not fit {n} features")

    @property
    def name(self) -> str:
        return str(self.meta.get("name", "custom"))

    @property
    def trained_on(self) -> list[str]:
        return list(self.meta.get("trained_on", []))

    @property
    def selected_on(self) -> list[str]:
        return list(self.meta.get("selected_on", []))

    def predict(self, X_raw: np.ndarray) -> np.ndarray:
        """Scores of raw feature rows, each from its row alone: clipped to the training range
        and standardised elementwise, then combined in the fixed order of
        ``capeval.learn.rowlocal`` (linear kinds: Σ z[k]·w[k] over k in column order, no bias;
        mlp: each layer the same per unit, bias last, ReLU between)."""
        from .rowlocal import dot, forward

        Z = self.scaler.transform(X_raw)
        if self.kind == "mlp":
            return forward(self.params, Z)[:, 0]
        return dot(Z, self.params[0])

    def predict_batch(self, X_raw: np.ndarray) -> np.ndarray:
        """:meth:`predict` by matrix products, whose last bits depend on the batch: the form
        model selection (``capeval.learn.lobo``) ranked the recipes of the shipped models with,
        kept there so a retrain selects and reproduces them. Never for scoring."""
        Z = self.scaler.transform(X_raw)
        if self.kind == "mlp":
            return ranker.mlp_forward(self.params, Z)
        return Z @ self.params[0]

    def clipped_fraction(self, X_raw: np.ndarray) -> float:
        m = self.scaler.clipped(X_raw)
        return float(m.mean()) if m.size else 0.0

    def features_for(self, candidates: Sequence[str], references: Sequence[Sequence[str]], *, cache=None,
                     progress=None, precomputed=None, images=None, df=None):
        return rf.compute(candidates, references, self.features, max_refs=self.max_refs,
                          tokenizer=self.tokenizer, cache=cache, progress=progress, precomputed=precomputed,
                          images=images, df=df)

    # ---- I/O --------------------------------------------------------------------------
    def save(self, path: Path | str) -> str:
        s = self.scaler
        arrays = {"scaler_lo": s.lo, "scaler_hi": s.hi, "scaler_mu": s.mu, "scaler_sd": s.sd}
        self.sha256 = save_model(path, self, FORMAT, arrays, max_refs=self.max_refs)
        return self.sha256

    @classmethod
    def load(cls, path: Path | str) -> "RankerModel":
        def build(arrays, meta, features, params):
            scaler = ranker.Scaler(arrays["scaler_lo"], arrays["scaler_hi"], arrays["scaler_mu"], arrays["scaler_sd"])
            return cls(meta["kind"], params, scaler, features, meta.get("max_refs"), meta.get("tokenizer", "ptb"), meta)

        return load_model(path, FORMAT, build)


def default_model_path() -> Path:
    return Path(__file__).with_name("weights") / "learned-default.npz"

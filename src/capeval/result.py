"""The one result type every metric and ``capeval.score`` return."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class MetricScores:
    """What a single metric family computes on one corpus.

    ``corpus`` and ``per_caption`` are keyed by output name (``bleu4``, ``cider_d``...).
    ``signature_fields`` are the metric's own constants and data-dependent settings
    (e.g. ``df:corpus:16992``); the API adds tokenizer, nrefs and version.
    ``details`` holds optional extra data (sufficient statistics, sub-scores).
    """

    corpus: dict[str, float]
    per_caption: dict[str, np.ndarray]
    signature_fields: dict[str, object] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class Result:
    """Corpus scores, per-caption scores (input order) and one signature per output."""

    corpus: dict[str, float]
    per_caption: dict[str, np.ndarray]
    signatures: dict[str, str]
    n: int
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def explanations(self) -> dict[str, list]:
        """Per-caption explanations (input order) of the families that give them, keyed by
        family: ``result.explanations["qace_ref"][i].table()`` is caption i's QA table."""
        return {fam: d["explanations"] for fam, d in self.details.items()
                if isinstance(d, dict) and "explanations" in d}

    @property
    def metrics(self) -> list[str]:
        return list(self.corpus)

    def to_dict(self, per_caption: bool = True, ids: list | None = None) -> dict[str, Any]:
        def clean(x: float):
            x = float(x)
            return x if math.isfinite(x) else None if math.isnan(x) else ("inf" if x > 0 else "-inf")

        out: dict[str, Any] = {
            "n": self.n,
            "corpus": {k: clean(v) for k, v in self.corpus.items()},
            "signatures": dict(self.signatures),
        }
        if per_caption:
            out["per_caption"] = {k: [clean(x) for x in v] for k, v in self.per_caption.items()}
            if ids is not None:
                out["ids"] = list(ids)
            exp = self.explanations
            if exp:
                out["explanations"] = {f: [e.to_dict() for e in v] for f, v in exp.items()}
        return out

    def __repr__(self) -> str:
        body = ", ".join(f"{k}={v:.6f}" for k, v in self.corpus.items())
        return f"Result(n={self.n}, {body})"

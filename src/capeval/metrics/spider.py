"""SPIDEr = (CIDEr-D + SPICE) / 2, per unit and per corpus (Liu et al., ICCV 2017).

Both parts come from their registered families (``cider_d``, ``spice``), computed on the same
tokenized text, so SPIDEr inherits CIDEr-D's dependence on the scored set and SPICE's backend.
The corpus value is the mean of the two corpus values, as aac-metrics computes it (docs/SPICE.md,
SPIDEr); it equals the mean of the per-unit values up to rounding.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..result import MetricScores
from .base import Metric, OutputInfo
from .registry import get_family, register

CITATION = "Liu et al., ICCV 2017 (SPIDEr)"


@register
class Spider(Metric):
    """SPIDEr.

    Parameters
    ----------
    cider_d : dict, optional
        Options for the ``cider_d`` family (e.g. ``{"df": "df.json"}``).
    spice : dict, optional
        Options for the ``spice`` family (e.g. ``{"backend": "jar"}``).
    """

    family = "spider"
    extras = ("semantic",)
    cache_resources = ("wordnet", "spice-jar", "corenlp-3.6.0")  # SPICE's; CIDEr-D needs none
    variant = "spider"
    text_input = "tokenized"
    # its CIDEr-D half takes df from the scored set: a row depends on the whole input
    streamable = False
    outputs = (
        OutputInfo("spider", "spider", "spider", (0.0, 5.5), True,
                   "(CIDEr-D + SPICE) / 2", CITATION),
    )

    @classmethod
    def reads(cls, options: dict) -> tuple[str, ...]:
        return ("spice", "cider_d")

    @classmethod
    def cache_token(cls, options: dict) -> str | None:
        """SPIDEr's SPICE half changes with the SPICE backend's revision."""
        return get_family("spice").cache_token(options.get("spice") or {})

    def __init__(self, cider_d: dict[str, Any] | None = None, spice: dict[str, Any] | None = None):
        self._cider = get_family("cider_d")(**(cider_d or {}))
        self._spice = get_family("spice")(**(spice or {}))
        # The name says which SPICE it averages with: the Python approximation or the jar.
        self.variant = f"spider_{self._spice.variant}"

    def compute(self, candidates: Sequence[str], references: Sequence[Sequence[str]]) -> MetricScores:
        c = self._cider.compute(candidates, references)
        s = self._spice.compute(candidates, references)
        cider = np.asarray(c.per_caption["cider_d"], dtype=float)
        spice = np.asarray(s.per_caption["spice"], dtype=float)
        per_unit = (cider + spice) / 2.0
        corpus = (float(c.corpus["cider_d"]) + float(s.corpus["spice"])) / 2.0
        fields: dict[str, object] = {"cider": self._cider.variant, "spice": self._spice.variant}
        fields.update({f"cider.{k}": v for k, v in c.signature_fields.items()})
        fields.update({f"spice.{k}": v for k, v in s.signature_fields.items()})
        return MetricScores(
            corpus={"spider": corpus},
            per_caption={"spider": per_unit},
            signature_fields=fields,
            details={"cider_d": cider, "spice": spice},
        )

    def close(self) -> None:
        self._cider.close()
        self._spice.close()

"""SPIDEr = (CIDEr-D + SPICE) / 2, per unit and per corpus (Liu et al., ICCV 2017).

Both parts come from their registered families (``cider_d``, ``spice``), computed on the same
tokenized text, so SPIDEr inherits CIDEr-D's dependence on the scored set and SPICE's backend.
The corpus value is the mean of the two corpus values, as aac-metrics computes it (docs/SPICE.md,
SPIDEr); it equals the mean of the per-unit values up to rounding. Its statistics are its two
parts' per-row values, and its corpus pre-pass is CIDEr-D's df, so it streams as CIDEr-D does.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .base import Metric, OutputInfo
from .registry import get_family, register
from .statistics import Aggregate, Statistics

CITATION = "Liu et al., ICCV 2017 (SPIDEr)"


class SpiderAggregate(Aggregate):
    """Per row: CIDEr-D and SPICE. Per caption: their mean; corpus: the mean of their corpus
    means (not the mean of the per-caption values, which differs in rounding)."""

    def per_caption(self, st: Statistics) -> dict[str, np.ndarray]:
        return {"spider": (st.rows["cider_d"] + st.rows["spice"]) / 2.0}

    def corpus(self, st: Statistics) -> dict[str, float]:
        return {"spider": (float(np.mean(st.rows["cider_d"])) + float(np.mean(st.rows["spice"]))) / 2.0}


@register
class Spider(Metric):
    """SPIDEr.

    Parameters
    ----------
    cider_d : dict, optional
        Options for the ``cider_d`` family (e.g. ``{"sigma": 6.0}``).
    df, save_df : optional
        CIDEr-D's df (``"corpus"``, a df file or a ``DocumentFrequency``) and where to save the
        one computed from this call, as for ``cider_d`` (``capeval score --cider-df``).
    spice : dict, optional
        Options for the ``spice`` family (e.g. ``{"backend": "jar"}``).
    """

    family = "spider"
    extras = ("semantic",)
    cache_resources = ("wordnet", "spice-jar", "corenlp-3.6.0")  # SPICE's; CIDEr-D needs none
    variant = "spider"
    text_input = "tokenized"
    uses_df = True  # its CIDEr-D half's: the df pass of a streamed run, --cider-df
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

    def __init__(self, cider_d: dict[str, Any] | None = None, spice: dict[str, Any] | None = None,
                 df: Any = None, save_df: Any = None):
        cider_opts = dict(cider_d or {})
        for key, value in (("df", df), ("save_df", save_df)):
            if value is not None:
                if cider_opts.get(key) is not None and cider_opts[key] is not value:
                    raise ValueError(f"{key} given twice (spider's {key} and cider_d's)")
                cider_opts[key] = value
        self._cider = get_family("cider_d")(**cider_opts)
        self._spice = get_family("spice")(**(spice or {}))
        # The name says which SPICE it averages with: the Python approximation or the jar.
        self.variant = f"spider_{self._spice.variant}"

    def prepass(self, candidates, references):
        return self._cider.prepass(candidates, references)

    def statistics(self, candidates, references, **kw) -> Statistics:
        """Each row's CIDEr-D and SPICE, with both parts' signature fields."""
        c = self._cider.compute(candidates, references)
        s = self._spice.compute(candidates, references)
        fields: dict[str, object] = {"cider": self._cider.variant, "spice": self._spice.variant}
        fields.update({f"cider.{k}": v for k, v in c.signature_fields.items()})
        fields.update({f"spice.{k}": v for k, v in s.signature_fields.items()})
        rows = {"cider_d": np.asarray(c.per_caption["cider_d"], dtype=float),
                "spice": np.asarray(s.per_caption["spice"], dtype=float)}
        # the details are the two parts' per-row values
        return Statistics(len(candidates), SpiderAggregate(), rows, {}, fields,
                          details={"cider_d": rows["cider_d"], "spice": rows["spice"]})

    def close(self) -> None:
        self._cider.close()
        self._spice.close()

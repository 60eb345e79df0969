"""pycocoevalcap's ``Spice`` computed by SPICE-py (:class:`capeval.metrics.spice.Spice`, ``backend="py"``):
an approximation of the SPICE 1.0 jar, returned in the jar's per-image format."""
from __future__ import annotations

import numpy as np

from ....metrics.spice import PY_REVISION, VARIANT_PY
from ....metrics.spice import Spice as _SpiceFamily
from ..._notices import notice
from .._inputs import paired
from .._requirements import require

#: The jar's category names (SpiceStats) for capeval's, in the order its JSON lists them (a Java
#: HashMap's iteration order over these keys, which pycocoevalcap's dicts keep).
CATEGORIES = (("All", "all"), ("Relation", "relation"), ("Cardinality", "count"), ("Attribute", "attribute"),
              ("Size", "size"), ("Color", "color"), ("Object", "object"))
#: The fields of one Evaluation in the jar's JSON order.
FIELDS = ("pr", "re", "f", "fn", "numImages", "fp", "tp")


def _jar_entry(ev: dict) -> dict:
    """One category of one image as pycocoevalcap returns it: every value a float, NaN where
    the jar writes NaN (a category the references lack)."""
    values = {"pr": ev["pr"], "re": ev["re"], "f": ev["f"], "fn": ev["n_ref"] - ev["tp"], "numImages": 1,
              "fp": ev["n_cand"] - ev["tp"], "tp": ev["tp"]}
    return {k: float(values[k]) for k in FIELDS}


class Spice:
    """SPICE F-score per image and its mean, from capeval's SPICE-py (no Java, no CoreNLP)."""

    def __init__(self):
        self._metric = _SpiceFamily(backend="py")

    def float_convert(self, obj):
        try:
            return float(obj)
        except (TypeError, ValueError):
            return np.nan

    def compute_score(self, gts, res):
        """``(mean SPICE, [per-image {category: {"pr", "re", "f", "fn", "numImages", "fp", "tp"}}])``
        over the images in sorted id order, as the jar's output is read by pycocoevalcap."""
        require(("SPICE",), "Spice().compute_score")
        notice("spice", f"capeval.compat Spice is SPICE-py ({VARIANT_PY}, rev {PY_REVISION}): spaCy + WordNet "
               "scene graphs approximating the SPICE 1.0 jar (Stanford CoreNLP), so its numbers differ from "
               "pycocoevalcap's; docs/SPICE.md gives the measured gap")
        if sorted(gts.keys()) != sorted(res.keys()):
            paired(gts, res, "Spice")  # names the mismatched image
        img_ids = sorted(gts.keys())
        _ids, cands, refs = paired(gts, res, "Spice", ids=img_ids)
        evs = self._metric.evaluations(cands, refs)
        scores = [{name: _jar_entry(ev[cat]) for name, cat in CATEGORIES} for ev in evs]
        average_score = np.mean(np.array([s["All"]["f"] for s in scores]))
        return average_score, scores

    def method(self):
        return "SPICE"

"""pycocoevalcap's ``Meteor`` without Java: capeval's native METEOR 1.5
(:mod:`capeval.metrics._meteor_native`), equal to the jar's ``-l en -norm`` numbers."""
from __future__ import annotations

import threading

from ....metrics.meteor import Meteor as _MeteorFamily
from .._inputs import paired


class Meteor:
    """METEOR 1.5 per image and the jar's corpus aggregate, as pycocoevalcap's wrapper returns them."""

    def __init__(self):
        self._metric = _MeteorFamily(backend="native")
        # Same guarantee as the original's lock: one scoring call at a time per instance.
        self.lock = threading.Lock()

    def compute_score(self, gts, res):
        """``(corpus score, [score per image])`` in ``gts``' key order."""
        _ids, cands, refs = paired(gts, res, "Meteor")
        with self.lock:
            out = self._metric.compute(cands, refs)
        return float(out.corpus["meteor"]), [float(x) for x in out.per_caption["meteor"]]

    def method(self):
        return "METEOR"

"""CIDEr-ranked strata of a test set (docs/PREGEN.md, The four tiers and Exactness, Strata).

One model's test images are sorted by the per-image CIDEr-D of its generated caption
(lowest first). For k = 1..K strata, stratum s holds sorted[⌊n/k⌋·s : ⌊n/k⌋·(s+1)]; the n mod k
leftover images at the high-CIDEr end belong to no stratum. 1 + 2 + ... + 5 = 15 subsets per
model, each scored separately by every post-gen and pre-gen metric.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import InputError

MAX_STRATA = 5


@dataclass(frozen=True)
class Stratum:
    num_strata: int
    stratum: int
    indices: np.ndarray  # image indices, lowest CIDEr first


def image_order(per_image_score: Sequence[float], stable: bool = True) -> np.ndarray:
    """Images from the lowest score to the highest.

    The reference used numpy's default (unstable) argsort, so among images with equal CIDEr
    (typically many zeros) its order depended on numpy's version and build; with
    ``stable=True`` ties keep input order, which is reproducible everywhere.
    """
    scores = np.asarray(per_image_score, dtype=np.float64)
    if scores.ndim != 1 or scores.size == 0:
        raise InputError("per-image scores must be a non-empty 1-D sequence")
    bad = np.flatnonzero(~np.isfinite(scores))
    if bad.size:
        raise InputError(f"image {bad[0]}: non-finite score {scores[bad[0]]!r}")
    return np.argsort(scores, kind="stable" if stable else None)


def strata(order: np.ndarray, max_strata: int = MAX_STRATA) -> list[Stratum]:
    """All strata for k = 1..max_strata, in the reference's row order."""
    n = len(order)
    if max_strata < 1:
        raise InputError(f"max_strata must be ≥ 1, got {max_strata}")
    if n < max_strata:
        raise InputError(f"{n} images cannot form {max_strata} non-empty strata")
    out = []
    for k in range(1, max_strata + 1):
        size = n // k
        for s in range(k):
            out.append(Stratum(k, s, np.asarray(order[size * s : size * (s + 1)])))
    return out

"""Kendall τ-b / τ-c for many bootstrap resamples at once, when one variable has few levels.

A resample is the original rows with integer multiplicities W (B × n). τ only needs
weighted pair counts, and when x takes L distinct values (human ratings: 4 for
Flickr8k-Expert, 12 for CF, 5 for COMPOSITE) the concordance sum splits into L sorted
prefix sums, vectorised over the B resamples: O(B·n·L) instead of B sorting passes.
Copies of the same row form pairs tied in both x and y, exactly as in the resampled array,
so the result equals ``scipy.stats.kendalltau`` on ``x[idx], y[idx]`` (to rounding; all
counts are integers well below 2**53).
"""
from __future__ import annotations

import numpy as np

#: Above this many levels in both variables, the per-resample SciPy loop is cheaper.
MAX_LEVELS = 64


def levels(a: np.ndarray) -> int:
    return int(np.unique(a).size)


class WeightedKendall:
    """Precomputes the sort structure of (x, y); ``__call__(W)`` gives τ per weight row."""

    def __init__(self, x: np.ndarray, y: np.ndarray, variant: str):
        if levels(x) > levels(y):
            x, y = y, x  # τ is symmetric; split on the variable with fewer levels
        self.variant = variant
        self.n = len(x)
        xs = np.unique(x)
        code = np.searchsorted(xs, x)
        self.members = [np.flatnonzero(code == k) for k in range(len(xs))]
        # for each level b: rows of all lower levels sorted by y, and where b's y values fall
        self.steps = []
        for b in range(1, len(xs)):
            lower = np.concatenate(self.members[:b])
            lower = lower[np.argsort(y[lower], kind="stable")]
            ys = y[lower]
            yb = y[self.members[b]]
            self.steps.append((lower, self.members[b], np.searchsorted(ys, yb, "left"),
                               np.searchsorted(ys, yb, "right")))
        order = np.argsort(y, kind="stable")
        ysorted = y[order]
        self.y_order = order
        self.y_starts = np.flatnonzero(np.r_[True, ysorted[1:] != ysorted[:-1]])

    def __call__(self, w: np.ndarray) -> np.ndarray:
        w = np.asarray(w, dtype=float)
        s = np.zeros(w.shape[0])
        for lower, upper, lo, hi in self.steps:
            cum = np.zeros((w.shape[0], len(lower) + 1))
            np.cumsum(w[:, lower], axis=1, out=cum[:, 1:])
            below = cum[:, lo]  # lower-level rows with y < y_j: concordant with j
            above = cum[:, -1:] - cum[:, hi]  # lower-level rows with y > y_j: discordant
            s += np.einsum("ij,ij->i", below - above, w[:, upper])
        total = w.sum(axis=1)
        wx = np.stack([w[:, m].sum(axis=1) for m in self.members], axis=1)
        wy = np.add.reduceat(w[:, self.y_order], self.y_starts, axis=1)
        if self.variant == "b":
            n0 = total * (total - 1) / 2
            n1 = (wx * (wx - 1) / 2).sum(axis=1)
            n2 = (wy * (wy - 1) / 2).sum(axis=1)
            with np.errstate(invalid="ignore", divide="ignore"):
                return s / np.sqrt((n0 - n1) * (n0 - n2))
        m = np.minimum((wx > 0).sum(axis=1), (wy > 0).sum(axis=1)).astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(m > 1, 2 * s / (total**2 * (m - 1) / m), np.nan)


def weights_from_indices(idx: np.ndarray, n: int) -> np.ndarray:
    """Multiplicity of each original row in each resample (rows of ``idx``)."""
    b = idx.shape[0]
    flat = (idx + (np.arange(b) * n)[:, None]).ravel()
    return np.bincount(flat, minlength=b * n).reshape(b, n).astype(float)

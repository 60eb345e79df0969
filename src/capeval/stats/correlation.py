"""Correlation coefficients between metric scores and human judgments (docs/STATISTICS.md,
Correlation).

Thin, checked wrappers over SciPy so every number carries its statistic, n and p-value;
the batched forms (one coefficient per row of a 2-D array) serve the bootstrap.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ..signature import Signature
from ._arrays import as_vector, same_length

#: Canonical statistic names; the JSON contract of ``capeval bench`` uses these keys.
STATISTICS = ("kendall_tau_c", "kendall_tau_b", "pearson", "spearman", "r2")

#: Short names for signatures (docs/STATISTICS.md).
SHORT = {
    "kendall_tau_c": "tau-c",
    "kendall_tau_b": "tau-b",
    "pearson": "pearson",
    "spearman": "spearman",
    "r2": "r2",
}

_ALIASES = {
    "tau-c": "kendall_tau_c", "tau_c": "kendall_tau_c", "tauc": "kendall_tau_c", "kendall_c": "kendall_tau_c",
    "tau-b": "kendall_tau_b", "tau_b": "kendall_tau_b", "taub": "kendall_tau_b", "kendall_b": "kendall_tau_b",
    "kendall": "kendall_tau_b", "r": "pearson", "rho": "spearman",
    "r_squared": "r2", "r^2": "r2", "rsquared": "r2",
}


def canonical_statistic(name: str) -> str:
    key = name.strip().lower()
    key = _ALIASES.get(key, key)
    if key not in STATISTICS:
        raise InputError(f"unknown statistic {name!r}; choose one of {', '.join(STATISTICS)}")
    return key


@dataclass(frozen=True)
class Correlation:
    """One coefficient with its two-sided p-value (SciPy's) and sample size."""

    statistic: str
    value: float
    p_value: float | None
    n: int

    def signature_fields(self) -> dict[str, object]:
        return {"stat": SHORT[self.statistic], "n": self.n}

    def signature(self) -> Signature:
        return Signature.make("corr", **self.signature_fields())


def _pair(x, y, names: tuple[str, str]) -> tuple[np.ndarray, np.ndarray]:
    xa = as_vector(x, names[0])
    ya = as_vector(y, names[1])
    n = same_length((names[0], xa), (names[1], ya))
    if n < 3:
        raise InputError(f"need at least 3 items to correlate, got {n}")
    for name, a in ((names[0], xa), (names[1], ya)):
        if np.all(a == a[0]):
            raise InputError(f"{name} is constant ({a[0]!r} for all {n} items); correlation is undefined")
    return xa, ya


def correlate(x, y, statistic: str = "kendall_tau_c", *, names: tuple[str, str] = ("x", "y")) -> Correlation:
    """Coefficient ``statistic`` between ``x`` and ``y``.

    ``names`` label the two inputs in error messages (e.g. ``("bleu4", "human")``).
    """
    from scipy import stats

    statistic = canonical_statistic(statistic)
    xa, ya = _pair(x, y, names)
    if statistic == "pearson":
        res = stats.pearsonr(xa, ya)
        value, p = res.statistic, res.pvalue
    elif statistic == "r2":
        # R² of a one-predictor least-squares fit equals r²; its F-test p equals r's t-test p.
        res = stats.pearsonr(xa, ya)
        value, p = res.statistic ** 2, res.pvalue
    elif statistic == "spearman":
        res = stats.spearmanr(xa, ya)
        value, p = res.statistic, res.pvalue
    else:
        variant = "c" if statistic == "kendall_tau_c" else "b"
        res = stats.kendalltau(xa, ya, variant=variant)
        value, p = res.statistic, res.pvalue
    return Correlation(statistic, float(value), float(p), len(xa))


def pearson(x, y, **kw) -> Correlation:
    return correlate(x, y, "pearson", **kw)


def spearman(x, y, **kw) -> Correlation:
    return correlate(x, y, "spearman", **kw)


def kendall_tau_b(x, y, **kw) -> Correlation:
    return correlate(x, y, "kendall_tau_b", **kw)


def kendall_tau_c(x, y, **kw) -> Correlation:
    return correlate(x, y, "kendall_tau_c", **kw)


def r_squared(x, y, **kw) -> Correlation:
    return correlate(x, y, "r2", **kw)


def correlation_matrix(
    scores: dict[str, Sequence[float]], statistic: str = "pearson"
) -> tuple[list[str], np.ndarray]:
    """Metric–metric coefficients: ``(names, matrix)`` with ones on the diagonal."""
    statistic = canonical_statistic(statistic)
    names = list(scores)
    vecs = {k: as_vector(v, k) for k, v in scores.items()}
    same_length(*vecs.items())
    m = np.eye(len(names))
    for i, a in enumerate(names):
        for j in range(i + 1, len(names)):
            b = names[j]
            m[i, j] = m[j, i] = correlate(vecs[a], vecs[b], statistic, names=(a, b)).value
    return names, m


# ---- batched forms: x, y of shape (B, n) → (B,) -----------------------------------------

def _batched_pearson(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    xc = x - x.mean(axis=1, keepdims=True)
    yc = y - y.mean(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore", under="ignore"):
        num = np.einsum("ij,ij->i", xc, yc)
        den = np.sqrt(np.einsum("ij,ij->i", xc, xc) * np.einsum("ij,ij->i", yc, yc))
        r = num / den
    # Squares of large or tiny deviations overflow or underflow: r would be NaN, or 0 from
    # finite/inf, where pearsonr gives a value. Such rows are computed again on values scaled to
    # |v| <= 1 (r is scale-free); other rows keep their bits, a constant row stays NaN.
    ax, ay = np.max(np.abs(xc), axis=1), np.max(np.abs(yc), axis=1)
    bad = ~np.isfinite(r) | (ax > 1e100) | (ay > 1e100) | (ax < 1e-100) | (ay < 1e-100)
    if bad.any():
        r[bad] = _scaled_pearson(x[bad], y[bad])
    return r


def _scaled_pearson(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    def unit(a: np.ndarray) -> np.ndarray:
        s = np.max(np.abs(a), axis=1, keepdims=True)
        a = a / np.where(s > 0, s, 1.0)
        return a - a.mean(axis=1, keepdims=True)

    xc, yc = unit(x), unit(y)
    with np.errstate(invalid="ignore", divide="ignore", under="ignore"):
        r = np.einsum("ij,ij->i", xc, yc) / np.sqrt(np.einsum("ij,ij->i", xc, xc) * np.einsum("ij,ij->i", yc, yc))
    return np.clip(r, -1.0, 1.0)


def _batched_spearman(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    from scipy.stats import rankdata

    return _batched_pearson(rankdata(x, axis=1), rankdata(y, axis=1))


def _batched_kendall(variant: str) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    def run(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        from scipy import stats

        # τ has no cheap closed form over a batch; SciPy's O(n log n) kernel per row is
        # fast enough (≈8 ms for 17k rows).
        return np.array([stats.kendalltau(a, b, variant=variant).statistic for a, b in zip(x, y)])

    return run


def batched(statistic: str) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """Row-wise version of ``statistic`` for 2-D inputs (constant rows give NaN)."""
    statistic = canonical_statistic(statistic)
    if statistic == "pearson":
        return _batched_pearson
    if statistic == "r2":
        return lambda x, y: _batched_pearson(x, y) ** 2
    if statistic == "spearman":
        return _batched_spearman
    return _batched_kendall("c" if statistic == "kendall_tau_c" else "b")

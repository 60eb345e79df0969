"""Learned linear combination: ridge regression of the 0/1 human label on normalised features.

A baseline for the classifiers: the same features and training rows, a closed-form fit, no
iterations and no seed. Score = w·x + b (not a probability; only its order matters for
correlations and pairwise accuracy). The intercept is not penalised.
"""
from __future__ import annotations

import numpy as np

from ..errors import InputError

#: Ridge strengths tried when a validation function is given (λ on Σw², rows unweighted).
LAMBDAS = (0.0, 0.1, 1.0, 10.0, 100.0, 1000.0)


def fit_ridge(Z: np.ndarray, y: np.ndarray, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """(w, b) minimising ‖Zw + b − y‖² + λ‖w‖²."""
    Z = np.asarray(Z, dtype=float)
    y = np.asarray(y, dtype=float)
    if Z.ndim != 2 or Z.shape[0] != y.shape[0] or Z.shape[0] < 2:
        raise InputError(f"features {Z.shape} and labels {y.shape} do not line up")
    if lam < 0:
        raise InputError(f"ridge lambda must be >= 0, got {lam}")
    mu, ybar = Z.mean(axis=0), y.mean()
    Zc = Z - mu
    A = Zc.T @ Zc + lam * np.eye(Z.shape[1])
    # lstsq handles the singular λ = 0 case (collinear BLEU columns) with the minimum-norm w.
    w = np.linalg.lstsq(A, Zc.T @ (y - ybar), rcond=None)[0]
    return w, np.array(ybar - mu @ w)


def fit_linear(Z: np.ndarray, y: np.ndarray, validate=None, lambdas=LAMBDAS
               ) -> tuple[np.ndarray, np.ndarray, float, list[tuple[float, float]]]:
    """Fit each λ; keep the one ``validate(score_fn)`` likes best (the first λ without one)."""
    best = None
    history = []
    for lam in (lambdas if validate is not None else lambdas[:1]):
        w, b = fit_ridge(Z, y, lam)
        score = float(validate(lambda X, w=w, b=b: X @ w + float(b))) if validate is not None else 0.0
        history.append((float(lam), score))
        if best is None or score > best[2]:
            best = (w, b, score, lam)
    w, b, _, lam = best
    return w, b, float(lam), history

"""Per metric and perturbation: accuracy, tie rate, mean and median change with bootstrap CIs.

The change of an item is ``perturbed - control`` in the metric's own units. A metric where lower
is better (TER) has its change read the other way round when judging the direction.

- ``lower``: the item counts as correct when the metric got worse by more than :data:`TIE_TOL`;
- ``not_higher``: when it did not get better by more than :data:`TIE_TOL`;
- ``same``: when it moved by at most the metric's *same tolerance*, :data:`SAME_FRACTION` of the
  standard deviation of its control scores over the items (a scale-free bound: a tenth of how
  much the metric varies between captions).

A tie is a change of at most :data:`TIE_TOL` in absolute value (float noise of model metrics).
Items where the control or the perturbed score is NaN are counted as ``undefined``, not scored.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..stats.bootstrap import DEFAULT_RESAMPLES, distribution

TIE_TOL = 1e-6
SAME_FRACTION = 0.1
CI_LEVEL = 0.95


@dataclass(frozen=True)
class Cell:
    expected: str
    n: int  # items the perturbation applied to, with a defined score
    skipped: int  # items the rule does not apply to
    undefined: int  # applicable items without a defined control or perturbed score
    accuracy: float
    tie_rate: float
    mean_delta: float
    ci: tuple[float, float]
    median_delta: float
    median_ci: tuple[float, float]

    def as_dict(self) -> dict:
        return {"expected": self.expected, "n": self.n, "skipped": self.skipped, "undefined": self.undefined,
                "accuracy": _num(self.accuracy), "tie_rate": _num(self.tie_rate),
                "mean_delta": _num(self.mean_delta), "ci": [_num(x) for x in self.ci],
                "median_delta": _num(self.median_delta), "median_ci": [_num(x) for x in self.median_ci]}


def _num(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def same_tolerance(control: np.ndarray) -> float:
    finite = control[np.isfinite(control)]
    return SAME_FRACTION * float(np.std(finite)) if finite.size > 1 else 0.0


def _interval(values: np.ndarray) -> tuple[float, float]:
    alpha = (1 - CI_LEVEL) / 2
    lo, hi = np.quantile(values, [alpha, 1 - alpha])
    return float(lo), float(hi)


def cell(control: np.ndarray, perturbed: np.ndarray, applicable: np.ndarray, expected: str, *,
         higher_is_better: bool = True, tolerance: float = 0.0, n_resamples: int = DEFAULT_RESAMPLES,
         seed: int = 0) -> Cell:
    """Statistics of one metric under one perturbation; ``perturbed`` is read where
    ``applicable`` (one flag per item) holds."""
    control = np.asarray(control, dtype=float)
    perturbed = np.asarray(perturbed, dtype=float)
    applicable = np.asarray(applicable, dtype=bool)
    skipped = int((~applicable).sum())
    defined = applicable & np.isfinite(control) & np.isfinite(perturbed)
    undefined = int(applicable.sum() - defined.sum())
    delta = perturbed[defined] - control[defined]
    n = int(delta.size)
    nan = float("nan")
    if n == 0:
        return Cell(expected, 0, skipped, undefined, nan, nan, nan, (nan, nan), nan, (nan, nan))
    worse = -delta if higher_is_better else delta  # > 0: the metric judged the perturbed caption worse
    if expected == "lower":
        ok = worse > TIE_TOL
    elif expected == "not_higher":
        ok = worse >= -TIE_TOL
    elif expected == "same":
        ok = np.abs(delta) <= max(tolerance, TIE_TOL)
    else:
        raise ValueError(f"unknown expected direction {expected!r}")
    ties = np.abs(delta) <= TIE_TOL
    means = distribution(lambda idx: delta[idx].mean(axis=1), n, n_resamples, seed)
    medians = distribution(lambda idx: np.median(delta[idx], axis=1), n, n_resamples, seed)
    return Cell(expected, n, skipped, undefined, float(ok.mean()), float(ties.mean()), float(delta.mean()),
                _interval(means), float(np.median(delta)), _interval(medians))

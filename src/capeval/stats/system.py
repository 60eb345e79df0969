"""System-level meta-evaluation: one score per system, correlated across systems.

A system's metric score is either its corpus score (coco's convention: BLEU/CIDEr over the
system's whole output) or the mean of its per-caption scores; the caller chooses and the
experiment records which. With no human system scores, systems can still be ranked by each
metric and the rankings compared metric against metric.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ._arrays import as_vector
from .correlation import Correlation, canonical_statistic, correlate, correlation_matrix

SYSTEM_STATISTICS = ("pearson", "spearman", "kendall_tau_b")


@dataclass(frozen=True)
class SystemCorrelation:
    """Coefficients between a metric's system scores and a reference set of system scores."""

    metric: str
    against: str  # "human" or another metric's name
    systems: tuple[str, ...]
    metric_scores: tuple[float, ...]
    against_scores: tuple[float, ...]
    correlations: dict[str, Correlation]


def _aligned(a: Mapping[str, float], b: Mapping[str, float], names: tuple[str, str]) -> list[str]:
    missing = [s for s in a if s not in b]
    if missing:
        raise InputError(f"system {missing[0]!r} has a {names[0]} score but no {names[1]} score")
    extra = [s for s in b if s not in a]
    if extra:
        raise InputError(f"system {extra[0]!r} has a {names[1]} score but no {names[0]} score")
    return list(a)


def system_correlation(
    metric_scores: Mapping[str, float],
    against: Mapping[str, float],
    *,
    statistics: Sequence[str] = SYSTEM_STATISTICS,
    names: tuple[str, str] = ("metric", "human"),
) -> SystemCorrelation:
    """Correlate per-system metric scores with per-system human (or other metric) scores."""
    systems = _aligned(metric_scores, against, names)
    x = as_vector([metric_scores[s] for s in systems], names[0])
    y = as_vector([against[s] for s in systems], names[1])
    corr = {canonical_statistic(s): correlate(x, y, s, names=names) for s in statistics}
    return SystemCorrelation(names[0], names[1], tuple(systems), tuple(x.tolist()), tuple(y.tolist()), corr)


def system_rankings(scores: Mapping[str, Mapping[str, float]], *,
                    higher_is_better: Mapping[str, bool] | None = None) -> dict[str, list[str]]:
    """Best-first system order under each metric (ties keep the input order)."""
    out = {}
    for metric, by_sys in scores.items():
        sign = -1.0 if (higher_is_better or {}).get(metric, True) else 1.0
        systems = list(by_sys)
        vals = as_vector([by_sys[s] for s in systems], f"{metric} system scores")
        order = np.argsort(sign * vals, kind="stable")
        out[metric] = [systems[i] for i in order]
    return out


def system_metric_matrix(scores: Mapping[str, Mapping[str, float]], statistic: str = "kendall_tau_b"
                         ) -> tuple[list[str], np.ndarray]:
    """Metric-vs-metric agreement on system scores (e.g. τ between BLEU's and CIDEr's rankings)."""
    metrics = list(scores)
    if not metrics:
        raise InputError("no metrics given")
    systems = list(scores[metrics[0]])
    for m in metrics[1:]:
        _aligned(scores[metrics[0]], scores[m], (metrics[0], m))
    return correlation_matrix({m: [scores[m][s] for s in systems] for m in metrics}, statistic)

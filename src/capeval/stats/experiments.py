"""Experiment logic on the benchmark record types, given metric scores (no scoring, no I/O).

``capeval.metaeval`` scores the units these functions ask for (once per benchmark, cached) and
hands the per-unit scores back here. Keeping the unit layout in one place guarantees, e.g.,
that both members of every PASCAL-50S pair are scored in a single corpus (CIDEr's df over
all 8,000 candidates, as the published protocol does).
"""
from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InputError
from ..signature import Signature
from .correlation import SHORT, Correlation, canonical_statistic, correlate, correlation_matrix
from .pairwise import PairwiseAccuracy, pairwise_accuracy
from .system import SystemCorrelation, system_correlation, system_metric_matrix, system_rankings
from .williams import check_df_rule, degrees_of_freedom, williams_matrix

if TYPE_CHECKING:  # the record types live with the loaders
    from ..data.records import CorrelationTable, PairwiseTable, SystemTable

#: The statistics every correlation benchmark reports (the ``capeval bench`` JSON keys).
CORRELATION_STATISTICS = ("kendall_tau_c", "kendall_tau_b", "pearson", "spearman")


# ---- caption level ---------------------------------------------------------------------

@dataclass
class CorrelationExperiment:
    table: str
    n: int
    default_statistic: str
    protocol: dict[str, str]
    results: dict[str, dict[str, Correlation]]  # metric → statistic → coefficient
    #: metrics whose undefined (NaN) rows were skipped → number of rows kept
    defined: dict[str, int] = field(default_factory=dict)


def defined_mask(values: Sequence[float]) -> np.ndarray:
    """Rows where a metric with undefined outputs (``OutputInfo.undefined``) has a value."""
    return ~np.isnan(np.asarray(values, dtype=float))


def correlation_units(table: "CorrelationTable") -> tuple[list[str], list[list[str]]]:
    """Candidates and references; a table without references (``references=None``) gives
    every unit an empty reference list, which only reference-free metrics accept."""
    if table.references is None:
        return table.candidates, [[] for _ in table.candidates]
    return table.candidates, table.references


def correlation_experiment(
    table: "CorrelationTable",
    per_unit: Mapping[str, Sequence[float]],
    statistics: Sequence[str] = CORRELATION_STATISTICS,
    skip_undefined: Collection[str] = (),
) -> CorrelationExperiment:
    """Each metric's per-row scores against the human ratings, raw coefficients (not × 100).

    Metrics in ``skip_undefined`` are correlated over the rows where they are defined (not
    NaN), as SPICE's own summary averages a category over the images where it is defined;
    the kept row count is in ``defined`` and in each coefficient's ``n``. NaN in any other
    metric is refused.
    """
    n = len(table.candidates)
    stats = [canonical_statistic(s) for s in statistics]
    results: dict[str, dict[str, Correlation]] = {}
    defined: dict[str, int] = {}
    human = np.asarray(table.human, dtype=float)
    for metric, values in per_unit.items():
        if len(values) != n:
            raise InputError(f"{table.name}: {metric} has {len(values)} scores for {n} rows")
        x, h = values, human
        if metric in skip_undefined:
            keep = defined_mask(values)
            x, h = np.asarray(values, dtype=float)[keep], human[keep]
            defined[metric] = int(keep.sum())
        results[metric] = {s: correlate(x, h, s, names=(metric, "human")) for s in stats}
    return CorrelationExperiment(table.name, n, canonical_statistic(table.statistic), dict(table.protocol), results,
                                 defined)


@dataclass
class MetricAgreement:
    """Metric–metric statistics on a correlation table: how the metrics agree with each other
    (``matrix``, in ``statistic``) and which correlates significantly better with the humans
    (``williams_p[i, j]``: one-sided Williams p that metric i beats metric j, Pearson r)."""

    names: list[str]
    statistic: str
    matrix: np.ndarray
    williams_p: np.ndarray
    df_rule: str
    n: int

    def signature(self, dataset: str) -> Signature:
        return Signature.make(f"{dataset}-metric-agreement", stat=SHORT[self.statistic], n=self.n)

    def williams_signature(self, dataset: str) -> Signature:
        dof = degrees_of_freedom(self.n, self.df_rule)
        return Signature.make("williams", dataset=dataset, corr="pearson", tail="one", df=f"{self.df_rule}={dof}",
                              n=self.n)


def metric_agreement(
    scores: Mapping[str, Sequence[float]],
    human: Sequence[float],
    *,
    statistic: str = "kendall_tau_b",
    df: str = "n-3",
) -> MetricAgreement | None:
    """Both matrices over the metrics defined on every row; ``None`` when fewer than two are.

    Comparing two metrics needs the same rows for both, so an output with undefined (NaN)
    rows, such as a SPICE category, is left out here rather than cut down to its rows.
    """
    statistic = canonical_statistic(statistic)
    check_df_rule(df)
    full = {m: np.asarray(v, dtype=float) for m, v in scores.items()}
    full = {m: v for m, v in full.items() if not np.isnan(v).any()}
    if len(full) < 2:
        return None
    names, matrix = correlation_matrix(full, statistic)
    _, p = williams_matrix(full, human, df=df)
    return MetricAgreement(names, statistic, matrix, p, df, len(human))


# ---- pairwise --------------------------------------------------------------------------

@dataclass
class PairwiseExperiment:
    table: str
    n: int
    categories: list[str]
    protocol: dict[str, str]
    tie_policy: str
    results: dict[str, PairwiseAccuracy]
    #: metrics whose undefined (NaN) pairs were skipped → number of pairs kept
    defined: dict[str, int] = field(default_factory=dict)


def pairwise_units(table: "PairwiseTable") -> tuple[list[str], list[list[str]]]:
    """All A members then all B members, each with the pair's references: one corpus."""
    cands = list(table.candidates_a) + list(table.candidates_b)
    refs = list(table.references) + list(table.references)
    return cands, refs


def split_pairwise(values: Sequence[float], n_pairs: int) -> tuple[np.ndarray, np.ndarray]:
    v = np.asarray(values, dtype=float)
    if v.shape != (2 * n_pairs,):
        raise InputError(f"expected {2 * n_pairs} unit scores for {n_pairs} pairs, got {v.shape}")
    return v[:n_pairs], v[n_pairs:]


def pairwise_experiment(
    table: "PairwiseTable",
    per_unit: Mapping[str, Sequence[float]],
    *,
    tie_policy: str = "half",
    seed: int | None = None,
    higher_is_better: Mapping[str, bool] | None = None,
    skip_undefined: Collection[str] = (),
) -> PairwiseExperiment:
    """Accuracy per category (+ mean) for each metric, from scores on :func:`pairwise_units`.

    For metrics in ``skip_undefined`` a pair counts only when both members are defined (not
    NaN); ``defined`` and the per-category ``n`` say how many pairs remain.
    """
    n = len(table.candidates_a)
    hib = higher_is_better or {}
    results = {}
    defined: dict[str, int] = {}
    labels = np.asarray(table.labels, dtype=float)
    categories = np.asarray([str(c) for c in table.categories], dtype=object)
    for metric, values in per_unit.items():
        a, b = split_pairwise(values, n)
        lab, cat = labels, categories
        if metric in skip_undefined:
            keep = defined_mask(a) & defined_mask(b)
            a, b, lab, cat = a[keep], b[keep], labels[keep], categories[keep]
            defined[metric] = int(keep.sum())
            if not keep.any():
                raise InputError(f"{table.name}: {metric} is undefined (NaN) for every pair")
        results[metric] = pairwise_accuracy(a, b, lab, cat, tie_policy=tie_policy,
                                            seed=seed, higher_is_better=hib.get(metric, True))
    cats = list(dict.fromkeys(str(c) for c in table.categories))
    return PairwiseExperiment(table.name, n, cats, dict(table.protocol), tie_policy, results, defined)


# ---- system level ----------------------------------------------------------------------

@dataclass
class SystemExperiment:
    table: str
    systems: list[str]
    protocol: dict[str, str]
    scores: dict[str, dict[str, float]]  # metric → system → score
    aggregate: str  # "corpus" or "mean"
    vs_human: dict[str, SystemCorrelation] = field(default_factory=dict)
    rankings: dict[str, list[str]] = field(default_factory=dict)
    metric_matrix: tuple[list[str], np.ndarray] | None = None


def system_experiment(
    table: "SystemTable",
    scores: Mapping[str, Mapping[str, float]],
    *,
    aggregate: str = "corpus",
    statistic: str = "kendall_tau_b",
    higher_is_better: Mapping[str, bool] | None = None,
) -> SystemExperiment:
    """``scores`` is metric → system → system score. Correlates with humans when the table has
    system-level human scores; always reports rankings and the metric–metric agreement."""
    systems = list(table.systems)
    for metric, by_sys in scores.items():
        missing = [s for s in systems if s not in by_sys]
        if missing:
            raise InputError(f"{table.name}: {metric} has no score for system {missing[0]!r}")
    exp = SystemExperiment(table.name, systems, dict(table.protocol),
                           {m: {s: float(v[s]) for s in systems} for m, v in scores.items()}, aggregate)
    if table.human:
        human = {s: float(table.human[s]) for s in systems if s in table.human}
        for metric, by_sys in exp.scores.items():
            exp.vs_human[metric] = system_correlation({s: by_sys[s] for s in human}, human,
                                                      names=(metric, "human"))
    exp.rankings = system_rankings(exp.scores, higher_is_better=higher_is_better)
    if len(exp.scores) > 1 and len(systems) > 2:
        exp.metric_matrix = system_metric_matrix(exp.scores, statistic)
    return exp

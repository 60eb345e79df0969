"""Meta-evaluation: statistics over metric scores vs human judgments (pure, no I/O).

- :mod:`.correlation` — Pearson, Spearman, Kendall τ-b/τ-c, R², metric–metric matrices;
- :mod:`.williams` — Williams test for dependent correlations;
- :mod:`.bootstrap` — seeded row bootstrap, paired bootstrap, a corpus score's bootstrap from its
  rows' sufficient statistics (:func:`corpus_distribution`);
- :mod:`.pairwise` — pairwise / distractor accuracy with explicit tie policies;
- :mod:`.system` — system-level correlation and rankings;
- :mod:`.combination` — normalised metric combinations and their search;
- :mod:`.distractor_summary` — distractor accuracy per task, mean and worst task (the items
  themselves are built in :mod:`capeval.data.distractor_tasks`);
- :mod:`.experiments` — the above applied to benchmark record types, and the metric–metric
  agreement / Williams matrices of a correlation table.
"""
from .bootstrap import bootstrap_correlation, corpus_distribution, paired_bootstrap_correlation
from .combination import combine, search_combinations
from .correlation import (Correlation, correlate, correlation_matrix, kendall_tau_b, kendall_tau_c,
                          pearson, r_squared, spearman)
from .pairwise import (TIE_POLICIES, PairwiseAccuracy, bootstrap_accuracy, distractor_accuracy,
                       paired_bootstrap_accuracy, pairwise_accuracy)
from .system import system_correlation, system_rankings
from .williams import WilliamsResult, williams_from_scores, williams_test

__all__ = [
    "Correlation", "correlate", "pearson", "spearman", "kendall_tau_b", "kendall_tau_c", "r_squared",
    "correlation_matrix", "WilliamsResult", "williams_test", "williams_from_scores",
    "bootstrap_correlation", "paired_bootstrap_correlation", "corpus_distribution", "TIE_POLICIES", "PairwiseAccuracy",
    "pairwise_accuracy", "distractor_accuracy", "bootstrap_accuracy", "paired_bootstrap_accuracy",
    "system_correlation", "system_rankings", "combine", "search_combinations",
]

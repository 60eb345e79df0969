"""Metric combination search: normalised sums of 2–3 metrics on a correlation table.

Scores on different scales (CIDEr in [0, 10], METEOR in [0, 1], WMD similarity…) are
normalised before summing — z-scores or min–max over the table — with error metrics
sign-flipped first so "higher is better" holds for every term. Each combination is compared
with the best single metric by a Williams test on Pearson r, the only correlation the
test is defined for (docs/STATISTICS.md, Williams test); the ranking itself uses the chosen
statistic.
"""
from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ._arrays import as_vector, same_length
from .correlation import SHORT, canonical_statistic, correlate
from .williams import WilliamsResult, williams_from_scores

NORMALIZERS = ("z", "minmax")


def normalize(values: Sequence[float], method: str = "z", *, what: str = "scores") -> np.ndarray:
    """z-score (population sd) or min–max scaling to [0, 1]."""
    x = as_vector(values, what, finite=True)
    if method not in NORMALIZERS:
        raise InputError(f"unknown normalisation {method!r}; choose one of {', '.join(NORMALIZERS)}")
    if np.all(x == x[0]):
        raise InputError(f"{what} is constant; it cannot be normalised")
    if method == "z":
        return (x - x.mean()) / x.std()
    return (x - x.min()) / (x.max() - x.min())


def combine(scores: Mapping[str, Sequence[float]], metrics: Sequence[str], method: str = "z", *,
            higher_is_better: Mapping[str, bool] | None = None) -> np.ndarray:
    """Sum of the normalised scores of ``metrics``."""
    missing = [m for m in metrics if m not in scores]
    if missing:
        raise InputError(f"metric {missing[0]!r} is not among the scored metrics ({', '.join(scores)})")
    hib = higher_is_better or {}
    total = None
    for m in metrics:
        z = normalize(scores[m], method, what=m)
        z = z if hib.get(m, True) else -z
        total = z if total is None else total + z
    return total


@dataclass(frozen=True)
class Candidate:
    metrics: tuple[str, ...]
    value: float  # the ranking statistic vs human
    pearson: float
    williams: WilliamsResult | None  # vs the best single metric; None for that metric itself

    @property
    def name(self) -> str:
        return "+".join(self.metrics)


@dataclass(frozen=True)
class CombinationSearch:
    statistic: str
    method: str
    best_single: str
    singles: tuple[Candidate, ...]
    combinations: tuple[Candidate, ...]  # best first
    n: int
    williams_df: str

    def signature_fields(self) -> dict[str, object]:
        """What a reported search records beside its table's protocol: ranking statistic,
        normalisation, and the Williams test with its df rule."""
        return {"stat": SHORT[self.statistic], "norm": self.method, "test": "williams-pearson",
                "df": self.williams_df}


def search_combinations(
    scores: Mapping[str, Sequence[float]],
    human: Sequence[float],
    *,
    sizes: Sequence[int] = (2, 3),
    method: str = "z",
    statistic: str = "kendall_tau_c",
    combos: Sequence[Sequence[str]] | None = None,
    higher_is_better: Mapping[str, bool] | None = None,
    df: str = "n-3",
) -> CombinationSearch:
    """Evaluate every combination of ``sizes`` metrics (or only ``combos``) against ``human``."""
    statistic = canonical_statistic(statistic)
    h = as_vector(human, "human", finite=True)
    vecs = {m: as_vector(v, m, finite=True) for m, v in scores.items()}
    if len(vecs) < 2:
        raise InputError("combination search needs at least two metrics")
    n = same_length(("human", h), *vecs.items())
    hib = higher_is_better or {}
    oriented = {m: (v if hib.get(m, True) else -v) for m, v in vecs.items()}

    def stat(x: np.ndarray, name: str) -> tuple[float, float]:
        return (correlate(x, h, statistic, names=(name, "human")).value,
                correlate(x, h, "pearson", names=(name, "human")).value)

    single_vals = {m: stat(v, m) for m, v in oriented.items()}
    best = max(single_vals, key=lambda m: single_vals[m][0])
    singles = tuple(
        Candidate((m,), v, r, None if m == best else williams_from_scores(h, oriented[m], oriented[best], df=df, names=(m, best)))
        for m, (v, r) in sorted(single_vals.items(), key=lambda kv: -kv[1][0])
    )
    if combos is None:
        names = list(vecs)
        combos = [c for k in sizes for c in itertools.combinations(names, k)]
    out = []
    for combo in combos:
        combo = tuple(combo)
        if len(combo) < 2:
            raise InputError(f"combination {combo!r} has fewer than two metrics")
        x = combine(vecs, combo, method, higher_is_better=hib)
        name = "+".join(combo)
        v, r = stat(x, name)
        w = williams_from_scores(h, x, oriented[best], df=df, names=(name, best))
        out.append(Candidate(combo, v, r, w))
    out.sort(key=lambda c: -c.value)
    return CombinationSearch(statistic, method, best, singles, tuple(out), n, df)

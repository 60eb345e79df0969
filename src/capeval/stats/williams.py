"""Williams test for a difference between two dependent correlations (docs/STATISTICS.md,
Williams test).

Graham & Baldwin (2014) use it to ask whether metric A correlates with humans
significantly better than metric B, given that A and B are themselves correlated.
One-sided: H1 is r12 > r13. As in ``psych::r.test`` the default df is n − 3; the README
example of ``ygraham/nlp-williams`` used n − 2, so that is an option and df is recorded.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ..signature import Signature
from ._arrays import as_vector, same_length

DF_RULES = ("n-3", "n-2")


@dataclass(frozen=True)
class WilliamsResult:
    t: float
    p_value: float
    df: int
    df_rule: str
    r12: float
    r13: float
    r23: float
    n: int
    k: float

    def signature_fields(self) -> dict[str, object]:
        return {"test": "williams", "tail": "one", "df": f"{self.df_rule}={self.df}", "n": self.n}

    def signature(self) -> Signature:
        return Signature.make("williams", **{k: v for k, v in self.signature_fields().items() if k != "test"})


def check_df_rule(df: str) -> str:
    if df not in DF_RULES:
        raise InputError(f"unknown df rule {df!r}; choose one of {', '.join(DF_RULES)}")
    return df


def degrees_of_freedom(n: int, df: str = "n-3") -> int:
    """The t distribution's df under rule ``df`` (one of :data:`DF_RULES`) for ``n`` rows."""
    return n - 3 if check_df_rule(df) == "n-3" else n - 2


def _check_r(name: str, r: float) -> float:
    r = float(r)
    if math.isnan(r) or not -1.0 <= r <= 1.0:
        raise InputError(f"{name} = {r!r} is not a correlation in [-1, 1]")
    return r


def williams_test(r12: float, r13: float, r23: float, n: int, *, df: str = "n-3") -> WilliamsResult:
    """Test r12 > r13 where r12 = corr(human, A), r13 = corr(human, B), r23 = corr(A, B).

    Returns the t statistic (not a distribution object) and the one-sided p = P(T_df > t).
    A negative t (r12 < r13) gives p > 0.5; swap A and B to test the other direction.
    """
    from scipy import stats

    r12, r13, r23 = _check_r("r12", r12), _check_r("r13", r13), _check_r("r23", r23)
    check_df_rule(df)
    # NaN, ±inf and non-numbers are refused here, before int() raises a bare ValueError/OverflowError.
    if (isinstance(n, bool) or not isinstance(n, (int, float, np.integer, np.floating)) or not math.isfinite(n)
            or int(n) != n or n <= 3):
        raise InputError(f"Williams test needs an integer n > 3, got {n!r}")
    n = int(n)
    k = 1 - r12**2 - r13**2 - r23**2 + 2 * r12 * r13 * r23
    if k <= 0:
        raise InputError(
            f"r12={r12}, r13={r13}, r23={r23} do not form a valid correlation matrix "
            f"(determinant K={k!r} <= 0)"
        )
    denom = 2 * k * (n - 1) / (n - 3) + ((r12 + r13) / 2) ** 2 * (1 - r23) ** 3
    t = (r12 - r13) * math.sqrt((n - 1) * (1 + r23) / denom)
    dof = degrees_of_freedom(n, df)
    p = float(stats.t.sf(t, float(dof)))  # float: an n past int64 would reach SciPy as an object
    return WilliamsResult(t=t, p_value=p, df=dof, df_rule=df, r12=r12, r13=r13, r23=r23, n=n, k=k)


def williams_from_scores(human, metric_a, metric_b, *, df: str = "n-3",
                         names: tuple[str, str] = ("metric_a", "metric_b")) -> WilliamsResult:
    """Williams test on raw scores: Pearson r of each metric with ``human`` and with each other."""
    from .correlation import pearson

    h = as_vector(human, "human", finite=True)
    a = as_vector(metric_a, names[0], finite=True)
    b = as_vector(metric_b, names[1], finite=True)
    n = same_length(("human", h), (names[0], a), (names[1], b))
    r12 = pearson(a, h, names=(names[0], "human")).value
    r13 = pearson(b, h, names=(names[1], "human")).value
    r23 = pearson(a, b, names=names).value
    return williams_test(r12, r13, r23, n, df=df)


def williams_matrix(scores: Mapping[str, Sequence[float]], human: Sequence[float], *, df: str = "n-3"
                    ) -> tuple[list[str], np.ndarray]:
    """p[i, j] = one-sided Williams p that metric i correlates better with ``human`` than j.
    Pairs the test cannot take (identical or constant metrics) are NaN; anything else wrong
    with the input (a df rule, NaN, unequal lengths) is refused before any test runs."""
    check_df_rule(df)
    h = as_vector(human, "human", finite=True)
    vecs = {m: as_vector(v, m, finite=True) for m, v in scores.items()}
    same_length(("human", h), *vecs.items())
    names = list(vecs)
    p = np.full((len(names), len(names)), np.nan)
    for i, a in enumerate(names):
        for j, b in enumerate(names):
            if i == j:
                continue
            try:
                p[i, j] = williams_from_scores(h, vecs[a], vecs[b], df=df, names=(a, b)).p_value
            except InputError:
                pass
    return names, p

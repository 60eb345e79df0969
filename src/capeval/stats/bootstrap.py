"""Seeded bootstrap over judgment rows (docs/STATISTICS.md, Bootstrap; sacrebleu's defaults).

Metric scores are computed once on the full table and only the *rows* are resampled, so a
corpus-dependent metric (CIDEr's df) is never recomputed. All resamples are drawn as index
matrices and the statistic runs on whole batches (Kendall's τ through resample weights, see
``_kendall``); the chunk size only bounds memory and
does not change the numbers (NumPy's generator streams identically across chunk splits).
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ..metrics.statistics import Statistics
from ..signature import Signature
from ._arrays import as_vector, same_length
from ._kendall import MAX_LEVELS, WeightedKendall, levels, weights_from_indices
from .correlation import SHORT, batched, canonical_statistic, correlate

#: sacrebleu's defaults (significance.py): 1,000 resamples, seed 12345.
DEFAULT_RESAMPLES = 1000
DEFAULT_SEED = 12345
#: Index cells materialised per batch (≈32 MB of int64).
_CHUNK_CELLS = 4_000_000


def resample_indices(
    n: int,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    *,
    strata: Sequence | None = None,
    chunk_cells: int = _CHUNK_CELLS,
) -> Iterator[np.ndarray]:
    """Yield index matrices of shape (b, n), b ≤ chunk, n_resamples rows in all.

    With ``strata`` (one label per row), each stratum is resampled within itself so every
    resample keeps the stratum sizes (e.g. 1,000 pairs per PASCAL category).
    """
    if n_resamples < 1:
        raise InputError(f"n_resamples must be positive, got {n_resamples}")
    rng = np.random.default_rng(seed)
    members: list[np.ndarray] | None = None
    if strata is not None:
        labels = np.asarray(list(strata), dtype=object)
        if len(labels) != n:
            raise InputError(f"{len(labels)} strata labels for {n} rows")
        members = [np.flatnonzero(labels == s) for s in sorted(set(labels.tolist()), key=str)]
    chunk = max(1, chunk_cells // max(n, 1))
    done = 0
    while done < n_resamples:
        b = min(chunk, n_resamples - done)
        if members is None:
            idx = rng.integers(0, n, size=(b, n))
        else:
            idx = np.concatenate([m[rng.integers(0, len(m), size=(b, len(m)))] for m in members], axis=1)
        done += b
        yield idx


def distribution(
    fn: Callable[[np.ndarray], np.ndarray],
    n: int,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    *,
    strata: Sequence | None = None,
    chunk_cells: int = _CHUNK_CELLS,
) -> np.ndarray:
    """``fn(idx)`` (one value per row of an index batch) over all resamples, concatenated."""
    return np.concatenate([
        np.asarray(fn(idx), dtype=float)
        for idx in resample_indices(n, n_resamples, seed, strata=strata, chunk_cells=chunk_cells)
    ])


def bootstrap_distribution(
    batch_stat: Callable[..., np.ndarray],
    arrays: Sequence[np.ndarray],
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    *,
    strata: Sequence | None = None,
    chunk_cells: int = _CHUNK_CELLS,
) -> np.ndarray:
    """Statistic on each resample: ``batch_stat(*[a[idx] for a in arrays])`` per index batch."""
    return distribution(lambda idx: batch_stat(*[a[idx] for a in arrays]), len(arrays[0]), n_resamples,
                        seed, strata=strata, chunk_cells=chunk_cells)


def corpus_distribution(
    stats: Statistics,
    output: str,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    *,
    strata: Sequence | None = None,
) -> np.ndarray:
    """A corpus score over row resamples, from the rows' sufficient statistics
    (``Metric.statistics``): each resample's statistics are its rows' (``Statistics.take``), so no
    metric runs again. For a family whose rows need no corpus pre-pass each value equals scoring
    the resampled rows; CIDEr keeps the full set's df, as the row bootstrap above keeps every
    metric score."""
    if output not in stats.corpus():
        raise InputError(f"{output!r} is not an output of these statistics ({', '.join(stats.corpus())})")

    def corpus(idx: np.ndarray) -> np.ndarray:
        return np.array([stats.take(row).corpus()[output] for row in idx], dtype=float)

    # one resample's statistics at a time: the index batches only bound memory
    return distribution(corpus, stats.n, n_resamples, seed, strata=strata)


def correlation_resampler(statistic: str, metric: np.ndarray, human: np.ndarray
                          ) -> Callable[[np.ndarray], np.ndarray]:
    """``idx → corr(metric[idx], human[idx])`` per row, by the fastest exact route."""
    statistic = canonical_statistic(statistic)
    if statistic in ("kendall_tau_b", "kendall_tau_c") and min(levels(metric), levels(human)) <= MAX_LEVELS:
        kernel = WeightedKendall(metric, human, statistic[-1])
        n = len(metric)
        return lambda idx: kernel(weights_from_indices(idx, n))
    stat = batched(statistic)
    return lambda idx: stat(metric[idx], human[idx])


def _interval(values: np.ndarray, level: float) -> tuple[float, float]:
    if not 0 < level < 1:
        raise InputError(f"confidence level must be in (0, 1), got {level}")
    alpha = (1 - level) / 2
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return float("nan"), float("nan")
    lo, hi = np.quantile(finite, [alpha, 1 - alpha])
    return float(lo), float(hi)


@dataclass(frozen=True)
class BootstrapCI:
    """Point value on the full data plus a percentile interval over resamples."""

    statistic: str
    value: float
    low: float
    high: float
    level: float
    mean: float
    std: float
    n: int
    n_resamples: int
    seed: int
    undefined: int = 0  # resamples where the statistic was undefined (e.g. constant)

    def signature_fields(self) -> dict[str, object]:
        return {"stat": SHORT.get(self.statistic, self.statistic), "n": self.n,
                "bs": self.n_resamples, "rs": self.seed, "ci": self.level}

    def signature(self) -> Signature:
        return Signature.make("bootstrap", **self.signature_fields())


@dataclass(frozen=True)
class PairedBootstrap:
    """Paired bootstrap for ``value_a − value_b`` on identical resamples.

    ``p_value`` is two-sided against the null of no difference, in the style of sacrebleu
    and multeval: shift the resampled differences to mean zero and count how often their
    magnitude reaches the observed one, with +1 smoothing. Counting ``>=`` (not ``>``) makes
    a metric compared with itself get p = 1 rather than a spurious 1/(B+1). ``a_better`` is the fraction of
    resamples in which A's statistic beat B's.
   
    Resamples where either statistic is undefined (a constant resample) are left out and
    counted in ``undefined``; when every one is, the interval, ``p_value`` and ``a_better``
    are NaN (never p = 1 from no evidence).
    """

    statistic: str
    value_a: float
    value_b: float
    delta: float
    low: float
    high: float
    level: float
    p_value: float
    a_better: float
    n: int
    n_resamples: int
    seed: int
    undefined: int = 0

    def signature_fields(self) -> dict[str, object]:
        return {"stat": SHORT.get(self.statistic, self.statistic), "n": self.n,
                "test": "paired-bs", "bs": self.n_resamples, "rs": self.seed, "ci": self.level}

    def signature(self) -> Signature:
        return Signature.make("paired_bootstrap", **self.signature_fields())


def summarize(statistic: str, value: float, dist: np.ndarray, *, n: int, n_resamples: int,
              seed: int, level: float) -> BootstrapCI:
    lo, hi = _interval(dist, level)
    finite = dist[np.isfinite(dist)]
    return BootstrapCI(
        statistic=statistic, value=float(value), low=lo, high=hi, level=level,
        mean=float(finite.mean()) if finite.size else float("nan"),
        std=float(finite.std(ddof=1)) if finite.size > 1 else float("nan"),
        n=n, n_resamples=n_resamples, seed=seed, undefined=int(dist.size - finite.size),
    )


def compare(statistic: str, value_a: float, value_b: float, dist_a: np.ndarray, dist_b: np.ndarray,
            *, n: int, n_resamples: int, seed: int, level: float) -> PairedBootstrap:
    """Paired summary from two statistics' distributions over the same resamples."""
    diffs = dist_a - dist_b
    ok = np.isfinite(diffs)
    diffs = diffs[ok]
    delta = float(value_a - value_b)
    lo, hi = _interval(diffs, level)
    if diffs.size:
        centred = np.abs(diffs - diffs.mean())
        p = (int(np.sum(centred >= abs(delta))) + 1) / (diffs.size + 1)
    else:
        p = float("nan")
    return PairedBootstrap(
        statistic=statistic, value_a=float(value_a), value_b=float(value_b), delta=delta,
        low=lo, high=hi, level=level, p_value=float(p),
        a_better=float(np.mean(diffs > 0)) if diffs.size else float("nan"),
        n=n, n_resamples=n_resamples, seed=seed, undefined=int(ok.size - diffs.size),
    )


def bootstrap_correlation(
    metric: Sequence[float],
    human: Sequence[float],
    statistic: str = "kendall_tau_c",
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    level: float = 0.95,
    strata: Sequence | None = None,
) -> BootstrapCI:
    """Confidence interval for corr(metric, human) by resampling rows."""
    statistic = canonical_statistic(statistic)
    m = as_vector(metric, "metric")
    h = as_vector(human, "human")
    n = same_length(("metric", m), ("human", h))
    value = correlate(m, h, statistic, names=("metric", "human")).value
    dist = distribution(correlation_resampler(statistic, m, h), n, n_resamples, seed, strata=strata)
    return summarize(statistic, value, dist, n=n, n_resamples=n_resamples, seed=seed, level=level)


def paired_bootstrap_correlation(
    metric_a: Sequence[float],
    metric_b: Sequence[float],
    human: Sequence[float],
    statistic: str = "kendall_tau_c",
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    level: float = 0.95,
    strata: Sequence | None = None,
    names: tuple[str, str] = ("metric_a", "metric_b"),
) -> PairedBootstrap:
    """Is corr(A, human) different from corr(B, human)? Both on the same resamples."""
    statistic = canonical_statistic(statistic)
    a = as_vector(metric_a, names[0])
    b = as_vector(metric_b, names[1])
    h = as_vector(human, "human")
    n = same_length((names[0], a), (names[1], b), ("human", h))
    va = correlate(a, h, statistic, names=(names[0], "human")).value
    vb = correlate(b, h, statistic, names=(names[1], "human")).value
    dist_a, dist_b = paired_distributions(correlation_resampler(statistic, a, h),
                                          correlation_resampler(statistic, b, h), n, n_resamples, seed,
                                          strata=strata)
    return compare(statistic, va, vb, dist_a, dist_b, n=n, n_resamples=n_resamples, seed=seed, level=level)


def paired_distributions(
    fn_a: Callable[[np.ndarray], np.ndarray],
    fn_b: Callable[[np.ndarray], np.ndarray],
    n: int,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    *,
    strata: Sequence | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The statistic for A and for B on the *same* index batches (the pairing)."""
    da, db = [], []
    for idx in resample_indices(n, n_resamples, seed, strata=strata):
        da.append(np.asarray(fn_a(idx), dtype=float))
        db.append(np.asarray(fn_b(idx), dtype=float))
    return np.concatenate(da), np.concatenate(db)

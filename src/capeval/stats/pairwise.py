"""Pairwise accuracy (PASCAL-50S, ABSTRACT-50S) and distractor accuracy (FOIL-style).

A metric "prefers" the candidate with the higher score (lower, for error metrics). What
happens when it scores both the same is a protocol choice that moves numbers, so it is an
explicit ``tie_policy`` and tie counts are always reported (docs/STATISTICS.md, Pairwise accuracy):

- ``"half"`` (default): a metric tie earns 0.5 credit;
- ``"random"``: a metric tie picks a side at random from ``seed``;
- ``"b"``: a metric tie counts as preferring B (Polos' ``score_a > score_b`` rule);
- ``"fail"``: a metric tie earns no credit (Polos' FOIL rule: ties are failures).

A human label of 0.5 (a human tie kept by the protocol) earns 0.5 credit whatever the
metric says and whatever the tie policy, so it neither rewards nor punishes.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError
from ..signature import Signature
from ._arrays import as_vector, same_length
from .bootstrap import (DEFAULT_RESAMPLES, DEFAULT_SEED, BootstrapCI, PairedBootstrap, compare,
                        paired_distributions, bootstrap_distribution, summarize)

TIE_POLICIES = ("half", "random", "b", "fail")
DEFAULT_TIE_SEED = 12345


@dataclass(frozen=True)
class PairwiseAccuracy:
    """Accuracies as fractions in [0, 1]; ``percent()`` gives the published scale.

    ``mean`` is the plain mean of the category accuracies (how PASCAL-50S tables report
    it); ``overall`` is the accuracy over all pairs.
    """

    accuracy: dict[str, float]
    correct: dict[str, float]  # credit sum per category (ties may give halves)
    mean: float
    overall: float
    n: dict[str, int]
    ties: dict[str, int]
    tie_policy: str
    seed: int | None
    credits: np.ndarray = field(repr=False)
    categories: np.ndarray = field(repr=False)

    @property
    def total_ties(self) -> int:
        return sum(self.ties.values())

    def percent(self) -> dict[str, float]:
        # 100·correct/n rounds once, so 606.5 of 1,000 prints as 60.65, not 60.650000000000006.
        out = {k: 100.0 * self.correct[k] / self.n[k] for k in self.accuracy}
        out["mean"] = sum(out.values()) / len(out)
        return out

    def signature_fields(self) -> dict[str, object]:
        fields: dict[str, object] = {"stat": "acc", "n": int(sum(self.n.values())), "ties": self.tie_policy}
        if self.tie_policy == "random":
            fields["tie_seed"] = self.seed
        return fields

    def signature(self) -> Signature:
        return Signature.make("pairwise_accuracy", **self.signature_fields())


def _check_policy(tie_policy: str) -> str:
    if tie_policy not in TIE_POLICIES:
        raise InputError(f"unknown tie policy {tie_policy!r}; choose one of {', '.join(TIE_POLICIES)}")
    return tie_policy


def pair_credits(
    score_a: Sequence[float],
    score_b: Sequence[float],
    labels: Sequence[float],
    *,
    tie_policy: str = "half",
    seed: int | None = None,
    higher_is_better: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """Credit in {0, 0.5, 1} per pair, and the boolean mask of metric ties."""
    _check_policy(tie_policy)
    a = as_vector(score_a, "score_a")
    b = as_vector(score_b, "score_b")
    lab = as_vector(labels, "labels")
    if same_length(("score_a", a), ("score_b", b), ("labels", lab)) == 0:
        raise InputError("no pairs: an accuracy over zero pairs is undefined")
    bad = np.flatnonzero(~np.isin(lab, (0.0, 0.5, 1.0)))
    if bad.size:
        raise InputError(f"labels[{int(bad[0])}] = {lab[bad[0]]!r}; expected 0 (A preferred), 1 (B) or 0.5 (tie)")
    if not higher_is_better:
        a, b = -a, -b
    ties = a == b
    pred = np.where(a > b, 0.0, 1.0)
    if tie_policy == "half":
        pred[ties] = 0.5
    elif tie_policy == "random":
        rng = np.random.default_rng(DEFAULT_TIE_SEED if seed is None else seed)
        pred[ties] = rng.integers(0, 2, size=int(ties.sum()))
    # "b" keeps pred = 1 for ties; "fail" zeroes their credit below.
    credit = 1.0 - np.abs(pred - lab)
    if tie_policy == "fail":
        credit[ties] = 0.0
    credit[lab == 0.5] = 0.5
    return credit, ties


def _category_codes(categories: Sequence | None, n: int) -> tuple[list[str], np.ndarray]:
    if categories is None:
        return ["all"], np.zeros(n, dtype=int)
    cats = [str(c) for c in categories]
    if len(cats) != n:
        raise InputError(f"{len(cats)} category labels for {n} pairs")
    order = list(dict.fromkeys(cats))
    index = {c: i for i, c in enumerate(order)}
    return order, np.fromiter((index[c] for c in cats), dtype=int, count=n)


def pairwise_accuracy(
    score_a: Sequence[float],
    score_b: Sequence[float],
    labels: Sequence[float],
    categories: Sequence | None = None,
    *,
    tie_policy: str = "half",
    seed: int | None = None,
    higher_is_better: bool = True,
) -> PairwiseAccuracy:
    """Fraction of pairs where the metric prefers the member humans preferred, per category."""
    credit, ties = pair_credits(score_a, score_b, labels, tie_policy=tie_policy, seed=seed,
                                higher_is_better=higher_is_better)
    names, codes = _category_codes(categories, len(credit))
    acc, correct, counts, tie_counts = {}, {}, {}, {}
    for i, name in enumerate(names):
        mask = codes == i
        acc[name] = float(credit[mask].mean())
        correct[name] = float(credit[mask].sum())
        counts[name] = int(mask.sum())
        tie_counts[name] = int(ties[mask].sum())
    return PairwiseAccuracy(
        accuracy=acc, correct=correct, mean=float(np.mean(list(acc.values()))), overall=float(credit.mean()),
        n=counts, ties=tie_counts, tie_policy=tie_policy,
        seed=(DEFAULT_TIE_SEED if seed is None else seed) if tie_policy == "random" else None,
        credits=credit, categories=np.asarray(names, dtype=object)[codes],
    )


def distractor_accuracy(
    score_true: Sequence[float],
    score_distractor: Sequence[float],
    categories: Sequence | None = None,
    *,
    tie_policy: str = "half",
    seed: int | None = None,
    higher_is_better: bool = True,
) -> PairwiseAccuracy:
    """Fraction of (true, distractor) pairs where the true caption scores higher (FOIL-style)."""
    n = len(score_true)
    return pairwise_accuracy(score_true, score_distractor, np.zeros(n), categories,
                             tie_policy=tie_policy, seed=seed, higher_is_better=higher_is_better)


def _macro_mean(n_cats: int):
    def stat(credit: np.ndarray, codes: np.ndarray) -> np.ndarray:
        per = []
        for c in range(n_cats):
            mask = codes == c
            with np.errstate(invalid="ignore", divide="ignore"):
                per.append((credit * mask).sum(axis=1) / mask.sum(axis=1))
        return np.mean(per, axis=0)

    return stat


def bootstrap_accuracy(
    result: PairwiseAccuracy,
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    level: float = 0.95,
) -> BootstrapCI:
    """CI for the category-mean accuracy; pairs are resampled within their category."""
    names, codes = _category_codes(result.categories, len(result.credits))
    dist = bootstrap_distribution(_macro_mean(len(names)), (result.credits, codes), n_resamples, seed,
                                  strata=codes)
    return summarize("acc", result.mean, dist, n=len(codes), n_resamples=n_resamples, seed=seed, level=level)


def paired_bootstrap_accuracy(
    a: PairwiseAccuracy,
    b: PairwiseAccuracy,
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    level: float = 0.95,
) -> PairedBootstrap:
    """Difference of two metrics' category-mean accuracy on the same resampled pairs."""
    if len(a.credits) != len(b.credits) or list(a.categories) != list(b.categories):
        raise InputError("the two accuracy results are not over the same pairs")
    names, codes = _category_codes(a.categories, len(a.credits))
    stat = _macro_mean(len(names))
    da, db = paired_distributions(lambda idx: stat(a.credits[idx], codes[idx]),
                                  lambda idx: stat(b.credits[idx], codes[idx]), len(codes), n_resamples, seed,
                                  strata=codes)
    return compare("acc", a.mean, b.mean, da, db, n=len(codes), n_resamples=n_resamples, seed=seed,
                   level=level)

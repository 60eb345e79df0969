"""Sufficient statistics: what a family computes per row, how rows merge, and how scores follow.

Every family's numbers go through three steps (:class:`~capeval.metrics.base.Metric`):

(a) an optional corpus pre-pass whose state merges associatively (CIDEr's document
    frequencies: :meth:`Metric.prepass`, merged with ``+``);
(b) per-row statistics of a batch given that state (:meth:`Metric.statistics`), a
    :class:`Statistics`;
(c) per-caption and corpus scores from statistics (:meth:`Statistics.scores`, through the
    family's :class:`Aggregate`).

Merging statistics concatenates their rows and adds their totals (integers, or floats holding
integers, so the sums are exact in any grouping): chunks, worker processes and Ray tasks combine
in any grouping and give ``==`` numbers. Floats summed in a fixed order (the mean of per-row
scores, TER's reference lengths) stay per-row columns and are summed once, over the whole
column, as the in-memory path sums them.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..errors import InputError
from ..result import MetricScores


class Aggregate:
    """How one family's scores follow from its statistics. Small and picklable (it travels with
    the statistics from workers), and equal (``==``) across the parts of one run."""

    def per_caption(self, st: Statistics) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def corpus(self, st: Statistics) -> dict[str, float]:
        raise NotImplementedError

    def details(self, st: Statistics) -> dict[str, Any]:
        """Corpus-level details the family reports beside its scores (``Result.details``), from
        statistics, so a streamed run reports them too (BLEU's summed counts); default none."""
        return {}

    def fields(self, st: Statistics) -> dict[str, Any]:
        """Signature fields that depend on the whole input (the ``trunc:N`` count of texts an
        encoder cut), added after the family's own; parts of a run leave them out of
        ``Statistics.fields``, which must agree. Default none."""
        return {}

    def warning(self, st: Statistics) -> Warning | None:
        """What a run of these statistics should warn about once, as the warning to issue (its
        class is its category: ``LongTextWarning(...)`` for texts an encoder cut), in memory and
        streamed alike; None when nothing (default)."""
        return None

    def reduce(self, st: Statistics) -> Statistics:
        """The part of ``st`` the corpus score needs (BLEU keeps only its summed counts), so a
        streamed run holds no more per row than its corpus rule reads. ``reduce`` commutes
        with merging."""
        return st

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and vars(other) == vars(self)

    def __hash__(self) -> int:
        return hash(type(self))


class AsComputed(Aggregate):
    """The corpus scores a family that never streams computed over one whole batch, when they are
    not the mean of its per-caption scores. Statistics of two batches never merge under it (two
    instances are never equal), so it can only describe a whole input scored at once."""

    def __init__(self, corpus: dict[str, float]):
        self._corpus = dict(corpus)

    def per_caption(self, st: Statistics) -> dict[str, np.ndarray]:
        return {k: st.rows[k] for k in self._corpus}

    def corpus(self, st: Statistics) -> dict[str, float]:
        return dict(self._corpus)

    def __eq__(self, other: object) -> bool:
        return other is self

    def __hash__(self) -> int:
        return id(self)


class RowMean(Aggregate):
    """Per-row values that are the per-caption scores; corpus = ``np.mean`` of each column (the
    default of per-row families, plug-ins and user metrics). ``empty`` is the corpus value of
    no rows."""

    def __init__(self, outputs: Sequence[str], empty: float = math.nan):
        self.outputs = tuple(outputs)
        self.empty = float(empty)

    def per_caption(self, st: Statistics) -> dict[str, np.ndarray]:
        return {k: st.rows[k] for k in self.outputs}

    def corpus(self, st: Statistics) -> dict[str, float]:
        return {k: float(np.mean(st.rows[k])) if st.n else self.empty for k in self.outputs}

    def __eq__(self, other: object) -> bool:
        # NaN != NaN: compare the empty value by its bits
        return (type(other) is type(self) and self.outputs == other.outputs  # type: ignore[attr-defined]
                and np.float64(self.empty).tobytes() == np.float64(other.empty).tobytes())  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self), self.outputs))


@dataclass
class Statistics:
    """Sufficient statistics of some rows of one family.

    ``rows``: per-row arrays (leading axis = row), merged by concatenation. ``totals``: arrays
    summed over rows, merged by addition; they must be exact sums (integers, or floats holding
    integers below 2**53). ``fields``: the family's signature fields, equal in every part.
    ``aggregate``: how scores follow (:class:`Aggregate`). ``details``: what the batch's
    computation reported besides numbers (QACE's explanations, a learned model's feature
    labels), reported by :meth:`scores` after the aggregate's details; they describe one batch,
    so merging, resampling and reducing leave them out, and no run folder stores them."""

    n: int
    aggregate: Aggregate
    rows: dict[str, np.ndarray] = field(default_factory=dict)
    totals: dict[str, np.ndarray] = field(default_factory=dict)
    fields: dict[str, Any] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def per_caption(self) -> dict[str, np.ndarray]:
        return self.aggregate.per_caption(self)

    def corpus(self) -> dict[str, float]:
        return self.aggregate.corpus(self)

    def scores(self) -> MetricScores:
        """Per-caption and corpus scores, with the aggregate's details and then the batch's."""
        return MetricScores(corpus=self.corpus(), per_caption=self.per_caption(),
                            signature_fields={**self.fields, **self.aggregate.fields(self)},
                            details={**self.aggregate.details(self), **self.details})

    def reduced(self) -> Statistics:
        """What the corpus scores read (:meth:`Aggregate.reduce`), without the batch's details."""
        out = self.aggregate.reduce(self)
        return replace(out, details={}) if out.details else out

    def total(self, key: str) -> np.ndarray:
        """``totals[key]`` plus the sum of ``rows[key]`` (a part not yet reduced)."""
        out = self.totals.get(key)
        if key in self.rows:
            s = self.rows[key].sum(axis=0)
            out = s if out is None else out + s
        if out is None:
            raise KeyError(key)
        return out

    @staticmethod
    def merge(parts: Sequence[Statistics]) -> Statistics:
        """The statistics of the parts' rows in order. Associative: any grouping of the same
        parts gives equal statistics."""
        if not parts:
            raise ValueError("no statistics to merge")
        first = parts[0]
        for p in parts[1:]:
            if p.aggregate != first.aggregate:
                raise ValueError(f"statistics of different rules cannot merge: {first.aggregate!r}, {p.aggregate!r}")
            if p.fields != first.fields:
                raise ValueError(f"statistics with different signature fields cannot merge: {first.fields} and "
                                 f"{p.fields}")
            if p.rows.keys() != first.rows.keys() or p.totals.keys() != first.totals.keys():
                raise ValueError("statistics with different columns cannot merge")
        rows = {k: np.concatenate([p.rows[k] for p in parts]) for k in first.rows}
        totals: dict[str, np.ndarray] = {}
        for k in first.totals:
            acc = np.array(first.totals[k], copy=True)
            for p in parts[1:]:
                acc = acc + p.totals[k]
            totals[k] = acc
        return Statistics(sum(p.n for p in parts), first.aggregate, rows, totals, dict(first.fields))

    def take(self, index: np.ndarray) -> Statistics:
        """The statistics of rows ``index`` (in that order, repeats allowed): a resample of a
        part that still has its rows (not :meth:`reduced`)."""
        if self.totals:
            raise ValueError("these statistics are reduced to totals; resample them before reducing")
        index = np.asarray(index, dtype=np.int64)
        return Statistics(len(index), self.aggregate, {k: v[index] for k, v in self.rows.items()}, {},
                          dict(self.fields))


def check_default_rule(family: str, out: MetricScores, st: Statistics) -> None:
    """``out``'s corpus scores are the default rule's (the mean of the per-caption scores), or an
    error naming the family and what to declare."""
    got = st.corpus()
    for name, want in out.corpus.items():
        have = got.get(name)
        if have is None or not (have == want or (math.isnan(have) and math.isnan(want))):
            raise InputError(f"metric family {family!r}: its corpus {name} ({want!r}) is not the mean of its "
                             f"per-caption scores ({have!r}), so it cannot be merged from parts; give the family "
                             "its own statistics (Metric.statistics and Metric.aggregate) or set streamable = False")


def from_scores(out: MetricScores, n: int, aggregate: Aggregate,
                checked_for: tuple[str, bool] | None = None) -> Statistics:
    """Statistics of a family whose per-row values are its per-caption scores (with its details).
    ``checked_for=(family, streamable)``: ``aggregate`` is the default rule, checked against
    ``out``'s corpus scores (:func:`check_default_rule`); a family that never streams keeps the
    corpus scores it computed when they are not the mean (:class:`AsComputed`)."""
    st = Statistics(n, aggregate, rows=dict(out.per_caption), fields=dict(out.signature_fields),
                    details=dict(out.details))
    if checked_for is not None:
        family, streamable = checked_for
        try:
            check_default_rule(family, out, st)
        except InputError:
            if streamable:
                raise
            st.aggregate = AsComputed(out.corpus)
    return st


__all__ = ["Aggregate", "AsComputed", "RowMean", "Statistics", "check_default_rule", "from_scores"]

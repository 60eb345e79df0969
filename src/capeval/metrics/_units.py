"""Deduplication of scoring units.

Judgment tables repeat the same (candidate, reference set) many times: Flickr8k-Expert has
16,992 rows but 5,664 distinct units, and only 1,000 distinct reference sets. Every
per-unit statistic in the coco metrics is a pure function of the unit (plus corpus-level
df for CIDEr), so computing each distinct unit once and broadcasting is exact.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass
class Units:
    """Distinct units and how rows map onto them."""

    cands: list[str]                 # distinct candidate strings
    refsets: list[tuple[str, ...]]   # distinct reference tuples
    unit_cand: np.ndarray            # per distinct unit: index into cands
    unit_refset: np.ndarray          # per distinct unit: index into refsets
    row_unit: np.ndarray             # per input row: index of its distinct unit
    refset_rows: np.ndarray          # per distinct refset: number of input rows using it

    @property
    def n_rows(self) -> int:
        return len(self.row_unit)


def dedupe(candidates: Sequence[str], references: Sequence[Sequence[str]]) -> Units:
    cand_ix: dict[str, int] = {}
    ref_ix: dict[tuple[str, ...], int] = {}
    unit_ix: dict[tuple[int, int], int] = {}
    unit_cand: list[int] = []
    unit_ref: list[int] = []
    row_unit = np.empty(len(candidates), dtype=np.int64)
    ref_rows: list[int] = []
    for i, (c, refs) in enumerate(zip(candidates, references)):
        ci = cand_ix.setdefault(c, len(cand_ix))
        key = tuple(refs)
        ri = ref_ix.get(key)
        if ri is None:
            ri = ref_ix[key] = len(ref_ix)
            ref_rows.append(0)
        ref_rows[ri] += 1
        u = unit_ix.get((ci, ri))
        if u is None:
            u = unit_ix[(ci, ri)] = len(unit_cand)
            unit_cand.append(ci)
            unit_ref.append(ri)
        row_unit[i] = u
    return Units(
        cands=list(cand_ix),
        refsets=list(ref_ix),
        unit_cand=np.asarray(unit_cand, dtype=np.int64),
        unit_refset=np.asarray(unit_ref, dtype=np.int64),
        row_unit=row_unit,
        refset_rows=np.asarray(ref_rows, dtype=np.int64),
    )


def ngram_counts(words: Sequence[str], n: int) -> dict[tuple[str, ...], int]:
    """n-gram counts for orders 1..n in the reference code's insertion order
    (all unigrams left to right, then bigrams, ...). Order matters: CIDEr sums floats in it."""
    counts: dict[tuple[str, ...], int] = {}
    get = counts.get
    L = len(words)
    for k in range(1, n + 1):
        for i in range(L - k + 1):
            g = tuple(words[i : i + k])
            counts[g] = get(g, 0) + 1
    return counts

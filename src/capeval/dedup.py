"""Deduplication of scoring units (shared by the metrics and the scene-graph scorer).

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
    """Distinct candidates, reference tuples and (candidate, refset) units, each numbered in
    order of first appearance. Lookups run at C speed (``map`` over dicts), the unit pairs are
    grouped with numpy."""
    n = len(candidates)
    cand_ix = {c: i for i, c in enumerate(dict.fromkeys(candidates))}
    keys = list(map(tuple, references))
    ref_ix = {r: i for i, r in enumerate(dict.fromkeys(keys))}
    ci = np.fromiter(map(cand_ix.__getitem__, candidates), dtype=np.int64, count=n)
    ri = np.fromiter(map(ref_ix.__getitem__, keys), dtype=np.int64, count=n)
    n_ref = max(len(ref_ix), 1)
    _, first, inv = np.unique(ci * n_ref + ri, return_index=True, return_inverse=True)
    by_first = np.argsort(first)  # unit numbers in order of first appearance
    rank = np.empty(len(first), dtype=np.int64)
    rank[by_first] = np.arange(len(first), dtype=np.int64)
    return Units(
        cands=list(cand_ix),
        refsets=list(ref_ix),
        unit_cand=ci[first[by_first]],
        unit_refset=ri[first[by_first]],
        row_unit=rank[inv.reshape(-1)],
        refset_rows=np.bincount(ri, minlength=len(ref_ix)).astype(np.int64),
    )

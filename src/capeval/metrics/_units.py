"""Deduplication of scoring units.

Judgment tables repeat the same (candidate, reference set) many times: Flickr8k-Expert has
16,992 rows but 5,664 distinct units, and only 1,000 distinct reference sets. Every
per-unit statistic in the coco metrics is a pure function of the unit (plus corpus-level
df for CIDEr), so computing each distinct unit once and broadcasting is exact.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

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


# n-grams are interned to ints once per process: int hashing and numpy arrays of ids are
# what make BLEU and CIDEr fast. The table is bounded; when it fills, it and the sentence
# cache are cleared together (ids are only meaningful while both are alive).
_GRAM_ID: dict[str, int] = {}
_GRAM_STR: list[str] = []
_MAX_GRAMS = 5_000_000


def gram_string(gram_id: int) -> str:
    """The space-joined n-gram of an interned id."""
    return _GRAM_STR[gram_id]


def gram_id(gram: str) -> int | None:
    return _GRAM_ID.get(gram)


def _intern_reset_if_full() -> None:
    if len(_GRAM_STR) > _MAX_GRAMS:
        sentence_entries.cache_clear()
        _GRAM_ID.clear()
        _GRAM_STR.clear()


@lru_cache(maxsize=1 << 18)
def sentence_entries(sentence: str) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """n-grams of orders 1..4 of ``sentence.split()`` as ``(ids, order indices, counts)``, in the
    reference code's insertion order (all unigrams left to right, then bigrams, ...).

    Order matters: CIDEr sums floats in it. Cached across metric families, so BLEU and CIDEr
    in one call count each distinct sentence once.
    """
    words = sentence.split()
    counts: dict[int, int] = {}
    order: dict[int, int] = {}
    ids = _GRAM_ID
    L = len(words)
    for k in range(4):
        for i in range(L - k):
            g = " ".join(words[i : i + k + 1]) if k else words[i]
            j = ids.get(g)
            if j is None:
                j = ids[g] = len(_GRAM_STR)
                _GRAM_STR.append(g)
            if j in counts:
                counts[j] += 1
            else:
                counts[j] = 1
                order[j] = k
    keys = tuple(counts)
    return keys, tuple(order[j] for j in keys), tuple(counts.values())

"""Deduplication of scoring units.

Judgment tables repeat the same (candidate, reference set) many times: Flickr8k-Expert has
16,992 rows but 5,664 distinct units, and only 1,000 distinct reference sets. Every
per-unit statistic in the coco metrics is a pure function of the unit (plus corpus-level
df for CIDEr), so computing each distinct unit once and broadcasting is exact.
"""
from __future__ import annotations

import threading
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


# n-grams are interned to ints: int hashing and numpy arrays of ids are what make BLEU and
# CIDEr fast. Metrics may be called from many threads at once, so the table is built to be
# shared safely (a race here once gave silently wrong BLEU/CIDEr that stayed in the process):
#   * a new id is assigned under a lock, with the string stored before the id is published,
#     so two threads can never give two n-grams one id, and a reader never sees an id without
#     its string. Lookups of known n-grams (the hot path) take no lock;
#   * a full table is never cleared in place: the next call gets a fresh table while calls
#     still holding the old one keep consistent ids until they finish;
#   * the sentence cache belongs to its table, so cached ids always refer to that table.
_MAX_GRAMS = 5_000_000
_MAX_SENTENCES = 1 << 18


class GramTable:
    """n-gram ↔ id table plus a cache of per-sentence n-gram entries. Safe to share between
    threads. A metric call takes one table (:func:`gram_table`) and uses it throughout."""

    __slots__ = ("_ids", "_strs", "_sentences", "_lock")

    def __init__(self) -> None:
        self._ids: dict[str, int] = {}
        self._strs: list[str] = []
        self._sentences: dict[str, tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._strs)

    def gram_string(self, gram_id: int) -> str:
        """The space-joined n-gram of an id from this table."""
        return self._strs[gram_id]

    def gram_id(self, gram: str) -> int | None:
        return self._ids.get(gram)

    def _intern(self, gram: str) -> int:
        with self._lock:
            j = self._ids.get(gram)
            if j is None:
                j = len(self._strs)
                self._strs.append(gram)
                self._ids[gram] = j  # published last: the string is already in place
            return j

    def sentence_entries(self, sentence: str) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """n-grams of orders 1..4 of ``sentence.split()`` as ``(ids, order indices, counts)``, in
        the reference code's insertion order (all unigrams left to right, then bigrams, ...).

        Order matters: CIDEr sums floats in it. Cached, so BLEU and CIDEr (and repeated calls on
        the same references) count each distinct sentence once.
        """
        hit = self._sentences.get(sentence)
        if hit is not None:
            return hit
        words = sentence.split()
        counts: dict[int, int] = {}
        order: dict[int, int] = {}
        ids = self._ids
        intern = self._intern
        L = len(words)
        for k in range(4):
            for i in range(L - k):
                g = " ".join(words[i : i + k + 1]) if k else words[i]
                j = ids.get(g)
                if j is None:
                    j = intern(g)
                if j in counts:
                    counts[j] += 1
                else:
                    counts[j] = 1
                    order[j] = k
        keys = tuple(counts)
        out = keys, tuple(order[j] for j in keys), tuple(counts.values())
        # Another thread may store the same sentence concurrently: ids of a given n-gram never
        # change within a table, so both computed the same value. Dropping the cache keeps ids
        # valid (they live in the table), so it bounds memory without any coordination.
        if len(self._sentences) >= _MAX_SENTENCES:
            self._sentences.clear()
        self._sentences[sentence] = out
        return out


_table = GramTable()
_table_lock = threading.Lock()


def gram_table() -> GramTable:
    """The shared table for one metric call; a fresh one once the current one is full."""
    global _table
    t = _table
    if len(t) > _MAX_GRAMS:
        with _table_lock:
            if len(_table) > _MAX_GRAMS:
                _table = GramTable()
            t = _table
    return t


def reset_gram_table() -> None:
    """Start a fresh shared table (calls in flight keep theirs). Frees memory; used by tests."""
    global _table
    with _table_lock:
        _table = GramTable()

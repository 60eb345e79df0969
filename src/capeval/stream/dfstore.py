"""CIDEr document frequencies over a reference set too large for a dict of n-gram strings.

A 1M-row set with five unique references per row holds some 20M distinct 1-4-grams: as a dict
of strings that is several GB. Here each n-gram is a 128-bit key of its UTF-8 text (``key128``,
defined in ``_speedups.c``: MurmurHash3's mixing, one 64-bit word per lane), kept as two uint64
columns sorted together, with a uint32 count: 20 bytes per n-gram, in arrays that can be saved,
memory-mapped by worker processes and shipped to Ray workers without pickling millions of
objects. The compiled core computes the keys (for the df pass straight from each row's
references, without a Python string per n-gram) and looks them up in the table
(``lookup_keys128``); :func:`_key128_numpy` and :meth:`HashedDocumentFrequency._lookup_keys`'s
numpy path give the same keys and counts without it, and the tests compare the two.

Exactness. Counts are integers summed exactly, in any order. Two distinct n-grams would have to
share all 128 bits to be confused; for a well-mixed 128-bit key that has probability below
10^-20 at 10^9 n-grams (the key is not built to resist inputs crafted to collide). A clash of
the first 64 bits alone is handled (lookups then compare the second column), so only a full
128-bit clash could change a number.

Saved tables are column-major (``df-<digest>-keys.npy`` has shape (2, N)), so a memory-mapped
table's first column is contiguous and a lookup's binary search touches only the pages it
visits. They are written with ordinary writes into space reserved first (``posix_fallocate``),
never through a sparse memory map: a full disk is a named error, not a SIGBUS; and they are
renamed to their content digest, so a file a worker has mapped is never rewritten.
"""
from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Sequence
from itertools import accumulate, chain
from pathlib import Path
from typing import Literal

import numpy as np

from ..metrics.cider import DocumentFrequency
from .folder import write_table

_KEY_DTYPE = np.uint64


_SEED1, _SEED2 = 0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F
_K1, _K2 = 0x87C37B91114253D5, 0x4CF5AD432745937F


def gram_keys(grams: Sequence[str]) -> np.ndarray:
    """``(len(grams), 2)`` uint64 keys: ``key128`` of each n-gram's UTF-8 text."""
    if not len(grams):
        return np.zeros((0, 2), dtype=_KEY_DTYPE)
    from .. import _compiled

    if _compiled.core is not None:
        raw = _compiled.core.keys128(grams)
        return np.frombuffer(raw, dtype="<u8").reshape(-1, 2).astype(_KEY_DTYPE, copy=False)
    # surrogatepass: capeval.score takes a lone surrogate in a caption as a character, so must this
    # (the encoding stays one-to-one: valid UTF-8 never holds an encoded surrogate).
    return _key128_numpy([g.encode("utf-8", "surrogatepass") for g in grams])


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


def _fmix(k: np.ndarray) -> np.ndarray:
    k = k ^ (k >> np.uint64(33))
    k = k * np.uint64(0xFF51AFD7ED558CCD)
    k = k ^ (k >> np.uint64(33))
    k = k * np.uint64(0xC4CEB9FE1A85EC53)
    return k ^ (k >> np.uint64(33))


def _key128_numpy(encoded: Sequence[bytes]) -> np.ndarray:
    """``key128`` (see ``_speedups.c``) of each byte string, vectorised over the strings: word
    j of every string at once, for j up to the longest."""
    n = len(encoded)
    lens = np.fromiter(map(len, encoded), dtype=np.int64, count=n)
    nwords = (lens + 7) // 8
    padded = b"".join(e + b"\0" * (-len(e) % 8) for e in encoded)
    words = np.frombuffer(padded, dtype="<u8").astype(np.uint64)
    starts = np.zeros(n, dtype=np.int64)
    np.cumsum(nwords[:-1], out=starts[1:])
    u = lens.astype(np.uint64)
    h1, h2 = np.uint64(_SEED1) ^ u, np.uint64(_SEED2) ^ u
    k1, k2 = np.uint64(_K1), np.uint64(_K2)
    five = np.uint64(5)
    with np.errstate(over="ignore"):
        for j in range(int(nwords.max(initial=0))):
            act = np.flatnonzero(nwords > j)
            w = words[starts[act] + j]
            a, b = h1[act], h2[act]
            a ^= _rotl(w * k1, 31) * k2
            a = _rotl(a, 27) + b
            a = a * five + np.uint64(0x52DCE729)
            b ^= _rotl(w * k2, 33) * k1
            b = _rotl(b, 31) + a
            b = b * five + np.uint64(0x38495AB5)
            h1[act], h2[act] = a, b
        h1 = h1 + h2
        h2 = h2 + h1
        h1, h2 = _fmix(h1), _fmix(h2)
        h1 = h1 + h2
        h2 = h2 + h1
    return np.stack([h1, h2], axis=1).astype(_KEY_DTYPE, copy=False)


def _reduce(keys: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows sorted by (first, second) column with equal keys merged, counts summed."""
    if len(keys) == 0:
        return keys.reshape(0, 2), counts.astype(np.uint32)
    # The input is a few sorted runs (the table and chunk results): a stable sort on the first
    # column (timsort, which merges runs) orders it unless two distinct keys share their first
    # 64 bits; only then is the second column needed (lexsort, some 15x slower on runs).
    order = np.argsort(keys[:, 0], kind="stable")
    first, second = keys[:, 0][order], keys[:, 1][order]
    same = first[1:] == first[:-1]
    if np.any(same & (second[1:] != second[:-1])):
        again = np.lexsort((second, first))
        first, second, order = first[again], second[again], order[again]
        same = (first[1:] == first[:-1]) & (second[1:] == second[:-1])
    # here equal first halves are equal keys
    starts = np.flatnonzero(np.concatenate(([True], ~same)))
    summed = np.add.reduceat(counts[order].astype(np.uint64), starts)
    return np.stack([first[starts], second[starts]], axis=1), summed.astype(np.uint32)


def chunk_df(token_refsets: Iterable[Sequence[str]]) -> tuple[np.ndarray, np.ndarray]:
    """Keys and counts of one chunk: each row adds 1 to every distinct n-gram (orders 1-4) of
    the union of its tokenized references, as CIDEr's df counts scoring units."""
    from .. import _compiled

    if _compiled.core is not None:
        # The core joins each reference's words (str.split) by single spaces, so that an
        # n-gram is a run of bytes: the same bytes as " ".join of its words below.
        refsets = token_refsets if isinstance(token_refsets, list) else list(token_refsets)
        sents = list(chain.from_iterable(refsets))
        bounds = list(accumulate(map(len, refsets), initial=0))
        raw_keys, raw_counts = _compiled.core.refset_keys128(sents, bounds, 4)
        keys = np.frombuffer(raw_keys, dtype="<u8").reshape(-1, 2).astype(_KEY_DTYPE, copy=False)
        return keys, np.frombuffer(raw_counts, dtype="<u4").astype(np.uint32, copy=False)
    counts: dict[str, int] = {}
    get = counts.get
    for refs in token_refsets:
        grams: set[str] = set()
        add = grams.add
        for ref in refs:
            words = ref.split()
            L = len(words)
            for w in words:
                add(w)
            for k in range(2, 5):
                for i in range(L - k + 1):
                    add(" ".join(words[i:i + k]))
        for g in grams:
            counts[g] = get(g, 0) + 1
    grams_list = list(counts)
    keys = gram_keys(grams_list)
    vals = np.fromiter(counts.values(), dtype=np.uint32, count=len(grams_list))
    return _reduce(keys, vals)


class DfAccumulator:
    """Sums chunk results into one sorted table.

    The table is kept in 16 buckets by the top 4 bits of the first key column, so merging new
    counts into it sorts one bucket at a time (temporaries ~1/16 of the table), and the buckets
    concatenated in order are the sorted table. :meth:`result` writes them straight into
    ``.npy`` files when given a folder, freeing each bucket as it goes, so the peak stays near
    one copy of the table.
    """

    BITS = 4

    def __init__(self) -> None:
        n = 1 << self.BITS
        self._keys = [np.zeros((0, 2), dtype=_KEY_DTYPE) for _ in range(n)]
        self._counts = [np.zeros(0, dtype=np.uint32) for _ in range(n)]
        self._pending: list[list[tuple[np.ndarray, np.ndarray]]] = [[] for _ in range(n)]
        self._pending_rows = [0] * n
        # Bucket b holds first-column values in [bounds[b], bounds[b + 1]).
        self._bounds = np.array([b << (64 - self.BITS) for b in range(1, n)], dtype=_KEY_DTYPE)
        self.n_units = 0

    def add(self, keys: np.ndarray, counts: np.ndarray, n_rows: int) -> None:
        """Add a chunk's (sorted) keys and counts."""
        self.n_units += n_rows
        cuts = np.searchsorted(keys[:, 0], self._bounds, side="left").tolist()
        for b, (lo, hi) in enumerate(zip([0, *cuts], [*cuts, len(keys)])):
            if hi > lo:
                self._pending[b].append((keys[lo:hi].copy(), counts[lo:hi].copy()))
                self._pending_rows[b] += hi - lo
                if self._pending_rows[b] > max(250_000, len(self._keys[b]) // 2):
                    self._merge(b)

    def _merge(self, b: int) -> None:
        if not self._pending[b]:
            return
        keys = np.concatenate([self._keys[b]] + [k for k, _ in self._pending[b]])
        counts = np.concatenate([self._counts[b]] + [c for _, c in self._pending[b]])
        self._pending[b], self._pending_rows[b] = [], 0
        self._keys[b], self._counts[b] = _reduce(keys, counts)

    def __len__(self) -> int:
        return sum(len(k) for k in self._keys) + sum(self._pending_rows)

    # -- checkpoints: a killed df pass resumes from the last one ---------------------------
    def save_checkpoint(self, folder: Path, write) -> None:
        """Merge and write every bucket as ``dfck-NN-keys.npy`` / ``dfck-NN-counts.npy`` through
        ``write(path, bytes)`` (the caller's atomic writer); one bucket at a time, no full copy."""
        import io

        for b in range(len(self._keys)):
            self._merge(b)
            for name, arr in (("keys", self._keys[b]), ("counts", self._counts[b])):
                buf = io.BytesIO()
                np.save(buf, arr)
                write(folder / f"dfck-{b:02d}-{name}.npy", buf.getvalue())

    @classmethod
    def from_checkpoint(cls, folder: Path, n_units: int) -> "DfAccumulator":
        acc = cls()
        for b in range(len(acc._keys)):
            acc._keys[b] = np.load(folder / f"dfck-{b:02d}-keys.npy", allow_pickle=False)
            acc._counts[b] = np.load(folder / f"dfck-{b:02d}-counts.npy", allow_pickle=False)
        acc.n_units = n_units
        return acc

    def checkpoint_digest(self) -> str:
        h = hashlib.sha256(str(self.n_units).encode())
        for k, c in zip(self._keys, self._counts):
            h.update(np.ascontiguousarray(k).tobytes())
            h.update(np.ascontiguousarray(c).tobytes())
        return h.hexdigest()

    def result(self, folder: Path | None = None) -> "HashedDocumentFrequency":
        """The summed table; written to ``folder`` (df_keys.npy, shape (2, N), and df_counts.npy)
        and memory-mapped when a folder is given, else kept in memory."""
        for b in range(len(self._keys)):
            self._merge(b)
        total = sum(len(k) for k in self._keys)
        if folder is None:
            keys = np.concatenate(self._keys) if total else np.zeros((0, 2), dtype=_KEY_DTYPE)
            counts = np.concatenate(self._counts) if total else np.zeros(0, dtype=np.uint32)
            self._keys = self._counts = []
            return HashedDocumentFrequency(keys, counts, self.n_units)
        keys_tmp, counts_tmp = write_table(folder, self._keys, self._counts, total)
        try:
            digest = HashedDocumentFrequency.load_arrays(keys_tmp, counts_tmp, self.n_units).digest()
            final = folder / f"df-{digest}-keys.npy", folder / f"df-{digest}-counts.npy"
            os.replace(keys_tmp, final[0])
            os.replace(counts_tmp, final[1])
        finally:
            keys_tmp.unlink(missing_ok=True)
            counts_tmp.unlink(missing_ok=True)
        return HashedDocumentFrequency.load_arrays(*final, self.n_units)


class HashedDocumentFrequency(DocumentFrequency):
    """A :class:`DocumentFrequency` whose n-grams are 128-bit keys (see the module docstring).
    ``source`` is ``corpus:N`` like the in-memory df of the same set, so signatures agree.
    ``keys`` are (N, 2) rows sorted by (first, second); :meth:`from_columns` takes the two
    columns as they are saved."""

    #: The (keys, counts) files of a table loaded from a run folder (workers map them by name).
    files: tuple[str, str] | None = None

    def __init__(self, keys: np.ndarray, counts: np.ndarray, n_units: int, source: str | None = None):
        keys = np.asarray(keys).reshape(-1, 2)
        self._init(np.ascontiguousarray(keys[:, 0]), np.ascontiguousarray(keys[:, 1]), counts, n_units, source)

    @classmethod
    def from_columns(cls, first: np.ndarray, second: np.ndarray, counts: np.ndarray, n_units: int,
                     source: str | None = None) -> "HashedDocumentFrequency":
        obj = cls.__new__(cls)
        obj._init(first, second, counts, n_units, source)
        return obj

    def _init(self, first, second, counts, n_units, source) -> None:
        super().__init__({}, n_units, source or f"corpus:{n_units}")
        if not (len(first) == len(second) == len(counts)):
            raise ValueError("df table: key columns and counts differ in length")
        self.first, self.second, self.counts = first, second, counts
        # Positions whose first 64 bits repeat: lookups there compare the second column too.
        self._clash = bool(len(first) > 1 and np.any(first[1:] == first[:-1]))

    @property
    def keys(self) -> np.ndarray:
        """(N, 2) rows (a copy)."""
        return np.stack([np.asarray(self.first), np.asarray(self.second)], axis=1)

    def __len__(self) -> int:
        return len(self.first)

    def lookup(self, grams: Sequence[str]) -> np.ndarray:
        return self._lookup_keys(gram_keys(grams))

    def lookup_ids(self, index) -> np.ndarray:
        """df of every n-gram id of ``index``; with the compiled core, keyed from the index's
        word ids without building the n-gram strings (the same keys: tested)."""
        from .. import _compiled
        from ..metrics._ngrams import MAX_ORDER

        core = _compiled.core
        if core is None:
            return self.lookup(index.gram_strings(np.arange(index.n_grams)))
        vocab = [w.encode("utf-8", "surrogatepass") for w in index.vocab]
        q = np.empty((index.n_grams, 2), dtype=_KEY_DTYPE)
        for k in range(MAX_ORDER):
            lo, hi = int(index.g_off[k]), int(index.g_off[k + 1])
            if hi > lo:
                words = np.ascontiguousarray(index.gram_words(np.arange(lo, hi), k), dtype=np.int64)
                q[lo:hi] = np.frombuffer(core.joined_keys128(vocab, words, k + 1), dtype="<u8").reshape(-1, 2)
        return self._lookup_keys(q)

    def _lookup_keys(self, q: np.ndarray) -> np.ndarray:
        from .. import _compiled

        if _compiled.core is not None:
            q = np.ascontiguousarray(q, dtype=_KEY_DTYPE)
            raw = _compiled.core.lookup_keys128(np.ascontiguousarray(self.first), np.ascontiguousarray(self.second),
                                                np.ascontiguousarray(self.counts, dtype=np.uint32), q)
            return np.frombuffer(raw, dtype=np.float64)
        out = np.zeros(len(q), dtype=np.float64)
        if len(self.first) == 0 or len(q) == 0:
            return out
        first, second = self.first, self.second
        q0 = np.ascontiguousarray(q[:, 0])
        # Sorted queries visit the (memory-mapped) table in order.
        order = np.argsort(q0, kind="stable")
        pos = np.empty(len(q0), dtype=np.int64)
        pos[order] = np.searchsorted(first, q0[order], side="left")
        inside = pos < len(first)
        p = np.where(inside, pos, 0)
        hit = inside & (first[p] == q0) & (second[p] == q[:, 1])
        out[hit] = self.counts[p[hit]]
        if self._clash:  # rare: scan the run of equal first halves for the second
            for i in np.flatnonzero(inside & ~hit & (first[p] == q0)).tolist():
                j = int(pos[i])
                while j < len(first) and first[j] == q0[i]:
                    if second[j] == q[i, 1]:
                        out[i] = self.counts[j]
                        break
                    j += 1
        return out

    def digest(self) -> str:
        h = hashlib.sha256()
        h.update(str(self.n_units).encode())
        step = 1 << 20  # in slices: the arrays may be memory-mapped and large
        for arr in (self.first, self.second, self.counts):
            for s in range(0, len(arr), step):
                h.update(np.ascontiguousarray(arr[s:s + step]).tobytes())
        return h.hexdigest()

    @classmethod
    def load_arrays(cls, keys_path: Path | str, counts_path: Path | str, n_units: int,
                    mmap: bool = True) -> "HashedDocumentFrequency":
        """The saved table (:meth:`DfAccumulator.result`), memory-mapped; a file that is not a
        (2, N) uint64 key table with N uint32 counts is a ValueError."""
        mode: Literal["r"] | None = "r" if mmap else None
        cols = np.load(keys_path, mmap_mode=mode, allow_pickle=False)
        if cols.ndim != 2 or cols.shape[0] != 2 or cols.dtype != _KEY_DTYPE:
            raise ValueError(f"{keys_path}: not a (2, N) uint64 key table")
        counts = np.load(counts_path, mmap_mode=mode, allow_pickle=False)
        if counts.ndim != 1 or counts.dtype != np.uint32:
            raise ValueError(f"{counts_path}: not a uint32 count column")
        dfo = cls.from_columns(cols[0], cols[1], counts, n_units)
        dfo.files = (str(keys_path), str(counts_path))
        return dfo


"""CIDEr document frequencies over a reference set too large for a dict of n-gram strings.

A 1M-row set with five unique references per row holds some 20M distinct 1-4-grams: as a dict
of strings that is several GB. Here each n-gram is a 128-bit BLAKE2b digest kept as two uint64
columns sorted together, with a uint32 count: 20 bytes per n-gram, in arrays that can be saved,
memory-mapped by worker processes and shipped to Ray workers without pickling millions of
objects.

Exactness. Counts are integers summed exactly, in any order. Two distinct n-grams would have to
share all 128 bits to be confused: at 10^9 n-grams that has probability below 10^-20. A clash of
the first 64 bits alone is handled (lookups then compare the second column), so only a full
128-bit clash could change a number.
"""
from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from ..metrics.cider import DocumentFrequency

_KEY_DTYPE = np.uint64


def gram_keys(grams: Sequence[str]) -> np.ndarray:
    """``(len(grams), 2)`` uint64 keys: the 16-byte BLAKE2b digest of each UTF-8 n-gram."""
    if not grams:
        return np.zeros((0, 2), dtype=_KEY_DTYPE)
    blake = hashlib.blake2b
    # surrogatepass: capeval.score takes a lone surrogate in a caption as a character, so must this
    # (the encoding stays one-to-one: valid UTF-8 never holds an encoded surrogate).
    raw = b"".join(blake(g.encode("utf-8", "surrogatepass"), digest_size=16).digest() for g in grams)
    return np.frombuffer(raw, dtype="<u8").reshape(-1, 2).astype(_KEY_DTYPE, copy=False)


def _reduce(keys: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows sorted by (first, second) column with equal keys merged, counts summed."""
    if len(keys) == 0:
        return keys.reshape(0, 2), counts.astype(np.uint32)
    order = np.lexsort((keys[:, 1], keys[:, 0]))
    keys = keys[order]
    counts = counts[order]
    new = np.ones(len(keys), dtype=bool)
    new[1:] = (keys[1:, 0] != keys[:-1, 0]) | (keys[1:, 1] != keys[:-1, 1])
    starts = np.flatnonzero(new)
    summed = np.add.reduceat(counts.astype(np.uint64), starts)
    return np.ascontiguousarray(keys[starts]), summed.astype(np.uint32)


def chunk_df(token_refsets: Iterable[Sequence[str]]) -> tuple[np.ndarray, np.ndarray]:
    """Keys and counts of one chunk: each row adds 1 to every distinct n-gram (orders 1-4) of
    the union of its tokenized references, as CIDEr's df counts scoring units."""
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
            acc._keys[b] = np.load(folder / f"dfck-{b:02d}-keys.npy")
            acc._counts[b] = np.load(folder / f"dfck-{b:02d}-counts.npy")
        acc.n_units = n_units
        return acc

    def checkpoint_digest(self) -> str:
        h = hashlib.sha256(str(self.n_units).encode())
        for k, c in zip(self._keys, self._counts):
            h.update(np.ascontiguousarray(k).tobytes())
            h.update(np.ascontiguousarray(c).tobytes())
        return h.hexdigest()

    def result(self, folder: Path | None = None) -> "HashedDocumentFrequency":
        """The summed table; written to ``folder`` (df_keys.npy, df_counts.npy) and memory-mapped
        when a folder is given, else kept in memory."""
        for b in range(len(self._keys)):
            self._merge(b)
        total = sum(len(k) for k in self._keys)
        if folder is None:
            keys = np.concatenate(self._keys) if total else np.zeros((0, 2), dtype=_KEY_DTYPE)
            counts = np.concatenate(self._counts) if total else np.zeros(0, dtype=np.uint32)
        else:
            from numpy.lib.format import open_memmap

            keys = open_memmap(folder / "df_keys.npy", mode="w+", dtype=_KEY_DTYPE, shape=(total, 2))
            counts = open_memmap(folder / "df_counts.npy", mode="w+", dtype=np.uint32, shape=(total,))
            pos = 0
            for b in range(len(self._keys)):
                n = len(self._keys[b])
                keys[pos:pos + n] = self._keys[b]
                counts[pos:pos + n] = self._counts[b]
                self._keys[b] = self._counts[b] = None  # free as we go
                pos += n
            keys.flush()
            counts.flush()
            del keys, counts
            return HashedDocumentFrequency.load_arrays(folder, self.n_units)
        self._keys = self._counts = []
        return HashedDocumentFrequency(keys, counts, self.n_units)


class HashedDocumentFrequency(DocumentFrequency):
    """A :class:`DocumentFrequency` whose n-grams are 128-bit keys (see the module docstring).
    ``source`` is ``corpus:N`` like the in-memory df of the same set, so signatures agree."""

    def __init__(self, keys: np.ndarray, counts: np.ndarray, n_units: int, source: str | None = None):
        super().__init__({}, n_units, source or f"corpus:{n_units}")
        self.keys = keys
        self.counts = counts
        first = keys[:, 0]
        # Positions whose first 64 bits repeat: lookups there compare the second column too.
        self._clash = bool(len(first) > 1 and np.any(first[1:] == first[:-1]))

    def __len__(self) -> int:
        return len(self.keys)

    def lookup(self, grams: Sequence[str]) -> np.ndarray:
        q = gram_keys(grams)
        out = np.zeros(len(q), dtype=np.float64)
        if len(self.keys) == 0 or len(q) == 0:
            return out
        first = self.keys[:, 0]
        pos = np.searchsorted(first, q[:, 0], side="left")
        inside = pos < len(first)
        p = np.where(inside, pos, 0)
        hit = inside & (first[p] == q[:, 0]) & (self.keys[p, 1] == q[:, 1])
        out[hit] = self.counts[p[hit]]
        if self._clash:  # rare: scan the run of equal first halves for the second
            for i in np.flatnonzero(inside & ~hit & (first[p] == q[:, 0])).tolist():
                j = int(pos[i])
                while j < len(first) and first[j] == q[i, 0]:
                    if self.keys[j, 1] == q[i, 1]:
                        out[i] = self.counts[j]
                        break
                    j += 1
        return out

    def digest(self) -> str:
        h = hashlib.sha256()
        h.update(str(self.n_units).encode())
        step = 1 << 20  # in slices: the arrays may be memory-mapped and large
        for arr in (self.keys, self.counts):
            for s in range(0, len(arr), step):
                h.update(np.ascontiguousarray(arr[s:s + step]).tobytes())
        return h.hexdigest()

    @classmethod
    def load_arrays(cls, folder: Path, n_units: int, mmap: bool = True) -> "HashedDocumentFrequency":
        mode = "r" if mmap else None
        return cls(np.load(folder / "df_keys.npy", mmap_mode=mode),
                   np.load(folder / "df_counts.npy", mmap_mode=mode), n_units)

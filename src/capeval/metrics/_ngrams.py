"""Per-call n-gram index of distinct tokenized sentences, in numpy arrays.

BLEU, CIDEr(-D) and ROUGE-L read their per-sentence statistics from one :class:`NgramIndex`:
words and n-grams of orders 1-4 become dense integer ids, and every per-sentence table is a
slice of a flat array. Nothing is a Python object per n-gram, nothing is global and growing:
an index belongs to the call that built it (a small cache lets the metric families of one
``capeval.score`` call share it), so threads never share mutable state.

Exactness. Ids are exact (no hashing): the id of an order-k n-gram is the rank of the pair
(id of its first k-1 words, id of its last word) among the pairs present, so two n-grams share
an id only if they are equal. Per sentence, the distinct n-grams are listed in the reference
code's insertion order (all unigrams left to right, then bigrams, ...; a repeated n-gram at its
first position) because CIDEr sums floats in that order.
"""
from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from itertools import chain, repeat

import numpy as np

from .. import _compiled

MAX_ORDER = 4


def bit_length(n: int) -> int:
    """Bits to hold the values 0..n-1 (at least 1)."""
    return max(int(n - 1).bit_length(), 1)


def sorted_unique(x: np.ndarray) -> np.ndarray:
    """``np.unique(x)`` by sorting. numpy >= 2.3 answers ``np.unique`` without index outputs
    from a hash table, which measured 10-50x slower than a sort on 10^5-10^6 int64 keys here."""
    if len(x) == 0:
        return x.copy()
    s = np.sort(x)
    keep = np.empty(len(s), dtype=bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


def unique_inverse(keys: np.ndarray, key_bound: int) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct ``keys`` (non-negative, < ``key_bound``) and each key's rank among them.

    Packs (key, position) into one int64 and sorts values (SIMD sort) instead of argsorting,
    when the bits allow; otherwise ``np.unique``."""
    n = len(keys)
    if n == 0:
        return keys.copy(), np.zeros(0, dtype=np.int64)
    pb = bit_length(n)
    if bit_length(key_bound) + pb > 63:
        uniq, inv = np.unique(keys, return_inverse=True)
        return uniq, inv.reshape(-1).astype(np.int64, copy=False)
    packed = np.sort((keys << pb) | np.arange(n, dtype=np.int64))
    skeys = packed >> pb
    new = np.empty(n, dtype=bool)
    new[0] = True
    np.not_equal(skeys[1:], skeys[:-1], out=new[1:])
    rank = np.cumsum(new) - 1
    inv = np.empty(n, dtype=np.int64)
    inv[packed & ((1 << pb) - 1)] = rank
    return skeys[new], inv


def argsort_bounded(keys: np.ndarray, key_bound: int) -> np.ndarray:
    """A permutation sorting ``keys`` (non-negative, < ``key_bound``), stable: a value sort of
    packed (key, position) when it fits in 63 bits, else a stable argsort."""
    n = len(keys)
    pb = bit_length(max(n, 1))
    if bit_length(max(key_bound, 1)) + pb > 63:
        return np.argsort(keys, kind="stable")
    return np.sort((keys << pb) | np.arange(n, dtype=np.int64)) & ((1 << pb) - 1)


def searchsorted_many(a: np.ndarray, v: np.ndarray, side: str = "left") -> np.ndarray:
    """``np.searchsorted(a, v, side)`` for many unsorted ``v``: the queries are sorted first,
    so the binary searches walk ``a`` in order instead of missing the cache at random (3x faster
    for 3*10^4 queries into 3*10^5 keys here). Same positions (exact integers)."""
    v = np.asarray(v)
    if len(v) < 4096 or len(a) < 4096:
        return np.searchsorted(a, v, side=side)
    o = np.argsort(v, kind="stable")
    out = np.empty(len(v), dtype=np.intp)
    out[o] = np.searchsorted(a, v[o], side=side)
    return out


def ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(s, s + l)`` for each pair, without a Python loop."""
    lengths = np.asarray(lengths, dtype=np.int64)
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    before = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    return np.repeat(np.asarray(starts, dtype=np.int64) - before, lengths) + np.arange(total, dtype=np.int64)


# Whitespace that str.split() splits on besides " " and the "\n" joining sentences below.
_OTHER_WHITESPACE = re.compile(r"[^\S \n]")
_ASCII_OTHER_WHITESPACE = "\t\x0b\x0c\r\x1c\x1d\x1e\x1f"  # the same, in ASCII text (substring scans are faster)


def _all_space_clean(sentences: Sequence[str]) -> bool:
    """Whether every sentence is non-empty words joined by single spaces, i.e.
    ``s.split(" ") == s.split()`` and ``s != ""``; decided on the joined text."""
    if not sentences:
        return True
    j = "\n".join(sentences)
    return j.count("\n") == len(sentences) - 1 and not (
        "  " in j or " \n" in j or "\n " in j or "\n\n" in j or j[:1] in ("", " ", "\n") or j[-1:] in (" ", "\n")
        or (any(c in j for c in _ASCII_OTHER_WHITESPACE) if j.isascii() else _OTHER_WHITESPACE.search(j))
    )


class NgramIndex:
    """Words and n-grams (orders 1-4) of distinct sentences, split on whitespace (``split()``).

    Attributes (all read-only after construction)
    ----------
    sentences : list[str]; sid : dict[str, int]
        The distinct sentences and their positions.
    n_words : (n,) int64
        ``len(sentence.split())``.
    w_start, words : word ids of sentence ``s`` are ``words[w_start[s]:w_start[s + 1]]``.
    vocab : list[str]
        Word of each word id.
    e_start, e_gram, e_order, e_count :
        Distinct n-grams of sentence ``s`` are entries ``e_start[s]:e_start[s + 1]``, in
        insertion order, with their id (0..n_grams-1), order (0 = unigram) and count.
    n_grams : int
        Number of distinct n-grams (ids are dense).

    Built by the compiled core when it is present (``words``, ``e_gram`` and the n-gram tables
    are then int32, and n-gram ids are numbered by first appearance), else by numpy below; the
    tests compare the two builds.
    """

    def __init__(self, sentences: Sequence[str]):
        self.sentences = list(sentences)
        self.sid = dict(zip(self.sentences, range(len(self.sentences))))
        if len(self.sid) != len(self.sentences):
            raise ValueError("NgramIndex needs distinct sentences")
        n = len(self.sentences)
        core = _compiled.core
        if core is not None and self._build_compiled(core):
            return
        lens, w_start, words, V = self._index_words(n)
        w_sent, w_pos, starts, local, offsets = self._index_ngrams(n, lens, w_start, words, V)
        self._index_entries(n, lens, words, V, w_sent, w_pos, starts, local, offsets)

    def _index_words(self, n: int):
        """Word ids of every sentence, laid end to end, with each sentence's length and start."""
        self.space_clean = _all_space_clean(self.sentences)
        # Words of all sentences in one split of the joined text (whitespace never joins two
        # sentences' words); per-sentence counts from counting spaces when every sentence is
        # space-clean. This makes one list, not one per sentence: 10^5 live lists made
        # Python's cyclic GC rescan the heap again and again (the split took 1.5 us/sentence).
        joined = " ".join(self.sentences)
        flat = joined.split()
        if self.space_clean:
            lens = np.fromiter(map(str.count, self.sentences, repeat(" ")), dtype=np.int64, count=n) + 1
        else:
            lens = np.fromiter(map(len, map(str.split, self.sentences)), dtype=np.int64, count=n)
        self.vocab = list(dict.fromkeys(flat))
        vocab = dict(zip(self.vocab, range(len(self.vocab))))
        V = max(len(vocab), 1)
        W = len(flat)
        words = np.fromiter(map(vocab.__getitem__, flat), dtype=np.int64, count=W)
        w_start = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lens, out=w_start[1:])
        self.n_words, self.w_start, self.words = lens, w_start, words
        return lens, w_start, words, V

    def _index_ngrams(self, n: int, lens, w_start, words, V: int):
        """Ids of the n-grams of every order (each an order-(k-1) id extended by a word)."""
        W = len(words)
        # n-gram ids per order, over start positions. remaining[i] = words from i to the end of
        # its sentence, so an order-k n-gram starts at i iff remaining[i] >= k.
        w_sent = np.repeat(np.arange(n, dtype=np.int64), lens)
        w_pos = np.arange(W, dtype=np.int64) - w_start[w_sent]
        remaining = lens[w_sent] - w_pos
        starts = [np.arange(W, dtype=np.int64)]
        local = [words]
        self._parent: list[np.ndarray] = [np.zeros(0, dtype=np.int64)]
        self._last: list[np.ndarray] = [np.arange(V, dtype=np.int64)]
        sizes = [len(self.vocab)]
        prev = words
        for k in range(2, MAX_ORDER + 1):
            idx = np.flatnonzero(remaining >= k)
            key = prev[idx] * V + words[idx + k - 1]
            uniq, inv = unique_inverse(key, max(sizes[-1], 1) * V)
            self._parent.append(uniq // V)
            self._last.append(uniq % V)
            sizes.append(len(uniq))
            nxt = np.zeros(W, dtype=np.int64)
            nxt[idx] = inv
            prev = nxt
            starts.append(idx)
            local.append(inv)
        offsets = np.zeros(MAX_ORDER + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        self.g_off = offsets
        self.n_grams = int(offsets[-1])
        return w_sent, w_pos, starts, local, offsets

    def _index_entries(self, n: int, lens, words, V: int, w_sent, w_pos, starts, local, offsets) -> None:
        """Each sentence's distinct n-grams with their counts, in the reference's insertion order."""
        W = len(words)
        # Occurrences laid out sentence-major, then by order, then by position: the reference's
        # insertion order. Position of (s, k, i) = occ_start[s] + sum_{j<k} max(L_s - j, 0) + i.
        per_order = np.maximum(lens[:, None] - np.arange(MAX_ORDER)[None, :], 0)  # (n, 4)
        occ_n = per_order.sum(axis=1)
        occ_start = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(occ_n, out=occ_start[1:])
        block = occ_start[:-1, None] + np.concatenate(
            (np.zeros((n, 1), dtype=np.int64), np.cumsum(per_order, axis=1)[:, :-1]), axis=1)
        n_occ = int(occ_start[-1])
        # An n-gram can occur twice in a sentence only if its first word does: only occurrences
        # starting at a repeated word need grouping; every other one is its own entry, count 1.
        wkey = w_sent * V + words
        repeated = np.zeros(W, dtype=bool)
        if W:
            srt = argsort_bounded(wkey, max(n, 1) * V)
            ks = wkey[srt]
            same = ks[1:] == ks[:-1]
            repeated[srt[1:][same]] = True
            repeated[srt[:-1][same]] = True
        occ_gram = np.empty(n_occ, dtype=np.int64)
        occ_order = np.empty(n_occ, dtype=np.int8)
        occ_rep = np.empty(n_occ, dtype=bool)
        for k in range(MAX_ORDER):
            st = starts[k]
            dest = block[w_sent[st], k] + w_pos[st]
            occ_gram[dest] = local[k] + offsets[k]
            occ_order[dest] = k
            occ_rep[dest] = repeated[st]

        # Among those, equal (sentence, n-gram) occurrences are grouped by sorting packed
        # (sentence, n-gram, layout position); the first of a group is the entry, with the
        # group's size as count. Entries then stay in layout order, which is insertion order.
        keep = ~occ_rep
        count = np.ones(n_occ, dtype=np.int32)  # n-gram counts in one sentence are small
        cand = np.flatnonzero(occ_rep)
        if len(cand):
            c_sent = np.repeat(np.arange(n, dtype=np.int64), np.diff(np.searchsorted(cand, occ_start)))
            c_gram = occ_gram[cand]
            gb, pb = bit_length(self.n_grams), bit_length(n_occ)
            if bit_length(n) + gb + pb <= 63:
                packed = np.sort((c_sent << (gb + pb)) | (c_gram << pb) | cand)
                pos_s = packed & ((1 << pb) - 1)
                grp = packed >> pb
            else:  # too many bits to pack: a (slower) lexicographic argsort
                o = np.lexsort((cand, c_gram, c_sent))
                pos_s = cand[o]
                grp = np.stack((c_sent[o], c_gram[o]), axis=1)
            new = np.ones(len(cand), dtype=bool)
            if grp.ndim == 1:
                new[1:] = grp[1:] != grp[:-1]
            else:
                new[1:] = np.any(grp[1:] != grp[:-1], axis=1)
            first = np.flatnonzero(new)
            keep[pos_s[first]] = True
            count[pos_s[first]] = np.diff(np.append(first, len(cand)))
        kept = np.flatnonzero(keep)
        self.e_gram = occ_gram[kept]
        self.e_count = count[kept]
        self.e_order = occ_order[kept]  # int8: arithmetic with int64 arrays upcasts
        # Entries before sentence s = occurrences before it minus the (few) dropped repeats.
        dropped = np.flatnonzero(~keep)
        self.e_start = occ_start - np.searchsorted(dropped, occ_start)

    def _build_compiled(self, core) -> bool:
        """The same tables from the compiled core (capeval._speedups.build_index), in one pass
        with hash tables instead of sorts. n-gram ids are dense and exact as above but numbered
        in order of first appearance instead of by rank; nothing depends on that numbering
        (sums follow the entries' insertion order, which is the same). False when the corpus is
        too large for its 32-bit counters (the numpy build then runs)."""
        try:
            (vocab, words, lens, sizes, parents, lasts, e_start, e_gram, e_order, e_count, self.space_clean,
             w_start) = core.build_index(self.sentences)
        except OverflowError:
            return False
        i64, i32 = np.int64, np.int32
        self.vocab = vocab
        self.words = np.frombuffer(words, dtype=i32)  # int32: less memory; arithmetic upcasts
        self.n_words = np.frombuffer(lens, dtype=i64)
        self.w_start = np.frombuffer(w_start, dtype=i64)
        self._parent = [np.frombuffer(b, dtype=i32) for b in parents]
        self._last = [np.arange(max(sizes[0], 1), dtype=i64)] + [np.frombuffer(b, dtype=i32) for b in lasts[1:]]
        offsets = np.zeros(MAX_ORDER + 1, dtype=i64)
        np.cumsum(sizes, out=offsets[1:])
        self.g_off = offsets
        self.n_grams = int(offsets[-1])
        self.e_start = np.frombuffer(e_start, dtype=i64)
        self.e_gram = np.frombuffer(e_gram, dtype=i32)
        self.e_order = np.frombuffer(e_order, dtype=np.int8)
        self.e_count = np.frombuffer(e_count, dtype=np.int32)
        return True

    def __len__(self) -> int:
        return len(self.sentences)

    def sids(self, sentences) -> np.ndarray:
        get = self.sid.__getitem__
        return np.fromiter(map(get, sentences), dtype=np.int64, count=len(sentences))

    def memo(self, kind: str, key: tuple, make):
        """``make()``, remembered for this index under (kind, key): the metric families of one
        call ask for the same reference-set matrix and candidate ids. Results are made read-only;
        a few entries at most (threads may both compute one: same content, either wins)."""
        memo = self.__dict__.setdefault("_memo", {})
        hit = memo.get((kind, key))
        if hit is None:
            hit = make()
            for a in hit if isinstance(hit, tuple) else (hit,):
                a.flags.writeable = False
            if len(memo) >= 8:
                memo.clear()
            memo[kind, key] = hit
        return hit

    def gram_words(self, gram_ids: np.ndarray, order: int) -> np.ndarray:
        """Word ids ``(len(gram_ids), order + 1)`` of n-grams that all have ``order``."""
        local = np.asarray(gram_ids, dtype=np.int64) - self.g_off[order]
        out = np.empty((len(local), order + 1), dtype=np.int64)
        for k in range(order, 0, -1):
            out[:, k] = self._last[k][local]
            local = self._parent[k][local]
        out[:, 0] = local
        return out

    def gram_strings(self, gram_ids) -> list[str]:
        """The space-joined n-gram of each id."""
        gram_ids = np.asarray(gram_ids, dtype=np.int64)
        out = np.empty(len(gram_ids), dtype=object)
        orders = np.searchsorted(self.g_off, gram_ids, side="right") - 1
        vocab = np.array(self.vocab + [""], dtype=object)
        for k in range(MAX_ORDER):
            sel = np.flatnonzero(orders == k)
            if len(sel) == 0:
                continue
            w = self.gram_words(gram_ids[sel], k)
            s = vocab[w[:, 0]]
            for j in range(1, k + 1):
                s = s + " " + vocab[w[:, j]]
            out[sel] = s
        return out.tolist()


def core_for(index: NgramIndex):
    """The compiled core if it is loaded and ``index`` fits its 32-bit ids (the index itself
    may come from the numpy build, which has no such limit), else None: then the numpy path
    runs."""
    core = _compiled.core
    if core is None or index.n_grams >= 2**31 - 1 or len(index.words) >= 2**31 - 1 or len(index.vocab) >= 2**31 - 1:
        return None
    return core


def index_arrays(index: NgramIndex) -> tuple:
    """The entry tables the compiled core reads (``e_start, e_gram, e_order, e_count, n_words,
    n_grams``), C-contiguous in the dtypes it expects (no copy when they already are)."""
    c = np.ascontiguousarray
    return (c(index.e_start, dtype=np.int64), c(index.e_gram, dtype=np.int32), c(index.e_order, dtype=np.int8),
            c(index.e_count, dtype=np.int32), c(index.n_words, dtype=np.int64), index.n_grams)


def compiled_inputs(index: NgramIndex, refsets: Sequence[Sequence[str]]):
    """What the compiled core reads of ``index`` and these reference sets: ``(core, the index's
    arrays (:func:`index_arrays`), the sets' sentence-id matrix (``refset_matrix(...)[0]``))``;
    None when the numpy path runs (:func:`core_for`)."""
    core = core_for(index)
    if core is None:
        return None
    return core, index_arrays(index), refset_matrix(index, refsets)[0]


def refset_matrix(index: NgramIndex, refsets: Sequence[Sequence[str]]):
    """Sentence ids of every reference set: ``(ref_sid, pair_rs, pair_j, pair_sid)`` with
    ``ref_sid`` of shape (sets, max refs) padded with -1, and the (set, position, sid) of every
    reference in row-major order (read-only arrays, shared by the calls that ask for the same
    sets)."""
    return index.memo("refsets", tuple(map(tuple, refsets)), lambda: _refset_matrix(index, refsets))


def candidate_sids(index: NgramIndex, cands: Sequence[str]) -> np.ndarray:
    """``index.sids(cands)``, shared by the calls that ask for the same candidates (read-only)."""
    return index.memo("cands", tuple(cands), lambda: index.sids(cands))


def _refset_matrix(index: NgramIndex, refsets: Sequence[Sequence[str]]):
    n_rs = len(refsets)
    lens = np.fromiter(map(len, refsets), dtype=np.int64, count=n_rs)
    flat = list(chain.from_iterable(refsets))
    pair_sid = index.sids(flat)
    pair_rs = np.repeat(np.arange(n_rs, dtype=np.int64), lens)
    first = np.zeros(n_rs, dtype=np.int64)
    np.cumsum(lens[:-1], out=first[1:]) if n_rs > 1 else None
    pair_j = np.arange(len(flat), dtype=np.int64) - first[pair_rs]
    ref_sid = np.full((n_rs, max(int(lens.max(initial=0)), 1)), -1, dtype=np.int64)
    ref_sid[pair_rs, pair_j] = pair_sid
    return ref_sid, pair_rs, pair_j, pair_sid


# The families of one ``capeval.score`` call receive the same tokenized texts, so the index
# built by the first is reused by the next. Keyed by the candidates and reference sets
# themselves (tuples of the same string objects hash and compare at C speed, without the pass
# over all sentences that listing the distinct ones takes); two entries at most, so memory
# stays bounded.
_CACHE: dict[tuple[tuple[str, ...], tuple[tuple[str, ...], ...]], NgramIndex] = {}
_CACHE_LOCK = threading.Lock()
_CACHE_SIZE = 2


def index_for(cands: Sequence[str], refsets: Sequence[Sequence[str]]) -> NgramIndex:
    """The index of the distinct sentences of ``cands`` and ``refsets`` (candidates first)."""
    key = (tuple(cands), tuple(map(tuple, refsets)))
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
    if hit is not None:
        return hit
    idx = NgramIndex(tuple(dict.fromkeys(chain(cands, chain.from_iterable(refsets)))))
    with _CACHE_LOCK:
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = idx
    return idx


def clear_cache() -> None:
    """Drop cached indexes (frees their memory; later calls rebuild)."""
    with _CACHE_LOCK:
        _CACHE.clear()

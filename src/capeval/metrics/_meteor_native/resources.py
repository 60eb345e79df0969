"""METEOR 1.5's English resources, read from coco's jar and converted once into a cache.

The jar (pycocoevalcap's ``meteor/meteor-1.5.jar``) carries the function-word list, the
non-breaking prefixes and its WordNet-derived synonym files; the paraphrase table
(5,274,084 entries, 62 MB gzip) sits beside it in ``data/paraphrase-en.gz``. Parsing that
table takes the jar ~9 s at every start and Python longer, so the first use converts
everything into numpy arrays under ``$CAPEVAL_CACHE/meteor-1.5/<fingerprint>/`` (never in
the repository); later uses memory-map them. The fingerprint covers both files' paths, sizes
and modification times and the cache format, so a different jar or table gets its own
conversion; the files' SHA-256 are recorded in the cache and reported in the signature.

Files are read as the jar reads them: lines split by ``BufferedReader.readLine`` (``\\n``,
``\\r``, ``\\r\\n``), words by ``StringTokenizer``, the paraphrase table as UTF-8.
"""
from __future__ import annotations

import gzip
from array import array
import hashlib
import json
import os
import re
import shutil
import threading
import zipfile
from collections import defaultdict
from itertools import count
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ...digests import sha256_file
from ...errors import ResourceNotFound
from ...paths import cache_root
from ...resources.resolver import resolve
from .java import tokens
from .normalize import parse_nonbreaking_prefixes

#: Version of the cache layout; a different number is a different cache directory, so a cache
#: written by another version is never read (2: phrase indexes by anchor word and by entry).
FORMAT = 2
_LINE_BREAK = re.compile("\r\n|\r|\n")
_lock = threading.Lock()
_loaded: dict[str, "MeteorResources"] = {}


def java_lines(text: str) -> list[str]:
    """``BufferedReader.readLine`` over ``text``."""
    lines = _LINE_BREAK.split(text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def locate(jar: str | os.PathLike | None = None) -> tuple[Path, Path]:
    """The jar and its paraphrase table (``data/paraphrase-en.gz`` beside it)."""
    jar_path = resolve("meteor-jar", jar)
    para = jar_path.parent / "data" / "paraphrase-en.gz"
    if not para.is_file():
        raise ResourceNotFound(
            f"METEOR's paraphrase table is missing: expected {para} beside the jar "
            "(pycocoevalcap ships it)."
        )
    return jar_path, para


def fingerprint(jar: Path, para: Path) -> str:
    h = hashlib.sha1(f"format{FORMAT}".encode())
    for p in (jar, para):
        st = p.stat()
        h.update(f"{p.resolve()}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()[:16]


@dataclass
class ParaphraseTable:
    """Entries in file order: reference phrase → paraphrase, both as phrase ids.

    ``phrase_tokens[phrase_offsets[p]:phrase_offsets[p + 1]]`` are phrase ``p``'s word ids;
    ``vocab`` maps a word to its id.
    """

    vocab: dict[str, int]
    phrase_offsets: np.ndarray
    phrase_tokens: np.ndarray
    entry_ref: np.ndarray
    entry_par: np.ndarray
    #: Non-empty phrases grouped by their anchor, the word of theirs rarest in the table:
    #: ``anchor_phrases[anchor_offsets[w]:anchor_offsets[w + 1]]`` (:func:`_index_paraphrases`).
    anchor_offsets: np.ndarray
    anchor_phrases: np.ndarray
    empty_phrases: np.ndarray
    #: Entries by reference phrase, in file order: ``ref_entries[ref_offsets[p]:ref_offsets[p + 1]]``.
    ref_offsets: np.ndarray
    ref_entries: np.ndarray

    def restricted(self, word_ids, line_bigrams=None) -> "BatchParaphrases":
        """The entries whose words are all in ``word_ids`` (the only entries that can match
        texts made of those words), with their reference phrases ready for lookup: those
        that can occur in lines whose adjacent word pairs are all in ``line_bigrams``
        (``w1 * len(vocab) + w2``; None: any pair).

        Only phrases anchored at a batch word can qualify (a phrase's words include its
        anchor), so only those are checked, and only the entries of qualifying reference
        phrases are read: a small part of the table, memory-mapped pages included."""
        present = np.zeros(len(self.vocab) + 1, dtype=bool)
        ids = np.fromiter(word_ids, dtype=np.int64)
        present[ids[ids >= 0]] = True
        words = np.flatnonzero(present[:-1])
        cand = np.asarray(self.anchor_phrases)[_spans(np.asarray(self.anchor_offsets[words]),
                                                      np.asarray(self.anchor_offsets[words + 1]))]
        starts = np.asarray(self.phrase_offsets[cand])
        lengths = np.asarray(self.phrase_offsets[cand + 1]) - starts
        missing = ~present[np.asarray(self.phrase_tokens)[_spans(starts, starts + lengths)]]
        # a phrase is usable when none of its words is missing (empty phrases: vacuously);
        # candidates are non-empty, so each starts a segment of its own
        if len(cand):
            bad = np.add.reduceat(missing.view(np.int8), np.cumsum(lengths) - lengths, dtype=np.int64) > 0
            cand = cand[~bad]
        ok = np.concatenate([cand, np.asarray(self.empty_phrases)]).astype(np.int64)
        phrase_ok = np.zeros(len(self.phrase_offsets) - 1, dtype=bool)
        phrase_ok[ok] = True
        entries = np.asarray(self.ref_entries)[_spans(np.asarray(self.ref_offsets[ok]),
                                                      np.asarray(self.ref_offsets[ok + 1]))]
        entries = entries[phrase_ok[np.asarray(self.entry_par[entries])]]
        entries.sort()  # file order
        refs = np.asarray(self.entry_ref[entries])
        pars = np.asarray(self.entry_par[entries])
        key_ids = np.unique(refs)
        # an empty reference phrase is never reported by the jar's transducer
        key_ids = key_ids[self.phrase_offsets[key_ids + 1] > self.phrase_offsets[key_ids]]
        starts = np.asarray(self.phrase_offsets[key_ids])
        lengths = np.asarray(self.phrase_offsets[key_ids + 1]) - starts
        flat = np.asarray(self.phrase_tokens)[_spans(starts, starts + lengths)].astype(np.int64)
        # adjacent word pairs inside reference phrases: a line's n-gram that contains any other
        # pair can neither be nor extend to a reference phrase
        v = len(self.vocab)
        follows = _ramp(lengths)[1:] != 0
        codes = flat[:-1][follows] * v + flat[1:][follows]
        if line_bigrams is not None and len(key_ids):
            # a phrase with a pair that no line has occurs in no line: no key worth keeping
            absent = ~np.isin(codes, np.fromiter(line_bigrams, dtype=np.int64))
            owner = np.repeat(np.arange(len(key_ids)), np.maximum(lengths - 1, 0))
            keep = np.ones(len(key_ids), dtype=bool)
            keep[owner[absent]] = False
            flat = flat[np.repeat(keep, lengths)]
            codes = codes[keep[owner]]
            key_ids, lengths = key_ids[keep], lengths[keep]
        key_words = flat.tolist()
        keys: dict[tuple[int, ...], int] = {}
        pos = 0
        for k, ln in zip(key_ids.tolist(), lengths.tolist()):
            keys[tuple(key_words[pos : pos + ln])] = k
            pos += ln
        return BatchParaphrases(self, keys, set(np.unique(codes).tolist()), int(lengths.max(initial=0)),
                                refs, pars)

    def _phrases(self, ids: np.ndarray) -> tuple[np.ndarray, list[int], np.ndarray]:
        """``ids``, their words concatenated (a list) and their lengths."""
        starts = np.asarray(self.phrase_offsets[ids])
        lengths = np.asarray(self.phrase_offsets[ids + 1]) - starts
        flat = np.asarray(self.phrase_tokens)[np.repeat(starts, lengths) + _ramp(lengths)].tolist()
        return ids, flat, lengths


@dataclass
class BatchParaphrases:
    """The paraphrase entries usable by one batch of lines (all words in the batch).

    ``keys``: reference phrase (word ids) → phrase id, non-empty phrases only;
    ``key_bigrams``: ``w1 * vocab_size + w2`` for adjacent words of some reference phrase;
    ``key_max``: longest reference phrase. :meth:`paraphrases` gives the entries of the
    reference phrases actually found in the lines."""

    table: ParaphraseTable
    keys: dict[tuple[int, ...], int]
    key_bigrams: set[int]
    key_max: int
    entry_ref: np.ndarray
    entry_par: np.ndarray

    @property
    def vocab_size(self) -> int:
        return len(self.table.vocab)

    def paraphrases(self, key_ids) -> dict[tuple[int, ...], list[tuple[int, ...]]]:
        """{reference phrase: [its paraphrases in file order]} for the phrase ids ``key_ids``."""
        found = np.fromiter(key_ids, dtype=np.int64)
        sel = np.isin(self.entry_ref, found)
        refs, pars = self.entry_ref[sel], self.entry_par[sel]
        needed, flat, lengths = self.table._phrases(np.unique(np.concatenate([refs, pars])))
        phrase_of: dict[int, tuple[int, ...]] = {}
        pos = 0
        for p, ln in zip(needed.tolist(), lengths.tolist()):
            phrase_of[p] = tuple(flat[pos : pos + ln])
            pos += ln
        out: dict[tuple[int, ...], list[tuple[int, ...]]] = {}
        for r, p in zip(refs.tolist(), pars.tolist()):
            out.setdefault(phrase_of[r], []).append(phrase_of[p])
        return out


def _spans(starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """``starts[i] .. stops[i] - 1`` for each i, concatenated."""
    lengths = np.asarray(stops, dtype=np.int64) - starts
    return np.repeat(np.asarray(starts, dtype=np.int64), lengths) + _ramp(lengths)


def _ramp(lengths: np.ndarray) -> np.ndarray:
    """0..len-1 for each length, concatenated."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    ends = np.cumsum(lengths)
    return np.arange(total) - np.repeat(ends - lengths, lengths)


@dataclass
class MeteorResources:
    function_words: frozenset[str]
    nonbreaking: dict[str, int]
    synsets: dict[str, frozenset[int]]
    exceptions: dict[str, list[str]]
    paraphrase: ParaphraseTable
    identity: dict[str, str] = field(default_factory=dict)


# -- conversion -------------------------------------------------------------------------------
def _read_jar_text(z: zipfile.ZipFile, name: str) -> str:
    try:
        data = z.read(name)
    except KeyError:
        raise ResourceNotFound(f"the METEOR jar has no {name}; is it coco's meteor-1.5.jar?") from None
    return data.decode("utf-8", "replace")


def _strip_terminator(line: str) -> str:
    if line.endswith("\r\n"):
        return line[:-2]
    if line.endswith(("\n", "\r")):
        return line[:-1]
    return line


class _NotPlain(Exception):
    """The table needs the general conversion (see :func:`_convert_paraphrase`)."""


def _convert_paraphrase(para: Path, out: Path) -> None:
    """Convert the paraphrase table: 3 lines per entry (probability, reference phrase,
    paraphrase); phrases get ids by first appearance (reference then paraphrase, entry by
    entry), words likewise in phrase order.

    Done on bytes, in blocks, with the per-line work in C (split, dict lookups) instead of a
    Python object per line and per word: exact as long as the table is plain, i.e. valid
    UTF-8 (bytes and text then correspond one to one), no ``\\r`` (lines end at ``\\n``
    only) and phrases that split on single spaces alone (no tab, form feed, doubled or
    outer space). coco's table is; any other goes through :func:`_convert_paraphrase_text`,
    which reads lines and words exactly as the jar does."""
    try:
        _convert_paraphrase_plain(para, out)
    except _NotPlain:
        _convert_paraphrase_text(para, out)


_BLOCK = 1 << 24
_PHRASES_PER_SLICE = 1 << 18


def _convert_paraphrase_plain(para: Path, out: Path) -> None:
    index: dict[bytes, int] = defaultdict(count().__next__)  # phrase -> id, by first appearance
    ids: list[np.ndarray] = []  # per block: ids of its phrase lines (reference, paraphrase, ...)
    n_lines = 0
    rest = b""
    with gzip.open(para, "rb") as f:
        while True:
            block = f.read(_BLOCK)
            data = rest + block
            if block:
                cut = data.rfind(b"\n") + 1
                data, rest = data[:cut], data[cut:]
                lines = data.split(b"\n")
                lines.pop()  # after the last newline
            else:  # the end: a last line without a newline still counts (readLine)
                lines = [data] if data else []
                rest = b""
            if b"\r" in data:
                raise _NotPlain
            if not data.isascii():
                try:
                    data.decode("utf-8")
                except UnicodeDecodeError:
                    raise _NotPlain from None
            first_prob = (-n_lines) % 3  # index in this block of its first probability line
            n_lines += len(lines)
            del lines[first_prob::3]  # reference and paraphrase lines remain, in order
            ids.append(np.fromiter(map(index.__getitem__, lines), dtype=np.int32, count=len(lines)))
            if not block:
                break
    if n_lines % 3:
        raise ResourceNotFound(f"{para}: the last entry is incomplete (not 3 lines)")
    flat_ids = np.concatenate(ids) if ids else np.zeros(0, dtype=np.int32)
    phrases = list(index)
    del index
    vocab: dict[bytes, int] = defaultdict(count().__next__)  # word -> id, by first appearance
    n_words: list[np.ndarray] = []
    flat: list[np.ndarray] = []
    for at in range(0, len(phrases), _PHRASES_PER_SLICE):  # in slices: bounded memory
        joined = b"\n".join(phrases[at : at + _PHRASES_PER_SLICE])
        if (any(c in joined for c in (b"\t", b"\f", b"\r", b"  ", b"\n ", b" \n"))
                or joined.startswith(b" ") or joined.endswith(b" ")):
            raise _NotPlain  # a phrase with other spacing than single spaces between words
        # words per phrase: its spaces + 1, none for an empty phrase
        raw = np.frombuffer(joined, dtype=np.uint8)
        newlines = np.flatnonzero(raw == 10)
        spaces = np.flatnonzero(raw == 32)
        starts = np.concatenate([[0], newlines + 1])
        stops = np.concatenate([newlines, [len(raw)]])
        n_words.append(np.searchsorted(spaces, stops) - np.searchsorted(spaces, starts) + (stops > starts))
        has_empty = bool((stops == starts).any())
        del raw, newlines, spaces, starts, stops
        words = joined.replace(b"\n", b" ").split(b" ")
        del joined
        if has_empty:
            words = list(filter(None, words))
        flat.append(np.fromiter(map(vocab.__getitem__, words), dtype=np.int32, count=len(words)))
        del words
    offsets = np.zeros(len(phrases) + 1, dtype=np.int64)
    if phrases:
        np.cumsum(np.concatenate(n_words), out=offsets[1:])
    flat_words = np.concatenate(flat) if flat else np.zeros(0, dtype=np.int32)
    if offsets[-1] != len(flat_words):
        raise _NotPlain  # cannot happen for plain phrases; the general path decides
    np.save(out / "para_entry_ref.npy", flat_ids[0::2].copy())
    np.save(out / "para_entry_par.npy", flat_ids[1::2].copy())
    np.save(out / "para_phrase_offsets.npy", offsets)
    np.save(out / "para_phrase_tokens.npy", flat_words)
    (out / "para_vocab.txt").write_text("\n".join(w.decode("utf-8") for w in vocab), encoding="utf-8")


def _convert_paraphrase_text(para: Path, out: Path) -> None:
    """The general conversion: decoded line by line (invalid UTF-8 replaced), every phrase
    tokenized on its own."""
    # Streamed (one line at a time, newline="" splits on \n, \r and \r\n like readLine), so
    # the decompressed 272 MB never sit in memory at once.
    phrase_index: dict[str, int] = {}
    refs = array("i")  # compact: 5 million entries each
    pars = array("i")
    with gzip.open(para, "rt", encoding="utf-8", errors="replace", newline="") as f:
        lines = iter(f)
        for _prob in lines:
            try:
                ref = _strip_terminator(next(lines))
                par = _strip_terminator(next(lines))
            except StopIteration:
                raise ResourceNotFound(f"{para}: the last entry is incomplete (not 3 lines)") from None
            refs.append(phrase_index.setdefault(ref, len(phrase_index)))
            pars.append(phrase_index.setdefault(par, len(phrase_index)))
    entry_ref = np.frombuffer(refs, dtype=np.int32)
    entry_par = np.frombuffer(pars, dtype=np.int32)
    vocab: dict[str, int] = {}
    offsets = np.zeros(len(phrase_index) + 1, dtype=np.int64)
    flat = array("i")
    for k, phrase in enumerate(phrase_index):
        flat.extend([vocab.setdefault(w, len(vocab)) for w in tokens(phrase)])
        offsets[k + 1] = len(flat)
    np.save(out / "para_entry_ref.npy", entry_ref)
    np.save(out / "para_entry_par.npy", entry_par)
    np.save(out / "para_phrase_offsets.npy", offsets)
    np.save(out / "para_phrase_tokens.npy", np.frombuffer(flat, dtype=np.int32))
    (out / "para_vocab.txt").write_text("\n".join(vocab), encoding="utf-8")


def _index_paraphrases(out: Path) -> None:
    """The lookup indexes of :class:`ParaphraseTable` from the converted arrays."""
    offsets = np.load(out / "para_phrase_offsets.npy")
    tokens_ = np.load(out / "para_phrase_tokens.npy")
    entry_ref = np.load(out / "para_entry_ref.npy")
    n_words = int(tokens_.max(initial=-1)) + 1
    n_phrases = len(offsets) - 1
    lengths = np.diff(offsets)
    filled = np.flatnonzero(lengths > 0)
    # anchor: the word occurring least often in the table (ties: the smaller id)
    freq = np.bincount(tokens_, minlength=n_words).astype(np.int64)
    anchor = np.zeros(0, dtype=np.int64)
    if len(filled):
        rank = freq[tokens_] * n_words + tokens_
        anchor = np.minimum.reduceat(rank, offsets[filled]) % n_words
    order = np.argsort(anchor, kind="stable")
    np.save(out / "para_anchor_phrases.npy", filled[order].astype(np.int32))
    anchor_offsets = np.zeros(n_words + 1, dtype=np.int64)
    np.cumsum(np.bincount(anchor, minlength=n_words), out=anchor_offsets[1:])
    np.save(out / "para_anchor_offsets.npy", anchor_offsets)
    np.save(out / "para_empty_phrases.npy", np.flatnonzero(lengths == 0).astype(np.int32))
    np.save(out / "para_ref_entries.npy", np.argsort(entry_ref, kind="stable").astype(np.int32))
    ref_offsets = np.zeros(n_phrases + 1, dtype=np.int64)
    np.cumsum(np.bincount(entry_ref, minlength=n_phrases), out=ref_offsets[1:])
    np.save(out / "para_ref_offsets.npy", ref_offsets)


def _convert_jar(jar: Path, out: Path) -> None:
    try:
        z = zipfile.ZipFile(jar)
    except (zipfile.BadZipFile, OSError) as e:
        raise ResourceNotFound(f"{jar}: not a readable METEOR 1.5 jar ({e}); the native backend reads "
                               "its word lists from the jar") from e
    with z:
        function_words = java_lines(_read_jar_text(z, "function/english.words"))
        nbp_lines = java_lines(_read_jar_text(z, "nonbreaking/english.prefixes"))
        exc_lines = java_lines(_read_jar_text(z, "synonym/english.exceptions"))
        syn_lines = java_lines(_read_jar_text(z, "synonym/english.synsets"))
    exceptions: dict[str, list[str]] = {}
    for base, forms in zip(exc_lines[0::2], exc_lines[1::2]):
        for form in tokens(forms):
            exceptions.setdefault(form, []).append(base)
    synsets: dict[str, list[int]] = {}
    for word, ids in zip(syn_lines[0::2], syn_lines[1::2]):
        synsets[word] = [int(t) for t in tokens(ids)]  # a repeated word replaces, as Hashtable.put
    words = list(synsets)
    offsets = np.zeros(len(words) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(synsets[w]) for w in words])
    np.save(out / "syn_offsets.npy", offsets)
    np.save(out / "syn_ids.npy", np.asarray([i for w in words for i in synsets[w]], dtype=np.int32))
    (out / "syn_words.txt").write_text("\n".join(words), encoding="utf-8")
    (out / "small.json").write_text(json.dumps({
        "function_words": function_words,
        "nonbreaking": parse_nonbreaking_prefixes(nbp_lines),
        "exceptions": exceptions,
    }), encoding="utf-8")


def convert(jar: Path, para: Path, target: Path) -> None:
    """Write the cache for ``jar`` and ``para`` into ``target`` (atomically: via a temp dir)."""
    tmp = target.with_name(f"{target.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    try:
        _convert_jar(jar, tmp)
        _convert_paraphrase(para, tmp)
        _index_paraphrases(tmp)
        (tmp / "meta.json").write_text(json.dumps({
            "format": FORMAT,
            "jar": str(jar.resolve()),
            "jar_sha256": sha256_file(jar),
            "paraphrase": str(para.resolve()),
            "paraphrase_sha256": sha256_file(para),
        }, indent=1), encoding="utf-8")
        try:
            tmp.rename(target)
        except OSError:
            if not (target / "meta.json").is_file():  # not a concurrent conversion that won
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


# -- loading ----------------------------------------------------------------------------------
def _read_words(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    return text.split("\n") if text else []


def _load_dir(d: Path) -> MeteorResources:
    meta = json.loads((d / "meta.json").read_text(encoding="utf-8"))
    small = json.loads((d / "small.json").read_text(encoding="utf-8"))
    syn_words = _read_words(d / "syn_words.txt")
    syn_offsets = np.load(d / "syn_offsets.npy")
    syn_ids = np.load(d / "syn_ids.npy", mmap_mode="r")
    para = ParaphraseTable(
        vocab=_index_of(_read_words(d / "para_vocab.txt")),
        phrase_offsets=np.load(d / "para_phrase_offsets.npy", mmap_mode="r"),
        phrase_tokens=np.load(d / "para_phrase_tokens.npy", mmap_mode="r"),
        entry_ref=np.load(d / "para_entry_ref.npy", mmap_mode="r"),
        entry_par=np.load(d / "para_entry_par.npy", mmap_mode="r"),
        anchor_offsets=np.load(d / "para_anchor_offsets.npy", mmap_mode="r"),
        anchor_phrases=np.load(d / "para_anchor_phrases.npy", mmap_mode="r"),
        empty_phrases=np.load(d / "para_empty_phrases.npy"),
        ref_offsets=np.load(d / "para_ref_offsets.npy", mmap_mode="r"),
        ref_entries=np.load(d / "para_ref_entries.npy", mmap_mode="r"),
    )
    return MeteorResources(
        function_words=frozenset(small["function_words"]),
        nonbreaking=small["nonbreaking"],
        synsets=_LazySynsets(syn_words, syn_offsets, syn_ids),
        exceptions=small["exceptions"],
        paraphrase=para,
        identity={"jar_sha256": meta["jar_sha256"], "paraphrase_sha256": meta["paraphrase_sha256"]},
    )


def _index_of(words: list[str]) -> dict[str, int]:
    """word -> position (the last position of a repeated word, as a dict comprehension gives)."""
    return dict(zip(words, range(len(words))))


class _LazySynsets(dict):
    """word → frozenset of synset ids, built on first lookup from the cached arrays."""

    def __init__(self, words: list[str], offsets: np.ndarray, ids: np.ndarray) -> None:
        super().__init__()
        self._index = _index_of(words)
        # plain arrays (still mapped): slicing a memmap builds a memmap object per slice
        self._offsets = np.asarray(offsets)
        self._ids = np.asarray(ids)

    def __contains__(self, word: object) -> bool:
        return word in self._index

    def get(self, word, default=None):
        i = self._index.get(word)
        if i is None:
            return default
        got = dict.get(self, word)
        if got is None:
            got = frozenset(self._ids[self._offsets[i] : self._offsets[i + 1]].tolist())
            dict.__setitem__(self, word, got)
        return got


def load(jar: str | os.PathLike | None = None) -> MeteorResources:
    """The resources for ``jar`` (default: pycocoevalcap's), converting them on first use."""
    jar_path, para = locate(jar)
    key = fingerprint(jar_path, para)
    with _lock:
        got = _loaded.get(key)
        if got is not None:
            return got
        target = cache_root() / "meteor-1.5" / key
        if not (target / "meta.json").is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            convert(jar_path, para, target)
        got = _loaded[key] = _load_dir(target)
        return got

"""METEOR 1.5's English resources, read from coco's jar and converted once into a cache.

The jar (pycocoevalcap's ``meteor/meteor-1.5.jar``) carries the function-word list, the
non-breaking prefixes and its WordNet-derived synonym files; the paraphrase table
(5,274,084 entries, 62 MB gzip) sits beside it in ``data/paraphrase-en.gz``. Parsing that
table takes the jar ~9 s at every start and Python longer, so the first use converts
everything into numpy arrays under ``$CAPEVAL_CACHE/meteor-1.5/<fingerprint>/`` (never in
the repository); later uses memory-map them. The fingerprint is a digest of both files'
contents and the cache format, not of where they are installed: every virtual environment
with the same pycocoevalcap shares one conversion, and a different jar or table gets its own.
The files' SHA-256 are recorded in the cache and reported in the signature.

Each process checks a cache directory against its checksum manifest (:mod:`.manifest`) the
first time it reads it (a directory it has just converted itself was hashed as it was
written, and is not hashed again); a damaged directory is converted again (or, when that is impossible,
refused with :class:`~capeval.errors.ResourceDamaged`), never read.

The conversion itself is :mod:`.convert`; this module finds the files, loads a converted cache
and answers lookups.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ...digests import sha256_file
from ...errors import ResourceDamaged, ResourceNotFound
from ...paths import cache_root
from ...progress import note
from ...resources.resolver import resolve
from . import compiled, manifest
from .convert import FORMAT, convert

_lock = threading.Lock()
_loaded: dict[str, "MeteorResources"] = {}
_source_sha: dict[tuple[str, int, int], str] = {}
log = logging.getLogger(__name__)

#: Every file :func:`_load_dir` reads; the manifest must vouch for each.
FILES = ("meta.json", "small.json", "syn_words.txt", "syn_offsets.npy", "syn_ids.npy", "para_vocab.txt",
         "para_phrase_offsets.npy", "para_phrase_tokens.npy", "para_entry_ref.npy", "para_entry_par.npy",
         "para_anchor_offsets.npy", "para_anchor_phrases.npy", "para_empty_phrases.npy",
         "para_ref_offsets.npy", "para_ref_entries.npy")
CONVERTING = "converting the METEOR paraphrase table, once per machine"


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


def source_sha256(path: Path) -> str:
    """SHA-256 of a source file, hashed once per process while its size and mtime stay."""
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    got = _source_sha.get(key)
    if got is None:
        got = _source_sha[key] = sha256_file(path)
    return got


def fingerprint(jar: Path, para: Path) -> str:
    """The cache directory's name: the cache format and both sources' contents."""
    h = hashlib.sha256(f"format{FORMAT}".encode())
    for p in (jar, para):
        h.update(source_sha256(p).encode())
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
        anchor), so only those are checked (:func:`_phrases_within`), and only the entries of
        qualifying reference phrases are read: for a small batch, a small part of the table,
        memory-mapped pages included."""
        present = np.zeros(len(self.vocab) + 1, dtype=bool)
        ids = np.fromiter(word_ids, dtype=np.int64)
        present[ids[ids >= 0]] = True
        words = np.flatnonzero(present[:-1])
        core = compiled.core
        if core is None:
            cand = _phrases_within(present, words, self.anchor_offsets, self.anchor_phrases,
                                   self.phrase_offsets, self.phrase_tokens)
        else:
            cand = np.frombuffer(core.phrases_within(present, words, self.anchor_offsets, self.anchor_phrases,
                                                     self.phrase_offsets, self.phrase_tokens), dtype=np.int32)
        ok = np.concatenate([cand, np.asarray(self.empty_phrases)]).astype(np.int64)
        phrase_ok = np.zeros(len(self.phrase_offsets) - 1, dtype=bool)
        phrase_ok[ok] = True
        if len(ok) * 8 > len(phrase_ok):
            # most of the table qualifies: reading every entry in order beats jumping to each
            entries = np.flatnonzero(phrase_ok[np.asarray(self.entry_ref)] & phrase_ok[np.asarray(self.entry_par)])
        else:
            entries = np.asarray(self.ref_entries)[_spans(np.asarray(self.ref_offsets[ok]),
                                                          np.asarray(self.ref_offsets[ok + 1]))]
            entries = entries[phrase_ok[np.asarray(self.entry_par[entries])]]
            # file order: entries are distinct, so marking them and reading the marks back
            # sorts without a sort
            mark = np.zeros(len(self.entry_ref), dtype=bool)
            mark[entries] = True
            entries = np.flatnonzero(mark)
        # the distinct reference phrases, ascending, the same way
        refs = np.asarray(self.entry_ref[entries])
        pars = np.asarray(self.entry_par[entries])
        is_key = np.zeros(len(self.phrase_offsets) - 1, dtype=bool)
        is_key[refs] = True
        key_ids = np.flatnonzero(is_key)
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
            # membership by binary search in the lines' sorted pairs (np.isin would sort both)
            seen = np.sort(np.fromiter(line_bigrams, dtype=np.int64))
            at = np.searchsorted(seen, codes)
            absent = seen[np.minimum(at, len(seen) - 1)] != codes if len(seen) else np.ones(len(codes), dtype=bool)
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


def _phrases_within(present: np.ndarray, words: np.ndarray, anchor_offsets: np.ndarray, anchor_phrases: np.ndarray,
                    phrase_offsets: np.ndarray, phrase_tokens: np.ndarray) -> np.ndarray:
    """The non-empty phrases whose words are all ``present``, ascending (int32), from those
    anchored at ``words`` (the present words, ascending): a phrase's anchor is one of its
    words. :meth:`ParaphraseTable.restricted`'s first cut, whose compiled twin is
    ``phrases_within`` (which scans the whole table instead when most of it is anchored there)."""
    cand = np.asarray(anchor_phrases)[_spans(np.asarray(anchor_offsets[words]),
                                             np.asarray(anchor_offsets[words + 1]))]
    starts = np.asarray(phrase_offsets[cand])
    lengths = np.asarray(phrase_offsets[cand + 1]) - starts
    missing = ~present[np.asarray(phrase_tokens)[_spans(starts, starts + lengths)]]
    # a phrase is usable when none of its words is missing; anchored phrases are non-empty,
    # so each starts a segment of its own
    if len(cand):
        bad = np.add.reduceat(missing.view(np.int8), np.cumsum(lengths) - lengths, dtype=np.int64) > 0
        cand = cand[~bad]
    return np.sort(cand)


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


# -- loading ----------------------------------------------------------------------------------
def _read_words(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    return text.split("\n") if text else []


def _load_dir(d: Path, conversion: str) -> MeteorResources:
    meta = json.loads((d / "meta.json").read_text(encoding="utf-8"))
    small = json.loads((d / "small.json").read_text(encoding="utf-8"))
    syn_words = _read_words(d / "syn_words.txt")
    syn_offsets = np.load(d / "syn_offsets.npy")
    syn_ids = np.load(d / "syn_ids.npy", mmap_mode="r")
    if len(syn_offsets) != len(syn_words) + 1:
        raise ValueError(f"{len(syn_words)} synonym words but {len(syn_offsets)} offsets")
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
        identity={"jar_sha256": meta["jar_sha256"], "paraphrase_sha256": meta["paraphrase_sha256"],
                  "conversion": conversion},
    )


def _checked(d: Path, digest: str | None = None) -> MeteorResources:
    """The resources in ``d`` once it matches its manifest; :class:`manifest.Damaged` if not
    (including a file that matches its checksum yet cannot be parsed: a manifest written
    over damaged files). ``digest``: ``d`` is what this process just converted and hashed,
    with this manifest digest; its files are not hashed a second time."""
    conversion = digest if digest is not None else manifest.verify(d, FILES)
    try:
        return _load_dir(d, conversion)
    except (OSError, ValueError, KeyError, TypeError, EOFError) as e:
        raise manifest.Damaged(f"{d}: unreadable converted file ({type(e).__name__}: {e})") from None


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
    """The resources for ``jar`` (default: pycocoevalcap's), converting them on first use and
    again whenever the converted directory fails its checks."""
    jar_path, para = locate(jar)
    key = fingerprint(jar_path, para)
    with _lock:
        got = _loaded.get(key)
        if got is not None:
            return got
        target = cache_root() / "meteor-1.5" / key
        damage = None
        if target.exists():
            try:
                got = _checked(target)
            except manifest.Damaged as e:
                damage = str(e)
                note(f"the converted METEOR cache is damaged ({damage}); {CONVERTING}")
                log.warning("converting METEOR's resources again: %s", damage)
        if got is None:
            if damage is None:
                note(CONVERTING)
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                own = convert(jar_path, para, target, jar_sha256=source_sha256(jar_path),
                              paraphrase_sha256=source_sha256(para), replace=damage is not None)
            except OSError as e:
                if damage is None:
                    raise
                raise ResourceDamaged(
                    f"{damage}, and converting it again failed ({e}). Delete {target} or make "
                    "it writable, then run again."
                ) from e
            try:
                got = _checked(target, own)
            except manifest.Damaged as e:
                raise ResourceDamaged(f"the METEOR cache just converted into {target} fails its "
                                      f"checks: {e}") from None
        _loaded[key] = got
        return got

"""The one-time conversion of METEOR 1.5's English resources into capeval's cache: the jar's
word lists and synonym files (:mod:`.convert_jar`) and the paraphrase table, written as numpy
arrays and small text files that :mod:`.resources` memory-maps at every later use.

The paraphrase table is read as the jar reads it (lines split by ``BufferedReader.readLine``:
``\\n``, ``\\r``, ``\\r\\n``; words by ``StringTokenizer``; UTF-8). Its paths write
identical files (tested): fast ones over bytes for a plain UTF-8 table with single spaces
(compiled, ``_paratable.c``, when built; else Arrow's, when pyarrow is installed; else numpy
and dicts) and a line-by-line one for anything else.
"""
from __future__ import annotations

import gzip
import json
import os
import shutil
import threading
from array import array
from collections import defaultdict
from itertools import count
from pathlib import Path

import numpy as np

from ..._compiled import load
from ...errors import ResourceNotFound
from . import manifest
from .convert_jar import read_jar, write_jar
from .java import tokens
from .plain_table import plain_blocks

#: Version of the cache layout; a different number is a different cache directory, so a cache
#: written by another version is never read (2: phrase indexes by anchor word and by entry).
FORMAT = 2


def _strip_terminator(line: str) -> str:
    if line.endswith("\r\n"):
        return line[:-2]
    if line.endswith(("\n", "\r")):
        return line[:-1]
    return line


class _NotPlain(Exception):
    """The table needs the general conversion (see :func:`_convert_paraphrase`)."""


def _convert_paraphrase(para: Path, out: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Convert the paraphrase table: 3 lines per entry (probability, reference phrase,
    paraphrase); phrases get ids by first appearance (reference then paraphrase, entry by
    entry), words likewise in phrase order.

    Done on bytes, in blocks, with the per-line work in C (the compiled builder, else
    Arrow's or Python's hash tables) instead of a Python object per line and per word: exact
    as long as the table is plain, i.e. valid
    UTF-8 (bytes and text then correspond one to one), no ``\\r`` (lines end at ``\\n``
    only) and phrases that split on single spaces alone (no tab, form feed, doubled or
    outer space). coco's table is; any other goes through :func:`_convert_paraphrase_text`,
    which reads lines and words exactly as the jar does.

    Returns the phrase offsets, phrase words and entry references when they are still in
    memory (the compiled path), for :func:`_index_paraphrases`."""
    from . import convert_arrow

    try:
        paratable = _compiled()
        if paratable is not None:  # same files, in one pass
            return _convert_paraphrase_compiled(para, out, paratable)
        elif convert_arrow.available():  # same files, several times faster than plain
            convert_arrow.convert_paraphrase(para, out, _NotPlain)
        else:
            _convert_paraphrase_plain(para, out)
    except _NotPlain:
        _convert_paraphrase_text(para, out)
    return None


def _compiled():
    """The optional compiled builder (``_paratable.c``), unless absent or switched off as
    :mod:`capeval._compiled` switches the compiled core off (``CAPEVAL_PURE_PYTHON``)."""
    def importer():
        from . import _paratable

        return _paratable

    return load(importer)


def _convert_paraphrase_compiled(para: Path, out: Path, paratable) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_convert_paraphrase_plain` in C: the builder checks plainness itself (UTF-8,
    ``\\r``, spacing) and numbers phrases and words as that function does."""
    builder = paratable.Builder()
    for data in plain_blocks(para, _BLOCK, _NotPlain, check=False):
        if not builder.feed(data):
            raise _NotPlain
    n_lines, *buffers, vocab = builder.result()
    del builder
    if n_lines % 3:
        raise ResourceNotFound(f"{para}: the last entry is incomplete (not 3 lines)")
    types = (np.int32, np.int32, np.int64, np.int32)
    refs, pars, offsets, words = (np.frombuffer(b, dtype=t) for b, t in zip(buffers, types))
    np.save(out / "para_entry_ref.npy", refs)
    np.save(out / "para_entry_par.npy", pars)
    np.save(out / "para_phrase_offsets.npy", offsets)
    np.save(out / "para_phrase_tokens.npy", words)
    (out / "para_vocab.txt").write_bytes(vocab)
    return offsets, words, refs


_BLOCK = 1 << 24
_PHRASES_PER_SLICE = 1 << 18


def _convert_paraphrase_plain(para: Path, out: Path) -> None:
    index: dict[bytes, int] = defaultdict(count().__next__)  # phrase -> id, by first appearance
    ids: list[np.ndarray] = []  # per block: ids of its phrase lines (reference, paraphrase, ...)
    n_lines = 0
    for data in plain_blocks(para, _BLOCK, _NotPlain):
        lines = data.split(b"\n")
        lines.pop()  # after the last newline
        first_prob = (-n_lines) % 3  # index in this block of its first probability line
        n_lines += len(lines)
        del lines[first_prob::3]  # reference and paraphrase lines remain, in order
        ids.append(np.fromiter(map(index.__getitem__, lines), dtype=np.int32, count=len(lines)))
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


def _index_paraphrases(out: Path, arrays: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> None:
    """The lookup indexes of :class:`ParaphraseTable` from the converted arrays (``arrays``:
    the phrase offsets, phrase words and entry references if in memory; else read back)."""
    if arrays is None:
        arrays = tuple(np.load(out / f"para_{n}.npy") for n in ("phrase_offsets", "phrase_tokens", "entry_ref"))
    offsets, tokens_, entry_ref = arrays
    paratable = _compiled()
    if paratable is None:
        arrays = _index_numpy(offsets, tokens_, entry_ref)
    else:  # the same arrays by counting sorts
        arrays = [np.frombuffer(b, dtype=t) for b, t in zip(paratable.index(offsets, tokens_, entry_ref), _INDEX_TYPES)]
    for name, a in zip(_INDEX_FILES, arrays):
        np.save(out / name, a)


_INDEX_FILES = ("para_anchor_phrases.npy", "para_anchor_offsets.npy", "para_empty_phrases.npy",
                "para_ref_entries.npy", "para_ref_offsets.npy")
_INDEX_TYPES = (np.int32, np.int64, np.int32, np.int32, np.int64)


def _index_numpy(offsets: np.ndarray, tokens_: np.ndarray, entry_ref: np.ndarray) -> list[np.ndarray]:
    """The arrays of :data:`_INDEX_FILES`, in that order."""
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
    anchor_offsets = np.zeros(n_words + 1, dtype=np.int64)
    np.cumsum(np.bincount(anchor, minlength=n_words), out=anchor_offsets[1:])
    ref_offsets = np.zeros(n_phrases + 1, dtype=np.int64)
    np.cumsum(np.bincount(entry_ref, minlength=n_phrases), out=ref_offsets[1:])
    return [filled[order].astype(np.int32), anchor_offsets, np.flatnonzero(lengths == 0).astype(np.int32),
            np.argsort(entry_ref, kind="stable").astype(np.int32), ref_offsets]


def convert(jar: Path, para: Path, target: Path, *, jar_sha256: str, paraphrase_sha256: str,
            replace: bool = False) -> str | None:
    """Write the cache for ``jar`` and ``para`` (whose SHA-256 are given) into ``target``,
    atomically: via a temp dir renamed into place, with a checksum manifest (:mod:`.manifest`)
    written last. ``replace``: ``target`` exists and failed its checks; swap it out.

    Returns the manifest's digest when ``target`` is now the directory written here (its
    files hashed by this process a moment ago), None when a concurrent conversion's is there
    instead (the caller must check that one)."""
    tmp = target.with_name(f"{target.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    try:
        # The word lists are converted in Python, holding the GIL, while the paraphrase table's
        # inflation and compiled conversion release it: the two overlap on two cores.
        jar_files = _Thread(write_jar, read_jar(jar), tmp)  # a bad jar fails before the long part
        try:
            _index_paraphrases(tmp, _convert_paraphrase(para, tmp))
        finally:
            jar_files.join()
        # content only, no install path: venvs with the same jar and table share one cache
        (tmp / "meta.json").write_text(json.dumps({
            "format": FORMAT,
            "jar_sha256": jar_sha256,
            "paraphrase_sha256": paraphrase_sha256,
        }, indent=1), encoding="utf-8")
        digest = manifest.write(tmp)
        return digest if _install(tmp, target, replace) else None
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


class _Thread:
    """``fn(*args)`` on a thread; :meth:`join` waits and raises what it raised."""

    def __init__(self, fn, *args) -> None:
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(fn, args), name="capeval-meteor-jar", daemon=True)
        self._thread.start()

    def _run(self, fn, args) -> None:
        try:
            fn(*args)
        except BaseException as e:  # raised again by join, in the caller's thread
            self._error = e

    def join(self) -> None:
        self._thread.join()
        if self._error is not None:
            raise self._error


def _install(tmp: Path, target: Path, replace: bool) -> bool:
    """Whether ``tmp`` became ``target`` (False: a concurrent conversion's is there)."""
    try:
        tmp.rename(target)
        return True
    except OSError:
        if not target.exists():
            raise
    if not replace:
        return False  # a concurrent conversion won; the loader checks what it wrote
    # Readers that mapped the damaged files keep their pages (unlinked inodes live on).
    bad = target.with_name(f"{target.name}.damaged-{os.getpid()}-{threading.get_ident()}")
    try:
        target.rename(bad)
    except FileNotFoundError:
        pass  # another process is swapping it right now
    try:
        tmp.rename(target)
        return True
    except OSError:
        if not target.exists():
            raise
        return False
    finally:
        shutil.rmtree(bad, ignore_errors=True)

"""The paraphrase table's conversion with Arrow's hash tables, when pyarrow is installed and
the compiled builder (``_paratable.c``) is not.

It writes the same files as :func:`.convert._convert_paraphrase_plain` (tested byte for byte),
for the same plain tables, and refuses the others the same way (``_NotPlain``). The Python
version spends most of its time creating a bytes object per line and per word and looking
each one up in a dict (about 11 s for coco's 10.5 million phrase lines); here lines and words
stay slices of the decompressed buffer, described by numpy offsets, and
``pyarrow.compute.dictionary_encode`` numbers them by first appearance in C++.

Blocks are encoded one at a time (bounded memory), then merged: a phrase's first appearance
is in the earliest block that has it, so encoding the blocks' own dictionaries, concatenated
in block order, numbers every phrase by its first appearance in the whole table.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ...errors import ResourceNotFound
from .plain_table import plain_blocks

_BLOCK = 1 << 25


def available() -> bool:
    try:
        import pyarrow  # noqa: F401
        import pyarrow.compute  # noqa: F401
    except ImportError:
        return False
    return True


def _binary(pa, data, offsets: np.ndarray):
    """A large_binary array over ``data`` whose value i is ``data[offsets[i]:offsets[i + 1]]``."""
    return pa.LargeBinaryArray.from_buffers(pa.large_binary(), len(offsets) - 1,
                                            [None, pa.py_buffer(offsets.astype(np.int64)), pa.py_buffer(data)])


def _values(arr) -> tuple[np.ndarray, np.ndarray]:
    """The bytes (uint8) and offsets (from 0) of a large_binary array's values."""
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64)[arr.offset : arr.offset + len(arr) + 1]
    data = np.frombuffer(arr.buffers()[2], dtype=np.uint8)[offsets[0] : offsets[-1]]
    return data, offsets - offsets[0]


def convert_paraphrase(para: Path, out: Path, not_plain: type[Exception]) -> None:
    import pyarrow as pa
    import pyarrow.compute as pc

    block_ids: list[np.ndarray] = []  # per block: its phrase lines' ids among its own distinct lines
    block_dicts = []  # per block: its distinct phrase lines (each with its "\n"), by first appearance
    n_lines = 0
    for data in plain_blocks(para, _BLOCK, not_plain):
        raw = np.frombuffer(data, dtype=np.uint8)
        ends = np.flatnonzero(raw == 10) + 1
        lines = _binary(pa, data, np.concatenate([[0], ends]))
        keep = np.ones(len(ends), dtype=bool)
        keep[(-n_lines) % 3 :: 3] = False  # probability lines out; reference, paraphrase remain
        n_lines += len(ends)
        enc = pc.dictionary_encode(lines.filter(pa.array(keep)))
        block_ids.append(enc.indices.to_numpy(zero_copy_only=False))
        block_dicts.append(enc.dictionary)
    if n_lines % 3:
        raise ResourceNotFound(f"{para}: the last entry is incomplete (not 3 lines)")
    merged = pc.dictionary_encode(pa.concat_arrays(block_dicts)) if block_dicts else None
    flat_ids = np.zeros(0, dtype=np.int32)
    phrase_data = np.zeros(0, dtype=np.uint8)
    phrase_offsets = np.zeros(1, dtype=np.int64)
    if merged is not None and len(merged):
        global_of = merged.indices.to_numpy(zero_copy_only=False)
        parts, at = [], 0
        for ids, d in zip(block_ids, block_dicts):
            parts.append(global_of[at : at + len(d)][ids])
            at += len(d)
        flat_ids = np.concatenate(parts).astype(np.int32)
        phrase_data, phrase_offsets = _values(merged.dictionary)
    del block_ids, block_dicts, merged  # the phrases' own buffers live on through phrase_data
    np.save(out / "para_entry_ref.npy", flat_ids[0::2].copy())
    np.save(out / "para_entry_par.npy", flat_ids[1::2].copy())
    del flat_ids
    # Plain phrases: words separated by single spaces, nothing else (see _convert_paraphrase).
    text = phrase_data.tobytes()
    if any(c in text for c in (b"\t", b"\f", b"\r", b"  ", b"\n ", b" \n")) or text.startswith(b" "):
        raise not_plain
    # Words as values that end with their separator, made a space; the separators at phrase
    # ends are the newlines. An empty phrase ("\n" alone) gives a value of one space, dropped.
    w = np.frombuffer(text.replace(b"\n", b" "), dtype=np.uint8)
    del text
    sep = np.flatnonzero(w == 32)
    phrase_ends = np.flatnonzero(phrase_data[sep] == 10)  # per phrase: its end among the separators
    empty = np.diff(phrase_offsets) == 1
    n_words = np.diff(np.concatenate([[-1], phrase_ends])) - empty
    word_offsets = np.concatenate([[0], sep + 1])
    words = _binary(pa, w, word_offsets)
    if empty.any():
        words = words.filter(pa.array(np.diff(word_offsets) > 1))
    wenc = pc.dictionary_encode(words)
    flat_words = wenc.indices.to_numpy(zero_copy_only=False).astype(np.int32)
    offsets = np.zeros(len(phrase_offsets), dtype=np.int64)
    np.cumsum(n_words, out=offsets[1:])
    if offsets[-1] != len(flat_words):
        raise not_plain  # cannot happen for plain phrases; the general path decides
    np.save(out / "para_phrase_offsets.npy", offsets)
    np.save(out / "para_phrase_tokens.npy", flat_words)
    vocab, _ = _values(wenc.dictionary) if len(wenc.dictionary) else (np.zeros(0, dtype=np.uint8), None)
    # each word ends with one space and has none inside: spaces become the line breaks
    (out / "para_vocab.txt").write_bytes(np.where(vocab == 32, np.uint8(10), vocab)[:-1].tobytes())

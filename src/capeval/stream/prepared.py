"""Chunks as the df pass validated and tokenized them, kept in the run folder for the score
pass, and the identity of a file input that lets a resumed run reuse them."""
from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable, Iterable
from pathlib import Path

from . import codec
from .readers import Chunk
from .store import RunStore, allow

# What a prepared chunk or a spilled chunk of rows may hold (lists of strings and ints).
allow("prep", Chunk)
allow("input", Chunk)


def content_digest(source) -> str | None:
    """Identity of a file input: the SHA-256 of its bytes (read through the file door), so an
    input edited with its size and modification time kept is another input. None for an
    iterable (read once: nothing to resume from)."""
    if not isinstance(source, (str, Path)):
        return None
    from ..guards import open_regular

    h = hashlib.sha256()
    with open_regular(source, "input file", 1 << 62) as f:
        while block := f.read(1 << 20):
            h.update(block)
    return f"sha256:{h.hexdigest()}"


class Prepared:
    """Chunks as the df pass validated and tokenized them, saved in the run folder (one file
    each, ``prep-NNNNNNN.bin``), so the score pass reads neither the input nor the tokenizer
    again. Keyed by the run's fingerprint and the input file's content digest (a resumed run
    reuses them with the df); a missing or damaged file sends the score pass back to the input."""

    def __init__(self, store: RunStore, source_id: str | None):
        import uuid

        self.store = store
        self.failed = False
        origin = source_id if source_id is not None else uuid.uuid4().hex  # an iterable: this run only
        self.key = hashlib.sha256(f"{store.fingerprint}|prepared|{origin}".encode()).hexdigest()

    def save(self, chunk: Chunk) -> None:
        if self.failed:
            return
        try:
            self.store.save(chunk.index, self.key, chunk, kind="prep")
        except (OSError, codec.Unstorable):
            # no room for the cache (some 1.7x the input), or ids of a type the format does not
            # hold (an iterable's): the score pass reads the input
            self.failed = True

    def load(self, index: int) -> Chunk | None:
        obj = self.store.load(index, self.key, kind="prep")
        return obj if isinstance(obj, Chunk) else None

    def read(self, n_chunks: int, from_input: Callable[[], Iterable[Chunk]]):
        for i in range(n_chunks):
            c = self.load(i)
            if c is None:
                yield from itertools.islice(from_input(), i, None)
                return
            yield c

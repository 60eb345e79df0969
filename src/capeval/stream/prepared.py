"""Chunks as the df pass validated and tokenized them, kept in the run folder for the score
pass, and the identity of a file input that lets a resumed run reuse them."""
from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable, Iterable
from pathlib import Path

from .readers import Chunk
from .store import RunStore


def source_id(source) -> str | None:
    """Identity of a file input for reusing a saved df on resume (path, size, mtime)."""
    if isinstance(source, (str, Path)):
        st = Path(source).stat()
        return f"{Path(source).resolve()}|{st.st_size}|{st.st_mtime_ns}"
    return None


class Prepared:
    """Chunks as the df pass validated and tokenized them, saved in the run folder (one file
    each, ``prep-NNNNNNN.bin``), so the score pass reads neither the input nor the tokenizer
    again. Keyed by the run's fingerprint and the input file's identity (a resumed run reuses
    them with the df); a missing or damaged file sends the score pass back to the input."""

    _FIELDS = ("index", "start", "ids", "cands", "refs", "lines", "digest", "tokens", "images")

    def __init__(self, store: RunStore, source_id: str | None):
        import sys
        import uuid

        self.store = store
        self.failed = False
        origin = source_id if source_id is not None else uuid.uuid4().hex  # an iterable: this run only
        # marshal's format is this Python's: another Python does not read these files.
        self.key = hashlib.sha256(f"{store.fingerprint}|prepared|{origin}|{sys.version}".encode()).hexdigest()

    def save(self, chunk: Chunk) -> None:
        import marshal

        if self.failed:
            return
        obj: bytes | Chunk
        try:  # lists of str and int: marshal, some 3x faster than pickle both ways
            obj = marshal.dumps(tuple(getattr(chunk, f) for f in self._FIELDS))
        except ValueError:  # ids of other types (an iterable's): the Chunk itself
            obj = chunk
        try:
            self.store.save(chunk.index, self.key, obj, kind="prep")
        except OSError:  # no room for the cache (some 1.7x the input): the score pass reads the input
            self.failed = True

    def load(self, index: int) -> Chunk | None:
        import marshal

        obj = self.store.load(index, self.key, kind="prep")
        if isinstance(obj, bytes):
            return Chunk(**dict(zip(self._FIELDS, marshal.loads(obj))))
        return obj

    def read(self, n_chunks: int, from_input: Callable[[], Iterable[Chunk]]):
        for i in range(n_chunks):
            c = self.load(i)
            if c is None:
                yield from itertools.islice(from_input(), i, None)
                return
            yield c

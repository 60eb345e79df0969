"""Duplicate ids across a streamed input in 8 bytes per row: 64-bit hashes of each id's JSON
text, sorted at the end; a repeated hash is confirmed (or dismissed) by reading the ids again."""
from __future__ import annotations

import json
from collections.abc import Iterable

import numpy as np

from ..errors import InputError


def id_hashes(ids) -> np.ndarray:
    """A 64-bit hash of each id's JSON text (``hash``: this process only, as the tracker is).
    str and int ids are written as ``json.dumps`` writes them, by its own encoder."""
    if all(type(k) is str for k in ids):
        from json.encoder import encode_basestring_ascii

        texts = map(encode_basestring_ascii, ids)
    elif all(type(k) is int for k in ids):
        texts = map(int.__repr__, ids)
    else:
        texts = map(json.dumps, ids)
    return np.fromiter(map(hash, texts), dtype=np.int64, count=len(ids))


class IdTracker:
    """Duplicate ids across the whole input in 8 bytes per row: 64-bit hashes, sorted at the
    end; a repeated hash is confirmed (or dismissed) by reading the ids again exactly."""

    def __init__(self) -> None:
        self.parts: list[np.ndarray] = []

    def add(self, ids) -> None:
        if ids is None:
            return
        self.parts.append(id_hashes(ids))

    def suspects(self) -> set[int]:
        if not self.parts:
            return set()
        h = np.sort(np.concatenate(self.parts))
        self.parts = []
        return set(h[1:][h[1:] == h[:-1]].tolist())


def duplicate_error(source, rows: Iterable[tuple], suspects: set[int]) -> InputError | None:
    seen: dict = {}
    for i, (line, key, _c, _r) in enumerate(rows):
        if int(id_hashes([key])[0]) not in suspects:
            continue
        where = line if line is not None else i
        if key in seen:
            if line is not None:
                return InputError(f"{source}:{line}: duplicate id {key!r} (first on line {seen[key]})")
            return InputError(f"duplicate id {key!r} at items {seen[key]} and {i}")
        seen[key] = where
    return None

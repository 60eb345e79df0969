"""The on-disk cache of CLIP image embeddings: shards of ``(sha256 of the image bytes, embedding)``.

One :class:`capeval.guards.CacheFolder` per model: each shard is named by the digest of its own
bytes, so reading it back checks it (a flipped byte, a truncated write, or a shard rewritten as
a valid file holding other values no longer matches its name), and the folder's manifest lists
the shards that belong to it, so a second, self-consistently named shard dropped beside the
real one is foreign. Such shards are deleted with a warning and their images embedded again
(self-healing), instead of failing every later run or changing CLIP-S silently. Two listed
shards that give one image different embeddings are both dropped: which is right cannot be
told, so neither is used. Shards of older versions (no manifest) are dropped the same way.
"""
from __future__ import annotations

import io
import warnings
from pathlib import Path

import numpy as np

from ..guards import CacheDamaged, CacheFolder, cache_entry_name

__all__ = ["CacheDamaged", "load_shards", "shard_bytes", "write_shard"]


def _note(message: str) -> None:
    warnings.warn(message, CacheDamaged, stacklevel=5)


def _cache(folder: Path) -> CacheFolder:
    from ..outputs import atomic_write

    return CacheFolder(folder, ".npz", atomic_write, _note)


def _decode(data: bytes) -> tuple[list[str], np.ndarray]:
    with np.load(io.BytesIO(data), allow_pickle=False) as z:
        keys, emb = z["sha256"], z["emb"]
    if keys.ndim != 1 or emb.ndim != 2 or len(keys) != len(emb) or emb.dtype.kind != "f" or keys.dtype.kind != "U":
        raise ValueError(f"arrays of shapes {keys.shape} and {emb.shape}")
    return keys.tolist(), emb


def load_shards(folder: Path) -> dict[str, np.ndarray]:
    """Every good shard's embeddings by image digest; damaged, foreign and conflicting shards
    are dropped, with a note."""
    cache = _cache(Path(folder))
    shards: list[tuple[Path, list[str], np.ndarray]] = []
    for _, path in cache.entries():
        data = cache.read(path)
        if data is None:
            continue
        try:
            keys, emb = _decode(data)
        except Exception as e:  # noqa: BLE001 - any way a shard may fail to parse: drop it
            cache.drop(path, f"is unreadable ({type(e).__name__}: {e})")
            continue
        shards.append((path, keys, emb))
    first: dict[str, tuple[Path, bytes]] = {}
    conflicting: set[Path] = set()
    for path, keys, emb in shards:
        for k, row in zip(keys, emb):
            seen = first.setdefault(k, (path, row.tobytes()))
            if seen[1] != row.tobytes():
                conflicting |= {seen[0], path}
    for path in sorted(conflicting):
        cache.drop(path, "gives an image an embedding another shard gives otherwise (duplicate key)")
    table: dict[str, np.ndarray] = {}
    for path, keys, emb in shards:
        if path not in conflicting:
            table.update(zip(keys, emb))
    return table


def shard_bytes(new: dict[str, np.ndarray]) -> tuple[str, bytes]:
    """The file name and bytes of a shard holding ``new``."""
    buf = io.BytesIO()
    np.savez(buf, sha256=np.array(list(new)), emb=np.stack(list(new.values())))
    data = buf.getvalue()
    return cache_entry_name(data, ".npz"), data


def write_shard(folder: Path, new: dict[str, np.ndarray]) -> Path | None:
    """Add a shard holding ``new`` to the cache ``folder``; None when it cannot be written (a
    read-only cache root only costs recomputation next run)."""
    return _cache(Path(folder)).add(shard_bytes(new)[1])

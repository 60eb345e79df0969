"""The on-disk cache of CLIP image embeddings: shards of ``(sha256 of the image bytes, embedding)``.

Each shard is named by the digest of its own bytes (:func:`capeval.doors.cache_entry_name`), so
reading it back checks it: a flipped byte, a truncated write, or a shard rewritten as a valid
file holding other values no longer matches its name. Such a shard is deleted with a warning
and its images are embedded again (self-healing), instead of failing every later run or
changing CLIP-S silently. Shards of older versions (named otherwise) are dropped the same way.
"""
from __future__ import annotations

import io
import warnings
from pathlib import Path

import numpy as np

from ..doors import cache_entry_name, read_cache_entry


class CacheDamaged(UserWarning):
    """A cache entry did not match its digest or could not be read; it was dropped."""


def _note(message: str) -> None:
    warnings.warn(message, CacheDamaged, stacklevel=4)


def load_shards(folder: Path) -> dict[str, np.ndarray]:
    """Every good shard's embeddings by image digest; damaged shards are dropped, with a note."""
    table: dict[str, np.ndarray] = {}
    for shard in sorted(folder.glob("*.npz")) if folder.is_dir() else ():
        data = read_cache_entry(shard, _note)
        if data is None:
            continue
        try:
            with np.load(io.BytesIO(data), allow_pickle=False) as z:
                keys, emb = z["sha256"], z["emb"]
                if keys.ndim != 1 or emb.ndim != 2 or len(keys) != len(emb) or emb.dtype.kind != "f" \
                        or keys.dtype.kind != "U":
                    raise ValueError(f"arrays of shapes {keys.shape} and {emb.shape}")
                table.update(zip(keys.tolist(), emb))
        except Exception as e:  # noqa: BLE001 - any way a shard may fail to parse: drop it
            shard.unlink(missing_ok=True)
            _note(f"cache entry {shard} is unreadable ({type(e).__name__}: {e}); dropped, its values are "
                  "recomputed")
    return table


def shard_bytes(new: dict[str, np.ndarray]) -> tuple[str, bytes]:
    """The file name and bytes of a shard holding ``new``."""
    buf = io.BytesIO()
    np.savez(buf, sha256=np.array(list(new)), emb=np.stack(list(new.values())))
    data = buf.getvalue()
    return cache_entry_name(data, ".npz"), data

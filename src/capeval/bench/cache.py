"""Content-addressed cache of per-unit metric scores (.npz files).

Key = sha256 of the scored texts (candidates and their references, in order), the output
name, the family's variant, tokenizer, family options and the capeval version. Anything
that can change a number is in the key, so a hit is always safe to reuse and a new capeval
version simply misses. Files are written atomically; a corrupt file counts as a miss.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._version import __version__

ENV = "CAPEVAL_CACHE"


def default_cache_dir() -> Path:
    env = os.environ.get(ENV)
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME")
    return (Path(base).expanduser() if base else Path.home() / ".cache") / "capeval"


def corpus_digest(candidates: Sequence[str], references: Sequence[Sequence[str]]) -> str:
    """sha256 over the texts with unambiguous separators (JSON), order-sensitive."""
    h = hashlib.sha256()
    h.update(json.dumps(list(candidates), ensure_ascii=False).encode("utf-8"))
    h.update(b"\x00")
    h.update(json.dumps([list(r) for r in references], ensure_ascii=False).encode("utf-8"))
    return h.hexdigest()


def score_key(corpus: str, metric: str, *, variant: str, tokenizer: str, options: dict[str, Any] | None,
              allow_empty: bool = False) -> str:
    payload = {
        "corpus": corpus, "metric": metric, "variant": variant, "tokenizer": tokenizer,
        "options": options or {}, "allow_empty": allow_empty, "capeval": __version__,
    }
    blob = json.dumps(payload, sort_keys=True, default=str).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()


@dataclass(frozen=True)
class CachedScores:
    metric: str
    per_unit: np.ndarray
    corpus: float
    signature: str


class ScoreCache:
    """``get``/``put`` per-unit scores under ``directory/scores/<k[:2]>/<k>.npz``.

    ``enabled=False`` turns every ``get`` into a miss and every ``put`` into a no-op
    (``--no-cache``), so callers need no special case.
    """

    def __init__(self, directory: Path | str | None = None, *, enabled: bool = True):
        self.directory = Path(directory).expanduser() if directory is not None else default_cache_dir()
        self.enabled = enabled
        self.hits = 0
        self.misses = 0

    def _path(self, key: str) -> Path:
        return self.directory / "scores" / key[:2] / f"{key}.npz"

    def get(self, key: str) -> CachedScores | None:
        if not self.enabled:
            self.misses += 1
            return None
        path = self._path(key)
        try:
            with np.load(path, allow_pickle=False) as z:
                found = CachedScores(str(z["metric"]), np.array(z["per_unit"], dtype=float),
                                     float(z["corpus"]), str(z["signature"]))
        except (OSError, KeyError, ValueError):
            # Missing, truncated or foreign file: recompute rather than fail a benchmark.
            self.misses += 1
            return None
        self.hits += 1
        return found

    def put(self, key: str, scores: CachedScores) -> None:
        if not self.enabled:
            return
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                np.savez(fh, metric=np.array(scores.metric), per_unit=np.asarray(scores.per_unit, dtype=float),
                         corpus=np.array(scores.corpus, dtype=float), signature=np.array(scores.signature))
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

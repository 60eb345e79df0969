"""Content-addressed cache of per-unit metric scores (.npz files).

Key = sha256 of the scored texts (candidates and their references, in order), the output
name, the family's variant, tokenizer, family options, the capeval version and the family's
cache revision (bumped by a fix that changes numbers under the same signature). Anything
that can change a number is in the key, so a hit is always safe to reuse and a new capeval
version simply misses. Files are written atomically. Every file carries its own key and a
sha256 over its contents, checked on read: a truncated, empty, bit-flipped or foreign file, or
one copied under another key, counts as a miss and is recomputed (and overwritten).
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._version import __version__
from ..outputs import atomic_open
from ..paths import cache_root


def corpus_digest(candidates: Sequence[str], references: Sequence[Sequence[str]]) -> str:
    """sha256 over the texts with unambiguous separators (JSON), order-sensitive."""
    h = hashlib.sha256()
    h.update(json.dumps(list(candidates), ensure_ascii=False).encode("utf-8"))
    h.update(b"\x00")
    h.update(json.dumps([list(r) for r in references], ensure_ascii=False).encode("utf-8"))
    return h.hexdigest()


def images_digest(paths: Sequence[str], hashes: dict[str, str]) -> str:
    """sha256 over the content hashes of the images, in order. ``hashes`` maps a path to its
    file's hash and is filled as files are read, so each image is read once per run."""
    from ..digests import sha256_file

    h = hashlib.sha256()
    for p in paths:
        d = hashes.get(p)
        if d is None:
            d = hashes[p] = sha256_file(p)
        h.update(d.encode("ascii"))
        h.update(b"\x00")
    return h.hexdigest()


def resource_state(names: Sequence[str] | None = None) -> dict[str, Any]:
    """Which file each external resource resolves to now: path, size, mtime, ctime and inode
    (for a directory, also of the files directly in it). Part of every key, so pointing e.g.
    ``CAPEVAL_GLOVE_6B_50D`` at other vectors, or replacing a model directory, misses. The
    ctime is there because a file rewritten in place with its size and mtime put back
    (``touch -r``) keeps both, while the kernel sets its ctime on every change; hashing the
    contents (gigabytes of model weights) on every run would cost more than the scores.
    ``names`` restricts it to those resources (a family's ``resources_for``); ``None`` means
    every registered one."""
    from ..errors import CapevalError
    from ..resources.resolver import get_spec, list_resources, resolve

    def ident(p: Path) -> list:
        st = p.stat()
        return [str(p.resolve()), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]

    out: dict[str, Any] = {}
    specs = list_resources() if names is None else [get_spec(n) for n in sorted(set(names))]
    for spec in specs:
        try:
            path = resolve(spec.name)
        except CapevalError:
            out[spec.name] = None
            continue
        try:
            entry = [ident(path)]
            if path.is_dir():
                entry += [ident(f) for f in sorted(path.iterdir()) if f.is_file()]
        except OSError as exc:
            entry = [str(path), f"unreadable: {exc}"]
        out[spec.name] = entry
    return out


def score_key(corpus: str, metric: str, *, variant: str, tokenizer: str, options: dict[str, Any] | None,
              allow_empty: bool = False, resources: dict[str, Any] | None = None, revision: int = 0,
              code: str | None = None) -> str:
    """``code`` is the family's code digest (:mod:`capeval.service.codehash`): any edit to the
    code its numbers come from, its own or a family's it reads, changes the key. ``revision``
    is the family's ``cache_revision``, for changes that are not in the code; revision 0 adds
    nothing to the payload."""
    payload = {
        "corpus": corpus, "metric": metric, "variant": variant, "tokenizer": tokenizer,
        "options": options or {}, "allow_empty": allow_empty, "capeval": __version__,
        "resources": resources,
    }
    if revision:
        payload["revision"] = int(revision)
    if code is not None:
        payload["code"] = code
    blob = json.dumps(payload, sort_keys=True, default=str).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()


@dataclass(frozen=True)
class CachedScores:
    metric: str
    per_unit: np.ndarray
    corpus: float
    signature: str


def _content_digest(key: str, metric: str, per_unit: np.ndarray, corpus: float, signature: str) -> str:
    h = hashlib.sha256()
    for part in (key, metric, signature, repr(float(corpus))):
        h.update(part.encode("utf-8"))
        h.update(b"\x00")
    h.update(np.ascontiguousarray(per_unit, dtype="<f8").tobytes())
    return h.hexdigest()


class ScoreCache:
    """``get``/``put`` per-unit scores under ``directory/scores/<k[:2]>/<k>.npz``.

    ``enabled=False`` turns every ``get`` into a miss and every ``put`` into a no-op
    (``--no-cache``), so callers need no special case.
    """

    def __init__(self, directory: Path | str | None = None, *, enabled: bool = True):
        self.directory = Path(directory).expanduser() if directory is not None else cache_root()
        self.enabled = enabled
        self.hits = 0
        self.misses = 0
        self.rejected = 0  # files present but failing their check (recomputed and overwritten)

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
                stored_key, stored_digest = str(z["key"]), str(z["digest"])
        except FileNotFoundError:
            self.misses += 1
            return None
        except Exception:  # noqa: BLE001 - truncated, empty, bit-flipped (BadZipFile, zlib, EOF...) or foreign
            self.misses += 1
            self.rejected += 1
            return None
        if stored_key != key or stored_digest != _content_digest(key, found.metric, found.per_unit,
                                                                  found.corpus, found.signature):
            self.misses += 1  # copied under another key, or altered: recompute
            self.rejected += 1
            return None
        self.hits += 1
        return found

    def put(self, key: str, scores: CachedScores) -> None:
        if not self.enabled:
            return
        per_unit = np.asarray(scores.per_unit, dtype=float)
        digest = _content_digest(key, scores.metric, per_unit, float(scores.corpus), scores.signature)
        with atomic_open(self._path(key), "wb") as fh:
            np.savez(fh, metric=np.array(scores.metric), per_unit=per_unit,
                     corpus=np.array(scores.corpus, dtype=float), signature=np.array(scores.signature),
                     key=np.array(key), digest=np.array(digest))

"""The checksum manifest of a converted METEOR cache directory.

A converted cache is read at every METEOR run and never re-derived, so a damaged file (a
truncated word list, an edited ``small.json``) would otherwise give wrong scores silently
and for good. The conversion therefore ends by writing ``manifest.json``: the size and
SHA-256 of every file it wrote. A reader checks the directory against it before use
(:func:`verify`; hashing the 152 MB takes about 0.1 s of CPU, on two threads, done once per
process and directory by :mod:`.resources`), and the manifest's own digest names the conversion in score-cache keys.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ...digests import sha256_file

MANIFEST = "manifest.json"


class Damaged(Exception):
    """The directory does not match its manifest; the message names the file."""


def _sha256s(paths: list[Path]) -> list[str]:
    """The files' SHA-256, two at a time: hashlib releases the GIL on large blocks."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(2) as pool:
        return list(pool.map(sha256_file, paths))


def write(directory: Path) -> str:
    """Record every file of ``directory`` (the manifest itself aside); return its digest."""
    paths = [p for p in sorted(directory.iterdir()) if p.is_file() and p.name != MANIFEST]
    files = {p.name: {"size": p.stat().st_size, "sha256": h} for p, h in zip(paths, _sha256s(paths))}
    blob = json.dumps({"files": files}, sort_keys=True, indent=1).encode("utf-8")
    (directory / MANIFEST).write_bytes(blob)
    return hashlib.sha256(blob).hexdigest()


def verify(directory: Path, required: tuple[str, ...]) -> str:
    """The manifest's digest, once every file it lists (``required`` among them) has its
    recorded size and SHA-256; :class:`Damaged` otherwise."""
    path = directory / MANIFEST
    try:
        blob = path.read_bytes()
    except FileNotFoundError:
        raise Damaged(f"{path} is missing (the conversion did not finish, or predates checksums)") from None
    try:
        files = json.loads(blob.decode("utf-8"))["files"]
        entries = [(name, int(e["size"]), str(e["sha256"])) for name, e in files.items()]
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise Damaged(f"{path} is unreadable ({type(e).__name__}: {e})") from None
    missing = [name for name in required if name not in files]
    if missing:
        raise Damaged(f"{path} lists no {', '.join(missing)}")
    for name, size, _ in entries:
        f = directory / name
        try:
            actual = f.stat().st_size
        except OSError as e:
            raise Damaged(f"{f}: {e.strerror or e}") from None
        if actual != size:  # cheap, and catches truncation before any hashing
            raise Damaged(f"{f} has {actual} bytes where the conversion wrote {size}")
    try:
        actual_digests = _sha256s([directory / name for name, _, _ in entries])
    except OSError as e:
        raise Damaged(f"{directory}: {e.strerror or e}") from None
    for (name, _, digest), actual in zip(entries, actual_digests):
        if actual != digest:
            raise Damaged(f"{directory / name} differs from what the conversion wrote (SHA-256 mismatch)")
    return hashlib.sha256(blob).hexdigest()

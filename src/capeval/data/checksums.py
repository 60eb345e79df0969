"""SHA-256 manifests: the team's per-folder ``SHA256SUMS`` and the packaged copy of them
(``manifest.json``: checksums only, no data). Verification and download trust only the
packaged copy; on-disk ``SHA256SUMS`` files are read only to refresh it (:func:`build_manifest`)."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path, PurePosixPath

from ..digests import sha256_file
from ..errors import InputError

MANIFEST = Path(__file__).with_name("manifest.json")
SOURCES = Path(__file__).with_name("sources.json")
SUMS_NAME = "SHA256SUMS"



def safe_relpath(rel: str, where: str) -> str:
    """A manifest path as a clean relative POSIX path; refuses anything that could escape."""
    p = PurePosixPath(rel.strip())
    if p.parts and p.parts[0] == ".":
        p = PurePosixPath(*p.parts[1:])
    if not p.parts or p.is_absolute() or ".." in p.parts or "\\" in rel or ":" in p.parts[0]:
        raise InputError(f"{where}: unsafe or empty path {rel!r}")
    return p.as_posix()


def parse_sums(text: str, where: str) -> dict[str, str]:
    """``<sha256>  <path>`` lines (GNU coreutils format, optional ``*`` binary marker)."""
    out: dict[str, str] = {}
    for i, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        digest, sep, rel = line.strip().partition(" ")
        rel = rel.strip().lstrip("*")
        if not sep or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest.lower()):
            raise InputError(f"{where} line {i}: not '<sha256>  <path>': {line[:80]!r}")
        rel = safe_relpath(rel, f"{where} line {i}")
        if rel in out:
            raise InputError(f"{where} line {i}: duplicate entry for {rel}")
        out[rel] = digest.lower()
    return out


@lru_cache(maxsize=1)
def packaged_manifest() -> dict[str, dict[str, str]]:
    """folder → {relative path → sha256}, as shipped with capeval."""
    data = json.loads(MANIFEST.read_text(encoding="utf-8"))
    return {folder: dict(entry["files"]) for folder, entry in data["folders"].items()}


@lru_cache(maxsize=1)
def packaged_sources() -> dict[str, dict[str, str]]:
    """folder → {relative path → "owner/repo@commit:path"} for files with a public origin."""
    return json.loads(SOURCES.read_text(encoding="utf-8"))["sources"]


def folder_sums(root: Path, folder: str) -> dict[str, str] | None:
    """The packaged checksums of ``folder``, or None for a folder capeval does not know.

    The packaged manifest is the only trust root: a ``SHA256SUMS`` on disk travels with the
    data, so whoever can replace the data can replace it too, and it is never consulted.
    ``root`` is accepted for symmetry with :func:`check_folder`.
    """
    return packaged_manifest().get(folder)


@dataclass
class FolderCheck:
    folder: str
    source: str  # "manifest" (packaged checksums) | "none" (folder unknown to capeval)
    ok: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    mismatch: list[str] = field(default_factory=list)

    @property
    def status(self) -> str:
        if self.source == "none":
            return "no packaged checksums"
        if self.mismatch:
            return f"MISMATCH ({len(self.mismatch)}: {', '.join(self.mismatch[:3])})"
        if self.missing:
            return f"missing {len(self.missing)} of {len(self.missing) + len(self.ok)}"
        return "ok"


def check_folder(root: Path, folder: str, *, hash_files: bool = True, _cache: dict | None = None) -> FolderCheck:
    """Compare the files of ``root/folder`` with the packaged checksums; ``hash_files=False``
    only checks presence."""
    sums = folder_sums(root, folder)
    source = "manifest" if sums else "none"
    res = FolderCheck(folder, source)
    for rel, digest in sorted((sums or {}).items()):
        p = root / folder / rel
        if not p.is_file():
            res.missing.append(rel)
            continue
        if hash_files:
            key = str(p)
            got = _cache.get(key) if _cache is not None else None
            if got is None:
                got = sha256_file(p)
                if _cache is not None:
                    _cache[key] = got
            if got != digest:
                res.mismatch.append(rel)
                continue
        res.ok.append(rel)
    return res


def build_manifest(root: Path, folders: list[str]) -> dict:
    """The manifest.json content from the folders' SHA256SUMS (used to refresh the package copy)."""
    out = {}
    for folder in folders:
        sums = root / folder / SUMS_NAME
        if not sums.exists():
            raise InputError(f"{sums} not found")
        out[folder] = {"files": parse_sums(sums.read_text(encoding="utf-8"), str(sums))}
    return {"format": 1, "note": "sha256 of the team data layout (from each folder's SHA256SUMS); no data", "folders": out}

"""Check a benchmark's data files against the packaged checksums before it is run.

A benchmark's number is only the published one on the published data: a copy whose ratings
were edited gives another correlation under the same signature. So ``capeval bench`` (and
:func:`capeval.metaeval.runner.run_benchmark`) refuses files that differ from the packaged
manifest (:mod:`.checksums`), unless told to run on them, and then says so in the signature.

Hashing is cheap (the team data is about 40 MB), but a run should not pay it every time: a
file's digest is remembered under ``$CAPEVAL_CACHE/data-checks/`` by its path, size,
modification and change times and inode, so any write to it (which moves its ctime, which no
tool can set back) makes it hashed again. The expected digests always come from the package,
never from this record.
"""
from __future__ import annotations

import hashlib
import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from ..digests import sha256_file
from ..errors import ResourceDamaged
from ..paths import cache_root
from .checksums import folder_sums
from .registry import get_spec

_lock = threading.Lock()
_memo: dict[tuple, str] = {}


@dataclass(frozen=True)
class Modified:
    path: Path
    expected: str
    actual: str


def _stat_key(p: Path) -> tuple:
    st = p.stat()
    return (str(p.resolve()), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def _record_path() -> Path:
    return cache_root() / "data-checks" / "sha256.json"


def _read_record() -> dict[str, str]:
    try:
        got = json.loads(_record_path().read_text(encoding="utf-8"))
        return {str(k): str(v) for k, v in got.items()} if isinstance(got, dict) else {}
    except (OSError, ValueError):
        return {}  # a missing or damaged record only costs hashing again


def _write_record(record: dict[str, str]) -> None:
    path = _record_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}-{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps(record, sort_keys=True), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only cache: verification still happens, only not remembered


def _key_text(key: tuple) -> str:
    return hashlib.sha256(json.dumps(key).encode("utf-8")).hexdigest()


def file_digests(paths: list[Path]) -> dict[Path, str]:
    """SHA-256 of each file, hashed only when it changed since it was last hashed."""
    out: dict[Path, str] = {}
    with _lock:
        record = None
        changed = False
        for p in paths:
            key = _stat_key(p)
            got = _memo.get(key)
            if got is None:
                if record is None:
                    record = _read_record()
                kt = _key_text(key)
                got = record.get(kt)
                if got is None:
                    got = record[kt] = sha256_file(p)
                    changed = True
                _memo[key] = got
            out[p] = got
        if changed and record is not None:
            _write_record(record)
    return out


def modified_files(name: str, root: Path) -> list[Modified]:
    """The files of benchmark ``name`` under ``root`` whose content differs from the packaged
    checksums (files that are absent are the loader's to report)."""
    spec = get_spec(name)
    expected: dict[Path, str] = {}
    for folder in (spec.folder, *spec.needs):
        for rel, digest in (folder_sums(root, folder) or {}).items():
            p = root / folder / rel
            if p.is_file():
                expected[p] = digest
    actual = file_digests(sorted(expected))
    return [Modified(p, expected[p], actual[p]) for p in sorted(expected) if actual[p] != expected[p]]


def check_benchmark_data(name: str, root: Path | str | None = None, *,
                         allow_modified: bool = False) -> list[Modified]:
    """Refuse (:class:`ResourceDamaged`, naming the files) a benchmark whose data under
    ``root`` (default: ``data_root()``) differ from the packaged checksums; with
    ``allow_modified``, return them (the caller marks its signature ``data:modified``)."""
    from ._common import resolve_root
    from .registry import specs

    if name not in {s.name for s in specs()}:
        return []  # not a packaged benchmark: nothing to check against (loading names the known ones)
    bad = modified_files(name, resolve_root(root, get_spec(name)))
    if bad and not allow_modified:
        listed = "; ".join(f"{m.path} (sha256 {m.actual[:12]}…, packaged {m.expected[:12]}…)" for m in bad[:5])
        more = f" and {len(bad) - 5} more" if len(bad) > 5 else ""
        raise ResourceDamaged(
            f"{name}: {len(bad)} data file(s) differ from capeval's packaged checksums: {listed}{more}. "
            "Its numbers would not be the published ones. Restore the files (`capeval data verify` lists "
            "them), or pass --allow-modified-data (allow_modified_data=True) to run on them; the benchmark "
            "signature then says data:modified."
        )
    return bad

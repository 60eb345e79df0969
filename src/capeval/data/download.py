"""``capeval data download``: fetch the benchmark files, verify every file against the
packaged SHA-256 manifest, and extract archives without letting any member escape the
target directory. Nothing here runs in tests against the internet.

Two sources: the public origin of each file (``sources.json``: GitHub repository, commit
and path, pinned), or a mirror of the team data layout given as ``base_url``
(``<base-url>/<folder>/<path>``, or one archive per folder). A few files were repaired or
derived by the team and have no public origin; they need a mirror.
"""
from __future__ import annotations

import os
import shutil
import stat
import tarfile
import tempfile
import urllib.parse
import urllib.request
import uuid
import zipfile
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from ..errors import ExternalToolError, InputError
from ..digests import sha256_file
from ..outputs import atomic_write
from .checksums import SUMS_NAME, packaged_manifest, packaged_sources, safe_relpath
from .registry import _SPECS

ARCHIVE_EXTS = (".tar.gz", ".tgz", ".tar.xz", ".tar.bz2", ".tar", ".zip")
# Limits on what a server or an archive may make us write. The largest team data file is
# ~4 MB and the largest folder ~17 MB, so these leave a wide margin while stopping an endless
# stream or a decompression bomb long before a disk fills.
MAX_DOWNLOAD_BYTES = 256 << 20   # one file or one archive, as sent
MAX_UNPACKED_BYTES = 256 << 20   # all members of one archive, as declared and as written
MAX_RATIO = 100                  # unpacked / packed size of an archive
MAX_SECONDS = 600.0              # wall-clock bound for one download (a 1-byte drip never times out per read)
_SCHEMES = ("http", "https", "file")
GITHUB_RAW = "https://raw.githubusercontent.com"


def public_url(folder: str, rel: str) -> str | None:
    """The pinned raw-GitHub URL of a file, or None for team-repaired/derived files."""
    ref = packaged_sources().get(folder, {}).get(rel)
    if ref is None:
        return None
    repo_commit, path = ref.split(":", 1)
    repo, commit = repo_commit.split("@")
    return f"{GITHUB_RAW}/{repo}/{commit}/" + "/".join(urllib.parse.quote(p) for p in path.split("/"))


def folders_for(name: str | None) -> list[str]:
    """Folders a benchmark (or a folder name, or everything when None) needs."""
    manifest = packaged_manifest()
    if name is None:
        return sorted(manifest)
    if name in manifest:
        return [name]
    if name in _SPECS:
        spec = _SPECS[name]
        return [spec.folder, *spec.needs]
    raise InputError(
        f"unknown dataset {name!r}; benchmarks: {', '.join(sorted(_SPECS))}; folders: {', '.join(sorted(manifest))}"
    )


def _url(base_url: str, *parts: str) -> str:
    scheme = urllib.parse.urlparse(base_url).scheme
    if scheme not in _SCHEMES:
        raise InputError(f"--base-url {base_url!r}: scheme must be one of {', '.join(_SCHEMES)}")
    return base_url.rstrip("/") + "/" + "/".join(urllib.parse.quote(p) for p in parts)


def _fetch(url: str, dest: Path, timeout: float, *, max_bytes: int | None = None,
           max_seconds: float | None = None) -> str:
    """Stream ``url`` into ``dest`` (via a temporary file), returning its sha256.

    ``timeout`` bounds each socket read; ``max_seconds`` the whole download and ``max_bytes``
    its size (defaults: :data:`MAX_SECONDS`, :data:`MAX_DOWNLOAD_BYTES`); a declared
    Content-Length over the limit is refused before reading.
    """
    import hashlib
    import http.client

    from ._deadline import Deadline

    max_bytes = MAX_DOWNLOAD_BYTES if max_bytes is None else max_bytes
    max_seconds = MAX_SECONDS if max_seconds is None else max_seconds
    dest.parent.mkdir(parents=True, exist_ok=True)
    h = hashlib.sha256()
    # Not mkstemp: it creates 0600 files, and a downloaded data file should be as readable as
    # any file the user creates. os.open with 0o666 lets the kernel apply the umask (reading
    # the umask in Python would need os.umask, which changes it process-wide: not thread-safe).
    tmp = str(dest.parent / f".{dest.name}.{uuid.uuid4().hex}.part")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    # The deadline covers the whole exchange: connecting, the status line and headers (a
    # server may drip them too), and the body.
    deadline = Deadline(max_seconds)

    def late(got: int) -> ExternalToolError:
        return ExternalToolError(f"download of {url} stopped: not finished within {max_seconds:g} s "
                                 f"({got} bytes received)")

    got = 0
    try:
        with os.fdopen(fd, "wb") as out:
            try:
                with deadline.opener().open(url, timeout=timeout) as resp:  # noqa: S310 (scheme checked)
                    declared = resp.headers.get("Content-Length")
                    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
                        raise ExternalToolError(f"download of {url} refused: it declares {int(declared)} bytes, "
                                                f"over the {max_bytes}-byte limit")
                    # read1 returns after one socket read, so the deadline is checked even when
                    # a server drips a byte at a time.
                    while block := resp.read1(1 << 16):
                        got += len(block)
                        if got > max_bytes:
                            raise ExternalToolError(f"download of {url} stopped: over the {max_bytes}-byte limit")
                        if deadline.passed():
                            raise late(got)
                        h.update(block)
                        out.write(block)
                    if deadline.expired.is_set():  # the watchdog ended the body early
                        raise late(got)
            except (OSError, http.client.HTTPException) as exc:  # URLError, HTTPError, socket errors
                if deadline.expired.is_set():
                    raise late(got) from exc
                raise ExternalToolError(f"download of {url} failed: {exc}") from exc
        os.replace(tmp, dest)
    finally:
        deadline.cancel()
        if os.path.exists(tmp):
            os.unlink(tmp)
    return h.hexdigest()


def _check_unpacked(where: str, sizes: list[tuple[str, int]], packed: int) -> None:
    total = 0
    for name, size in sizes:
        total += size
        if total > MAX_UNPACKED_BYTES:
            raise InputError(f"{where}: members up to {name!r} unpack to over {MAX_UNPACKED_BYTES} bytes; "
                             "nothing extracted")
    if packed > 0 and total > MAX_RATIO * packed:
        raise InputError(f"{where}: unpacks to {total} bytes from {packed} ({total // packed}x, over {MAX_RATIO}x); "
                         "nothing extracted")


def _copy_limited(src, out, limit: int, where: str, name: str) -> None:
    """Copy at most ``limit`` bytes (the member's declared size): a member whose data runs
    past its header is refused rather than written without bound."""
    left = limit
    while block := src.read(min(1 << 16, left + 1)):
        if len(block) > left:
            raise InputError(f"{where}: member {name!r} holds more data than its declared {limit} bytes")
        left -= len(block)
        out.write(block)


def _stage_archive(base_url: str, folder: str, archive: str, stage: Path, timeout: float,
                   files: dict[str, str], log: Callable[[str], None]) -> dict[str, Path]:
    """Fetch ``<folder><archive>`` and extract it inside ``stage``; {manifest path: staged file}.

    An archive may only hold its own folder: any member outside ``<folder>/`` (another
    dataset's files, a checksum file for another folder) refuses the whole archive.
    """
    arc = stage / f"archive{archive}"
    log(f"fetching {folder}{archive}")
    _fetch(_url(base_url, f"{folder}{archive}"), arc, timeout)
    where = f"{folder}{archive}"
    for name in _member_names(arc, where):
        parts = PurePosixPath(name.replace("\\", "/")).parts
        parts = parts[1:] if parts and parts[0] == "." else parts
        if parts and parts[0] != folder:
            raise InputError(f"{where}: member {name!r} lies outside the folder {folder}/; nothing extracted")
    tree = stage / "tree"
    safe_extract(arc, tree)
    arc.unlink()
    staged = {rel: tree / folder / rel for rel in files if (tree / folder / rel).is_file()}
    extra = sum(1 for p in (tree / folder).rglob("*") if p.is_file()) - len(staged) if (tree / folder).is_dir() else 0
    if extra:
        log(f"{where}: {extra} file(s) not in the packaged manifest were ignored")
    return staged


def download(
    name: str | None,
    to: Path,
    base_url: str | None = None,
    *,
    archive: str | None = None,
    force: bool = False,
    timeout: float = 60.0,
    log: Callable[[str], None] = lambda _m: None,
) -> list[Path]:
    """Fetch and verify the folders for ``name`` into ``to``; returns the files in place.

    Without ``base_url`` each file comes from its pinned public origin. ``archive`` (an
    extension such as ``".tar.gz"``) fetches ``<base-url>/<folder><ext>`` and extracts it
    safely instead of fetching file by file.

    Everything is fetched into a staging directory inside ``to`` and checked against the
    packaged checksums (the only trust root) before anything in ``to/<folder>`` changes; a
    verified file then replaces its target with one atomic rename. A download that fails its
    checksum is discarded and reported; a file already in place is never overwritten by an
    unverified copy nor deleted, with or without ``force`` (which only re-fetches files that
    already verify).
    """
    to = Path(to).expanduser()
    to.mkdir(parents=True, exist_ok=True)
    if archive is not None and archive not in ARCHIVE_EXTS:
        raise InputError(f"--archive {archive!r}: one of {', '.join(ARCHIVE_EXTS)}")
    if archive is not None and base_url is None:
        raise InputError("--archive needs --base-url: archives exist only on mirrors")
    if base_url is not None:
        _url(base_url)  # refuse a bad scheme before touching anything
    manifest = packaged_manifest()
    written: list[Path] = []
    bad: list[str] = []
    for folder in folders_for(name):
        files = {safe_relpath(rel, f"manifest {folder}"): d for rel, d in manifest[folder].items()}
        # Same filesystem as the target, so the final rename is atomic; removed on any exit.
        stage = Path(tempfile.mkdtemp(prefix=f".capeval-staging-{folder}-", dir=to))
        try:
            have = {rel: sha256_file(to / folder / rel) if (to / folder / rel).is_file() else None
                    for rel in files}
            staged: dict[str, Path] = {}
            if archive is not None:
                if force or any(have[rel] != d for rel, d in files.items()):
                    staged = _stage_archive(base_url, folder, archive, stage, timeout, files, log)
            else:
                for rel, digest in sorted(files.items()):
                    if not force and have[rel] == digest:
                        continue
                    url = _url(base_url, folder, *rel.split("/")) if base_url else public_url(folder, rel)
                    if url is None:
                        if have[rel] != digest:
                            bad.append(f"{folder}/{rel} (repaired or derived by the team, no public origin: "
                                       "use --base-url)")
                        continue
                    log(f"fetching {folder}/{rel}")
                    staged[rel] = stage / "files" / rel
                    _fetch(url, staged[rel], timeout)
            for rel, digest in sorted(files.items()):
                dest = to / folder / rel
                src = staged.get(rel)
                if src is not None:
                    got = sha256_file(src)
                    if got == digest:
                        dest.parent.mkdir(parents=True, exist_ok=True)
                        os.replace(src, dest)
                        written.append(dest)
                        continue
                    kept = "; the verified copy in place was kept" if have[rel] == digest else ""
                    bad.append(f"{folder}/{rel} (downloaded sha256 {got[:12]}…, expected {digest[:12]}…{kept})")
                    if have[rel] == digest:
                        written.append(dest)
                    continue
                if have[rel] == digest:
                    written.append(dest)
                elif archive is not None and rel not in staged:
                    bad.append(f"{folder}/{rel} (not in the archive)")
                # else: already reported above (no public origin)
            if (to / folder).is_dir():
                # Written from the packaged checksums, for people and tools that look for it;
                # capeval itself never reads it back.
                atomic_write(to / folder / SUMS_NAME, "".join(f"{d}  ./{r}\n" for r, d in sorted(files.items())))
        finally:
            shutil.rmtree(stage, ignore_errors=True)
    if bad:
        raise InputError(f"{len(bad)} file(s) not downloaded or failed verification (nothing unverified was "
                         "installed; files already in place were left as they were): " + "; ".join(bad[:5]))
    return written


def _member_names(archive: Path, where: str) -> list[str]:
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            return zf.namelist()
    try:
        with tarfile.open(archive) as tf:
            return tf.getnames()
    except tarfile.TarError as exc:
        raise InputError(f"{where}: not a tar or zip archive ({exc})") from None


def _member_target(dest: Path, name: str, where: str) -> Path:
    p = PurePosixPath(name.replace("\\", "/"))
    if p.is_absolute() or (p.parts and (":" in p.parts[0])) or ".." in p.parts:
        raise InputError(f"{where}: member {name!r} would escape the target directory; nothing extracted")
    target = (dest / p).resolve()
    if target != dest and dest not in target.parents:
        raise InputError(f"{where}: member {name!r} resolves outside {dest}; nothing extracted")
    return target


def safe_extract(archive: Path, dest: Path) -> None:
    """Extract a tar or zip archive into ``dest``. Every member is checked before anything is
    written: absolute paths, ``..`` components, symlinks, hard links and device files are
    refused, naming the member."""
    dest = Path(dest).resolve()
    dest.mkdir(parents=True, exist_ok=True)
    where = Path(archive).name
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            infos = zf.infolist()
            for info in infos:
                _member_target(dest, info.filename, where)
                if stat.S_ISLNK(info.external_attr >> 16):
                    raise InputError(f"{where}: member {info.filename!r} is a symlink; nothing extracted")
            _check_unpacked(where, [(i.filename, i.file_size) for i in infos], Path(archive).stat().st_size)
            for info in infos:
                target = _member_target(dest, info.filename, where)
                if info.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as src, open(target, "wb") as out:
                    _copy_limited(src, out, info.file_size, where, info.filename)
        return
    try:
        tf = tarfile.open(archive)
    except tarfile.TarError as exc:
        raise InputError(f"{where}: not a tar or zip archive ({exc})") from None
    with tf:
        members = tf.getmembers()
        for m in members:
            _member_target(dest, m.name, where)
            if m.issym() or m.islnk():
                raise InputError(f"{where}: member {m.name!r} is a link ({m.linkname!r}); nothing extracted")
            if not (m.isfile() or m.isdir()):
                raise InputError(f"{where}: member {m.name!r} is not a regular file or directory; nothing extracted")
            if m.issparse():
                raise InputError(f"{where}: member {m.name!r} is a sparse file; nothing extracted")
        _check_unpacked(where, [(m.name, m.size) for m in members], Path(archive).stat().st_size)
        for m in members:
            target = _member_target(dest, m.name, where)
            if m.isdir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            src = tf.extractfile(m)
            if src is None:
                raise InputError(f"{where}: member {m.name!r} has no data")
            with src, open(target, "wb") as out:
                _copy_limited(src, out, m.size, where, m.name)

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
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

from .._process import pid_alive
from ..errors import ExternalToolError, InputError
from ..digests import sha256_file
from ..outputs import atomic_write
from .checksums import SUMS_NAME, packaged_manifest, packaged_sources, safe_relpath
from .registry import get_spec, specs

ARCHIVE_EXTS = (".tar.gz", ".tgz", ".tar.xz", ".tar.bz2", ".tar", ".zip")
# Limits on what a server or an archive may make us write. The largest team data file is
# ~4 MB and the largest folder ~17 MB, so these leave a wide margin while stopping an endless
# stream or a decompression bomb long before a disk fills.
MAX_DOWNLOAD_BYTES = 256 << 20   # one file or one archive, as sent
MAX_UNPACKED_BYTES = 256 << 20   # all members of one archive, as declared and as written
MAX_RATIO = 100                  # unpacked / packed size of an archive
MAX_SECONDS = 600.0              # wall-clock bound for one download (a 1-byte drip never times out per read)
# The team folders hold at most a few dozen files with names well under 200 bytes; a tar
# header may declare a name of any length (read whole into memory) and any number of members.
MAX_MEMBERS = 10_000             # members of one archive
MAX_NAME_BYTES = 4096            # one member name (PATH_MAX)
STAGING_PREFIX = ".capeval-staging-"
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
    if name in {s.name for s in specs()}:
        spec = get_spec(name)
        return [spec.folder, *spec.needs]
    raise InputError(
        f"unknown dataset {name!r}; benchmarks: {', '.join(sorted(s.name for s in specs()))}; folders: {', '.join(sorted(manifest))}"
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


def _show(name: str) -> str:
    """A member name for a message: quoted, and cut when long."""
    return repr(name) if len(name) <= 120 else repr(name[:120]) + f"… ({len(name)} characters)"


class _TooLong(Exception):
    pass


class _CappedTarInfo(tarfile.TarInfo):
    """Refuses a GNU long name or pax header over :data:`MAX_NAME_BYTES` before tarfile reads
    it into memory (a 194 KB archive can declare a 200 MB name)."""

    def _refuse_long(self, what: str) -> None:
        if self.size > MAX_NAME_BYTES + 512:
            raise _TooLong(f"a {what} header of {self.size} bytes, over the {MAX_NAME_BYTES}-byte name limit; "
                           "nothing extracted")

    def _proc_gnulong(self, tf):
        self._refuse_long("long-name")
        return super()._proc_gnulong(tf)

    def _proc_pax(self, tf):
        self._refuse_long("pax")
        return super()._proc_pax(tf)


def _open_tar(archive: Path, where: str) -> tarfile.TarFile:
    try:
        return tarfile.open(archive, tarinfo=_CappedTarInfo)
    except _TooLong as exc:
        raise InputError(f"{where}: {exc}") from None
    except tarfile.TarError as exc:
        raise InputError(f"{where}: not a tar or zip archive ({exc})") from None


def _check_member(where: str, count: int, name: str) -> None:
    if count > MAX_MEMBERS:
        raise InputError(f"{where}: over {MAX_MEMBERS} members; nothing extracted")
    if len(name.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES:
        raise InputError(f"{where}: member {_show(name)} has a name over {MAX_NAME_BYTES} bytes; nothing extracted")


def _tar_members(tf: tarfile.TarFile, where: str) -> list[tarfile.TarInfo]:
    members = []
    try:
        for m in tf:  # one header at a time: the count is capped before the list grows
            _check_member(where, len(members) + 1, m.name)
            members.append(m)
    except _TooLong as exc:
        raise InputError(f"{where}: {exc}") from None
    except tarfile.TarError as exc:
        raise InputError(f"{where}: not a readable tar archive ({exc})") from None
    return members


def _zip_infos(zf: zipfile.ZipFile, where: str) -> list[zipfile.ZipInfo]:
    infos = zf.infolist()
    for k, info in enumerate(infos, start=1):
        _check_member(where, k, info.filename)
    return infos


def stale_staging(root: Path) -> list[Path]:
    """Staging folders of downloads whose process is gone (killed midway), under ``root``."""
    out = []
    for d in sorted(Path(root).glob(f"{STAGING_PREFIX}*")) if Path(root).is_dir() else []:
        try:
            pid = int((d / "owner").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            pid = None  # no owner file: written by an older version, or killed before writing it
        if pid is not None and pid != os.getpid() and pid_alive(pid):
            continue
        if pid is None and _age(d) < 3600:
            continue  # may be a download starting right now
        out.append(d)
    return out


def _age(d: Path) -> float:
    import time

    try:
        return time.time() - d.stat().st_mtime
    except OSError:
        return 0.0


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
    for name, is_dir in _member_names(arc, where):
        parts = PurePosixPath(name.replace("\\", "/")).parts
        parts = parts[1:] if parts and parts[0] == "." else parts
        if parts and parts[0] != folder:
            raise InputError(f"{where}: member {_show(name)} lies outside the folder {folder}/; nothing extracted")
        if len(parts) <= 1 and not is_dir:
            raise InputError(f"{where}: member {_show(name)} is a file where the folder {folder}/ belongs; "
                             "nothing extracted")
    tree = stage / "tree"
    safe_extract(arc, tree, where=where)
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
    for old in stale_staging(to):  # left by a download killed midway
        log(f"removing {old.name}, left by an interrupted download")
        shutil.rmtree(old, ignore_errors=True)
    written: list[Path] = []
    bad: list[str] = []
    for folder in folders_for(name):
        files = {safe_relpath(rel, f"manifest {folder}"): d for rel, d in manifest[folder].items()}
        _download_folder(to, folder, files, base_url=base_url, archive=archive, force=force, timeout=timeout,
                         log=log, written=written, bad=bad)
    if bad:
        raise InputError(f"{len(bad)} file(s) not downloaded or failed verification (nothing unverified was "
                         "installed; files already in place were left as they were): " + "; ".join(bad[:5]))
    return written


def _download_folder(to: Path, folder: str, files: dict[str, str], *, base_url, archive, force: bool,
                     timeout: float, log, written: list[Path], bad: list[str]) -> None:
    """Stage one folder's missing (or, with ``force``, all) files, then install those that
    verify; the files in place are appended to ``written``, the failures to ``bad``."""
    # Same filesystem as the target, so the final rename is atomic; removed on any exit.
    stage = Path(tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{folder}-", dir=to))
    try:
        (stage / "owner").write_text(f"{os.getpid()}\n")  # a later run removes it once this process is gone
        have = {rel: sha256_file(to / folder / rel) if (to / folder / rel).is_file() else None
                for rel in files}
        staged: dict[str, Path] = {}
        if archive is not None:
            if force or any(have[rel] != d for rel, d in files.items()):
                staged = _stage_archive(base_url, folder, archive, stage, timeout, files, log)
        else:
            staged = _stage_files(base_url, folder, files, have, stage, force=force, timeout=timeout, log=log,
                                  bad=bad)
        _install_staged(to, folder, files, have, staged, archive, written, bad)
        if (to / folder).is_dir():
            # Written from the packaged checksums, for people and tools that look for it;
            # capeval itself never reads it back.
            atomic_write(to / folder / SUMS_NAME, "".join(f"{d}  ./{r}\n" for r, d in sorted(files.items())))
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def _stage_files(base_url, folder: str, files: dict[str, str], have: dict, stage: Path, *, force: bool,
                 timeout: float, log, bad: list[str]) -> dict[str, Path]:
    """Fetch file by file (from ``base_url`` or each file's public origin) into ``stage``."""
    staged: dict[str, Path] = {}
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
    return staged


def _install_staged(to: Path, folder: str, files: dict[str, str], have: dict, staged: dict[str, Path], archive,
                    written: list[Path], bad: list[str]) -> None:
    """Move each staged file that matches its checksum into place (one atomic rename)."""
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
        # else: already reported while staging (no public origin)


def _member_names(archive: Path, where: str) -> list[tuple[str, bool]]:
    """(name, is a directory) of every member, within the count and name-length limits."""
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            return [(i.filename, i.is_dir()) for i in _zip_infos(zf, where)]
    with _open_tar(archive, where) as tf:
        return [(m.name, m.isdir()) for m in _tar_members(tf, where)]


def _member_target(dest: Path, name: str, where: str) -> Path:
    p = PurePosixPath(name.replace("\\", "/"))
    if p.is_absolute() or (p.parts and (":" in p.parts[0])) or ".." in p.parts:
        raise InputError(f"{where}: member {name!r} would escape the target directory; nothing extracted")
    target = (dest / p).resolve()
    if target != dest and dest not in target.parents:
        raise InputError(f"{where}: member {name!r} resolves outside {dest}; nothing extracted")
    return target


def safe_extract(archive: Path, dest: Path, *, where: str | None = None) -> None:
    """Extract a tar or zip archive into ``dest``. Every member is checked before anything is
    written: absolute paths, ``..`` components, symlinks, hard links and device files are
    refused, naming the member, and so are archives of over :data:`MAX_MEMBERS` members or
    with a name over :data:`MAX_NAME_BYTES` (refused before tarfile reads the name). A file
    member that collides with a directory (or ``.``) is an error naming it."""
    dest = Path(dest).resolve()
    dest.mkdir(parents=True, exist_ok=True)
    where = where or Path(archive).name
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            infos = _zip_infos(zf, where)
            for info in infos:
                _member_target(dest, info.filename, where)
                if stat.S_ISLNK(info.external_attr >> 16):
                    raise InputError(f"{where}: member {info.filename!r} is a symlink; nothing extracted")
            _check_unpacked(where, [(i.filename, i.file_size) for i in infos], Path(archive).stat().st_size)
            for info in infos:
                target = _member_target(dest, info.filename, where)
                with _member_write(where, info.filename, target, dest, info.is_dir()) as out:
                    if out is not None:
                        with zf.open(info) as src:
                            _copy_limited(src, out, info.file_size, where, info.filename)
        return
    with _open_tar(archive, where) as tf:
        members = _tar_members(tf, where)
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
            with _member_write(where, m.name, target, dest, m.isdir()) as out:
                if out is not None:
                    src = tf.extractfile(m)
                    if src is None:
                        raise InputError(f"{where}: member {_show(m.name)} has no data")
                    with src:
                        _copy_limited(src, out, m.size, where, m.name)


@contextmanager
def _member_write(where: str, name: str, target: Path, dest: Path, is_dir: bool):
    """The open output of one member (None for a directory). A file member that names the
    extraction root itself (``.``), or that collides with another member (a file where a
    directory is, or the reverse), is an error naming it rather than a raw OSError."""
    if target == dest and not is_dir:
        raise InputError(f"{where}: member {_show(name)} is a file in place of the archive's root; nothing usable")
    try:
        if is_dir:
            target.mkdir(parents=True, exist_ok=True)
            yield None
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        out = open(target, "wb")
    except OSError as exc:
        raise InputError(f"{where}: member {_show(name)} collides with another member "
                         f"({exc.strerror or exc}); nothing usable") from None
    with out:
        yield out
